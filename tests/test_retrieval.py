"""Bring your own retriever, honest manifests, locate in one document, and the compact profile (issue 9)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever

from evidence_lib import (
    Access,
    Budget,
    EvidenceIndex,
    Ledger,
    Principal,
    evidence_tools,
    run_tool_call,
    tool_call,
    utf8_bytes,
    verify_citation,
)
from evidence_lib._tools import MAX_MANIFEST_BYTES
from evidence_lib.course.article import article_corpus
from evidence_lib.course.experiment import run_article
from evidence_lib.profiles import excerpts
from evidence_lib.profiles._compact import window
from evidence_lib.retrieval import BM25Retriever, RetrieverSource, folder_corpus, pydoc_corpus, recall_at_k
from evidence_lib.retrieval._bm25 import tokenize

ALICE = Principal("acme", "alice")


class ListRetriever(BaseRetriever):
    """Any retriever: returns its documents in a fixed order, whatever the query (no ranking of its own)."""

    docs: list[LCDocument]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun):
        return list(self.docs)



def _rows(content: str) -> list:
    """A manifest's rows: the article's bare list, or its ``candidates`` when the reply carries a note (a retriever
    with no k ranks before permissions, and every manifest of it says so: issue 31)."""
    body = json.loads(content)
    return body["candidates"] if isinstance(body, dict) else body

def _call(tools, name, args, cid="c"):
    return run_tool_call(tools, tool_call(name, args, cid))


def test_any_base_retriever_becomes_a_per_query_snapshot_with_metadata_or_computed_fields():
    docs = [LCDocument(page_content="alpha beta", metadata={"doc_id": "a", "title": "A", "revision": "r1"}),
            LCDocument(page_content="line one\nbeta gamma")]
    tools = evidence_tools(ListRetriever(docs=docs))
    manifest = _rows(_call(tools, "search_evidence", {"query": "beta"}).content)
    assert [(m["doc_id"], m["title"], m["revision"]) for m in manifest][0] == ("a", "A", "r1")
    computed = manifest[1]
    assert computed["doc_id"].startswith("doc-") and computed["title"] == "line one"
    assert computed["revision"] == computed["sha256"][:12]
    page = json.loads(_call(tools, "read_evidence", {"doc_id": "a"}).content)
    assert page["text"] == "alpha beta" and page["revision"] == "r1"


def test_documents_the_principal_may_not_discover_are_dropped_before_ranking_cutting_or_counting():
    secret = Access("globex")
    docs = [LCDocument(page_content=f"budget secret {i} " * 20, metadata={"doc_id": f"s{i}", "access": secret})
            for i in range(30)]
    docs += [LCDocument(page_content="budget plan", metadata={"doc_id": "open", "access": Access("acme")})]
    bm25 = BM25Retriever(documents=docs, k=5)
    manifest = _rows(_call(evidence_tools(bm25, ALICE), "search_evidence", {"query": "budget secret"}).content)
    assert [m["doc_id"] for m in manifest] == ["open"]  # the 30 better-scoring hidden ones took no top-5 slot
    generic = _rows(_call(evidence_tools(ListRetriever(docs=docs), ALICE), "search_evidence",
                               {"query": "budget"}).content)
    assert [m["doc_id"] for m in generic] == ["open"] and "secret" not in json.dumps(generic)


def test_bm25_ranks_chinese_text_by_character_bigrams():
    texts = {"batch": "单批上限为200条，超时设为30秒。", "log": "日志保留三十天。", "misc": "上班时间九点。"}
    r = BM25Retriever.from_texts(texts, k=3)
    assert [d.metadata["doc_id"] for d in r.invoke("批处理每批上限是多少")][0] == "batch"
    assert "上限" in tokenize("单批上限") and "_enter_" not in tokenize("__enter__")


def test_bm25_on_pydoc_finds_the_answer_topic_for_most_questions():
    docs = pydoc_corpus()
    r = BM25Retriever(documents=[LCDocument(page_content=d.text, metadata={"doc_id": d.doc_id}) for d in docs], k=20)
    items = json.loads((__import__("pathlib").Path("evidence_lib/eval/data/pydoc_qa.json")).read_text())["items"]
    recall = recall_at_k(r, items, ks=(5, 20))
    assert recall[20] >= recall[5] >= 0.8


def test_the_manifest_is_capped_and_pages_with_a_cursor_over_the_query_snapshot():
    docs = [LCDocument(page_content=f"topic {i} text", metadata={"doc_id": f"t{i:02}", "title": "T" * 500})
            for i in range(30)]
    tools = evidence_tools(ListRetriever(docs=docs), manifest_limit=12)
    first = json.loads(_call(tools, "search_evidence", {"query": "topic"}).content)
    assert (first["total"], first["omitted"], first["next_cursor"]) == (30, 18, 12) and len(first["candidates"]) == 12
    second = json.loads(_call(tools, "search_evidence", {"query": "topic", "cursor": 12}).content)
    assert [c["doc_id"] for c in second["candidates"]][0] == "t12" and second["next_cursor"] == 24
    last = json.loads(_call(tools, "search_evidence", {"query": "topic", "cursor": 24}).content)
    assert last["next_cursor"] is None and len(last["candidates"]) == 6
    compact = evidence_tools(ListRetriever(docs=docs), manifest_limit=12, profile="compact")
    text = _call(compact, "search_evidence", {"query": "topic"}).content
    assert text.splitlines()[0].startswith("candidates 1-12 of 30") and text.splitlines()[0].endswith(
        ", next cursor 12 (ranked before permissions: places may be missing):") and utf8_bytes(text) < MAX_MANIFEST_BYTES


def test_locate_in_one_document_lists_every_match_with_a_cursor(tmp_path):
    tools = evidence_tools(ListRetriever(docs=[LCDocument(page_content="ab " * 50, metadata={"doc_id": "x"})]))
    _call(tools, "search_evidence", {"query": "q"})
    body = json.loads(_call(tools, "locate_evidence", {"term": "ab", "doc_id": "x"}).content)
    assert body["total_matches"] == 50 and body["matches"][:3] == [0, 3, 6] and body["next_cursor"] == 20
    rest = json.loads(_call(tools, "locate_evidence", {"term": "ab", "doc_id": "x", "cursor": 40}).content)
    assert len(rest["matches"]) == 10 and rest["next_cursor"] is None
    missing = _call(tools, "locate_evidence", {"term": "ab", "doc_id": "nope"})
    assert missing.status == "error" and json.loads(missing.content)["error"] == "unknown_doc_id"


def test_the_article_tools_keep_the_article_signatures():
    search, locate, read = evidence_tools(EvidenceIndex.in_memory(article_corpus()))
    assert list(search.args) == ["query"] and list(locate.args) == ["term"]
    assert list(read.args) == ["doc_id", "offset", "limit"]


def test_compact_article_task_verifies_in_at_most_500_bytes():
    result = run_article(profile="compact")
    assert result["manifest_plus_locations_plus_page_utf8_bytes"] <= 500
    assert result["citation_check"] == "ok" and result["citation"]["start"] == 4321
    assert run_article()["manifest_plus_locations_plus_page_utf8_bytes"] == 3_920  # the article stays byte-exact


def test_compact_never_sends_the_full_hash_and_every_excerpt_is_citable_by_its_handle():
    """Compact v2 (issue 17): a content handle (6+ hex of the sha256) instead of the 64-hex hash; the server
    resolves it, so every excerpt and page verifies against the full hash; the revision is shown once."""
    index = EvidenceIndex.in_memory(article_corpus())
    ledger = Ledger(Budget(max_reads_per_doc=None))
    tools = evidence_tools(index, ledger=ledger, profile="compact")
    sha = index.entry("d03").sha256
    replies = [_call(tools, "locate_evidence", {"term": "单批上限"}, "l1"),
               _call(tools, "read_evidence", {"doc_id": "d03", "offset": 4300, "limit": 39}, "r1"),
               _call(tools, "locate_evidence", {"term": "超时", "doc_id": "d03"}, "l2")]
    assert not any(sha[:12] in r.content for r in replies) and all(f"#{sha[:6]}" in r.content for r in replies)
    assert "@2026-10-27" in replies[0].content and all("2026-10-27" not in r.content for r in replies[1:])
    found = excerpts(replies)
    assert len(found) == 3 and all(x.sha256 == f"#{sha[:6]}" and x.revision == "2026-10-27" for x in found)
    assert all(verify_citation(index, x.citation(), ledger).ok for x in found)
    assert all(verify_citation(index, x.citation(), found).ok for x in found)  # the replies themselves as reads
    forged = found[0].citation().__class__("d03", "2026-10-27", 4321, 4339, "#000000", None)
    assert verify_citation(index, forged, ledger).reason == "document_changed"


def test_compact_excerpt_is_the_sentence_around_the_match():
    text = "First sentence here. The \"break\" statement ends\nthe loop. Next one."
    s, e = window(text, text.index("break"), text.index("break") + 5)
    assert text[s:e] == 'The "break" statement ends\nthe loop.'


def test_folder_corpus_reads_txt_files_with_titles_and_revisions(tmp_path):
    (tmp_path / "批处理.txt").write_text("\n批处理手册\n单批上限为200条。", encoding="utf-8")
    (tmp_path / "b.txt").write_bytes("标题\n正文".encode())
    docs = folder_corpus(tmp_path)
    assert [d.doc_id for d in docs] == ["b", "批处理"] and docs[1].title == "批处理手册"
    assert len(docs[0].revision) == 12 and folder_corpus(tmp_path, "v7")[0].revision == "v7"
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe")
    with pytest.raises(ValueError, match="bad.txt is not valid UTF-8"):
        folder_corpus(tmp_path)


def test_retriever_source_keeps_each_query_snapshot_for_the_operator():
    source = RetrieverSource(ListRetriever(docs=[LCDocument(page_content="x", metadata={"doc_id": "a"})]))
    tools = evidence_tools(source)
    _call(tools, "search_evidence", {"query": "one"})
    _call(tools, "search_evidence", {"query": "two"})
    assert [q for q, _ in source.history] == ["one", "two"]


def test_the_pinned_pydoc_corpus_is_the_same_on_every_python():
    """The default corpus is the shipped copy of Python 3.11.7's topics, whatever Python runs the tests."""
    from evidence_lib.eval._qa_check import corpus_sha256
    from evidence_lib.retrieval._corpora import PINNED_PYDOC_VERSION

    docs = pydoc_corpus()
    qa = json.loads((Path(__file__).resolve().parents[1] / "evidence_lib/eval/data/pydoc_qa.json").read_text())
    assert {d.revision for d in docs} == {PINNED_PYDOC_VERSION} == {qa["python_version"]}
    assert corpus_sha256({d.doc_id: d.text for d in docs}) == qa["corpus_sha256"], "the QA set's corpus"
    assert len(docs) == 79 and [d.doc_id for d in docs] == sorted(d.doc_id for d in docs)


def test_the_running_pydoc_corpus_is_this_interpreters():
    import platform
    from pydoc_data.topics import topics

    running = pydoc_corpus("running")
    assert {d.revision for d in running} == {platform.python_version()}
    assert {d.doc_id: d.text for d in running} == dict(topics)
    if platform.python_version() == "3.11.7":
        assert running == pydoc_corpus(), "on 3.11.7 the pinned copy is exactly the running topics"
    with pytest.raises(ValueError, match="pinned"):
        pydoc_corpus("latest")
