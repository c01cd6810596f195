"""Issue 25 item 2: a reader and a protocol that find the answer where it is.

Small synthetic documents where the locate term is *not* inside the answer: the answer sits before the term's only
match, or near the one match (of 30 on a long page) whose neighbourhood holds the question's words, or in a document
the retriever ranks 25th. ``locate_evidence`` reaches every document the principal may read, with or without a
search, and says what it covered when the source cannot list its documents.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever

from evidence_lib import EvidenceIndex, evidence_tools
from evidence_lib._access import Access, Principal
from evidence_lib._documents import Document
from evidence_lib._toolkit import run_tool_call, tool_call
from evidence_lib.eval._flows import protocol_flow
from evidence_lib.profiles._compact import PARTIAL_NOTE
from evidence_lib.retrieval import BM25Retriever
from evidence_lib.retrieval._snapshot import RetrieverSource

QUESTION = "How many archived reports does the spool directory keep?"
TERM = "rotation"
ANSWER = "The spool directory keeps at most 12 archived reports."
SPAN = "at most 12 archived reports"
#: Text with none of the question's words and not the term: it only takes room on a page.
FILL = "Lorem text about nothing in particular, written to take room on the page. "
ALICE = Principal("acme", "alice")


def _item(doc_id: str, text: str, question: str = QUESTION, term: str = TERM, span: str = SPAN) -> dict[str, Any]:
    start = text.index(span)
    return {"id": "q", "question": question, "doc_id": doc_id, "answer_span": span, "start": start,
            "end": start + len(span), "locate_term": term}


def _flow(texts: dict[str, str], item: dict[str, Any], chooser: str = "oracle", k: int = 20):
    docs = [Document(d, d, "r1", t) for d, t in texts.items()]
    lc = [LCDocument(page_content=t, metadata={"doc_id": d, "title": d, "revision": "r1"}) for d, t in texts.items()]
    source = RetrieverSource(BM25Retriever(documents=lc, k=k))
    return protocol_flow(source, EvidenceIndex.in_memory(docs), item, "compact", chooser=chooser)


def _call(tools, name: str, **args: Any):
    return run_tool_call(tools, tool_call(name, args, f"c-{name}"))


# -- where the reader reads ----------------------------------------------------------------------------------------

BEFORE = ("Report storage\n\n" + FILL * 3 + ANSWER + " " + FILL * 8 + "See rotation for the schedule. " + FILL * 2)


@pytest.mark.parametrize("chooser", ["oracle", "overlap"])
def test_reader_reads_back_to_an_answer_before_the_terms_only_match(chooser):
    """The answer sits 600+ characters before the term's only match: the reader reads the page before it too."""
    texts = {"guide": BEFORE, "other": "Colours\n\nThe palette has four colours.\n"}
    assert BEFORE.index(TERM) - BEFORE.index(SPAN) > 600 and BEFORE.count(TERM) == 1
    run = _flow(texts, _item("guide", BEFORE), chooser)
    assert run.answered and run.answered_at <= 4


def _long_page() -> str:
    """30 sections, each with the term once; only section 26's neighbourhood holds the question's words, and the
    answer sits 300+ characters past that match (beyond the excerpt locate shows of it)."""
    parts = []
    for i in range(30):
        if i == 26:
            parts.append(f"Section {i}\n\nThe rotation of archived reports in the spool directory works as follows. "
                         + FILL * 4 + ANSWER + "\n\n")
        else:
            parts.append(f"Section {i}\n\nThe rotation value {i} is described in the manual. " + FILL * 10 + "\n\n")
    return "".join(parts)


def _decoy(n: int) -> str:
    """A short page whose one rotation sentence holds more of the question's words than any excerpt of the long
    page: the whole-corpus locate shows decoys' excerpts first and names the long page only in its 'also:' line."""
    return (f"Decoy {n}\n\nHow many archived reports does the spool directory keep after rotation? The spool "
            "directory answer is elsewhere.\n")


