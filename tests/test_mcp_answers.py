"""Replies that tell a person what went wrong (issue 31, items 4 and 9), through the SDK's client over stdio and HTTP:
an empty range verifies nothing, a task handle never issued (or forgotten, or another's) is ``unknown_task``, an
answer without Sources says so, a line that does not parse says which and shows the form; the hints for a missing
extra point at this checkout's own install."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

from mcp_kit import (
    BOB_TOKEN,
    LIMITS,
    ROOT,
    TRANSPORTS,
    ask,
    corpus,  # noqa: F401 - a pytest fixture, used by name
    mcp_session,
    server_env,
    task_of,
    tokens,  # noqa: F401 - corpus and tokens are fixtures
)

from evidence_lib._answers import format_answer
from evidence_lib._errors import CITATION_REASONS, ERROR_CODES
from evidence_lib._index import sha256_hex
from evidence_lib.integrations.mcp._server import MAX_TASKS_PER_PRINCIPAL

QUOTE = "The batch limit is 200 rows per call."
START = LIMITS.index(QUOTE)
REVISION = sha256_hex(LIMITS.encode())[:12]
FORM = '[n] doc_id@revision [start, end) "quote"'  # citations.CITATION_FORM, spelled out for the reader


async def verify(session, task: str, answer: str) -> dict:
    text, error = await ask(session, "verify_citations", task=task, answer=answer)
    assert not error, text
    return json.loads(text)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_citation_of_an_empty_range_verifies_nothing(transport: str, corpus: Path, tokens: Path) -> None:
    async with mcp_session(transport, corpus, tokens) as served:
        s = served.session
        task = await task_of(s)
        await ask(s, "read_evidence", task=task, doc_id="limits", offset=0, limit=len(LIMITS))
        empty = await verify(s, task, format_answer("200 rows. [1]", [("limits", REVISION, 17, 17, "")]))
        mixed = await verify(s, task, format_answer("200 rows. [1] [2]", [
            ("limits", REVISION, START, START + len(QUOTE), QUOTE), ("limits", REVISION, 30, 30, "")]))
    assert empty == {"verified": False, "checks": [
        {"line": 1, "doc_id": "limits", "start": 17, "end": 17, "reason": "empty_range"}]}
    assert mixed["verified"] is False and [c["reason"] for c in mixed["checks"]] == ["ok", "empty_range"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_answers_without_sources_or_with_a_bad_line_say_why(transport: str, corpus: Path, tokens: Path) -> None:
    async with mcp_session(transport, corpus, tokens) as served:
        s = served.session
        task = await task_of(s)
        await ask(s, "read_evidence", task=task, doc_id="limits", offset=START, limit=len(QUOTE))
        bare = await verify(s, task, "The batch limit is 200 rows per call.")
        good = f'[1] limits@{REVISION} [{START}, {START + len(QUOTE)}) {json.dumps(QUOTE)}'
        by_handle = await verify(s, task, f"200 rows. [1] [2]\n\nSources:\n{good}\n[2] #a1b2c3 [{START}, 49)\n")
    assert bare == {"verified": False, "reason": "no_citations", "message": CITATION_REASONS["no_citations"],
                    "checks": []}
    assert by_handle["verified"] is False
    assert by_handle["checks"][1] == {"line": 2, "reason": "malformed", "expected": FORM}
    assert "doc_id" not in by_handle["checks"][1] and by_handle["checks"][0]["reason"] == "ok"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_task_never_issued_forgotten_or_another_principals_is_unknown_task(transport: str, corpus: Path,
                                                                                  tokens: Path) -> None:
    async with mcp_session(transport, corpus, tokens) as served:
        s = served.session
        first = await task_of(s)
        for _ in range(MAX_TASKS_PER_PRINCIPAL):
            await task_of(s)
        mine = await task_of(s)
        refusals = [await ask(s, "search_evidence", task=handle, query="batch limit")
                    for handle in ("t-never-issued", first)]
        refusals.append(await ask(s, "verify_citations", task="t-never-issued", answer="x"))
    if transport == "http":  # another principal (Bob's token) presenting Alice's live handle
        async with mcp_session(transport, corpus, tokens, token=BOB_TOKEN) as bob:
            refusals.append(await ask(bob.session, "search_evidence", task=mine, query="batch limit"))
    assert len(set(refusals)) == 1
    text, error = refusals[0]
    assert error and json.loads(text) == {"error": "unknown_task", "message": ERROR_CODES["unknown_task"]}
    assert "start_task" in ERROR_CODES["unknown_task"] and "expired" not in text


def _cli_without(module: str, *args: str) -> subprocess.CompletedProcess:
    """``python -m evidence_lib ARGS`` in a process where ``module`` cannot be imported."""
    code = (f"import sys; sys.modules[{module!r}] = None; from evidence_lib.__main__ import main; "
            f"raise SystemExit(main({list(args)!r}))")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=server_env(), capture_output=True, text=True,
                          timeout=300)


def test_the_missing_mcp_extra_points_at_this_checkout(corpus: Path) -> None:
    done = _cli_without("mcp", "mcp", "--corpus", str(corpus))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "pip install -e '.[mcp]'" in done.stderr and "make setup" in done.stderr
    assert "evidence-lib[" not in done.stderr


def test_figures_without_matplotlib_names_the_course_extra(tmp_path: Path) -> None:
    done = _cli_without("matplotlib", "figures", "--out", str(tmp_path / "figures"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "course" in done.stderr and "pip install -e '.[course]'" in done.stderr
