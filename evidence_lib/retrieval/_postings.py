"""BM25's inverted index: per term, the documents holding it and how often, in compact arrays. Issue 33; notebook 08.

Built once from every document's tokens, read-only after: a query reads the postings of its own terms only, so its
cost grows with the postings it touches, not with the corpus. Three flat arrays in the compressed-sparse-row layout
(``array`` from the standard library: no numpy in the core) hold every posting; ``terms`` maps a token to its row.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = ["Postings"]

#: An unsigned typecode of at least 4 bytes (document numbers and term frequencies).
U32 = "I" if array("I").itemsize >= 4 else "L"


class Postings:
    """Term ``t``'s documents are ``ids[starts[t]:starts[t + 1]]`` in corpus order, its frequency in each at the same
    places of ``tfs``; ``lengths[i]`` is document ``i``'s token count. Built once; never changed after."""

    __slots__ = ("lengths", "ids", "starts", "terms", "tfs")

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

    def row(self, term: str) -> tuple[array, array]:
        """``(document numbers, term frequencies)`` of ``term``'s postings (empty when no document holds it)."""
        t = self.terms.get(term)
        if t is None:
            return array(U32), array(U32)
        lo, hi = self.starts[t], self.starts[t + 1]
        return self.ids[lo:hi], self.tfs[lo:hi]

    def __len__(self) -> int:
        """The number of documents."""
        return len(self.lengths)
