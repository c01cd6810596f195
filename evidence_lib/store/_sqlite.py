"""The SQLite backend: the embedded default, one file, nothing to install. Notebook 11.

Connection policy, stated once: a connection per concurrent transaction (a small pool: a transaction takes an idle
connection or opens one, and gives it back when it ends), so reads in several threads run at once; autocommit mode
with explicit transactions (``BEGIN IMMEDIATE`` for every write, so a writer takes the lock up front and waits
``busy_timeout`` for it instead of failing half-way; a store call made inside a transaction of the same thread joins
it; the transactions themselves are :class:`~evidence_lib.store._sqlbase.SQLStore`'s), ``journal_mode=WAL`` (checked:
readers never block the writer and see the last committed state), ``synchronous=FULL``. Several processes may open
the same file; each opens its own connections.

Locate uses an FTS5 table with the ``trigram`` tokenizer (``case_sensitive 1``, ``detail=none``) over the
chunks, queried with ``GLOB`` (FTS5 rechecks the pattern against the stored text). One FTS5 table serves every
tenant, so a query must never touch another snapshot's rows: FTS5 rechecks each candidate chunk, and a tenant
could time how many chunks of *other* tenants hold a term (measured before this rule: 56 ms against 0.3 ms for
a term in 3,000 foreign chunks). So each snapshot's chunks get the rowids ``[snap_id << 32, (snap_id + 1) << 32)``
and every FTS5 query carries that rowid range, which FTS5 applies inside the index, before any recheck. Known
traps, handled:
a trigram index cannot answer terms under 3 characters (on SQLite 3.40 ``LIKE '%上限%'`` and ``GLOB '*上限*'``
against the FTS5 table silently return no rows), so short terms, and terms holding GLOB metacharacters, use
``instr()`` on the plain chunk table instead; FTS5 has no offsets function, so offsets come from ``str.find``
on the verified chunk text.

1- and 2-character CJK terms (issue 17 item 5) use the gram postings instead of ``instr()``: ``chunk_grams``, a
contentless FTS5 table (``detail=none``, the ``ascii`` tokenizer: every CJK gram, being non-ASCII, is one token,
taken as it is) holding each chunk's CJK unigrams and bigrams (:func:`~evidence_lib.store._common.cjk_grams`) under
the chunk's id, written and deleted by the store in the transaction that writes or deletes the chunk. A plain
``(gram, snap_id, chunk_id)`` table would do the same in 15.5 bytes a posting against FTS5's 4.3 (measured on the
benchmark's corpus: 4.5 million postings for 100 documents; FTS5 2.0 at 1,000 documents), and took 23.6 s to
build against FTS5's 3.5 s. The query is ``MATCH '"gram"'`` inside the snapshot's rowid range, as for trigrams, so another tenant's
postings are skipped inside the index. A contentless table forgets what it indexed, so deleting a chunk's postings
means naming its grams again: they are recomputed from the stored text, or, for a chunk whose text no longer
matches its sha256 (edited behind the store's back), read back from the index itself (``chunk_grams_postings``, an
``fts5vocab`` table: a scan of the whole index, for that rare case only). Other 1- and 2-character terms keep
``instr()`` over the snapshot's chunks.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

from .._clock import Clock
from ._common import MIN_INDEXED_CHARS, ChunkRow, cjk_grams, gram_term, sha256_text
from ._sqlbase import Q, SQLStore, migrate, schema

__all__ = ["CHUNK_ID_BITS", "FTS", "GLOB_SPECIAL", "MAX_SNAP_ID", "SQLITE_GRAMS", "UNINDEX_BATCH", "SQLiteStore"]

FTS = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(body, content='chunks', content_rowid='chunk_id', "
    "tokenize='trigram case_sensitive 1', detail='none')",
    "CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN "
    "INSERT INTO chunks_fts (rowid, body) VALUES (new.chunk_id, new.body); END",
    "CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN "
    "INSERT INTO chunks_fts (chunks_fts, rowid, body) VALUES ('delete', old.chunk_id, old.body); END",
    "CREATE TRIGGER IF NOT EXISTS chunks_au AFTER UPDATE ON chunks BEGIN "
    "INSERT INTO chunks_fts (chunks_fts, rowid, body) VALUES ('delete', old.chunk_id, old.body); "
    "INSERT INTO chunks_fts (rowid, body) VALUES (new.chunk_id, new.body); END",
]
SQLITE_GRAMS = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS chunk_grams USING fts5(grams, content='', detail='none', columnsize=0, "
    "tokenize='ascii')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS chunk_grams_postings USING fts5vocab(chunk_grams, 'instance')",
]
GLOB_SPECIAL = frozenset("*?[]")
#: Chunks read at a time when their postings are deleted.
UNINDEX_BATCH = 256
#: A snapshot's chunks have rowids [snap_id << CHUNK_ID_BITS, (snap_id + 1) << CHUNK_ID_BITS).
CHUNK_ID_BITS = 32
MAX_SNAP_ID = (1 << (63 - CHUNK_ID_BITS)) - 1


class SQLiteStore(SQLStore):
    """The store in one SQLite file (WAL, busy timeout, atomic writes)."""

    backend = "sqlite"
    BEGIN_WRITE = "BEGIN IMMEDIATE"

    def __init__(self, path: str | Path, clock: Clock, *, busy_timeout_ms: int = 30_000) -> None:
        super().__init__(clock)
        self.path = Path(path)
        self.busy_timeout_ms = int(busy_timeout_ms)
        self._pool_lock = threading.Lock()  # guards the pool below, never a transaction
        self._idle: list[sqlite3.Connection] = []  # last in, first out: one thread's calls reuse one connection
        self._conns: list[sqlite3.Connection] = []  # every connection open, closed by close()
        self._closed = False
        self._release(self._connect())
        with self._tx(write=True) as q:
            migrate(q, schema("INTEGER PRIMARY KEY") + FTS + SQLITE_GRAMS, self)

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path.name})"

    def _connect(self) -> sqlite3.Connection:
        """A new connection in the connection policy above (WAL checked: SQLite refuses it on some filesystems)."""
        conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False,
                               timeout=self.busy_timeout_ms / 1000)
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise RuntimeError(f"SQLite refused WAL mode (got {mode!r}); is {self.path} on a network filesystem?")
            conn.execute(f"PRAGMA busy_timeout={self.busy_timeout_ms}")
            conn.execute("PRAGMA synchronous=FULL")
            for hook in list(self._on_connect):
                hook(conn)
        except BaseException:
            conn.close()
            raise
        with self._pool_lock:
            self._conns.append(conn)
        return conn

    def _acquire(self) -> sqlite3.Connection:
        with self._pool_lock:
            if self._closed:
                raise sqlite3.ProgrammingError("the store is closed")
            if self._idle:
                return self._idle.pop()
        return self._connect()

    def _release(self, conn: sqlite3.Connection) -> None:
        with self._pool_lock:
            if not self._closed:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._pool_lock:
            self._closed = True
            conns, self._conns, self._idle = self._conns, [], []
        for conn in conns:
            conn.close()

    @staticmethod
    def _chunk_range(snap_id: int) -> tuple[int, int]:
        if not 0 < snap_id <= MAX_SNAP_ID:
            raise RuntimeError(f"snapshot id {snap_id} is past what chunk ids can hold ({MAX_SNAP_ID})")
        return snap_id << CHUNK_ID_BITS, ((snap_id + 1) << CHUNK_ID_BITS) - 1

    def _chunk_ids(self, q: Q, snap_id: int, n: int) -> range:
        lo, hi = self._chunk_range(snap_id)
        last = q.one("SELECT max(chunk_id) FROM chunks WHERE chunk_id BETWEEN ? AND ?", (lo, hi))[0]
        first = lo if last is None else last + 1
        if first + n - 1 > hi:
            raise ValueError(f"a snapshot holds at most {hi - lo + 1:,} chunks")
        return range(first, first + n)

    # -- the gram postings (module docstring) ----------------------------------------------------------------
    def _index_chunks(self, q: Q, ids: range | None, chunks: list[ChunkRow]) -> None:
        if ids is None:  # never: this backend's _chunk_ids numbers every batch
            raise ValueError("SQLite's gram postings need the chunks' rowids")
        rows = ((i, " ".join(g)) for i, (_, _, body, _) in zip(ids, chunks) if (g := cjk_grams(body)))
        q.cursor.executemany("INSERT INTO chunk_grams (rowid, grams) VALUES (?, ?)", rows)

    def _unindex_chunks(self, q: Q, snap_id: int) -> None:
        lo, hi = self._chunk_range(snap_id)
        changed: list[int] = []
        while lo <= hi:
            rows = q.all("SELECT chunk_id, body, sha256 FROM chunks WHERE chunk_id BETWEEN ? AND ? ORDER BY chunk_id "
                         f"LIMIT {UNINDEX_BATCH}", (lo, hi))
            for chunk_id, body, sha in rows:
                if sha256_text(body) != sha:  # not the text it was indexed with
                    changed.append(chunk_id)
                elif grams := cjk_grams(body):
                    self._forget(q, chunk_id, grams)
            if len(rows) < UNINDEX_BATCH:
                break
            lo = rows[-1][0] + 1
        if changed:
            indexed: dict[int, list[str]] = {}
            for term, chunk_id in q.all("SELECT term, doc FROM chunk_grams_postings WHERE doc BETWEEN ? AND ?",
                                        self._chunk_range(snap_id)):
                indexed.setdefault(chunk_id, []).append(term)
            for chunk_id in changed:
                if chunk_id in indexed:
                    self._forget(q, chunk_id, indexed[chunk_id])

    @staticmethod
    def _forget(q: Q, chunk_id: int, grams: Iterable[str]) -> None:
        q("INSERT INTO chunk_grams (chunk_grams, rowid, grams) VALUES ('delete', ?, ?)", (chunk_id, " ".join(grams)))

    def _count_grams(self, q: Q) -> int:
        return int(q.one("SELECT count(*) FROM chunk_grams_postings")[0])

    def _candidate_query(self, snap_id: int, term: str) -> tuple[str, tuple]:
        if gram_term(term):
            # The chunks holding this CJK unigram or bigram, inside the snapshot's rowid range (as for trigrams);
            # the ascii tokenizer takes the whole quoted term as one token.
            lo, hi = self._chunk_range(snap_id)
            return ("SELECT c.snap_id, c.doc_no, c.chunk_no FROM chunk_grams CROSS JOIN chunks c "
                    "ON c.chunk_id = chunk_grams.rowid WHERE chunk_grams MATCH ? "
                    "AND chunk_grams.rowid BETWEEN ? AND ? AND c.snap_id = ?", (f'"{term}"', lo, hi, snap_id))
        if len(term) >= MIN_INDEXED_CHARS and not GLOB_SPECIAL & set(term):
            # The rowid range keeps FTS5 inside this snapshot (no other tenant's chunk is rechecked or timed).
            # CROSS JOIN pins the order: FTS first. Left to itself the planner walks the snapshot's chunks and
            # probes FTS5 once per chunk (measured: 2 s instead of 0.3 ms on 30 MB).
            lo, hi = self._chunk_range(snap_id)
            return ("SELECT c.snap_id, c.doc_no, c.chunk_no FROM chunks_fts CROSS JOIN chunks c "
                    "ON c.chunk_id = chunks_fts.rowid WHERE chunks_fts.body GLOB ? "
                    "AND chunks_fts.rowid BETWEEN ? AND ? AND c.snap_id = ?", (f"*{term}*", lo, hi, snap_id))
        return "SELECT snap_id, doc_no, chunk_no FROM chunks WHERE snap_id = ? AND instr(body, ?) > 0", (snap_id, term)

    def index_size(self) -> dict[str, int]:
        """Bytes on disk: the whole file (with its WAL), the trigram index's own pages and the gram postings'."""
        files = [self.path, self.path.with_name(self.path.name + "-wal")]
        total = sum(p.stat().st_size for p in files if p.exists())
        try:
            fts, grams = (self._one(f"SELECT sum(pgsize) FROM dbstat WHERE name LIKE '{name}%'")[0] or 0
                          for name in ("chunks_fts", "chunk_grams"))
        except sqlite3.OperationalError:  # dbstat is optional in SQLite builds
            fts = grams = -1
        return {"store_bytes": total, "index_bytes": fts, "gram_index_bytes": grams}
