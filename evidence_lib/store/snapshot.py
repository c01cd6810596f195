"""A published snapshot as an index: the object ``evidence_tools`` takes, backed by any store. Notebook 11.

``StoreSnapshot`` speaks :class:`~evidence_lib.index.IndexProtocol` (``visible``, ``entry``, ``snapshot``, ``text``,
``find``) from the store. A page or an excerpt fetches only the chunks it covers, each checked against the sha256
recorded with it; a whole text is checked against the document's sha256.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..access import Action, Principal, allowed
from ..errors import EvidenceError
from ..index import IndexEntry, Snapshot, sha256_hex, text_range
from ..locate import LocateOptions, find as scan_find, find_all, wrap_points
from .common import CHUNK_CHARS, MIN_INDEXED_CHARS, OVERLAP_CHARS, DocRow, SnapRow, SnapshotStorage, \
    access_from_json, alive, check_text, from_us, gram_term


def literal_pieces(term: str) -> list[str]:
    """``term`` cut at its wrap points (:func:`~evidence_lib.locate.wrap_points`): what every wrapped match of it
    holds literally (a wrap may only come between two pieces)."""
    bounds = [0, *(i for i, _ in wrap_points(term)), len(term)]
    return [term[a:b] for a, b in zip(bounds, bounds[1:])]


def indexable(piece: str) -> bool:
    """Whether a store's substring index answers ``piece`` without a check of every chunk: a 1- or 2-character
    CJK term (the gram postings) or a term of trigram length that fits a chunk's overlap."""
    return gram_term(piece) or MIN_INDEXED_CHARS <= len(piece) <= OVERLAP_CHARS + 1


