"""The store interface and what every backend shares: validation, TTLs, chunks, the index adapter. Notebook 11.

An :class:`EvidenceStore` keeps snapshots keyed by ``(tenant, session, query)``, their documents, budget ledgers and task
workspaces (large results kept outside the context are one-document snapshots: :class:`~evidence_lib.store.ToolResults`). A backend implements the storage primitives of :class:`StoreBackend`;
everything a caller sees is defined once, here, so the three backends cannot drift apart. The
limits, checks, keys and rows below live in :mod:`evidence_lib.store._common` (re-exported here), which the
store's other modules import instead of this one, so none of them imports another in a circle.

* A doc_id means nothing outside its snapshot: every lookup goes through a :class:`StoreSnapshot`.
* Everything has a TTL checked at use: readable on ``[created_at, expires_at)``, expired *at* ``expires_at``
  (the artifacts' rule, notebook 07); :meth:`EvidenceStore.cleanup` removes what expired. A TTL is checked before
  anything is written: a positive ``timedelta`` whose expiry is a representable time, else ``invalid_ttl``.
* Text and integers are checked before any backend sees them, so NUL bytes, lone surrogates and integers
  beyond 64 bits are refused with the same code everywhere (``invalid_text``, ``integer_out_of_range``).
* A document is stored in chunks (read back through :mod:`evidence_lib.store._snapshot`) of :data:`CHUNK_CHARS` code points, each carrying the next
  :data:`OVERLAP_CHARS` as well and its own sha256: a read fetches and verifies one or two chunks however
  large the document is, and any match of a term up to ``OVERLAP_CHARS + 1`` characters lies inside the chunk
  where it starts, so a substring index over chunks finds every match with exact code-point offsets.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import timedelta

from .._access import Principal
from .._clock import Clock
from .._documents import Document
from .._errors import EvidenceError
from .._ledger import Budget
from ._common import (
    DEFAULT_STORE_TTL,
    MAX_KEY_CHARS,
    ChunkRow,
    DocRow,
    LedgerTxn,
    SnapRow,
    SnapshotKey,
    SnapshotReader,
    TaskTxn,
    WorkspaceTxn,
    WsKey,
    alive,
    check_text,
    document_row,
    expiry_us,
    to_us,
)
from ._ledger import StoreLedger
from ._snapshot import StoreSnapshot
from ._workspace import TaskWorkspace

__all__ = ["LOOKUP_ATTEMPTS", "STALE_WRITE", "EvidenceStore", "StoreBackend"]

#: An unpublished snapshot begun this long ago belongs to a writer that died or stalled: cleanup removes it.
STALE_WRITE = timedelta(hours=24)
#: How often :meth:`EvidenceStore.snapshot` looks a key up again when its snapshot was replaced while being read.
LOOKUP_ATTEMPTS = 8


# -- the backend interface -------------------------------------------------------------------------------
class StoreBackend(ABC):
    """The storage primitives a backend implements (``MemoryStore``; ``SQLiteStore`` and ``PostgresStore`` through
    ``SQLStore``). :class:`EvidenceStore` builds everything a caller sees on them, once, and the store's own
    modules (snapshot, ledger, workspace, artifacts) call them by these names. Notebook 11.

    Rows are plain tuples (:mod:`evidence_lib.store._common` names their fields). Times are microseconds since the
    epoch. The three context managers yield small objects: :meth:`reading` a reader with ``published(snap_id)``,
    ``candidates(snap_id, term)`` (``(doc_no, chunk_no)`` of every chunk whose body may contain ``term``; extra
    rows are harmless), ``chunks(snap_id, spans)`` (``(doc_no, chunk_no, body, sha256)`` of chunks ``lo..hi``
    of each ``(doc_no, lo, hi)``, in one query), and ``candidates_many`` / ``chunks_many``, the same for several
    snapshots in one query (each row then starts with its ``snap_id``); :meth:`ledger_txn` a txn with
    ``counters`` (None: the ledger is gone), ``doc_reads(doc_id)``, ``reads_of(doc_id, sha256)`` and
    ``write(row, counters, excerpts)``;
    :meth:`workspace_txn` a txn with ``state``, ``files()``, ``put(row)``, ``delete(path)`` and ``set_state(...)``.
    A workspace is keyed by ``WsKey = (tenant, session, owner)``: the user who opened it.
    """

    # snapshots
    @abstractmethod
    def begin_snapshot(self, key: SnapshotKey, created_us: int, expires_us: int) -> int:
        """Start an unpublished snapshot for ``key`` and return its id."""

    @abstractmethod
    def add_rows(self, snap_id: int, docs: list[DocRow], chunks: list[ChunkRow]) -> None:
        """Add one batch to the unpublished snapshot; ``snapshot_expired`` (nothing added) if it is gone."""

    @abstractmethod
    def publish_snapshot(self, snap_id: int) -> None:
        """Publish the unpublished snapshot, dropping its key's previous one; ``snapshot_expired`` if it is gone."""

    @abstractmethod
    def discard_snapshot(self, snap_id: int) -> None:
        """Remove an unpublished snapshot and whatever rows it has (nothing if it was published)."""

    @abstractmethod
    def lookup_snapshot(self, key: SnapshotKey) -> SnapRow | None:
        """The published snapshot row of ``key``, if any (alive or not: the caller checks the TTL)."""

    @abstractmethod
    def snapshot_row(self, snap_id: int) -> SnapRow | None:
        """The snapshot's row if it is still published (not replaced, deleted or cleaned up)."""

    @abstractmethod
    def document_rows(self, snap_id: int) -> list[DocRow]:
        """The snapshot's document rows, in ``doc_no`` order."""

    @abstractmethod
    def reading(self) -> AbstractContextManager[SnapshotReader]:
        """One read transaction of the page-serving path (the memory backend: its lock), yielding a reader."""

    @abstractmethod
    def delete_snapshot_key(self, key: SnapshotKey) -> bool:
        """Remove the published snapshot of ``key`` with its rows; whether there was one."""

    # housekeeping
    @abstractmethod
    def remove_expired(self, now_us: int, stale_us: int) -> dict[str, int]:
        """Remove what expired at ``now_us`` and unpublished snapshots begun at ``stale_us`` or earlier; count them."""

    @abstractmethod
    def row_counts(self) -> dict[str, int]:
        """How many rows of every kind the backend holds (what :meth:`EvidenceStore.stats` reports)."""

    @abstractmethod
    def delete_session_rows(self, tenant: str, session: str) -> dict[str, int]:
        """Remove every row of the session, its owner-qualified keys included; count them by kind."""

    # ledgers
    @abstractmethod
    def ledger_open(self, tenant: str, session: str, task: str, limits: tuple, now_us: int,
                    expires_us: int) -> tuple[int, tuple]:
        """The ledger's id and stored limits, created with ``limits`` if missing (or expired at ``now_us``)."""

    @abstractmethod
    def ledger_extend(self, lid: int, until_us: int, now_us: int) -> bool:
        """Make the ledger, if alive at ``now_us``, expire no earlier than ``until_us``; whether it was alive."""

    @abstractmethod
    def ledger_txn(self, lid: int) -> AbstractContextManager[LedgerTxn]:
        """A context manager holding the ledger's lock across check and charge, yielding a ledger txn."""

    @abstractmethod
    def ledger_counters(self, lid: int) -> dict[str, int] | None:
        """The stored counters (and ``expires_us``), or None if the ledger was deleted or cleaned up."""

    @abstractmethod
    def ledger_entries(self, lid: int) -> list[tuple]:
        """The ledger's entry rows, in step order."""

    @abstractmethod
    def ledger_excerpts(self, lid: int) -> list[tuple]:
        """The excerpts the ledger's entries served ``(step, doc_id, revision, start, end, sha256)``, in order."""

    @abstractmethod
    def ledger_doc_reads(self, lid: int, doc_id: str) -> int:
        """Charged page reads of ``doc_id`` (one aggregate)."""

    @abstractmethod
    def ledger_reads_of(self, lid: int, doc_id: str, sha256: str) -> list[tuple[str, str, int, int, str]]:
        """Every range of these bytes the ledger served, pages and excerpts (coverage is decided on them)."""

    # task states: a task's own state beside its ledger (store/_tasks.py)
    @abstractmethod
    def task_begin(self, tenant: str, session: str, task: str, limits: tuple, state: str, expires_us: int,
                   keep: int) -> int:
        """A new task in one transaction: its ledger (``limits``, expiring at ``expires_us``) and its ``state`` (JSON
        text); of the tasks of ``(tenant, session)`` only the ``keep`` newest stay (the others go with their ledgers).
        Its ledger's id."""

    @abstractmethod
    def task_row(self, tenant: str, session: str, task: str) -> tuple[int, tuple, str] | None:
        """``(lid, limits, state)`` of the task, in one statement; None if there is none (never begun, forgotten, or
        removed with its ledger)."""

    @abstractmethod
    def task_txn(self, lid: int) -> AbstractContextManager[TaskTxn]:
        """A context manager holding the task's lock, yielding its :class:`TaskTxn`."""

    # workspaces
    @abstractmethod
    def workspace_txn(self, ws: WsKey) -> AbstractContextManager[WorkspaceTxn]:
        """A context manager holding the workspace's lock, yielding a workspace txn."""

    @abstractmethod
    def workspace_state(self, ws: WsKey) -> tuple[int, int, int] | None:
        """``(created_us, expires_us, version)`` of the workspace, if it exists."""

    @abstractmethod
    def workspace_files(self, ws: WsKey) -> list[tuple]:
        """The workspace's file listing rows (path first), in path order."""

    @abstractmethod
    def workspace_file(self, ws: WsKey, path: str) -> tuple | None:
        """One file's row ``(path, kind, revision, summary, body, sha256, chars, updated_us)``, if it exists."""


