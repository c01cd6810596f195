"""Reading flows on real documents, measured side by side with the same help. Taught in notebook 08.

Every flow answers one QA item (``question, doc_id, answer_span, start, end, locate_term``) with tool
calls and is measured by what the tools *returned*: UTF-8 bytes and cl100k tokens of every reply,
up to and including the call that made the answer citable (or all calls if none did).

The help, the same for every flow except ``no_help``: the scripted reader is handed ``locate_term``
and, among the documents located, may pick the answer's ``doc_id``. It uses ``start``/``end`` only to
decide whether the answer is visible yet, never to decide where to read. At most ``MAX_CALLS`` calls.

A question counts as answered only when a citation built from the tool output verifies against the
corpus (``verify_citation``: the same bytes, read, text matching) and contains the span. The Deep
Agents flow (:mod:`.deepagents_flow`) cannot produce such a citation: there, "answered" means the
span was visible.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..citations import Citation, verify_citation
from ..corpus import Document, baseline_dump
from ..index import EvidenceIndex
from ..ledger import ReadRecord
from ..measure import cl100k_tokens, utf8_bytes
from ..profiles import Excerpt, excerpts
from ..retrieval.bm25 import BM25Retriever
from ..retrieval.snapshot import RetrieverSource
from ..toolkit import run_tool_call, tool_call
from ..tools import MAX_PAGE_CHARS, evidence_tools

MAX_CALLS = 10
DUMP_K = 5
#: How far before a located match the reader starts a page (it does not know where the answer begins).
LEAD = 200

HELP = {
    "dump_top5": "none beyond the question: the BM25 top-5 full texts for the question, in one reply",
    "article": "locate_term; may pick the answer's doc_id among located documents; start/end only to check "
               "visibility; at most 10 calls (article profile)",
    "compact": "locate_term; may pick the answer's doc_id among located documents; start/end only to check "
               "visibility; at most 10 calls (compact profile)",
    "no_help": "the question only: search, then page through the top-ranked document",
    "deepagents": "locate_term (grep); may open the answer's file among the files grep found; start/end only to "
                  "check visibility; at most 10 calls (Deep Agents FilesystemBackend tools, no revision or hash)",
}
PROVES = {
    "dump_top5": "the span's document was among the five dumped texts (the whole document counts as read)",
    "article": "a citation (doc_id, revision, sha256, [start, end)) built from the replies verified and covers the span",
    "compact": "a citation (doc_id, revision, sha256, [start, end)) built from the replies verified and covers the span",
    "no_help": "a verified citation, when the top-ranked document happens to hold the span within 9 pages",
    "deepagents": "the span was visible in read_file output; no revision or hash, so nothing can be verified",
}


@dataclass
class Run:
    """One flow on one question: every call with its size, and whether (and when) it became citable."""

    id: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    answered: bool = False
    answered_at: int | None = None  # 1-based index of the call that made the answer citable

    def record(self, name: str, args: Mapping[str, Any], content: str) -> None:
        self.calls.append({"tool": name, "args": dict(args), "utf8_bytes": utf8_bytes(content),
                           "cl100k_tokens": cl100k_tokens(content)})

    def done(self) -> None:
        self.answered, self.answered_at = True, len(self.calls)

    def as_dict(self) -> dict[str, Any]:
        upto = self.calls[: self.answered_at] if self.answered_at else self.calls
        return {"id": self.id, "answered": self.answered, "calls": self.calls,
                "bytes": sum(c["utf8_bytes"] for c in upto), "tokens": sum(c["cl100k_tokens"] for c in upto),
                "calls_until_answer": len(upto)}


def citable(corpus: EvidenceIndex, item: Mapping[str, Any], seen: Sequence[Excerpt]) -> Citation | None:
    """A verified citation covering the answer span, built only from excerpts the tools returned, else None."""
    mine = sorted((x for x in seen if x.doc_id == item["doc_id"] and len(x.sha256) == 64),
                  key=lambda x: (x.start, x.end))
    merged: list[list[Any]] = []  # [start, end, revision, sha256] of runs of touching excerpts
    for x in mine:
        if merged and x.start <= merged[-1][1] and (x.revision, x.sha256) == tuple(merged[-1][2:]):
            merged[-1][1] = max(merged[-1][1], x.end)
        else:
            merged.append([x.start, x.end, x.revision, x.sha256])
    reads = [ReadRecord(x.doc_id, x.revision, x.start, x.end, x.sha256) for x in mine]
    for s, e, rev, sha in merged:
        if s <= item["start"] and item["end"] <= e:
            cite = Citation(item["doc_id"], rev, s, e, sha)
            if verify_citation(corpus, cite, reads).ok:
                return cite
    return None


def _caller(tools, run: Run, seen: list) -> Callable[[str, dict[str, Any]], Any]:
    def call(name: str, args: dict[str, Any]):
        msg = run_tool_call(tools, tool_call(name, args, f"call-{len(run.calls) + 1}"))
        run.record(name, args, msg.content)
        seen.append(msg)  # the replies so far: excerpts() resolves short hashes across them
        return msg
    return call


def protocol_flow(source: RetrieverSource, corpus: EvidenceIndex, item: Mapping[str, Any], profile: str,
                  max_calls: int = MAX_CALLS) -> Run:
    """search(question) -> locate(term) -> locate(term, doc_id) -> pages around each match, then onward."""
    run, seen = Run(item["id"]), []
    tools = evidence_tools(source, profile=profile)  # type: ignore[arg-type]
    call = _caller(tools, run, seen)

    def answered() -> bool:
        if citable(corpus, item, excerpts(seen)) is not None:
            run.done()
            return True
        return False

    call("search_evidence", {"query": item["question"][:256]})
    first = call("locate_evidence", {"term": item["locate_term"]})
    located = {x.doc_id for x in excerpts([first])} if profile == "compact" else \
        {h["doc_id"] for h in (json.loads(first.content) if first.status == "success" else [])}
    if answered() or item["doc_id"] not in located:
        return run
    offsets, cursor = [], 0
    while cursor is not None and len(run.calls) < max_calls:
        msg = call("locate_evidence", {"term": item["locate_term"], "doc_id": item["doc_id"], "cursor": cursor})
        if answered() or msg.status == "error":
            return run
        if profile == "compact":
            batch = [x.start for x in excerpts([msg])]
            cursor = _next_cursor_compact(msg.content)
        else:
            body = json.loads(msg.content)
            batch, cursor = body["matches"], body["next_cursor"]
        offsets.extend(batch)
    nxt, pages = None, []  # pages: [start, end) of the pages read so far
    for offset in offsets:
        if len(run.calls) >= max_calls:
            return run
        if any(s <= offset < e for s, e in pages):
            continue  # this match is on a page read already
        start = max(0, offset - LEAD)
        nxt = _read(call, item["doc_id"], start, profile)
        pages.append((start, start + MAX_PAGE_CHARS))
        if answered():
            return run
    while nxt is not None and len(run.calls) < max_calls:
        nxt = _read(call, item["doc_id"], nxt, profile)
        if answered():
            return run
    return run


def _read(call, doc_id: str, offset: int, profile: str) -> int | None:
    msg = call("read_evidence", {"doc_id": doc_id, "offset": offset, "limit": MAX_PAGE_CHARS})
    if msg.status == "error":
        return None
    if profile == "compact":
        head = msg.content.split("\n", 1)[0]
        return int(head.rsplit(" ", 1)[1]) if " next " in head else None
    return json.loads(msg.content)["next_offset"]


def _next_cursor_compact(content: str) -> int | None:
    head = content.split("\n", 1)[0]
    return int(head.rsplit(" ", 1)[1]) if ", next cursor " in head else None


def no_help_flow(source: RetrieverSource, corpus: EvidenceIndex, item: Mapping[str, Any],
                 max_calls: int = MAX_CALLS) -> Run:
    """The question only: search, then page through the top-ranked document from its first character."""
    run, seen = Run(item["id"]), []
    tools = evidence_tools(source)
    call = _caller(tools, run, seen)
    manifest = call("search_evidence", {"query": item["question"][:256]})
    body = json.loads(manifest.content) if manifest.status == "success" else []
    rows = body["candidates"] if isinstance(body, dict) else body
    if not rows:
        return run
    nxt: int | None = 0
    while nxt is not None and len(run.calls) < max_calls:
        nxt = _read(call, rows[0]["doc_id"], nxt, "article")
        if citable(corpus, item, excerpts(seen)) is not None:
            run.done()
            break
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
