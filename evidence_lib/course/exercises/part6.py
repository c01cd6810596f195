"""Workshop part 6: real documents behind the three tools (notebook 08).

Exercises: q1 the locate terms a reader would use for three pydoc questions, q2 a citation built from
compact replies that verifies (short hashes resolved), q3 recall@k counted by hand and compared with
``recall_at_k``, q4 the doc_ids a retriever's chunks get in a query's snapshot (``~2``). Used by
``notebooks/exercises/workshop_part6.ipynb``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool

from ..._citations import REASONS, Citation, Excerpt, verify_citation
from ..._documents import Document
from ..._index import EvidenceIndex
from ..._ledger import Ledger
from ..._tools import evidence_tools, run_tool_call, tool_call
from ...audit._history import text_of
from ...eval._qa_check import DATA_DIR
from ...profiles import excerpts
from ...profiles._compact import COMPACT_EXCERPTS
from ...retrieval import BM25Retriever, RetrieverSource, folder_corpus, pydoc_corpus, recall_at_k
from ._shared import cut, show, unlimited, watching
from .core import Exercise, NotAttempted, Result, ____, call, correct, incorrect

__all__ = ["CHUNK_CASES", "QUESTIONS", "ListRetriever", "as_langchain", "pydoc_items", "pydoc_retriever", "q1",
           "q2", "q3", "q4", "session", "zh_items", "zh_retriever"]

#: q1: three questions a developer might ask, and the pydoc topic that answers each.
QUESTIONS: dict[str, tuple[str, str]] = {
    "a": ("How do I leave a loop early, before its condition is false?", "break"),
    "b": ("How do I skip the rest of a loop body and go on with the next iteration?", "continue"),
    "c": ("What does a with statement call on its context manager when the block exits?", "with"),
}


def as_langchain(docs: Sequence[Document]) -> list[LCDocument]:
    """The series' documents as LangChain ``Document``s (doc_id, title and revision in the metadata)."""
    return [LCDocument(page_content=d.text, metadata={"doc_id": d.doc_id, "title": d.title, "revision": d.revision})
            for d in docs]


@cache
def _pydoc() -> tuple[Document, ...]:
    return tuple(pydoc_corpus())


def pydoc_retriever(k: int = 20) -> BM25Retriever:
    """BM25 over Python's documentation topics, ``k`` documents per query (notebook 08's retriever)."""
    return BM25Retriever(documents=as_langchain(_pydoc()), k=k)


def pydoc_items() -> list[dict[str, Any]]:
    """The 90 pydoc QA items (question, doc_id, answer span, locate_term)."""
    data = json.loads((DATA_DIR / "pydoc_qa.json").read_text(encoding="utf-8"))
    return data["items"] if isinstance(data, Mapping) else data


def zh_retriever(k: int = 10) -> BM25Retriever:
    """BM25 over the Chinese operations handbook (7 documents), ``k`` documents per query."""
    return BM25Retriever(documents=as_langchain(folder_corpus(DATA_DIR / "zh_corpus")), k=k)


def zh_items() -> list[dict[str, Any]]:
    return json.loads((DATA_DIR / "zh_qa.json").read_text(encoding="utf-8"))


def session(profile: str = "compact", k: int = 20) -> tuple[list[BaseTool], Ledger]:
    """Fresh evidence tools over the pydoc retriever in ``profile``, with a ledger that only remembers."""
    ledger = Ledger(unlimited())
    return evidence_tools(pydoc_retriever(k), ledger=ledger, profile=profile), ledger


def _run(tools: list[BaseTool], calls: Sequence[tuple[str, dict[str, Any]]]) -> list[str]:
    out: list[str] = []
    for i, (name, args) in enumerate(calls, 1):
        message = run_tool_call(tools, tool_call(name, args, f"call-{i}"))
        out.append(text_of(message))
    return out


# -- q1 · a locate term a reader would use ----------------------------------------------------------------
#: A term "narrows" locate when it occurs in at most this many documents of the query's snapshot.
MAX_NARROW_DOCS = 3

