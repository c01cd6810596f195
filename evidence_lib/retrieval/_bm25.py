"""An offline BM25 retriever behind LangChain's ``BaseRetriever`` interface. Taught in notebook 08.

Why our own and not ``bm25s`` or SQLite FTS5: the series' corpora are small (79 pydoc topics, a
handful of Chinese handbook pages), so a pure-Python inverted index builds in milliseconds, adds no
dependency (``bm25s`` pulls numpy/scipy sparse matrices; FTS5 needs a database file and tokenizes
Chinese poorly without the trigram tokenizer, which cannot match two-character terms), and its
scores are easy to read. The production store (notebook 11) ranks inside the database instead.

Tokens: lower-cased runs of ASCII letters, digits and ``_`` (``__enter__`` stays one token), and
for Chinese (and other CJK, :mod:`evidence_lib._text`) text every character bigram plus each single character, so
上限 and 单批上限 both match ``单批上限为200条``. Scores are BM25 (k1=1.5, b=0.75) computed over the documents
the caller may see only: a permission filter applies *before* anything is ranked or counted.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr

from .._text import CJK_WORD_RUN

__all__ = ["B", "K1", "BM25Retriever", "recall_at_k", "tokenize"]

_WORD = re.compile(r"[a-z0-9_]+")
K1, B = 1.5, 0.75


def tokenize(text: str) -> list[str]:
    """Lower-cased ASCII words, and runs of CJK word characters (:data:`~evidence_lib._text.CJK_WORD_RUN`: Han
    including Extensions A-I, kana, hangul, fullwidth letters and digits) as single characters plus bigrams."""
    lowered = text.lower()
    tokens = _WORD.findall(lowered)
    for run in CJK_WORD_RUN.findall(lowered):
        tokens.extend(run)
        tokens.extend(run[i:i + 2] for i in range(len(run) - 1))
    return tokens


class BM25Retriever(BaseRetriever):
    """BM25 over a fixed list of LangChain ``Document``s; ``k`` documents per query, best first.

    ``allowed`` (set per principal by the evidence tools, see :class:`~evidence_lib.retrieval.RetrieverSource`)
    removes documents before ranking: hidden documents never take a top-k slot or change a score.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    documents: list[LCDocument]
    k: int = Field(20, ge=1, le=200)
    allowed: Callable[[LCDocument], bool] | None = None
    _tf: list[Counter] = PrivateAttr(default_factory=list)
    _len: list[int] = PrivateAttr(default_factory=list)

    def model_post_init(self, __context: Any) -> None:
        self._tf = [Counter(tokenize(d.page_content)) for d in self.documents]
        self._len = [sum(c.values()) for c in self._tf]

    @classmethod
    def from_texts(cls, texts: Mapping[str, str], *, k: int = 20, **metadata: Any) -> BM25Retriever:
        """One ``Document`` per ``doc_id -> text`` (metadata ``doc_id``, plus any ``metadata`` given)."""
        return cls(documents=[LCDocument(page_content=t, metadata={"doc_id": d, **metadata})
                              for d, t in texts.items()], k=k)

    def scores(self, query: str, allowed: Callable[[LCDocument], bool] | None = None) -> list[tuple[int, float]]:
        """``(document index, score)`` for every allowed document with a positive score, best first."""
        pick = allowed or self.allowed
        ids = [i for i, d in enumerate(self.documents) if pick is None or pick(d)]
        if not ids:
            return []
        avg = sum(self._len[i] for i in ids) / len(ids)
        terms = list(dict.fromkeys(tokenize(query)))
        df = {t: sum(1 for i in ids if t in self._tf[i]) for t in terms}
        n = len(ids)
        out = []
        for i in ids:
            tf, dl, score = self._tf[i], self._len[i], 0.0
            for t in terms:
                f = tf.get(t, 0)
                if f:
                    idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                    score += idf * f * (K1 + 1) / (f + K1 * (1 - B + B * dl / (avg or 1)))
            if score > 0:
                out.append((i, score))
        out.sort(key=lambda p: (-p[1], p[0]))  # ties keep corpus order: deterministic
        return out

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[LCDocument]:
        return [self.documents[i] for i, _ in self.scores(query)[: self.k]]


def recall_at_k(retriever: BaseRetriever, items: Sequence[Mapping[str, Any]], ks: Iterable[int] = (1, 3, 5, 10, 20),
                doc_id_key: str = "doc_id") -> dict[int, float]:
    """Share of questions whose answer document is among the first k retrieved (the question as the query)."""
    ranks = []
    for item in items:
        got = [d.metadata.get(doc_id_key) for d in retriever.invoke(item["question"])]
        ranks.append(got.index(item["doc_id"]) + 1 if item["doc_id"] in got else None)
    return {k: round(sum(1 for r in ranks if r is not None and r <= k) / len(ranks), 3) for k in ks}