def test_reader_reads_first_around_the_match_whose_neighbourhood_holds_the_question_words():
    """A term matching 30 lines of a long page: the reader reads around the match near the question's words first,
    not every match in order (which runs out of calls)."""
    page = _long_page()
    assert page.count(TERM) == 30 and len(page) > 20_000
    texts = {"long": page, **{f"decoy{n}": _decoy(n) for n in range(3)}}
    run = _flow(texts, _item("long", page))
    assert run.answered and run.answered_at <= 4, [(c["tool"], c["args"]) for c in run.calls]


# -- what locate reaches -------------------------------------------------------------------------------------------

def _ranked_25th() -> tuple[dict[str, str], str]:
    """24 documents full of the question's words without the term, and the answer's document with one question
    word: the retriever ranks it 25th, outside its top 20."""
    texts = {f"busy{n:02d}": f"Archived reports in the spool directory. {n} archived reports kept in the spool "
                             f"directory, the spool directory keeps archived reports.\n" for n in range(24)}
    answer = "Rotation\n\nReports rotate nightly; rotation keeps at most 12 archived reports.\n"
    texts["quiet"] = answer
    return texts, answer


def test_locate_finds_an_answer_document_the_retriever_ranks_25th():
    texts, answer = _ranked_25th()
    retriever = BM25Retriever.from_texts(texts, k=20)
    ranked = [retriever.documents[i].metadata["doc_id"] for i, _ in retriever.scores(QUESTION)]
    assert ranked.index("quiet") == 24  # the 25th: outside the snapshot of 20
    tools = evidence_tools(retriever, profile="compact")
    assert "quiet" not in _call(tools, "search_evidence", query=QUESTION).content
    located = _call(tools, "locate_evidence", term=TERM).content
    assert "quiet" in located and PARTIAL_NOTE not in located
    item = _item("quiet", answer, span="at most 12 archived reports")
    assert _flow(texts, item).answered


def _with_access() -> BM25Retriever:
    open_ = {f"open{n}": f"Open page {n}: the rotation runs at {n} o'clock." for n in range(22)}
    docs = [LCDocument(page_content=t, metadata={"doc_id": d}) for d, t in open_.items()]
    docs.append(LCDocument(page_content="Listed: rotation of the listed page.", metadata={
        "doc_id": "listed", "access": Access("acme", read=frozenset({"user:bob"}), discover=frozenset({"*"}))}))
    docs.append(LCDocument(page_content="Secret: rotation of the secret page.", metadata={
        "doc_id": "secret", "access": Access("globex")}))
    return BM25Retriever(documents=docs, k=3)


def test_locate_without_search_covers_every_readable_document_and_never_a_hidden_one():
    tools = evidence_tools(_with_access(), ALICE, profile="compact")
    reply = _call(tools, "locate_evidence", term=TERM).content  # no search before it
    assert reply.startswith("locate: 22 matches in 22 documents")  # the retriever's k is 3
    assert "secret" not in reply and "listed" not in reply and PARTIAL_NOTE not in reply
    for n in range(22):
        assert f"open{n}" in reply
    refused = {d: _call(tools, "read_evidence", doc_id=d) for d in ("secret", "listed", "nope")}
    assert {m.status for m in refused.values()} == {"error"}
    assert len({m.content for m in refused.values()}) == 1  # hidden, forbidden and unknown look the same
    assert "open21" in _call(tools, "read_evidence", doc_id="open21").content


class FirstTwo(BaseRetriever):
    """A retriever that cannot list its documents: it returns the first two, whatever the query."""

    documents: list[LCDocument]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[LCDocument]:
        return self.documents[:2]


def test_locate_over_a_retriever_that_cannot_enumerate_says_what_it_covered():
    docs = [LCDocument(page_content=f"Page {n}: rotation at {n}.", metadata={"doc_id": f"p{n}"}) for n in range(5)]
    tools = evidence_tools(FirstTwo(documents=docs), profile="compact")
    before = _call(tools, "locate_evidence", term=TERM).content
    assert before.endswith(PARTIAL_NOTE)  # nothing searched yet: it says so, not that nothing matches anywhere
    _call(tools, "search_evidence", query="rotation")
    after = _call(tools, "locate_evidence", term=TERM).content
    assert after.startswith("locate: 2 matches in 2 documents") and after.endswith(PARTIAL_NOTE)
    doc_only = _call(tools, "locate_evidence", term=TERM, doc_id="p1").content
    assert PARTIAL_NOTE not in doc_only  # one named document: nothing left out
    widened = evidence_tools(RetrieverSource(FirstTwo(documents=docs), corpus=docs), profile="compact")
    reply = _call(widened, "locate_evidence", term=TERM).content
    assert reply.startswith("locate: 5 matches in 5 documents") and PARTIAL_NOTE not in reply