def _check_terms(answer: Any) -> Result:
    if not isinstance(answer, Mapping):
        return incorrect(f"the answer should be a dict like {{'a': 'some term', ...}}, got {show(answer)}")
    missing = [k for k in QUESTIONS if k not in answer or answer[k] is ____]
    if len(missing) == len(QUESTIONS):
        raise NotAttempted
    if missing:
        return incorrect(f"no term for {', '.join(missing)} yet")
    extra = sorted(set(answer) - set(QUESTIONS), key=str)
    if extra:
        return incorrect(f"there is no question labelled {extra[0]!r}; the labels are {', '.join(QUESTIONS)}")
    shown = []
    for label, (question, topic) in QUESTIONS.items():
        term = answer[label]
        if not isinstance(term, str):
            return incorrect(f"the term for ({label}) should be a str, got {show(term)}")
        tools, _ = session()
        listing, reply = _run(tools, [("search_evidence", {"query": question}), ("locate_evidence", {"term": term})])
        if reply.startswith("{"):
            code = json.loads(reply).get("error", "an error")
            return incorrect(f"locate_evidence refuses {cut(term)} for ({label}) with {code}: a term is 1 to 64 "
                             "characters")
        located = list(dict.fromkeys(x.doc_id for x in excerpts([reply])))
        in_snapshot = topic in [line.split(" ", 1)[0] for line in listing.splitlines()[1:]]
        if not in_snapshot:  # cannot happen with the shipped questions; said plainly if Python's topics change
            return incorrect(f"the topic {topic!r} is not among the candidates for ({label}) on this Python")
        docs = int(m[1]) if (m := re.search(r" in (\d+) documents", reply.split("\n", 1)[0])) else 1
        if topic in located and docs <= MAX_NARROW_DOCS:
            shown.append(f"({label}) {term!r}: {docs} document(s)")
            continue
        if topic in located:
            return incorrect(f"{term!r} finds ({label})'s topic, but it occurs in {docs} documents, and the task asks "
                             f"for a term that occurs in at most {MAX_NARROW_DOCS}: the reply shows only "
                             f"{COMPACT_EXCERPTS} excerpts ({len(reply.encode('utf-8')):,} bytes) and needs a cursor "
                             "for the rest. Choose words rarer than the statement's own name")
        where = f"({label}) {question!r}"
        if not located:
            lower = any(term.lower() in d.text.lower() and term not in d.text for d in _pydoc() if d.doc_id == topic)
            case = " (locate is case-sensitive: the topic spells it differently)" if lower else ""
            return incorrect(f"locate_evidence({term!r}) finds no literal match for {where}{case}. A miss says 'no "
                             "such string', not 'no answer': use words the answering text itself uses")
        text = next(d.text for d in _pydoc() if d.doc_id == topic)
        if term not in text:
            return incorrect(f"{term!r} is located in {', '.join(located)} for {where}, but never occurs in the "
                             f"topic {topic!r} that answers it")
        return incorrect(f"{term!r} is located in {', '.join(located)} for {where}: its best excerpts come from "
                         f"other topics, and {topic!r} is not among them. Choose words rarer than the statement's "
                         "own name")
    return correct(f"every answering topic is among the located documents: {'; '.join(shown)}. A rare phrase from "
                   "the answering text narrows locate to the one document worth reading; the statement's own "
                   "name is everywhere in Python's docs.")


q1 = Exercise(
    "6.1", "A locate term a reader would use",
    checker=_check_terms,
    ask=f"set terms to a dict from each label (a, b, c) to a locate term whose reply shows an excerpt of the "
        f"answering topic and that occurs in at most {MAX_NARROW_DOCS} documents of the question's snapshot, then "
        "run this cell again.",
    hints=(
        "locate_evidence is a literal, case-sensitive search over the query's snapshot. The compact reply shows at "
        f"most {COMPACT_EXCERPTS} excerpts, the best first, and its first line says in how many documents the term "
        "occurs. A word that many topics use occurs everywhere and fills the reply; a phrase only the answering "
        f"topic uses narrows it to one or two documents (at most {MAX_NARROW_DOCS} documents is the task).",
        "Read the answering topic first (read_evidence on it, or the excerpt printed above) and take a short phrase "
        "that only it is likely to use: how it says 'ends the loop', 'goes on with the next round', 'is called when "
        "the block is left'. The statement's own name (continue, with) is too common.",
        "Shape: terms = {'a': a phrase from the break topic, 'b': one from continue, 'c': a method name from with}; "
        "for instance 'terminates the nearest' works for (a).",
    ),
    stub="""
terms = {"a": ____, "b": ____, "c": ____}
""",
    solution="""
terms = {"a": "terminates the nearest", "b": "next cycle", "c": "method is invoked"}
for label, term in terms.items():
    tools, _ = session()
    question, topic = QUESTIONS[label]
    search, locate, read = tools
    search.invoke({"query": question})
    print(label, topic, "->", [x.doc_id for x in excerpts([locate.invoke({"term": term})])])
""",
)


