"""What every module of the store shares, and imports from here only: limits, validation, times and TTLs,
keys, rows and chunking. Notebook 11; the rules are stated in :mod:`evidence_lib.store._base`.

It imports nothing else of the store, so the store's modules never import each other in a circle: ``base``
(the interface) imports ``snapshot``, ``workspace`` and ``artifacts``, and all of them import this module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from hashlib import sha256
from typing import Any, Protocol

from .._access import Access, parse_access
from .._documents import Document
from .._errors import EvidenceError
from .._ids import MAX_DOC_ID_CHARS, check_doc_id
from .._index import MAX_STORED_BYTES, PREVIEW_CHARS, sha256_hex
from .._text import CJK_CLASS, CJK_RANGES, is_cjk
from .._toolkit import clean_text

__all__ = ["ARTIFACT_PREFIX", "CHUNK_CHARS", "DEFAULT_STORE_TTL", "EPOCH", "GRAM_CLASS", "GRAM_RANGES_ID",
           "INT64_MAX", "INT64_MIN", "MAX_GRAM_CHARS", "MAX_KEY_CHARS", "MAX_STORED_TITLE_CHARS", "MAX_US",
           "MIN_INDEXED_CHARS", "OVERLAP_CHARS", "OWNER_PREFIX", "ChunkRow", "DocRow", "LedgerStorage", "LedgerTxn",
           "SnapRow", "SnapshotKey", "SnapshotReader", "SnapshotStorage", "TaskTxn", "WorkspaceStorage", "WorkspaceTxn",
           "WsKey",
           "access_from_json", "access_json", "alive", "artifact_query", "check_int64", "check_text", "chunk_rows",
           "cjk_grams", "document_row", "expiry_us", "from_us", "gram_term", "is_artifact_query", "owner_session",
           "session_of", "sha256_text", "system_clock", "to_us", "ttl_us"]

CHUNK_CHARS = 4096
OVERLAP_CHARS = 127
#: Trigram indexes need at least this many characters. Shorter terms made of CJK characters are served by the gram
#: postings (:func:`gram_term`); other short terms take the backend's exact fallback (every chunk is checked).
MIN_INDEXED_CHARS = 3
#: The gram postings hold every CJK character of a chunk and every two adjacent ones: terms up to this long.
MAX_GRAM_CHARS = 2
#: How long a store keeps what it is given (snapshots, artifacts, workspaces, ledgers) when no TTL is passed.
DEFAULT_STORE_TTL = timedelta(hours=24)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_KEY_CHARS = 256
#: The longest title a store accepts (a listing shows at most ``tools.MAX_TITLE_CHARS`` of it).
MAX_STORED_TITLE_CHARS = 4096
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The last representable time (``datetime.max``, in UTC) in microseconds: no expiry lies past it.
MAX_US = (datetime.max.replace(tzinfo=UTC) - EPOCH) // timedelta(microseconds=1)


def system_clock() -> datetime:
    """The wall clock, for production callers; tests and notebooks inject a ManualClock instead."""
    return datetime.now(UTC)


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
    """The series' one content hash (:func:`evidence_lib._index.sha256_hex`) of ``text``'s UTF-8 bytes."""
    return sha256_hex(text)


@dataclass(frozen=True)
class SnapshotKey:
    """What a snapshot is filed under. The model never names it: the application binds it."""

    tenant: str
    session: str
    query: str

    @classmethod
    def checked(cls, tenant: Any, session: Any, query: Any) -> SnapshotKey:
        """A caller's key: queries of the reserved :data:`ARTIFACT_PREFIX` are the store's own (its artifacts)."""
        key = cls(check_text(tenant, "tenant", lo=1, hi=MAX_KEY_CHARS),
                  check_text(session, "session", lo=1, hi=MAX_KEY_CHARS),
                  check_text(query, "query", lo=0, hi=4 * MAX_KEY_CHARS))
        if is_artifact_query(key.query):
            raise EvidenceError("invalid_arguments", problems=[{"field": "query", "problem": "reserved"}])
        return key


#: The query prefix of an artifact's snapshot (written by the schema 5 -> 6 migration): an artifact is the one-document
#: snapshot ``(tenant, session, ARTIFACT_PREFIX + artifact_id)``. It starts with a control character (RS), which no
#: caller's query needs; :meth:`SnapshotKey.checked` refuses it, so no caller's snapshot can replace an artifact.
ARTIFACT_PREFIX = "\x1eartifact/"


def artifact_query(artifact_id: str) -> str:
    """The query under which the store keeps the artifact ``artifact_id`` (schema 5's artifacts; large results are now :class:`~evidence_lib.store.ToolResults`)."""
    return ARTIFACT_PREFIX + artifact_id


def is_artifact_query(query: str) -> bool:
    """Whether a stored snapshot's query names an artifact (:data:`ARTIFACT_PREFIX`): counted as one."""
    return query.startswith(ARTIFACT_PREFIX)


@dataclass(frozen=True)
class SnapRow:
    snap_id: int
    key: SnapshotKey
    created_us: int
    expires_us: int


#: The first part of an owner-qualified session key (:func:`owner_session`).
OWNER_PREFIX = "offload"
_OWNER_KEY = re.compile(rf"{OWNER_PREFIX}/(\d+):", re.S)


def owner_session(session: str, user: str) -> str:
    """The store session key of ``user``'s own rows in ``session`` (the offload middleware's results and task
    ledgers, notebook 12): length-prefixed, so no choice of session and user names collides with another
    (``("a/b", "c")`` and ``("a", "b/c")`` differ)."""
    return f"{OWNER_PREFIX}/{len(user)}:{user}/{session}"


def session_of(key: str) -> str:
    """The session a stored session key belongs to: ``session`` for :func:`owner_session` ``(session, user)``,
    else the key itself. :meth:`~evidence_lib.store.EvidenceStore.delete_session` removes both."""
    m = _OWNER_KEY.match(key)
    if m is None:
        return key
    cut = m.end() + int(m[1])
    return key[cut + 1:] if key[cut: cut + 1] == "/" else key


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
    """Stored grants read back with the one strict parser (:func:`evidence_lib._access.parse_access`)."""
    return parse_access(raw)


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
    doc_id = check_doc_id(check_text(doc.doc_id, "doc_id", lo=1, hi=MAX_DOC_ID_CHARS))
    title = check_text(doc.title, "title", hi=MAX_STORED_TITLE_CHARS)
    revision = check_text(doc.revision, "revision", lo=1, hi=MAX_KEY_CHARS)  # an empty one could never be cited
    text = check_text(doc.text, "text")
    raw = text.encode("utf-8")
    if len(raw) > MAX_STORED_BYTES:
        raise ValueError(f"document {doc_id!r} is larger than {MAX_STORED_BYTES:,} bytes")
    if doc.access is not None and doc.access.tenant != tenant:
        raise ValueError(f"document {doc_id!r} grants access in another tenant than the snapshot's")
    row = (doc_no, doc_id, title, revision, len(text), len(raw), sha256_hex(raw),
           text[:PREVIEW_CHARS], access_json(doc.access))
    return row, chunk_rows(doc_no, text)


# -- CJK gram postings ---------------------------------------------------------------------------------------
#: The characters the gram postings index: :data:`evidence_lib._text.CJK_RANGES` (Han, kana, hangul, bopomofo,
#: CJK punctuation, fullwidth forms), as a regular-expression class (Python's and PostgreSQL's alike).
GRAM_CLASS = CJK_CLASS
#: A fingerprint of those ranges, kept in a store's ``store_meta``: postings built for other ranges are refused.
GRAM_RANGES_ID = sha256(repr(CJK_RANGES).encode()).hexdigest()[:16]
_NOT_CJK = re.compile(f"[^{GRAM_CLASS}]+")


def gram_term(term: str) -> bool:
    """Whether the gram postings serve ``term``: 1 or 2 characters, each of them CJK (:func:`is_cjk`)."""
    return 1 <= len(term) <= MAX_GRAM_CHARS and all(map(is_cjk, term))


def cjk_grams(body: str) -> set[str]:
    """The CJK grams of one chunk: every CJK character, and every two adjacent CJK characters.

    A chunk contains a 1- or 2-character CJK term exactly when the term is one of its grams, so the postings of a
    gram name exactly the chunks to fetch. A bigram that straddles a chunk boundary lies in the earlier chunk's
    overlap, which is where a match starting there is reported (the scan's offsets, each once).
    """
    grams: set[str] = set()
    for run in _NOT_CJK.split(body):
        grams.update(run)
        grams.update(map(str.__add__, run, run[1:]))
    return grams


class SnapshotReader(Protocol):
    """One read transaction of the page-serving path, what :meth:`~evidence_lib.store._base.StoreBackend.reading`
    yields: whether a snapshot is still published, the index's candidate chunks of a term, and chunks by runs
    ``(doc_no, lo, hi)``; the ``_many`` forms ask for several snapshots in one query (each row starts with its id)."""

    def published(self, snap_id: int) -> bool: ...
    def candidates(self, snap_id: int, term: str) -> list[tuple[int, int]]: ...
    def candidates_many(self, items: list[tuple[int, str]]) -> list[tuple[int, int, int]]: ...
    def chunks(self, snap_id: int, spans: list[tuple[int, int, int]]) -> list[tuple[int, int, str, str]]: ...
    def chunks_many(self, wanted: list[tuple[int, list[tuple[int, int, int]]]]
                    ) -> list[tuple[int, int, int, str, str]]: ...


class LedgerTxn(Protocol):
    """A ledger's transaction, what :meth:`~evidence_lib.store._base.StoreBackend.ledger_txn` yields under the
    ledger's lock: its stored counters (None: the ledger is gone), its reads, and one entry's write."""

    @property
    def counters(self) -> dict[str, int] | None: ...
    def doc_reads(self, doc_id: str) -> int: ...
    def reads_of(self, doc_id: str, sha256: str) -> list[tuple[Any, ...]]: ...
    def write(self, row: tuple[Any, ...], counters: dict[str, int],
              excerpts: Sequence[tuple[Any, ...]] = ()) -> None: ...


class TaskTxn(Protocol):
    """A task's transaction, what :meth:`~evidence_lib.store._base.StoreBackend.task_txn` yields under the task's
    lock: its stored state, JSON text (None: the task is gone), and its write."""

    @property
    def state(self) -> str | None: ...
    def write(self, state: str) -> None: ...


class WorkspaceTxn(Protocol):
    """A workspace's transaction, what :meth:`~evidence_lib.store._base.StoreBackend.workspace_txn` yields under the
    workspace's lock: its state ``(created_us, expires_us, version)`` (None: not created yet) and its files."""

    @property
    def state(self) -> tuple[int, int, int] | None: ...
    def files(self) -> list[tuple[Any, ...]]: ...
    def put(self, row: tuple[Any, ...]) -> None: ...
    def delete(self, path: str) -> None: ...
    def set_state(self, created: int, expires: int, version: int) -> None: ...


class SnapshotStorage(Protocol):
    """The part of a store a :class:`~evidence_lib.store._snapshot.StoreSnapshot` reads through (every
    :class:`~evidence_lib.store._base.EvidenceStore` is one)."""

    backend: str

    def now_us(self) -> int: ...
    def reading(self) -> AbstractContextManager[SnapshotReader]: ...


class LedgerStorage(Protocol):
    """The part of a store a :class:`~evidence_lib.store._ledger.StoreLedger` keeps its counters and entries in (the
    ledger primitives of :class:`~evidence_lib.store._base.StoreBackend`; every ``EvidenceStore`` is one)."""

    backend: str

    def now_us(self) -> int: ...
    def ledger_open(self, tenant: str, session: str, task: str, limits: tuple[Any, ...], now_us: int,
                    expires_us: int) -> tuple[int, tuple[Any, ...]]: ...
    def ledger_extend(self, lid: int, until_us: int, now_us: int) -> bool: ...
    def ledger_txn(self, lid: int) -> AbstractContextManager[LedgerTxn]: ...
    def ledger_counters(self, lid: int) -> dict[str, int] | None: ...
    def ledger_entries(self, lid: int) -> list[tuple[Any, ...]]: ...
    def ledger_excerpts(self, lid: int) -> list[tuple[Any, ...]]: ...
    def ledger_doc_reads(self, lid: int, doc_id: str) -> int: ...
    def ledger_reads_of(self, lid: int, doc_id: str, sha256: str) -> list[tuple[str, str, int, int, str]]: ...


class WorkspaceStorage(Protocol):
    """The part of a store a :class:`~evidence_lib.store._workspace.TaskWorkspace` keeps its files in (the workspace
    primitives of :class:`~evidence_lib.store._base.StoreBackend`; every ``EvidenceStore`` is one)."""

    backend: str

    def now_us(self) -> int: ...
    def workspace_txn(self, ws: WsKey) -> AbstractContextManager[WorkspaceTxn]: ...
    def workspace_state(self, ws: WsKey) -> tuple[int, int, int] | None: ...
    def workspace_files(self, ws: WsKey) -> list[tuple[Any, ...]]: ...
    def workspace_file(self, ws: WsKey, path: str) -> tuple[Any, ...] | None: ...
