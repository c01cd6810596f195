"""The PostgreSQL backend (psycopg 3): one store for several workers or machines. Notebook 11.

Connection policy, stated once: ``autocommit=True`` with explicit ``conn.transaction()`` blocks; ledger rows
are locked with ``SELECT ... FOR UPDATE`` and publishing a snapshot or writing a workspace takes a
transaction-scoped advisory lock on its key. psycopg is imported here only (``pip install '.[postgres]'``).

Locate uses a ``pg_trgm`` GIN index on the chunks, queried with ``LIKE '%term%'`` (PostgreSQL rechecks every
candidate). Terms under 3 characters have no trigram, so they use ``strpos()`` over the snapshot's chunks.
pg_trgm only indexes characters the database's ``LC_CTYPE`` calls alphanumeric: under ``C`` every Chinese
character is skipped, the index answers nothing useful and every query rechecks every row. Create the
cluster with ``--encoding=UTF8 --locale=C.UTF-8`` (``scripts/postgres.sh`` does); :attr:`PostgresStore.lc_ctype`
says what the database uses.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterable
from contextlib import contextmanager

from .base import MIN_INDEXED_CHARS
from .sqlbase import Q, SQLStore, migrate, schema

TRIGRAM = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX IF NOT EXISTS chunks_body_trgm ON chunks USING gin (body gin_trgm_ops)",
]
SCHEMA_LOCK = 7_110_001  # advisory lock id: one worker creates the schema, the others wait


def like_pattern(term: str) -> str:
    """``%term%`` with LIKE's metacharacters escaped (backslash is PostgreSQL's default escape)."""
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class PostgresStore(SQLStore):
    """The store in a PostgreSQL database given by ``dsn`` (e.g. ``$EVIDENCE_PG_DSN``)."""

    backend = "postgres"
    FOR_UPDATE = " FOR UPDATE"
    REWRITE = True

    def __init__(self, dsn: str, clock) -> None:
        import psycopg  # optional dependency: only this backend needs it

        super().__init__(clock)
        self._lock = threading.RLock()
        self._unanalyzed = 0
        self._conn = psycopg.connect(dsn, autocommit=True, prepare_threshold=None)
        with self._tx(write=True) as q:
            q("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))
            migrate(q, schema("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY") + TRIGRAM)
            self.lc_ctype = q.one("SELECT datctype FROM pg_database WHERE datname = current_database()")[0]
        if self.lc_ctype in ("C", "POSIX"):
            warnings.warn(f"this database's LC_CTYPE is {self.lc_ctype}: pg_trgm skips non-ASCII characters, so "
                          "locate on Chinese terms scans every chunk; use --locale=C.UTF-8", stacklevel=2)

    def __repr__(self) -> str:
        return "PostgresStore()"

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _tx(self, write: bool = False):
        with self._lock, self._conn.transaction():
            yield Q(self._conn.cursor(), rewrite=True)

    @contextmanager
    def bulk_load(self, *, maintenance_work_mem: str = "1GB"):
        """Load a large corpus with the trigram index dropped, then build it once (``CREATE INDEX``).

        Building a GIN index over loaded rows is cheaper than updating it chunk by chunk (notebook 11 shows
        both, measured). Results stay exact meanwhile: every ``LIKE`` is rechecked against the stored text, so
        without the index a locate scans, slowly. Other workers are never wrong, only slower until the block
        ends; one that connects meanwhile recreates the index (its schema check does), which costs this load
        speed, not correctness. The index is rebuilt even if the block raises.
        """
        with self._lock:
            self._conn.execute("DROP INDEX IF EXISTS chunks_body_trgm")
        try:
            yield self
        finally:
            with self._lock, self._conn.transaction():
                self._conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (maintenance_work_mem,))
                self._conn.execute(TRIGRAM[1])
            with self._lock:
                self._conn.execute("ANALYZE chunks")
            self._unanalyzed = 0

    def _add(self, snap_id: int, docs: list, chunks: list) -> None:
        super()._add(snap_id, docs, chunks)
        self._unanalyzed += len(chunks)

    def _publish(self, snap_id: int) -> None:
        super()._publish(snap_id)
        if self._unanalyzed > 500:  # fresh statistics, or the planner seq-scans instead of using the GIN index
            with self._lock:
                self._conn.execute("ANALYZE chunks")
            self._unanalyzed = 0

    def _one(self, sql: str, params: tuple = ()):
        with self._lock:  # one statement in autocommit mode: no BEGIN/COMMIT round trips
            return Q(self._conn.cursor(), rewrite=True).one(sql, params)

    def _all(self, sql: str, params: tuple = ()) -> list:
        with self._lock:
            return Q(self._conn.cursor(), rewrite=True).all(sql, params)

    def _lock_key(self, q: Q, *parts: str) -> None:
        q("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", ("\x1f".join(parts),))

    def _candidates(self, snap_id: int, term: str) -> Iterable[tuple[int, int]]:
        if len(term) >= MIN_INDEXED_CHARS:
            # The planner prices a seq scan by the heap alone, not by the TOASTed chunk bodies each row drags in,
            # so on its own it scans every chunk. ``snap_id + 0`` hides the btree; no seq scan leaves the GIN index.
            with self._tx() as q:
                q("SET LOCAL enable_seqscan = off")
                return q.all("SELECT doc_no, chunk_no FROM chunks WHERE body LIKE ? AND snap_id + 0 = ?",
                             (like_pattern(term), snap_id))
        return self._all("SELECT doc_no, chunk_no FROM chunks WHERE snap_id = ? AND strpos(body, ?) > 0",
                         (snap_id, term))

    def index_size(self) -> dict[str, int]:
        """Bytes on disk: every table of the store with its indexes and TOAST, and the trigram index alone."""
        row = self._one("SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n "
                        "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'")
        idx = self._one("SELECT pg_relation_size('chunks_body_trgm')")
        return {"store_bytes": int(row[0] or 0), "index_bytes": int(idx[0])}