# -- q2 · a citation from compact replies -----------------------------------------------------------------

def _cite_cases() -> list[tuple[str, list[tuple[str, dict[str, Any]]], str, int]]:
    """(what, calls, doc_id, how far into the last reply's excerpt of doc_id the character lies)."""
    qa, qb, qc = (QUESTIONS[k][0] for k in "abc")
    return [
        ("a locate reply",
         [("search_evidence", {"query": qa}), ("locate_evidence", {"term": "terminates the nearest"})], "break", 5),
        ("a second locate in the same document (its revision shown before)",
         [("search_evidence", {"query": qc}), ("locate_evidence", {"term": "__exit__"}),
          ("locate_evidence", {"term": "__enter__", "doc_id": "with"})], "with", 3),
        ("a page read after a locate (its revision shown before)",
         [("search_evidence", {"query": qb}), ("locate_evidence", {"term": "next cycle"}),
          ("read_evidence", {"doc_id": "continue", "offset": 0, "limit": 120})], "continue", 7),
    ]


def _last_excerpt(replies: list[str], doc_id: str) -> Excerpt:
    before = len(excerpts(replies[:-1]))
    return next(x for x in excerpts(replies)[before:] if x.doc_id == doc_id)


def _check_cite(cite: Any) -> Result:
    if not callable(cite):
        return incorrect(f"cite should be a function, got {show(cite)}")
    corpus = EvidenceIndex.in_memory(_pydoc())
    for what, calls, doc_id, nth in _cite_cases():
        tools, ledger = session()
        replies = _run(tools, calls)
        target = _last_excerpt(replies, doc_id)
        at = target.start + nth
        got = call(cite, list(replies), doc_id, at, name="cite")
        where = f"for {what}, {doc_id} at {at}"
        if got is None:
            return incorrect(f"cite returned None {where}: some excerpt of {doc_id} covers {at}")
        if isinstance(got, Mapping):
            return incorrect(f"a citation is a Citation object, not a dict {where}")
        if not isinstance(got, Citation):
            return incorrect(f"cite should return a Citation, got {show(got)} {where}")
        check = verify_citation(corpus, got, ledger)
        if not check.ok:
            if check.reason == "document_changed" and got.revision != target.revision:
                said = "has no revision" if not got.revision else f"says revision {got.revision!r}"
                return incorrect(f"verify_citation says document_changed {where}, but the document did not change: "
                                 f"the citation {said}, and the session showed {doc_id}@{target.revision}. A compact "
                                 "reply shows a document's revision once per snapshot (in the manifest, or on the "
                                 "first block that shows it): read every reply of the session in order, not the last "
                                 "one alone")
            if check.reason == "text_mismatch" and isinstance(got.quote, str) and "\\" in got.quote:
                return incorrect(f"verify_citation says text_mismatch {where}: the quote still has JSON escapes; an "
                                 "excerpt's text is a JSON string, decode it with json.loads")
            return incorrect(f"verify_citation says {check.reason} {where}: {REASONS[check.reason]}")
        if not got.start <= at < got.end:
            return incorrect(f"[{got.start}, {got.end}) verifies but does not hold character {at} {where}")
        shown = {(x.start, x.end) for x in excerpts(replies) if x.doc_id == doc_id}
        if (got.start, got.end) not in shown:
            return incorrect(f"[{got.start}, {got.end}) verifies but is not one of the excerpts the replies showed "
                             f"{where}; an excerpt's [start,end) is half-open and already in document offsets")
    return correct(f"all {len(_cite_cases())} citations verify against the corpus, by their content handles (#"
                   "and six hex digits: the server knows the full sha256), including two whose revision was shown "
                   "only in an earlier reply of the session. The compact profile saves those bytes; one parser "
                   "(profiles.excerpts) puts the revision back.")


