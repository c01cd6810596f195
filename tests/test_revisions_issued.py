"""Issue 31 item 16: every revision the library issues can be cited, so an empty one is refused where it is issued;
and what a principal may discover but not read never shows a title or revision taken from its text.

An empty revision shows as ``@""`` and no Sources line can cite it (``parse_answer`` refuses an empty revision), so
the indexes, the stores and ``folder_corpus(revision="")`` refuse it with the error their other bad fields get; a
retriever's empty ``metadata["revision"]`` falls back to the computed one, as a missing one does.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from langchain_core.documents import Document as LCDocument

from evidence_lib import (
    Access,
    Document,
    EvidenceError,
    EvidenceIndex,
    Principal,
    evidence_tools,
    run_tool_call,
    tool_call,
)
from evidence_lib._answers import format_answer, parse_answer
from evidence_lib.retrieval import folder_corpus, to_evidence_document
from evidence_lib.retrieval._folder import bm25_source

EMPTY = Document("d1", "Title", "", "The batch limit is 200 rows.")


def _problem(e: EvidenceError) -> tuple[str, list]:
    return e.code, e.details.get("problems", [])


@pytest.mark.parametrize("build", ["in_memory", "build"])
def test_an_index_refuses_an_empty_revision(tmp_path, build):
    with pytest.raises(EvidenceError) as e:
        EvidenceIndex.in_memory([EMPTY]) if build == "in_memory" else EvidenceIndex.build([EMPTY], tmp_path / "s")
    assert _problem(e.value) == ("invalid_arguments", [{"field": "revision", "problem": "length"}])


def test_a_folder_corpus_refuses_an_empty_revision_label(tmp_path):
    (tmp_path / "a.txt").write_text("Batch limit\nThe batch limit is 200 rows.\n", encoding="utf-8")
    with pytest.raises(ValueError, match="revision"):
        folder_corpus(tmp_path, revision="")
    assert folder_corpus(tmp_path)[0].revision  # no label: the content's own fingerprint


def test_an_empty_metadata_revision_falls_back_to_the_computed_one_and_is_citable():
    doc = to_evidence_document(LCDocument(page_content="x", metadata={"doc_id": "a", "revision": ""}))
    assert doc.revision == hashlib.sha256(b"x").hexdigest()[:12]
    (c,) = parse_answer(format_answer("x [1]", [("a", doc.revision, 0, 1, "x")])).citations
    assert c.revision == doc.revision


def test_a_document_one_may_discover_but_not_read_shows_no_title_or_revision_from_its_text():
    """The folder's BM25 source (the MCP server's and the eval's) put every file's first line and plain sha256
    prefix into the retriever's metadata, so a principal who may discover but not read it saw both."""
    secret = "Payroll 2026: the CEO earns 250,000\nmore lines"
    docs = [Document("payroll", "Payroll 2026: the CEO earns 250,000", hashlib.sha256(secret.encode()).hexdigest()[:12],
                     secret, Access("acme", read={"group:finance"}, discover={"*"})),
            Document("limits", "Limits", "v3", "Limits\nThe batch limit is 200 rows.", Access("acme"))]
    bob, alice = Principal("acme", "bob"), Principal("acme", "alice", frozenset({"finance"}))
    for profile in ("compact", "article"):
        seen = run_tool_call(evidence_tools(bm25_source(docs), bob, profile=profile),
                             tool_call("search_evidence", {"query": "payroll limit"}, "c")).content
        assert "payroll" in seen and "250,000" not in seen and "CEO" not in seen
        assert docs[0].revision not in seen and "v3" in seen  # a label is no fingerprint: it stays
        allowed = run_tool_call(evidence_tools(bm25_source(docs), alice, profile=profile),
                                tool_call("search_evidence", {"query": "payroll limit"}, "c")).content
        assert "Payroll 2026" in allowed  # a reader still sees the title and revision from the text
        if profile == "article":
            row = next(r for r in json.loads(allowed) if r["doc_id"] == "payroll")
            assert row["revision"] == docs[0].revision
