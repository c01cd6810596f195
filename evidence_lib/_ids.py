"""The one document-id grammar: every doc_id the library issues satisfies it and the answer parser accepts it.

It serves the citation format notebook 09 teaches (``doc_id@revision [start, end) "quote"``). A doc_id is 1 to
:data:`MAX_DOC_ID_CHARS` printable characters (``str.isprintable``: no control, format, surrogate or line-separator
character), with no white space and none of :data:`RESERVED`: ``@`` ends the doc_id in a Sources line, ``#`` starts
a content handle, ``[`` and ``]`` a range, quotes a quote, and a backslash an escape. Anything else is allowed:
Chinese names (``退款政策``), workspace paths (``notes/d03``), offloaded results (``res-`` and hex), 128-character
names. So a doc_id is one field in every reply (:func:`evidence_lib._lines.token` shows it as itself) and the
Sources line stays unambiguous.

Issuers refuse what is not a doc_id (the indexes, the store), or escape it (:func:`escape_doc_id`, for ids that
come from a retriever's metadata). Stricter rules stay where they serve another purpose (a file stem on disk, a
workspace path); each is a subset of this grammar, which ``tests/test_ids.py`` checks for every issuer.
"""

from __future__ import annotations

import re
from typing import Any

from ._errors import EvidenceError

__all__ = ["DOC_ID", "MAX_DOC_ID_CHARS", "RESERVED", "check_doc_id", "check_revision", "escape_doc_id", "is_doc_id"]

#: The longest doc_id: what the store and the in-memory index accept (a folder corpus's ``<doc_id>.txt`` included).
MAX_DOC_ID_CHARS = 128
#: Characters that delimit the parts of a citation line (or escape them), so no doc_id holds one.
RESERVED = "@#[]\"'\\"
#: The grammar as a pattern (use ``fullmatch``, or embed it in a larger pattern). ``re`` cannot name "printable",
#: so the pattern refuses white space, C0/C1 controls and :data:`RESERVED`; :func:`is_doc_id` adds the rest of
#: ``str.isprintable`` (format characters such as U+200B or bidi overrides, surrogates, unassigned code points).
DOC_ID = re.compile(rf"[^\s\x00-\x1f\x7f-\x9f{re.escape(RESERVED)}]{{1,{MAX_DOC_ID_CHARS}}}")


def is_doc_id(value: Any) -> bool:
    """Whether ``value`` is a doc_id of the one grammar (see the module docstring)."""
    return isinstance(value, str) and DOC_ID.fullmatch(value) is not None and value.isprintable()


def check_doc_id(value: Any, field: str = "doc_id") -> str:
    """``value`` if it is a doc_id, else ``EvidenceError("invalid_arguments")`` naming ``field`` and the problem
    (``not_text``, ``length`` or ``not_a_doc_id``). An ``EvidenceError`` is a ``ValueError``."""
    if is_doc_id(value):
        return value
    if not isinstance(value, str):
        problem = "not_text"
    elif not 1 <= len(value) <= MAX_DOC_ID_CHARS:
        problem = "length"
    else:
        problem = "not_a_doc_id"
    raise EvidenceError("invalid_arguments", problems=[{"field": field, "problem": problem}])


def check_revision(value: Any, field: str = "revision") -> str:
    """``value`` if it is a revision an answer can cite (a non-empty string: ``parse_answer`` refuses an empty one),
    else ``EvidenceError("invalid_arguments")`` naming ``field`` (``not_text`` or ``length``). Every issuer checks it
    where the revision enters: the indexes, the stores, ``folder_corpus`` (issue 31)."""
    if isinstance(value, str) and value:
        return value
    problem = "not_text" if not isinstance(value, str) else "length"
    raise EvidenceError("invalid_arguments", problems=[{"field": field, "problem": problem}])


def _escaped(c: str) -> str:
    if is_doc_id(c):
        return c
    return "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))


def escape_doc_id(value: str, limit: int = MAX_DOC_ID_CHARS) -> str:
    """``value`` as a doc_id: each character outside the grammar percent-encoded (its UTF-8 bytes, as in a URL:
    ``"a b#1"`` becomes ``"a%20b%231"``), the result cut to ``limit`` characters. A doc_id is returned unchanged
    (when it fits). For ids a caller brings (a retriever's ``metadata["doc_id"]``); ``""`` stays ``""``."""
    return "".join(map(_escaped, value))[:limit]