q2 = Exercise(
    "6.2", "A citation from compact replies",
    checker=_check_cite,
    ask="fill in cite(replies, doc_id, at): a Citation of the excerpt of doc_id that holds character at, built from "
        "the compact replies of one session, then run this cell again.",
    hints=(
        "A compact locate reply is a header line, then per document a line 'doc_id #handle' (the handle: '#' and "
        "the first hex digits of the sha256), then one line per excerpt: '[start,end) \"text\"', the range in "
        "document offsets and the text as a JSON string. A page is one header line '... [start,end) of n ...' and "
        "its text.",
        "A document's revision is shown once per snapshot: in the manifest (its first line, when the rows share "
        "it), or as '@revision' on the first block of that document. evidence_lib.profiles.excerpts(replies) "
        "parses every reply of both profiles in order and puts the revision back; an Excerpt has .citation().",
        "Shape: look through excerpts(replies) (the newest first) for the one with this doc_id whose start <= at < "
        "end, and return its .citation().",
    ),
    stub='''
def cite(replies, doc_id, at):
    """A Citation of the excerpt of doc_id (in these compact replies) that holds character at."""
    return ____
''',
    solution='''
def cite(replies, doc_id, at):
    """A Citation of the excerpt of doc_id (in these compact replies) that holds character at."""
    for x in reversed(excerpts(replies)):
        if x.doc_id == doc_id and x.start <= at < x.end:
            return x.citation()
    return None
''',
)


# -- q3 · recall@k, counted by hand -------------------------------------------------------------------------

def _ranks(retriever: BM25Retriever, items: Sequence[Mapping[str, Any]]) -> list[int | None]:
    out = []
    for item in items:
        got = [d.metadata.get("doc_id") for d in retriever.invoke(item["question"])]
        out.append(got.index(item["doc_id"]) + 1 if item["doc_id"] in got else None)
    return out


def _recall(ranks: list[int | None], k: int) -> float:
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks)


@cache
def _recall_cases() -> list[tuple[str, str, int, tuple[int | None, ...], int]]:
    """(corpus label, retriever factory, retriever k, ranks, items count) for the checker's data sets."""
    pyd = pydoc_items()[::3]
    zh = zh_items()
    return [("pydoc", "pydoc", 20, tuple(_ranks(pydoc_retriever(20), pyd)), len(pyd)),
            ("zh handbook", "zh", 5, tuple(_ranks(zh_retriever(5), zh)), len(zh))]


#: The library's own recall@k: what q3 asks the learner to count by hand (notebook 08 uses it).
_LIBRARY_RECALL = frozenset({recall_at_k.__code__})


