"""The evidence index: a snapshot of the candidates on disk, with hashes. Introduced in notebook 02.

``EvidenceIndex.build`` writes each document's UTF-8 bytes to ``<root>/<doc_id>.txt`` (the
article's layout, so a learner can edit a file and watch the next read be refused) and records
its sha256 and size. Reads look a doc_id up in the index only; a doc_id is never joined into a
path. A stored file is opened without following symlinks, only if it is a regular file of the
recorded size, and never read past that size.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol, runtime_checkable

from . import _calls as calls
from ._access import Access, Action, Principal, allowed
from ._documents import Document
from ._errors import EvidenceError
from ._ids import check_doc_id, check_revision
from ._locate import LocateOptions, find
from ._paging import check_int

__all__ = ["MAX_STORED_BYTES", "PREVIEW_CHARS", "Decoded", "EvidenceIndex", "IndexEntry", "IndexProtocol", "Snapshot",
           "read_stored", "sha256_hex", "text_range"]

PREVIEW_CHARS = 40
#: Largest document the index stores (UTF-8 bytes); bigger ones are refused at build time.
MAX_STORED_BYTES = 64 * 1024 * 1024
#: A doc_id that is also a safe file stem on disk (a subset of the doc_id grammar, :mod:`evidence_lib._ids`).
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
#: What an in-memory index's builder made of one document: its bytes object, the text they encode, their sha256.
Decoded = tuple[bytes, str, str]


def sha256_hex(data: bytes | str) -> str:
    """The series' one content hash: sha256 of ``data`` (a ``str`` is hashed as its UTF-8 bytes), in hex."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def read_stored(path: Path, root: Path, size: int = -1, max_bytes: int = MAX_STORED_BYTES) -> bytes:
    """The bytes of one stored file, or ``OSError``: never through a symlink, never from a FIFO or device,
    never from outside ``root``, never more than ``size`` (when known) or ``max_bytes``.

    The size is checked with ``fstat`` on the opened file, before a single byte is read.
    """
    if Path(os.path.realpath(path.parent)) != Path(os.path.realpath(root)):
        raise OSError("stored file is not directly inside the store root")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        cap = max_bytes if size < 0 else min(size, max_bytes)
        if not stat.S_ISREG(st.st_mode) or st.st_size > cap or (size >= 0 and st.st_size != size):
            raise OSError("stored file is not a regular file of the recorded size")
        chunks, left = [], cap + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > cap:
            raise OSError("stored file grew while it was read")
        return data
    finally:
        os.close(fd)


@dataclass(frozen=True)
class IndexEntry:
    """What the index knows about one document, without its text."""

    doc_id: str
    title: str
    revision: str
    chars: int
    sha256: str
    preview: str
    access: Access | None = field(default=None, repr=False)
    path: Path = field(default=Path(), repr=False, compare=False)
    bytes: int = field(default=-1, repr=False)  # stored UTF-8 size; -1: unknown (checked by hash only)

    def manifest_entry(self) -> dict[str, object]:
        """The manifest row, keys in the article's order."""
        return {
            "doc_id": self.doc_id,
            "title": self.title,
            "revision": self.revision,
            "chars": self.chars,
            "sha256": self.sha256,
            "preview": self.preview,
        }


@dataclass(frozen=True)
class Snapshot:
    """One verified read: the entry and the text decoded from the very bytes that were hashed."""

    entry: IndexEntry
    text: str


@runtime_checkable
class IndexProtocol(Protocol):
    """What the evidence tools, citations and the checker ask of a set of evidence.

    One protocol (the tools of notebook 02 take any object speaking it), implemented by :class:`EvidenceIndex` (files or memory, also each query's snapshot of a
    retriever), the store's ``StoreSnapshot`` and the ``TaskWorkspace``. ``principal`` is the caller the
    application bound into the tools; an unknown and a forbidden ``doc_id`` raise the same
    ``EvidenceError("unknown_doc_id")``. Texts are real ``str``: :meth:`snapshot` returns the whole verified
    text, :meth:`text` a verified range of it (a store fetches only the part it needs).
    """

    def visible(self, principal: Principal | None = None, action: Action = "discover") -> list[IndexEntry]:
        """Entries ``principal`` may ``action``, in rank (or build) order."""
        ...

    def entry(self, doc_id: str, principal: Principal | None = None, action: Action = "read") -> IndexEntry:
        """One entry (metadata only)."""
        ...

    def snapshot(self, doc_id: str, principal: Principal | None = None) -> Snapshot:
        """The entry and the whole text, checked against the recorded sha256 (else ``evidence_changed``)."""
        ...

    def text(self, doc_id: str, principal: Principal | None = None, start: int = 0, end: int | None = None) -> str:
        """``text[start:end]`` of one readable document, verified (``end=None``: to the end)."""
        ...

    def find(self, term: str, doc_ids: Iterable[str], principal: Principal | None = None, *,
             first_only: bool = False, options: LocateOptions | None = None) -> Iterator[tuple[str, int]]:
        """``(doc_id, offset)`` of ``term`` in ``doc_ids``, in that order: the same hits as the scan."""
        ...


