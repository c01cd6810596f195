"""Page arithmetic and range coverage: the one place that knows what ``[start, end)`` means.

Introduced in notebook 02 (pages) and used by every reader in the series: evidence pages, catalog
sections, artifact sections, the locate cursor, the ledger's ``already_read``, citations and the
answer gate. A range is half-open: ``[start, end)`` holds the characters ``start .. end - 1`` of a
Python string, so ``text[start:end]`` is exactly the cited text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ._errors import EvidenceError
from ._spans import is_int, text_key

__all__ = ["BOUND_CODES", "MAX_INDEX", "MAX_PAGE_CHARS", "T", "Page", "PageRequest", "batch", "check_int",
           "covering", "covering_reads", "covers", "page", "page_reply", "page_request"]

T = TypeVar("T")

#: Largest offset a store needs to represent (2**53 - 1 is also the largest integer JSON readers agree on).
MAX_INDEX = 2**53 - 1
#: The one page-size limit, in characters: evidence pages, catalog sections and artifact pages alike.
MAX_PAGE_CHARS = 800
#: Which stable code a crossed schema bound raises, per argument: one map for every reading tool.
BOUND_CODES = {"query": "invalid_query", "term": "invalid_term", "offset": "invalid_page_bounds",
               "limit": "invalid_page_bounds", "cursor": "invalid_page_bounds"}


def check_int(value: Any, lo: int, hi: int | None = None, code: str = "invalid_page_bounds") -> int:
    """``value`` if it is an int (not a bool) within ``[lo, hi]`` (``hi=None``: no upper bound); else ``EvidenceError(code)``."""
    if not is_int(value) or value < lo or (hi is not None and value > hi):
        raise EvidenceError(code)
    return value


@dataclass(frozen=True)
class Page:
    """Where one page starts and ends, and where the next one would start (``None`` at the end)."""

    start: int
    end: int
    total: int

    @property
    def next_offset(self) -> int | None:
        return self.end if self.end < self.total else None


@dataclass(frozen=True)
class PageRequest:
    """An ``offset`` and ``limit`` whose bounds were checked (:func:`page_request`): what a reader asks for before it
    knows how long the text is."""

    offset: int
    limit: int

    def within(self, total: int) -> Page:
        """The page of something ``total`` units long: ``offset_exceeds_document`` (with ``total_chars``) past its
        end; ``offset == total`` is a valid, empty last page. The bounds are not checked again."""
        if self.offset > total:
            raise EvidenceError("offset_exceeds_document", total_chars=total)
        return Page(self.offset, min(self.offset + self.limit, total), total)


def page_request(offset: Any, limit: Any, max_limit: int) -> PageRequest:
    """``offset`` and ``limit`` checked once (ints, ``offset >= 0``, ``1 <= limit <= max_limit``), else
    ``invalid_page_bounds``: a constraint enforced once, before anything is looked up."""
    return PageRequest(check_int(offset, 0), check_int(limit, 1, max_limit))


def page(total: int, offset: Any, limit: Any, max_limit: int) -> Page:
    """The page ``[offset, min(offset + limit, total))`` of something ``total`` units long.

    Bounds are checked first (``invalid_page_bounds``), then the offset against the length
    (``offset_exceeds_document``, which tells the caller ``total_chars``). ``offset == total`` is a
    valid, empty last page.
    """
    return page_request(offset, limit, max_limit).within(total)


def page_reply(labels: dict[str, Any], p: Page, text: str) -> dict[str, Any]:
    """The one page body every reader returns: what the text is (``labels``: ids, revision, sha256, ...), then
    ``start``, ``end``, ``total_chars``, ``next_offset`` and the page's ``text``, in that order."""
    return {**labels, "start": p.start, "end": p.end, "total_chars": p.total, "next_offset": p.next_offset,
            "text": text}


def covering(ranges: Iterable[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]] | None:
    """The earlier ranges that together cover ``[start, end)``, or ``None`` if they do not.

    An empty range ``[s, s)`` is covered only by a range that touches position ``s``
    (``a <= s <= b``): citing nothing from a document nobody read is not covered.
    """
    if start > end:
        return None
    spans = sorted((a, b) for a, b in ranges if a <= b)
    if start == end:
        for a, b in spans:
            if a <= start <= b:
                return [(a, b)]
        return None
    used: list[tuple[int, int]] = []
    reach = start
    for a, b in spans:
        if a <= reach < b:
            used.append((a, b))
            reach = b
            if reach >= end:
                return used
    return None


def covers(ranges: Iterable[tuple[int, int]], start: int, end: int) -> bool:
    """Whether ``ranges`` together cover ``[start, end)`` (see :func:`covering`)."""
    return covering(ranges, start, end) is not None


def covering_reads(reads: Iterable[Any], doc_id: str, revision: str, sha256: str, start: int,
                   end: int) -> list[tuple[int, int]] | None:
    """The earlier reads *of the same bytes* that cover ``[start, end)``, else ``None``: the one coverage check.

    ``reads`` are records with ``doc_id``, ``revision``, ``start``, ``end`` and ``sha256`` attributes (a ledger's
    :class:`~evidence_lib._ledger.ReadRecord`, a profile's ``Excerpt``). Only reads of the same bytes
    (:func:`~evidence_lib._spans.text_key`) count. Used by both ledgers (``already_read``), citations
    (``never_read``), the checker and the eval flows.
    """
    key = text_key(doc_id, revision, sha256)
    return covering(((r.start, r.end) for r in reads if text_key(r.doc_id, r.revision, r.sha256) == key), start, end)


def batch(items: Sequence[T], cursor: Any, size: int) -> tuple[list[T], int | None]:
    """Items ``[cursor, cursor + size)`` and the cursor of the next batch (``None`` when done)."""
    check_int(cursor, 0)
    chunk = list(items[cursor: cursor + size])
    nxt = cursor + len(chunk)
    return chunk, (nxt if nxt < len(items) else None)
