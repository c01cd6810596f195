"""An offline BM25 retriever behind LangChain's ``BaseRetriever`` interface. Taught in notebook 08.

Why our own and not ``bm25s`` or SQLite FTS5: ``bm25s`` pulls numpy/scipy sparse matrices, which the core does not
depend on; FTS5 needs a database file and tokenizes Chinese poorly without the trigram tokenizer, which cannot match
two-character terms. An inverted index in the standard library's compact arrays (:mod:`._postings`), built once by the
first query, makes a query cost the postings of its terms, not the corpus (issue 33: 20,000+ documents,
``bench/bench_search.py``), and its scores stay easy to read. The production store (notebook 11) ranks inside the
database instead.

Tokens: lower-cased runs of ASCII letters, digits and ``_`` (``__enter__`` stays one token), and
for Chinese (and other CJK, :mod:`evidence_lib._text`) text every character bigram plus each single character, so
上限 and 单批上限 both match ``单批上限为200条``. Scores are BM25 (k1=1.5, b=0.75) computed over the documents
the caller may see only: a permission filter applies *before* anything is ranked or counted.
"""

from __future__ import annotations

import math
import re
import string
import threading
import weakref
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr

from .._text import CJK_RANGES, CJK_WORD_RUN
from ._postings import U32, Postings

__all__ = ["B", "CONTAINING_LIMIT", "K1", "RANKINGS_KEPT", "BM25Retriever", "FixedFilter", "recall_at_k", "tokenize"]

_WORD = re.compile(r"[a-z0-9_]+")
#: Bytes: every one but ``[a-z0-9_]`` becomes a space, so that splitting the ASCII of a lowered text (each other code
#: point replaced by ``?``) gives exactly ``_WORD.findall`` of it, in C passes (twice as fast on 3,000 documents).
_WORD_BYTES = bytes(c if chr(c) in string.ascii_lowercase + string.digits + "_" else 32 for c in range(256))
#: Runs of code points at or above the first CJK one (every CJK run lies inside one): tokenize's first scan.
_HIGH = re.compile(f"[\\U{min(a for a, _ in CJK_RANGES):08x}-\\U0010ffff]+")
K1, B = 1.5, 0.75
#: Rankings a retriever keeps (its queries' answers, most recent first), and at most this many ranked documents in all:
#: the same question asked again by another flow, a copy with another k, or the eval's recall costs no scoring.
RANKINGS_KEPT, RANKED_DOCS_KEPT = 256, 4_000_000
#: Visible sets whose BM25 statistics (document count, average length) a retriever keeps.
VIEWS_KEPT = 16
#: :meth:`BM25Retriever._containing` gives up when the matching tokens hold more postings than this per document.
CONTAINING_LIMIT = 4


def tokenize(text: str) -> list[str]:
    """Lower-cased ASCII words, and runs of CJK word characters (:data:`~evidence_lib._text.CJK_WORD_RUN`: Han
    including Extensions A-I, kana, hangul, fullwidth letters and digits) as single characters plus bigrams."""
    lowered = text.lower()
    tokens = lowered.encode("ascii", "replace").translate(_WORD_BYTES).decode("ascii").split()  # _WORD.findall
    if lowered.isascii():
        return tokens
    for high in _HIGH.findall(lowered):  # CJK runs lie inside runs of high code points: a cheaper first scan
        for run in CJK_WORD_RUN.findall(high):
            tokens.extend(run)
            tokens.extend(run[i:i + 2] for i in range(len(run) - 1))
    return tokens


class FixedFilter:
    """A document predicate whose answers do not change while it lives (one principal's grants over a fixed set of
    documents, :class:`~evidence_lib.retrieval.RetrieverSource`): a :class:`BM25Retriever` asks it once per document
    and keeps the visible set as long as the filter lives. Any other ``allowed`` predicate is asked on every query."""

    __slots__ = ("__weakref__", "pick")

    def __init__(self, pick: Callable[[LCDocument], bool]) -> None:
        self.pick = pick

    def __call__(self, doc: LCDocument) -> bool:
        return bool(self.pick(doc))