def test_locate_query_ranks_without_a_manifest_and_reads_what_it_ranked():
    """``locate_evidence(term, query=...)`` ranks by the query as a search would, lists no candidates, and every
    document it shows can be read."""
    texts, answer = _ranked_25th()
    tools = evidence_tools(BM25Retriever.from_texts(texts, k=20), profile="compact")
    reply = _call(tools, "locate_evidence", term="archived", query=QUESTION).content
    assert not reply.startswith("candidates") and reply.startswith("locate: ")
    assert _call(tools, "read_evidence", doc_id="quiet").status == "success"


def test_a_manifest_after_a_locate_keeps_the_revision_the_locate_showed():
    """A compact manifest row leaves out a revision that is the content's own fingerprint; read after a locate that
    showed it, it must not blank it, or the pages read next cannot be cited."""
    from evidence_lib.profiles import excerpts

    texts = {"guide": BEFORE, "other": "Colours\n\nThe palette has four colours.\n"}
    tools = evidence_tools(BM25Retriever.from_texts(texts), profile="compact")
    replies = [_call(tools, "locate_evidence", term=TERM, query=QUESTION),
               _call(tools, "search_evidence", query=QUESTION),
               _call(tools, "read_evidence", doc_id="guide", offset=0, limit=100)]
    shown = excerpts(replies)
    assert {x.revision for x in shown} == {shown[0].revision} and shown[0].revision


# -- issue 31 item 12: chunks that share a metadata doc_id ------------------------------------------------------------
CHUNKS = ["Guide part one: the rotation keeps 12 reports.", "Guide part two: the rotation runs nightly.",
          "Guide part three: rotation logs go to /var/log."]


class Picker(BaseRetriever):
    """Returns the chunks whose text holds the query's first word, in reverse corpus order (so a later chunk of a
    doc_id is met before an earlier one)."""

    documents: list[LCDocument]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[LCDocument]:
        return [d for d in reversed(self.documents) if query.split()[0] in d.page_content]


def _chunks() -> list[LCDocument]:
    return [LCDocument(page_content=t, metadata={"doc_id": "guide", "revision": "r1"}) for t in CHUNKS]


@pytest.mark.parametrize("with_corpus", [True, False])
def test_an_id_names_the_same_text_for_the_whole_task_when_chunks_share_a_doc_id(with_corpus):
    docs = _chunks()
    source = RetrieverSource(Picker(documents=docs), corpus=docs if with_corpus else None)
    tools = evidence_tools(source, profile="compact")
    texts: dict[str, str] = {}

    def read_all(ids: list[str]) -> None:
        for d in ids:
            msg = _call(tools, "read_evidence", doc_id=d, limit=200)
            if msg.status == "error":  # a source that cannot list its documents reads the last search's only
                assert not with_corpus and '"unknown_doc_id"' in msg.content
                continue
            text = msg.content.split("\n", 1)[1]
            assert texts.setdefault(d, text) == text, f"{d} names other text than before"

    first = _call(tools, "search_evidence", query="part").content  # every chunk, last first
    ids = [line.split()[0] for line in first.splitlines()[1:]]
    assert len(ids) == len(set(ids)) == 3
    read_all(ids)
    _call(tools, "search_evidence", query="nightly")  # only the second chunk
    read_all(ids)
    located = _call(tools, "locate_evidence", term="rotation").content
    shown = [w for w in ("keeps 12", "nightly", "/var/log") if w in located]
    assert all(located.count(w) == 1 for w in shown)  # no chunk twice under two ids
    assert len(shown) == (3 if with_corpus else 1)  # with the corpus every chunk, else the last search's one
    read_all(ids)
