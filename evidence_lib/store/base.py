"""The store interface and what every backend shares: validation, TTLs, chunks, the index adapter. Notebook 11.

An :class:`EvidenceStore` keeps snapshots keyed by ``(tenant, session, query)``, their documents, artifacts,
budget ledgers and task workspaces. A backend implements a small set of storage primitives (the ``_``
methods); everything a caller sees is defined once, here, so the three backends cannot drift apart.

* A doc_id means nothing outside its snapshot: every lookup goes through a :class:`StoreSnapshot`.
* Everything has a TTL checked at use: readable on ``[created_at, expires_at)``, expired *at* ``expires_at``
  (the artifacts' rule, notebook 07); :meth:`EvidenceStore.cleanup` removes what expired. A TTL is checked before
  anything is written: a positive ``timedelta`` whose expiry is a representable time, else ``invalid_ttl``.
* Text and integers are checked before any backend sees them, so NUL bytes, lone surrogates and integers
  beyond 64 bits are refused with the same code everywhere (``invalid_text``, ``integer_out_of_range``).
* A document is stored in chunks (read back through :mod:`evidence_lib.store.snapshot`) of :data:`CHUNK_CHARS` code points, each carrying the next
  :data:`OVERLAP_CHARS` as well and its own sha256: a read fetches and verifies one or two chunks however
  large the document is, and any match of a term up to ``OVERLAP_CHARS + 1`` characters lies inside the chunk
  where it starts, so a substring index over chunks finds every match with exact code-point offsets.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from ..access import Access, Principal
from ..clock import Clock
from ..corpus import Document
from ..errors import EvidenceError
from ..index import MAX_STORED_BYTES, PREVIEW_CHARS
from ..toolkit import clean_text

if TYPE_CHECKING:
    from .snapshot import StoreSnapshot

CHUNK_CHARS = 4096
OVERLAP_CHARS = 127
#: Trigram indexes need at least this many characters; shorter terms take the backend's exact fallback.
MIN_INDEXED_CHARS = 3
DEFAULT_TTL = timedelta(hours=24)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_KEY_CHARS = 256
MAX_DOC_ID_CHARS = 128
MAX_TITLE_CHARS = 4096
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: The last representable time (``datetime.max``, in UTC) in microseconds: no expiry lies past it.
MAX_US = (datetime.max.replace(tzinfo=timezone.utc) - EPOCH) // timedelta(microseconds=1)
#: An unpublished snapshot begun this long ago belongs to a writer that died or stalled: cleanup removes it.
STALE_WRITE = timedelta(hours=24)
#: How often :meth:`EvidenceStore.snapshot` looks a key up again when its snapshot was replaced while being read.
LOOKUP_ATTEMPTS = 8


def system_clock() -> datetime:
    """The wall clock, for production callers; tests and notebooks inject a ManualClock instead."""
    return datetime.now(timezone.utc)


# -- validation: one place, every backend ----------------------------------------------------------------
def check_text(value: Any, field: str, *, lo: int = 0, hi: int | None = None) -> str:
    """``value`` if it is storable text within ``[lo, hi]`` characters; else a refusal with a stable code."""
    if not isinstance(value, str):
        raise EvidenceError("invalid_arguments", problems=[{"field": field, "problem": "not_text"}])
    if not clean_text(value):
        raise EvidenceError("invalid_text", field=field)
    if len(value) < lo or (hi is not None and len(value) > hi):
        raise EvidenceError("invalid_arguments", problems=[{"field": field, "problem": "length"}])
    return value


def check_int64(value: Any, field: str, *, lo: int = INT64_MIN) -> int:
    """``value`` if it is an int (not a bool) that fits a signed 64-bit column and is ``>= lo``."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise EvidenceError("invalid_arguments", problems=[{"field": field, "problem": "not_an_integer"}])
    if not INT64_MIN <= value <= INT64_MAX:
        raise EvidenceError("integer_out_of_range", field=field)
    if value < lo:
        raise EvidenceError("invalid_arguments", problems=[{"field": field, "problem": "too_small"}])
    return value