class _View:
    """BM25's statistics over the documents one filter lets through: their number, and per document the length
    normaliser ``K1 * (1 - B + B * dl / avgdl)`` with the visible documents' average length (0.0 for the hidden)."""

    __slots__ = ("mask", "n", "norm")

    def __init__(self, lengths: array, mask: bytes | None) -> None:
        self.mask = mask
        seen = range(len(lengths)) if mask is None else [i for i, v in enumerate(mask) if v]
        self.n = len(seen)
        avg = sum(lengths[i] for i in seen) / self.n if self.n else 0.0
        self.norm = array("d", bytes(8 * len(lengths)))
        for i in seen:
            self.norm[i] = K1 * (1 - B + B * lengths[i] / (avg or 1))


Ranking = tuple[array, array]  # (document numbers, scores), best first


class _Shared:
    """What every copy of one retriever shares (``model_copy`` keeps private attributes): the inverted index, built
    once under the lock by the first query and read-only after; the visible sets of live :class:`FixedFilter`
    objects; the statistics of the last :data:`VIEWS_KEPT` visible sets; the last rankings (:data:`RANKINGS_KEPT`)."""

    def __init__(self, documents: list[LCDocument] | None) -> None:
        self.documents = documents
        self.lock = threading.Lock()
        self.postings: Postings | None = None
        self.masks: weakref.WeakKeyDictionary[FixedFilter, bytes | None] = weakref.WeakKeyDictionary()
        self.views: OrderedDict[bytes | None, _View] = OrderedDict()
        self.rankings: OrderedDict[tuple[bytes | None, tuple[str, ...]], Ranking] = OrderedDict()
        self.ranked = 0  # documents held by self.rankings

    def index(self) -> Postings:
        if self.postings is None:
            with self.lock:
                if self.postings is None:
                    self.postings = Postings(tokenize(d.page_content) for d in self.documents or ())
        return self.postings

    def mask(self, pick: Callable[[LCDocument], bool] | None) -> bytes | None:
        """Which documents ``pick`` lets through (``None``: every one)."""
        if pick is None:
            return None
        if isinstance(pick, FixedFilter):
            with self.lock:
                if pick in self.masks:
                    return self.masks[pick]
        docs = self.documents or []
        mask: bytes | None = bytes(bool(pick(d)) for d in docs)
        if mask is not None and mask.count(1) == len(docs):
            mask = None  # everything visible: the whole corpus's statistics, shared with unfiltered queries
        if isinstance(pick, FixedFilter):
            with self.lock:
                self.masks[pick] = mask
        return mask

    def view(self, mask: bytes | None) -> _View:
        with self.lock:
            if (got := self.views.get(mask)) is not None:
                self.views.move_to_end(mask)
                return got
        made = _View(self.index().lengths, mask)
        with self.lock:
            self.views[mask] = made
            while len(self.views) > VIEWS_KEPT:
                self.views.popitem(last=False)
        return made

    def ranking(self, mask: bytes | None, terms: tuple[str, ...]) -> Ranking:
        key = (mask, terms)
        with self.lock:
            if (got := self.rankings.get(key)) is not None:
                self.rankings.move_to_end(key)
                return got
        made = _rank(self.index(), self.view(mask), terms)
        with self.lock:
            if key not in self.rankings:
                self.rankings[key] = made
                self.ranked += len(made[0])
            while len(self.rankings) > RANKINGS_KEPT or (self.ranked > RANKED_DOCS_KEPT and len(self.rankings) > 1):
                self.ranked -= len(self.rankings.popitem(last=False)[1][0])
        return made

    def __copy__(self) -> _Shared:
        return self

    def __deepcopy__(self, memo: dict) -> _Shared:
        return _Shared(None)  # a deep copy has its own documents: it builds its own index

    def __reduce__(self) -> tuple[type, tuple[None]]:
        return _Shared, (None,)


def _rank(postings: Postings, view: _View, terms: Sequence[str]) -> Ranking:
    """BM25 of every visible document holding a term: only the terms' postings are read. Document frequencies count
    visible documents only; each document's score adds its terms' parts in query order (the same floats as scoring
    document by document); ties keep corpus order."""
    scores: dict[int, float] = {}
    get, n, norm, mask, k1_plus_1 = scores.get, view.n, view.norm, view.mask, K1 + 1
    for t in terms:
        ids, tfs = postings.row(t)
        hits = [(i, f) for i, f in zip(ids, tfs) if mask[i]] if mask is not None else None
        df = len(ids) if hits is None else len(hits)
        if not df:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for i, f in zip(ids, tfs) if hits is None else hits:
            scores[i] = get(i, 0.0) + idf * f * k1_plus_1 / (f + norm[i])
    ranked = sorted((p for p in scores.items() if p[1] > 0), key=lambda p: (-p[1], p[0]))
    return array(U32, [i for i, _ in ranked]), array("d", [s for _, s in ranked])


