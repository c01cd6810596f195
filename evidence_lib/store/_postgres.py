"""The PostgreSQL backend (psycopg 3): one store for several workers or machines. Notebook 11.

Connection policy, stated once: a pool of connections (``psycopg_pool``, at most ``pool_size``; a transaction
takes one and gives it back, so reads in several threads run at once), each ``autocommit=True`` with explicit
transactions (:class:`~evidence_lib.store._sqlbase.SQLStore`'s); ledger rows are locked with ``SELECT ... FOR UPDATE``
and publishing a snapshot or writing a workspace takes a transaction-scoped advisory lock on its key. psycopg and
psycopg_pool are imported here only (``pip install '.[postgres]'``).

Locate uses one GIN index over ``(snap_id + 0, body gin_trgm_ops)`` (``btree_gin`` gives GIN the integer key),
queried with ``snap_id + 0 = ? AND body LIKE '%term%'``. The snapshot is part of the index key, so the index hands back
only this snapshot's chunks and PostgreSQL rechecks none of another tenant's: with a trigram-only index, the
recheck of every foreign chunk holding the term made its count visible in a locate's latency. Terms under 3
characters have no trigram, so they use the gram index if CJK (below), else ``strpos()`` over the snapshot's chunks.
pg_trgm only indexes characters the database's ``LC_CTYPE`` calls alphanumeric: under ``C`` every Chinese
character is skipped, the index answers nothing useful and every query rechecks every row. Create the
cluster with ``--encoding=UTF8 --locale=C.UTF-8`` (``scripts/postgres.sh`` does); :attr:`PostgresStore.lc_ctype`
says what the database uses.

1- and 2-character CJK terms (issue 17 item 5) use a second GIN index, ``chunks_snap_grams``, over ``(snap_id - 0,
cjk_gram_codes(body))``: ``cjk_gram_codes`` is an immutable SQL function (created with the schema) giving the codes
of the chunk's CJK unigrams and bigrams (:func:`~evidence_lib.store._common.cjk_grams`, encoded by
:func:`gram_code`). The index is an expression index, so PostgreSQL keeps it with the chunks itself (insert,
update, delete: no posting can outlive its row) and stores only GIN's compressed posting lists, no table of
postings (a plain ``(gram, snap_id, chunk_id)`` table pays a heap tuple and a btree entry, tens of bytes, for
each). The query is ``snap_id - 0 = ? AND cjk_gram_codes(body) @> ARRAY[code]``: the snapshot is again part of the
index condition, so the index hands back only this snapshot's chunks holding the gram, and none is rechecked.
``snap_id - 0`` is an expression only this index has (``snap_id + 0`` is the trigram index's): given
``snap_id + 0`` the planner took the trigram index for the snapshot alone and evaluated the function on each of
its chunks.
ANALYZE collects no statistics on that index's columns (``SET STATISTICS 0``): it would evaluate the function on
every sampled chunk. Other 1- and 2-character terms use ``strpos()`` over the snapshot's chunks.
"""

from __future__ import annotations

import re
import secrets
import warnings
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .._clock import Clock
from ._common import GRAM_CLASS, MIN_INDEXED_CHARS, gram_term
from ._sqlbase import Q, SQLStore, migrate, schema

if TYPE_CHECKING:
    from psycopg import Connection

__all__ = ["EXTENSIONS", "GRAM_FUNCTION", "GRAM_FUNCTION_DDL", "GRAM_INDEX", "GRAM_INDEX_DDL", "GRAM_SHIFT",
           "PG_GRAMS", "SCHEMA_LOCK", "TRIGRAM", "TRIGRAM_INDEX", "PostgresStore", "gram_code", "like_pattern",
           "scratch_schema"]

