"""Issue 33 item 2: where to read inside a document is ordered by the question words rare in the corpus first.

A question's words that most of the corpus holds (a title's words, "manual", "how", "the") are found all over a
document: they say little about where its answer is. The reader asks the retriever's BM25 index which words are
common (:func:`~evidence_lib.eval._reader.common_words`, held by more than ``COMMON_SHARE`` of the documents) and
orders the places it reads by the rare ones first, then by all question words. Whether a read counts as reading where
the evidence is (and so whether a turn ends) still weighs every question word.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.documents import Document as LCDocument

from evidence_lib import EvidenceIndex, evidence_tools, run_tool_call, tool_call
from evidence_lib._documents import Document
from evidence_lib.eval._flows import protocol_flow, reader_words
from evidence_lib.eval._reader import COMMON_SHARE, common_words
from evidence_lib.profiles import excerpts
from evidence_lib.retrieval import BM25Retriever
from evidence_lib.retrieval._snapshot import RetrieverSource

QUESTION = "How long is the grace of a manual renewal?"
TERM = "renewal"
#: Text holding none of the question's words and not the term: it only takes room.
PAD = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor. "
#: The term's first match: four question words, every one common in the corpus below.
COMMON_MATCH = "The manual renewal: how long it takes."
#: The term's second match, a page and more later: "grace", the one rare question word, and "the".
RARE_MATCH = "The renewal grace is set below."
SPAN = "It lasts ten days."
#: Nine other documents, each holding the common words: "the", "manual", "how", "long" are in all ten.
OTHERS = {f"other{i}": f"The manual: how long to wait, part {i}.\n" for i in range(9)}


def _guide() -> str:
    return "Renewals\n\n" + COMMON_MATCH + " " + PAD * 30 + RARE_MATCH + " " + SPAN + " " + PAD * 30


def _retriever(texts: dict[str, str], allowed=None) -> BM25Retriever:
    lc = [LCDocument(page_content=t, metadata={"doc_id": d, "title": d, "revision": "r1"}) for d, t in texts.items()]
    return BM25Retriever(documents=lc, k=20, allowed=allowed)


def _run(texts: dict[str, str], item: dict[str, Any], chooser: str = "oracle"):
    docs = [Document(d, d, "r1", t) for d, t in texts.items()]
    return protocol_flow(RetrieverSource(_retriever(texts)), EvidenceIndex.in_memory(docs), item, "compact",
                         chooser=chooser)


def _item(text: str) -> dict[str, Any]:
    start = text.index(SPAN)
    return {"id": "q", "question": QUESTION, "doc_id": "guide", "answer_span": SPAN, "start": start,
            "end": start + len(SPAN), "locate_term": TERM}


def test_document_share_is_the_share_of_visible_documents_holding_a_token():
    texts = {"guide": _guide(), **OTHERS}
    retriever = _retriever(texts)
    assert retriever.document_share("manual") == 1.0
    assert retriever.document_share("grace") == pytest.approx(1 / 10)
    assert retriever.document_share("absent") == 0.0
    hidden = _retriever(texts, allowed=lambda d: d.metadata["doc_id"] != "guide")
    assert hidden.document_share("grace") == 0.0  # a hidden document is never counted
    assert hidden.document_share("manual") == 1.0  # nine of nine visible


def test_common_words_are_those_held_by_more_than_the_share_of_documents():
    retriever = _retriever({"guide": _guide(), **OTHERS})
    words = reader_words(QUESTION, TERM)
    assert "renewal" not in words and {"grace", "manual", "the", "how", "long"} <= words
    assert common_words(retriever, words) == frozenset({"the", "manual", "how", "long"})
    assert common_words(retriever, words, share=1.0) == frozenset()  # nothing is held by more than all
    assert 1 / 10 <= COMMON_SHARE < 1  # "grace" (1 of 10 documents) is rare at the default share, "manual" common
    assert common_words(object(), words) == frozenset()  # a retriever without BM25 counts: every word is rare


def test_the_reader_reads_first_around_the_excerpt_holding_a_rare_question_word():
    """Both matches are shown by the first locate; the first holds more question words (all common), the second the
    rare one. The reader reads around the second first and answers with its first read (before: around the first,
    then the second, one call more)."""
    text = _guide()
    texts = {"guide": text, **OTHERS}
    docs = [Document(d, d, "r1", t) for d, t in texts.items()]
    tools = evidence_tools(RetrieverSource(_retriever(texts)), profile="compact")
    reply = run_tool_call(tools, tool_call("locate_evidence", {"term": TERM, "query": QUESTION}, "c1")).text
    assert [x.text for x in excerpts([reply]) if x.doc_id == "guide"] == [COMMON_MATCH, RARE_MATCH]  # best first
    run = protocol_flow(RetrieverSource(_retriever(texts)), EvidenceIndex.in_memory(docs), _item(text), "compact")
    assert [c["tool"] for c in run.calls] == ["locate_evidence", "read_evidence"]
    read = run.calls[1]["args"]
    assert read["offset"] <= text.index(RARE_MATCH) < read["offset"] + read["limit"]
    assert run.answered


def test_with_no_word_rare_the_order_is_by_all_question_words_as_before():
    """Where every other document holds "grace" too, no question word is rare: the excerpt holding the most question
    words is read first, as before the rule."""
    text = _guide()
    others = {d: t + "A grace.\n" for d, t in OTHERS.items()}
    run = _run({"guide": text, **others}, _item(text))
    reads = [c["args"] for c in run.calls if c["tool"] == "read_evidence"]
    at = text.index(COMMON_MATCH)
    assert reads[0]["offset"] <= at < reads[0]["offset"] + reads[0]["limit"]
    assert run.answered and len(run.calls) == 3
