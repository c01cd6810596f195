"""Keyword location inside the tool, positions out. Taught in notebooks 02 (article) and 04 (scenario 3).

The default reproduces the article: literal match, first occurrence per document, at most five
positions in all. :class:`LocateOptions` switches on what the article says production needs:
every match with a cursor, matching under Unicode NFC (offsets still index the original text),
and an explicit "no literal match" note so an empty list is never read as "no such rule".
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Literal

from .paging import batch

NO_MATCH_NOTE = (
    "no literal match for this term; this is not evidence that the answer is absent. "
    "Try a variant or synonym, or read the candidates."
)


@dataclass(frozen=True)
class LocateOptions:
    """How ``locate_evidence`` behaves; the defaults are the article's teaching version."""

    max_positions: int = 5
    max_doc_matches: int = 20  # per batch when locate is restricted to one doc_id (a retriever or compact tools)
    max_term_chars: int = 64
    paged: bool = False  # every match, ``max_positions`` per batch, with ``next_cursor``
    normalization: Literal["none", "NFC"] = "none"
    explicit_miss: bool = False  # return an object with a "note" instead of a bare []

    @property
    def structured(self) -> bool:
        return self.paged or self.explicit_miss or self.normalization != "none"


def _groups(text: str) -> Iterator[tuple[int, int]]:
    """Split ``text`` into [start, end) runs that NFC normalizes independently.

    A run ends before a starter (its decomposition starts with combining class 0) that does not
    compose with the run so far:
    NFC(run + c) == NFC(run) + NFC(c). Later characters cannot reach past such a starter, so
    normalizing run by run equals normalizing the whole text.
    """
    nfc = unicodedata.normalize
    start = 0
    for i in range(1, len(text)):
        c = text[i]
        if unicodedata.combining(unicodedata.normalize("NFD", c)[0]) == 0:
            run = text[start:i]
            if nfc("NFC", run + c) == nfc("NFC", run) + nfc("NFC", c):
                yield start, i
                start = i
    if text:
        yield start, len(text)


def nfc_with_map(text: str) -> tuple[str, list[int], list[int]]:
    """NFC form of ``text`` and, per normalized char, the original [start, end) of its source run."""
    if unicodedata.is_normalized("NFC", text):
        idx = list(range(len(text)))
        return text, idx, [i + 1 for i in idx]
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for s, e in _groups(text):
        piece = unicodedata.normalize("NFC", text[s:e])
        out.append(piece)
        starts.extend([s] * len(piece))
        ends.extend([e] * len(piece))
    return "".join(out), starts, ends


def find_all(text: str, term: str, first_only: bool = False) -> Iterator[int]:
    """Every offset of ``term`` in ``text`` (``str.find``, overlapping matches included), or only the first."""
    i = text.find(term)
    while i >= 0:
        yield i
        if first_only:
            return
        i = text.find(term, i + 1)


def _matches(text: str, term: str, opts: LocateOptions, first_only: bool) -> Iterator[int]:
    if opts.normalization == "NFC":
        norm, starts, _ = nfc_with_map(text)
        for i in find_all(norm, unicodedata.normalize("NFC", term), first_only):
            yield starts[i]
    else:
        yield from find_all(text, term, first_only)


def find(texts: Iterable[tuple[str, str]], term: str, opts: LocateOptions = LocateOptions(),
         first_only: bool = False) -> Iterator[tuple[str, int]]:
    """``(doc_id, offset)`` of every match (or the first per document), lazily, in the order of ``texts``.

    This is the scan: every text is produced (read and re-hashed by the index) and searched with
    ``str.find``. A store with a real index provides its own ``find`` with the same results.
    """
    for doc_id, text in texts:
        for offset in _matches(text, term, opts, first_only):
            yield doc_id, offset


def shape(hits: Iterable[tuple[str, int]], term: str, opts: LocateOptions = LocateOptions(),
          cursor: int = 0) -> list[dict[str, object]] | dict[str, object]:
    """What ``locate_evidence`` returns for ``hits`` under ``opts`` (a bare list, or an object with a cursor)."""
    if not opts.paged:
        out = [{"doc_id": d, "offset": o} for d, o in islice(hits, opts.max_positions)]
        return out if not opts.structured else _structured(term, opts, out, None)
    every = [{"doc_id": d, "offset": o} for d, o in hits]
    chunk, nxt = batch(every, cursor, opts.max_positions)
    return _structured(term, opts, chunk, nxt, total=len(every))


def locate(
    texts: Iterable[tuple[str, str]], term: str, opts: LocateOptions = LocateOptions(), cursor: int = 0
) -> list[dict[str, object]] | dict[str, object]:
    """Positions of ``term`` in ``(doc_id, text)`` pairs, shaped as ``opts`` says."""
    return shape(find(texts, term, opts, first_only=not opts.paged), term, opts, cursor)


def _structured(term: str, opts: LocateOptions, matches: list, next_cursor: int | None,
                total: int | None = None) -> dict[str, object]:
    out: dict[str, object] = {
        "term": term,
        "matching": "literal after NFC" if opts.normalization == "NFC" else "literal",
        "matches": matches,
    }
    if opts.paged:
        out["next_cursor"] = next_cursor
        out["total_matches"] = total
    if (total == 0) if opts.paged else not matches:
        out["note"] = NO_MATCH_NOTE
    return out
