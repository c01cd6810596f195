"""A published snapshot as an index: the object ``evidence_tools`` takes, backed by any store. Notebook 11.

``StoreSnapshot`` speaks :class:`~evidence_lib._index.IndexProtocol` (``visible``, ``entry``, ``snapshot``, ``text``,
``find``) from the store. A page or an excerpt fetches only the chunks it covers, each checked against the sha256
recorded with it; a whole text is checked against the document's sha256.

One page-serving path (issues 15 and 31): inside a tool call (:mod:`evidence_lib._calls`; :meth:`StoreSnapshot.serving`
opens one), every chunk is fetched and verified once, a locate asks the index for its candidates and fetches their
chunks in the same read transaction (in batches of :data:`BATCH_CHUNKS`, all in the call's one read transaction of
the store), and the check that the snapshot is still published is made once (a fetch that finds the chunks proves it:
a snapshot's chunks go in the transaction that removes it). A call therefore costs a fixed number of round trips,
whatever the number of its matches. What a call kept is the call's alone: closed with it, never seen by another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from .. import _calls as calls
from .._access import Action, Principal, allowed
from .._errors import EvidenceError
from .._index import IndexEntry, Snapshot, sha256_hex, text_range
from .._locate import LocateOptions, find_all, wrap_points
from .._locate import find as scan_find
from .._toolkit import clean_text
from ._common import (
    CHUNK_CHARS,
    MIN_INDEXED_CHARS,
    OVERLAP_CHARS,
    DocRow,
    SnapRow,
    SnapshotReader,
    SnapshotStorage,
    access_from_json,
    alive,
    check_text,
    from_us,
    gram_term,
)

__all__ = ["BATCH_CHUNKS", "StoreSnapshot", "indexable", "literal_pieces", "prefetch"]

#: Most chunks one statement of a locate fetches (its candidates' chunks, in the order of the documents): at least
#: ``tools.MAX_LOCATE_MATCHES``, so a compact locate's candidates come in one.
BATCH_CHUNKS = 512


def literal_pieces(term: str) -> list[str]:
    """``term`` cut at its wrap points (:func:`~evidence_lib._locate.wrap_points`): what every wrapped match of it
    holds literally (a wrap may only come between two pieces)."""
    bounds = [0, *(i for i, _ in wrap_points(term)), len(term)]
    return [term[a:b] for a, b in zip(bounds, bounds[1:])]


def indexable(piece: str) -> bool:
    """Whether a store's substring index answers ``piece`` without a check of every chunk: a 1- or 2-character
    CJK term (the gram postings) or a term of trigram length that fits a chunk's overlap."""
    return gram_term(piece) or MIN_INDEXED_CHARS <= len(piece) <= OVERLAP_CHARS + 1


@dataclass
class _Call:
    """What one call fetched and verified from one snapshot (kept on the :class:`~evidence_lib._calls.Call`): each
    chunk is fetched and hashed once per call."""

    alive: bool = False  # checked against the store in this call
    candidates: dict[str, set[tuple[int, int]]] = field(default_factory=dict)  # term -> the index's (doc_no, chunk_no)
    chunks: dict[tuple[int, int], str] = field(default_factory=dict)  # (doc_no, chunk_no) -> verified body
    texts: dict[int, str] = field(default_factory=dict)  # doc_no -> whole text, verified against its sha256


