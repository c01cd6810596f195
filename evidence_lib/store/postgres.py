"""The PostgreSQL backend (psycopg 3): one store for several workers or machines. Notebook 11.

Connection policy, stated once: ``autocommit=True`` with explicit ``conn.transaction()`` blocks; ledger rows
are locked with ``SELECT ... FOR UPDATE`` and publishing a snapshot or writing a workspace takes a
transaction-scoped advisory lock on its key. psycopg is imported here only (``pip install '.[postgres]'``).

Locate uses one GIN index over ``(snap_id + 0, body gin_trgm_ops)`` (``btree_gin`` gives GIN the integer key),
queried with ``snap_id + 0 = ? AND body LIKE '%term%'``. The snapshot is part of the index key, so the index hands back
only this snapshot's chunks and PostgreSQL rechecks none of another tenant's: with a trigram-only index, the
recheck of every foreign chunk holding the term made its count visible in a locate's latency. Terms under 3
characters have no trigram, so they use ``strpos()`` over the snapshot's chunks.
pg_trgm only indexes characters the database's ``LC_CTYPE`` calls alphanumeric: under ``C`` every Chinese
character is skipped, the index answers nothing useful and every query rechecks every row. Create the
cluster with ``--encoding=UTF8 --locale=C.UTF-8`` (``scripts/postgres.sh`` does); :attr:`PostgresStore.lc_ctype`
says what the database uses.
"""

from __future__ import annotations

import re
import secrets
import threading
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from .common import MIN_INDEXED_CHARS
from .sqlbase import Q, SQLStore, migrate, schema

EXTENSIONS = ("pg_trgm", "btree_gin")  # both ship in Debian's postgresql-contrib
TRIGRAM_INDEX = "chunks_snap_trgm"
TRIGRAM = [
    *(f"CREATE EXTENSION IF NOT EXISTS {ext}" for ext in EXTENSIONS),
    # ``snap_id + 0``, not ``snap_id``: only this index matches that expression (see _candidates).
    f"CREATE INDEX IF NOT EXISTS {TRIGRAM_INDEX} ON chunks USING gin ((snap_id + 0), body gin_trgm_ops)",
]
SCHEMA_LOCK = 7_110_001  # advisory lock id: one worker creates the schema, the others wait


@contextmanager
def scratch_schema(dsn: str, prefix: str = "scratch") -> Iterator[str]:
    """A private schema for a test, a notebook or a benchmark: yields a DSN whose ``search_path`` is that schema
    (then ``public``, where the extensions live), and drops the schema with everything in it on exit."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    if not re.fullmatch(r"[a-z][a-z0-9_]{0,39}", prefix):
        raise ValueError("prefix: lower-case letters, digits and _, at most 40 characters")
    name = f"{prefix}_{secrets.token_hex(6)}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            for ext in EXTENSIONS:
                conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS {} SCHEMA public").format(sql.Identifier(ext)))
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    try:
        yield make_conninfo(dsn, options=f"-c search_path={name},public")
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


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
        both, measured). It is meant for an initial import, before tenants are served: results stay exact
        meanwhile (every ``LIKE`` is rechecked against the stored text), but without the index a locate scans
        every tenant's rows, slowly, and its time then depends on them. A worker that connects meanwhile
        recreates the index (its schema check does), which costs this load speed, not correctness. The index is
        rebuilt even if the block raises.
        """
        with self._lock:
            self._conn.execute(f"DROP INDEX IF EXISTS {TRIGRAM_INDEX}")
        try:
            yield self
        finally:
            with self._lock, self._conn.transaction():
                self._conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (maintenance_work_mem,))
                self._conn.execute(TRIGRAM[-1])
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
        with self._tx() as q:
            q("SET LOCAL enable_seqscan = off")  # a seq scan would read every tenant's rows
            if len(term) < MIN_INDEXED_CHARS:  # no trigram: the btree gives this snapshot's chunks, strpos checks
                return q.all("SELECT doc_no, chunk_no FROM chunks WHERE snap_id = ? AND strpos(body, ?) > 0",
                             (snap_id, term))
            # The planner prices LIKE by the heap row alone, not by the TOASTed body it must fetch, so given the
            # chance it walks the btree over every chunk of the snapshot. The expression ``snap_id + 0`` matches
            # the GIN index's first column and no btree: the one plan left asks the index for this snapshot's
            # chunks holding the trigrams, and rechecks only those.
            return q.all("SELECT doc_no, chunk_no FROM chunks WHERE snap_id + 0 = CAST(? AS bigint) AND body LIKE ?",
                         (snap_id, like_pattern(term)))

    def index_size(self) -> dict[str, int]:
        """Bytes on disk: every table of the store with its indexes and TOAST, and the trigram index alone."""
        row = self._one("SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n "
                        "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'")
        idx = self._one(f"SELECT pg_relation_size('{TRIGRAM_INDEX}')")
        return {"store_bytes": int(row[0] or 0), "index_bytes": int(idx[0])}
