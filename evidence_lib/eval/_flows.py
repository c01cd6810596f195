"""Reading flows on real documents, measured side by side with the same help. Taught in notebook 08.

Every flow answers one QA item (``question, doc_id, answer_span, start, end, locate_term``) with tool
calls and is measured by what the tools *returned*: UTF-8 bytes and cl100k tokens of every reply,
up to and including the call that made the answer citable (or all calls if none did).

The help, the same for every flow except ``dump_top5`` and ``no_help``: the scripted reader is handed
``locate_term``, and a *chooser* picks the document to read among those the locate (or grep) showed. It
uses ``start``/``end`` only to decide whether the answer is visible yet, never to decide where to read.
At most ``MAX_CALLS`` calls.

Two choosers (:data:`CHOOSERS`, ``--chooser``):

* ``oracle`` is handed the answer's ``doc_id`` among the shown candidates: it reads that document or, when
  the locate did not show it, nothing. An upper bound on choosing, not something a model gets for free.
* ``overlap`` is handed nothing: it ranks the shown candidates by how many distinct question words
  (:func:`~evidence_lib.retrieval._bm25.tokenize`, the BM25 tokenizer) one thing the flow was *shown* of each
  holds together (its doc_id, one locate excerpt or grep line, its manifest title or preview: where the words
  cluster), then by those in all it was shown of each, ties broken by the order they were first shown
  (:func:`choose`): a compact locate shows documents in the retriever's rank for
  the question, then by match count, so the rank and the counts break the ties. A wrong pick does not end the
  question. The protocol flows spend calls where the evidence is (:func:`read_where_evidence_is`): the best
  pick reads around its matches, and on from pages that approach one, before another candidate gets a call, any other gets turns of at most
  ``FIRST_LOOK_CALLS`` calls. The compact flow, shown several documents by its first locate, then searches the
  question to see their titles (the oracle needs none). The Deep Agents and no-help flows
  give every candidate in turn a first look of ``FIRST_LOOK_CALLS`` calls, then every candidate in turn reads
  on (:func:`read_in_turn`). All within ``MAX_CALLS``.

Where a protocol flow reads inside a document (:func:`~evidence_lib.eval._reader.read_document`): around its
matches holding the most question words first (:func:`evidence_score`; the words rare in the corpus before the
common ones, :func:`~evidence_lib.eval._reader.common_words`), on from a page edge that cuts a match's
sentence, the gap between two pages that show matches, and only then paging on from the page holding the most
question words.

A question counts as answered only when a citation built from the tool output verifies against the
corpus (``verify_citation``: the same bytes, read, text matching) and contains the span
(:func:`evidence_lib.eval._answered.answer_citation`, the check notebook 08 shows). The Deep
Agents flows (:mod:`.deepagents_flow`) cannot produce such a citation: there, "answered" means the
span was visible.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool

from .._citations import Citation, verify_citation
from .._documents import Document, baseline_dump
from .._index import EvidenceIndex
from .._ledger import ReadRecord
from .._measure import cl100k_tokens, utf8_bytes
from .._toolkit import MAX_QUERY_CHARS, run_tool_call, tool_call
from .._tools import MAX_PAGE_CHARS, evidence_tools
from ..profiles._article import ARTICLE, json_rows
from ..profiles._base import Profile
from ..profiles._compact import excerpts
from ..profiles._registry import profile_of
from ..retrieval._bm25 import BM25Retriever, tokenize
from ..retrieval._snapshot import RetrieverSource
from ._answered import answer_citation
from ._reader import (
    COMMON_SHARE,
    END,
    LEAD,
    Step,
    common_words,
    evidence_score,
    page_range,
    read_document,
    reader_words,
)

__all__ = ["CHOOSERS", "CHOOSER_HELP", "DEFAULT_CHOOSER", "DUMP_K", "END", "FIRST_LOOK_CALLS", "LEAD",
           "MAX_CALLS", "PROVES", "Run", "Step", "choose", "dump_flow", "evidence_score", "help_text",
           "no_help_flow", "page_range", "protocol_flow", "question_words", "read_document", "read_in_turn",
           "read_located", "read_where_evidence_is", "reader_words"]

MAX_CALLS = 10
DUMP_K = 5

#: How a flow picks the document to read among the candidates it was shown (see the module docstring).
CHOOSERS = ("oracle", "overlap")
DEFAULT_CHOOSER = "oracle"

#: What the chooser means, in the words every flow's ``help`` ends with.
CHOOSER_HELP = {
    "oracle": "chooser oracle: handed the answer's doc_id among the shown candidates (an upper bound on choosing, "
              "not something a model is given)",
    "overlap": "chooser overlap: not handed the answer; ranks the shown candidates by the most distinct question "
               "words (BM25 tokens) one thing shown of each holds together (an excerpt, a grep line, a title), then "
               "by those in all it was shown of each, ties by the order shown (a compact locate shows "
               "documents in the retriever's rank, then by match count; grep in its file order); a wrong pick costs "
               "calls but does not end the question: the next candidate reads within the same 10 calls",
}
#: How a protocol flow reads its picks (both profiles, both choosers): the words its ``help`` says it with.
_PROTOCOL_READING = (
    f"per picked document (where to read ordered by the question words rare in the corpus first, a word in more "
    f"than {COMMON_SHARE:.0%} of its documents being common, then by all question words): the page around its best located "
    "excerpt (as many characters as 800 one-byte ones cost: a third in Chinese), its doc-restricted locate when it "
    "holds more matches than shown, pages around its matches holding the most question words first (each taking in whole "
    "the excerpts its edge would cut, never text read already), on from a page edge that cuts a match's sentence, "
    "the gap of at most a page between two pages showing matches (these two by the question words of the sentences "
    "pointing there: before a located match only when as many as its excerpt's), then pages before and after the "
    "page holding the most question words alternately; the best pick reads on while it reads where its best evidence "
    "is, any other pick gets turns of at most 2 calls")

_HELP = {
    "dump_top5": "none beyond the question: the BM25 top-5 full texts for the question, in one reply",
    "article": "locate_term; search(question) then locate(term) over every readable document; picks a document "
               "among the located ones; " + _PROTOCOL_READING + "; start/end only to check visibility; at most 10 "
               "calls (article profile)",
    "compact": "locate_term; locate(term, query=question) over every readable document, no manifest (the "
               "overlap chooser, shown several documents, then searches the question for their titles); picks a "
               "document among the located ones; " + _PROTOCOL_READING + "; start/end only to check visibility; "
               "at most 10 calls (compact profile)",
    "no_help": "the question only: search, then page through a document from the manifest",
    "deepagents": "locate_term: grep(term, output_mode=content) over every file, the span may already be visible "
                  "in the matching lines; else read_file 10 lines around the picked file's first hit, then pages of "
                  "100 lines onward (wrapping to line 0 once); "
                  "each candidate in turn gets 2 calls, then each in turn reads on; start/end only to check "
                  "visibility; at most 10 calls (Deep Agents FilesystemBackend tools, efficient use, no revision or "
                  "hash)",
    "deepagents_default": "locate_term: grep(term, output_mode=content), then read_file from the picked file's first "
                          "hit with the default limit (100 lines) and onward, each candidate in turn 2 calls then "
                          "each reads on; grep output never counts as seen; "
                          "start/end only to check visibility; at most 10 calls (Deep Agents FilesystemBackend tools "
                          "as a default agent uses them, no revision or hash)",
}
#: What each flow's chooser does (the oracle does not apply to flows that get no answer doc_id to be handed).
_CHOOSER_NOTE = {
    "dump_top5": {c: "no chooser: nothing is picked, the five texts are dumped" for c in CHOOSERS},
    "no_help": {"oracle": "no oracle (it gets the question only): reads the retriever's first document",
                "overlap": "chooser overlap: ranks the manifest rows by the most distinct question words their doc_id, "
                           "title or preview holds, then by those of all three, ties by rank; each document in turn gets its first 2 pages, then each "
                           "in turn pages on, all within the same 10 calls"},
}

#: What "answered" proves, and what it cannot, per flow (the same words for both choosers).
_ORACLE_CAVEAT = "; under the oracle chooser it cannot show that a reader would have picked that document"
PROVES = {
    "dump_top5": "the span's document was among the five dumped texts (the whole document counts as read); it cannot "
                 "show the span was found in them, and nothing in the dump can be cited by range",
    "article": "a citation (doc_id, revision, sha256, [start, end)) built from the replies verified and covers the "
               "span: those bytes were served unchanged and read; it cannot show they were understood" + _ORACLE_CAVEAT,
    "compact": "a citation (doc_id, revision, sha256, [start, end)) built from the replies verified and covers the "
               "span: those bytes were served unchanged and read; it cannot show they were understood" + _ORACLE_CAVEAT,
    "no_help": "a verified citation, when the document it pages through holds the span within 9 pages: what search "
               "alone reaches; it cannot show the span would be found in a longer document",
    "deepagents": "the span appeared verbatim in the grep lines shown (consecutive lines joined by a newline) or in "
                  "the read_file windows of its file; no revision or hash, so nothing can be verified, and a span "
                  "seen in grep output is only seen, not read in context" + _ORACLE_CAVEAT,
    "deepagents_default": "the span appeared verbatim in the read_file windows of its file; no revision or hash, so "
                          "nothing can be verified" + _ORACLE_CAVEAT,
}


def help_text(flow: str, chooser: str = DEFAULT_CHOOSER) -> str:
    """The ``help`` string of ``flow`` run with ``chooser``: the help it gets and how it picks a document."""
    if chooser not in CHOOSERS:
        raise ValueError(f"unknown chooser {chooser!r}; choose from {', '.join(CHOOSERS)}")
    note = _CHOOSER_NOTE.get(flow, CHOOSER_HELP)[chooser]
    return f"{_HELP[flow]}; {note}"




def question_words(question: str) -> set[str]:
    """The distinct BM25 tokens of a question (:func:`~evidence_lib.retrieval._bm25.tokenize`)."""
    return set(tokenize(question))


def choose(chooser: str, item: Mapping[str, Any], candidates: Iterable[str],
           shown: Iterable[tuple[str, str]] = ()) -> list[str]:
    """The candidates a flow reads, in order, picked by ``chooser`` from what the flow was shown.

    ``candidates`` are doc_ids in the order the tools first showed them; ``shown`` is ``(doc_id, text)``
    pairs of everything the flow was shown about them (excerpts, grep lines, manifest titles and previews;
    pairs for other documents are ignored). ``oracle`` returns ``[item["doc_id"]]`` when it is a candidate,
    else ``[]``. ``overlap`` returns every candidate, ranked first by the most distinct question words one
    thing shown of it holds together (its doc_id, one excerpt, one grep line, one title: where the words cluster,
    as in the sentence a reader expects the answer next to; an excerpt of matches close to each other is one
    excerpt), then by the distinct question words in all shown of it, ties in first-shown order. Deterministic.
    """
    order = list(dict.fromkeys(candidates))
    if chooser == "oracle":
        return [item["doc_id"]] if item["doc_id"] in order else []
    if chooser != "overlap":
        raise ValueError(f"unknown chooser {chooser!r}; choose from {', '.join(CHOOSERS)}")
    words = question_words(item["question"])
    seen = {c: words & set(tokenize(c)) for c in order}
    together = {c: len(seen[c]) for c in order}
    for doc_id, text in shown:
        if doc_id in seen:
            held = words & set(tokenize(text))
            seen[doc_id] |= held
            together[doc_id] = max(together[doc_id], len(held))
    return sorted(order, key=lambda c: (-together[c], -len(seen[c])))  # sorted() is stable: ties stay first-shown


@dataclass
class Run:
    """One flow on one question: every call with its size, and whether (and when) it became citable."""

    id: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    answered: bool = False
    answered_at: int | None = None  # 1-based index of the call that made the answer citable
    picked: list[str] = field(default_factory=list)  # the chooser's candidates, in the order it would read them

    def record(self, name: str, args: Mapping[str, Any], content: str) -> None:
        self.calls.append({"tool": name, "args": dict(args), "utf8_bytes": utf8_bytes(content),
                           "cl100k_tokens": cl100k_tokens(content)})

    def done(self) -> None:
        self.answered, self.answered_at = True, len(self.calls)

    def as_dict(self) -> dict[str, Any]:
        upto = self.calls[: self.answered_at] if self.answered_at else self.calls
        return {"id": self.id, "answered": self.answered, "calls": self.calls,
                "bytes": sum(c["utf8_bytes"] for c in upto), "tokens": sum(c["cl100k_tokens"] for c in upto),
                "calls_until_answer": len(upto), "picked": list(self.picked)}


#: One tool call of a flow: the tool's name and arguments in, its reply out (recorded in the flow's :class:`Run`).
Call = Callable[[str, dict[str, Any]], ToolMessage]


def _caller(tools: Sequence[BaseTool], run: Run, seen: list[ToolMessage]) -> Call:
    def call(name: str, args: dict[str, Any]) -> ToolMessage:
        msg = run_tool_call(tools, tool_call(name, args, f"call-{len(run.calls) + 1}"))
        run.record(name, args, msg.text)  # the tools reply in text: the content itself
        seen.append(msg)  # the replies so far: excerpts() resolves short hashes across them
        return msg
    return call


def _manifest_shown(msg: ToolMessage, profile: Profile) -> list[tuple[str, str]]:
    """``(doc_id, text)`` a manifest showed per document, as ``profile`` reads it (nothing for a refusal)."""
    return profile.manifest_shown(msg.text) if msg.status == "success" else []


#: Calls each candidate gets, best first, before any candidate gets more (see :func:`read_in_turn`).
FIRST_LOOK_CALLS = 2


def read_in_turn(readings: Sequence[Iterator[None]], calls_left: Callable[[], bool],
                 answered: Callable[[], bool], first_look: int = FIRST_LOOK_CALLS) -> bool:
    """Drive one reading per picked candidate, best first, until the answer is visible or no call is left.

    Each reading is a generator that makes exactly one tool call per step (and yields after it). First pass:
    every reading in turn gets up to ``first_look`` steps; second pass: every reading in turn goes on to its end.
    ``answered()`` is checked after every call and ``calls_left()`` before. With one candidate (the oracle) this
    is simply that document's reading from start to end. Returns whether the answer became visible.
    """
    done = object()
    unfinished = []
    for reading in readings:
        for _ in range(first_look):
            if not calls_left():
                return False
            if next(reading, done) is done:
                break
            if answered():
                return True
        else:
            unfinished.append(reading)
    for reading in unfinished:
        while calls_left():
            if next(reading, done) is done:
                break
            if answered():
                return True
    return False


def read_where_evidence_is(readings: Sequence[Iterator[Step]], calls_left: Callable[[], bool],
                           answered: Callable[[], bool], first_look: int = FIRST_LOOK_CALLS) -> bool:
    """Drive one reading per picked candidate, best first, spending calls where the evidence is.

    Each reading makes exactly one tool call per step and yields whether that step read where its document's
    evidence is (:data:`Step`). A turn goes on while its steps do and ends after a step that only paged on; then the
    next candidate's turn. The best pick's turn has no other bound, so it reads every place its evidence points to
    before another candidate gets a call; any other candidate's turn is at most ``first_look`` calls, so a weak pick
    costs little. With one candidate (the oracle) this is that document's reading from start to end. Returns whether
    the answer became visible (``answered()`` after every call, ``calls_left()`` before).
    """
    queue = deque(enumerate(readings))
    done = object()
    while queue and calls_left():
        rank, reading = queue[0]
        steps = 0
        while calls_left():
            step = next(reading, done)
            if step is done:
                break
            if answered():
                return True
            steps += 1
            if not step or (rank and steps >= first_look):
                break
        queue.popleft()
        if step is not done:
            queue.append((rank, reading))  # its next turn after every other candidate's
    return False


def protocol_flow(source: RetrieverSource, corpus: EvidenceIndex, item: Mapping[str, Any], profile: str | Profile,
                  max_calls: int = MAX_CALLS, chooser: str = DEFAULT_CHOOSER) -> Run:
    """locate(term) over every readable document (ranked by the question's words where the profile takes a query,
    else after search(question)) -> per picked document (:func:`~evidence_lib.eval._reader.read_document`), calls spent where the evidence is
    (:func:`read_where_evidence_is`).

    ``profile`` (a name or a :class:`~evidence_lib.profiles.Profile`) formats the replies and reads them back.
    """
    profile = profile_of(profile)
    run, seen = Run(item["id"]), list[ToolMessage]()
    tools = evidence_tools(source, profile=profile)
    call = _caller(tools, run, seen)

    def answered() -> bool:
        if answer_citation(corpus, item, excerpts(seen)) is not None:
            run.done()
            return True
        return False

    def calls_left() -> bool:  # bounds every call, the opening search and locate included
        return len(run.calls) < max_calls

    query = item["question"][:MAX_QUERY_CHARS]
    if profile.locate_ranks_by_query:  # the question ranks the locate itself: no manifest to pay for
        first, shown = call("locate_evidence", {"term": item["locate_term"], "query": query}), []
    else:
        manifest = call("search_evidence", {"query": query})
        if not calls_left():
            return run
        first, shown = call("locate_evidence", {"term": item["locate_term"]}), _manifest_shown(manifest, profile)
    if answered() or not calls_left():
        return run
    read_located(call, run, item, first, profile, chooser, source.retriever, calls_left, answered, shown)
    return run


def read_located(call: Call, run: Run, item: Mapping[str, Any], first: ToolMessage, profile: Profile, chooser: str,
                 retriever: BaseRetriever, calls_left: Callable[[], bool], answered: Callable[[], bool],
                 shown: Sequence[tuple[str, str]] = ()) -> None:
    """A protocol flow after its first whole-snapshot locate ``first``: pick among the located documents
    (:func:`choose`; the overlap chooser, shown several, first searches the question for their titles unless a
    manifest was ``shown``), then read each pick (:func:`~evidence_lib.eval._reader.read_document`) where the evidence
    is (:func:`read_where_evidence_is`). ``retriever`` says which question words are common in the corpus
    (:func:`~evidence_lib.eval._reader.common_words`). Sets ``run.picked``. Any client of the three tools runs the same
    reading with its own ``call`` (``bench/bench_mcp_servers.py`` over MCP)."""
    near = excerpts([first])  # the text the locate showed (none where it shows offsets only)
    counts = profile.located_counts(first.text) if first.status == "success" else {}
    located = profile.located(first.text) if first.status == "success" else []
    if chooser != "oracle" and len(located) > 1 and not shown:  # to choose among several, see their titles
        shown = _manifest_shown(call("search_evidence", {"query": item["question"][:MAX_QUERY_CHARS]}), profile)
    run.picked = choose(chooser, item, located, [*shown, *((x.doc_id, x.text) for x in near)])
    words = reader_words(item["question"], item["locate_term"])
    common = common_words(retriever, words)
    readings = [read_document(call, item["locate_term"], doc_id, profile, words, counts.get(doc_id, 0),
                              [x for x in near if x.doc_id == doc_id], common) for doc_id in run.picked]
    read_where_evidence_is(readings, calls_left, answered)


def _read(call: Call, doc_id: str, offset: int, profile: Profile) -> int | None:
    """One full page from ``offset``; where the next one starts, as ``profile`` reads the reply."""
    msg = call("read_evidence", {"doc_id": doc_id, "offset": offset, "limit": MAX_PAGE_CHARS})
    if msg.status == "error":
        return None
    return profile.next_offset(msg.text)


def no_help_flow(source: RetrieverSource, corpus: EvidenceIndex, item: Mapping[str, Any],
                 max_calls: int = MAX_CALLS, chooser: str = DEFAULT_CHOOSER) -> Run:
    """The question only: search, then page through a document from its first character.

    ``oracle`` does not apply (the flow is never handed the answer): it reads the retriever's first document.
    ``overlap`` ranks the manifest rows by question words (:func:`choose`) and pages through them in turn
    (:func:`read_in_turn`).
    """
    run, seen = Run(item["id"]), list[ToolMessage]()
    tools = evidence_tools(source)
    call = _caller(tools, run, seen)
    manifest = call("search_evidence", {"query": item["question"][:256]})
    rows = [r["doc_id"] for r in json_rows(manifest.text)] if manifest.status == "success" else []
    if not rows:
        return run
    if chooser == "overlap":
        run.picked = choose("overlap", item, rows, _manifest_shown(manifest, ARTICLE))
    elif chooser == "oracle":
        run.picked = rows[:1]
    else:
        raise ValueError(f"unknown chooser {chooser!r}; choose from {', '.join(CHOOSERS)}")

    def answered() -> bool:
        if answer_citation(corpus, item, excerpts(seen)) is not None:
            run.done()
            return True
        return False

    def pages(doc_id: str) -> Iterator[None]:
        nxt: int | None = 0
        while nxt is not None:
            nxt = _read(call, doc_id, nxt, ARTICLE)
            yield

    read_in_turn([pages(d) for d in run.picked], lambda: len(run.calls) < max_calls, answered)
    return run


def dump_flow(retriever: BM25Retriever, docs: Mapping[str, Document], item: Mapping[str, Any]) -> Run:
    """The baseline: the BM25 top-5 full texts in one reply; answered when the span's document is among them."""
    run = Run(item["id"])
    top = [docs[d.metadata["doc_id"]] for d in retriever.model_copy(update={"k": DUMP_K}).invoke(item["question"])]
    content = baseline_dump(top)
    run.record("dump", {"query": item["question"], "k": DUMP_K}, content)
    for d in top:
        if d.doc_id == item["doc_id"] and d.text[item["start"]:item["end"]] == item["answer_span"]:
            digest = hashlib.sha256(d.text.encode("utf-8")).hexdigest()
            whole = Citation(d.doc_id, d.revision, 0, len(d.text), digest)
            corpus = EvidenceIndex.in_memory([d])
            if verify_citation(corpus, whole, [ReadRecord(d.doc_id, d.revision, 0, len(d.text), digest)]).ok:
                run.done()
    return run