def _spans(pairs: Iterable[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """``(doc_no, lo, hi)`` runs of consecutive chunks covering ``pairs``: one condition per run in the query."""
    out: list[list[int]] = []
    for d, c in sorted(set(pairs)):
        if out and out[-1][0] == d and out[-1][2] == c - 1:
            out[-1][2] = c
        else:
            out.append([d, c, c])
    return [(d, lo, hi) for d, lo, hi in out]


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
        self._by_no: dict[int, IndexEntry] = {}
        for doc_no, doc_id, title, revision, chars, size, sha, preview, acc in sorted(docs):
            self._entries[doc_id] = IndexEntry(doc_id, title, revision, chars, sha, preview,
                                               access_from_json(acc), bytes=size)
            self._doc_no[doc_id] = doc_no
            self._by_no[doc_no] = self._entries[doc_id]

    key = property(lambda self: self.row.key,
                   doc="The snapshot's ``SnapshotKey``: tenant, session and query (notebook 11).")
    tenant = property(lambda self: self.row.key.tenant,
                      doc="The tenant that owns the snapshot; no other tenant sees it (notebook 11).")
    created_at = property(lambda self: from_us(self.row.created_us), doc="When it was published (notebook 11).")
    expires_at = property(lambda self: from_us(self.row.expires_us),
                          doc="When its TTL ends: from then on every read is refused (notebook 11).")

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[IndexEntry]:
        return iter(self._entries.values())

    def __repr__(self) -> str:
        return f"StoreSnapshot({self.store.backend}, {self.tenant!r}, {len(self)} documents)"

    # -- one call ------------------------------------------------------------------------------------------
    def serving(self, *, neighbours: bool = False) -> AbstractContextManager[calls.Call]:
        """One tool call of its own (:func:`evidence_lib._calls.serving`; every tool call opens one): chunks fetched
        and verified once, the published check made once, the store's reads in one read transaction.
        ``neighbours``: a locate's candidate chunks come with the chunks either side (its excerpt windows)."""
        return calls.serving(neighbours=neighbours)

    def _call_now(self) -> _Call | None:
        """What the current call kept of this snapshot (``None`` outside a call)."""
        call = calls.current()
        return None if call is None else call.kept.setdefault((self.store, self.row.snap_id), _Call())

    def _call(self) -> _Call:
        """The current call's, or a call of its own for a use outside one (nothing kept afterwards)."""
        return self._call_now() or _Call()

    @staticmethod
    def _neighbours() -> bool:
        call = calls.current()
        return call is not None and call.neighbours

    def check_alive(self) -> None:
        """Refuse with ``snapshot_expired`` once the snapshot expired, was deleted, replaced or cleaned up."""
        self._check_clock()
        call = self._call_now()
        if call is not None and call.alive:
            return
        with self.store.reading() as r:
            self._published(r, call)

    def seen_published(self) -> None:
        """The store just found this snapshot published (inside the current call): the call's check is made."""
        call = self._call_now()
        if call is not None:
            call.alive = True

    def _published(self, reader: SnapshotReader, call: _Call | None) -> None:
        """The published check inside the transaction ``reader``, unless ``call`` made it already."""
        if call is not None and call.alive:
            return
        if not reader.published(self.row.snap_id):
            raise EvidenceError("snapshot_expired")
        if call is not None:
            call.alive = True

    def _check_clock(self) -> None:
        if not alive(self.row.created_us, self.row.expires_us, self.store.now_us()):
            raise EvidenceError("snapshot_expired")

    def _mine(self, principal: Principal | None) -> bool:
        return principal is None or principal.tenant == self.tenant

    # -- the index protocol evidence_tools uses ----------------------------------------------------------
    def visible(self, principal: Principal | None = None, action: Action = "discover") -> list[IndexEntry]:
        """The entries ``principal`` may ``action`` in this snapshot; none for another tenant's or session's
        principal (unknown and forbidden look alike; notebook 11)."""
        self.check_alive()  # once per call, in the call's read transaction
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
        return Snapshot(e, self._whole(self._call(), e))

    def text(self, doc_id: str, principal: Principal | None = None, start: int = 0, end: int | None = None) -> str:
        """``text[start:end]``: only the chunks it covers are fetched, each checked against its own sha256."""
        e = self.entry(doc_id, principal, "read")
        start, end = text_range(e, start, end)
        call = self._call()
        if (start, end) == (0, e.chars) or self._doc_no[e.doc_id] in call.texts:
            return self._whole(call, e)[start:end]
        return self._range(call, e, start, end)

    def _whole(self, call: _Call, e: IndexEntry) -> str:
        """The whole text of ``e``, verified against the document's sha256 once per call (its chunks are then
        dropped: the text serves every range of it)."""
        doc_no = self._doc_no[e.doc_id]
        if doc_no not in call.texts:
            text = self._range(call, e, 0, e.chars)
            if sha256_hex(text) != e.sha256:
                raise EvidenceError("evidence_changed", doc_id=e.doc_id, revision=e.revision)
            call.texts[doc_no] = text
            for c in range(_chunk_count(e)):
                call.chunks.pop((doc_no, c), None)
        return call.texts[doc_no]

    def _range(self, call: _Call, e: IndexEntry, start: int, stop: int) -> str:
        if start >= stop:
            return ""
        lo, hi = start // CHUNK_CHARS, (stop - 1) // CHUNK_CHARS
        doc_no = self._doc_no[e.doc_id]
        if stop <= (lo + 1) * CHUNK_CHARS + OVERLAP_CHARS:  # inside chunk lo and its overlap: lo alone serves it
            body = self._bodies(call, [(doc_no, lo)])[doc_no, lo]
            return body[start - lo * CHUNK_CHARS: stop - lo * CHUNK_CHARS]
        bodies = self._bodies(call, [(doc_no, c) for c in range(lo, hi + 1)])
        text = "".join(bodies[doc_no, c][:CHUNK_CHARS] for c in range(lo, hi + 1))
        return text[start - lo * CHUNK_CHARS: stop - lo * CHUNK_CHARS]

    def _bodies(self, call: _Call, wanted: list[tuple[int, int]],
                ahead: Iterable[tuple[int, int]] = ()) -> dict[tuple[int, int], str]:
        """The verified bodies of the ``wanted`` ``(doc_no, chunk_no)``: those this call has not fetched yet come
        in one read transaction, with the chunks ``ahead`` (the next ones the call will need)."""
        missing = [p for p in wanted if p not in call.chunks]
        if missing:
            more = [p for p in ahead if p not in call.chunks]
            with self.store.reading() as r:
                rows = r.chunks(self.row.snap_id, _spans(missing + more))
            self._keep(call, rows)
            lost = [d for d, c in missing if (d, c) not in call.chunks]
            if lost:
                self.check_alive()  # gone since it was opened: say so; otherwise the stored chunks changed
                raise self._changed(lost[0])
            call.alive = True  # its chunks are there, so it is: they go in the transaction that removes it
        return {p: call.chunks[p] for p in wanted}

    def _changed(self, doc_no: int) -> EvidenceError:
        e = self._by_no[doc_no]
        return EvidenceError("evidence_changed", doc_id=e.doc_id, revision=e.revision)

    def _keep(self, call: _Call, rows: Iterable[tuple[int, int, str, str]]) -> None:
        """Verify fetched rows (each chunk against its own sha256, once per call) and keep them for the call."""
        for doc_no, chunk_no, body, sha in rows:
            if sha256_hex(body) != sha:
                raise self._changed(doc_no)
            call.chunks[doc_no, chunk_no] = body

    def find(self, term: str, doc_ids: Iterable[str], principal: Principal | None = None, *,
             first_only: bool = False, options: LocateOptions | None = None) -> Iterator[tuple[str, int]]:
        """The same hits as the scan (:func:`evidence_lib._locate.find`), from the backend's substring index.

        Only chunks that contain ``term`` are fetched (and verified): the backend names them (trigrams for terms
        of 3 characters or more, CJK gram postings for 1- and 2-character CJK terms, a check of every chunk of
        the snapshot for other short terms), in the same read transaction as their first chunks. The index is
        literal. A wrapped locate (``wrapped=True``) of a term that can wrap (:func:`evidence_lib._locate.wrap_points`:
        a match may then hold line breaks the term does not) asks the index for the term's pieces between its wrap
        points (:func:`literal_pieces`: for ``上限``, ``上`` and ``限``) and scans only the documents holding every
        piece; a term none of whose pieces the index serves (a Latin word: its pieces are single letters), NFC
        matching and terms longer than ``OVERLAP_CHARS + 1`` fall back to the scan over verified full texts. A
        wrapped locate of a term that cannot wrap matches literally, so it stays indexed.
        """
        opts = options or LocateOptions()
        doc_ids = list(doc_ids)
        how, terms = _plan(term, opts)
        if how == "scan":
            return scan_find(self._scanned(doc_ids, principal), term, opts, first_only)
        check_text(term, "term")
        if how == "wrapped":
            return self._wrapped(term, terms, doc_ids, principal, first_only, opts)
        return self._indexed(term, doc_ids, principal, first_only)

    def _scanned(self, doc_ids: list[str], principal: Principal | None) -> Iterator[tuple[str, str]]:
        """``(doc_id, verified whole text)`` of each of ``doc_ids`` in order, for the scan: fetched in batches of
        whole documents (:meth:`_batch`), one read transaction per batch."""
        call, entries = self._call(), self._readable(doc_ids, principal)
        at = {e.doc_id: i for i, e in enumerate(entries)}
        for d in doc_ids:
            e = self.entry(d, principal, "read")  # every id is checked, in order
            yield e.doc_id, self._text_ahead(call, e, entries, at[e.doc_id])

    def _text_ahead(self, call: _Call, e: IndexEntry, docs: list[IndexEntry], at: int) -> str:
        """The whole verified text of ``e`` (``docs[at]``), fetched with the next documents' chunks if missing.
        Outside a call (:meth:`serving`) a text is not kept after it is served: a scan holds one batch at a time."""
        doc_no = self._doc_no[e.doc_id]
        if doc_no not in call.texts:
            self._bodies(call, self._batch([e], 0), self._batch(docs, at))
        text = self._whole(call, e)
        if self._call_now() is None:
            del call.texts[doc_no]
        return text

    def _readable(self, doc_ids: list[str], principal: Principal | None) -> list[IndexEntry]:
        """The entries of ``doc_ids`` that ``principal`` may read (the others are refused in order, later)."""
        out = []
        for d in doc_ids:
            try:
                out.append(self._entry(d, principal, "read"))
            except EvidenceError:
                break  # the scan refuses it when it gets there; nothing after it is read
        return out

    def _candidates(self, call: _Call, terms: Sequence[str],
                    first: Callable[[list[set[tuple[int, int]]]], list[tuple[int, int]]]) -> list[set[tuple[int, int]]]:
        """One read transaction: the published check, the index's candidate chunks of each term (stopping at the
        first term with none; those the call asked already, :func:`prefetch`, are not asked again) and the chunks
        ``first(candidates)`` names that the call has not fetched yet, fetched and verified."""
        self._check_clock()
        found: list[set[tuple[int, int]]] = []
        with self.store.reading() as r:
            self._published(r, call)
            for t in terms:
                if t not in call.candidates:
                    call.candidates[t] = {(d, c) for d, c in r.candidates(self.row.snap_id, t)}
                found.append(call.candidates[t])
                if not found[-1]:
                    break
            wanted = [p for p in first(found) if p not in call.chunks]
            rows = r.chunks(self.row.snap_id, _spans(wanted)) if wanted else []
        self._keep(call, rows)
        return found

    def _wrapped(self, term: str, pieces: list[str], doc_ids: list[str], principal: Principal | None,
                 first_only: bool, opts: LocateOptions) -> Iterator[tuple[str, int]]:
        """A wrapped locate through the index: every match holds each of the term's ``pieces`` literally, so only
        the documents holding all of them (the index's answer for each) are scanned, over their verified texts.
        Document-level, not chunk-level: a wrap's indentation may push a match past a chunk's overlap."""
        call, entries = self._call(), self._readable(doc_ids, principal)
        terms = sorted(set(pieces), key=len, reverse=True)  # the longer, the rarer: the smaller set first
        holding: list[IndexEntry] = []

        def whole_docs(found: list[set[tuple[int, int]]]) -> list[tuple[int, int]]:
            docs = set.intersection(*({d for d, _ in f} for f in found)) if len(found) == len(terms) else set()
            holding.extend(e for e in entries if self._doc_no[e.doc_id] in docs)
            return self._batch(holding, 0)

        self._candidates(call, terms, whole_docs)
        at = {e.doc_id: i for i, e in enumerate(holding)}
        for d in doc_ids:
            e = self._entry(d, principal, "read")  # every id is checked, in order, as the scan checks it
            if e.doc_id in at:
                text = self._text_ahead(call, e, holding, at[e.doc_id])
                yield from scan_find([(e.doc_id, text)], term, opts, first_only)

    def _batch(self, docs: list[IndexEntry], at: int) -> list[tuple[int, int]]:
        """Every chunk of ``docs[at:]``, whole documents, until :data:`BATCH_CHUNKS` are named (at least one)."""
        out: list[tuple[int, int]] = []
        for e in docs[at:]:
            if out and len(out) + _chunk_count(e) > BATCH_CHUNKS:
                break
            out.extend((self._doc_no[e.doc_id], c) for c in range(_chunk_count(e)))
        return out

    def _indexed(self, term: str, doc_ids: list[str], principal: Principal | None,
                 first_only: bool) -> Iterator[tuple[str, int]]:
        call, entries = self._call(), self._readable(doc_ids, principal)
        order: list[tuple[IndexEntry, int]] = []  # every candidate chunk of a readable document, in their order

        def first_batch(found: list[set[tuple[int, int]]]) -> list[tuple[int, int]]:
            hits: dict[int, list[int]] = {}
            for d, c in sorted(found[0]):
                hits.setdefault(d, []).append(c)
            order.extend((e, c) for e in entries for c in hits.get(self._doc_no[e.doc_id], ()))
            return self._ahead(call, order, 0)

        found = self._candidates(call, [term], first_batch)
        at = {(e.doc_id, c): i for i, (e, c) in enumerate(order)}
        for d in doc_ids:
            e = self._entry(d, principal, "read")  # checked alive once, above
            doc_no = self._doc_no[e.doc_id]
            for c in sorted(c for dd, c in found[0] if dd == doc_no):
                pair = (doc_no, c)
                body = self._bodies(call, [pair], self._ahead(call, order, at.get((e.doc_id, c), 0)))[pair]
                found_here = False
                for off in find_all(body, term, first_only=False):
                    if off >= CHUNK_CHARS:  # starts in the next chunk: found there
                        break
                    yield e.doc_id, c * CHUNK_CHARS + off
                    found_here = True
                    if first_only:
                        break
                if first_only and found_here:
                    break

    def _first_chunks(self, how: str, terms: list[str], call: _Call) -> list[tuple[int, int]]:
        """The chunks :meth:`find` reads first when it answers as ``how`` (:func:`_plan`), with the candidates the
        call knows: every candidate chunk (with its neighbours when the call asks for them), or whole documents."""
        entries = list(self._entries.values())
        if how == "indexed":
            hits = sorted(call.candidates.get(terms[0], ()))
            return self._ahead(call, [(self._by_no[d], c) for d, c in hits if d in self._by_no], 0)
        if how == "wrapped":
            found = [call.candidates.get(t, set()) for t in terms]
            docs = set.intersection(*({d for d, _ in f} for f in found)) if found else set()
            entries = [e for e in entries if self._doc_no[e.doc_id] in docs]
        return self._batch(entries, 0)

    def _ahead(self, call: _Call, order: list[tuple[IndexEntry, int]], at: int) -> list[tuple[int, int]]:
        """The next :data:`BATCH_CHUNKS` candidate chunks from ``order[at]`` (with their neighbours if the call
        asks for them): what one transaction fetches."""
        out: list[tuple[int, int]] = []
        neighbours = self._neighbours()
        for e, c in order[at: at + BATCH_CHUNKS]:
            doc_no = self._doc_no[e.doc_id]
            near = range(max(0, c - 1), min(_chunk_count(e), c + 2)) if neighbours else (c,)
            out.extend((doc_no, n) for n in near)
        return out


def _plan(term: str, opts: LocateOptions) -> tuple[str, list[str]]:
    """How :meth:`StoreSnapshot.find` answers ``term``: ``("wrapped", the term's indexable pieces)``,
    ``("indexed", [term])``, or ``("scan", [])`` (verified whole texts)."""
    if opts.normalization == "none" and isinstance(term, str) and opts.wrapped and wrap_points(term):
        pieces = [p for p in literal_pieces(term) if indexable(p)]
        if pieces:
            return "wrapped", sorted(set(pieces), key=len, reverse=True)  # the longer, the rarer: smaller sets first
    if (opts.normalization != "none" or not isinstance(term, str) or not 1 <= len(term) <= OVERLAP_CHARS + 1
            or (opts.wrapped and wrap_points(term))):
        return "scan", []
    return "indexed", [term]


def prefetch(snaps: Sequence[StoreSnapshot], term: str, options: LocateOptions | None = None) -> None:
    """Inside a call, before one term is located in several snapshots of one store (the offload shelf's results, one
    snapshot each): the index's candidates of every snapshot in one query per term piece, then the chunks each
    snapshot's :meth:`~StoreSnapshot.find` reads first, in one query (at most :data:`BATCH_CHUNKS`), so the call's
    statements do not grow with the snapshots. Chunks whose hash does not match are left for the snapshot's own fetch
    to refuse, in order. Outside a call it does nothing (nothing would be kept)."""
    if not snaps or calls.current() is None or not isinstance(term, str) or not clean_text(term):
        return
    how, terms = _plan(term, options or LocateOptions())
    held = [(s, s._call()) for s in snaps]
    with snaps[0].store.reading() as r:
        for t in terms:
            todo = [(s, st) for s, st in held if t not in st.candidates]
            if todo:
                for _, st in todo:
                    st.candidates[t] = set()
                by_id = {s.row.snap_id: st for s, st in todo}
                for snap_id, d, c in r.candidates_many([(s.row.snap_id, t) for s, _ in todo]):
                    by_id[snap_id].candidates[t].add((d, c))
        wanted, total = [], 0
        for s, st in held:
            pairs = [p for p in s._first_chunks(how, terms, st) if p not in st.chunks]
            if pairs and total and total + len(pairs) > BATCH_CHUNKS:
                break
            total += len(pairs)
            wanted.append((s, st, pairs))
        rows = r.chunks_many([(s.row.snap_id, _spans(pairs)) for s, _, pairs in wanted])
    states = {s.row.snap_id: st for s, st, _ in wanted}
    for snap_id, d, c, body, sha in rows:
        if sha256_hex(body) == sha:
            states[snap_id].chunks[d, c] = body


def _chunk_count(e: IndexEntry) -> int:
    """How many chunks hold ``e``'s text."""
    return (e.chars + CHUNK_CHARS - 1) // CHUNK_CHARS
