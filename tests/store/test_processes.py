"""Several processes on one store: four workers serving tool calls, and a writer killed with SIGKILL mid-snapshot.

Only the shared backends (SQLite, PostgreSQL) can be opened by another process; the memory backend gets the
same four workers as threads. Assertions are about behaviour (no lost writes, no cross-tenant reads, budgets
never overspent, old-or-new snapshots), never about time.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from evidence_lib import Access, Budget, Document, EvidenceError, Principal
from evidence_lib.store._workspace import ENTRY_PATH

from . import workers
from .storekit import open_spec, raw_sql

CALLS = 12
MAX_CALLS = 30  # 4 workers x 12 reads per tenant want 48 charged calls: 18 must be refused


def seed(store) -> None:
    for tenant in ("acme", "globex"):
        docs = [Document(f"{tenant}-{i}", f"{tenant} {i}", "r1", f"marker-{tenant} " * 30, Access(tenant))
                for i in range(4)]
        store.put_snapshot(tenant, "s", "q", docs)
        store.ledger(tenant, "s", "task", Budget(max_calls=MAX_CALLS, max_chars=None, max_bytes=None,
                                                 max_tokens=None, max_reads_per_doc=None, max_refusals=None))


def check(store, results: list[dict]) -> None:
    for tenant in ("acme", "globex"):
        mine = [r for r in results if r["tenant"] == tenant]
        served = sum(r["codes"].get("ok", 0) for r in mine)
        refused = sum(r["codes"].get("budget_exhausted", 0) for r in mine)
        assert served == MAX_CALLS and refused == 4 * CALLS - MAX_CALLS  # never overspent, nothing else failed
        assert sum(sum(r["codes"].values()) for r in mine) == 4 * CALLS
        ledger = store.ledger(tenant, "s", "task")
        entries = ledger.entries
        assert ledger.totals()["calls"] == MAX_CALLS == sum(e.charged for e in entries)  # no lost writes
        assert [e.step for e in entries] == list(range(1, len(entries) + 1))
        assert sum(e.bytes for e in entries if e.charged) == ledger.totals()["bytes"]
        files = store.workspace(Principal(tenant, "shared"), "s").files()
        assert len(files) == 1 + 4 * CALLS and files[0].doc_id == ENTRY_PATH  # every note written by 4 workers
    assert sum(r["leaked"] for r in results) == 0


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_four_worker_processes_share_one_store_without_lost_writes_leaks_or_overspending(spec, estore):
    seed(estore)
    jobs = [(spec, t, o, w, CALLS) for t, o in (("acme", "globex"), ("globex", "acme")) for w in range(4)]
    with multiprocessing.get_context("spawn").Pool(4) as pool:  # four processes, eight workers' jobs
        out = pool.starmap(workers.serve, jobs)
    check(estore, [{**r, "tenant": j[1]} for r, j in zip(out, jobs)])


@pytest.mark.parametrize("backend", ["memory"])
def test_four_worker_threads_share_the_memory_store_without_lost_writes_leaks_or_overspending(estore, monkeypatch):
    seed(estore)
    monkeypatch.setattr(workers, "open_spec", lambda spec, clock: _Unclosed(estore))
    jobs = [(None, t, o, w, CALLS) for t, o in (("acme", "globex"), ("globex", "acme")) for w in range(4)]
    with ThreadPoolExecutor(4) as ex:
        out = list(ex.map(lambda j: workers.serve(*j), jobs))
    check(estore, [{**r, "tenant": j[1]} for r, j in zip(out, jobs)])


class _Unclosed:
    """The shared memory store, with close() a no-op for the workers."""

    def __init__(self, store) -> None:
        self._store = store

    def __getattr__(self, name):
        return (lambda: None) if name == "close" else getattr(self._store, name)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_writer_killed_mid_snapshot_leaves_the_old_snapshot_whole(spec, estore, clock, tmp_path):
    old = [Document(f"doc-{i:04}", f"doc {i}", "old", "old " * 500) for i in range(20)]
    estore.put_snapshot("acme", "s", "q", old, ttl=timedelta(hours=48))
    started = tmp_path / "started"
    child = multiprocessing.get_context("spawn").Process(target=workers.write_snapshot,
                                                         args=(spec, 400, "new", str(started)))
    child.start()
    try:
        for _ in range(600):  # bounded wait for the first committed batches (at most 60 s)
            if started.exists() or not child.is_alive():
                break
            time.sleep(0.1)
        assert started.exists(), "the writer never got going"
        seen = {_revisions(estore) for _ in range(5)}  # readers during the write: the old snapshot only
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.join(30)
    assert child.exitcode == -signal.SIGKILL
    assert seen == {frozenset({"old"})}
    reopened = open_spec(spec, clock)  # opens cleanly after the kill
    snap = reopened.snapshot("acme", "s", "q")
    assert [e.doc_id for e in snap] == [d.doc_id for d in old]
    assert all(snap.text(d.doc_id) == d.text for d in old)  # whole and verified: never a mix
    if spec[0] == "sqlite":
        with raw_sql(spec) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    clock.advance(hours=25)  # the dead writer's unpublished snapshot outlived its TTL (24 h); the old one did not
    assert estore.cleanup()["snapshots"] == 1
    new = [Document(f"doc-{i:04}", f"doc {i}", "new", "new " * 500) for i in range(3)]
    estore.put_snapshot("acme", "s", "q", new)
    assert _revisions(reopened) == frozenset({"new"}) and len(reopened.snapshot("acme", "s", "q")) == 3
    reopened.close()


def _revisions(store) -> frozenset[str]:
    try:
        snap = store.snapshot("acme", "s", "q")
    except EvidenceError as e:
        return frozenset({e.code})
    return frozenset(e.revision for e in snap)
