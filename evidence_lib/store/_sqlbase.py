"""What the SQLite and PostgreSQL backends share: one schema, small explicit SQL, one transaction helper.

Statements are written once with ``?`` placeholders (PostgreSQL's backend rewrites them to ``%s``). A backend
supplies the connection, the DDL, how a transaction takes its write lock, and the substring index behind
``_candidates`` with its CJK gram postings (kept in the transaction that writes or deletes their chunks:
``_index_chunks``, ``_unindex_chunks``, counted by ``_count_grams``). Every write is one transaction; a snapshot is
written under ``ready = 0`` in batches and published (the previous snapshot of its key deleted, the new one marked
ready) in one more.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .. import _calls as calls
from .._clock import Clock
from .._documents import Document
from .._errors import EvidenceError
from ._base import EvidenceStore
from ._common import (
    ARTIFACT_PREFIX,
    GRAM_RANGES_ID,
    MAX_US,
    OWNER_PREFIX,
    ChunkRow,
    DocRow,
    SnapRow,
    SnapshotKey,
    WsKey,
    artifact_query,
    document_row,
    is_artifact_query,
    session_of,
)
from ._ledger import COUNTERS, LIMITS

__all__ = ["ENTRY_COLUMNS", "IS_ARTIFACT", "MIGRATIONS", "NEW_LEDGER", "Q", "SCHEMA_VERSION", "SESSION_TABLES", "SNAP",
           "UNION_BRANCHES", "WS", "SQLStore", "artifacts_to_snapshots", "migrate", "schema"]
ENTRY_COLUMNS = ("step, tool, status, chars, bytes, tokens, charged, read_doc_id, read_revision, read_start, "
                 "read_end, read_sha256, reason, covered_doc_id, covered_start, covered_end")
SNAP = "SELECT snap_id, tenant, sess, query, created_us, expires_us FROM snapshots "
#: A workspace's rows: one principal's (tenant, session, owner); a session's rows are its first two columns.
WS = "tenant = ? AND sess = ? AND owner = ?"


def _kind(query: str, ready: int) -> str:
    """What a removed snapshot row counts as: a published artifact (``artifacts``) or a snapshot."""
    return "artifacts" if ready and is_artifact_query(query) else "snapshots"


def _snap(row: Any) -> SnapRow | None:
    return None if row is None else SnapRow(row[0], SnapshotKey(row[1], row[2], row[3]), row[4], row[5])


class Q:
    """One cursor inside one transaction: ``q(sql, params)`` runs a statement, ``one``/``all`` fetch."""

    def __init__(self, cursor: Any, rewrite: bool) -> None:
        self.cursor, self.rewrite = cursor, rewrite
        self.no_seqscan = False  # PostgreSQL: sequential scans already turned off in this transaction

    def __call__(self, sql: str, params: tuple | list = ()) -> Any:
        self.cursor.execute(sql.replace("?", "%s") if self.rewrite else sql, params)
        return self.cursor

    def one(self, sql: str, params: tuple | list = ()) -> Any:
        return self(sql, params).fetchone()

    def all(self, sql: str, params: tuple | list = ()) -> list:
        return self(sql, params).fetchall()

    def many(self, sql: str, rows: list) -> None:
        if rows:
            self.cursor.executemany(sql.replace("?", "%s") if self.rewrite else sql, rows)


#: Most snapshots one compound statement asks about (SQLite allows 500 SELECTs in one compound statement).
UNION_BRANCHES = 200
#: The tables holding a session's rows, keyed by (tenant, sess).
SESSION_TABLES = ("snapshots", "ledgers", "workspaces")
#: A condition true of an artifact's snapshot row: its query starts with its one parameter, :data:`ARTIFACT_PREFIX`.
IS_ARTIFACT = f"substr(query, 1, {len(ARTIFACT_PREFIX)}) = ?"


def _doc_reads(q: Q, lid: int, doc_id: str) -> int:
    """Charged page reads of ``doc_id`` in ledger ``lid``: one aggregate, never the history."""
    return int(q.one("SELECT count(*) FROM ledger_entries WHERE lid = ? AND charged = 1 AND read_doc_id = ?",
                     (lid, doc_id))[0])


def _reads_of(q: Q, lid: int, doc_id: str, sha256: str) -> list[tuple]:
    """``(doc_id, revision, start, end, sha256)`` of every range of these bytes ledger ``lid`` served (pages and
    excerpts): what coverage is decided on, and nothing of the other documents."""
    return [tuple(r) for r in q.all(
        "SELECT read_doc_id, read_revision, read_start, read_end, read_sha256 FROM ledger_entries WHERE lid = ? "
        "AND charged = 1 AND read_doc_id = ? AND read_sha256 = ? UNION ALL SELECT doc_id, revision, start_at, end_at, "
        "sha256 FROM ledger_excerpts WHERE lid = ? AND doc_id = ? AND sha256 = ?", (lid, doc_id, sha256) * 2)]


class _LedgerTxn:
    def __init__(self, q: Q, lid: int, row: tuple | None) -> None:
        self.q, self.lid = q, lid
        self.counters = None if row is None else dict(zip(COUNTERS, row))  # None: deleted or cleaned up

    def doc_reads(self, doc_id: str) -> int:
        return _doc_reads(self.q, self.lid, doc_id)

    def reads_of(self, doc_id: str, sha256: str) -> list[tuple]:
        return _reads_of(self.q, self.lid, doc_id, sha256)

    def write(self, row: tuple[Any, ...], counters: dict[str, int], excerpts: Sequence[tuple[Any, ...]] = ()) -> None:
        self.q(f"INSERT INTO ledger_entries (lid, {ENTRY_COLUMNS}) VALUES (?{', ?' * 16})", (self.lid, *row))
        if excerpts:  # one statement, however many excerpts the call served
            rows = ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * len(excerpts))
            self.q(f"INSERT INTO ledger_excerpts (lid, step, doc_id, revision, start_at, end_at, sha256) VALUES {rows}",
                   [v for x in excerpts for v in (self.lid, *x)])
        self.q("UPDATE ledgers SET " + ", ".join(f"{c} = ?" for c in COUNTERS) + " WHERE lid = ?",
               (*(counters[c] for c in COUNTERS), self.lid))


class _TaskTxn:
    def __init__(self, q: Q, lid: int, row: tuple | None) -> None:
        self.q, self.lid = q, lid
        self.state = None if row is None else row[0]  # None: the task is gone

    def write(self, state: str) -> None:
        self.q("UPDATE task_states SET state = ? WHERE lid = ?", (state, self.lid))
        self.state = state


class _Reader:
    """One read transaction of the page-serving path (:meth:`SQLStore.reading`)."""

    def __init__(self, store: SQLStore, q: Q) -> None:
        self.store, self.q = store, q

    def published(self, snap_id: int) -> bool:
        return self.q.one("SELECT 1 FROM snapshots WHERE snap_id = ? AND ready = 1", (snap_id,)) is not None

    def candidates(self, snap_id: int, term: str) -> list[tuple[int, int]]:
        return [tuple(r) for r in self.store._candidates(self.q, snap_id, term)]

    def candidates_many(self, items: list[tuple[int, str]]) -> list[tuple[int, int, int]]:
        return self.store._candidates_many(self.q, items)

    def chunks_many(self, wanted: list[tuple[int, list[tuple[int, int, int]]]]) -> list[tuple[int, int, int, str, str]]:
        """``(snap_id, doc_no, chunk_no, body, sha256)`` of the spans of several snapshots, in one statement."""
        wanted = [(s, spans) for s, spans in wanted if spans]
        if not wanted:
            return []
        sql = " UNION ALL ".join(
            "SELECT snap_id, doc_no, chunk_no, body, sha256 FROM chunks WHERE snap_id = ? AND ("
            + " OR ".join(["(doc_no = ? AND chunk_no BETWEEN ? AND ?)"] * len(spans)) + ")" for _, spans in wanted)
        return [tuple(r) for r in self.q.all(sql, [x for s, spans in wanted
                                                   for x in (s, *(v for span in spans for v in span))])]

    def chunks(self, snap_id: int, spans: list[tuple[int, int, int]]) -> list[tuple[int, int, str, str]]:
        """The chunks of every ``(doc_no, lo, hi)`` span in one statement."""
        if not spans:
            return []
        where = " OR ".join(["(doc_no = ? AND chunk_no BETWEEN ? AND ?)"] * len(spans))
        return [tuple(r) for r in self.q.all(
            f"SELECT doc_no, chunk_no, body, sha256 FROM chunks WHERE snap_id = ? AND ({where})",
            (snap_id, *(x for span in spans for x in span)))]


class _WorkspaceTxn:
    def __init__(self, q: Q, ws: WsKey) -> None:
        self.q, self.key = q, ws
        self.state = q.one(f"SELECT created_us, expires_us, version FROM workspaces WHERE {WS}", self.key)

    def files(self) -> list[tuple]:
        return self.q.all("SELECT path, kind, revision, summary, sha256, chars, updated_us FROM workspace_files "
                          f"WHERE {WS} ORDER BY path", self.key)

    def put(self, row: tuple) -> None:
        self.q("INSERT INTO workspace_files (tenant, sess, owner, path, kind, revision, summary, body, sha256, chars, "
               "updated_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, sess, owner, path) DO UPDATE "
               "SET kind = excluded.kind, revision = excluded.revision, summary = excluded.summary, "
               "body = excluded.body, sha256 = excluded.sha256, chars = excluded.chars, "
               "updated_us = excluded.updated_us", (*self.key, *row))

    def delete(self, path: str) -> None:
        self.q(f"DELETE FROM workspace_files WHERE {WS} AND path = ?", (*self.key, path))

    def set_state(self, created: int, expires: int, version: int) -> None:
        self.q("INSERT INTO workspaces (tenant, sess, owner, created_us, expires_us, version) "
               "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, sess, owner) DO UPDATE SET "
               "created_us = excluded.created_us, expires_us = excluded.expires_us, version = excluded.version",
               (*self.key, created, expires, version))
        self.state = (created, expires, version)


class SQLStore(EvidenceStore):
    """The shared SQL and the one transaction policy; subclasses provide the connections (``_acquire``,
    ``_release``: one connection per concurrent transaction, reused), ``BEGIN_WRITE``, ``_lock_key``,
    ``FOR_UPDATE`` and ``_candidates``.

    Transactions, stated once: a store call opens its own transaction on a connection of its own, so calls in other
    threads run meanwhile (a lock guards the pool, never a transaction); a store call made inside a transaction of
    the same thread joins it. Inside a tool call (:mod:`evidence_lib._calls`) every read shares the call's one read
    transaction, held until the call ends, whatever the number of its matches; a write first ends that transaction
    (a call holds one connection of a store at a time, so a pool of N connections serves N calls).
    """

    FOR_UPDATE = ""
    REWRITE = False
    BEGIN_WRITE = "BEGIN"

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock)
        self._local = threading.local()  # this thread's open transaction (a nested store call joins it)
        self._on_connect: list[Callable[[Any], None]] = []  # run on every connection opened from now on

    def _candidate_query(self, snap_id: int, term: str) -> tuple[str, tuple]:  # pragma: no cover - abstract
        """The statement giving ``(snap_id, doc_no, chunk_no)`` of every chunk of the snapshot whose body may contain
        ``term``, and its parameters (the backend's substring index)."""
        raise NotImplementedError

    def _before_candidates(self, q: Q) -> None:
        """What the transaction needs before a candidate query (PostgreSQL: no sequential scans)."""

    def _candidates(self, q: Q, snap_id: int, term: str) -> list:
        """``(doc_no, chunk_no)`` of every chunk of the snapshot whose body contains ``term``, inside ``q``."""
        self._before_candidates(q)
        return [(d, c) for _, d, c in q.all(*self._candidate_query(snap_id, term))]

    def _candidates_many(self, q: Q, items: list[tuple[int, str]]) -> list[tuple[int, int, int]]:
        """``(snap_id, doc_no, chunk_no)`` for every ``(snap_id, term)``: one statement per :data:`UNION_BRANCHES`."""
        self._before_candidates(q)
        out: list[tuple[int, int, int]] = []
        for i in range(0, len(items), UNION_BRANCHES):
            parts = [self._candidate_query(s, t) for s, t in items[i:i + UNION_BRANCHES]]
            out += [tuple(r) for r in q.all(" UNION ALL ".join(sql for sql, _ in parts),
                                             [p for _, params in parts for p in params])]
        return out

    def _acquire(self) -> Any:  # pragma: no cover - abstract
        """A connection for one transaction (from the pool, or a new one)."""
        raise NotImplementedError

    def _release(self, conn: Any) -> None:  # pragma: no cover - abstract
        """Give back a connection :meth:`_acquire` handed out, idle (no transaction open)."""
        raise NotImplementedError

    def _q(self, conn: Any) -> Q:
        return Q(conn.cursor(), rewrite=self.REWRITE)

    @contextmanager
    def reading(self) -> Iterator[_Reader]:
        with self._tx() as q:
            yield _Reader(self, q)

    def _joined(self) -> Q | None:
        """The transaction a read joins: this thread's open one, else the current call's (opened now)."""
        active = getattr(self._local, "q", None)
        return active if active is not None else self._held()

    def _held(self) -> Q | None:
        """The current tool call's read transaction of this store, opened on first use and held until the call
        ends (``None`` outside a call)."""
        call = calls.current()
        if call is None:
            return None
        q = call.kept.get((self, "read"))
        if q is None:
            conn = self._acquire()
            try:
                q = self._q(conn)
                q("BEGIN")
            except BaseException:
                self._release(conn)
                raise
            call.kept[(self, "read")] = q
            call.on_close(lambda: self._let_go(call))
        return q

    def _let_go(self, call: calls.Call | None, commit: bool = True) -> None:
        """End ``call``'s read transaction of this store, if it holds one, and give its connection back."""
        q = None if call is None else call.kept.pop((self, "read"), None)
        if q is None:
            return
        conn = q.cursor.connection
        try:
            q("COMMIT" if commit else "ROLLBACK")
        finally:
            self._release(conn)

    @contextmanager
    def _tx(self, write: bool = False) -> Iterator[Q]:
        joined = getattr(self._local, "q", None)
        if joined is None and not write:
            joined = self._held()
            if joined is not None:
                try:
                    yield joined
                except BaseException:
                    self._let_go(calls.current(), commit=False)  # the next read starts a fresh transaction
                    raise
                return
        if joined is not None:  # inside this thread's own transaction: join it
            yield joined
            return
        if write:
            self._let_go(calls.current())  # one connection at a time: the call's reads end before it writes
        conn = self._acquire()
        try:
            q = self._q(conn)
            q(self.BEGIN_WRITE if write else "BEGIN")
            self._local.q = q
            try:
                yield q
            except BaseException:
                try:
                    q("ROLLBACK")
                except Exception:  # noqa: BLE001 - the original error matters; the connection is given back
                    pass
                raise
            q("COMMIT")
        finally:
            self._local.q = None
            self._release(conn)

    def _lock_key(self, q: Q, *parts: str) -> None:
        """Serialize writers of one key inside the transaction (SQLite's BEGIN IMMEDIATE already does)."""

    def _one(self, sql: str, params: tuple = ()) -> Any:
        """One statement: inside the thread's or the call's transaction, else on its own (autocommit: no BEGIN and
        COMMIT round trips)."""
        q = self._joined()
        if q is not None:
            return q.one(sql, params)
        conn = self._acquire()
        try:
            return self._q(conn).one(sql, params)
        finally:
            self._release(conn)

    def _all(self, sql: str, params: tuple = ()) -> list:
        q = self._joined()
        if q is not None:
            return q.all(sql, params)
        conn = self._acquire()
        try:
            return self._q(conn).all(sql, params)
        finally:
            self._release(conn)

    # -- snapshots -------------------------------------------------------------------------------------
    def begin_snapshot(self, key: SnapshotKey, created_us: int, expires_us: int) -> int:
        with self._tx(write=True) as q:
            return q.one("INSERT INTO snapshots (tenant, sess, query, ready, created_us, expires_us) "
                         "VALUES (?, ?, ?, 0, ?, ?) RETURNING snap_id",
                         (key.tenant, key.session, key.query, created_us, expires_us))[0]

    def add_rows(self, snap_id: int, docs: list[DocRow], chunks: list[ChunkRow]) -> None:
        with self._tx(write=True) as q:
            # The unpublished snapshot's row, locked till the batch commits, or ``snapshot_expired``: cleanup or
            # delete_session removed it. The lock orders this batch against a concurrent _drop, which deletes
            # the snapshot row first: either the drop waits and then deletes this batch too, or this batch waits
            # and finds the row gone. No document or chunk outlives its snapshot's row.
            if q.one(f"SELECT 1 FROM snapshots WHERE snap_id = ? AND ready = 0{self.FOR_UPDATE}", (snap_id,)) is None:
                raise EvidenceError("snapshot_expired")
            q.many("INSERT INTO documents (snap_id, doc_no, doc_id, title, revision, chars, bytes, sha256, preview, "
                   "access) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [(snap_id, *d) for d in docs])
            ids = self._chunk_ids(q, snap_id, len(chunks))
            if ids is None:
                q.many("INSERT INTO chunks (snap_id, doc_no, chunk_no, body, sha256) VALUES (?, ?, ?, ?, ?)",
                       [(snap_id, *c) for c in chunks])
            else:
                q.many("INSERT INTO chunks (chunk_id, snap_id, doc_no, chunk_no, body, sha256) VALUES (?, ?, ?, ?, ?, ?)",
                       [(i, snap_id, *c) for i, c in zip(ids, chunks)])
            self._index_chunks(q, ids, chunks)

    def _chunk_ids(self, q: Q, snap_id: int, n: int) -> range | None:
        """Explicit chunk ids for ``n`` new chunks of one snapshot, or None to let the database number them."""
        return None

    def _index_chunks(self, q: Q, ids: range | None, chunks: list[ChunkRow]) -> None:
        """Write the gram postings of chunks just inserted (same transaction); a no-op where the database keeps
        them itself (PostgreSQL's index over the chunks)."""

    def _unindex_chunks(self, q: Q, snap_id: int) -> None:
        """Delete the gram postings of one snapshot's chunks, just before the chunks (same transaction)."""

    def _count_grams(self, q: Q) -> int:
        """How many gram postings the store holds (for :meth:`stats`)."""
        return 0

    def _drop(self, q: Q, snap_id: int, where: str = "", params: tuple = ()) -> bool:
        """Delete one snapshot (if it matches ``where``) with its documents and chunks; say whether it did.

        The snapshot row goes first: it waits for a writer's batch holding it (see :meth:`add_rows`), and the
        documents and chunks are deleted after, so a batch that writer committed meanwhile goes too."""
        if q("DELETE FROM snapshots WHERE snap_id = ?" + where, (snap_id, *params)).rowcount == 0 and where:
            return False
        self._unindex_chunks(q, snap_id)
        q("DELETE FROM chunks WHERE snap_id = ?", (snap_id,))
        q("DELETE FROM documents WHERE snap_id = ?", (snap_id,))
        return True

    def publish_snapshot(self, snap_id: int) -> None:
        with self._tx(write=True) as q:
            row = q.one("SELECT tenant, sess, query FROM snapshots WHERE snap_id = ? AND ready = 0", (snap_id,))
            if row is None:
                raise EvidenceError("snapshot_expired")
            tenant, sess, query = row
            self._lock_key(q, "snapshot", tenant, sess, query)
            for (old,) in q.all("SELECT snap_id FROM snapshots WHERE tenant = ? AND sess = ? AND query = ? "
                                "AND ready = 1", (tenant, sess, query)):
                self._drop(q, old)
            # Its own row is taken last (holding it while waiting for an old row that a delete_session holds could
            # deadlock). Removed meanwhile: nothing is published, and the rollback keeps the old snapshot.
            if q("UPDATE snapshots SET ready = 1 WHERE snap_id = ? AND ready = 0", (snap_id,)).rowcount != 1:
                raise EvidenceError("snapshot_expired")

    def discard_snapshot(self, snap_id: int) -> None:
        with self._tx(write=True) as q:
            if q.one("SELECT 1 FROM snapshots WHERE snap_id = ? AND ready = 1", (snap_id,)) is None:
                self._drop(q, snap_id)  # unpublished, or already removed: whatever rows it has go

    def lookup_snapshot(self, key: SnapshotKey) -> SnapRow | None:
        return _snap(self._one(SNAP + "WHERE tenant = ? AND sess = ? AND query = ? AND ready = 1",
                               (key.tenant, key.session, key.query)))

    def _snapshot_rows(self, keys: list[SnapshotKey]) -> list[tuple[SnapRow, list[DocRow]]]:
        """Two statements in one read transaction however many keys (all of one ``(tenant, session)``)."""
        if not keys:
            return []
        marks = ", ".join("?" * len(keys))
        with self._tx() as q:
            rows = [s for r in q.all(SNAP + f"WHERE tenant = ? AND sess = ? AND ready = 1 AND query IN ({marks})",
                                     (keys[0].tenant, keys[0].session, *(k.query for k in keys)))
                    if (s := _snap(r)) is not None]
            ids = [r.snap_id for r in rows]
            docs: dict[int, list[DocRow]] = {i: [] for i in ids}
            if ids:
                for r in q.all("SELECT snap_id, doc_no, doc_id, title, revision, chars, bytes, sha256, preview, access "
                               f"FROM documents WHERE snap_id IN ({', '.join('?' * len(ids))}) "
                               "ORDER BY snap_id, doc_no", ids):
                    docs[r[0]].append(tuple(r[1:]))
        return [(r, docs[r.snap_id]) for r in rows]

    def snapshot_row(self, snap_id: int) -> SnapRow | None:
        return _snap(self._one(SNAP + "WHERE snap_id = ? AND ready = 1", (snap_id,)))

    def document_rows(self, snap_id: int) -> list[DocRow]:
        return [tuple(r) for r in self._all(
            "SELECT doc_no, doc_id, title, revision, chars, bytes, sha256, preview, access FROM documents "
            "WHERE snap_id = ? ORDER BY doc_no", (snap_id,))]

    def delete_snapshot_key(self, key: SnapshotKey) -> bool:
        with self._tx(write=True) as q:
            row = q.one("SELECT snap_id FROM snapshots WHERE tenant = ? AND sess = ? AND query = ? AND ready = 1",
                        (key.tenant, key.session, key.query))
            if row is not None:
                self._drop(q, row[0])
            return row is not None

    def remove_expired(self, now_us: int, stale_us: int) -> dict[str, int]:
        gone = "(expires_us <= ? OR (ready = 0 AND created_us <= ?))"  # expired, or a stale unpublished write
        snaps = self._all("SELECT snap_id, query, ready FROM snapshots WHERE " + gone, (now_us, stale_us))
        dropped = {"snapshots": 0, "artifacts": 0}
        for snap_id, query, ready in snaps:  # one transaction per snapshot: no writer waits behind a long cleanup
            with self._tx(write=True) as q:  # re-checked: a stale write may have been published since
                dropped[_kind(query, ready)] += self._drop(q, snap_id, " AND " + gone, (now_us, stale_us))
        with self._tx(write=True) as q:
            wss = q.all("SELECT tenant, sess, owner FROM workspaces WHERE expires_us <= ?", (now_us,))
            for key in wss:
                q(f"DELETE FROM workspace_files WHERE {WS}", tuple(key))
                q(f"DELETE FROM workspaces WHERE {WS}", tuple(key))
            lids = q.all("SELECT lid FROM ledgers WHERE expires_us <= ?", (now_us,))
            for (lid,) in lids:
                self._drop_ledger(q, lid)
        return {**dropped, "workspaces": len(wss), "ledgers": len(lids)}

    def row_counts(self) -> dict[str, int]:
        with self._tx() as q:
            one = lambda sql, params=(): int(q.one(sql, params)[0])  # noqa: E731
            kept = f"NOT snap_id IN (SELECT snap_id FROM snapshots WHERE ready = 1 AND {IS_ARTIFACT})"
            arts = one(f"SELECT count(*) FROM snapshots WHERE ready = 1 AND {IS_ARTIFACT}", (ARTIFACT_PREFIX,))
            return {"snapshots": one("SELECT count(*) FROM snapshots WHERE ready = 1") - arts,
                    "unpublished": one("SELECT count(*) FROM snapshots WHERE ready = 0"),
                    "documents": one(f"SELECT count(*) FROM documents WHERE {kept}", (ARTIFACT_PREFIX,)),
                    "chunks": one(f"SELECT count(*) FROM chunks WHERE {kept}", (ARTIFACT_PREFIX,)),
                    "chunk_grams": self._count_grams(q), "artifacts": arts,
                    "ledgers": one("SELECT count(*) FROM ledgers"),
                    "workspaces": one("SELECT count(*) FROM workspaces"),
                    "workspace_files": one("SELECT count(*) FROM workspace_files")}

    def _session_keys(self, q: Q, tenant: str, session: str) -> list[str]:
        """The stored session keys of ``session``: itself and its owner-qualified keys (:func:`session_of`)."""
        owned = "sess = ? OR sess LIKE ? ESCAPE '\\'"
        pattern = f"{OWNER_PREFIX}/%/" + session.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        sql = " UNION ".join(f"SELECT sess FROM {t} WHERE tenant = ? AND ({owned})" for t in SESSION_TABLES)
        return sorted({k for (k,) in q.all(sql, (tenant, session, pattern) * len(SESSION_TABLES))
                       if session_of(k) == session})

    def delete_session_rows(self, tenant: str, session: str) -> dict[str, int]:
        gone = dict.fromkeys(("snapshots", "artifacts", "ledgers", "workspaces"), 0)
        with self._tx(write=True) as q:
            for sess in self._session_keys(q, tenant, session):
                key = (tenant, sess)
                snaps = q.all("SELECT snap_id, query, ready FROM snapshots WHERE tenant = ? AND sess = ?", key)
                for snap_id, query, ready in snaps:
                    self._drop(q, snap_id)
                    gone[_kind(query, ready)] += 1
                lids = q.all("SELECT lid FROM ledgers WHERE tenant = ? AND sess = ?", key)
                for (lid,) in lids:
                    self._drop_ledger(q, lid)
                q("DELETE FROM workspace_files WHERE tenant = ? AND sess = ?", key)  # every user's workspace
                gone["ledgers"] += len(lids)
                gone["workspaces"] += q("DELETE FROM workspaces WHERE tenant = ? AND sess = ?", key).rowcount
        return gone

    # -- ledgers ---------------------------------------------------------------------------------------
    @staticmethod
    def _drop_ledger(q: Q, lid: int) -> None:
        q("DELETE FROM task_states WHERE lid = ?", (lid,))
        q("DELETE FROM ledger_excerpts WHERE lid = ?", (lid,))
        q("DELETE FROM ledger_entries WHERE lid = ?", (lid,))
        q("DELETE FROM ledgers WHERE lid = ?", (lid,))

    def ledger_open(self, tenant: str, session: str, task: str, limits: tuple, now_us: int,
                     expires_us: int) -> tuple[int, tuple]:
        key = (tenant, session, task)
        with self._tx(write=True) as q:
            old = q.one(f"SELECT lid FROM ledgers WHERE tenant = ? AND sess = ? AND task = ? AND expires_us <= ?"
                        f"{self.FOR_UPDATE}", (*key, now_us))
            if old is not None:  # expired: the task starts anew
                self._drop_ledger(q, old[0])
            q(NEW_LEDGER + " ON CONFLICT (tenant, sess, task) DO NOTHING", (*key, *limits, expires_us))
            row = q.one(f"SELECT lid, {', '.join(LIMITS)} FROM ledgers WHERE tenant = ? AND sess = ? AND task = ?", key)
        return row[0], tuple(row[1:])

    def ledger_extend(self, lid: int, until_us: int, now_us: int) -> bool:
        with self._tx(write=True) as q:
            row = q.one(f"SELECT expires_us FROM ledgers WHERE lid = ?{self.FOR_UPDATE}", (lid,))
            if row is None or row[0] <= now_us:
                return False
            if row[0] < until_us:
                q("UPDATE ledgers SET expires_us = ? WHERE lid = ?", (until_us, lid))
            return True

    @contextmanager
    def ledger_txn(self, lid: int) -> Iterator[_LedgerTxn]:
        with self._tx(write=True) as q:
            row = q.one(f"SELECT {', '.join(COUNTERS)} FROM ledgers WHERE lid = ?{self.FOR_UPDATE}", (lid,))
            yield _LedgerTxn(q, lid, None if row is None else tuple(row))

    def ledger_counters(self, lid: int) -> dict[str, int] | None:
        row = self._one(f"SELECT {', '.join(COUNTERS)} FROM ledgers WHERE lid = ?", (lid,))
        return None if row is None else dict(zip(COUNTERS, row))

    def ledger_doc_reads(self, lid: int, doc_id: str) -> int:
        with self._tx() as q:
            return _doc_reads(q, lid, doc_id)

    def ledger_reads_of(self, lid: int, doc_id: str, sha256: str) -> list[tuple]:
        with self._tx() as q:
            return _reads_of(q, lid, doc_id, sha256)

    def ledger_entries(self, lid: int) -> list[tuple]:
        return [tuple(r) for r in self._all(f"SELECT {ENTRY_COLUMNS} FROM ledger_entries WHERE lid = ? ORDER BY step",
                                            (lid,))]

    def ledger_excerpts(self, lid: int) -> list[tuple]:
        return [tuple(r) for r in self._all("SELECT step, doc_id, revision, start_at, end_at, sha256 FROM "
                                            "ledger_excerpts WHERE lid = ? ORDER BY step, start_at", (lid,))]

    # -- task states (store/_tasks.py) -----------------------------------------------------------------
    def task_begin(self, tenant: str, session: str, task: str, limits: tuple, state: str, expires_us: int,
                   keep: int) -> int:
        with self._tx(write=True) as q:
            self._lock_key(q, "tasks", tenant, session)  # one start at a time per (tenant, session): the bound holds
            lid = q.one(NEW_LEDGER + " RETURNING lid", (tenant, session, task, *limits, expires_us))[0]
            q("INSERT INTO task_states (lid, state) VALUES (?, ?)", (lid, state))
            for (old,) in q.all("SELECT l.lid FROM ledgers l JOIN task_states s ON s.lid = l.lid "
                                "WHERE l.tenant = ? AND l.sess = ? ORDER BY l.lid DESC", (tenant, session))[keep:]:
                self._drop_ledger(q, old)
        return lid

    def task_row(self, tenant: str, session: str, task: str) -> tuple[int, tuple, str] | None:
        row = self._one(f"SELECT l.lid, {', '.join('l.' + c for c in LIMITS)}, s.state FROM ledgers l JOIN "
                        "task_states s ON s.lid = l.lid WHERE l.tenant = ? AND l.sess = ? AND l.task = ?",
                        (tenant, session, task))
        return None if row is None else (row[0], tuple(row[1:-1]), row[-1])

    @contextmanager
    def task_txn(self, lid: int) -> Iterator[_TaskTxn]:
        with self._tx(write=True) as q:
            yield _TaskTxn(q, lid, q.one(f"SELECT state FROM task_states WHERE lid = ?{self.FOR_UPDATE}", (lid,)))

    # -- workspaces ------------------------------------------------------------------------------------
    @contextmanager
    def workspace_txn(self, ws: WsKey) -> Iterator[_WorkspaceTxn]:
        with self._tx(write=True) as q:
            self._lock_key(q, "workspace", *ws)
            yield _WorkspaceTxn(q, ws)

    def workspace_state(self, ws: WsKey) -> tuple[int, int, int] | None:
        row = self._one(f"SELECT created_us, expires_us, version FROM workspaces WHERE {WS}", ws)
        return None if row is None else tuple(row)

    def workspace_files(self, ws: WsKey) -> list[tuple]:
        with self._tx() as q:
            return _WorkspaceTxn(q, ws).files()

    def workspace_file(self, ws: WsKey, path: str) -> tuple | None:
        row = self._one("SELECT path, kind, revision, summary, body, sha256, chars, updated_us FROM workspace_files "
                        f"WHERE {WS} AND path = ?", (*ws, path))
        return None if row is None else tuple(row)


#: A new task ledger with zero counters: ``(tenant, sess, task, *limits, expires_us)``.
NEW_LEDGER = (f"INSERT INTO ledgers (tenant, sess, task, {', '.join(LIMITS)}, "
              f"{', '.join(c for c in COUNTERS if c != 'expires_us')}, expires_us) VALUES "
              f"(?, ?, ?{', ?' * len(LIMITS)}{', 0' * (len(COUNTERS) - 1)}, ?)")

SCHEMA_VERSION = "7"  # 2: snapshot-scoped locate indexes (chunk id ranges in SQLite, (snap_id, body) GIN); 3: ledger
#                       excerpts (the text a compact locate served is a read, as in the in-memory ledger), and a
#                       workspace is one principal's, keyed by (tenant, session, owner); 4: CJK gram postings for
#                       1- and 2-character CJK terms (SQLite: the chunk_grams table; PostgreSQL: chunks_snap_grams);
#                       5: task ledgers expire (ledgers.expires_us; migrated from 4 by MIGRATIONS); 6: one
#                       large-result mechanism, artifacts are one-document snapshots (the artifacts table's rows
#                       move into snapshots, then it is dropped: artifacts_to_snapshots); 7: task states beside
#                       their ledgers (task_states, created with the schema; removed with their ledger)


def artifacts_to_snapshots(q: Q, store: SQLStore) -> None:
    """Schema 5 -> 6: every row of the ``artifacts`` table becomes the published one-document snapshot
    schema 5 kept in its artifacts table (same id, summary, times and sha256), then the table is dropped.

    A row whose content no longer matches its sha256 keeps that sha256 on its document and on every chunk, so
    reading it stays ``evidence_changed``, as it was."""
    for tenant, sess, aid, summary, content, sha, _, created, expires in q.all(
            "SELECT tenant, sess, artifact_id, summary, content, sha256, chars, created_us, expires_us FROM artifacts"):
        snap_id = q.one("INSERT INTO snapshots (tenant, sess, query, ready, created_us, expires_us) "
                        "VALUES (?, ?, ?, 0, ?, ?) RETURNING snap_id", (tenant, sess, artifact_query(aid), created,
                                                                         expires))[0]
        doc, chunks = document_row(0, Document(aid, summary, sha[:12], content), tenant)  # never an empty revision
        if doc[6] != sha:
            doc, chunks = (*doc[:6], sha, *doc[7:]), [(d, c, body, sha) for d, c, body, _ in chunks]
        store.add_rows(snap_id, [doc], chunks)  # joins this transaction (SQLite) or nests in it (PostgreSQL)
        q("UPDATE snapshots SET ready = 1 WHERE snap_id = ?", (snap_id,))
    q("DROP TABLE artifacts")


#: Migrations as code, taking a store of the key's version to the next one (run in order): SQL statements, or a
#: function of the transaction and the store.
MIGRATIONS: dict[str, list[str | Callable[[Q, SQLStore], None]]] = {
    "4": [f"ALTER TABLE ledgers ADD COLUMN expires_us BIGINT NOT NULL DEFAULT {MAX_US}"],
    "5": [artifacts_to_snapshots],
    "6": [],  # the task_states table is created with the schema
}


def schema(id_column: str) -> list[str]:
    """The tables both SQL backends share; ``id_column`` is the dialect's auto-increment key."""
    return [
        "CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS snapshots (snap_id {id_column}, tenant TEXT NOT NULL, sess TEXT NOT NULL, "
        "query TEXT NOT NULL, ready INTEGER NOT NULL, created_us BIGINT NOT NULL, expires_us BIGINT NOT NULL)",
        "CREATE UNIQUE INDEX IF NOT EXISTS snapshots_key ON snapshots (tenant, sess, query) WHERE ready = 1",
        "CREATE INDEX IF NOT EXISTS snapshots_expiry ON snapshots (expires_us)",
        "CREATE TABLE IF NOT EXISTS documents (snap_id BIGINT NOT NULL, doc_no INTEGER NOT NULL, doc_id TEXT NOT NULL, "
        "title TEXT NOT NULL, revision TEXT NOT NULL, chars BIGINT NOT NULL, bytes BIGINT NOT NULL, "
        "sha256 TEXT NOT NULL, preview TEXT NOT NULL, access TEXT, PRIMARY KEY (snap_id, doc_no), "
        "UNIQUE (snap_id, doc_id))",
        f"CREATE TABLE IF NOT EXISTS chunks (chunk_id {id_column}, snap_id BIGINT NOT NULL, doc_no INTEGER NOT NULL, "
        "chunk_no INTEGER NOT NULL, body TEXT NOT NULL, sha256 TEXT NOT NULL, UNIQUE (snap_id, doc_no, chunk_no))",
        f"CREATE TABLE IF NOT EXISTS ledgers (lid {id_column}, tenant TEXT NOT NULL, sess TEXT NOT NULL, "
        "task TEXT NOT NULL, " + ", ".join(f"{c} BIGINT" for c in LIMITS) + ", "
        + ", ".join(f"{c} BIGINT NOT NULL" for c in COUNTERS) + ", UNIQUE (tenant, sess, task))",
        "CREATE TABLE IF NOT EXISTS ledger_entries (lid BIGINT NOT NULL, step BIGINT NOT NULL, tool TEXT NOT NULL, "
        "status TEXT NOT NULL, chars BIGINT NOT NULL, bytes BIGINT NOT NULL, tokens BIGINT NOT NULL, "
        "charged INTEGER NOT NULL, read_doc_id TEXT, read_revision TEXT, read_start BIGINT, read_end BIGINT, "
        "read_sha256 TEXT, reason TEXT, covered_doc_id TEXT, covered_start BIGINT, covered_end BIGINT, "
        "PRIMARY KEY (lid, step))",
        "CREATE TABLE IF NOT EXISTS ledger_excerpts (lid BIGINT NOT NULL, step BIGINT NOT NULL, doc_id TEXT NOT NULL, "
        "revision TEXT NOT NULL, start_at BIGINT NOT NULL, end_at BIGINT NOT NULL, sha256 TEXT NOT NULL)",
        "CREATE INDEX IF NOT EXISTS ledger_excerpts_lid ON ledger_excerpts (lid, step)",
        "CREATE INDEX IF NOT EXISTS ledgers_expiry ON ledgers (expires_us)",
        # A task's own state (JSON), one row per task ledger, removed with it (_drop_ledger).
        "CREATE TABLE IF NOT EXISTS task_states (lid BIGINT PRIMARY KEY, state TEXT NOT NULL)",
        # A workspace is one principal's: (tenant, session, owner). The session comes before the owner in the keys,
        # so delete_session finds every user's workspace of a session through the primary key.
        "CREATE TABLE IF NOT EXISTS workspaces (tenant TEXT NOT NULL, sess TEXT NOT NULL, owner TEXT NOT NULL, "
        "created_us BIGINT NOT NULL, expires_us BIGINT NOT NULL, version BIGINT NOT NULL, "
        "PRIMARY KEY (tenant, sess, owner))",
        "CREATE INDEX IF NOT EXISTS workspaces_expiry ON workspaces (expires_us)",
        "CREATE TABLE IF NOT EXISTS workspace_files (tenant TEXT NOT NULL, sess TEXT NOT NULL, owner TEXT NOT NULL, "
        "path TEXT NOT NULL, kind TEXT NOT NULL, revision BIGINT NOT NULL, summary TEXT NOT NULL, body TEXT NOT NULL, "
        "sha256 TEXT NOT NULL, chars BIGINT NOT NULL, updated_us BIGINT NOT NULL, "
        "PRIMARY KEY (tenant, sess, owner, path))",
    ]


def migrate(q: Q, statements: list[str], store: SQLStore) -> None:
    """Create the schema if missing (inside the caller's locked transaction); refuse another version.

    The version is checked before any other statement runs, so a store of another version is refused as such
    (not by an index over a column its tables lack) and left as it was. So are the CJK ranges the gram postings
    were built for (``cjk_gram_ranges``, :data:`~evidence_lib.store._common.GRAM_RANGES_ID`): postings built for
    other ranges would miss the characters this library calls CJK and the others do not."""
    q(statements[0])  # store_meta
    row = q.one("SELECT value FROM store_meta WHERE key = 'schema_version'")
    if row is not None and row[0] != SCHEMA_VERSION and row[0] not in MIGRATIONS:
        raise RuntimeError(f"store schema version {row[0]} is not {SCHEMA_VERSION}: migrate it first")
    ranges = q.one("SELECT value FROM store_meta WHERE key = 'cjk_gram_ranges'")
    if row is not None and (ranges is None or ranges[0] != GRAM_RANGES_ID):
        raise RuntimeError(f"store gram postings were built for other CJK gram ranges ({ranges and ranges[0]}, not "
                           f"{GRAM_RANGES_ID}): rebuild them first")
    version = row and row[0]
    while version in MIGRATIONS:  # a ledger migrated from 4 expires TTL after its next entry
        for step in MIGRATIONS[version]:
            step(q, store) if callable(step) else q(step)
        version = str(int(version) + 1)
        q("UPDATE store_meta SET value = ? WHERE key = 'schema_version'", (version,))
    for sql in statements[1:]:
        q(sql)
    if row is None:
        q("INSERT INTO store_meta (key, value) VALUES ('schema_version', ?), ('cjk_gram_ranges', ?)",
          (SCHEMA_VERSION, GRAM_RANGES_ID))
