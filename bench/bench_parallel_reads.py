#!/usr/bin/env python3
"""Independent reads overlap (issue 31, item 21): four ``read_evidence`` calls in one model message, each blocking a
real 0.2 s where its page is fetched, through LangChain's ``create_agent`` with a shared budget ledger, on every
backend; and through ``EvidenceMiddleware`` over offloaded results. Wall-clock seconds, medians of several runs.

Where the 0.2 s is injected (documented, so the numbers mean one thing):

* ``index``: an in-memory :class:`~evidence_lib._ledger.Ledger` over a fixed index whose every document text fetch
  blocks (:class:`~evidence_lib.integrations.langchain._loop.SlowIndex`);
* ``memory``, ``sqlite``, ``postgres``: a store snapshot and the task's store ledger in that backend; the store's
  page fetch (the reader's ``chunks``, inside its read transaction) blocks;
* ``middleware``: ``EvidenceMiddleware`` over a store of each backend; the four calls read four offloaded results, and
  the same page fetch blocks.

Four reads one after the other would take 0.8 s plus the rest; the target is 0.35 s or less each. Each run also
checks the budget: the same message under ``max_calls=2`` charges exactly two calls and refuses two
(``overspent`` must be 0). PostgreSQL runs when ``EVIDENCE_PG_DSN`` is set (a scratch schema, dropped afterwards).
Tests assert the behaviour (``tests/test_parallel_reads.py``); time lives here. Results:
``bench/results/parallel_reads.json``, read by a notebook cell as ``json.load(...)["median_seconds"]``.

    .venv/bin/python bench/bench_parallel_reads.py [--latency 0.2] [--repeats 5] [--out ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from evidence_lib import Budget, Document, EvidenceIndex, Ledger, ManualClock, Principal, evidence_tools
from evidence_lib.course.readers import ScriptedChatModel
from evidence_lib.course.slow import SlowIndex
from evidence_lib.integrations.langchain._harness import evidence_middleware
from evidence_lib.integrations.langchain._middleware import EvidenceMiddleware
from evidence_lib.store import MemoryStore, SQLiteStore

OUT = Path(__file__).resolve().parent / "results" / "parallel_reads.json"
READS = 4
TARGET_SECONDS = 0.35
T0 = datetime(2026, 10, 27, 9, 0, tzinfo=UTC)
ALICE = Principal("acme", "alice")
DOCS = [Document(f"d{i}", f"doc {i}", "r1", f"document {i}: " + "the upper limit is 500 rows per batch. " * 40)
        for i in range(1, READS + 1)]


def slow(store_cls: type, latency: float) -> type:
    """``store_cls`` whose page fetch (the reader's ``chunks``) blocks ``latency`` seconds inside its read
    transaction: a remote database's round trip."""

    class Slow(store_cls):  # type: ignore[misc, valid-type]
        @contextmanager
        def reading(self) -> Iterator[Any]:
            with super().reading() as reader:
                yield _SlowReader(reader, latency)

    Slow.__name__ = f"Slow{store_cls.__name__}"
    return Slow


class _SlowReader:
    def __init__(self, reader: Any, latency: float) -> None:
        self._reader, self._latency = reader, latency

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reader, name)

    def chunks(self, *args: Any) -> Any:
        time.sleep(self._latency)
        return self._reader.chunks(*args)


@contextmanager
def stores(latency: float, tmp: Path) -> Iterator[dict[str, Any]]:
    """One slow store per backend, kept for the whole benchmark as a server keeps its store (its connections warm);
    every run uses a session and a task of its own. PostgreSQL only with EVIDENCE_PG_DSN."""
    with ExitStack() as stack:
        out = {"memory": slow(MemoryStore, latency)(ManualClock(T0)),
               "sqlite": slow(SQLiteStore, latency)(tmp / "bench.db", ManualClock(T0))}
        dsn = os.environ.get("EVIDENCE_PG_DSN")
        if dsn:
            from evidence_lib.store._postgres import PostgresStore, scratch_schema

            where = stack.enter_context(scratch_schema(dsn, "bench_par"))
            out["postgres"] = slow(PostgresStore, latency)(where, ManualClock(T0))
        try:
            yield out
        finally:
            for store in out.values():
                store.close()


def read_calls(doc_ids: list[str]) -> list[dict]:
    return [{"name": "read_evidence", "args": {"doc_id": d, "offset": 0, "limit": 80}, "id": f"r{i}",
             "type": "tool_call"} for i, d in enumerate(doc_ids)]


def agent_run(tools: list, middleware: list, doc_ids: list[str]) -> tuple[float, list[ToolMessage]]:
    """Seconds for one create_agent run: one message of four reads, then a final answer."""
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=read_calls(doc_ids)),
                                         AIMessage(content="done")])
    agent = create_agent(model, tools, middleware=middleware)
    start = time.perf_counter()
    state = agent.invoke({"messages": [HumanMessage("read four pages")]})
    took = time.perf_counter() - start
    return took, [m for m in state["messages"] if isinstance(m, ToolMessage)]


