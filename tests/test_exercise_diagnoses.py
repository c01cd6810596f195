"""Issue 34 item 4: a wrong answer is told its real cause, and the "by hand" exercises refuse the library's answer.

Each test feeds one typical wrong answer to the exercise's own check and asserts that the diagnosis names what is
wrong (and not a cause that did not happen): 2.1 calling the read_evidence tool is not "delegating to the paging
module"; 2.2 pages of limit=799 are not "asking for the empty page"; 3.1 a citation without a sha256 and 6.2 one
without the revision shown earlier are not "the document changed"; 6.3 a one-line call to recall_at_k is refused the
way 2.1, 5.2 and 8.1 refuse their shortcuts (the same profile hook, ``_shared.watching``).
"""

from __future__ import annotations

import json
from dataclasses import replace

from evidence_lib import Citation, Document, EvidenceIndex, evidence_tools
from evidence_lib.course.exercises import part2, part3, part6
from evidence_lib.profiles import excerpts
from evidence_lib.retrieval import recall_at_k


def test_read_page_calling_the_read_evidence_tool_is_named_as_such():
    def read_page(text, offset, limit):
        read = evidence_tools(EvidenceIndex.in_memory([Document("t", "t", "r1", text)]))[2]
        page = json.loads(read.invoke({"doc_id": "t", "offset": offset, "limit": limit}))
        return {k: page[k] for k in ("start", "end", "next_offset", "text")}

    result = part2.q1.check(read_page)
    assert not result.correct
    assert "calls the read_evidence tool" in result.text
    assert "_paging" not in result.text


def test_read_all_with_pages_of_799_is_told_its_page_size_not_the_empty_page():
    namespace: dict = {"json": json}  # the exercise's own solution, one character off: limit=799
    exec(part2.q2.solution_code.replace('"limit": 800', '"limit": 799'), namespace)

    result = part2.q2.check(namespace["read_all"])
    assert not result.correct
    assert "at most 799 characters" in result.text and "limit=800" in result.text
    assert "empty page" not in result.text


def _cite_without_sha256(sha256):
    def cite_sentence(page, sentence):
        start = page["start"] + page["text"].index(sentence)
        return Citation(page["doc_id"], page["revision"], start, start + len(sentence), sha256)
    return cite_sentence


def test_citation_without_sha256_is_told_it_lacks_the_sha256_not_that_the_document_changed():
    for missing in (None, ""):
        result = part3.q1.check(_cite_without_sha256(missing))
        assert not result.correct
        assert "has no sha256" in result.text and "did not change" in result.text
        assert "the document changed since" not in result.text


def test_compact_citation_missing_the_revision_shown_earlier_is_told_so():
    def last_reply_only(replies, doc_id, at):  # the revision was shown in an earlier reply of the session
        for x in reversed(excerpts(replies[-1:])):
            if x.doc_id == doc_id and x.start <= at < x.end:
                return x.citation()
        return None

    def wrong_revision(replies, doc_id, at):
        for x in reversed(excerpts(replies)):
            if x.doc_id == doc_id and x.start <= at < x.end:
                return replace(x.citation(), revision="3.11")
        return None

    for cite, said in ((last_reply_only, "has no revision"), (wrong_revision, "says revision '3.11'")):
        result = part6.q2.check(cite)
        assert not result.correct
        assert said in result.text and "did not change" in result.text and "@3.11.7" in result.text
        assert "the document changed since" not in result.text


def test_recall_counted_by_hand_refuses_a_call_to_recall_at_k():
    def recall(retriever, items, k):
        return recall_at_k(retriever, items, (k,))[k]

    result = part6.q3.check(recall)
    assert not result.correct
    assert "delegates to evidence_lib.retrieval.recall_at_k" in result.text


def test_the_solutions_still_pass_the_changed_checks():
    for exercise in (part2.q1, part2.q2, part3.q1, part6.q2, part6.q3):
        namespace: dict = {"json": json, "Citation": Citation, "excerpts": excerpts}
        exec(exercise.solution_code.split("\ncitation = ")[0], namespace)  # 3.1's solution also prints a sample
        assert exercise.check(namespace[exercise.answer_name]).correct, exercise.key
