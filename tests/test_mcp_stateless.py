"""Issue 33 item 5, in process: with a store the MCP server keeps no task in its memory, so two servers on one store
serve one task with one budget, what its replies showed, its verify calls and its principal; a call's round trips do
not grow with what the task read, its matches or its documents (SQLite's trace callback sees every statement).

Two server objects on one store stand for two processes here (each opens its own store, as a process would); the real
processes, killed and restarted, are in tests/test_mcp_stateless_processes.py.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

from mcp_kit import store_backends, store_location
from store.storekit import round_trips

from evidence_lib._access import Principal
from evidence_lib._answers import format_answer
from evidence_lib._documents import Document
from evidence_lib.integrations.mcp import Source, build_server
from evidence_lib.integrations.mcp._cli import _source
from evidence_lib.integrations.mcp._tasks import MAX_TASKS_PER_PRINCIPAL, MAX_VERIFY_CALLS
from evidence_lib.store import SQLiteStore, open_store, system_clock

ALICE = Principal("acme", "alice", frozenset({"finance"}))
ALICE_OTHER_GROUPS = Principal("acme", "alice")
BOB = Principal("acme", "bob")
TOKENS = {"a" * 16: ALICE, "b" * 16: BOB, "c" * 16: ALICE_OTHER_GROUPS}
SENTENCE = "The batch limit is 200 rows per call. "


def documents(n: int, repeat: int = 40) -> list[Document]:
    """``n`` documents of ``repeat`` sentences each, every one holding the term ``batch limit``."""
    return [Document(f"d{i:02}", f"note {i}", f"r{i}", f"note {i}. " + SENTENCE * repeat) for i in range(n)]


@pytest.fixture(params=store_backends())
def where(request, tmp_path: Path):
    """Where the shared store is: an SQLite file, or a scratch schema of the PostgreSQL server."""
    with store_location(request.param, tmp_path, "mcpstateless") as spec:
        yield spec


def servers(where: str, docs: list[Document], n: int = 2) -> list:
    """``n`` servers, each on its own connection to the store at ``where`` (as ``--store`` opens it), after the
    snapshot ``(acme, mcp, mcp)`` holding ``docs`` is published."""
    with open_store(where, system_clock) as store:
        store.put_snapshot("acme", "mcp", "mcp", docs)
    args = type("Args", (), {"corpus": None, "store": where, "session": "mcp", "query": "mcp"})()
    return [build_server(_source(args, {}), tokens=TOKENS) for _ in range(n)]


def call(server, principal, name, **args) -> tuple[str, bool]:
    result = server.dispatch(principal, name, args)
    return result.content[0].text, bool(result.isError)


def start(server, principal) -> str:
    text, error = call(server, principal, "start_task")
    assert not error, text
    return json.loads(text)["task"]


def code(text: str) -> str:
    return json.loads(text)["error"]


def test_two_servers_on_one_store_serve_alternate_calls_of_one_task_with_one_budget(where: str) -> None:
    a, b = servers(where, documents(8))
    task = start(a, ALICE)
    replies = []
    for n in range(22):  # 8 documents x 3 pages: more than the 20 calls of the default budget
        server = (a, b)[n % 2]
        replies.append(call(server, ALICE, "read_evidence", task=task, doc_id=f"d{n % 8:02}", offset=100 * (n // 8),
                            limit=50))
    assert [error for _, error in replies[:20]] == [False] * 20
    assert [code(text) for text, _ in replies[20:]] == ["budget_exhausted"] * 2  # b saw a's spending, and a b's
    assert json.loads(replies[21][0])["reason"] == "calls"


def test_what_one_server_showed_a_task_the_other_does_not_show_again(where: str) -> None:
    a, b = servers(where, documents(2))
    task = start(a, ALICE)
    first, _ = call(a, ALICE, "read_evidence", task=task, doc_id="d00", offset=0, limit=40)
    again, _ = call(b, ALICE, "read_evidence", task=task, doc_id="d00", offset=40, limit=40)
    assert first.startswith("d00 @r0 ") and again.startswith("d00 #")  # the revision named once per task
    same, _ = call(b, ALICE, "read_evidence", task=task, doc_id="d00", offset=0, limit=40)
    assert json.loads(same)["status"] == "already_read"  # a's read, in the task's store ledger


def test_a_citation_read_through_one_server_verifies_through_the_other(where: str) -> None:
    docs = documents(2)
    a, b = servers(where, docs)
    task = start(a, ALICE)
    at = docs[1].text.index(SENTENCE)
    quote = SENTENCE.strip()
    text, error = call(a, ALICE, "read_evidence", task=task, doc_id="d01", offset=at, limit=len(quote))
    assert not error and quote in text
    answer = format_answer("200 rows [1].", [("d01", "r1", at, at + len(quote), quote)])
    assert json.loads(call(b, ALICE, "verify_citations", task=task, answer=answer)[0])["verified"] is True


def test_verify_calls_are_counted_per_task_across_servers(where: str) -> None:
    a, b = servers(where, documents(1))
    task = start(a, ALICE)
    answers = [call((a, b)[n % 2], ALICE, "verify_citations", task=task, answer="no sources")
               for n in range(MAX_VERIFY_CALLS + 1)]
    assert [error for _, error in answers[:-1]] == [False] * MAX_VERIFY_CALLS
    assert code(answers[-1][0]) == "budget_exhausted"


def test_a_stored_task_is_refused_to_another_principal_exactly_like_one_never_minted(where: str) -> None:
    a, b = servers(where, documents(1))
    task = start(a, ALICE)
    never = call(b, BOB, "read_evidence", task="t-never-minted", doc_id="d00")
    assert call(b, BOB, "read_evidence", task=task, doc_id="d00") == never
    assert call(b, ALICE_OTHER_GROUPS, "read_evidence", task=task, doc_id="d00") == never  # same user, other groups
    assert code(never[0]) == "unknown_task"
    for odd in ("x" * 5000, "t-\x00", "", 7, None, "t-" + "a" * 70):  # refused unlooked-up, the same bytes
        assert call(b, ALICE, "read_evidence", task=odd, doc_id="d00") == never


def test_a_principal_keeps_its_newest_tasks_in_the_store(where: str) -> None:
    a, b = servers(where, documents(1))
    tasks = [start((a, b)[n % 2], ALICE) for n in range(MAX_TASKS_PER_PRINCIPAL + 1)]
    assert code(call(b, ALICE, "read_evidence", task=tasks[0], doc_id="d00")[0]) == "unknown_task"
    assert not call(a, ALICE, "read_evidence", task=tasks[1], doc_id="d00")[1]
    bob = start(b, BOB)  # another principal's tasks do not count against alice's
    assert not call(a, BOB, "read_evidence", task=bob, doc_id="d00")[1]


def test_threads_of_two_servers_spending_one_budget_at_once_never_overspend(where: str) -> None:
    a, b = servers(where, documents(10))
    task = start(a, ALICE)
    results: list[tuple[str, bool]] = []
    lock = threading.Lock()

    def read(n: int) -> None:
        reply = call((a, b)[n % 2], ALICE, "read_evidence", task=task, doc_id=f"d{n % 10:02}",
                     offset=100 * (n // 10), limit=50)
        with lock:
            results.append(reply)

    threads = [threading.Thread(target=read, args=(n,)) for n in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(1 for _, error in results if not error) == 20
    assert {code(text) for text, error in results if error} == {"budget_exhausted"}


def test_a_store_server_holds_no_task_in_its_memory(tmp_path: Path) -> None:
    """Nothing the server object keeps names a task: every handle lives in the store only."""
    store = SQLiteStore(tmp_path / "evidence.db", system_clock)
    store.put_snapshot("acme", "mcp", "mcp", documents(2))
    server = build_server(Source.from_store(store), tokens=TOKENS)
    task = start(server, ALICE)
    call(server, ALICE, "read_evidence", task=task, doc_id="d00", limit=40)
    assert task not in repr(vars(server.tasks))
    assert call(build_server(Source.from_store(store), tokens=TOKENS), ALICE, "read_evidence", task=task,
                doc_id="d00", offset=40, limit=40)[0].startswith("d00 #")


# -- round trips per call (SQLite's trace callback) ------------------------------------------------------------------
def _trips(tmp_path: Path, docs: int, earlier_reads: int) -> dict[str, int]:
    """Statements of one locate (a term in every document: its matches grow with the documents), one read and one
    verify of a task that read ``earlier_reads`` pages before, on a snapshot of ``docs`` documents. Each call does
    the same kind of work in both (the locate shows d00's revision for the first time, the read does not)."""
    store = SQLiteStore(tmp_path / f"trips-{docs}-{earlier_reads}.db", system_clock)
    corpus = documents(docs, repeat=2 + earlier_reads)
    store.put_snapshot("acme", "mcp", "mcp", corpus)
    server = build_server(Source.from_store(store), tokens=TOKENS)
    task = start(server, ALICE)
    for n in range(earlier_reads):  # from the last document back: the locate below still shows d00 first
        assert not call(server, ALICE, "read_evidence", task=task, doc_id=f"d{docs - 1 - n % docs:02}",
                        offset=40 * n, limit=40)[1]
    counts = {}
    for name, args in (("locate_evidence", {"term": "batch limit"}),
                       ("read_evidence", {"doc_id": "d00", "offset": 85, "limit": 30}),
                       ("verify_citations", {"answer": "no sources"})):
        with round_trips(store) as trips:
            text, error = call(server, ALICE, name, task=task, **args)
        assert not error, text
        counts[name] = len(trips.statements)
    return counts


def test_a_store_server_call_costs_the_same_round_trips_whatever_the_task_read_or_matched(tmp_path: Path) -> None:
    small = _trips(tmp_path, docs=2, earlier_reads=1)
    large = _trips(tmp_path, docs=12, earlier_reads=10)
    assert small == large, (small, large)
    assert small["read_evidence"] <= 16, small  # find the task, the ledger's read and charge, the chunks, the state
