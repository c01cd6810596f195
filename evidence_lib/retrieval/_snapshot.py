"""Keep your retriever, replace what it returns: any ``BaseRetriever`` behind the three tools. Notebook 08.

For each ``search_evidence(query)`` the retriever's documents become *that query's snapshot*: an
in-memory :class:`~evidence_lib._index.EvidenceIndex` (a :class:`RetrieverSnapshot`) holding the exact bytes
that were hashed, built for the principal bound into the tools. ``doc_id``, ``title``, ``revision`` and
``sha256`` come from a document's metadata where present and are computed otherwise.

Permission filtering happens first: documents the principal may not discover are dropped before anything is
ranked (for :class:`~evidence_lib.retrieval.BM25Retriever`, before scoring), cut or counted. A generic top-k
retriever is over-fetched so that hidden documents do not take its k slots (see :meth:`RetrieverSource.documents`).

Discover-only means no text and no fingerprint of it: for a document the principal may discover but not read,
a computed title is the doc_id (never the text's first line), and a computed ``doc_id`` / ``revision`` is
HMAC-SHA256 of the text under the source's secret ``fingerprint_key``, never a plain sha256 prefix that would
let anyone confirm a guess of the text offline. A principal who may read the text is shown its sha256 anyway,
so for them the computed values stay ``doc-<sha256[:12]>`` and ``sha256[:12]``.
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
import re
import secrets
import string
import sys
import threading
import warnings
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeGuard

from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore

from .. import _calls as calls
from .._access import NOBODY, Access, Action, Principal, allowed, parse_access
from .._documents import Document
from .._ids import escape_doc_id
from .._index import PREVIEW_CHARS, Decoded, EvidenceIndex, IndexEntry, Snapshot, sha256_hex, text_range
from .._locate import HYPHENS, WRAP_SPACE, LocateOptions, find, wrapped_pattern
from .._toolkit import clean_text
from ._bm25 import BM25Retriever, FixedFilter
from ._corpora import first_line

__all__ = ["DEFAULT_HISTORY_LIMIT", "ENCODED_CACHE_BYTES", "MAX_FETCH", "WHOLE_CACHE", "AccessMetadataWarning",
           "DocIds", "EncodedTexts", "Reach", "RetrieverSnapshot", "RetrieverSource", "WholeIndex", "default_access",
           "keyed_digest", "to_evidence_document"]

#: A term :class:`WholeIndex` looks up among BM25's tokens: ASCII word characters, as the tokenizer's words.
_WORD_TERM = re.compile(r"[A-Za-z0-9_]+")
#: From a hyphen, a line wrap and an ASCII letter (the letter before the hyphen is checked apart): where an ASCII word
#: may match across lines (:mod:`evidence_lib._locate`).
_ASCII_HYPHEN_WRAP = re.compile(f"[{re.escape(HYPHENS)}][{WRAP_SPACE}]*+(?:\r\n|\r|\n)[{WRAP_SPACE}]*+[A-Za-z]")
_ASCII_LETTERS = frozenset(string.ascii_letters)

#: A top-k retriever that cannot filter before ranking is asked again with twice the k until k visible documents,
#: until it returns fewer than asked (exhausted), or until it was asked for MAX_FETCH (a k at or above MAX_FETCH is
#: not over-fetched at all): hidden documents then take none of the principal's places unless more than
#: MAX_FETCH - k of them outrank every visible one (issue 31).
MAX_FETCH = 1_000
#: The vector store method a ``VectorStoreRetriever`` calls for each ``search_type`` (langchain-core's retriever).
_SEARCH_METHODS = {"similarity": "similarity_search", "mmr": "max_marginal_relevance_search",
                   "similarity_score_threshold": "similarity_search_with_relevance_scores"}
#: Snapshots a :class:`RetrieverSource` keeps for the operator, newest last.
DEFAULT_HISTORY_LIMIT = 16
#: Whole-corpus indexes (:meth:`RetrieverSource.whole`) kept, for the most recent principals: a miss only rebuilds
#: one, so the bound trades memory for time and never changes what is shown.
WHOLE_CACHE = 4
#: Most memory (UTF-8 bytes plus the text they encode) :class:`EncodedTexts` keeps for a source; least recently used
#: texts go first. A miss only encodes and hashes the text again.
ENCODED_CACHE_BYTES = 256 * 1024 * 1024


class EncodedTexts:
    """A bounded cache of each text's UTF-8 bytes and their sha256, shared by every snapshot and task of a source
    (issue 31): 40 tasks whose searches rank one 10 MB document reference one bytes object, not 40 copies.
    Thread-safe: encoding and hashing run outside the lock; the first copy stored is the one every caller gets."""

    def __init__(self, max_bytes: int = ENCODED_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, tuple[bytes, str]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, text: str) -> tuple[bytes, str]:
        """``(text's UTF-8 bytes, their sha256 in hex)``; ``UnicodeEncodeError`` for a lone surrogate."""
        with self._lock:
            hit = self._items.get(text)
            if hit is not None:
                self._items.move_to_end(text)
                return hit
        raw = text.encode("utf-8")
        made = (raw, sha256_hex(raw))
        cost = len(raw) + sys.getsizeof(text)
        with self._lock:
            hit = self._items.get(text)
            if hit is not None:  # another thread stored it meanwhile: share that copy
                return hit
            if cost <= self.max_bytes:
                self._items[text] = made
                self._size += cost
                while self._size > self.max_bytes:
                    old, (old_raw, _) = self._items.popitem(last=False)
                    self._size -= len(old_raw) + sys.getsizeof(old)
        return made


class AccessMetadataWarning(UserWarning):
    """A document's ``metadata["access"]`` has none of the accepted shapes: the document is hidden from everyone."""


def keyed_digest(key: bytes, text: str) -> str:
    """HMAC-SHA256 of ``text``'s UTF-8 under ``key``, in hex: a fingerprint only the key's holder can check."""
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def _metadata_access(doc: LCDocument, raw: Any) -> tuple[Access | None, str | None]:
    """``(grants, None)``, or ``(NOBODY, why)`` when ``raw`` has none of the accepted shapes."""
    try:
        return parse_access(raw), None
    except ValueError as e:
        name = doc.metadata.get("doc_id") or doc.metadata.get("id") or doc.id or "?"
        return NOBODY, (f"document {str(name)[:80]!r}: its access grants are {e}; the document is hidden from "
                        "everyone (accepted: an Access, a mapping {tenant, read, discover} or that mapping as JSON)")


def default_access(doc: LCDocument) -> Access | None:
    """A document's grants from ``metadata["access"]``, checked by :func:`evidence_lib._access.parse_access`.

    Accepted shapes: an :class:`~evidence_lib._access.Access`; a mapping ``{"tenant": str, "read": [grant names],
    "discover": [grant names] | None}`` as ``dataclasses.asdict`` or a vector store's JSON round trip gives it;
    that mapping as a JSON string. No ``"access"`` key (or ``None``): open teaching material, everyone may
    discover and read it. Anything else (a list, a bare string grant, a non-string grant, an empty tenant, an
    unknown key, ...) fails closed: grants nobody answers to, and an :class:`AccessMetadataWarning`. Called on its
    own it warns on every call (Python's default filter then shows it once per call site); a
    :class:`RetrieverSource` with this default warns once per source.
    """
    access, problem = _metadata_access(doc, doc.metadata.get("access"))
    if problem:
        warnings.warn(problem, AccessMetadataWarning, stacklevel=2)
    return access


def _granted(grants: Access | None, _doc: LCDocument) -> Access | None:
    """``grants``, whatever the document: its access, already parsed (``partial(_granted, grants)``)."""
    return grants


def to_evidence_document(doc: LCDocument, access: Callable[[LCDocument], Access | None] = default_access, *,
                         readable: bool = True, key: bytes | None = None, sha256: str | None = None) -> Document:
    """A LangChain ``Document`` as the series' :class:`~evidence_lib._documents.Document` (metadata first).

    ``readable=False`` builds it for a principal who may discover but not read the text: then nothing computed
    comes from the text in the clear. A computed title is the doc_id, and a computed doc_id (``doc-<12 hex>``)
    and revision (12 hex) are HMAC-SHA256 under ``key`` (required), not the text's plain sha256. A doc_id from the
    metadata is made a doc_id of :mod:`evidence_lib._ids` by :func:`~evidence_lib._ids.escape_doc_id` (``"my file#2"``
    becomes ``"my%20file%232"``), so every citation of it parses. ``sha256``: the text's sha256 when the caller has
    it already (a :class:`RetrieverSource` keeps it with the encoded bytes), so it is not computed again.
    """
    text = doc.page_content
    if readable:
        digest = sha256 or sha256_hex(text)
    elif isinstance(key, bytes) and key:
        digest = keyed_digest(key, text)
    else:
        raise ValueError("readable=False needs key (bytes): computed fields of unreadable text are keyed")
    meta = doc.metadata
    doc_id = escape_doc_id(str(meta.get("doc_id") or meta.get("id") or doc.id or f"doc-{digest[:12]}"))
    title = str(meta.get("title") or (first_line(text) if readable else "") or doc_id)
    revision = str(meta.get("revision") or digest[:12])
    return Document(doc_id, title, revision, text, access(doc))


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _search_defaults(retriever: BaseRetriever) -> dict[str, int]:
    """The ``k`` (and MMR's ``fetch_k``) a ``VectorStoreRetriever`` asks its store for when ``search_kwargs`` names
    none: the defaults of the store method its ``search_type`` calls (``k=4`` in langchain-core). Notebook 08."""
    search_type = getattr(retriever, "search_type", None)
    name = _SEARCH_METHODS.get(search_type, "") if isinstance(search_type, str) else ""
    method = getattr(getattr(retriever, "vectorstore", None), name, None)
    if not callable(method):  # no vector store
        return {}
    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):  # no vector store, or a method without a signature
        return {}
    return {p: params[p].default for p in ("k", "fetch_k") if p in params and _is_count(params[p].default)}