# -- the interface callers see ----------------------------------------------------------------------------
class EvidenceStore(StoreBackend):
    """Snapshots, documents, artifacts, ledgers and workspaces behind one interface (``MemoryStore``,
    ``SQLiteStore``, ``PostgresStore``: notebook 11)."""

    backend = "abstract"

    def __init__(self, clock: Clock) -> None:
        if not callable(clock):
            raise TypeError("clock must be a zero-argument callable returning an aware datetime")
        self.clock = clock

    def now_us(self) -> int:
        """The store's clock now, in integer microseconds: the unit every stored time and TTL uses (notebook 11)."""
        return to_us(self.clock())

    # snapshots -------------------------------------------------------------------------------------------
    def put_snapshot(self, tenant: str, session: str, query: str, documents: Iterable[Document], *,
                     ttl: timedelta = DEFAULT_STORE_TTL, batch_bytes: int = 8 << 20,
                     progress: Callable[[int], None] | None = None) -> StoreSnapshot:
        """Store ``documents`` as the snapshot for ``(tenant, session, query)``, replacing the previous one.

        Written in batches under a snapshot that nobody can see yet, then published in one transaction:
        readers see the old snapshot or the new one, never a mix; a writer that dies leaves an unpublished
        snapshot that :meth:`cleanup` removes once its TTL has passed or it is :data:`STALE_WRITE` old. A write
        that outlives its TTL, or whose unpublished snapshot was removed meanwhile (by :meth:`cleanup` or
        :meth:`delete_session`), publishes nothing, keeps the old snapshot and ends with ``snapshot_expired``.
        """
        key = SnapshotKey.checked(tenant, session, query)
        return self._open(self.snapshot_row(self._write_snapshot(key, documents, ttl, batch_bytes, progress).snap_id))

    def _write_snapshot(self, key: SnapshotKey, documents: Iterable[Document], ttl: timedelta, batch_bytes: int = 8 << 20,
                        progress: Callable[[int], None] | None = None) -> SnapRow:
        """Write and publish the snapshot of an already checked ``key`` (:meth:`put_snapshot`'s steps; an artifact's
        reserved key of an artifact migrated from schema 5 too); return the row it was published with."""
        now = self.now_us()
        expires = expiry_us(now, ttl)
        snap_id = self.begin_snapshot(key, now, expires)
        try:
            seen: set[str] = set()
            docs: list[DocRow] = []
            chunks: list[ChunkRow] = []
            size = n = 0
            for n, doc in enumerate(documents, 1):
                row, rows = document_row(n - 1, doc, key.tenant)
                if row[1] in seen:
                    raise ValueError(f"duplicate doc_id {row[1]!r}")
                seen.add(row[1])
                docs.append(row)
                chunks.extend(rows)
                size += row[5]
                if size >= batch_bytes:
                    self.add_rows(snap_id, docs, chunks)
                    docs, chunks, size = [], [], 0
                    if progress is not None:
                        progress(n)
            self.add_rows(snap_id, docs, chunks)
            if self.now_us() >= expires:  # outlived its TTL: publishing would replace the old snapshot by nothing
                raise EvidenceError("snapshot_expired")
            self.publish_snapshot(snap_id)
        except BaseException:
            try:
                self.discard_snapshot(snap_id)
            except Exception:  # noqa: BLE001 - the original error matters; cleanup() removes leftovers
                pass
            raise
        if progress is not None:
            progress(n)
        return SnapRow(snap_id, key, now, expires)

    def snapshot(self, tenant: str, session: str, query: str) -> StoreSnapshot:
        """The published snapshot for this key, or ``snapshot_expired`` (gone, expired or never stored).

        A snapshot replaced while its documents were read is not an answer, but its key still has one (the
        replacement): the key is looked up again, up to :data:`LOOKUP_ATTEMPTS` times.
        """
        key = SnapshotKey.checked(tenant, session, query)
        for _ in range(LOOKUP_ATTEMPTS):
            snap = self._read(self.lookup_snapshot(key))
            if snap is not None:
                return snap
        raise EvidenceError("snapshot_expired")  # replaced LOOKUP_ATTEMPTS times while being read

    def snapshots(self, tenant: str, session: str, queries: Iterable[str]) -> dict[str, StoreSnapshot]:
        """The published snapshots of ``queries`` under one ``(tenant, session)`` that are alive now, by query, looked
        up together (:meth:`_snapshot_rows`: two queries in one read transaction on SQL backends); the others are
        left out. What a caller resolving many keys at once uses (the offload shelf's listing)."""
        keys = {q: SnapshotKey.checked(tenant, session, q) for q in dict.fromkeys(queries)}
        out: dict[str, StoreSnapshot] = {}
        now = self.now_us()
        for row, docs in self._snapshot_rows(list(keys.values())):
            if not alive(row.created_us, row.expires_us, now):
                continue
            if docs:
                out[row.key.query] = self._seen(StoreSnapshot(self, row, docs))
                continue
            try:  # no document: empty, or replaced between the two queries; looked up alone
                out[row.key.query] = self.snapshot(tenant, session, row.key.query)
            except EvidenceError:
                pass
        return out

    def _snapshot_rows(self, keys: list[SnapshotKey]) -> list[tuple[SnapRow, list[DocRow]]]:
        """The published rows of ``keys`` (one ``(tenant, session)``) with their documents; a backend may batch it."""
        rows = [self.lookup_snapshot(k) for k in keys]
        return [(r, self.document_rows(r.snap_id)) for r in rows if r is not None]

    @staticmethod
    def _seen(snap: StoreSnapshot) -> StoreSnapshot:
        """``snap``, just seen published: the current call need not check again (:meth:`StoreSnapshot.check_alive`)."""
        snap.seen_published()
        return snap

    def _open(self, row: SnapRow | None) -> StoreSnapshot:
        snap = self._read(row)
        if snap is None:
            raise EvidenceError("snapshot_expired")
        return snap

    def _read(self, row: SnapRow | None) -> StoreSnapshot | None:
        """The snapshot of ``row`` with its documents; None if it was replaced or deleted while they were read."""
        if row is None or not alive(row.created_us, row.expires_us, self.now_us()):
            raise EvidenceError("snapshot_expired")
        docs = self.document_rows(row.snap_id)
        if self.snapshot_row(row.snap_id) is None:
            return None
        return self._seen(StoreSnapshot(self, row, docs))

    def published(self, snap_id: int) -> StoreSnapshot:
        """The snapshot ``snap_id`` while it is still published and alive, else ``snapshot_expired``: what a task
        that began on it reads on, whichever worker serves its next call (notebook 13)."""
        return self._open(self.snapshot_row(snap_id))

    def delete_snapshot(self, tenant: str, session: str, query: str) -> bool:
        """Delete the snapshot of ``(tenant, session, query)``; whether there was one (notebook 11)."""
        return self.delete_snapshot_key(SnapshotKey.checked(tenant, session, query))

    def cleanup(self) -> dict[str, int]:
        """Remove every snapshot, artifact, workspace and task ledger whose ``expires_at <= now``, and every
        unpublished snapshot begun :data:`STALE_WRITE` ago or earlier, with its documents and chunks; say how many
        of each."""
        now = self.now_us()
        return self.remove_expired(now, now - STALE_WRITE // timedelta(microseconds=1))

    def delete_session(self, tenant: str, session: str) -> dict[str, int]:
        """Remove everything one session left: snapshots (published or not), artifacts, ledgers, and the
        workspace of every user of the session, under its own key and under every user's owner-qualified key
        (:func:`~evidence_lib.store._common.owner_session`: the offload middleware's results and task ledgers)."""
        return self.delete_session_rows(check_text(tenant, "tenant", lo=1, hi=MAX_KEY_CHARS),
                                    check_text(session, "session", lo=1, hi=MAX_KEY_CHARS))

    # ledgers and workspaces (their logic lives in store/ledger.py and store/workspace.py) ----------------
    def ledger(self, tenant: str, session: str, task: str, budget: Budget | None = None, *,
               ttl: timedelta = DEFAULT_STORE_TTL) -> StoreLedger:
        """The task's budget ledger, shared by every worker of the task; it expires ``ttl`` after its last entry."""
        return StoreLedger(self, tenant, session, task, budget, ttl=ttl)

    def workspace(self, principal: Principal, session: str, *, ttl: timedelta = DEFAULT_STORE_TTL) -> TaskWorkspace:
        """The workspace of ``principal``'s task ``session``: plans, notes and results readable through the
        evidence tools, gone after ``ttl`` (notebook 11)."""
        return TaskWorkspace(self, principal, session, ttl=ttl)

    def stats(self) -> dict[str, int]:
        """How many rows the store holds, of every kind (an operator's check that nothing is left over):
        published and ``unpublished`` snapshots, documents and chunks (of both), the chunks' CJK gram postings
        (``chunk_grams``: one per distinct CJK character or pair of a chunk; SQLite counts the rows of its postings
        table, PostgreSQL the entries its gram index holds for the stored chunks, computed from them, and the
        memory backend, which has no index, 0), artifacts (published one-document snapshots under the reserved
        :data:`~evidence_lib.store._common.ARTIFACT_PREFIX`, counted here and not as snapshots, documents or chunks;
        their chunks' gram postings are in ``chunk_grams``), ledgers, workspaces and their files. It counts every
        row, so on a large store it takes a while."""
        return self.row_counts()

    @contextmanager
    def bulk_load(self) -> Iterator[EvidenceStore]:
        """A block for loading a large corpus (an initial import): ``with store.bulk_load(): store.put_snapshot(...)``.

        Backends whose index is cheaper to build once than to maintain row by row defer it to the end of the
        block (PostgreSQL's trigram index); the others load as usual. Results are exact throughout.
        """
        yield self

    def close(self) -> None:
        """Release connections (a no-op for the memory backend)."""

    def __enter__(self) -> EvidenceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
