"""A task's own state in the store, beside its ledger: any worker serves any call of the task. Issue 33, notebook 13.

A stateless server (the MCP server with ``--store``) keeps nothing of a task in its memory between calls. The task
*is* its :class:`~evidence_lib.store.StoreLedger` (the budget, every read: notebook 11) plus a small JSON object the
server defines (which revisions the model was shown, the last query, the snapshot it reads, ...). Begun in one
transaction with its ledger (the ``keep`` newest tasks of a ``(tenant, session)`` stay, older ones go with their
ledgers), found in one statement, changed under the task's lock (SQLite ``BEGIN IMMEDIATE``, PostgreSQL ``SELECT ...
FOR UPDATE``, the memory backend's lock), removed with its ledger (expiry and ``cleanup``, ``delete_session``).
A call therefore costs the same few round trips whatever the task read before.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from .._errors import EvidenceError
from .._ledger import Budget
from ._base import EvidenceStore
from ._common import DEFAULT_STORE_TTL, expiry_us
from ._ledger import StoreLedger, budget_limits

__all__ = ["MAX_TASK_STATE_CHARS", "begin_task", "change_task", "find_task"]

#: Largest task state stored (characters of its JSON): a task's state is a few names, never documents.
MAX_TASK_STATE_CHARS = 256_000


def _dump(state: Mapping[str, Any]) -> str:
    text = json.dumps(state, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    if len(text) > MAX_TASK_STATE_CHARS:
        raise ValueError(f"a task state is at most {MAX_TASK_STATE_CHARS:,} characters of JSON")
    return text


def begin_task(store: EvidenceStore, tenant: str, session: str, task: str, budget: Budget, state: Mapping[str, Any], *,
               keep: int, ttl: timedelta = DEFAULT_STORE_TTL) -> StoreLedger:
    """A new task ``(tenant, session, task)`` with ``budget`` and ``state``, in one transaction; of the session's
    tasks only the ``keep`` newest stay. Its ledger (which expires ``ttl`` after its last entry)."""
    limits = budget_limits(budget)
    lid = store.task_begin(tenant, session, task, limits, _dump(state), expiry_us(store.now_us(), ttl), keep)
    return StoreLedger(store, tenant, session, task, ttl=ttl, opened=(lid, limits))


def find_task(store: EvidenceStore, tenant: str, session: str, task: str, *,
              ttl: timedelta = DEFAULT_STORE_TTL) -> tuple[StoreLedger, dict[str, Any]] | None:
    """The task's ledger and state as stored now (one statement), or ``None`` for a task never begun or gone."""
    row = store.task_row(tenant, session, task)
    if row is None:
        return None
    lid, limits, state = row
    return StoreLedger(store, tenant, session, task, ttl=ttl, opened=(lid, tuple(limits))), json.loads(state)


def change_task(store: EvidenceStore, ledger: StoreLedger, change: Callable[[dict[str, Any]], dict[str, Any] | None]) \
        -> dict[str, Any]:
    """Apply ``change`` to the task's state under its lock: it gets the state as stored now and returns the new one
    (``None``: unchanged; raising leaves it as it was). The state after; ``unknown_task`` if the task is gone."""
    with store.task_txn(ledger.lid) as txn:
        if txn.state is None:
            raise EvidenceError("unknown_task")
        state = json.loads(txn.state)
        new = change(state)
        if new is not None and new != state:
            txn.write(_dump(new))
            return new
        return state