def _prefiltered(retriever: BaseRetriever, visible: Callable[[LCDocument], bool]) -> BaseRetriever | None:
    """A copy of ``retriever`` that drops what ``visible`` refuses *before* it ranks, or ``None`` when it cannot.

    Two kinds can (notebook 08): a retriever with an ``allowed`` field taking a document predicate (the convention
    :class:`~evidence_lib.retrieval.BM25Retriever` follows: hidden documents never change a score or take a place),
    and a ``VectorStoreRetriever`` over langchain-core's ``InMemoryVectorStore``, whose searches take a ``filter``
    predicate (combined with one already in its ``search_kwargs``). Other stores' filters are their own query
    languages, never a Python predicate: they are over-fetched instead (:meth:`RetrieverSource.documents`)."""
    how = _filters_first(retriever)
    if how == "allowed":
        return retriever.model_copy(update={"allowed": visible})
    if how == "filter":
        kwargs = retriever.search_kwargs  # type: ignore[attr-defined]  # _filters_first found it (a dict)
        own = kwargs.get("filter")
        both = visible if own is None else (lambda d: visible(d) and bool(own(d)))
        return retriever.model_copy(update={"search_kwargs": {**kwargs, "filter": both}})
    return None


def _filters_first(retriever: BaseRetriever) -> str | None:
    """How ``retriever`` takes a predicate before it ranks: ``"allowed"`` (its field), ``"filter"`` (an
    ``InMemoryVectorStore`` search's), or ``None``."""
    if "allowed" in type(retriever).model_fields:
        return "allowed"
    kwargs = getattr(retriever, "search_kwargs", None)
    if isinstance(getattr(retriever, "vectorstore", None), InMemoryVectorStore) and isinstance(kwargs, dict) \
            and (kwargs.get("filter") is None or callable(kwargs.get("filter"))):
        return "filter"
    return None


