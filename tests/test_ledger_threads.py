"""Issue 2: a ledger is safe under concurrent calls (threads; the store ledger across processes too).

LangGraph runs one message's tool calls in threads, so one ledger sees parallel charges. Each trial releases N
threads (or processes) at once with a barrier against ``max_calls < N``: never more than the limit may be
charged. The race window (between the check and the append) is made reachable on purpose: a ledger with a long
history (its tally takes a while to compute) and a tiny thread switch interval, over many trials.
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
from collections.abc import Callable, Iterator
from functools import partial

import pytest
from store.storekit import T0, open_spec, pg_dsn

from evidence_lib import Budget, EvidenceError, Ledger, ManualClock
from evidence_lib._ledger import LedgerEntry

LIMIT = 3
THREADS = 12
TRIALS = 100
HISTORY = 1_000
ONLY_CALLS = Budget(max_calls=LIMIT, max_chars=None, max_bytes=None, max_tokens=None, max_reads_per_doc=None,
                    max_refusals=None)


@pytest.fixture
def busy_interpreter() -> Iterator[None]:
    """Switch threads as often as the interpreter can: a check and its write are interleaved if they can be."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def release_at_once(n: int, fn: Callable[[], None]) -> None:
    """Run ``fn`` in ``n`` threads released together by a barrier; budget refusals are expected."""
    barrier = threading.Barrier(n)

    def go() -> None:
        barrier.wait()
        try:
            fn()
        except EvidenceError as e:
            assert e.code == "budget_exhausted"

    threads = [threading.Thread(target=go) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def long_history() -> list[LedgerEntry]:
    """Refused calls (never charged): a tally over them takes long enough for another thread to run."""
    return [LedgerEntry(i + 1, "search_evidence", "invalid_query", 40, 40, 10, charged=False) for i in range(HISTORY)]


def test_parallel_charges_never_pass_max_calls(busy_interpreter):
    overspent = []
    for trial in range(TRIALS):
        ledger = Ledger(ONLY_CALLS, long_history())
        release_at_once(THREADS, partial(ledger.charge, "read_evidence", "some page text"))
        if ledger.totals()["calls"] != LIMIT:
            overspent.append((trial, ledger.totals()["calls"]))
    assert overspent == []


def test_parallel_reads_of_one_range_are_charged_once_and_answered_already_read_after(busy_interpreter):
    """The dedupe decision and the charge are one step: two parallel reads of the same bytes never both pay."""
    read = ("d01", "r1", 0, 40, "a" * 64)
    for _ in range(TRIALS // 4):
        ledger = Ledger(Budget(max_calls=None, max_chars=None, max_bytes=None, max_tokens=None,
                               max_reads_per_doc=None, max_refusals=None), long_history())
        release_at_once(THREADS, partial(ledger.charge_read, "read_evidence", read, lambda: "page", lambda e: "seen"))
        statuses = sorted(e.status for e in ledger.entries if e.charged)
        assert statuses == ["already_read"] * (THREADS - 1) + ["ok"]


def test_parallel_charges_of_one_store_ledger_object_never_pass_max_calls(tmp_path, busy_interpreter):
    for spec in (("memory", ""), ("sqlite", str(tmp_path / "threads.db"))):
        store = open_spec(spec, ManualClock(T0))
        for trial in range(TRIALS // 10):
            ledger = store.ledger("acme", "s", f"task-{trial}", ONLY_CALLS)
            release_at_once(THREADS, partial(ledger.charge, "read_evidence", "some page text"))
            assert ledger.totals()["calls"] == LIMIT, (spec[0], trial)
        store.close()


# -- across processes -------------------------------------------------------------------------------------------
def charge_once(spec: tuple[str, str], task: str, barrier) -> str:
    """One worker process: open the shared store and the task's ledger, wait for the others, charge one call."""
    store = open_spec(spec, ManualClock(T0))
    ledger = store.ledger("acme", "s", task)
    barrier.wait()
    try:
        ledger.charge("read_evidence", "some page text")
        return "ok"
    except EvidenceError as e:
        return e.code
    finally:
        store.close()


PROCESSES = 6


@pytest.fixture(params=["sqlite", "postgres"])
def shared_spec(request, tmp_path) -> Iterator[tuple[str, str]]:
    if request.param == "sqlite":
        yield ("sqlite", str(tmp_path / "processes.db"))
        return
    from evidence_lib.store._postgres import scratch_schema

    with scratch_schema(pg_dsn(), "lt") as where:
        yield ("postgres", where)


def test_processes_charging_one_store_ledger_at_once_never_pass_max_calls(shared_spec):
    store = open_spec(shared_spec, ManualClock(T0))
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(PROCESSES) as pool:
        for trial in range(2):
            task = f"task-{trial}"
            store.ledger("acme", "s", task, ONLY_CALLS)  # the first opener fixes the budget
            barrier = manager.Barrier(PROCESSES)
            codes = pool.starmap(charge_once, [(shared_spec, task, barrier)] * PROCESSES)
            assert sorted(codes) == ["budget_exhausted"] * (PROCESSES - LIMIT) + ["ok"] * LIMIT
            assert store.ledger("acme", "s", task).totals()["calls"] == LIMIT
    store.close()
