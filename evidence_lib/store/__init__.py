"""The production path: one store interface, three backends (memory, SQLite, PostgreSQL). Notebook 11.

The core (notebooks 01-05) never imports this package; psycopg is imported only by the PostgreSQL backend.

    store = SQLiteStore("evidence.db", clock)                        # or MemoryStore(clock), PostgresStore(dsn, clock)
    snap = store.put_snapshot("acme", "s-1", "batch limit", documents, ttl=timedelta(hours=1))
    tools = evidence_tools(snap, principal, ledger=store.ledger("acme", "s-1", "task-1", Budget()))
"""

from __future__ import annotations

from .base import CHUNK_CHARS, DEFAULT_STORE_TTL, OVERLAP_CHARS, EvidenceStore, SnapshotKey, system_clock
from .ledger import StoreLedger
from .snapshot import StoreSnapshot
from .memory import MemoryStore
from .sqlite import SQLiteStore
from .workspace import ENTRY_PATH, TaskWorkspace

__all__ = ["CHUNK_CHARS", "DEFAULT_STORE_TTL", "DEFAULT_TTL", "ENTRY_PATH", "OVERLAP_CHARS", "EvidenceStore",
           "MemoryStore", "PostgresStore", "SQLiteStore", "SnapshotKey", "StoreLedger", "StoreSnapshot",
           "TaskWorkspace", "open_store", "system_clock"]

#: The former name of :data:`DEFAULT_STORE_TTL`, kept importable.
DEFAULT_TTL = DEFAULT_STORE_TTL


def __getattr__(name: str):
    if name == "PostgresStore":  # imported on first use, so psycopg stays optional
        from .postgres import PostgresStore

        return PostgresStore
    raise AttributeError(name)


def open_store(where: str, clock) -> EvidenceStore:
    """``":memory:"`` for the memory backend, a ``postgresql://`` DSN for PostgreSQL, else an SQLite file path."""
    if where == ":memory:":
        return MemoryStore(clock)
    if where.startswith(("postgresql://", "postgres://")) or "host=" in where or "dbname=" in where:
        from .postgres import PostgresStore

        return PostgresStore(where, clock)
    return SQLiteStore(where, clock)