def _k_knob(retriever: BaseRetriever) -> tuple[int, Callable[[int], BaseRetriever]] | None:
    """The retriever's k and a way to make a copy asking for ``n``, or ``None`` when it has no known k.

    A vector store retriever without a k in its ``search_kwargs`` still asks for one (its store's default): without
    it, hidden documents that rank first would take every slot (issue 7)."""
    fields = type(retriever).model_fields
    k = getattr(retriever, "k", None) if "k" in fields else None
    if _is_count(k):
        return k, lambda n: retriever.model_copy(update={"k": n})
    kwargs = getattr(retriever, "search_kwargs", None) if "search_kwargs" in fields else None
    if isinstance(kwargs, dict):
        kwargs = {**_search_defaults(retriever), **kwargs}
    if isinstance(kwargs, dict) and _is_count(kwargs.get("k")):
        k = kwargs["k"]

        def with_k(n: int) -> BaseRetriever:
            update = {**kwargs, "k": n}
            if _is_count(kwargs.get("fetch_k")):  # MMR picks k out of fetch_k: grow both by the same factor
                update["fetch_k"] = max(kwargs["fetch_k"], kwargs["fetch_k"] * n // k)
            return retriever.model_copy(update={"search_kwargs": update})
        return k, with_k
    return None


class RetrieverSnapshot(EvidenceIndex):
    """One query's snapshot of a retriever's documents, for one principal: an in-memory ``EvidenceIndex``.

    ``query`` is the query; ``requested`` the k the retriever was asked for (``None``: a retriever with no
    known k); ``unfilled`` how many of those k slots hold no entry (``requested - len(self)``, never below 0;
    ``None`` when ``requested`` is). It depends only on k and on what the principal is shown, never on how many
    documents were hidden: a slot is unfilled because fewer documents the principal may see matched, because the
    over-fetch cap was reached, or because a duplicate chunk was dropped, and the three look the same on purpose.
    ``prefiltered`` is True when the retriever itself dropped hidden documents before ranking
    (:func:`_prefiltered`): then no hidden document ever competed for a slot, and an unfilled slot only means fewer
    matches. ``unsure`` is True when the retriever could do neither (no filter, no k to ask for more): hidden
    documents may have taken places, and every manifest says so. Both are properties of the retriever, never of the
    documents, so they say nothing about what is hidden.
    """

    def __init__(self, entries: Iterable[IndexEntry], blobs: dict[str, bytes], *, query: str,
                 requested: int | None = None, prefiltered: bool = False, unsure: bool = False,
                 decoded: Mapping[str, Decoded] | None = None) -> None:
        super().__init__(None, entries, blobs, decoded)
        self.query = query
        self.requested = requested
        self.unfilled = None if requested is None else max(0, requested - len(self))
        self.prefiltered = prefiltered
        self.unsure = unsure


class WholeIndex(EvidenceIndex):
    """Every document of a ``BM25Retriever`` a principal may discover (:meth:`RetrieverSource.whole`), in memory, whose
    scans search only the documents that may hold the term (issue 33: a locate over 3,000 documents searched every
    one). A term of ASCII word characters can match literally only in a document with a BM25 token containing it
    (lowered), and across a line wrap only where the text holds a hyphenated wrap between ASCII letters; each document
    is still read and checked, and the hits are the scan's, in the same order. ``numbers``: doc_id -> the document's
    place in the retriever's ``documents``."""

    def __init__(self, entries: Iterable[IndexEntry], blobs: dict[str, bytes], decoded: Mapping[str, Decoded],
                 retriever: BM25Retriever, numbers: dict[str, int]) -> None:
        super().__init__(None, entries, blobs, decoded)
        self._retriever, self._numbers = retriever, numbers
        self._wrapped: frozenset[str] | None = None  # doc_ids with a hyphenated wrap, found by the first wrapped scan

    def may_hold(self, term: str, options: LocateOptions) -> Callable[[str], bool] | None:
        """A doc_id test that is False only for documents that cannot hold a match of ``term`` under ``options``, or
        ``None`` when any document may (another term or matching, or too common a word to be worth it)."""
        if options.normalization != "none" or not _WORD_TERM.fullmatch(term):
            return None
        docs = self._retriever._containing(term.lower())
        if docs is None:
            return None
        number = self._numbers
        if options.wrapped and wrapped_pattern(term) is not None:
            wrapped = self._hyphen_wrapped()
            return lambda d: number[d] in docs or d in wrapped
        return lambda d: number[d] in docs

    def _hyphen_wrapped(self) -> frozenset[str]:
        """The documents whose text holds a hyphenated wrap between two ASCII letters (:mod:`evidence_lib._locate`'s
        rule: the only wrap an ASCII word may match across), found once (two threads at once find the same)."""
        got = self._wrapped
        if got is None:
            docs = self._retriever.documents
            got = self._wrapped = frozenset(d for d, n in self._numbers.items() if _hyphen_wrap(docs[n].page_content))
        return got

    def find(self, term: str, doc_ids: Iterable[str], principal: Principal | None = None, *,
             first_only: bool = False, options: LocateOptions | None = None) -> Iterator[tuple[str, int]]:
        opts = options or LocateOptions()
        read, may = self._reader(principal), self.may_hold(term, opts)
        texts = ((d, read(d)) for d in doc_ids)  # every document read and checked, in the order asked
        return find(texts if may is None else ((d, t) for d, t in texts if may(d)), term, opts, first_only)


def _hyphen_wrap(text: str) -> bool:
    """Whether ``text`` holds an ASCII letter, a hyphen, a line wrap, an ASCII letter."""
    return any(m.start() and text[m.start() - 1] in _ASCII_LETTERS for m in _ASCII_HYPHEN_WRAP.finditer(text))


class Reach:
    """What the tools read and locate in over a retriever: the last query's snapshot first, in rank order, then
    every other document of the source's :meth:`~RetrieverSource.whole` index, in corpus order (built by the tools,
    ``_Session.reach``; the notebooks see only what locate and read return).

    Speaks :class:`~evidence_lib._index.IndexProtocol`. A doc_id the snapshot holds is served from the snapshot, any
    other from the whole index; unknown and forbidden raise the same error in both. ``ranked`` is how many entries
    of :meth:`visible` the retriever ranked for the last query (the rest follow in corpus order).
    """

    def __init__(self, last: EvidenceIndex, whole: EvidenceIndex) -> None:
        self.last, self.whole = last, whole  # the last query's snapshot, and every document
        self._mine = {e.doc_id for e in last}

    @contextmanager
    def serving(self, *, neighbours: bool = False) -> Iterator[Reach]:
        """One tool call of its own (:func:`evidence_lib._calls.serving`), shared by both indexes: each document's
        bytes are checked against its sha256 once, however many matches and excerpt windows the call reads of it
        (like a store snapshot's ``serving``); checked again on the next call. The texts are kept on the call, never
        on this object: calls in other threads or tasks, and any call after this one ended, verify for themselves."""
        with calls.serving(neighbours=neighbours):
            yield self

    @property
    def ranked(self) -> int:
        return len(self._mine)

    def _of(self, doc_id: str) -> EvidenceIndex:
        return self.last if doc_id in self._mine else self.whole

    def visible(self, principal: Principal | None = None, action: Action = "discover") -> list[IndexEntry]:
        rest = [e for e in self.whole.visible(principal, action) if e.doc_id not in self._mine]
        return self.last.visible(principal, action) + rest

    def entry(self, doc_id: str, principal: Principal | None = None, action: Action = "read") -> IndexEntry:
        return self._of(doc_id).entry(doc_id, principal, action)

    def snapshot(self, doc_id: str, principal: Principal | None = None) -> Snapshot:
        return self._of(doc_id).snapshot(doc_id, principal)

    def text(self, doc_id: str, principal: Principal | None = None, start: int = 0, end: int | None = None) -> str:
        entry = self.entry(doc_id, principal, "read")
        start, end = text_range(entry, start, end)
        return self.snapshot(entry.doc_id, principal).text[start:end]

    def find(self, term: str, doc_ids: Iterable[str], principal: Principal | None = None, *,
             first_only: bool = False, options: LocateOptions | None = None) -> Iterator[tuple[str, int]]:
        opts = options or LocateOptions()
        last, whole = self.last._reader(principal), self.whole._reader(principal)
        texts = ((d, last(d) if d in self._mine else whole(d)) for d in doc_ids)  # in the order asked, each checked
        may = self.whole.may_hold(term, opts) if isinstance(self.whole, WholeIndex) else None
        if may is not None:  # the whole index's documents that cannot hold the term are not searched
            texts = ((d, t) for d, t in texts if d in self._mine or may(d))
        return find(texts, term, opts, first_only)


class DocIds:
    """Which doc_id names which text, for one task: chunks of one source that share a metadata doc_id get
    ``guide``, ``guide~2``, ... in the order first met, and an id, once given, names that same text (its sha256) for
    as long as the registry lives, whatever order later searches meet the chunks in. Safe under threads.

    ``within`` (another registry, read only) comes first: a source that knows its documents numbered them once, in
    corpus order (:meth:`RetrieverSource.whole`); a text it does not know gets an id neither registry gave."""

    def __init__(self) -> None:
        self._ids: dict[tuple[str, str], str] = {}
        self._taken: set[str] = set()
        self._lock = threading.Lock()

    def of(self, base: str, sha256: str, within: DocIds | None = None) -> str:
        """The id of the text ``sha256`` that claims the id ``base``: the one it was given, else the first free one
        of ``base``, ``base~2``, ``base~3``, ..."""
        if within is not None:
            given = within._ids.get((base, sha256))
            if given is not None:
                return given
        with self._lock:
            known = self._ids.get((base, sha256))
            if known is None:
                known, n = base, 1
                while known in self._taken or (within is not None and known in within._taken):
                    n += 1
                    known = f"{base}~{n}"
                self._ids[base, sha256] = known
                self._taken.add(known)
            return known


@dataclass
class RetrieverSource:
    """A retriever as the evidence tools' source: one snapshot per query, filtered by permission first.

    ``access`` gives a document's grants (default: :func:`default_access`, ``metadata["access"]``); whatever it
    returns is checked by :func:`~evidence_lib._access.parse_access`, and a malformed value hides the document
    from everyone with one :class:`AccessMetadataWarning` per source. ``history`` keeps the newest
    ``history_limit`` snapshots (default 16; 0 keeps none) as ``(query, snapshot)`` pairs in a bounded
    ``collections.deque``, newest last, so a long-lived source does not grow. ``fingerprint_key`` keys the
    computed doc_id and revision of documents a principal may discover but not read (default: 32 random bytes
    per source; pass your own to keep those ids stable across processes, and keep it secret). ``encoded`` holds each
    document's UTF-8 bytes and sha256 once for every snapshot, task and principal (:class:`EncodedTexts`; sources
    rebuilt over mostly the same documents may share one); reads serve the retriever's own texts, checked by those
    hashes, not re-hashed and re-decoded on every call.
    """

    retriever: BaseRetriever
    access: Callable[[LCDocument], Access | None] = default_access
    #: Snapshots made so far, newest last (what an operator may inspect; never shown to the model).
    history: deque[tuple[str, RetrieverSnapshot]] = field(default_factory=deque, repr=False)
    history_limit: int = DEFAULT_HISTORY_LIMIT
    fingerprint_key: bytes | None = field(default=None, repr=False)
    #: The documents a generic retriever was built from, so that locate reaches every document the principal may
    #: read, not only the last query's snapshot (a ``BM25Retriever`` knows its own; see :meth:`whole`).
    corpus: Sequence[LCDocument] | None = field(default=None, repr=False)
    encoded: EncodedTexts = field(default_factory=EncodedTexts, repr=False, compare=False)
    _warned: bool = field(default=False, init=False, repr=False, compare=False)
    _wholes: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _wholes_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)
    _filters: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        limit = self.history_limit
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            raise ValueError(f"history_limit must be an int >= 0, got {limit!r}")
        self.history = deque(self.history, maxlen=limit)
        if self.fingerprint_key is None:
            self.fingerprint_key = secrets.token_bytes(32)
        elif not isinstance(self.fingerprint_key, bytes) or not self.fingerprint_key:
            raise ValueError("fingerprint_key must be non-empty bytes")

    def access_of(self, doc: LCDocument) -> Access | None:
        """``doc``'s grants, checked; malformed grants are :data:`~evidence_lib._access.NOBODY` (fail closed)."""
        raw = doc.metadata.get("access") if self.access is default_access else self.access(doc)
        access, problem = _metadata_access(doc, raw)
        if problem and not self._warned:
            self._warned = True
            warnings.warn(f"{problem}. Further malformed grants from this source are hidden without a warning.",
                          AccessMetadataWarning, stacklevel=2)
        return access

    def documents(self, query: str, principal: Principal | None) -> list[LCDocument]:
        """The retriever's documents for ``query`` that ``principal`` may discover, in the retriever's order.

        Non-interference (issue 31): a retriever that can filter before ranking is given the principal's filter
        (:func:`_prefiltered`); a retriever with a ``k`` field, or with ``search_kwargs["k"]`` (a
        ``VectorStoreRetriever``; without one, its store's default k), is asked again through a ``model_copy`` with
        twice the k until k documents are visible, it returns fewer than asked, or it was asked for ``MAX_FETCH``;
        the first k visible ones are kept. Any other retriever is filtered after the fact, so hidden documents may
        take its places: its snapshots are ``unsure`` and every manifest says so.
        """
        return self._fetch(query, principal)[0]

    def _visible(self, principal: Principal | None) -> Callable[[LCDocument], bool]:
        """What ``principal`` may discover: one :class:`FixedFilter` per principal (grants are fixed for the source's
        life, as in :meth:`whole`), so a BM25 retriever asks it once per document, not once per query."""
        with self._wholes_lock:
            got = self._filters.get(principal)
            if got is None:
                while len(self._filters) >= WHOLE_CACHE:
                    del self._filters[next(iter(self._filters))]
                got = FixedFilter(lambda d: allowed(self.access_of(d), principal, "discover"))
                self._filters[principal] = got
            return got

    def _fetch(self, query: str, principal: Principal | None) -> tuple[list[LCDocument], int | None]:
        visible = self._visible(principal)
        r = self.retriever
        first = _prefiltered(r, visible)
        knob = _k_knob(r)
        if first is not None:  # filtered before ranking, not after
            return first.invoke(query), knob[0] if knob is not None else None
        if knob is None:
            return [d for d in r.invoke(query) if visible(d)], None
        k, with_k = knob
        cap, asked, current = max(k, MAX_FETCH), k, r
        while True:
            got = current.invoke(query)
            shown = [d for d in got if visible(d)]
            if len(shown) >= k or len(got) < asked or asked >= cap:
                return shown[:k], k
            asked = min(asked * 2, cap)
            current = with_k(asked)

    def prefiltered(self) -> bool:
        """Whether the retriever drops hidden documents before it ranks (:func:`_prefiltered`)."""
        return _filters_first(self.retriever) is not None

    def unsure(self) -> bool:
        """Whether hidden documents may take the retriever's places: it neither filters first nor has a k."""
        return not self.prefiltered() and _k_knob(self.retriever) is None

    def snapshot(self, query: str, principal: Principal | None, *, ids: DocIds | None = None) -> RetrieverSnapshot:
        """This query's snapshot: entries in rank order, bytes kept in memory, hashes from what is stored.

        Chunks sharing a metadata doc_id are told apart (``guide``, ``guide~2``) by ``ids``, the task's registry
        (:class:`DocIds`): an id names one text for the whole task. A source that knows its documents numbers them
        in corpus order, among those the principal may discover, so its snapshots and :meth:`whole` agree."""
        docs, requested = self._fetch(query, principal)
        entries, blobs, decoded = self._entries(docs, principal, ids or DocIds(), within=self._whole_ids(principal))
        index = RetrieverSnapshot(entries, blobs, query=query, requested=requested, prefiltered=self.prefiltered(),
                                  unsure=self.unsure(), decoded=decoded)
        self.history.append((query, index))
        return index

    def enumerable(self) -> bool:
        """Whether the source knows every document it may return: a ``BM25Retriever``, or a ``corpus`` given."""
        return self.corpus is not None or isinstance(self.retriever, BM25Retriever)

    def whole(self, principal: Principal | None) -> EvidenceIndex | None:
        """Every document the source knows that ``principal`` may discover, in corpus order, or ``None`` when it
        cannot enumerate them (:meth:`enumerable`). What ``locate_evidence`` covers (notebook 08): a document the
        retriever ranks low for the question is still found by its literal words. Built once per principal."""
        built = self._whole(principal)
        return None if built is None else built[0]

    def _whole_ids(self, principal: Principal | None) -> DocIds | None:
        """The ids :meth:`whole` gave ``principal``'s documents (every snapshot names a text by the same id)."""
        built = self._whole(principal)
        return None if built is None else built[1]

    def _whole(self, principal: Principal | None) -> tuple[EvidenceIndex, DocIds] | None:
        if not self.enumerable():
            return None
        with self._wholes_lock:  # one source serves many tasks and threads (the eval, the MCP server)
            built = self._wholes.get(principal)
            if built is None:
                docs = self.corpus if self.corpus is not None else \
                    self.retriever.documents if isinstance(self.retriever, BM25Retriever) else ()  # enumerable()
                shown = [d for d in docs if allowed(self.access_of(d), principal, "discover")]
                while len(self._wholes) >= WHOLE_CACHE:
                    del self._wholes[next(iter(self._wholes))]  # the oldest principal's
                ids, kept = DocIds(), list[LCDocument]()
                entries, blobs, decoded = self._entries(shown, principal, ids, kept=kept)
                if self.corpus is None and isinstance(self.retriever, BM25Retriever):  # its tokens cover every text
                    number = {id(d): i for i, d in enumerate(docs)}
                    whole: EvidenceIndex = WholeIndex(entries, blobs, decoded, self.retriever,
                                                      {e.doc_id: number[id(lc)] for e, lc in zip(entries, kept)})
                else:
                    whole = EvidenceIndex(None, entries, blobs, decoded)
                built = self._wholes[principal] = (whole, ids)
            return built

    def _entries(self, docs: Iterable[LCDocument], principal: Principal | None, ids: DocIds,
                 within: DocIds | None = None, kept: list[LCDocument] | None = None,
                 ) -> tuple[list[IndexEntry], dict[str, bytes], dict[str, Decoded]]:
        """Index entries, bytes and what was decoded and hashed of ``docs`` (already filtered for ``principal``), in
        their order; chunks that share a doc_id are told apart by ``ids`` (after ``within``) and the same chunk met
        twice is kept once. ``kept`` receives the document of each entry, in the same order."""
        entries: list[IndexEntry] = []
        blobs: dict[str, bytes] = {}
        decoded: dict[str, Decoded] = {}
        for lc in docs:
            grants = self.access_of(lc)
            readable = allowed(grants, principal, "read")
            try:  # one bytes object per text, shared by every snapshot (issue 31)
                raw, digest = self.encoded.get(lc.page_content)
            except UnicodeEncodeError:
                continue  # text that cannot be stored or shown is not evidence
            doc = to_evidence_document(lc, partial(_granted, grants), readable=readable, key=self.fingerprint_key,
                                       sha256=digest)
            if b"\0" in raw or not clean_text(doc.doc_id):
                continue  # text that cannot be stored or shown is not evidence
            doc_id = ids.of(doc.doc_id[:120], digest, within)
            if doc_id in blobs:
                continue  # the same text again
            blobs[doc_id] = raw
            decoded[doc_id] = (raw, lc.page_content, digest)  # reads serve the retriever's text, not a decoded copy
            claimed = lc.metadata.get("sha256")
            sha = claimed if isinstance(claimed, str) else digest
            preview = doc.text[:PREVIEW_CHARS] if readable else ""  # no text of what the principal may not read
            if kept is not None:
                kept.append(lc)
            entries.append(IndexEntry(doc_id, doc.title, doc.revision, len(doc.text), sha, preview, doc.access,
                                      bytes=len(raw)))
        return entries, blobs, decoded

    def __repr__(self) -> str:
        return f"RetrieverSource({type(self.retriever).__name__}, {len(self.history)} snapshots)"
