"""One function that opens a store from where it lives: memory, an SQLite file or a PostgreSQL DSN. Notebook 11."""

from __future__ import annotations

from .._clock import Clock
from ._base import EvidenceStore
from ._memory import MemoryStore
from ._sqlite import SQLiteStore

__all__ = ["open_store"]


def open_store(where: str, clock: Clock) -> EvidenceStore:
    """``":memory:"`` for the memory backend, a ``postgresql://`` DSN for PostgreSQL, else an SQLite file path."""
    if where == ":memory:":
        return MemoryStore(clock)
    if where.startswith(("postgresql://", "postgres://")) or "host=" in where or "dbname=" in where:
        from ._postgres import PostgresStore

        return PostgresStore(where, clock)
    return SQLiteStore(where, clock)
