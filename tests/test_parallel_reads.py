"""Independent reads overlap, and the budget is never overspent (issue 31, item 21).

LangGraph's tool node runs one message's calls in threads. Before, they queued: the page was fetched inside the
ledger's lock, each store ran every transaction on one connection under one lock, and the harness's middleware held
a global lock. Now a call decides under the ledger's lock (already read? within budget?), fetches outside it and
charges under it again (re-checked), so the fetches overlap. Shown as behaviour, not time: the source holds every
page fetch until ``want`` fetches are inside at once (or a liveness timeout passes) and records the most it ever held
together. Wall-clock numbers live in ``bench/bench_parallel_reads.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("langchain.agents", reason="the agents extra (langchain>=1): make setup installs it")

from gates import Gate, GatedIndex
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from store.storekit import T0, open_spec, pg_dsn

from evidence_lib import Budget, Document, EvidenceIndex, Ledger, ManualClock, Principal, evidence_tools, run_tool_call
from evidence_lib.course.readers import ScriptedChatModel
from evidence_lib.integrations.langchain._harness import evidence_middleware
from evidence_lib.integrations.langchain._middleware import EvidenceMiddleware

ALICE = Principal("acme", "alice")
DOCS = [Document(f"d{i:02}", f"doc {i}", "r1", f"document {i}: " + "the upper limit is 500 rows per batch. " * 30)
        for i in range(12)]
OPEN = Budget(max_calls=None, max_chars=None, max_bytes=None, max_tokens=None, max_reads_per_doc=None,
              max_refusals=None)


def gated(store: Any, gate: Gate) -> Any:
    """``store`` whose page fetches (the reader's ``chunks``, inside its read transaction) pass through ``gate``."""
    reading = store.reading

    @contextmanager
    def gated_reading() -> Iterator[Any]:
        with reading() as reader:
            yield _GatedReader(reader, gate)

    store.reading = gated_reading
    return store


class _GatedReader:
    def __init__(self, reader: Any, gate: Gate) -> None:
        self._reader, self._gate = reader, gate

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reader, name)

    def chunks(self, *args: Any) -> Any:
        with self._gate.held():
            return self._reader.chunks(*args)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def spec(request, tmp_path):
    if request.param == "memory":
        yield ("memory", "")
    elif request.param == "sqlite":
        yield ("sqlite", str(tmp_path / "store.db"))
    else:
        from evidence_lib.store._postgres import scratch_schema

        with scratch_schema(pg_dsn(), "par") as where:
            yield ("postgres", where)


@pytest.fixture
def estore(spec):
    store = open_spec(spec, ManualClock(T0))
    yield store
    store.close()


def reads(doc_ids: list[str], offset: int = 0, limit: int = 60) -> list[dict]:
    return [{"name": "read_evidence", "args": {"doc_id": d, "offset": offset, "limit": limit}, "id": f"r{i}",
             "type": "tool_call"} for i, d in enumerate(doc_ids)]


def agent(tools: list, middleware: list, calls: list[dict]) -> list[ToolMessage]:
    """One create_agent run: one message of ``calls``, then a final answer; the ToolMessages."""
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=calls), AIMessage(content="done")])
    state = create_agent(model, tools, middleware=middleware).invoke({"messages": [HumanMessage("read")]})
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


def with_harness(source: Any, ledger: Any, calls: list[dict]) -> list[ToolMessage]:
    tools = evidence_tools(source, ALICE, ledger=ledger, profile="compact")
    return agent(tools, [evidence_middleware(tools)], calls)


# -- the fetches overlap --------------------------------------------------------------------------------------------
def test_four_reads_through_create_agent_with_a_ledger_fetch_at_once_from_an_index():
    index = GatedIndex(EvidenceIndex.in_memory(DOCS), 4)
    replies = with_harness(index, Ledger(OPEN), reads(["d01", "d02", "d03", "d04"]))
    assert [m.status for m in replies] == ["success"] * 4
    assert index.peak == 4, "the four page fetches were inside the source at once"


def test_four_reads_through_create_agent_with_a_store_ledger_fetch_at_once(estore):
    gate = Gate(4)
    snap = gated(estore, gate).put_snapshot("acme", "s-1", "q", DOCS)
    replies = with_harness(snap, estore.ledger("acme", "s-1", "task", OPEN), reads(["d01", "d02", "d03", "d04"]))
    assert [m.status for m in replies] == ["success"] * 4
    assert gate.peak == 4, "the four chunk fetches were inside the store's read transactions at once"