def to_us(at: datetime) -> int:
    """An aware datetime as integer microseconds since the epoch (exact; what every backend stores)."""
    if not isinstance(at, datetime) or at.tzinfo is None or at.utcoffset() is None:
        raise ValueError("store times must be timezone-aware datetimes")
    return check_int64((at - EPOCH) // timedelta(microseconds=1), "time")


def from_us(us: int) -> datetime:
    return EPOCH + timedelta(microseconds=us)


def ttl_us(ttl: Any) -> int:
    """A TTL in microseconds: a positive ``timedelta`` no longer than the calendar, else ``invalid_ttl``."""
    if not isinstance(ttl, timedelta) or ttl <= timedelta(0):
        raise EvidenceError("invalid_ttl", problem="not_a_positive_timedelta")
    us = ttl // timedelta(microseconds=1)
    if us > MAX_US:
        raise EvidenceError("invalid_ttl", problem="past_the_calendar")
    return us


def expiry_us(now_us: int, ttl: Any) -> int:
    """``now + ttl`` in microseconds if that is a representable time (hence also a 64-bit integer), else
    ``invalid_ttl``. Every write computes its expiry with this before it writes anything."""
    expires = now_us + ttl_us(ttl)
    if expires > MAX_US:
        raise EvidenceError("invalid_ttl", problem="past_the_calendar")
    return expires


def alive(created_us: int, expires_us: int, now_us: int) -> bool:
    """Readable on ``[created_at, expires_at)``: expired at the very instant ``now == expires_at``."""
    return created_us <= now_us < expires_us


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class SnapshotKey:
    """What a snapshot is filed under. The model never names it: the application binds it."""

    tenant: str
    session: str
    query: str

    @classmethod
    def checked(cls, tenant: Any, session: Any, query: Any) -> SnapshotKey:
        return cls(check_text(tenant, "tenant", lo=1, hi=MAX_KEY_CHARS),
                   check_text(session, "session", lo=1, hi=MAX_KEY_CHARS),
                   check_text(query, "query", lo=0, hi=4 * MAX_KEY_CHARS))


@dataclass(frozen=True)
class SnapRow:
    snap_id: int
    key: SnapshotKey
    created_us: int
    expires_us: int


#: (doc_no, doc_id, title, revision, chars, bytes, sha256, preview, access_json)
DocRow = tuple[int, str, str, str, int, int, str, str, "str | None"]
#: (doc_no, chunk_no, body, sha256)
ChunkRow = tuple[int, int, str, str]
#: A task workspace's key: (tenant, session, owner), the owner being the user of the principal who opened it.
WsKey = tuple[str, str, str]


def access_json(access: Access | None) -> str | None:
    if access is None:
        return None
    return json.dumps({"tenant": access.tenant, "read": sorted(access.read),
                       "discover": None if access.discover is None else sorted(access.discover)}, ensure_ascii=False)


def access_from_json(raw: str | None) -> Access | None:
    if raw is None:
        return None
    d = json.loads(raw)
    return Access(d["tenant"], frozenset(d["read"]), None if d["discover"] is None else frozenset(d["discover"]))


def chunk_rows(doc_no: int, text: str) -> list[ChunkRow]:
    """The chunks of one document: chunk ``c`` holds ``text[c*C : (c+1)*C + OVERLAP]`` and its sha256."""
    rows = []
    for c in range((len(text) + CHUNK_CHARS - 1) // CHUNK_CHARS):
        body = text[c * CHUNK_CHARS: (c + 1) * CHUNK_CHARS + OVERLAP_CHARS]
        rows.append((doc_no, c, body, sha256_text(body)))
    return rows


def document_row(doc_no: int, doc: Any, tenant: str) -> tuple[DocRow, list[ChunkRow]]:
    """Validate one document and turn it into its row and chunks (nothing is written yet)."""
    if not isinstance(doc, Document):
        raise TypeError("put_snapshot takes evidence_lib.Document objects")
    doc_id = check_text(doc.doc_id, "doc_id", lo=1, hi=MAX_DOC_ID_CHARS)
    title = check_text(doc.title, "title", hi=MAX_TITLE_CHARS)
    revision = check_text(doc.revision, "revision", hi=MAX_KEY_CHARS)
    text = check_text(doc.text, "text")
    raw = text.encode("utf-8")
    if len(raw) > MAX_STORED_BYTES:
        raise ValueError(f"document {doc_id!r} is larger than {MAX_STORED_BYTES:,} bytes")
    if doc.access is not None and doc.access.tenant != tenant:
        raise ValueError(f"document {doc_id!r} grants access in another tenant than the snapshot's")
    row = (doc_no, doc_id, title, revision, len(text), len(raw), hashlib.sha256(raw).hexdigest(),
           text[:PREVIEW_CHARS], access_json(doc.access))
    return row, chunk_rows(doc_no, text)


# -- the interface ---------------------------------------------------------------------------------------
class EvidenceStore(ABC):
    """Snapshots, documents, artifacts, ledgers and workspaces behind one interface (``MemoryStore``,
    ``SQLiteStore``, ``PostgresStore``: notebook 11)."""

    backend = "abstract"

    def __init__(self, clock: Clock) -> None:
        if not callable(clock):
            raise TypeError("clock must be a zero-argument callable returning an aware datetime")
        self.clock = clock

    def now_us(self) -> int:
        return to_us(self.clock())

    # snapshots -------------------------------------------------------------------------------------------
    def put_snapshot(self, tenant: str, session: str, query: str, documents: Iterable[Document], *,
                     ttl: timedelta = DEFAULT_TTL, batch_bytes: int = 8 << 20,
                     progress: Callable[[int], None] | None = None) -> "StoreSnapshot":
        """Store ``documents`` as the snapshot for ``(tenant, session, query)``, replacing the previous one.

        Written in batches under a snapshot that nobody can see yet, then published in one transaction:
        readers see the old snapshot or the new one, never a mix; a writer that dies leaves an unpublished
        snapshot that :meth:`cleanup` removes once its TTL has passed or it is :data:`STALE_WRITE` old. A write
        that outlives its TTL, or whose unpublished snapshot was removed meanwhile (by :meth:`cleanup` or
        :meth:`delete_session`), publishes nothing, keeps the old snapshot and ends with ``snapshot_expired``.
        """
        key = SnapshotKey.checked(tenant, session, query)
        now = self.now_us()
        expires = expiry_us(now, ttl)
        snap_id = self._begin(key, now, expires)
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
                    self._add(snap_id, docs, chunks)
                    docs, chunks, size = [], [], 0
                    if progress is not None:
                        progress(n)
            self._add(snap_id, docs, chunks)
            if self.now_us() >= expires:  # outlived its TTL: publishing would replace the old snapshot by nothing
                raise EvidenceError("snapshot_expired")
            self._publish(snap_id)
        except BaseException:
            try:
                self._discard(snap_id)
            except Exception:  # noqa: BLE001 - the original error matters; cleanup() removes leftovers
                pass
            raise
        if progress is not None:
            progress(n)
        return self._open(self._row(snap_id))

    def snapshot(self, tenant: str, session: str, query: str) -> "StoreSnapshot":
        """The published snapshot for this key, or ``snapshot_expired`` (gone, expired or never stored).

        A snapshot replaced while its documents were read is not an answer, but its key still has one (the
        replacement): the key is looked up again, up to :data:`LOOKUP_ATTEMPTS` times.
        """
        key = SnapshotKey.checked(tenant, session, query)
        for _ in range(LOOKUP_ATTEMPTS):
            snap = self._read(self._lookup(key))
            if snap is not None:
                return snap
        raise EvidenceError("snapshot_expired")  # replaced LOOKUP_ATTEMPTS times while being read

    def _open(self, row: SnapRow | None) -> "StoreSnapshot":
        snap = self._read(row)
        if snap is None:
            raise EvidenceError("snapshot_expired")
        return snap

    def _read(self, row: SnapRow | None) -> "StoreSnapshot | None":
        """The snapshot of ``row`` with its documents; None if it was replaced or deleted while they were read."""
        if row is None or not alive(row.created_us, row.expires_us, self.now_us()):
            raise EvidenceError("snapshot_expired")
        from .snapshot import StoreSnapshot

        docs = self._documents(row.snap_id)
        if self._row(row.snap_id) is None:
            return None
        return StoreSnapshot(self, row, docs)

    def delete_snapshot(self, tenant: str, session: str, query: str) -> bool:
        return self._delete_key(SnapshotKey.checked(tenant, session, query))

    def cleanup(self) -> dict[str, int]:
        """Remove every snapshot, artifact and workspace whose ``expires_at <= now``, and every unpublished snapshot
        begun :data:`STALE_WRITE` ago or earlier, with its documents and chunks; say how many of each."""
        now = self.now_us()
        return self._cleanup(now, now - STALE_WRITE // timedelta(microseconds=1))

    def delete_session(self, tenant: str, session: str) -> dict[str, int]:
        """Remove everything one session left: snapshots (published or not), artifacts, ledgers, and the
        workspace of every user of the session."""
        return self._delete_session(check_text(tenant, "tenant", lo=1, hi=MAX_KEY_CHARS),
                                    check_text(session, "session", lo=1, hi=MAX_KEY_CHARS))

    # ledgers and workspaces (their logic lives in store/ledger.py and store/workspace.py) ----------------
    def ledger(self, tenant: str, session: str, task: str, budget=None):
        from .ledger import StoreLedger

        return StoreLedger(self, tenant, session, task, budget)

    def workspace(self, principal: Principal, session: str, *, ttl: timedelta = DEFAULT_TTL):
        from .workspace import TaskWorkspace

        return TaskWorkspace(self, principal, session, ttl=ttl)

    # artifacts -------------------------------------------------------------------------------------------
    def put_artifact(self, tenant: str, session: str, content: str, *, summary: str = "",
                     ttl: timedelta = DEFAULT_TTL) -> dict[str, Any]:
        from .artifacts import put_artifact

        return put_artifact(self, tenant, session, content, summary=summary, ttl=ttl)

    def read_artifact(self, tenant: str, session: str, artifact_id: str, offset: int = 0,
                      limit: int = 800) -> dict[str, Any]:
        from .artifacts import read_artifact

        return read_artifact(self, tenant, session, artifact_id, offset, limit)

    def delete_artifact(self, tenant: str, session: str, artifact_id: str) -> bool:
        from .artifacts import artifact_key

        return self._delete_artifact(*artifact_key(tenant, session, artifact_id))

    def stats(self) -> dict[str, int]:
        """How many rows the store holds, of every kind (an operator's check that nothing is left over):
        published and ``unpublished`` snapshots, documents and chunks (of both), artifacts, ledgers, workspaces
        and their files. It counts every row, so on a large store it takes a while."""
        return self._stats()

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

    # -- storage primitives: what a backend implements ---------------------------------------------------
    @abstractmethod
    def _begin(self, key: SnapshotKey, created_us: int, expires_us: int) -> int: ...
    @abstractmethod
    def _add(self, snap_id: int, docs: list[DocRow], chunks: list[ChunkRow]) -> None:
        """Add one batch to the unpublished snapshot; ``snapshot_expired`` (nothing added) if it is gone."""
    @abstractmethod
    def _publish(self, snap_id: int) -> None:
        """Publish the unpublished snapshot, dropping its key's previous one; ``snapshot_expired`` if it is gone."""
    @abstractmethod
    def _discard(self, snap_id: int) -> None:
        """Remove an unpublished snapshot and whatever rows it has (nothing if it was published)."""
    @abstractmethod
    def _lookup(self, key: SnapshotKey) -> SnapRow | None: ...
    @abstractmethod
    def _row(self, snap_id: int) -> SnapRow | None:
        """The snapshot's row if it is still published (not replaced, deleted or cleaned up)."""
    @abstractmethod
    def _documents(self, snap_id: int) -> list[DocRow]: ...
    @abstractmethod
    def _chunks(self, snap_id: int, doc_no: int, lo: int, hi: int) -> list[tuple[int, str, str]]:
        """``(chunk_no, body, sha256)`` for chunks ``lo..hi`` (inclusive) of one document, in order."""
    @abstractmethod
    def _candidates(self, snap_id: int, term: str) -> Iterable[tuple[int, int]]:
        """``(doc_no, chunk_no)`` of every chunk whose body contains ``term`` (extra rows are harmless)."""
    @abstractmethod
    def _delete_key(self, key: SnapshotKey) -> bool: ...
    @abstractmethod
    def _cleanup(self, now_us: int, stale_us: int) -> dict[str, int]:
        """Remove what expired at ``now_us`` and unpublished snapshots begun at ``stale_us`` or earlier; an
        unpublished snapshot goes with its documents and chunks, and its writer's next batch is refused."""
    @abstractmethod
    def _stats(self) -> dict[str, int]: ...
    @abstractmethod
    def _delete_session(self, tenant: str, session: str) -> dict[str, int]: ...
    @abstractmethod
    def _put_artifact(self, row: tuple) -> None: ...
    @abstractmethod
    def _get_artifact(self, tenant: str, session: str, artifact_id: str) -> tuple | None: ...
    @abstractmethod
    def _delete_artifact(self, tenant: str, session: str, artifact_id: str) -> bool: ...
    @abstractmethod
    def _ledger_open(self, tenant: str, session: str, task: str, limits: tuple) -> tuple[int, tuple]: ...
    @abstractmethod
    def _ledger_txn(self, lid: int):
        """A context manager holding the ledger's lock; yields a :class:`LedgerTxn`."""
    @abstractmethod
    def _ledger_counters(self, lid: int) -> dict[str, int]: ...
    @abstractmethod
    def _ledger_entries(self, lid: int) -> list[tuple]: ...
    @abstractmethod
    def _ledger_excerpts(self, lid: int) -> list[tuple]: ...
    @abstractmethod
    def _ledger_reads(self, lid: int, doc_id: str | None = None) -> list[tuple[str, str, int, int, str]]: ...
    # A workspace is keyed by ``WsKey = (tenant, session, owner)``: the principal's user who opened it.
    @abstractmethod
    def _ws_txn(self, ws: WsKey):
        """A context manager holding the workspace's lock; yields a :class:`WorkspaceTxn`."""
    @abstractmethod
    def _ws_state(self, ws: WsKey) -> tuple[int, int, int] | None:
        """``(created_us, expires_us, version)`` of the workspace, if it exists."""
    @abstractmethod
    def _ws_files(self, ws: WsKey) -> list[tuple]: ...
    @abstractmethod
    def _ws_file(self, ws: WsKey, path: str) -> tuple | None: ...
