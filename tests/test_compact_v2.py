"""Issue 17 item 3-4: the compact profile v2 (content handles, revisions shown once, bounded excerpts, one locate
that is enough to choose and cite, wrapped text), measured and checked through real tool calls."""

from __future__ import annotations

import json

from evidence_lib import Citation, Document, EvidenceIndex, Ledger, evidence_tools, utf8_bytes, verify_citation
from evidence_lib._handles import HANDLE_HEX, handle_length, matches_handle
from evidence_lib._toolkit import run_tool_call, tool_call
from evidence_lib.course.article import QUESTION, article_corpus
from evidence_lib.profiles import excerpts
from evidence_lib.profiles._compact import located_documents, manifest_rows, query_words


def call(tools, name, i=0, **args):
    return run_tool_call(tools, tool_call(name, args, f"c{i}"))


def test_the_article_task_is_a_verified_citation_in_at_most_400_bytes():
    """Issue 17 target: search + one compact locate give a verified d03 [4321, 4339) in <= 400 bytes."""
    index = EvidenceIndex.in_memory(article_corpus())
    ledger = Ledger()
    tools = evidence_tools(index, ledger=ledger, profile="compact")
    replies = [call(tools, "search_evidence", 0, query=QUESTION), call(tools, "locate_evidence", 1, term="单批上限")]
    cited = [x for x in excerpts(replies) if (x.doc_id, x.start, x.end) == ("d03", 4321, 4339)]
    assert len(cited) == 1 and verify_citation(index, cited[0].citation(), ledger).ok
    assert sum(utf8_bytes(r.content) for r in replies) <= 400, [utf8_bytes(r.content) for r in replies]
    assert ledger.totals()["bytes"] == sum(utf8_bytes(r.content) for r in replies)


def test_no_reply_carries_a_full_sha256_and_a_forged_handle_is_refused():
    index = EvidenceIndex.in_memory(article_corpus())
    tools = evidence_tools(index, profile="compact")
    replies = [call(tools, "search_evidence", 0, query="q"), call(tools, "locate_evidence", 1, term="超时"),
               call(tools, "read_evidence", 2, doc_id="d03", offset=4300, limit=60)]
    shas = [e.sha256 for e in index]
    assert not any(sha[:HANDLE_HEX + 1] in r.content for r in replies for sha in shas)
    x = excerpts(replies)[-1]
    assert x.sha256 == "#" + index.entry("d03").sha256[:HANDLE_HEX] and matches_handle(index.entry("d03").sha256,
                                                                                        x.sha256)
    ok = verify_citation(index, x.citation(), excerpts(replies))
    assert ok.ok
    for forged in ("#" + "0" * HANDLE_HEX, "#" + index.entry("d03").sha256[:HANDLE_HEX - 1], ""):
        c = Citation("d03", x.revision, x.start, x.end, forged, x.text)
        assert verify_citation(index, c, excerpts(replies)).reason == "document_changed", forged


def test_a_handle_grows_until_no_two_documents_of_the_snapshot_share_it():
    shas = ["abcdef0123", "abcdef9999", "123456aaaa"]
    assert handle_length(shas) == 7 and handle_length(shas[1:]) == HANDLE_HEX
    assert handle_length(["abc", "abc"]) == HANDLE_HEX  # the same bytes twice share one handle


def test_the_revision_is_shown_once_per_snapshot_and_read_back_in_order():
    docs = [Document("a", "A", "v1", "the limit is 5 rows."), Document("b", "B", "v2", "the limit is 9 rows."),
            Document("c", "C", "v2", "no numbers here.")]
    tools = evidence_tools(EvidenceIndex.in_memory(docs), profile="compact")
    manifest = call(tools, "search_evidence", 0, query="limit")
    assert manifest.content.splitlines()[0].endswith(", revision v2:")  # shared by two rows: in the head
    assert manifest_rows(manifest.content)[0] == [("a", "v1", "A"), ("b", "v2", "B"), ("c", "v2", "C")]
    located = call(tools, "locate_evidence", 1, term="limit")
    assert "@v" not in located.content  # shown already, with the manifest
    assert {(x.doc_id, x.revision) for x in excerpts([manifest, located])} == {("a", "v1"), ("b", "v2")}


def test_one_locate_names_every_matching_document_with_its_count():
    docs = [Document(f"d{i}", f"t{i}", "r", "the limit is here. " * (i + 1)) for i in range(8)]
    tools = evidence_tools(EvidenceIndex.in_memory(docs), profile="compact")
    call(tools, "search_evidence", 0, query="what is the limit")
    reply = call(tools, "locate_evidence", 1, term="limit")
    found = located_documents(reply.content)
    assert sorted(d for d, _ in found) == [f"d{i}" for i in range(8)]
    assert dict(found) == {f"d{i}": i + 1 for i in range(8)}
    assert reply.content.splitlines()[0].startswith("locate: 36 matches in 8 documents, next cursor")
    assert reply.content.splitlines()[-1].startswith("also: ")


def test_excerpts_holding_the_question_words_come_first_and_weaker_ones_are_left_to_the_cursor():
    docs = [Document("noise", "n", "r", "A limit. " * 3), Document("answer", "a", "r",
            "Intro text. The batch limit for payment jobs is 500 rows. Outro.")]
    tools = evidence_tools(EvidenceIndex.in_memory(docs), profile="compact")
    call(tools, "search_evidence", 0, query="batch limit for payment jobs")
    reply = call(tools, "locate_evidence", 1, term="limit")
    shown = excerpts([reply])
    assert shown[0].doc_id == "answer" and "500 rows" in shown[0].text
    assert [x.doc_id for x in shown] == ["answer"]  # the noise holds 3 fewer query words: only named in "also:"
    assert ("noise", 3) in located_documents(reply.content)
    assert query_words("批处理上限 for Payment") >= {"批处", "处理", "上限", "payment", "for"}


def test_an_excerpt_is_bounded_in_characters_around_its_match():
    long = "x " * 2000 + "the limit is 200 rows" + " y" * 2000  # no sentence end anywhere near
    tools = evidence_tools(EvidenceIndex.in_memory([Document("d", "t", "r", long)]), profile="compact")
    (x,) = excerpts([call(tools, "locate_evidence", 0, term="limit")])
    assert x.end - x.start <= 120 + 180 + len("limit") and "limit" in x.text


def test_compact_locate_finds_a_chinese_term_split_by_a_line_break_and_indentation():
    """Issue 17 item 4: in extracted text a CJK term is often split by a wrap; grep would find nothing."""
    text = "批处理作业的单批\n        上限为200条，超时设为30秒。另一段说明。"
    index = EvidenceIndex.in_memory([Document("d03", "t", "r", text)])
    tools = evidence_tools(index, profile="compact")
    (x,) = excerpts([call(tools, "locate_evidence", 0, term="单批上限")])
    start = text.index("单批")
    assert x.start <= start and text.index("上限") + 2 <= x.end and x.text == text[x.start:x.end]
    assert verify_citation(index, x.citation(), [x]).ok
    article = evidence_tools(index)  # the article profile keeps the article's literal match
    assert json.loads(call(article, "locate_evidence", 1, term="单批上限").content) == []
