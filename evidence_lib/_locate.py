r"""Keyword location inside the tool, positions out. Taught in notebooks 02 (article) and 04 (scenario 3).

The default reproduces the article: literal match, first occurrence per document, at most five
positions in all. :class:`LocateOptions` switches on what the article says production needs:
every match with a cursor, matching under Unicode NFC (offsets still index the original text),
matching across wrapped lines (below), and an explicit "no literal match" note so an empty list is
never read as "no such rule".

Wrapped text (``LocateOptions(wrapped=True)``, issue 17 item 4). Text extracted from PDFs, man pages
or fixed-width sources breaks lines inside words, where a literal search finds nothing. The rule,
between two consecutive characters ``a b`` of the term (never before the first or after the last):

* a **wrap** is optional horizontal white space (U+0020, U+0009, U+3000 ideographic space), exactly
  one line break (``\r\n``, ``\r`` or ``\n``), optional horizontal white space (the indentation).
  White space without a line break is not a wrap, and neither is a blank line (two line breaks).
* If ``a`` and ``b`` are both CJK (:func:`is_cjk`: Han, kana, hangul, bopomofo, CJK punctuation,
  fullwidth forms; U+3000 is white space, not CJK), the text may hold a wrap between them:
  ``批处\n    理`` matches ``批处理``.
* If ``a`` and ``b`` are both Latin letters (:func:`is_latin_letter`), the text may hold a hyphen
  (``-``, U+2010 or U+00AD soft hyphen) that is not in the term, directly after ``a``, then a wrap:
  ``exam-\n  ple`` matches ``example``. Without the hyphen it is two words: ``exam\nple``,
  ``exam -\nple`` and ``exam-ple`` do not match ``example``.
* If ``a`` is one of those hyphens, the character before it in the term is a Latin letter and ``b``
  is a Latin letter, the text may hold a wrap after the term's own hyphen: ``command-\n  line``
  matches ``command-line`` (and, by the previous rule, ``commandline``).
* Nowhere else: not between a CJK and a Latin character, not around digits or other characters.

Every literal match is a wrapped match at the same offset, ending at ``start + len(term)``. The rule
is unambiguous: the character after an allowed wrap is a term character, never white space, a line
break or a hyphen, so a match that starts at an offset has exactly one end (:func:`match_end`,
:func:`find_spans`). Matches overlap as in :func:`find_all`: every start offset where one begins.
With ``normalization="NFC"`` the rule applies to the NFC text and NFC term (so a decomposed ``é``
is a Latin letter), and offsets are mapped back to the original text through :func:`nfc_with_map`.
Matching compiles one regular expression per term: each character literally, joined by an optional
wrap only where the rule allows one; it has no nested repetition (and uses possessive white space
runs), so the work stays proportional to the text times the term, like a literal scan. A caller holding only
a piece of the document from a match's start (a store reads ranges) finds its end with :func:`match_end_within`,
reading on only while the piece may stop inside the match: a wrap's indentation can be any depth (issue 11).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice
from typing import Literal

from ._paging import batch
from ._text import is_cjk

__all__ = ["HYPHENS", "LATIN_RANGES", "NO_MATCH_NOTE", "WRAP_SPACE", "LocateOptions", "find", "find_all",
           "find_spans", "is_latin_letter", "locate", "match_end", "match_end_within", "matching_label",
           "nfc_with_map", "shape", "wrap_points", "wrapped_pattern"]

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
    wrapped: bool = False  # also match across a wrapped line (module docstring); offsets index the original text

    def __post_init__(self) -> None:
        if not isinstance(self.wrapped, bool):
            raise ValueError(f"LocateOptions.wrapped must be True or False, not {self.wrapped!r}")

    @property
    def structured(self) -> bool:
        """Whether these options change the reply's shape (paging, an explicit miss, NFC, wrapped lines): the
        reply is then an object, not the bare list of positions of the teaching version (notebook 04)."""
        return self.paged or self.explicit_miss or self.normalization != "none" or self.wrapped


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
    return _grouped_map(text)


def _grouped_map(text: str) -> tuple[str, list[int], list[int]]:
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for s, e in _groups(text):
        piece = unicodedata.normalize("NFC", text[s:e])
        out.append(piece)
        starts.extend([s] * len(piece))
        ends.extend([e] * len(piece))
    return "".join(out), starts, ends


# -- wrapped lines (the rule is in the module docstring) -----------------------------------------

#: [first, last] code points of Latin letters (precomposed; use NFC for decomposed text).
LATIN_RANGES: tuple[tuple[int, int], ...] = (
    (0x41, 0x5A), (0x61, 0x7A),                 # A-Z, a-z
    (0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0x24F),  # Latin-1 letters (not the multiplication and division signs),
                                                # Latin Extended-A and -B
    (0x1E00, 0x1EFF),                           # Latin Extended Additional
)
#: The hyphens of a hyphenated line break: hyphen-minus, U+2010 HYPHEN, U+00AD SOFT HYPHEN.
HYPHENS = "-\u2010\u00ad"
#: Horizontal white space around the line break of a wrap: space, tab, U+3000 IDEOGRAPHIC SPACE.
WRAP_SPACE = " \t\u3000"

_SPACE_RUN = "[ \\t\\u3000]*+"
_WRAP = f"(?:{_SPACE_RUN}(?:\\r\\n|\\r|\\n){_SPACE_RUN})?"
_HYPHEN_WRAP = f"(?:[\\-\\u2010\\u00ad]{_SPACE_RUN}(?:\\r\\n|\\r|\\n){_SPACE_RUN})?"
_BREAK_CHAR = re.compile("[\r\n]")


def _in(ranges: tuple[tuple[int, int], ...], firsts: list[int], ch: str) -> bool:
    i = bisect_right(firsts, ord(ch)) - 1
    return i >= 0 and ord(ch) <= ranges[i][1]


_LATIN_FIRSTS = [a for a, _ in LATIN_RANGES]


def is_latin_letter(ch: str) -> bool:
    """Whether one character is a Latin letter for the hyphenation rule (:data:`LATIN_RANGES`)."""
    return _in(LATIN_RANGES, _LATIN_FIRSTS, ch)


def wrap_points(term: str) -> list[tuple[int, str]]:
    """``(i, kind)`` for each place before ``term[i]`` where the text may hold a wrap.

    ``kind`` is ``"wrap"`` (a wrap) or ``"hyphen"`` (a hyphen not in the term, then a wrap). A term without
    wrap points matches only literally, so an index may serve it with its literal search.
    """
    out = []
    for i in range(1, len(term)):
        a, b = term[i - 1], term[i]
        if is_cjk(a) and is_cjk(b):
            out.append((i, "wrap"))
        elif is_latin_letter(a) and is_latin_letter(b):
            out.append((i, "hyphen"))
        elif a in HYPHENS and i >= 2 and is_latin_letter(term[i - 2]) and is_latin_letter(b):
            out.append((i, "wrap"))
    return out


@lru_cache(maxsize=256)
def wrapped_pattern(term: str) -> re.Pattern[str] | None:
    """The compiled wrapped-match pattern of ``term``, or None when it has no wrap points (literal only)."""
    points = dict(wrap_points(term))
    if not points:
        return None
    parts = []
    for i, ch in enumerate(term):
        kind = points.get(i)
        if kind:
            parts.append(_WRAP if kind == "wrap" else _HYPHEN_WRAP)
        parts.append(re.escape(ch))
    return re.compile("".join(parts))


def _literal(text: str, term: str, first_only: bool) -> Iterator[int]:
    i = text.find(term)
    while i >= 0:
        yield i
        if first_only:
            return
        i = text.find(term, i + 1)


def _spans(text: str, term: str, wrapped: bool, first_only: bool) -> Iterator[tuple[int, int]]:
    pattern = wrapped_pattern(term) if wrapped else None
    if pattern is None:
        for i in _literal(text, term, first_only):
            yield i, i + len(term)
        return
    m = pattern.search(text)
    while m:
        yield m.start(), m.end()
        if first_only:
            return
        m = pattern.search(text, m.start() + 1)


def _end_at(text: str, i: int, term: str, wrapped: bool) -> int | None:
    pattern = wrapped_pattern(term) if wrapped else None
    if pattern is None:
        return i + len(term) if text.startswith(term, i) else None
    m = pattern.match(text, i)
    return m.end() if m else None


def _options(opts: LocateOptions | None) -> LocateOptions:
    if opts is None:
        return LocateOptions()
    if not isinstance(opts, LocateOptions):
        raise TypeError(f"opts must be LocateOptions or None, not {type(opts).__name__} "
                        "(first_only is a keyword argument)")
    return opts


def find_spans(text: str, term: str, opts: LocateOptions | None = None, *,
               first_only: bool = False) -> Iterator[tuple[int, int]]:
    """``[start, end)`` of every match of ``term`` in ``text`` under ``opts`` (or only the first), lazily.

    Offsets index the original ``text``. A literal match ends at ``start + len(term)``; a wrapped match is
    longer (it covers the wraps and hyphens). Under NFC the span covers whole source runs of the
    normalized characters it matched (:func:`nfc_with_map`).
    """
    opts = _options(opts)
    if opts.normalization != "NFC":
        yield from _spans(text, term, opts.wrapped, first_only)
        return
    norm, starts, ends = nfc_with_map(text)
    for s, e in _spans(norm, unicodedata.normalize("NFC", term), opts.wrapped, first_only):
        start = starts[s] if s < len(starts) else len(text)
        yield start, ends[e - 1] if e > s else start


def find_all(text: str, term: str, opts: LocateOptions | None = None, *, first_only: bool = False) -> Iterator[int]:
    """Every start offset of ``term`` in ``text`` (overlapping matches included), or only the first, lazily.

    Without ``opts`` (or with literal, un-normalized options) this is ``str.find``; otherwise the offsets of
    :func:`find_spans`.
    """
    opts = _options(opts)
    if opts.normalization == "none" and not opts.wrapped:
        return _literal(text, term, first_only)
    return (s for s, _ in find_spans(text, term, opts, first_only=first_only))


def match_end(text: str, start: int, term: str, opts: LocateOptions | None = None) -> int:
    """The end offset (in ``text``) of the match of ``term`` that starts at ``start``; ValueError if none does.

    ``start`` is an offset :func:`find_all` / :func:`find` reported for this ``text``, so an excerpt can cover
    exactly ``text[start:match_end(...)]``. Without NFC, ``text`` may also be a slice of the document that
    begins at or before the match (pass ``start`` relative to it): the answer is exact once the slice reaches
    the match's end (a shorter slice: ValueError, read more); the work is proportional to the match. With
    NFC pass the whole document: :func:`nfc_with_map` maps an already normalized text character by
    character and any other text by normalization runs, so the offsets depend on the whole text (one
    ``unicodedata.is_normalized`` pass, then work proportional to the lines the match can span).
    """
    opts = _options(opts)
    if not isinstance(start, int) or not 0 <= start <= len(text):
        raise ValueError(f"start {start!r} is outside the text")
    nterm = unicodedata.normalize("NFC", term) if opts.normalization == "NFC" else term
    if opts.normalization != "NFC" or unicodedata.is_normalized("NFC", text):  # NFC: the identity map
        end = _end_at(text, start, nterm, opts.wrapped)
    else:
        end = _nfc_end_at(text, start, nterm, opts.wrapped)
    if end is None:
        raise ValueError(f"no match of the term starts at offset {start}")
    return end


def _nfc_end_at(text: str, start: int, nterm: str, wrapped: bool) -> int | None:
    # `text` is not normalized, so nfc_with_map mapped it run by run, and `start` begins a run. A run may
    # begin with a line-break character (marks after it join it) but never holds one after its first
    # character, so after `start` a match holds at most one line break per wrap (two characters for \r\n)
    # plus the term's own: it ends before the `reach`-th line-break character after `start`, a run
    # boundary, and the runs of the window are those of the whole text.
    reach = (2 * (len(nterm) - 1) if wrapped else 0) + nterm.count("\r") + nterm.count("\n") + 1
    stop = next(islice(_BREAK_CHAR.finditer(text, start + 1), reach - 1, None), None)
    end = _nfc_piece_end(text[start: stop.start() if stop else len(text)], nterm, wrapped, complete=True)
    return None if end is None else start + end


def _nfc_piece_end(piece: str, nterm: str, wrapped: bool, complete: bool) -> int | None:
    """The end in ``piece`` (which starts at a normalization run of a text that is not NFC) of the match of
    ``nterm`` starting there, mapped run by run; ``complete=False``: the piece's last run may go on past it, so
    it is left out (a match ending in it is found once the piece is longer)."""
    if not nterm:
        return 0
    norm, starts, ends = _grouped_map(piece)
    if not complete and norm:
        norm = norm[:starts.index(starts[-1])]  # the normalized characters before the last run
    i = 0
    while i < len(norm) and starts[i] == 0:  # the normalized characters of the run at the piece's start
        end = _end_at(norm, i, nterm, wrapped)
        if end is not None:
            return ends[end - 1]
        i += 1
    return None


def match_end_within(piece: str, term: str, opts: LocateOptions | None = None, *, complete: bool = False,
                     normalized: bool = True) -> int | None:
    """The end, in ``piece``, of the match of ``term`` that starts at ``piece[0]``; ``None``: read a longer piece.

    ``piece`` is the document from an offset :func:`find_all` reported; ``complete`` says it runs to the
    document's end (then a missing match is a ValueError). A piece that holds the whole match gives its exact end
    (a piece that stops inside it gives ``None``, never another offset), so a caller reads a bounded piece and
    reads on only for a match longer than that: the work stays proportional to the match, however deep a wrap's
    indentation (issue 11; the compact excerpts of notebook 08). With NFC, ``normalized`` says whether the whole
    document is NFC (:func:`nfc_with_map` then maps it character by character, else by normalization runs), which
    no piece can tell: one ``unicodedata.is_normalized`` pass per document, by the caller.
    """
    opts = _options(opts)
    if opts.normalization != "NFC":
        end = _end_at(piece, 0, term, opts.wrapped)
    elif normalized:
        end = _end_at(piece, 0, unicodedata.normalize("NFC", term), opts.wrapped)
    else:
        end = _nfc_piece_end(piece, unicodedata.normalize("NFC", term), opts.wrapped, complete)
    if end is None and complete:
        raise ValueError("no match of the term starts at the piece's start")
    return end


def _matches(text: str, term: str, opts: LocateOptions, first_only: bool) -> Iterator[int]:
    if opts.normalization == "none" and not opts.wrapped:
        return _literal(text, term, first_only)
    return (s for s, _ in find_spans(text, term, opts, first_only=first_only))


def find(texts: Iterable[tuple[str, str]], term: str, opts: LocateOptions = LocateOptions(),
         first_only: bool = False) -> Iterator[tuple[str, int]]:
    """``(doc_id, offset)`` of every match (or the first per document), lazily, in the order of ``texts``.

    This is the scan: every text is produced (read and checked by the index) and searched with
    ``str.find`` (or :func:`find_spans` under NFC or ``wrapped``). A store with a real index provides its
    own ``find`` with the same results.
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


def matching_label(opts: LocateOptions) -> str:
    """How ``opts`` matches, as a structured reply says it: literal, across line wraps, after NFC."""
    return ("literal across line wraps" if opts.wrapped else "literal") + (
        " after NFC" if opts.normalization == "NFC" else "")


def _structured(term: str, opts: LocateOptions, matches: list, next_cursor: int | None,
                total: int | None = None) -> dict[str, object]:
    out: dict[str, object] = {
        "term": term,
        "matching": matching_label(opts),
        "matches": matches,
    }
    if opts.paged:
        out["next_cursor"] = next_cursor
        out["total_matches"] = total
    if (total == 0) if opts.paged else not matches:
        out["note"] = NO_MATCH_NOTE
    return out
