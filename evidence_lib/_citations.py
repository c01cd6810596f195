"""Citations that trace back to the exact snapshot, and checks that say why one fails. Taught in notebook 03.

A citation is ``(doc_id, revision, start, end, sha256)``: a half-open range of Python string
indices in one indexed snapshot. :func:`verify_citation` checks it against the index *and* the
reads actually made, so an answer cannot cite text nobody read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ._access import Principal
from ._errors import CITATION_REASONS as REASONS
from ._errors import CitationReason as Reason
from ._errors import EvidenceError
from ._handles import matches_handle
from ._index import IndexProtocol
from ._ledger import Ledger, ReadRecord
from ._lines import shown_revision
from ._paging import covering_reads
from ._spans import Span

__all__ = ["CITATION_FORM", "REASONS", "Answer", "AnswerCheck", "Citation", "CitationCheck", "Excerpt", "Reason", "covered",
           "verify_answer", "verify_citation", "verify_sources"]

#: The form of one ``Sources:`` line (:mod:`evidence_lib._answers`), shown to whoever wrote a line that does not parse.
CITATION_FORM = '[n] doc_id@revision [start, end) "quote"'


@dataclass(frozen=True)
class Citation(Span):
    """Where a claim comes from: a :class:`~evidence_lib._spans.Span` with its ``sha256`` (the full hash, or a compact
    reply's content handle) and, optionally, the ``quote`` the answer says is there."""

    sha256: str = field()  # required here: field() drops the default inherited from Span
    quote: str | None = None

    @classmethod
    def from_page(cls, page: Mapping[str, Any], start: int | None = None, end: int | None = None) -> Citation:
        """Cite a ``read_evidence`` page, or the sub-range ``[start, end)`` of it (quote included)."""
        s = page["start"] if start is None else start
        e = page["end"] if end is None else end
        quote = page["text"][s - page["start"]: e - page["start"]]
        return cls(page["doc_id"], page["revision"], s, e, page["sha256"], quote)


@dataclass(frozen=True)
class Excerpt(Citation):
    """Document text the model was shown, as the citation it supports: ``quote`` is the text shown (also
    :attr:`text`), ``sha256`` the full hex or a compact reply's content handle (``#`` and a hex prefix). The reply
    parsers (:func:`~evidence_lib.profiles.excerpts`) return these. Notebook 08."""

    quote: str = field()  # required here: an excerpt is text that was shown

    @property
    def text(self) -> str:
        """The text shown (the citation's quote)."""
        return self.quote

    def citation(self) -> Citation:
        """This excerpt as a plain :class:`Citation` (what an answer cites)."""
        return Citation(self.doc_id, self.revision, self.start, self.end, self.sha256, self.quote)


@dataclass(frozen=True)
class CitationCheck:
    """One citation's verdict. ``citation`` is ``None`` for a ``Sources:`` line that does not parse (``malformed``);
    ``line`` is the line's place in the ``Sources:`` block (1 = its first non-blank line) when checked from an answer's
    text (:func:`verify_sources`)."""

    citation: Citation | None
    reason: Reason
    line: int | None = None

    @property
    def ok(self) -> bool:
        """True when the citation matched the text it names."""
        return self.reason == "ok"

    def __str__(self) -> str:
        where = self.citation if self.citation is not None else f"Sources line {self.line}"
        return f"{'ok  ' if self.ok else 'FAIL'}  {where}  {self.reason}: {REASONS[self.reason]}"


def _ranges(reads: Ledger | Iterable[ReadRecord | Mapping[str, Any] | Excerpt]) -> list[ReadRecord]:
    items = reads.reads if isinstance(reads, Ledger) else reads
    out = []
    for r in items:
        if isinstance(r, ReadRecord):
            out.append(r)
        elif isinstance(r, Mapping) and "text" in r and "sha256" in r:  # a read_evidence page body
            out.append(ReadRecord(r["doc_id"], r["revision"], r["start"], r["end"], r["sha256"]))
        elif not isinstance(r, Mapping) and all(hasattr(r, k) for k in ("doc_id", "revision", "start", "end", "sha256",
                                                                      "text")):
            out.append(ReadRecord(r.doc_id, r.revision, r.start, r.end, r.sha256))  # a profiles.Excerpt
    return out


def covered(reads: Iterable[ReadRecord], c: Citation) -> bool:
    """Whether reads *of the cited bytes* (same doc_id, revision and sha256) cover the cited range.

    A read whose sha256 is a content handle (an excerpt parsed from a compact reply) counts for the full hash it
    names (the caller has resolved ``c.sha256`` against the index first)."""
    reads = [replace(r, sha256=c.sha256) if r.doc_id == c.doc_id and r.sha256 != c.sha256
             and matches_handle(c.sha256, r.sha256) else r for r in reads]
    return covering_reads(reads, c.doc_id, c.revision, c.sha256, c.start, c.end) is not None


def verify_citation(index: IndexProtocol, citation: Citation, reads: Ledger | Iterable,
                    principal: Principal | None = None) -> CitationCheck:
    """Check ``citation`` against the index, the stored bytes and the reads made; say why it fails.

    The revision may be quoted as stored or as the replies show it (cut to 40 characters); the sha256 is the full
    one or a compact reply's content handle (``#`` and 6+ hex digits), resolved here against the full hash the
    index recorded. Only the cited range's bytes are fetched, and they are verified before they are compared. An
    empty range ``[s, s)`` cites no text: ``empty_range``, whatever the document.
    """
    if citation.start == citation.end:
        return CitationCheck(citation, "empty_range")
    try:
        entry = index.entry(citation.doc_id, principal, "read")
    except EvidenceError:
        return CitationCheck(citation, "unknown_doc_id")
    if citation.revision not in (entry.revision, shown_revision(entry.revision)) \
            or not isinstance(citation.sha256, str) or not matches_handle(entry.sha256, citation.sha256):
        return CitationCheck(citation, "document_changed")
    if citation.sha256 != entry.sha256:  # a compact reply's content handle: the server knows the full hash
        citation = replace(citation, sha256=entry.sha256)
    if citation.end > entry.chars:  # a Citation is a valid [start, end) (spans.is_range): only the length is left
        return CitationCheck(citation, "out_of_bounds")
    try:
        text = index.text(entry.doc_id, principal, citation.start, citation.end)
    except EvidenceError:
        return CitationCheck(citation, "document_changed")
    if not covered(_ranges(reads), citation):
        return CitationCheck(citation, "never_read")
    if citation.quote is not None and text != citation.quote:
        return CitationCheck(citation, "text_mismatch")
    return CitationCheck(citation, "ok")


@dataclass(frozen=True)
class Answer:
    """A final answer: its text and the citations that support it."""

    text: str
    citations: tuple[Citation, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class AnswerCheck:
    """What ``verify_citations`` found for one answer: one ``CitationCheck`` per citation."""

    answer: Answer
    checks: tuple[CitationCheck, ...]

    @property
    def ok(self) -> bool:
        """True when the answer cites something and every citation checks out."""
        return bool(self.checks) and all(c.ok for c in self.checks)

    def __str__(self) -> str:
        head = f"answer {'verified' if self.ok else 'NOT verified'}: {self.answer.text}"
        if not self.checks:
            return head + f"\n  {REASONS['no_citations']}"
        return "\n".join([head, *(f"  {c}" for c in self.checks)])


def verify_answer(index: IndexProtocol, answer: Answer, reads: Ledger | Iterable,
                  principal: Principal | None = None) -> AnswerCheck:
    """Verify every citation of ``answer``; an answer with no citation is not verified."""
    reads = reads if isinstance(reads, Ledger) else list(reads)
    return AnswerCheck(answer, tuple(verify_citation(index, c, reads, principal) for c in answer.citations))


def verify_sources(index: IndexProtocol, text: str, reads: Ledger | Iterable,
                   principal: Principal | None = None) -> list[CitationCheck]:
    """Every ``Sources:`` line of the final answer ``text`` in line order (as :func:`~evidence_lib._answers.parse_answer`
    reads them), checked with :func:`verify_citation`; a line without a content handle is checked against the sha256
    the index holds for the document it names, and a line that does not parse is ``malformed`` (no citation; its
    ``line`` says which). Each check carries its line. The one check behind ``EvidenceMiddleware.verify_answer``
    (notebook 12) and the MCP server's ``verify_citations``."""
    from ._answers import parse_answer  # here: `import evidence_lib` loads citations, not the answer format

    reads = reads if isinstance(reads, Ledger) else list(reads)
    checks = []
    for n, c in enumerate(parse_answer(text).lines, 1):
        if c is None:
            checks.append(CitationCheck(None, "malformed", n))
            continue
        sha = c.sha256
        if sha is None:
            try:
                sha = index.entry(c.doc_id, principal).sha256
            except EvidenceError:  # an unknown doc_id: the check reports it
                sha = ""
        check = verify_citation(index, Citation(c.doc_id, c.revision, c.start, c.end, sha, c.quote), reads, principal)
        checks.append(replace(check, line=n))
    return checks