EXTENSIONS = ("pg_trgm", "btree_gin")  # both ship in Debian's postgresql-contrib
TRIGRAM_INDEX = "chunks_snap_trgm"
TRIGRAM = [
    *(f"CREATE EXTENSION IF NOT EXISTS {ext}" for ext in EXTENSIONS),
    # ``snap_id + 0``, not ``snap_id``: only this index matches that expression (see _candidates).
    f"CREATE INDEX IF NOT EXISTS {TRIGRAM_INDEX} ON chunks USING gin ((snap_id + 0), body gin_trgm_ops)",
]
GRAM_INDEX = "chunks_snap_grams"
GRAM_FUNCTION = "cjk_gram_codes"
#: Bigram codes are ``first << GRAM_SHIFT | second``: above every code point, so never a unigram's code.
GRAM_SHIFT = 21
_MINE = "FROM {catalog} x JOIN pg_namespace n ON n.oid = x.{ns} WHERE n.nspname = current_schema() AND x.{name} = "
#: The function, created in the store's schema if it is missing there: non-CJK runs become one space, then each
#: CJK character gives its code point, and each pair of them the pair's code (GIN drops duplicates). Two ARRAY()s
#: concatenated: half the time of one aggregate over a lateral join (measured on the benchmark's chunks).
GRAM_FUNCTION_DDL = (
    f"DO $do$ BEGIN IF NOT EXISTS (SELECT 1 {_MINE.format(catalog='pg_proc', ns='pronamespace', name='proname')}"
    f"'{GRAM_FUNCTION}') THEN CREATE FUNCTION {GRAM_FUNCTION}(body text) RETURNS bigint[] LANGUAGE sql IMMUTABLE "
    "STRICT PARALLEL SAFE AS $f$ "
    "SELECT ARRAY(SELECT ascii(a)::bigint FROM unnest(s.c) AS a WHERE a <> ' ') "
    f"|| ARRAY(SELECT (ascii(p.a)::bigint << {GRAM_SHIFT}) | ascii(p.b) FROM unnest(s.c, s.c[2:]) AS p(a, b) "
    "WHERE p.a <> ' ' AND p.b <> ' ') "
    f"FROM (SELECT string_to_array(regexp_replace(body, '[^{GRAM_CLASS}]+', ' ', 'g'), NULL)) AS s(c) "
    "$f$; END IF; END $do$"
)
#: The index, created if missing, without statistics (ANALYZE would evaluate the function on each sampled chunk).
GRAM_INDEX_DDL = (
    f"DO $do$ BEGIN IF NOT EXISTS (SELECT 1 {_MINE.format(catalog='pg_class', ns='relnamespace', name='relname')}"
    f"'{GRAM_INDEX}') THEN CREATE INDEX {GRAM_INDEX} ON chunks USING gin ((snap_id - 0), {GRAM_FUNCTION}(body)); "
    f"ALTER INDEX {GRAM_INDEX} ALTER COLUMN 1 SET STATISTICS 0; "
    f"ALTER INDEX {GRAM_INDEX} ALTER COLUMN 2 SET STATISTICS 0; END IF; END $do$"
)
PG_GRAMS = [GRAM_FUNCTION_DDL, GRAM_INDEX_DDL]


SCHEMA_LOCK = 7_110_001  # advisory lock id: one worker creates the schema, the others wait