def text_range(entry: IndexEntry, start: int, end: int | None) -> tuple[int, int]:
    """``[start, end)`` checked against ``entry`` (ints, ``0 <= start <= end <= chars``): ``invalid_page_bounds``."""
    end = entry.chars if end is None else end
    check_int(start, 0, entry.chars)
    check_int(end, start, entry.chars)
    return start, end


class EvidenceIndex:
    """A fixed candidate set: on disk (:meth:`build`, the article's layout) or in memory (:meth:`in_memory`,
    one query's snapshot of a retriever's documents). Hand it to :func:`evidence_tools`."""

    def __init__(self, root: Path | None, entries: Iterable[IndexEntry],
                 blobs: dict[str, bytes] | None = None, decoded: Mapping[str, Decoded] | None = None) -> None:
        self.root = Path(root) if root is not None else None
        self._blobs = blobs  # in memory: doc_id -> the exact bytes that were hashed
        #: in memory: doc_id -> what the builder hashed and decoded (:meth:`_read_verified`); never changed after
        self._decoded: Mapping[str, Decoded] = decoded or {}
        self._entries: dict[str, IndexEntry] = {}
        for e in entries:
            if e.doc_id in self._entries:
                raise ValueError(f"duplicate doc_id {e.doc_id!r}")
            self._entries[e.doc_id] = e

    @classmethod
    def build(cls, documents: Iterable[Document], root: str | Path) -> EvidenceIndex:
        """Write every document to ``<root>/<doc_id>.txt`` and record its sha256."""
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        entries = []
        for doc in documents:
            if not _SAFE_ID.fullmatch(check_doc_id(doc.doc_id)):  # one error for a malformed id, as the stores
                raise EvidenceError("invalid_arguments", problems=[{"field": "doc_id", "problem": "not_a_file_stem"}])
            check_revision(doc.revision)  # an empty one could never be cited
            raw = doc.text.encode("utf-8")
            if len(raw) > MAX_STORED_BYTES:
                raise ValueError(f"document {doc.doc_id!r} is larger than {MAX_STORED_BYTES:,} bytes")
            path = root / f"{doc.doc_id}.txt"
            path.write_bytes(raw)
            entries.append(
                IndexEntry(
                    doc_id=doc.doc_id,
                    title=doc.title,
                    revision=doc.revision,
                    chars=len(doc.text),
                    sha256=sha256_hex(raw),
                    preview=doc.text[:PREVIEW_CHARS],
                    access=doc.access,
                    path=path,
                    bytes=len(raw),
                )
            )
        return cls(root, entries)

    @classmethod
    def in_memory(cls, documents: Iterable[Document]) -> EvidenceIndex:
        """Keep every document's bytes in memory (no files): a snapshot for one query. Notebook 08. A malformed
        doc_id is ``EvidenceError("invalid_arguments")``, as in the stores (an ``EvidenceError`` is a ``ValueError``)."""
        entries, blobs, decoded = [], {}, {}
        for doc in documents:
            check_doc_id(doc.doc_id)
            check_revision(doc.revision)  # an empty one could never be cited
            raw = doc.text.encode("utf-8")
            digest = sha256_hex(raw)
            if len(raw) > MAX_STORED_BYTES:
                raise ValueError(f"document {doc.doc_id!r} is larger than {MAX_STORED_BYTES:,} bytes")
            if doc.doc_id in blobs:
                raise ValueError(f"duplicate doc_id {doc.doc_id!r}")
            blobs[doc.doc_id] = raw
            decoded[doc.doc_id] = (raw, doc.text, digest)  # reads serve this text without hashing it again
            entries.append(IndexEntry(doc.doc_id, doc.title, doc.revision, len(doc.text), digest,
                                      doc.text[:PREVIEW_CHARS], doc.access, bytes=len(raw)))
        return cls(None, entries, blobs, decoded)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[IndexEntry]:
        return iter(self._entries.values())

    def __repr__(self) -> str:
        return f"EvidenceIndex({len(self)} documents)"

    def visible(self, principal: Principal | None = None, action: Action = "discover") -> list[IndexEntry]:
        """Entries ``principal`` may ``action``, in build order. Filtering happens before anything is shown."""
        return [e for e in self._entries.values() if allowed(e.access, principal, action)]

    def entry(self, doc_id: str, principal: Principal | None = None, action: Action = "read") -> IndexEntry:
        """Look ``doc_id`` up; unknown and forbidden raise the very same error."""
        e = self._entries.get(doc_id) if isinstance(doc_id, str) else None
        if e is None or not allowed(e.access, principal, action):
            raise EvidenceError("unknown_doc_id")
        return e

    def serving(self, *, neighbours: bool = False) -> AbstractContextManager[calls.Call]:
        """One tool call of its own (:func:`evidence_lib._calls.serving`; every tool call opens one): each document is
        read, hashed and decoded once however many windows the call cuts from it (a compact locate cuts one per
        match), as a store snapshot fetches each chunk once. The access check still runs on every use; the next call,
        and any task or thread started inside this one, reads and verifies again. ``neighbours`` is a store's
        concern."""
        return calls.serving(neighbours=neighbours)

    def snapshot(self, doc_id: str, principal: Principal | None = None) -> Snapshot:
        """Read the stored bytes once, check them against the index, decode those same bytes (once per call
        inside :meth:`serving`)."""
        return self._verified(self.entry(doc_id, principal, "read"))

    def _verified(self, e: IndexEntry, memo: dict[str, Snapshot] | None = None) -> Snapshot:
        """``e``'s text, read and checked (once per call inside :meth:`serving`); ``e`` was looked up already.
        ``memo``: the call's, looked up by the caller (:meth:`_reader`)."""
        if memo is None:
            memo = self._memo()
            if memo is None:
                return self._read_verified(e)
        got = memo.get(e.doc_id)
        if got is None:
            got = memo[e.doc_id] = self._read_verified(e)
        return got

    def _memo(self) -> dict[str, Snapshot] | None:
        """What the current tool call keeps of this index (doc_id -> verified text), or ``None`` outside one."""
        call = calls.current()
        return None if call is None else call.kept.setdefault(self, {})

    def _reader(self, principal: Principal | None = None) -> Callable[[str], str]:
        """``doc_id -> `` its verified text, for one scan over many documents (:meth:`find`): the tool call's scope
        is looked up once, not per document; the access check still runs per document."""
        memo = self._memo()
        if memo is None:
            return lambda doc_id: self._read_verified(self.entry(doc_id, principal, "read")).text
        return lambda doc_id: self._verified(self.entry(doc_id, principal, "read"), memo).text

    def _read_verified(self, e: IndexEntry) -> Snapshot:
        """``e``'s bytes checked against its sha256 and decoded: a stored file on every read (it may be edited). Bytes in
        memory that are still the very object the builder hashed (``decoded``) hold what was hashed (a ``bytes`` never
        changes): they are served as the builder's text, checked by the sha256 computed then (issue 33: a locate over
        3,000 documents re-hashed and re-decoded every one on every call). Bytes replaced since are hashed again."""
        try:
            if self._blobs is not None:
                raw = self._blobs[e.doc_id]
            elif self.root is not None:
                raw = read_stored(e.path, self.root, e.bytes)
            else:  # made with neither its texts' bytes nor the folder they are stored in: no text to serve
                raise KeyError(e.doc_id)
        except (OSError, KeyError):
            raise EvidenceError("evidence_changed", doc_id=e.doc_id, revision=e.revision) from None
        known = self._decoded.get(e.doc_id)
        if known is not None and known[0] is raw:
            text = known[1] if known[2] == e.sha256 else None
        else:
            text = raw.decode("utf-8") if sha256_hex(raw) == e.sha256 else None  # never decoded unless it matches
        if text is None:
            raise EvidenceError("evidence_changed", doc_id=e.doc_id, revision=e.revision)
        return Snapshot(e, text)

    def text(self, doc_id: str, principal: Principal | None = None, start: int = 0, end: int | None = None) -> str:
        """A verified range of one document (a stored file is read and re-hashed whole; bytes held in memory were
        hashed when the index was built)."""
        e = self.entry(doc_id, principal, "read")
        start, end = text_range(e, start, end)
        return self._verified(e).text[start:end]  # looked up once: the access check above is this read's

    def find(self, term: str, doc_ids: Iterable[str], principal: Principal | None = None, *,
             first_only: bool = False, options: LocateOptions | None = None) -> Iterator[tuple[str, int]]:
        """Where ``term`` occurs in ``doc_ids`` (in that order): the scan, reading and verifying each document.

        The hook ``locate_evidence`` uses; an indexed store overrides it and must return the same hits.
        """
        read = self._reader(principal)
        return find(((d, read(d)) for d in doc_ids), term, options or LocateOptions(), first_only)

    # Operator-side helpers: never exposed as tools.
    def set_access(self, doc_id: str, access: Access | None) -> None:
        """Change who may see ``doc_id`` (e.g. revoke between search and read)."""
        self._entries[doc_id] = replace(self._entries[doc_id], access=access)

    def stored_file(self, doc_id: str) -> Path:
        """Where the operator keeps ``doc_id`` (for the changed-file experiment; not a tool)."""
        return self._entries[doc_id].path
