"""Content handles: ``#`` and the first hex digits of a document's sha256, resolved to the full hash by the server.

A compact reply (notebook 08) shows every piece of document text with a handle instead of the 64-hex sha256 (about 44
cl100k tokens): six digits, more when six would not tell two documents of a snapshot apart. A citation may carry the
handle; :func:`matches_handle` is how the checks (citations, the audit) resolve it.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["HANDLE_HEX", "handle", "handle_length", "matches_handle"]

#: A content handle is "#" and at least this many hex digits of the sha256 (more when needed to be unique).
HANDLE_HEX = 6


def handle_length(sha256s: Iterable[str]) -> int:
    """Hex digits a handle needs so that no two different sha256 values share one (at least :data:`HANDLE_HEX`)."""
    distinct = sorted(set(sha256s))
    n = HANDLE_HEX
    while n < 64 and len({h[:n] for h in distinct}) < len(distinct):
        n += 1
    return n


def handle(sha256: str, length: int = HANDLE_HEX) -> str:
    """The content handle shown for ``sha256``: ``#`` and its first ``length`` hex digits."""
    return "#" + sha256[:length]


def matches_handle(sha256: str, value: str) -> bool:
    """Whether ``value`` names ``sha256``: the full hex, or a handle of at least :data:`HANDLE_HEX` digits."""
    if value == sha256:
        return True
    return value.startswith("#") and HANDLE_HEX <= len(value) - 1 <= 64 and sha256.startswith(value[1:])