def gram_code(gram: str) -> int:
    """The code :data:`GRAM_FUNCTION` gives a CJK unigram (its code point) or bigram (both, shifted together)."""
    return ord(gram) if len(gram) == 1 else ord(gram[0]) << GRAM_SHIFT | ord(gram[1])


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
    """The store in a PostgreSQL database given by ``dsn`` (e.g. ``$EVIDENCE_PG_DSN``), through a pool of at most
    ``pool_size`` connections: a tool call holds one at a time, so that many calls of this process read at once
    (more wait for a free connection, up to the pool's 30 s timeout)."""

    backend = "postgres"
    FOR_UPDATE = " FOR UPDATE"
    REWRITE = True

    def __init__(self, dsn: str, clock: Clock, *, pool_size: int = 8) -> None:
        import psycopg  # optional dependency: only this backend needs it
        from psycopg_pool import ConnectionPool

        super().__init__(clock)
        self._unanalyzed = 0
        options: dict[str, Any] = {"autocommit": True, "prepare_threshold": None}
        with psycopg.connect(dsn, **options) as conn:  # a bad DSN fails here, at once; the schema is checked once
            q = self._q(conn)
            with conn.transaction():
                q("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))
                self._local.q = q
                try:
                    migrate(q, schema("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY") + TRIGRAM + PG_GRAMS, self)
                finally:
                    self._local.q = None
                self.lc_ctype = q.one("SELECT datctype FROM pg_database WHERE datname = current_database()")[0]
        if self.lc_ctype in ("C", "POSIX"):
            warnings.warn(f"this database's LC_CTYPE is {self.lc_ctype}: pg_trgm skips non-ASCII characters, so "
                          "locate on Chinese terms scans every chunk; use --locale=C.UTF-8", stacklevel=2)
        self._conns: weakref.WeakSet[Connection[Any]] = weakref.WeakSet()  # every connection the pool opened (tests watch them)
        self._pool = ConnectionPool(dsn, min_size=1, max_size=pool_size, kwargs=options, configure=self._configure,
                                    open=True, name="evidence-store")
        self._pool.wait()  # its first connection is ready (the DSN was checked above): calls never race its opening

    def __repr__(self) -> str:
        return "PostgresStore()"

    def _configure(self, conn: Connection[Any]) -> None:
        self._conns.add(conn)
        for hook in list(self._on_connect):
            hook(conn)

    def _acquire(self) -> Connection[Any]:
        return self._pool.getconn()

    def _release(self, conn: Connection[Any]) -> None:
        self._pool.putconn(conn)

    def close(self) -> None:
        self._pool.close()

    @contextmanager
    def bulk_load(self, *, maintenance_work_mem: str = "1GB") -> Iterator[PostgresStore]:
        """Load a large corpus with the trigram and gram indexes dropped, then build each once (``CREATE INDEX``).

        Building a GIN index over loaded rows is cheaper than updating it chunk by chunk (notebook 11 shows
        both, measured). It is meant for an initial import, before tenants are served: results stay exact
        meanwhile (every ``LIKE`` is rechecked against the stored text, and a 1- or 2-character CJK term is
        checked against every chunk's grams), but without the indexes a locate scans every tenant's rows,
        slowly, and its time then depends on them. A worker that connects meanwhile recreates the indexes (its
        schema check does), which costs this load speed, not correctness. The indexes are rebuilt even if the
        block raises.
        """
        with self._pool.connection() as conn:
            conn.execute(f"DROP INDEX IF EXISTS {TRIGRAM_INDEX}")
            conn.execute(f"DROP INDEX IF EXISTS {GRAM_INDEX}")
        try:
            yield self
        finally:
            with self._pool.connection() as conn:
                with conn.transaction():
                    conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (maintenance_work_mem,))
                    conn.execute(TRIGRAM[-1])
                    conn.execute(GRAM_INDEX_DDL)
                conn.execute("ANALYZE chunks")
            self._unanalyzed = 0

    def add_rows(self, snap_id: int, docs: list, chunks: list) -> None:
        super().add_rows(snap_id, docs, chunks)
        self._unanalyzed += len(chunks)

    def publish_snapshot(self, snap_id: int) -> None:
        super().publish_snapshot(snap_id)
        if self._unanalyzed > 500:  # fresh statistics, or the planner seq-scans instead of using the GIN index
            self._unanalyzed = 0
            with self._pool.connection() as conn:
                conn.execute("ANALYZE chunks")

    def _lock_key(self, q: Q, *parts: str) -> None:
        q("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", ("\x1f".join(parts),))

    def _before_candidates(self, q: Q) -> None:
        if not q.no_seqscan:  # once per transaction: SET LOCAL lasts until it ends
            q("SET LOCAL enable_seqscan = off")  # a seq scan would read every tenant's rows (the rest of this read too)
            q.no_seqscan = True

    def _candidate_query(self, snap_id: int, term: str) -> tuple[str, tuple]:
        if gram_term(term):  # a CJK unigram or bigram: the gram index's chunks of this snapshot holding it
            return (f"SELECT snap_id, doc_no, chunk_no FROM chunks WHERE snap_id - 0 = CAST(? AS bigint) "
                    f"AND {GRAM_FUNCTION}(body) @> ARRAY[CAST(? AS bigint)]", (snap_id, gram_code(term)))
        if len(term) < MIN_INDEXED_CHARS:  # no trigram: the btree gives this snapshot's chunks, strpos checks
            return "SELECT snap_id, doc_no, chunk_no FROM chunks WHERE snap_id = ? AND strpos(body, ?) > 0", \
                (snap_id, term)
        # The planner prices LIKE by the heap row alone, not by the TOASTed body it must fetch, so given the
        # chance it walks the btree over every chunk of the snapshot. The expression ``snap_id + 0`` matches
        # the GIN index's first column and no btree: the one plan left asks the index for this snapshot's
        # chunks holding the trigrams, and rechecks only those.
        return ("SELECT snap_id, doc_no, chunk_no FROM chunks WHERE snap_id + 0 = CAST(? AS bigint) AND body LIKE ?",
                (snap_id, like_pattern(term)))

    def _count_grams(self, q: Q) -> int:
        # The entries the gram index holds: each chunk's distinct gram codes (evaluated on every chunk: slow).
        return int(q.one(f"SELECT coalesce(sum((SELECT count(DISTINCT g) FROM unnest({GRAM_FUNCTION}(body)) AS g)), 0) "
                         "FROM chunks")[0])

    def index_size(self) -> dict[str, int]:
        """Bytes on disk: every table of the store with its indexes and TOAST, the trigram index and the gram
        index alone."""
        row = self._one("SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n "
                        "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'")
        idx = self._one(f"SELECT pg_relation_size('{TRIGRAM_INDEX}'), pg_relation_size('{GRAM_INDEX}')")
        return {"store_bytes": int(row[0] or 0), "index_bytes": int(idx[0]), "gram_index_bytes": int(idx[1])}