def test_four_reads_through_the_middleware_fetch_at_once(estore):
    gate = Gate(4)
    mw = EvidenceMiddleware(gated(estore, gate), ALICE, threshold_tokens=50, budget=OPEN)
    handles = []
    for d in DOCS[:4]:
        shown = mw.offloaded(ToolMessage(d.text, tool_call_id=f"call-{d.doc_id}", name="fetch"), {"name": "fetch"})
        handles.append(shown.response_metadata["evidence_offload"]["doc_id"])
    gate.peak = 0
    replies = agent([], [mw], reads(handles))
    assert [m.status for m in replies] == ["success"] * 4, [m.content for m in replies]
    assert gate.peak == 4


# -- and the budget holds ----------------------------------------------------------------------------------------------
def parallel_calls_against(source: Any, ledger: Any, calls: list[dict]) -> list[ToolMessage]:
    """``calls`` released together from threads of their own (more than LangGraph's pool would run at once)."""
    tools = evidence_tools(source, ALICE, ledger=ledger, profile="compact")
    threads, out = [], []
    barrier = threading.Barrier(len(calls))
    lock = threading.Lock()

    def one(call: dict) -> None:
        barrier.wait()
        msg = run_tool_call(tools, call)
        with lock:
            out.append(msg)

    for c in calls:
        threads.append(threading.Thread(target=one, args=(c,)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


TIGHT = [Budget(max_calls=3, max_chars=None, max_bytes=None, max_tokens=None, max_reads_per_doc=None,
                max_refusals=None),
         Budget(max_calls=None, max_chars=None, max_bytes=900, max_tokens=None, max_reads_per_doc=None,
                max_refusals=None),
         Budget(max_calls=None, max_chars=None, max_bytes=None, max_tokens=None, max_reads_per_doc=2,
                max_refusals=None)]


def within(ledger: Any, budget: Budget) -> bool:
    spent = ledger.totals()
    limits = {"calls": budget.max_calls, "chars": budget.max_chars, "bytes": budget.max_bytes,
              "tokens": budget.max_tokens}
    per_doc: dict[str, int] = {}
    for e in ledger.charged:
        if e.read is not None:
            per_doc[e.read.doc_id] = per_doc.get(e.read.doc_id, 0) + 1
    return all(limits[k] is None or spent[k] <= limits[k] for k in limits) and \
        (budget.max_reads_per_doc is None or all(n <= budget.max_reads_per_doc for n in per_doc.values()))


@pytest.mark.parametrize("budget", TIGHT, ids=["calls", "bytes", "reads_per_doc"])
def test_many_parallel_reads_never_overspend_a_tight_budget(estore, budget):
    ids = [f"d{i % 4:02}" for i in range(12)]  # three reads of each of four documents, at different offsets
    calls = [{"name": "read_evidence", "args": {"doc_id": d, "offset": 40 * i, "limit": 120}, "id": f"r{i}",
              "type": "tool_call"} for i, d in enumerate(ids)]
    for trial in range(5):
        snap = estore.put_snapshot("acme", "s-1", "q", DOCS)
        ledger = estore.ledger("acme", "s-1", f"task-{trial}", budget)
        replies = parallel_calls_against(snap, ledger, calls)
        ok = [m for m in replies if m.status == "success"]
        assert within(ledger, budget), (trial, ledger.totals())
        assert len(ok) == ledger.totals()["calls"] and ok, (trial, [m.content for m in replies])
        assert all("budget_exhausted" in m.content for m in replies if m.status == "error")


@pytest.mark.parametrize("budget", TIGHT, ids=["calls", "bytes", "reads_per_doc"])
def test_many_parallel_reads_never_overspend_a_tight_in_memory_ledger(budget):
    ids = [f"d{i % 4:02}" for i in range(12)]
    calls = [{"name": "read_evidence", "args": {"doc_id": d, "offset": 40 * i, "limit": 120}, "id": f"r{i}",
              "type": "tool_call"} for i, d in enumerate(ids)]
    for _ in range(20):
        ledger = Ledger(budget)
        replies = parallel_calls_against(EvidenceIndex.in_memory(DOCS), ledger, calls)
        assert within(ledger, budget), ledger.totals()
        assert len([m for m in replies if m.status == "success"]) == ledger.totals()["calls"]


def test_parallel_reads_of_one_range_are_read_once_and_the_others_already_read(estore):
    gate = Gate(4, timeout=0.5)
    snap = gated(estore, gate).put_snapshot("acme", "s-1", "q", DOCS)
    ledger = estore.ledger("acme", "s-1", "task", OPEN)
    replies = with_harness(snap, ledger, reads(["d05"] * 4, offset=10, limit=100))
    assert [m.status for m in replies] == ["success"] * 4
    statuses = sorted(e.status for e in ledger.charged)
    assert statuses == ["already_read"] * 3 + ["ok"], statuses
    assert sum(1 for e in ledger.charged if e.read is not None) == 1  # one read charged, whatever was fetched
