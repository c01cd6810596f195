"""What counts as CJK, defined once: the wrap rule of ``locate`` (notebook 03), the compact profile's excerpt
ranking (notebook 04), the BM25 tokenizer (notebook 08) and the store's gram postings (notebook 11) all use this
table, so a character one of them treats as CJK is CJK for all of them.

:data:`CJK_RANGES` holds ideographs (the Unified block, Extension A, planes 2 and 3 for Extensions B-I, the
compatibility ideographs), radicals, kana, bopomofo, hangul, CJK punctuation and the fullwidth forms. Tokenizers
take the *word* characters among them (:data:`CJK_WORD_RUN`): an ideograph, a kana, a hangul syllable, a fullwidth
letter or digit is a token; a fullwidth comma or an ideographic full stop is not.
"""

from __future__ import annotations

import re
from bisect import bisect_right

__all__ = ["CJK_CLASS", "CJK_RANGES", "CJK_WORD_RUN", "is_cjk"]

#: [first, last] code points of the CJK characters.
CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),    # Hangul Jamo
    (0x2E80, 0x2FFF),    # CJK Radicals Supplement, Kangxi Radicals, Ideographic Description Characters
    (0x3001, 0x4DBF),    # CJK Symbols and Punctuation (not U+3000), kana, bopomofo, Hangul Compatibility Jamo,
                         # Kanbun, CJK Strokes, Enclosed CJK, CJK Compatibility, CJK Extension A
    (0x4E00, 0x9FFF),    # CJK Unified Ideographs
    (0xA960, 0xA97F),    # Hangul Jamo Extended-A
    (0xAC00, 0xD7FF),    # Hangul Syllables, Hangul Jamo Extended-B
    (0xF900, 0xFAFF),    # CJK Compatibility Ideographs
    (0xFE30, 0xFE4F),    # CJK Compatibility Forms (vertical punctuation)
    (0xFF00, 0xFFEF),    # Halfwidth and Fullwidth Forms
    (0x1B000, 0x1B16F),  # Kana Supplement, Kana Extended-A, Small Kana Extension
    (0x20000, 0x3FFFF),  # planes 2 and 3: CJK Extensions B-I, CJK Compatibility Ideographs Supplement
)
#: :data:`CJK_RANGES` as the inside of a regular-expression character class (Python's and PostgreSQL's alike).
CJK_CLASS = "".join(f"\\U{a:08x}-\\U{z:08x}" for a, z in CJK_RANGES)
#: A run of CJK word characters (ideographs, kana, hangul, fullwidth letters and digits; no punctuation).
CJK_WORD_RUN = re.compile(f"(?:(?=\\w)[{CJK_CLASS}])+")

_FIRSTS = [a for a, _ in CJK_RANGES]


def is_cjk(ch: str) -> bool:
    """Whether one character is CJK (:data:`CJK_RANGES`)."""
    i = bisect_right(_FIRSTS, ord(ch)) - 1
    return i >= 0 and ord(ch) <= CJK_RANGES[i][1]
