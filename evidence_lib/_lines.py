"""One escaping rule for every line-oriented output: compact replies, ``ENTRY.md``, the audit report.

A value shown on one line of text must stay on that line and must not drive a terminal. A value is
*plain* when every character is printable in Python's sense (``str.isprintable``) or a space separator
(category Zs: U+0020, U+00A0, U+3000), which leaves out C0 and C1 control characters (ESC, BEL, BS,
``\\x9b``), DEL, format characters (bidi overrides) and every Unicode line or paragraph separator
(``\\n``, U+0085, U+2028, U+2029). A value that is not plain is shown as a JSON string literal
in which each such character is a ``\\uXXXX`` escape, so it reads back with :func:`json.loads` and splits
no line under any line-breaking rule. Used by :mod:`evidence_lib.profiles`, the task workspace and the audit.
"""

from __future__ import annotations

import json
import unicodedata

__all__ = ["MAX_REVISION_CHARS", "TRUNCATED", "cut", "is_plain", "quoted", "shown_revision", "text_line", "token"]

#: The one marker for a value cut short, and the one cap on a revision wherever a revision is shown.
TRUNCATED = "…[cut]"
MAX_REVISION_CHARS = 40


def _plain(c: str) -> bool:
    # Printable, or a space separator (U+3000, NBSP: they split no line); never a control, format (bidi
    # overrides), line or paragraph separator character.
    return c.isprintable() or unicodedata.category(c) == "Zs"


def is_plain(value: str) -> bool:
    """True when ``value`` holds printable characters and spaces only (no control, no line or paragraph separator)."""
    return value.isprintable() or all(map(_plain, value))


def cut(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters, else its head ending with the :data:`TRUNCATED` marker."""
    return text if len(text) <= limit else text[: limit - len(TRUNCATED)] + TRUNCATED


def shown_revision(revision: str) -> str:
    """A revision as every reply shows it (and as a citation may quote it back): at most 40 characters."""
    return cut(revision, MAX_REVISION_CHARS)


def _escape(c: str) -> str:
    n = ord(c)
    if n < 0x10000:
        return f"\\u{n:04x}"
    n -= 0x10000  # a character outside the BMP as its UTF-16 surrogate pair, as JSON spells it
    return f"\\u{0xD800 + (n >> 10):04x}\\u{0xDC00 + (n & 0x3FF):04x}"


def quoted(value: str) -> str:
    """``value`` as a JSON string literal (UTF-8 kept as is) with every non-printable character escaped."""
    body = json.dumps(value, ensure_ascii=False)
    if body.isprintable():
        return body
    return "".join(c if _plain(c) else _escape(c) for c in body)


def token(value: str) -> str:
    """One space-free field: ``value`` itself when plain, non-empty and free of white space and ``"``; else quoted."""
    if value and value.isprintable() and '"' not in value and not any(c.isspace() for c in value):  # no Zs either
        return value
    return quoted(value)


def text_line(value: str) -> str:
    """Free text (a title, a summary) on one line: ``value`` itself when plain and unquoted, else quoted."""
    return value if is_plain(value) and not value.startswith('"') else quoted(value)
