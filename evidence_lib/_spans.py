"""The one range type: a half-open ``[start, end)`` of one document's text at one revision. Notebooks 02 and 03.

Every range in the series is a :class:`Span`: a page the model read (:class:`~evidence_lib._ledger.ReadRecord`),
a citation (:class:`~evidence_lib._citations.Citation`), a ``Sources:`` line (:class:`~evidence_lib._answers.CitedRange`)
and a locate excerpt. ``[start, end)`` holds the characters ``start .. end - 1`` of a Python string, so
``text[start:end]`` is exactly the spanned text. ``sha256`` binds the range to the bytes it came from, where known.

The constraint is declared once (:func:`is_range`: two real integers with ``0 <= start <= end``) and enforced once,
when a span is built: an impossible span cannot exist, so no later layer re-checks it. Building one from untrusted
values (a model's answer, a stored reply) raises ``EvidenceError("invalid_range")``; a parser that must never raise
asks :func:`is_range` first and reports the problem instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._errors import EvidenceError
from ._lines import shown_revision

__all__ = ["Span", "check_range", "is_int", "is_range", "text_key"]


def is_int(value: Any) -> bool:
    """True for real integers only: ``True`` and ``1.0`` are not offsets."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_range(start: Any, end: Any) -> bool:
    """Whether ``[start, end)`` is a range at all: two real integers with ``0 <= start <= end`` (the one rule)."""
    return is_int(start) and is_int(end) and 0 <= start <= end


def text_key(doc_id: str, revision: str, sha256: str | None) -> tuple[str, str, str | None]:
    """What two ranges must share to be ranges of the same bytes: doc_id, the revision as shown
    (:func:`~evidence_lib._lines.shown_revision`, so a cut revision names its full one) and sha256."""
    return doc_id, shown_revision(revision), sha256


def check_range(start: Any, end: Any) -> None:
    """Raise ``EvidenceError("invalid_range")`` unless :func:`is_range` holds."""
    if not is_range(start, end):
        raise EvidenceError("invalid_range")


@dataclass(frozen=True)
class Span:
    """``[start, end)`` of document ``doc_id`` at ``revision``, and the sha256 of the bytes it came from (or
    ``None`` when not known). Equal spans are equal field by field and of the same class."""

    doc_id: str
    revision: str
    start: int
    end: int
    sha256: str | None = None

    def __post_init__(self) -> None:
        check_range(self.start, self.end)

    @property
    def length(self) -> int:
        """How many characters the span holds (``end - start``)."""
        return self.end - self.start

    def same_text(self, other: Span) -> bool:
        """Whether both spans name the same bytes (:func:`text_key`)."""
        return text_key(self.doc_id, self.revision, self.sha256) == text_key(other.doc_id, other.revision, other.sha256)

    def covers(self, other: Span) -> bool:
        """Whether ``other`` lies inside this span of the same bytes. An empty ``[s, s)`` is covered by a span that
        touches ``s`` (``start <= s <= end``), as in :func:`~evidence_lib._paging.covering`."""
        return self.same_text(other) and self.start <= other.start and other.end <= self.end

    def overlaps(self, other: Span) -> bool:
        """Whether the two spans of the same bytes share at least one character (an empty span shares none)."""
        return self.same_text(other) and max(self.start, other.start) < min(self.end, other.end)

    def __str__(self) -> str:
        return f"{self.doc_id}@{self.revision} [{self.start}, {self.end})"