def check_replies(replies: list[ToolMessage], ok: int) -> None:
    statuses = sorted(m.status for m in replies)
    assert statuses == ["error"] * (READS - ok) + ["success"] * ok, [m.content for m in replies]


def with_ledger(make_source: Callable[[Budget], tuple[Any, Any]], budget: Budget) -> tuple[float, list, Any]:
    source, ledger = make_source(budget)
    tools = evidence_tools(source, ALICE, ledger=ledger, profile="compact")
    took, replies = agent_run(tools, [evidence_middleware(tools)], [d.doc_id for d in DOCS])
    return took, replies, ledger


def overspent(ledger: Any) -> int:
    """How far the charged calls passed ``max_calls`` (0 when the budget held)."""
    return max(0, ledger.totals()["calls"] - ledger.budget.max_calls) if ledger.budget.max_calls is not None else 0


def through_middleware(store: Any, budget: Budget, session: str) -> tuple[float, list, Any]:
    """Four offloaded results read by handle in one message of a create_agent run with EvidenceMiddleware."""
    mw = EvidenceMiddleware(store, ALICE, session=session, threshold_tokens=50, budget=budget)
    handles = []
    for d in DOCS:
        shown = mw.offloaded(ToolMessage(content=d.text, name="fetch", tool_call_id=f"call-{d.doc_id}"),
                             {"id": f"call-{d.doc_id}", "name": "fetch"})
        handles.append(shown.response_metadata["evidence_offload"]["doc_id"])
    took, replies = agent_run([], [mw], handles)
    return took, replies, mw.ledger  # the latest run's: the one the agent made


def measure(latency: float, repeats: int) -> dict[str, Any]:
    seconds: dict[str, list[float]] = {}
    budget_checks: dict[str, dict[str, int]] = {}
    open_budget = Budget(max_calls=None, max_chars=None, max_bytes=None, max_tokens=None, max_refusals=None)
    tight = Budget(max_calls=2, max_chars=None, max_bytes=None, max_tokens=None, max_refusals=None)
    sessions = (f"s-{i}" for i in range(1_000_000))
    with tempfile.TemporaryDirectory() as tmp, stores(latency, Path(tmp)) as backends:
        index = EvidenceIndex.in_memory(DOCS)

        def on_index(budget: Budget) -> tuple[Any, Any]:
            return SlowIndex(index, latency), Ledger(budget)

        def on_store(store: Any) -> Callable[[Budget], tuple[Any, Any]]:
            def make(budget: Budget) -> tuple[Any, Any]:
                session = next(sessions)
                return store.put_snapshot("acme", session, "q", DOCS), store.ledger("acme", session, "task", budget)
            return make

        cases: dict[str, Callable[[Budget], tuple[float, list, Any]]] = {
            "create_agent, index": lambda b: with_ledger(on_index, b)}
        for name, store in backends.items():
            cases[f"create_agent, {name}"] = lambda b, s=store: with_ledger(on_store(s), b)
        for name, store in backends.items():
            cases[f"middleware, {name}"] = lambda b, s=store: through_middleware(s, b, next(sessions))
        for case, run in cases.items():
            run(open_budget)  # a warm-up run, not counted (imports, the agent's graph, the store's connections)
            seconds[case] = []
            for _ in range(repeats):
                took, replies, _ = run(open_budget)
                check_replies(replies, READS)
                seconds[case].append(round(took, 4))
            _, replies, ledger = run(tight)
            check_replies(replies, 2)
            budget_checks[case] = {"max_calls": 2, "charged": ledger.totals()["calls"], "overspent": overspent(ledger)}
            assert budget_checks[case]["overspent"] == 0, (case, budget_checks[case])
    medians = {case: round(statistics.median(s), 4) for case, s in seconds.items()}
    return {
        "what": f"one model message of {READS} read_evidence calls, each page fetch blocking {latency} s, through "
                "langchain's create_agent (with a budget ledger; the harness's evidence_middleware) and through "
                "EvidenceMiddleware (four offloaded results); wall-clock seconds of the whole agent run (after one "
                "warm-up run per case; one store per backend, a fresh session and ledger per run)",
        "latency_seconds": latency, "reads": READS, "repeats": repeats, "target_seconds": TARGET_SECONDS,
        "seconds": seconds, "median_seconds": medians,
        "within_target": {case: m <= TARGET_SECONDS for case, m in medians.items()},
        "budget_max_calls_2": budget_checks,
        "backends": sorted(backends),
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count(), "langchain_core": version("langchain-core"),
                    "langchain": version("langchain")},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    report = measure(a.latency, a.repeats)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({"median_seconds": report["median_seconds"], "budget": report["budget_max_calls_2"]}, indent=1))


if __name__ == "__main__":
    main()
