"""The MCP server in process (issue 27): same bytes as the LangChain tools, one budget per task, hostile clients.

Calls go through :meth:`EvidenceMCP.dispatch` (what ``tools/call`` runs) and :meth:`EvidenceMCP.list_tools`; the
real transports are in tests/test_mcp_clients.py.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

from mcp_kit import ALICE_TOKEN, BOB_TOKEN, LIMITS, store_backends, store_location, write_corpus, write_tokens

from evidence_lib.__main__ import main as cli_main
from evidence_lib._access import Principal
from evidence_lib._answers import format_answer
from evidence_lib._index import EvidenceIndex
from evidence_lib._ledger import Budget, Ledger
from evidence_lib._toolkit import run_tool_call
from evidence_lib._tools import evidence_tools
from evidence_lib.eval._run import load_corpus
from evidence_lib.integrations.mcp import build_server, fixed_source, load_config
from evidence_lib.integrations.mcp._cli import _source
from evidence_lib.integrations.mcp._server import MAX_ANSWER_CHARS, MAX_TASKS_PER_PRINCIPAL

ALICE = Principal("acme", "alice", frozenset({"finance"}))
BOB = Principal("acme", "bob")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "docs")


@pytest.fixture
def server(corpus: Path, tmp_path: Path):
    """An HTTP-configured server (two principals), called in process."""
    config = load_config(write_tokens(tmp_path / "tokens.json"))
    args = type("Args", (), {"corpus": str(corpus), "store": None})()
    return build_server(_source(args, config.documents), tokens=config.tokens)


def call(server, principal, name, **args):
    """``(text, is_error)`` of one tools/call."""
    result = server.dispatch(principal, name, args)
    assert len(result.content) == 1
    return result.content[0].text, result.isError


def start(server, principal) -> str:
    text, error = call(server, principal, "start_task")
    assert not error
    return json.loads(text)["task"]


def code(text: str) -> str:
    return json.loads(text)["error"]


# -- the same bytes as the LangChain tools ----------------------------------------------------------------------------
QUESTION = [("search_evidence", {"query": "batch limit"}), ("locate_evidence", {"term": "batch limit"}),
            ("read_evidence", {"doc_id": "limits", "offset": 12, "limit": 40}),
            ("read_evidence", {"doc_id": "limits", "offset": 12, "limit": 40}),
            ("locate_evidence", {"term": "上限"}), ("read_evidence", {"doc_id": "nope"})]


def test_mcp_replies_are_the_langchain_tools_bytes(corpus: Path) -> None:
    _, docs = load_corpus(str(corpus))
    index = EvidenceIndex.in_memory(docs)
    local = Principal("local", "local")
    server = build_server(fixed_source(index), local=local)
    tools = evidence_tools(index, local, ledger=Ledger(Budget()), profile="compact")
    task = start(server, local)
    for n, (name, args) in enumerate(QUESTION):
        msg = run_tool_call(tools, {"name": name, "args": args, "id": f"c{n}", "type": "tool_call"})
        text, error = call(server, local, name, task=task, **args)
        assert (text, error) == (msg.content, msg.status == "error"), name


def test_tools_list_is_the_same_for_every_principal_and_names_five_tools(server) -> None:
    listing = asyncio.run(server.list_tools())
    assert [t.name for t in listing] == ["start_task", "search_evidence", "locate_evidence", "read_evidence",
                                         "verify_citations"]
    for t in listing[1:]:
        assert t.inputSchema["required"][0] == "task" and t.inputSchema["additionalProperties"] is False


# -- tasks and principals ---------------------------------------------------------------------------------------------
def test_another_principals_task_handle_is_refused_like_an_unknown_one(server) -> None:
    task = start(server, ALICE)
    theirs = call(server, BOB, "search_evidence", task=task, query="batch limit")
    unknown = call(server, BOB, "search_evidence", task="t-never-minted", query="batch limit")
    assert theirs == unknown and theirs[1] and code(theirs[0]) == "unknown_task"
    assert not call(server, ALICE, "search_evidence", task=task, query="batch limit")[1]


def test_a_token_cannot_read_another_principals_document(server) -> None:
    alice, bob = start(server, ALICE), start(server, BOB)
    text, error = call(server, ALICE, "read_evidence", task=alice, doc_id="payroll")
    assert not error and "单批上限为200条" in text
    forbidden = call(server, BOB, "read_evidence", task=bob, doc_id="payroll")
    missing = call(server, BOB, "read_evidence", task=bob, doc_id="no-such-doc")
    assert forbidden == missing and code(forbidden[0]) == "unknown_doc_id"
    assert "payroll" not in call(server, BOB, "search_evidence", task=bob, query="上限")[0]
    assert "单批" not in call(server, BOB, "locate_evidence", task=bob, term="上限")[0]


def test_verify_citations_accepts_what_the_task_read_and_refuses_the_rest(server, corpus: Path) -> None:
    rev = {d.doc_id: d.revision for d in load_corpus(str(corpus))[1]}["limits"]
    task = start(server, ALICE)
    start_at = LIMITS.index("The batch")
    quote = LIMITS[start_at:LIMITS.index(".", start_at) + 1]
    page, _ = call(server, ALICE, "read_evidence", task=task, doc_id="limits", offset=start_at, limit=len(quote))
    answer = format_answer("200 rows. [1]", [("limits", rev, start_at, start_at + len(quote), quote)])
    verdict = json.loads(call(server, ALICE, "verify_citations", task=task, answer=answer)[0])
    assert verdict["verified"] is True, (page, verdict)
    other = start(server, ALICE)  # a fresh task never read it
    assert json.loads(call(server, ALICE, "verify_citations", task=other, answer=answer)[0])["checks"][0][
        "reason"] == "never_read"
    assert json.loads(call(server, ALICE, "verify_citations", task=task, answer="no sources")[0])["verified"] is False


# -- hostile clients --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,args,expected", [
    ("read_evidence", {"doc_id": "limits", "offset": "x"}, "invalid_arguments"),
    ("read_evidence", {"doc_id": "limits", "offset": -1}, "invalid_page_bounds"),
    ("read_evidence", {"doc_id": "limits", "limit": 10**12}, "invalid_page_bounds"),
    ("read_evidence", {"doc_id": "../limits"}, "unknown_doc_id"),
    ("read_evidence", {"doc_id": "/etc/passwd"}, "unknown_doc_id"),
    ("read_evidence", {}, "invalid_arguments"),
    ("read_evidence", {"doc_id": "limits", "path": "/etc"}, "invalid_arguments"),
    ("search_evidence", {"query": "x" * 100_000}, "invalid_query"),
    ("locate_evidence", {"term": "t" * 100_000}, "invalid_term"),
    ("locate_evidence", {"term": ""}, "invalid_term"),
    ("verify_citations", {"answer": "a" * (MAX_ANSWER_CHARS + 1)}, "invalid_arguments"),
    ("verify_citations", {"answer": 7}, "invalid_arguments"),
    ("no_such_tool", {}, "unknown_tool"),
])
def test_bad_arguments_are_tool_errors_with_stable_codes(server, name, args, expected) -> None:
    task = start(server, ALICE)
    text, error = call(server, ALICE, name, task=task, **args)
    assert error and code(text) == expected
    assert "Traceback" not in text and len(text.encode()) < 2_000


@pytest.mark.parametrize("task", [None, 7, "", "x" * 10_000, ["t"]])
def test_a_missing_or_malformed_task_handle_is_refused(server, task) -> None:
    args = {"query": "batch"} if task is None else {"task": task, "query": "batch"}
    result = server.dispatch(ALICE, "search_evidence", args)
    assert result.isError and code(result.content[0].text) == "unknown_task"


def test_start_task_takes_no_arguments(server) -> None:
    result = server.dispatch(ALICE, "start_task", {"principal": "bob"})
    assert result.isError and code(result.content[0].text) == "invalid_arguments"


def test_a_flood_of_calls_is_refused_by_the_task_budget(server) -> None:
    task = start(server, ALICE)
    replies = [call(server, ALICE, "search_evidence", task=task, query=f"batch {n}") for n in range(200)]
    ok = [t for t, e in replies if not e]
    assert 0 < len(ok) <= Budget().max_calls
    assert all(code(t) == "budget_exhausted" for t, e in replies[len(ok):])
    assert sum(len(t.encode()) for t, _ in replies) < 200 * 2_000


def test_verify_citations_has_its_own_bound_per_task(server) -> None:
    task = start(server, ALICE)
    replies = [call(server, ALICE, "verify_citations", task=task, answer="x") for _ in range(50)]
    assert any(e and code(t) == "budget_exhausted" for t, e in replies)


def test_starting_tasks_forgets_the_oldest_beyond_the_bound(server) -> None:
    first = start(server, ALICE)
    for _ in range(MAX_TASKS_PER_PRINCIPAL):
        start(server, ALICE)
    assert code(call(server, ALICE, "search_evidence", task=first, query="batch")[0]) == "unknown_task"


# -- the folder rules and the command line ----------------------------------------------------------------------------
def test_the_folder_rules_keep_the_server_inside_its_folder(tmp_path: Path, corpus: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the folder", encoding="utf-8")
    (corpus / "link.txt").symlink_to(secret)
    os.mkfifo(corpus / "pipe.txt")
    _, docs = load_corpus(str(corpus))
    assert sorted(d.doc_id for d in docs) == ["limits", "payroll"]  # the symlink and the FIFO are not documents
    server = build_server(fixed_source(EvidenceIndex.in_memory(docs)), local=ALICE)
    task = start(server, ALICE)
    for doc_id in ("link", "pipe", "../secret", "secret"):
        assert code(call(server, ALICE, "read_evidence", task=task, doc_id=doc_id)[0]) == "unknown_doc_id"


def test_the_command_refuses_a_huge_file_a_public_host_and_a_bad_tokens_file(tmp_path: Path, corpus: Path,
                                                                            capsys) -> None:
    huge = corpus / "huge.txt"
    with open(huge, "wb") as f:
        f.truncate(64 * 1024 * 1024 + 1)  # sparse: refused by its size before it is read
    assert cli_main(["mcp", "--corpus", str(corpus)]) == 2
    assert "huge.txt" in capsys.readouterr().err
    huge.unlink()
    tokens = write_tokens(tmp_path / "tokens.json")
    assert cli_main(["mcp", "--corpus", str(corpus), "--transport", "http", "--host", "0.0.0.0",
                     "--tokens", str(tokens)]) == 2
    assert "loopback" in capsys.readouterr().err
    assert cli_main(["mcp", "--corpus", str(corpus), "--transport", "http"]) == 2
    assert "--tokens" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"tokens": {"short": {"tenant": "a", "user": "b"}}}), encoding="utf-8")
    assert cli_main(["mcp", "--corpus", str(corpus), "--transport", "http", "--tokens", str(bad)]) == 2
    assert "16+" in capsys.readouterr().err


def test_a_grant_naming_no_document_is_refused(tmp_path: Path, corpus: Path, capsys) -> None:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[tokens."{ALICE_TOKEN}"]\ntenant = "acme"\nuser = "alice"\n'
                      f'[tokens."{BOB_TOKEN}"]\ntenant = "acme"\nuser = "bob"\n'
                      '[documents.payrol]\ntenant = "acme"\nread = ["group:finance"]\n', encoding="utf-8")
    assert cli_main(["mcp", "--corpus", str(corpus), "--transport", "http", "--tokens", str(tokens)]) == 2
    assert "not in the corpus" in capsys.readouterr().err


# -- a store instead of a folder ---------------------------------------------------------------------------------------
@pytest.fixture(params=store_backends())
def store_where(request, tmp_path: Path):
    """Where a store is: an SQLite file, or a scratch schema of the PostgreSQL server (EVIDENCE_PG_DSN)."""
    with store_location(request.param, tmp_path) as where:
        yield where


def test_a_store_snapshot_is_served_per_tenant_with_a_store_ledger(store_where: str, corpus: Path) -> None:
    from evidence_lib.store import open_store, system_clock

    _, docs = load_corpus(str(corpus))
    store = open_store(store_where, system_clock)
    store.put_snapshot("acme", "mcp", "mcp", docs)
    args = type("Args", (), {"corpus": None, "store": store_where, "session": "mcp", "query": "mcp"})()
    server = build_server(_source(args, {}), tokens={"x" * 16: ALICE, "y" * 16: Principal("other", "eve")})
    task = start(server, ALICE)
    start_at = LIMITS.index("The batch")
    quote = "The batch limit is 200 rows per call."
    text, error = call(server, ALICE, "read_evidence", task=task, doc_id="limits", offset=start_at, limit=len(quote))
    assert not error and quote in text
    rev = {d.doc_id: d.revision for d in docs}["limits"]
    answer = format_answer("200 rows. [1]", [("limits", rev, start_at, start_at + len(quote), quote)])
    assert json.loads(call(server, ALICE, "verify_citations", task=task, answer=answer)[0])["verified"] is True
    eve = Principal("other", "eve")  # another tenant has no snapshot under this key
    text, error = call(server, eve, "start_task")
    assert error and code(text) == "snapshot_expired"
