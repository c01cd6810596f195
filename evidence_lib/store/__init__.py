"""The production path: one store interface, three backends (memory, SQLite, PostgreSQL). Notebook 11.

The core (notebooks 01-05) never imports this package; psycopg is imported only by the PostgreSQL backend.

    store = SQLiteStore("evidence.db", clock)                        # or MemoryStore(clock), PostgresStore(dsn, clock)
    snap = store.put_snapshot("acme", "s-1", "batch limit", documents, ttl=timedelta(hours=1))
    tools = evidence_tools(snap, principal, ledger=store.ledger("acme", "s-1", "task-1", Budget()))

:func:`open_store` opens one from where it lives. A store also keeps large results outside the context:
:class:`ToolResults` puts, reads a range of and expires them (notebooks 07, 11; :func:`offload` writes the handle the
model sees, notebook 12).
"""

from __future__ import annotations

from typing import Any

from ._base import EvidenceStore
from ._common import CHUNK_CHARS, OVERLAP_CHARS, system_clock
from ._ledger import StoreLedger
from ._memory import MemoryStore
from ._offload import ToolResults, json_sections, offload
from ._open import open_store
from ._snapshot import StoreSnapshot
from ._sqlite import SQLiteStore
from ._workspace import TaskWorkspace

__all__ = ["CHUNK_CHARS", "OVERLAP_CHARS", "EvidenceStore", "MemoryStore", "PostgresStore", "SQLiteStore", "StoreLedger",
           "StoreSnapshot", "TaskWorkspace", "ToolResults", "json_sections", "offload", "open_store", "system_clock"]


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":  # imported on first use, so psycopg stays optional
        from ._postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
