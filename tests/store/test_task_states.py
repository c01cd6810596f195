"""Issue 33 item 5, the store's side: a task's own state beside its ledger, on every backend (memory, SQLite, PostgreSQL).

Begun with its ledger in one transaction, found in one statement, changed under the task's lock (parallel changes
lose nothing), bounded per ``(tenant, session)``, and removed with its ledger (cleanup after its TTL, delete_session).
"""

from __future__ import annotations

import sqlite3
import threading
from datetime import timedelta

import pytest

from evidence_lib import Budget, EvidenceError
from evidence_lib.store import SQLiteStore
from evidence_lib.store._sqlbase import SCHEMA_VERSION
from evidence_lib.store._tasks import begin_task, change_task, find_task

KEY = ("acme", "s-1", "mcp/t-1")


def test_a_task_is_found_with_its_ledger_and_state(estore) -> None:
    ledger = begin_task(estore, *KEY, Budget(max_calls=3), {"shown": [], "n": 0}, keep=4)
    ledger.charge("search_evidence", "x" * 10)
    found = find_task(estore, *KEY)
    assert found is not None
    again, state = found
    assert state == {"shown": [], "n": 0}
    assert again.lid == ledger.lid and again.budget.max_calls == 3 and again.totals()["calls"] == 1
    assert find_task(estore, "acme", "s-1", "mcp/t-never") is None
    assert find_task(estore, "other", *KEY[1:]) is None


def test_a_change_is_made_under_the_task_lock_and_parallel_changes_lose_nothing(estore) -> None:
    ledger = begin_task(estore, *KEY, Budget(), {"shown": []}, keep=4)

    def add(n: int) -> None:
        change_task(estore, ledger, lambda s: {"shown": sorted({*s["shown"], n})})

    threads = [threading.Thread(target=add, args=(n,)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert find_task(estore, *KEY)[1] == {"shown": list(range(12))}


def test_a_refused_change_leaves_the_state_as_it_was(estore) -> None:
    ledger = begin_task(estore, *KEY, Budget(), {"n": 1}, keep=4)

    def refuse(_state: dict) -> dict:
        raise EvidenceError("budget_exhausted", reason="calls")

    with pytest.raises(EvidenceError):
        change_task(estore, ledger, refuse)
    assert find_task(estore, *KEY)[1] == {"n": 1}


def test_only_the_newest_tasks_of_a_session_stay(estore) -> None:
    for n in range(5):
        begin_task(estore, "acme", "s-1", f"mcp/t-{n}", Budget(), {"n": n}, keep=3)
    estore.ledger("acme", "s-1", "not-a-task", Budget())  # a plain ledger of the session is not a task: it stays
    begin_task(estore, "acme", "s-2", "mcp/t-0", Budget(), {}, keep=3)  # another session's tasks do not count
    assert [find_task(estore, "acme", "s-1", f"mcp/t-{n}") is not None for n in range(5)] == [False, False] + [True] * 3
    assert estore.stats()["ledgers"] == 3 + 1 + 1


def test_a_task_goes_with_its_ledger(estore, clock) -> None:
    ledger = begin_task(estore, *KEY, Budget(), {}, keep=4, ttl=timedelta(hours=1))
    begin_task(estore, "acme", "s-2", "mcp/t-2", Budget(), {}, keep=4)
    clock.advance(hours=2)
    assert estore.cleanup()["ledgers"] == 1
    assert find_task(estore, *KEY) is None
    with pytest.raises(EvidenceError) as gone:
        change_task(estore, ledger, lambda s: {**s, "n": 1})
    assert gone.value.code == "unknown_task"
    estore.delete_session("acme", "s-2")
    assert find_task(estore, "acme", "s-2", "mcp/t-2") is None


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_schema_6_store_gets_the_task_table_and_version_7(spec, clock) -> None:
    SQLiteStore(spec[1], clock).close()
    conn = sqlite3.connect(spec[1], isolation_level=None)
    conn.execute("DROP TABLE task_states")
    conn.execute("UPDATE store_meta SET value = '6' WHERE key = 'schema_version'")
    conn.close()
    store = SQLiteStore(spec[1], clock)
    begin_task(store, *KEY, Budget(), {"ok": True}, keep=1)
    assert find_task(store, *KEY)[1] == {"ok": True}
    assert store._one("SELECT value FROM store_meta WHERE key = 'schema_version'")[0] == SCHEMA_VERSION == "7"
    store.close()