def _check_recall(recall: Any) -> Result:
    if not callable(recall):
        return incorrect(f"recall should be a function, got {show(recall)}")
    pyd, zh = pydoc_items()[::3], zh_items()
    data = {"pydoc": (lambda: pydoc_retriever(20), pyd), "zh": (lambda: zh_retriever(5), zh)}
    report = []
    for label, key, rk, ranks, n in _recall_cases():
        make, items = data[key]
        for k in ((2, 5, 1, 10) if key == "pydoc" else (3, 1)):
            delegated: list[str] = []
            with watching(_LIBRARY_RECALL, delegated):
                got = call(recall, make(), [dict(i) for i in items], k, name="recall")
            if delegated:
                return incorrect("recall delegates to evidence_lib.retrieval.recall_at_k, the library's own count: "
                                 "that is what this exercise asks you to write. Count the hits yourself; "
                                 "recall_at_k is for checking your number afterwards, outside your function, and in "
                                 "your own code reusing it is right")
            where = f"for k={k} on {n} {label} questions"
            if isinstance(got, bool) or not isinstance(got, (int, float)):
                return incorrect(f"recall should return a number between 0 and 1, got {show(got)} {where}")
            expected = _recall(list(ranks), k)
            if abs(got - expected) < 5e-4:
                if label == "pydoc":
                    report.append((k, f"recall@{k} = {expected:.3f}"))
                continue
            found = sum(1 for r in ranks if r is not None and r <= k)
            if k > 1 and abs(got - _recall(list(ranks), k - 1)) < 5e-4:
                return incorrect(f"{got:.3f} is recall@{k - 1} {where}: the top k are the first k documents, ranks 1 "
                                 f"to {k} (indices 0 to {k - 1}); count rank <= k")
            if abs(got - _recall(list(ranks), rk)) < 5e-4 and k < rk:
                return incorrect(f"{got:.3f} is recall@{rk}, what the retriever returns by default, {where}: cut its "
                                 "list to the first k documents")
            if abs(got - 100 * expected) < 0.05:
                return incorrect(f"{got} looks like a percentage {where}; recall is a share between 0 and 1")
            if got == found:
                return incorrect(f"{got} is a count {where}; divide by the number of questions ({n})")
            return incorrect(f"{got:.3f} is not the share of questions whose doc_id is among the first {k} documents "
                             f"{where} (that is {found} of {n} = {expected:.3f})")
    values = ", ".join(r for _, r in sorted(report))
    return correct(f"your count agrees with recall_at_k on two corpora and six values of k ({values} on pydoc). "
                   "Recall is the retriever's part; whatever it misses, no reading protocol can cite. Measure it "
                   "first, then the protocol.")


q3 = Exercise(
    "6.3", "recall@k, counted by hand",
    checker=_check_recall,
    ask="fill in recall(retriever, items, k): the share of items whose doc_id is among the first k documents the "
        "retriever returns for the item's question (counted yourself, without recall_at_k), then run this cell again.",
    hints=(
        "For one item: ask the retriever the item's question and look at the doc_id metadata of what comes back, in "
        "order. The item counts as found at k when its doc_id is among the first k.",
        "retriever.invoke(question) returns LangChain Documents, best first (retriever.k of them; the checker's k is "
        "never larger). Cut the list to k, compare doc_ids, count the hits, divide by len(items): a share, not a "
        "count or a percentage.",
        "Shape: sum(item['doc_id'] in [d.metadata['doc_id'] for d in retriever.invoke(item['question'])[:k]] for "
        "item in items) / len(items).",
    ),
    stub='''
def recall(retriever, items, k):
    """Share of items whose doc_id is among the first k documents retrieved for item["question"]."""
    return ____
''',
    solution='''
def recall(retriever, items, k):
    """Share of items whose doc_id is among the first k documents retrieved for item["question"]."""
    found = 0
    for item in items:
        top = [doc.metadata["doc_id"] for doc in retriever.invoke(item["question"])[:k]]
        found += item["doc_id"] in top
    return found / len(items)
''',
)


# -- q4 · chunks of one source: doc_id, doc_id~2, ... --------------------------------------------------------

class ListRetriever(BaseRetriever):
    """A retriever that returns the same documents for every query, in the given order (a chunking retriever)."""

    docs: list[LCDocument]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[LCDocument]:
        return list(self.docs)


#: q4: what a chunking retriever returned, in rank order, as (doc_id metadata, chunk text).
CHUNK_CASES: list[list[tuple[str, str]]] = [
    [("guide", "Install the agent."), ("guide", "Configure the agent."), ("faq", "Is it free?"),
     ("guide", "Upgrade the agent.")],
    [("guide", "Install the agent."), ("guide", "Install the agent.")],
    [("a", "x"), ("b", "y"), ("a", "z"), ("b", "y"), ("a", "y")],
    [("a~2", "p"), ("a", "q"), ("a", "r")],
    [("runbook", "步骤一：停机。"), ("runbook", "步骤二：备份。"), ("runbook", "步骤一：停机。"),
     ("faq", "常见问题。")],
]


def _chunk_docs(chunks: Sequence[tuple[str, str]]) -> list[LCDocument]:
    return [LCDocument(page_content=text, metadata={"doc_id": d, "revision": "r1"}) for d, text in chunks]


