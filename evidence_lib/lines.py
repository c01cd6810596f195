"""One escaping rule for every line-oriented output: compact replies, ``ENTRY.md``, the audit report.

A value shown on one line of text must stay on that line and must not drive a terminal. A value is
*plain* when every character is printable in Python's sense (``str.isprintable``; a space counts), which
leaves out C0 and C1 control characters (ESC, BEL, BS, ``\\x9b``), DEL, and every Unicode line or paragraph
separator (``\\n``, U+0085, U+2028, U+2029). A value that is not plain is shown as a JSON string literal
in which each such character is a ``\\uXXXX`` escape, so it reads back with :func:`json.loads` and splits
no line under any line-breaking rule. Used by :mod:`evidence_lib.profiles`, the task workspace and the audit.
"""

from __future__ import annotations

import json

__all__ = ["is_plain", "quoted", "text_line", "token"]


def is_plain(value: str) -> bool:
    """True when ``value`` holds printable characters only (no control, no line or paragraph separator)."""
    return value.isprintable()


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
    return "".join(c if c.isprintable() else _escape(c) for c in body)


def token(value: str) -> str:
    """One space-free field: ``value`` itself when plain, non-empty and free of white space and ``"``; else quoted."""
    if value and value.isprintable() and '"' not in value and not any(c.isspace() for c in value):
        return value
    return quoted(value)


def text_line(value: str) -> str:
    """Free text (a title, a summary) on one line: ``value`` itself when plain and unquoted, else quoted."""
    return value if value.isprintable() and not value.startswith('"') else quoted(value)
