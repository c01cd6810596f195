"""Workshop part 9: the protocol in any agent client, through the MCP server (notebook 13).

Exercise: q1 given a final answer and the task handle it was read under, call ``verify_citations`` and fix the one
citation it refuses (a range the task never read, a quote that is not the text at its range, a range past the
document's end, a doc_id the server does not know), keeping every other line and every quote as they are. The checker
runs notebook 13's server in this process (:func:`~evidence_lib.integrations.mcp.build_server` and the dispatch its
transports call), so it needs no port and no subprocess. Used by ``notebooks/exercises/workshop_part9.ipynb``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..._documents import Document
from ..._errors import CITATION_REASONS
from ._shared import show
from .core import Exercise, Result, call, correct, incorrect

__all__ = ["PART9_CASES", "LocalServer", "Case", "example_case", "q1", "runbook_corpus"]

_SENTENCES = (
    "Every job writes its batch id and log id to the audit table.",
    "Operators page the on-call engineer when a queue stays full for ten minutes.",
    "A dry run validates the rows without writing them.",
    "Old exports are deleted after ninety days.",
    "The nightly report lists every job that needed a retry.",
)
#: The facts the answers cite, one per document: (doc_id, title, fact).
_FACTS = (
    ("limits", "Batch API limits", "The batch limit is 200 rows per call."),
    ("retries", "Retries", "A failed batch is retried three times, after 2, 4 and 8 seconds."),
    ("timeouts", "Timeouts", "A call that takes longer than 30 seconds is cancelled."),
)


def runbook_corpus() -> list[Document]:
    """Three runbook pages of about 2,000 characters, each holding one fact in its middle (no notebook prints them)."""
    docs = []
    for n, (doc_id, title, fact) in enumerate(_FACTS):
        filler = [_SENTENCES[(n + i) % len(_SENTENCES)] for i in range(30)]
        body = " ".join(filler[:15] + [fact] + filler[15:])
        docs.append(Document(doc_id, title, "2026-12-01", f"{title}\n{body}\n"))
    return docs


class LocalServer:
    """Notebook 13's MCP server in this process, with :class:`~evidence_lib.course.mcp_session.McpSession`'s
    ``call``/``call_json``: the same tools and replies, without a transport. Counts the ``start_task`` calls."""

    def __init__(self, docs: list[Document]) -> None:
        from ..._index import EvidenceIndex
        from ...integrations.mcp import build_server, fixed_source
        from ...integrations.mcp._config import LOCAL_PRINCIPAL

        self._server = build_server(fixed_source(EvidenceIndex.in_memory(docs)), local=LOCAL_PRINCIPAL)
        self._principal = LOCAL_PRINCIPAL
        self.started = 0

    def call(self, name: str, args: Mapping[str, Any] | None = None) -> tuple[str, bool]:
        """One tool call: ``(text, is_error)``."""
        self.started += name == "start_task"
        result = self._server.dispatch(self._principal, name, dict(args or {}))
        return "".join(c.text for c in result.content), bool(result.isError)

    def call_json(self, name: str, args: Mapping[str, Any] | None = None) -> Any:
        """:meth:`call` for a JSON reply."""
        return json.loads(self.call(name, args)[0])


@dataclass(frozen=True)
class Case:
    """One answer with one refused Sources line, and the server and task it was read under."""

    name: str
    server: LocalServer
    task: str
    answer: str
    bad_line: int


def _setup(docs: list[Document], unread: str | None) -> tuple[LocalServer, str, dict[str, tuple[str, int, int]]]:
    """A server and a task that located each fact but ``unread``'s and read a page around it: ``doc_id -> (revision,
    start, end)`` of each fact (``unread``'s where the document holds it, never shown to the task)."""
    from ...profiles import excerpts

    server = LocalServer(docs)
    task = server.call_json("start_task")["task"]
    shown = {}
    for doc, (doc_id, _title, fact) in zip(docs, _FACTS):
        if doc_id == unread:
            start = doc.text.index(fact)
            shown[doc_id] = (doc.revision, start, start + len(fact))
            continue
        reply, _ = server.call("locate_evidence", {"task": task, "term": fact[:24], "doc_id": doc_id})
        x = next(x for x in excerpts([reply]) if fact in x.text)
        start = x.start + x.text.index(fact)
        shown[doc_id] = (x.revision, start, start + len(fact))
        server.call("read_evidence", {"task": task, "doc_id": doc_id, "offset": start - 100, "limit": 400})
    return server, task, shown


def _answer(lines: list[tuple[str, str, int, int, str]]) -> str:
    from ..._answers import format_answer

    return format_answer("Batches hold at most 200 rows [1], fail over after three retries [2] and time out after "
                         "30 seconds [3].", lines)


def _case(name: str, docs: list[Document], bad_line: int, spoil: Any) -> Case:
    """The answer citing every fact, its line ``bad_line`` spoiled by ``spoil`` (``None``: that fact never read)."""
    unread = _FACTS[bad_line - 1][0] if spoil is None else None
    server, task, shown = _setup(docs, unread)
    lines = [(d, *shown[d], fact) for d, _t, fact in _FACTS]
    if spoil is not None:
        lines[bad_line - 1] = spoil(lines[bad_line - 1])
    return Case(name, server, task, _answer(lines), bad_line)


#: q1: the refused line in each case, and how it was spoiled (``None``: the task never read that fact); the other
#: lines verify.
PART9_CASES = {
    "a range the task never read": (1, None),
    "a quote that is not the text at its range": (2, lambda line: (*line[:2], line[2] + 4, line[3] + 4, line[4])),
    "a range past the document's end": (3, lambda line: (*line[:2], line[2] + 2000, line[3] + 2000, line[4])),
    "a doc_id the server does not know": (2, lambda line: ("retry", *line[1:])),
}


def _cases() -> list[Case]:
    docs = runbook_corpus()
    return [_case(name, docs, bad, spoil) for name, (bad, spoil) in PART9_CASES.items()]


def example_case() -> Case:
    """The workshop notebook's case to try on: a range never read, on line 2 (the checker builds its own)."""
    return _case("example", runbook_corpus(), 2, None)


@cache
def _original_quotes(answer: str) -> tuple[str | None, ...]:
    from ..._answers import parse_answer

    return tuple(c.quote if c is not None else None for c in parse_answer(answer).lines)


def _cut(quote: str | None, width: int = 40) -> str:
    """A quote as the learner wrote it (``repr``), cut to ``width`` characters."""
    r = repr(quote)
    return r if len(r) <= width else r[: width - 4] + "...'"


_TIPS = {
    "never_read": "a citation verifies only for text this task was shown: locate (or read) the quoted text with the "
                  "task handle you were given, then cite the range that reply showed",
    "text_mismatch": "the quote is not the text at that range: find where the quote is (locate_evidence with the quote "
                     "as the term) and move the range to the text, never the text to the range",
    "document_changed": "the line's revision is not the one the server holds: keep the revision the answer had, or "
                        "take it from a reply that shows it",
    "out_of_bounds": "the range does not fit in the document: find where the quote is (locate_evidence with the "
                     "quote as the term) and cite that range",
    "unknown_doc_id": "that doc_id is not in the server's folder: locate the quote without doc_id to find the "
                      "document that holds it",
}


def _diagnose(case: Case, fixed: Any, started: int) -> Result | None:
    """Why ``fixed`` is not a right fix of ``case``, or ``None``. Each diagnosis names the case first, then the cause."""
    from ..._answers import parse_answer

    case_ = f'In case "{case.name}",'
    if not isinstance(fixed, str):
        return incorrect(f"{case_} fix_answer should return the answer text (a str), got {show(fixed)}")
    want, got = _original_quotes(case.answer), tuple(c.quote if c else None for c in parse_answer(fixed).lines)
    if len(got) != len(want):
        return incorrect(f"{case_} your answer has {len(got)} Sources lines, the original {len(want)}: fix the "
                         "refused citation, do not drop or add one (each claim [n] needs its source)")
    lines = parse_answer(fixed).lines
    for n, (mine, theirs) in enumerate(zip(got, want), 1):
        if lines[n - 1] is None:
            return incorrect(f"{case_} line {n} of your answer does not follow the citation format (malformed): "
                             "every line needs doc_id@revision [start, end) \"quote\"; a compact reply shows a "
                             "document's revision once per task, so an excerpt's revision can be empty: keep the "
                             "line's then")
        if mine != theirs:
            return incorrect(f"{case_} line {n}'s quote in your answer is {_cut(mine)}, the original {_cut(theirs)}: "
                             "the quote is what the claim cites; keep it and move the range to where that text is")
    report = case.server.call_json("verify_citations", {"task": case.task, "answer": fixed})
    bad = next((row for row in report.get("checks", []) if row["reason"] != "ok"), None)
    if bad is None and report.get("verified"):
        return None
    reason = bad["reason"] if bad else "no_citations"
    tip = _TIPS.get(reason, "check that line again")
    line = lines[bad["line"] - 1] if bad else None
    if reason == "text_mismatch" and line is not None and line.quote and line.end - line.start > len(line.quote):
        tip = (f"the excerpt is wider than the quote: your range [{line.start}, {line.end}) holds "
               f"{line.end - line.start} characters, the quote {len(line.quote)}; cite the quote's own offset "
               "(x.start + x.text.index(quote)) and end it len(quote) later")
    extra = (" (your function started a task of its own: reads count for the task that made them, so use the "
             "handle you were given)") if started else ""
    return incorrect(f"{case_} verify_citations still refuses line {bad['line'] if bad else '?'} of your fixed "
                     f"answer: {reason} ({CITATION_REASONS.get(reason, reason)}); {tip}{extra}")


def _check_fix(fix_answer: Any) -> Result:
    if not callable(fix_answer):
        return incorrect(f"fix_answer should be a function, got {show(fix_answer)}")
    for case in _cases():
        before = case.server.started
        fixed = call(fix_answer, case.server, case.task, case.answer, name="fix_answer")
        problem = _diagnose(case, fixed, case.server.started - before)
        if problem is not None:
            return problem
    return correct(f"in all {len(PART9_CASES)} answers verify_citations now accepts every line, and every quote is "
                   "the original: the refused citation was fixed by finding its text with this task's tools and "
                   "citing the range, revision and document the server showed, not by dropping it or bending the "
                   "quote.")


q1 = Exercise(
    "9.1", "Fix the one citation verify_citations refuses",
    checker=_check_fix,
    ask="write fix_answer(server, task, answer) that returns the answer with its one refused Sources line fixed",
    hints=[
        "Start from the server's own report: server.call_json('verify_citations', {'task': task, 'answer': answer}) "
        "has a row per Sources line; the one whose reason is not 'ok' is the line to fix.",
        "The quote of that line is right, the rest may not be. parse_answer(answer).lines[n - 1] gives its doc_id, "
        "revision, start, end and quote. Ask the server where the quote is: locate_evidence with the quote as the "
        "term (and the line's doc_id, unless the server does not know that doc_id).",
        "excerpts([reply]) turns the locate reply into excerpts with doc_id, revision, start and text; the quote "
        "starts at x.start + x.text.index(quote). A compact reply shows a document's revision once per task (later "
        "replies name the bytes by their #handle), so an excerpt's revision may be empty: keep the line's then. "
        "Rebuild every line as (doc_id, revision, start, end, quote) with the fixed one replaced, and write the "
        "answer with format_answer(parsed.prose, lines).",
    ],
    solution='''
def fix_answer(server, task, answer):
    """The answer with its one refused Sources line cited where its quote is, as this task's tools show it."""
    report = server.call_json("verify_citations", {"task": task, "answer": answer})
    bad = next(row for row in report["checks"] if row["reason"] != "ok")
    parsed = parse_answer(answer)
    line = parsed.lines[bad["line"] - 1]
    args = {"task": task, "term": line.quote}
    if bad["reason"] != "unknown_doc_id":
        args["doc_id"] = line.doc_id
    reply, _ = server.call("locate_evidence", args)
    x = next(x for x in excerpts([reply]) if line.quote in x.text)
    start = x.start + x.text.index(line.quote)
    lines = [(c.doc_id, c.revision, c.start, c.end, c.quote) for c in parsed.lines]
    revision = x.revision or line.revision  # a compact reply shows a revision once per task
    lines[bad["line"] - 1] = (x.doc_id, revision, start, start + len(line.quote), line.quote)
    return format_answer(parsed.prose, lines)''',
    solution_note="The server's report says which line and why; the fix is the same for every reason: find the "
                  "quoted text with this task's tools and cite what the reply showed.",
    stub='''
def fix_answer(server, task, answer):
    return ____''',
)
