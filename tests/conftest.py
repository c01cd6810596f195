"""Shared fixtures for the evidence_lib test suite.

Every fixture builds its own index under pytest's ``tmp_path`` so tests never share files and a
test may freely edit or delete stored evidence.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from evidence_lib import Access, Budget, Document, EvidenceError, EvidenceIndex, Ledger, Principal, evidence_tools
from evidence_lib._tools import run_tool_call, tool_call
from evidence_lib.course.article import article_corpus

TOOL_NAMES = ("search_evidence", "locate_evidence", "read_evidence")
#: What the PostgreSQL tests skip with when EVIDENCE_PG_DSN is not set (tests/store/storekit.py's PG_SKIP).
PG_SKIP_MARK = "EVIDENCE_PG_DSN is not set"


def postgres_server(dsn: str) -> str:
    """``host:port`` of a libpq DSN (URL or key=value form): what a test run may print, never the password."""
    from psycopg.conninfo import conninfo_to_dict

    params = conninfo_to_dict(dsn)
    return f"{params.get('host') or 'localhost'}:{params.get('port') or 5432}"


def postgres_line(dsn: str, skipped: int) -> str:
    """One line for the end of a run: whether PostgreSQL was tested, or how to test it (issue 26 item 8)."""
    if dsn:
        return f"PostgreSQL: tested on {postgres_server(dsn)} (EVIDENCE_PG_DSN)."
    return (f"PostgreSQL: not tested (EVIDENCE_PG_DSN is not set): {skipped} test{'s' * (skipped != 1)} skipped for "
            "it; `make test-store` runs them on a local server, or export EVIDENCE_PG_DSN (`make postgres-up` "
            "prints it).")


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """Say at the end of every run whether the store's PostgreSQL backend was tested (a skip is easy to miss)."""
    skipped = sum(PG_SKIP_MARK in str(report.longrepr) for report in terminalreporter.stats.get("skipped", []))
    terminalreporter.write_line(postgres_line(os.environ.get("EVIDENCE_PG_DSN", ""), skipped))


@pytest.fixture
def corpus() -> list[Document]:
    return article_corpus()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def index(corpus: list[Document], store: Path) -> EvidenceIndex:
    return EvidenceIndex.build(corpus, store)


@pytest.fixture
def tools(index: EvidenceIndex):
    return evidence_tools(index)


@pytest.fixture
def search(tools):
    return tools[0]


@pytest.fixture
def locate(tools):
    return tools[1]


@pytest.fixture
def read(tools):
    return tools[2]


@pytest.fixture
def d03_text(corpus: list[Document]) -> str:
    return next(d.text for d in corpus if d.doc_id == "d03")


@pytest.fixture
def call() -> Callable[..., Any]:
    """Run a real tool-call dict ``{"name", "args", "id", "type": "tool_call"}`` through run_tool_call."""
    counter = iter(range(1_000_000))

    def _call(tools_, name: str, args: dict[str, Any], call_id: str | None = None):
        cid = call_id if call_id is not None else f"call-{next(counter)}"
        return run_tool_call(tools_, tool_call(name, args, cid))

    return _call


@contextmanager
def files_opened() -> Iterator[list[Path]]:
    """Record every ``Path.read_bytes`` / ``Path.open`` / ``os.open`` inside the block (usable under hypothesis too)."""
    opened: list[Path] = []
    real_read_bytes, real_open, real_os_open = Path.read_bytes, Path.open, os.open

    def spy_os_open(path, *a, **k):
        opened.append(Path(path))
        return real_os_open(path, *a, **k)

    def spy_read_bytes(self):
        opened.append(Path(self))
        return real_read_bytes(self)

    def spy_open(self, *a, **k):
        opened.append(Path(self))
        return real_open(self, *a, **k)

    with mock.patch.object(Path, "read_bytes", spy_read_bytes), mock.patch.object(Path, "open", spy_open), \
            mock.patch.object(os, "open", spy_os_open):
        yield opened


def refusal_code(tool, args: dict[str, Any]) -> str:
    """The EvidenceError code ``tool.invoke(args)`` raises (fails the test if it does not raise)."""
    with pytest.raises(EvidenceError) as info:
        tool.invoke(args)
    assert isinstance(info.value, ValueError)
    return info.value.code


def body(message) -> Any:
    return json.loads(message.content)


# -- two tenants plus a restricted document (tests/test_access.py) ------------------------------

ACME_OPEN = Document("acme-handbook", "ACME handbook", "r1", "ACME handbook text: ship on Fridays. marker-acme-open")
ACME_RESTRICTED = Document(
    "acme-salaries", "ACME salaries (finance only)", "r1",
    "Confidential ACME salaries: marker-acme-secret, budget 42.",
)
ACME_DISCOVER_ONLY = Document(
    "acme-roadmap", "ACME roadmap", "r1", "Roadmap: marker-acme-roadmap; ship on Fridays too.",
)
GLOBEX_OPEN = Document(
    "globex-manual", "Globex manual zebra", "r7", "Globex manual text: ship on Fridays. marker-globex-open",
)
GLOBEX_PLAN = Document(
    "globex-plan", "Globex merger plan quokka", "r7", "Globex plan: marker-globex-secret ship on Fridays.",
)


@pytest.fixture
def alice() -> Principal:
    return Principal("acme", "alice", groups={"finance"})


@pytest.fixture
def bob() -> Principal:
    return Principal("acme", "bob")


@pytest.fixture
def mallory() -> Principal:
    """Same user name as an ACME user, but authenticated in the other tenant."""
    return Principal("globex", "bob")


@pytest.fixture
def tenant_docs() -> list[Document]:
    from dataclasses import replace

    return [
        replace(ACME_OPEN, access=Access("acme")),
        replace(ACME_RESTRICTED, access=Access("acme", read={"group:finance"})),
        replace(ACME_DISCOVER_ONLY, access=Access("acme", read={"user:alice"}, discover={"*"})),
        replace(GLOBEX_OPEN, access=Access("globex")),
        replace(GLOBEX_PLAN, access=Access("globex", read={"user:ceo"})),
    ]


@pytest.fixture
def tenant_index(tenant_docs: list[Document], store: Path) -> EvidenceIndex:
    return EvidenceIndex.build(tenant_docs, store)


@pytest.fixture
def ledger() -> Ledger:
    return Ledger(Budget())