class StoreSnapshot:
    """One published snapshot, usable as the ``index`` of :func:`evidence_tools` (``store.put_snapshot`` and
    ``store.snapshot`` return one: notebook 11).

    Its entries are fixed when it is opened (a snapshot never changes; new content is a new snapshot); every
    call checks its expiry, and every call that touches the store that it is still published: ``snapshot_expired``.
    A principal of another tenant sees nothing: its doc_ids are ``unknown_doc_id``, like ids never stored.
    """

    def __init__(self, store: SnapshotStorage, row: SnapRow, docs: list[DocRow]) -> None:
        self.store, self.row = store, row
        self._entries: dict[str, IndexEntry] = {}
        self._doc_no: dict[str, int] = {}
        for doc_no, doc_id, title, revision, chars, size, sha, preview, acc in sorted(docs):
            self._entries[doc_id] = IndexEntry(doc_id, title, revision, chars, sha, preview,
                                               access_from_json(acc), bytes=size)
            self._doc_no[doc_id] = doc_no

    key = property(lambda self: self.row.key)
    tenant = property(lambda self: self.row.key.tenant)
    created_at = property(lambda self: from_us(self.row.created_us))
    expires_at = property(lambda self: from_us(self.row.expires_us))

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[IndexEntry]:
        return iter(self._entries.values())

    def __repr__(self) -> str:
        return f"StoreSnapshot({self.store.backend}, {self.tenant!r}, {len(self)} documents)"

    def check_alive(self) -> None:
        """Refuse with ``snapshot_expired`` once the snapshot expired, was deleted, replaced or cleaned up."""
        self._check_clock()
        if self.store._row(self.row.snap_id) is None:
            raise EvidenceError("snapshot_expired")

    def _check_clock(self) -> None:
        if not alive(self.row.created_us, self.row.expires_us, self.store.now_us()):
            raise EvidenceError("snapshot_expired")

    def _mine(self, principal: Principal | None) -> bool:
        return principal is None or principal.tenant == self.tenant

    # -- the index protocol evidence_tools uses ----------------------------------------------------------
    def visible(self, principal: Principal | None = None, action: Action = "discover") -> list[IndexEntry]:
        self.check_alive()
        if not self._mine(principal):
            return []
        return [e for e in self._entries.values() if allowed(e.access, principal, action)]

    def entry(self, doc_id: str, principal: Principal | None = None, action: Action = "read") -> IndexEntry:
        """The entry (metadata only): expiry is checked on the clock; a deleted or replaced snapshot is noticed
        by the next call that touches the store (``visible``, ``find``, a read's chunk fetch)."""
        self._check_clock()
        return self._entry(doc_id, principal, action)

    def _entry(self, doc_id: str, principal: Principal | None, action: Action) -> IndexEntry:
        e = self._entries.get(doc_id) if isinstance(doc_id, str) else None
        if e is None or not self._mine(principal) or not allowed(e.access, principal, action):
            raise EvidenceError("unknown_doc_id")
        return e

    def snapshot(self, doc_id: str, principal: Principal | None = None) -> Snapshot:
        """The whole text, fetched and checked against the document's sha256 (tools read pages: :meth:`text`)."""
        e = self.entry(doc_id, principal, "read")
        text = self._range(e, 0, e.chars)
        if sha256_hex(text) != e.sha256:
            raise EvidenceError("evidence_changed", doc_id=e.doc_id, revision=e.revision)
        return Snapshot(e, text)

    def text(self, doc_id: str, principal: Principal | None = None, start: int = 0, end: int | None = None) -> str:
        """``text[start:end]``: only the chunks it covers are fetched, each checked against its own sha256."""
        e = self.entry(doc_id, principal, "read")
        start, end = text_range(e, start, end)
        if (start, end) == (0, e.chars):
            return self.snapshot(e.doc_id, principal).text
        return self._range(e, start, end)

    def _range(self, e: IndexEntry, start: int, stop: int) -> str:
        if start >= stop:
            return ""
        lo, hi = start // CHUNK_CHARS, (stop - 1) // CHUNK_CHARS
        bodies = self._chunk_bodies(e, self._doc_no[e.doc_id], lo, hi)
        return "".join(b[:CHUNK_CHARS] for b in bodies)[start - lo * CHUNK_CHARS: stop - lo * CHUNK_CHARS]

    def find(self, term: str, doc_ids: Iterable[str], principal: Principal | None = None, *,
             first_only: bool = False, options: LocateOptions | None = None) -> Iterator[tuple[str, int]]:
        """The same hits as the scan (:func:`evidence_lib.locate.find`), from the backend's substring index.

        Only chunks that contain ``term`` are fetched (and verified): the backend names them (trigrams for terms
        of 3 characters or more, CJK gram postings for 1- and 2-character CJK terms, a check of every chunk of
        the snapshot for other short terms). The index is literal. A wrapped locate (``wrapped=True``) of a term
        that can wrap (:func:`evidence_lib.locate.wrap_points`: a match may then hold line breaks the term does
        not) asks the index for the term's pieces between its wrap points (:func:`literal_pieces`: for ``上限``,
        ``上`` and ``限``) and scans only the documents holding every piece; a term none of whose pieces the index
        serves (a Latin word: its pieces are single letters), NFC matching and terms longer than
        ``OVERLAP_CHARS + 1`` fall back to the scan over verified full texts. A wrapped locate of a term that
        cannot wrap matches literally, so it stays indexed.
        """
        opts = options or LocateOptions()
        doc_ids = list(doc_ids)
        if opts.normalization == "none" and isinstance(term, str) and opts.wrapped and wrap_points(term):
            pieces = [p for p in literal_pieces(term) if indexable(p)]
            if pieces:
                check_text(term, "term")
                return self._wrapped(term, pieces, doc_ids, principal, first_only, opts)
        if (opts.normalization != "none" or not isinstance(term, str) or not 1 <= len(term) <= OVERLAP_CHARS + 1
                or (opts.wrapped and wrap_points(term))):
            return scan_find(((d, self.text(d, principal)) for d in doc_ids), term, opts, first_only)
        check_text(term, "term")
        return self._indexed(term, doc_ids, principal, first_only)

    def _wrapped(self, term: str, pieces: list[str], doc_ids: list[str], principal: Principal | None,
                 first_only: bool, opts: LocateOptions) -> Iterator[tuple[str, int]]:
        """A wrapped locate through the index: every match holds each of the term's ``pieces`` literally, so only
        the documents holding all of them (the index's answer for each) are scanned, over their verified texts.
        Document-level, not chunk-level: a wrap's indentation may push a match past a chunk's overlap."""
        self.check_alive()
        docs: set[int] | None = None
        for piece in sorted(set(pieces), key=len, reverse=True):  # the longer, the rarer: the smaller set first
            found = {doc_no for doc_no, _ in self.store._candidates(self.row.snap_id, piece)}
            docs = found if docs is None else docs & found
            if not docs:
                break
        for d in doc_ids:
            e = self._entry(d, principal, "read")  # every id is checked, in order, as the scan checks it
            if self._doc_no[e.doc_id] in (docs or ()):
                yield from scan_find([(e.doc_id, self.snapshot(e.doc_id, principal).text)], term, opts, first_only)

    def _indexed(self, term: str, doc_ids: list[str], principal: Principal | None,
                 first_only: bool) -> Iterator[tuple[str, int]]:
        self.check_alive()
        hits: dict[int, set[int]] = {}
        for doc_no, chunk_no in self.store._candidates(self.row.snap_id, term):
            hits.setdefault(doc_no, set()).add(chunk_no)
        for d in doc_ids:
            e = self._entry(d, principal, "read")  # checked alive once, above
            doc_no = self._doc_no[e.doc_id]
            if doc_no not in hits:
                continue
            for c in sorted(hits[doc_no]):
                (body,) = self._chunk_bodies(e, doc_no, c, c)
                found = False
                for off in find_all(body, term, first_only=False):
                    if off >= CHUNK_CHARS:  # starts in the next chunk: found there
                        break
                    yield e.doc_id, c * CHUNK_CHARS + off
                    found = True
                    if first_only:
                        break
                if first_only and found:
                    break

    def _chunk_bodies(self, e: IndexEntry, doc_no: int, lo: int, hi: int) -> list[str]:
        rows = self.store._chunks(self.row.snap_id, doc_no, lo, hi)
        if [r[0] for r in rows] != list(range(lo, hi + 1)):
            self.check_alive()  # gone since it was opened: say so; otherwise the stored chunks changed
            raise EvidenceError("evidence_changed", doc_id=e.doc_id, revision=e.revision)
        for _, body, sha in rows:
            if sha256_hex(body) != sha:
                raise EvidenceError("evidence_changed", doc_id=e.doc_id, revision=e.revision)
        return [r[1] for r in rows]
