"""BM25's inverted index: per term, the documents holding it and how often, in compact arrays. Issue 33; notebook 08.

Built once from every document's tokens, read-only after: a query reads the postings of its own terms only, so its
cost grows with the postings it touches, not with the corpus. Three flat arrays in the compressed-sparse-row layout
(``array`` from the standard library: no numpy in the core) hold every posting; ``terms`` maps a token to its row.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = ["Postings"]

#: An unsigned typecode of at least 4 bytes (document numbers and term frequencies).
U32 = "I" if array("I").itemsize >= 4 else "L"


class Postings:
    """Term ``t``'s documents are ``ids[starts[t]:starts[t + 1]]`` in corpus order, its frequency in each at the same
    places of ``tfs``; ``lengths[i]`` is document ``i``'s token count. Built once; never changed after."""

    __slots__ = ("_vocabulary", "lengths", "ids", "starts", "terms", "tfs")

    def __init__(self, token_lists: Iterable[Sequence[str]]) -> None:
        self.terms: dict[str, int] = {}
        rows_ids: list[array] = []
        rows_tfs: list[array] = []
        self.lengths = array(U32)
        row = self.terms.get
        for i, tokens in enumerate(token_lists):
            self.lengths.append(len(tokens))
            for term, f in Counter(tokens).items():
                t = row(term)
                if t is None:
                    t = self.terms[term] = len(rows_ids)
                    rows_ids.append(array(U32))
                    rows_tfs.append(array(U32))
                rows_ids[t].append(i)
                rows_tfs[t].append(f)
        self.starts, self.ids, self.tfs = array("Q", [0]), array(U32), array(U32)
        for t in range(len(rows_ids)):  # one row at a time into the flat arrays, each row freed as it is copied
            self.ids.extend(rows_ids[t])
            self.tfs.extend(rows_tfs[t])
            rows_ids[t] = rows_tfs[t] = array(U32)
            self.starts.append(len(self.ids))
        self._vocabulary: tuple[str, array] | None = None  # built by the first containing()

    def row(self, term: str) -> tuple[array, array]:
        """``(document numbers, term frequencies)`` of ``term``'s postings (empty when no document holds it)."""
        t = self.terms.get(term)
        if t is None:
            return array(U32), array(U32)
        lo, hi = self.starts[t], self.starts[t + 1]
        return self.ids[lo:hi], self.tfs[lo:hi]

    def containing(self, piece: str, limit: int) -> set[int] | None:
        """The documents holding a token that contains ``piece`` (lower-case, no line break), or ``None`` when those
        tokens have more than ``limit`` postings in all (reading them would cost more than it saves).

        What lets locate skip documents that cannot hold a literal word (issue 33): the tokens are scanned once as one
        string, a few hundred kilobytes, instead of the corpus."""
        vocabulary, offsets = self._words()
        found: list[int] = []
        i = vocabulary.find(piece)
        while i >= 0:
            t = bisect_right(offsets, i) - 1
            found.append(t)
            i = vocabulary.find(piece, offsets[t + 1]) if t + 1 < len(offsets) else -1  # on from the next token
        if sum(self.starts[t + 1] - self.starts[t] for t in found) > limit:
            return None
        docs: set[int] = set()
        for t in found:
            docs.update(self.ids[self.starts[t]:self.starts[t + 1]])
        return docs

    def _words(self) -> tuple[str, array]:
        """Every token, in row order, joined by line breaks, and where each starts (built once; a race builds the
        same twice)."""
        got = self._vocabulary
        if got is None:
            words = list(self.terms)  # row order: rows were numbered in insertion order
            offsets, at = array("Q"), 0
            for w in words:
                offsets.append(at)
                at += len(w) + 1
            got = self._vocabulary = ("\n".join(words), offsets)
        return got

    def __len__(self) -> int:
        """The number of documents."""
        return len(self.lengths)