def _snapshot_ids(chunks: Sequence[tuple[str, str]]) -> list[str]:
    index = RetrieverSource(ListRetriever(docs=_chunk_docs(chunks))).snapshot("any query", None)
    return [e.doc_id for e in index]


def _fresh_cases() -> list[list[tuple[str, str]]]:
    """Cases the notebook never prints: the same rules on other names and texts."""
    return [
        [("n1", "one"), ("n1", "two"), ("n1", "three"), ("n1", "two"), ("n2", "one"), ("n1", "four")],
        [("x", "same"), ("x~3", "other"), ("x", "else"), ("x", "more"), ("x", "same")],
    ]


def _check_snapshot_ids(snapshot_ids: Any) -> Result:
    if not callable(snapshot_ids):
        return incorrect(f"snapshot_ids should be a function, got {show(snapshot_ids)}")
    for chunks in CHUNK_CASES + _fresh_cases():
        expected = _snapshot_ids(chunks)
        got = call(snapshot_ids, [tuple(c) for c in chunks], name="snapshot_ids")
        where = f"for {chunks}"
        if isinstance(got, str) or not isinstance(got, (list, tuple)) or not all(isinstance(x, str) for x in got):
            return incorrect(f"snapshot_ids should return a list of doc_ids (str), got {show(got)} {where}")
        got = list(got)
        if got == expected:
            continue
        if len(set(got)) < len(got):
            dup = next(x for x in got if got.count(x) > 1)
            return incorrect(f"{dup!r} names two entries {where}: inside one snapshot a doc_id must name one text, "
                             "or a citation of it would be ambiguous")
        if any(x.endswith("~1") for x in got):
            return incorrect(f"the first chunk keeps the plain doc_id {where}; numbering starts at ~2")
        if len(got) > len(expected):
            return incorrect(f"{got} keeps a chunk twice {where}: a chunk with exactly the same text as one already "
                             "kept under that id is the same evidence and is dropped")
        return incorrect(f"the snapshot names them {expected}, not {got}, {where}")
    return correct(f"your ids match RetrieverSource.snapshot on {len(CHUNK_CASES) + len(_fresh_cases())} result lists. "
                   "A citation names (doc_id, revision, sha256, [start, end)); if two chunks of one source shared an "
                   "id in one snapshot, the id would name two texts and two hashes. So the second distinct chunk is "
                   "id~2, the third id~3, and a chunk repeated byte for byte is kept once.")


q4 = Exercise(
    "6.4", "Chunks of one source: why ~2?",
    checker=_check_snapshot_ids,
    ask="fill in snapshot_ids(chunks): the doc_ids the query's snapshot gives the retriever's chunks, in order, then "
        "run this cell again.",
    hints=(
        "In one snapshot a doc_id must name exactly one text (a citation names doc_id, revision, sha256 and a "
        "range). Walk the chunks in rank order: what must happen to a second chunk whose doc_id is taken by a "
        "different text? And to one whose text is the same?",
        "Keep a dict id -> text of what the snapshot holds so far. Try the chunk's own doc_id, then doc_id~2, ~3, "
        "... until the id is free (keep the chunk under it) or holds exactly this text (drop the chunk: it is "
        "already there). An id that arrives already spelled x~2 is just an id.",
        "Shape: kept = {}; for doc_id, text in chunks: candidate, n = doc_id, 1; while candidate in kept and "
        "kept[candidate] != text: n += 1; candidate = f'{doc_id}~{n}'; if candidate not in kept: kept[candidate] = "
        "text. Return list(kept).",
    ),
    stub='''
def snapshot_ids(chunks):
    """The doc_ids a query's snapshot gives these (doc_id, text) chunks, in rank order."""
    return ____
''',
    solution='''
def snapshot_ids(chunks):
    """The doc_ids a query's snapshot gives these (doc_id, text) chunks, in rank order."""
    kept = {}
    for doc_id, text in chunks:
        candidate, n = doc_id, 1
        while candidate in kept and kept[candidate] != text:
            n += 1
            candidate = f"{doc_id}~{n}"
        if candidate not in kept:
            kept[candidate] = text
    return list(kept)
''',
)