class BM25Retriever(BaseRetriever):
    """BM25 over a fixed list of LangChain ``Document``s; ``k`` documents per query, best first.

    ``allowed`` (set per principal by the evidence tools, see :class:`~evidence_lib.retrieval.RetrieverSource`)
    removes documents before ranking: hidden documents never take a top-k slot or change a score. An inverted index
    (:class:`~evidence_lib.retrieval._postings.Postings`), built by the first query and shared by every copy, makes
    a query cost the postings of its terms, not the corpus. Treat ``documents`` as fixed once built.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    documents: list[LCDocument]
    k: int = Field(20, ge=1, le=200)
    allowed: Callable[[LCDocument], bool] | None = None
    _shared: _Shared = PrivateAttr()

    def model_post_init(self, __context: Any) -> None:
        self._shared = _Shared(self.documents)

    @classmethod
    def from_texts(cls, texts: Mapping[str, str], *, k: int = 20, **metadata: Any) -> BM25Retriever:
        """One ``Document`` per ``doc_id -> text`` (metadata ``doc_id``, plus any ``metadata`` given)."""
        return cls(documents=[LCDocument(page_content=t, metadata={"doc_id": d, **metadata})
                              for d, t in texts.items()], k=k)

    def _own(self) -> _Shared:
        shared = self._shared
        if shared.documents is not self.documents:  # a copy given other documents builds its own index
            shared = self._shared = _Shared(self.documents)
        return shared

    def _containing(self, piece: str) -> set[int] | None:
        """Which ``documents`` (their numbers) hold a token containing ``piece`` (lower-case ASCII word characters), or
        ``None`` when those tokens' postings number more than :data:`CONTAINING_LIMIT` per document (then scanning is
        no dearer). A document holding ``piece``'s word characters in any case is among them: locate reads only those
        (issue 33)."""
        return self._own().index().containing(piece, CONTAINING_LIMIT * len(self.documents))

    def _ranking(self, query: str, allowed: Callable[[LCDocument], bool] | None) -> Ranking:
        shared = self._own()
        terms = tuple(dict.fromkeys(tokenize(query)))
        return shared.ranking(shared.mask(allowed or self.allowed), terms)

    def document_share(self, token: str) -> float:
        """The share of the documents the retriever may see (``allowed``) that hold ``token`` (one :func:`tokenize`
        token; 0.0 when none is visible): how common a word is in the corpus, from the index BM25 ranks with. Hidden
        documents are not counted."""
        shared = self._own()
        mask = shared.mask(self.allowed)
        visible = shared.view(mask).n
        ids, _ = shared.index().row(token)
        held = len(ids) if mask is None else sum(1 for i in ids if mask[i])
        return held / visible if visible else 0.0

    def scores(self, query: str, allowed: Callable[[LCDocument], bool] | None = None) -> list[tuple[int, float]]:
        """``(document index, score)`` for every allowed document with a positive score, best first."""
        ids, scores = self._ranking(query, allowed)
        return list(zip(ids, scores))

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[LCDocument]:
        return [self.documents[i] for i in self._ranking(query, None)[0][: self.k]]


def recall_at_k(retriever: BaseRetriever, items: Sequence[Mapping[str, Any]], ks: Iterable[int] = (1, 3, 5, 10, 20),
                doc_id_key: str = "doc_id") -> dict[int, float]:
    """Share of questions whose answer document is among the first k retrieved (the question as the query).

    A :class:`BM25Retriever` answers a question it already ranked (the eval's flows asked it) from the rankings it
    keeps, so this report scores nothing again."""
    ranks = []
    for item in items:
        got = [d.metadata.get(doc_id_key) for d in retriever.invoke(item["question"])]
        ranks.append(got.index(item["doc_id"]) + 1 if item["doc_id"] in got else None)
    return {k: round(sum(1 for r in ranks if r is not None and r <= k) / len(ranks), 3) for k in ks}
