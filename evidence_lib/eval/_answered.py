"""When the eval counts a question as answered by a protocol flow: the check notebook 08 teaches.

A flow has answered when a citation that covers the answer span can be built from text the tools *showed* it (pages
read, compact locate excerpts) and the server verifies it. Nothing else counts: not the answer's document being
among the candidates, not a match offset, not text the flow never received.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._answers import format_answer
from .._citations import Citation, Excerpt, verify_citation
from .._index import EvidenceIndex
from .._measure import utf8_bytes

__all__ = ["answer_citation", "physical_floor", "shown_ranges"]


def shown_ranges(doc_id: str, shown: Sequence[Excerpt]) -> list[tuple[int, int, str, str]]:
    """Notebook 08: the ranges of ``doc_id`` the tools showed, ``(start, end, revision, sha256)`` by position.

    Excerpts that touch or overlap and come from the same bytes (same revision and hash, or handle) are merged into
    one range: a page read right after an excerpt continues it, so together they can hold a longer answer.
    """
    merged: list[list[Any]] = []
    for x in sorted((x for x in shown if x.doc_id == doc_id), key=lambda x: (x.start, x.end)):
        if merged and x.start <= merged[-1][1] and (x.revision, x.sha256) == (merged[-1][2], merged[-1][3]):
            merged[-1][1] = max(merged[-1][1], x.end)
        else:
            merged.append([x.start, x.end, x.revision, x.sha256])
    return [(start, end, revision, sha256) for start, end, revision, sha256 in merged]


def answer_citation(corpus: EvidenceIndex, item: Mapping[str, Any], shown: Sequence[Excerpt]) -> Citation | None:
    """Notebook 08, the eval's rule for "answered": a citation that covers the answer span, built only from text the
    tools showed (``shown``) and accepted by :func:`~evidence_lib._citations.verify_citation`; else ``None``."""
    for start, end, revision, sha256 in shown_ranges(item["doc_id"], shown):
        if start <= item["start"] and item["end"] <= end:  # this range holds the whole answer span
            cite = Citation(item["doc_id"], revision, start, end, sha256)
            if verify_citation(corpus, cite, shown).ok:  # same bytes as stored, and shown to the reader
                return cite
    return None


def physical_floor(item: Mapping[str, Any], revision: str) -> int:
    """The fewest UTF-8 bytes any flow could be shown to answer ``item``: its answer span with its citation, written as
    the one answer format writes a Sources line (:func:`~evidence_lib.format_answer`: ``[1] doc_id@revision [start,
    end) "span"``), the span counted once. The eval divides each flow's median bytes by the set's median floor."""
    line = format_answer("", [(item["doc_id"], revision, item["start"], item["end"], item["answer_span"])])
    return utf8_bytes(line.rpartition("\n")[2])
