"""The article's experiment end to end: baseline dump vs manifest + locations + one page.

Used by ``python -m evidence_lib article``, by notebook 02 and by the figures. Step by step
in notebook 02; this function is the same steps without the commentary.
"""

from __future__ import annotations

import json
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool

from .._documents import baseline_dump
from .._errors import EvidenceError
from .._index import EvidenceIndex
from .._measure import Size, reduction_percent
from .._tools import evidence_tools, run_tool_call, tool_call
from ..profiles import COMPACT, profile_of
from .article import ANSWER, article_corpus

#: The article's boundary checks: arguments for read_evidence and the code each must produce.
BOUNDARY_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("unknown id", {"doc_id": "../secret"}, "unknown_doc_id"),
    ("page too long", {"doc_id": "d03", "limit": 801}, "invalid_page_bounds"),
    ("negative offset", {"doc_id": "d03", "offset": -1}, "invalid_page_bounds"),
    ("beyond the end", {"doc_id": "d03", "offset": 999999}, "offset_exceeds_document"),
]


def run_article(root: str | Path | None = None, profile: str = "article") -> dict[str, Any]:
    """Run the article's experiment; with ``root=None`` it uses (and removes) a temporary directory.

    ``profile="compact"`` runs the same task with the compact replies (notebook 08): the located excerpt
    is the cited text, so no page is read, and the citation is verified against the reads the ledger saw.
    """
    if root is None:
        with tempfile.TemporaryDirectory(prefix="evidence-article-") as tmp:
            return run_article(tmp, profile)
    if profile_of(profile) is COMPACT:
        return _run_compact(root)
    docs = article_corpus()
    index = EvidenceIndex.build(docs, root)
    search, locate, read = tools = evidence_tools(index)

    baseline = baseline_dump(docs)
    listing = run_tool_call(tools, tool_call("search_evidence", {"query": "批处理上限"}, "search-1"))
    positions = run_tool_call(tools, tool_call("locate_evidence", {"term": "单批上限"}, "locate-1"))
    hit = json.loads(positions.text)[0]
    page = run_tool_call(tools, tool_call("read_evidence", {**hit, "limit": 300}, "read-1"))
    body = json.loads(page.text)
    assert body["text"] == ANSWER and body["next_offset"] is None

    first_page = json.loads(read.invoke({"doc_id": hit["doc_id"], "limit": 800}))
    checks = []
    for case, args, expected in BOUNDARY_CASES:
        checks.append({"case": case, "code": _refusal(read, args), "expected": expected})
    index.stored_file(hit["doc_id"]).write_text("modified", encoding="utf-8")
    checks.append({"case": "file changed after indexing", "code": _refusal(read, {"doc_id": hit["doc_id"]}),
                   "expected": "evidence_changed"})

    before, after = Size.of(baseline), Size.of(listing, positions, page)
    return {
        "scope": "local deterministic tools, no model API",
        **_table(len(docs), before, after),
        "message_class": type(listing).__name__,
        "verified_excerpt": body["text"],
        "citation": {k: body[k] for k in ("doc_id", "revision", "start", "end", "sha256")},
        "boundary_checks": checks,
        "first_page_next_offset": first_page["next_offset"],
        "limitation": "fixed candidate set, scripted literal lookup; not semantic retrieval, "
                      "model quality, total cost or latency",
    }


def _table(hits: int, before: Size, after: Size) -> dict[str, Any]:
    """The article's size rows: the dump against manifest + locations + page, in bytes and tokens."""
    return {
        "langchain_core": version("langchain-core"),
        "hits": hits,
        "baseline_content_utf8_bytes": before.utf8_bytes,
        "manifest_plus_locations_plus_page_utf8_bytes": after.utf8_bytes,
        "content_byte_reduction_percent": reduction_percent(before.utf8_bytes, after.utf8_bytes, 1),
        "baseline_cl100k_tokens": before.cl100k_tokens,
        "manifest_plus_locations_plus_page_cl100k_tokens": after.cl100k_tokens,
        "content_token_reduction_percent": reduction_percent(before.cl100k_tokens, after.cl100k_tokens, 1),
        "baseline_approx_tokens": before.approx_tokens,
        "manifest_plus_locations_plus_page_approx_tokens": after.approx_tokens,
    }


def _refusal(tool: BaseTool, args: dict[str, Any]) -> str | None:
    try:
        tool.invoke(args)
    except EvidenceError as e:
        return e.code
    return None


def _run_compact(root: str | Path) -> dict[str, Any]:
    from .._citations import verify_citation
    from .._ledger import Budget, Ledger
    from ..profiles import excerpts

    docs = article_corpus()
    index = EvidenceIndex.build(docs, root)
    ledger = Ledger(Budget())
    tools = evidence_tools(index, ledger=ledger, profile="compact")
    baseline = baseline_dump(docs)
    listing = run_tool_call(tools, tool_call("search_evidence", {"query": "批处理上限"}, "search-1"))
    positions = run_tool_call(tools, tool_call("locate_evidence", {"term": "单批上限"}, "locate-1"))
    found = excerpts([listing, positions])
    cited = next(x for x in found if ANSWER in x.text)
    check = verify_citation(index, cited.citation(), ledger)
    before, after = Size.of(baseline), Size.of(listing, positions)
    return {
        "scope": "local deterministic tools, no model API; compact profile",
        **{k: v for k, v in _table(len(docs), before, after).items() if "approx" not in k},
        "calls": {"search_evidence": Size.of(listing).utf8_bytes, "locate_evidence": Size.of(positions).utf8_bytes,
                  "read_evidence": 0},
        "page": "not needed: locate returned the sentence around the match with doc_id, its content handle "
                "(resolved to the sha256 by the server) and [start, end), which is what the answer cites",
        "message_class": type(listing).__name__,
        "verified_excerpt": cited.text,
        "citation": {"doc_id": cited.doc_id, "revision": cited.revision, "start": cited.start, "end": cited.end,
                     "sha256": cited.sha256},
        "citation_check": check.reason,
        "limitation": "fixed candidate set, scripted literal lookup; not semantic retrieval, "
                      "model quality, total cost or latency",
    }
