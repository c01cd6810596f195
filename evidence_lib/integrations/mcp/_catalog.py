"""What the MCP server offers beside its tools: the reading contract as a prompt, the catalog and bounded pages as
resources. Issue 31, item 10: a client that speaks only MCP learns the protocol from the server itself.

* Prompt ``reading_contract`` (optional argument ``question``): the profile's system prompt
  (:attr:`evidence_lib.profiles.Profile.system_prompt`, the text a LangChain agent is given) after the server's instructions.
* Resource ``evidence://catalog`` and template ``evidence://catalog/{cursor}``: the documents the caller's principal
  may discover, a bounded page at a time (doc_id, title, revision, chars; a document it may discover but not read
  shows its doc_id only: no text and no fingerprint of the text). Unknown and forbidden documents are absent alike.
* Template ``evidence://page/{task}/{doc_id}/{offset}/{limit}``: one page of at most the tools' page cap, read by
  that task's ``read_evidence`` (same bytes, same refusals, charged to the task's budget: reading through resources
  cannot bypass it). ``doc_id`` is percent-encoded as RFC 6570 expands it (``notes%2Fd03``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote

from ..._access import Principal, allowed
from ..._errors import to_json
from ..._lines import cut, shown_revision
from ..._measure import utf8_bytes
from ..._paging import MAX_PAGE_CHARS
from ..._tools import MAX_MANIFEST_BYTES, MAX_MANIFEST_LIMIT, MAX_TITLE_CHARS
from ...profiles._registry import profile_of

__all__ = ["CATALOG_TEMPLATE", "CATALOG_URI", "INSTRUCTIONS", "MAX_QUESTION_CHARS", "PAGE_TEMPLATE", "PROMPT",
           "REVISIONS", "catalog_cursor", "catalog_page", "contract", "page_args", "page_uri"]

PROMPT = "reading_contract"
CATALOG_URI = "evidence://catalog"
#: The catalog's later pages (``cursor``: the row to start at, from the previous page's ``next``).
CATALOG_TEMPLATE = CATALOG_URI + "/{cursor}"
PAGE_TEMPLATE = "evidence://page/{task}/{doc_id}/{offset}/{limit}"
_PAGE_PREFIX = "evidence://page/"
_MAX_INT_DIGITS = 12
#: How the server tells a client to start (its MCP ``instructions``, and the head of the prompt).
INSTRUCTIONS = ("Search, locate and read your documents with citations that verify: call start_task first, then "
                "search_evidence, locate_evidence, read_evidence; check the final answer with verify_citations.")
#: After the contract, whose example revision may be a date: this server's revisions are its corpus's own.
REVISIONS = ("A revision is what a reply showed (a folder's: 12 hex digits of a file's sha256; a date in an example is "
             "another corpus's): cite it as shown.")
#: Longest ``question`` the prompt takes (characters).
MAX_QUESTION_CHARS = 2_000


def contract(profile: str, question: str | None = None) -> str:
    """The prompt's text: the server's instructions, the reading contract of ``profile``'s tools, the question."""
    parts = [INSTRUCTIONS, profile_of(profile).system_prompt, REVISIONS]
    if question:
        parts.append(f"Question: {question}")
    return "\n\n".join(parts)


def _row(entry: Any, principal: Principal | None) -> dict[str, Any]:
    if not allowed(entry.access, principal, "read"):  # may know it exists: its doc_id, nothing from the text
        return {"doc_id": entry.doc_id, "readable": False}
    return {"doc_id": entry.doc_id, "title": cut(entry.title, MAX_TITLE_CHARS),
            "revision": shown_revision(entry.revision), "chars": entry.chars, "readable": True}


def catalog_page(index: Any, principal: Principal | None, cursor: int = 0) -> str:
    """One page of the catalog from ``cursor``: at most ``MAX_MANIFEST_LIMIT`` rows and ``MAX_MANIFEST_BYTES`` UTF-8
    bytes of them, the total the principal may discover, and the URI of the next page (or ``null``)."""
    visible = index.visible(principal, "discover") if index is not None else []
    rows, size = [], 0
    for entry in visible[cursor: cursor + MAX_MANIFEST_LIMIT]:
        row = _row(entry, principal)
        size += utf8_bytes(to_json(row)) + 2
        if size > MAX_MANIFEST_BYTES:
            break
        rows.append(row)
    end = cursor + len(rows)
    return to_json({"documents": rows, "total": len(visible),
                    "next": f"{CATALOG_URI}/{end}" if end < len(visible) else None,
                    "pages": PAGE_TEMPLATE.replace("{limit}", f"{{limit: 1-{MAX_PAGE_CHARS}}}")})


def catalog_cursor(uri: str) -> int | None:
    """The cursor of a catalog URI (0 for the catalog itself), or ``None`` when ``uri`` is no catalog page."""
    if uri == CATALOG_URI:
        return 0
    tail = uri[len(CATALOG_URI) + 1:] if uri.startswith(CATALOG_URI + "/") else ""
    return int(tail) if tail.isascii() and tail.isdigit() and len(tail) <= _MAX_INT_DIGITS else None


def page_args(uri: str) -> tuple[str, dict[str, Any]] | None:
    """``(task, read_evidence's arguments)`` of a page URI, or ``None`` when ``uri`` is no page URI. Offsets that are
    not plain integers are passed on as given, for ``read_evidence`` to refuse as it refuses them from a tool call."""
    if not uri.startswith(_PAGE_PREFIX):
        return None
    parts = uri[len(_PAGE_PREFIX):].split("/")
    if len(parts) != 4 or not all(parts):
        return None
    try:
        task, doc_id, offset, limit = (unquote(p, errors="strict") for p in parts)
    except UnicodeDecodeError:  # a %-escape that is not UTF-8
        return None
    return task, {"doc_id": doc_id, "offset": _int(offset), "limit": _int(limit)}


def page_uri(task: str, doc_id: str, offset: int, limit: int) -> str:
    """The page URI of ``doc_id`` for ``task`` (``doc_id`` percent-encoded)."""
    return f"{_PAGE_PREFIX}{quote(task, safe='')}/{quote(doc_id, safe='')}/{offset}/{limit}"


def _int(value: str) -> int | str:
    return int(value) if value.isascii() and value.isdigit() and len(value) <= _MAX_INT_DIGITS else value
