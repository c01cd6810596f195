"""Workshop part 4: budgets, dedupe and loading only what the task needs (notebooks 04, 05 and 06).

Exercises: q1 what a hundred tiny reads really cost (scenario 4; a function the checker also runs on reads
no notebook prints), q2 a Budget that stops the loop but lets the real task through, q3 when a read is
already covered (the ledger's dedupe), q4 which tool schemas to load for a task. Used by
``notebooks/exercises/workshop_part4.ipynb``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import cache
from typing import Any

from langchain_core.messages import ToolMessage

from ..._access import Access, Principal, allowed
from ..._ledger import Budget, Ledger
from ..._measure import Size, utf8_bytes
from ..._paging import covering
from ..._tools import MAX_PAGE_CHARS, evidence_tools, run_tool_call, tool_call
from ..article import ANSWER_DOC_ID, article_corpus
from ._shared import is_int, kept_index, pair_of_ints, show, temp_index, unlimited, variant_corpus
from .core import Exercise, Result, call, correct, incorrect

__all__ = ["COVERAGE_CASES", "MAX_TINY_READS", "ONE_READ", "REAL_TASK", "TASK", "TASK_CALLS", "TINY_READS",
           "WHOLE_DOCUMENT",
           "agent", "q1", "q2", "q3", "q4", "run_calls"]

_D03 = next(d for d in article_corpus() if d.doc_id == ANSWER_DOC_ID)

#: Scenario 4: a hundred one-character reads of d03 ...
TINY_READS: list[dict[str, Any]] = [{"doc_id": ANSWER_DOC_ID, "offset": i, "limit": 1} for i in range(100)]
#: ... against one read of the same hundred characters.
ONE_READ: dict[str, Any] = {"doc_id": ANSWER_DOC_ID, "offset": 0, "limit": len(TINY_READS)}
#: The real task: search, locate 单批上限 ("per-batch limit"), one full page ending with the answer.
REAL_TASK: list[tuple[str, dict[str, Any]]] = [
    ("search_evidence", {"query": "批处理上限"}),
    ("locate_evidence", {"term": "单批上限"}),
    ("read_evidence", {"doc_id": ANSWER_DOC_ID, "offset": len(_D03.text) - MAX_PAGE_CHARS, "limit": MAX_PAGE_CHARS}),
]
#: A second legitimate task: read all of d03, one full page after another (following next_offset).
WHOLE_DOCUMENT: list[tuple[str, dict[str, Any]]] = [
    ("read_evidence", {"doc_id": ANSWER_DOC_ID, "offset": o, "limit": MAX_PAGE_CHARS})
    for o in range(0, len(_D03.text), MAX_PAGE_CHARS)
]
#: q2: the tiny-read loop must be stopped before this many reads have been sent.
MAX_TINY_READS = 10


def run_calls(tools: Any, calls: Sequence[tuple[str, Mapping[str, Any]]], prefix: str = "call") -> list:
    """Run ``(tool name, args)`` pairs as an agent loop would; one ToolMessage per call, never raises."""
    return [run_tool_call(tools, tool_call(name, args, f"{prefix}-{i}")) for i, (name, args) in enumerate(calls, 1)]


# -- q1 · what a hundred tiny reads cost ------------------------------------------------------------------

def _tiny(doc_id: str, offset: int, n: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    return ([{"doc_id": doc_id, "offset": offset + i, "limit": 1} for i in range(n)],
            {"doc_id": doc_id, "offset": offset, "limit": n})


def _tiny_cases() -> list[tuple[str, list, list[dict[str, Any]], dict[str, Any]]]:
    """(label, corpus, tiny reads, the one read): the notebook's first, then three no notebook prints."""
    edited = [replace(d, revision="2026-12-01-hotfix") if d.doc_id == "d07" else d for d in article_corpus()]
    return [
        ("TINY_READS and ONE_READ", article_corpus(), TINY_READS, ONE_READ),
        ("37 tiny reads of d07 from offset 1,000", article_corpus(), *_tiny("d07", 1000, 37)),
        ("60 tiny reads of a shorter d03, on other candidates", variant_corpus("q4.1", 5), *_tiny("d03", 10, 60)),
        ("25 tiny reads of d07 under a longer revision label", edited, *_tiny("d07", 0, 25)),
    ]


def _tiny_tools(i: int) -> list:
    return evidence_tools(kept_index(f"part4-q1-{i}", _tiny_cases()[i][1]))


@cache
def _tiny_and_one(i: int = 0) -> tuple[tuple, tuple]:
    """Case ``i``'s ToolMessages: the tiny-read loop and the one read."""
    _, _, reads, one_read = _tiny_cases()[i]
    tools = _tiny_tools(i)
    return (tuple(run_calls(tools, [("read_evidence", a) for a in reads], "tiny")),
            tuple(run_calls(tools, [("read_evidence", one_read)], "one")))


def _check_overhead(tiny_cost: Any) -> Result:
    if not callable(tiny_cost):
        return incorrect(f"tiny_cost should be a function of (tools, tiny_reads, one_read), got {show(tiny_cost)}")
    first = None
    for i, (label, _, reads, one_read) in enumerate(_tiny_cases()):
        loop, one = _tiny_and_one(i)
        loop_size, one_size = Size.of(*loop), Size.of(*one)
        expected = (loop_size.utf8_bytes, one_size.utf8_bytes)
        first = first or expected
        got = call(tiny_cost, _tiny_tools(i), [dict(a) for a in reads], dict(one_read), name="tiny_cost")
        where = f"for {label}"
        if not pair_of_ints(got):
            return incorrect(f"tiny_cost should return a pair of ints (loop bytes, one-read bytes), got {show(got)} "
                             f"{where}")
        got = tuple(got)
        if got == expected:
            continue
        if got == expected[::-1]:
            return incorrect(f"the two numbers are swapped {where}: the loop first, then the single read")
        text_bytes = utf8_bytes("".join(json.loads(m.content)["text"] for m in one))
        if text_bytes in got:
            return incorrect(f"{text_bytes:,} counts only the text {where}; the model sees every whole ToolMessage: "
                             "doc_id, revision, a 64-character sha256, start, end, total_chars and next_offset come "
                             "with every page")
        if got == (loop_size.cl100k_tokens, one_size.cl100k_tokens):
            return incorrect(f"those are cl100k tokens {where}; the question asks for UTF-8 bytes")
        if got == (loop_size.chars, one_size.chars):
            return incorrect(f"those are characters {where}; the question asks for UTF-8 bytes")
        if got[0] in (expected[1] * len(loop), Size.of(loop[0]).utf8_bytes, Size.of(loop[-1]).utf8_bytes):
            return incorrect(f"{got[0]:,} is not what the loop sends {where}: measure all {len(loop)} of its "
                             "ToolMessages together (Size.of(*loop)), not one of them, and not the single read times "
                             f"{len(loop)}")
        if got == first:
            return incorrect(f"your function returns {got} {where}, exactly what TINY_READS and ONE_READ give: it "
                             "must run and measure the reads it is given (the checker passes reads no notebook "
                             "prints, so a number copied from an output cannot pass)")
        if got[0] == expected[0]:
            return incorrect(f"the loop is right, but {got[1]:,} is not the single read's size {where} "
                             f"({expected[1]:,})")
        return incorrect(f"({got[0]:,}, {got[1]:,}) are not the UTF-8 sizes of the two sets of ToolMessages {where}")
    loop, one = _tiny_and_one(0)
    a, b = Size.of(*loop).utf8_bytes, Size.of(*one).utf8_bytes
    return correct(f"tiny_cost agrees on {len(_tiny_cases())} sets of reads, three never printed. The notebook's "
                   f"loop sends {a:,} bytes in {len(loop)} ToolMessages for the same {ONE_READ['limit']} characters "
                   f"one read sends in {b:,} bytes: {a / b:.1f}x more. Each page repeats doc_id, revision, sha256, "
                   "start, end, total_chars and next_offset around one character.")


q1 = Exercise(
    "4.1", "What a hundred tiny reads cost",
    checker=_check_overhead,
    ask="fill in tiny_cost(tools, tiny_reads, one_read): the pair (UTF-8 bytes of the tiny reads' ToolMessages, "
        "UTF-8 bytes of the one read's), then run this cell again.",
    hints=(
        'The model sees every whole ToolMessage: doc_id, revision, sha256, the range and next_offset ride '
        'along with each page, however little text it holds.',
        "run_calls(tools, [('read_evidence', args), ...]) gives you the ToolMessages; "
        'Size.of(*messages).utf8_bytes measures all of them together, envelope included. Run the reads you are '
        'given: the checker passes other ones too.',
        'Shape: loop = run_calls(...) over tiny_reads, one = run_calls(...) with one_read, then the pair of '
        'Size.of(*...).utf8_bytes, the loop first.',
    ),
    stub='''
def tiny_cost(tools, tiny_reads, one_read):
    """(UTF-8 bytes of the tiny reads' ToolMessages, UTF-8 bytes of the one read's ToolMessage)."""
    return ____
''',
    solution='''
def tiny_cost(tools, tiny_reads, one_read):
    """(UTF-8 bytes of the tiny reads' ToolMessages, UTF-8 bytes of the one read's ToolMessage)."""
    loop = run_calls(tools, [("read_evidence", args) for args in tiny_reads], "tiny")
    one = run_calls(tools, [("read_evidence", one_read)], "one")
    return (Size.of(*loop).utf8_bytes, Size.of(*one).utf8_bytes)

print(tiny_cost(tools, TINY_READS, ONE_READ))
''',
)


# -- q2 · a budget that stops the loop but not the task -----------------------------------------------------

def _refusal(message: ToolMessage) -> tuple[str, str | None]:
    body = json.loads(message.text)
    return body.get("error", ""), body.get("reason")


def _task_totals(task: list[tuple[str, dict[str, Any]]] = REAL_TASK) -> dict[str, int]:
    """What a task spends with no limits (to say how far a budget is off)."""
    with temp_index() as index:
        ledger = Ledger(unlimited())
        run_calls(evidence_tools(index, ledger=ledger), task, "task")
        return ledger.totals()


def _check_budget(answer: Any) -> Result:
    if not isinstance(answer, Budget):
        return incorrect(f"the answer should be a Budget(...), got {show(answer)}")
    for name, value in vars(answer).items():
        if value is not None and not (is_int(value) and value > 0):
            return incorrect(f"{name} should be a positive int or None (no limit), got {show(value)}")
    with temp_index() as index:
        task_ledger = Ledger(answer)
        task = run_calls(evidence_tools(index, ledger=task_ledger), REAL_TASK, "task")
        whole = run_calls(evidence_tools(index, ledger=Ledger(answer)), WHOLE_DOCUMENT, "page")
        loop_ledger = Ledger(answer)
        loop = run_calls(evidence_tools(index, ledger=loop_ledger), [("read_evidence", a) for a in TINY_READS],
                         "tiny")
    for i, message in enumerate(task, 1):
        if message.status == "error":
            code, reason = _refusal(message)
            need = _task_totals()
            return incorrect(f"the real task was refused at call {i} of {len(task)} ({message.name}: {code}, limit "
                             f"{reason}). The whole task needs {need['calls']} calls, {need['chars']:,} chars, "
                             f"{need['bytes']:,} bytes and {need['tokens']:,} tokens: the budget is too tight")
    for i, message in enumerate(whole, 1):
        if message.status == "error":
            code, reason = _refusal(message)
            need = _task_totals(WHOLE_DOCUMENT)
            return incorrect(f"reading d03 page by page was refused at page {i} of {len(whole)} ({code}, limit "
                             f"{reason}). Those {need['calls']} full pages need {need['chars']:,} chars, "
                             f"{need['bytes']:,} bytes and {need['tokens']:,} tokens: a legitimate task must fit")
    sent = len(loop_ledger.charged)
    stopped = [m for m in loop if m.status == "error"]
    if not stopped:
        spent = loop_ledger.totals()
        return incorrect(f"all {len(loop)} tiny reads went through ({spent['bytes']:,} bytes, {spent['tokens']:,} "
                         "tokens): nothing stops the loop")
    if sent > MAX_TINY_READS:
        return incorrect(f"the loop was stopped only after {sent} reads; stop it within {MAX_TINY_READS}")
    code, reason = _refusal(stopped[0])
    t = task_ledger.totals()
    seen = loop_ledger.context()
    return correct(f"the loop was stopped after {sent} read(s) with {code} (limit: {reason}); the real task went "
                   f"through ({t['calls']} calls, {t['bytes']:,} bytes, {t['tokens']:,} tokens) and so did the "
                   f"{len(whole)} full pages of d03. A count stops the loop (calls or reads_per_doc), sized to the "
                   "legitimate tasks: neither tells a tiny page from a full one. Refused calls are not charged, yet "
                   "the loop's "
                   f"{seen['refused']} refusals still put {seen['bytes'] - loop_ledger.totals()['bytes']:,} bytes in "
                   "front of the model: that is what the refusal cap (max_refusals) bounds.")


q2 = Exercise(
    "4.2", "A budget that stops the tiny-read loop",
    checker=_check_budget,
    ask=f"set budget to a Budget(...) that lets two legitimate tasks through (REAL_TASK, and WHOLE_DOCUMENT: d03 "
        f"read page by page) but stops the tiny-read loop within {MAX_TINY_READS} reads, then run this cell again.",
    hints=(
        'Measure both tasks first: run each with an unlimited ledger and print ledger.totals(). The default '
        'Budget() is not the answer: try it and see which task it refuses.',
        'Size limits cannot stop the loop: each tiny read is small, and six full pages are far bigger. Limits that '
        'count can: calls, or reads per document (notebook 05\'s cap for scenario 4). Neither tells a tiny page '
        'from a full one, so size the count from the legitimate tasks: WHOLE_DOCUMENT is six calls and six reads '
        'of d03.',
        'Shape: Budget(max_calls=..., max_chars=..., max_bytes=..., max_tokens=..., max_reads_per_doc=...), the '
        'size limits a little above what the larger legitimate task measured, and a count (max_calls, or '
        'max_reads_per_doc) from six up to MAX_TINY_READS.',
    ),
    stub="""
budget = ____  # Budget(max_calls=..., max_chars=..., max_bytes=..., max_tokens=..., max_reads_per_doc=...)
""",
    solution="""
budget = Budget(max_calls=10, max_chars=8_000, max_bytes=20_000, max_tokens=8_000, max_reads_per_doc=None)
""",
    solution_note="Many budgets pass. Counting limits stop the loop, size limits cannot: a cap on calls (as here) or "
                  "on reads per document (Budget(max_reads_per_doc=6) passes too), from the six reads of "
                  "WHOLE_DOCUMENT up to MAX_TINY_READS. Neither count tells a tiny page from a full one, so both are "
                  "sized to the legitimate tasks you measured: a task that must page through a longer document "
                  "needs a larger per-document cap. Bigger pages are cheaper per character than tiny ones.",
)


# -- q3 · dedupe: is a read already covered? --------------------------------------------------------------

#: (earlier reads of one document, start, end). Ranges are non-empty and half-open.
COVERAGE_CASES: list[tuple[list[tuple[int, int]], int, int]] = [
    ([(0, 800)], 100, 200),
    ([(0, 800)], 700, 900),
    ([(0, 800), (800, 1600)], 700, 900),
    ([(800, 1600), (0, 800)], 0, 1600),
    ([(0, 800), (801, 1600)], 700, 900),
    ([], 0, 10),
    ([(0, 100), (50, 300), (200, 400)], 10, 390),
    ([(100, 200)], 100, 200),
    ([(100, 200)], 99, 200),
    ([(100, 200)], 100, 201),
    ([(0, 10), (3, 5)], 0, 10),
    ([(4321, 4339)], 4321, 4339),
    ([(0, 100), (50, 150)], 0, 200),  # overlapping reads: their lengths add up to 200, they cover 150
    ([(0, 10), (0, 10)], 0, 15),  # the same read twice covers 10 characters, not 20
]


def _library_covered(earlier: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    return covering(earlier, start, end) or []


def _check_is_covered(is_covered: Any) -> Result:
    if not callable(is_covered):
        return incorrect(f"is_covered should be a function, got {show(is_covered)}")
    for earlier, start, end in COVERAGE_CASES:
        used = _library_covered(earlier, start, end)
        expected = bool(used)
        got = call(is_covered, [tuple(r) for r in earlier], start, end, name="is_covered")
        where = f"is_covered({earlier}, {start}, {end})"
        if not isinstance(got, bool):
            return incorrect(f"{where} should return True or False, got {show(got)}")
        if got == expected:
            continue
        if expected:
            how = (f"{' and '.join(f'[{s}, {e})' for s, e in used)} cover it together" if len(used) > 1
                   else f"[{used[0][0]}, {used[0][1]}) covers it")
            return incorrect(f"{where} should be True: {how}")
        gap = next(i for i in range(start, end) if not any(s <= i < e for s, e in earlier))
        added = sum(max(0, min(e, end) - max(s, start)) for s, e in earlier)
        why = (f"the reads overlap, so adding their lengths ({added}) counts the characters they share twice"
               if added >= end - start else "ranges are half-open: [s, e) holds s .. e-1")
        return incorrect(f"{where} should be False: character {gap} was never sent ({why})")
    return correct(f"is_covered agrees with Ledger.covering on all {len(COVERAGE_CASES)} cases, including reads "
                   "that only cover a range together. A covered read is answered already_read, without text.")


q3 = Exercise(
    "4.3", "Dedupe: is this read already covered?",
    checker=_check_is_covered,
    ask="fill in is_covered(earlier, start, end), then run this cell again.",
    hints=(
        'Sort the earlier ranges by start and walk from start: how far do they cover without a gap?',
        'Keep a variable reach, how far the covered prefix goes (it starts at start). A range extends it only '
        'if it starts at or before reach and ends after it. Half-open ranges: [0, 800) and [800, 1600) touch, '
        '[0, 800) and [801, 1600) leave character 800 out.',
        'Shape: reach = start; for s, e in sorted(earlier): if s <= reach < e: reach = e; covered once reach '
        '>= end.',
    ),
    stub='''
def is_covered(earlier, start, end):
    """True if the ranges in earlier (half-open (s, e) pairs) together cover [start, end)."""
    return ____
''',
    solution='''
def is_covered(earlier, start, end):
    """True if the ranges in earlier (half-open (s, e) pairs) together cover [start, end)."""
    reach = start
    for s, e in sorted(earlier):
        if s <= reach < e:
            reach = e
        if reach >= end:
            return True
    return False
''',
)


# -- q4 · which tool schemas to load -------------------------------------------------------------------

#: The task in q4, in the words a support agent would hear.
TASK = "Customer C-00417 asks whether refund RF-0001 has been approved yet; look it up and tell them by SMS."
#: The calls that do the task. 您的退款申请RF-0001正在审批中。 "Your refund request RF-0001 is pending approval."
TASK_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("query_refund_status", {"refund_id": "RF-0001"}),
    ("send_customer_message", {"customer_id": "C-00417", "channel": "sms", "text": "您的退款申请RF-0001正在审批中。"}),
]


def _toolbox():
    from ..after_sales import after_sales_toolbox

    return after_sales_toolbox()


def _agent() -> Principal:
    from ..after_sales import TENANT

    return Principal(TENANT, "agent-7", groups=frozenset({"support"}))


#: The support agent the application authenticated (q4).
agent = _agent()


def _check_schemas(answer: Any) -> Result:
    from ...disclosure._toolbox import MAX_LOAD, measure_schema_loading

    if isinstance(answer, str) or not isinstance(answer, (list, tuple, set, frozenset)):
        return incorrect(f"the answer should be a list of tool names, got {show(answer)}")
    names = list(dict.fromkeys(sorted(answer) if isinstance(answer, (set, frozenset)) else answer))
    if any(not isinstance(n, str) for n in names):
        return incorrect("every element should be a tool name (a str)")
    toolbox = _toolbox()
    unknown = [n for n in names if n not in toolbox.specs]
    if unknown:
        return incorrect(f"{unknown[0]!r} is not a registered tool; find_tools(...) returns the names")
    everything = Size.of(json.dumps(toolbox.all_schemas(), ensure_ascii=False)).utf8_bytes
    if len(names) > MAX_LOAD:
        return incorrect(f"load_tools takes at most {MAX_LOAD} names, and you picked {len(names)}. All "
                         f"{len(toolbox.specs)} schemas up front would be {everything:,} bytes in every request")
    needed = [name for name, _ in TASK_CALLS]
    for name, args in TASK_CALLS:  # the task really is doable with these tools, for this agent
        toolbox.execute(agent, name, args)
    missing = [n for n in needed if n not in names]
    if missing:
        return incorrect(f"the task also needs {missing[0]} ({toolbox.specs[missing[0]].purpose.rstrip('.')})")
    extra = [n for n in names if n not in needed]
    if extra:
        spec = toolbox.specs[extra[0]]
        may = allowed(Access(toolbox.tenant, read=spec.grants), agent, "read")
        refusal = "" if may else ", and this agent may not run it: execute would answer unknown_tool"
        return incorrect(f"{extra[0]} is not needed for this task ({spec.purpose.rstrip('.')}){refusal}")
    m = measure_schema_loading(toolbox, "refund status", load=names)
    return correct(f"{len(names)} schemas. With find_tools and load_tools the model sees "
                   f"{m.find_and_load.utf8_bytes:,} bytes of tool definitions instead of "
                   f"{m.all_up_front.utf8_bytes:,} for all {len(toolbox.specs)} ({m.ratio()}x fewer). Loading a "
                   "schema grants nothing: execute still checks the agent's grants on every call.")


q4 = Exercise(
    "4.4", "Which tool schemas to load",
    checker=_check_schemas,
    ask="set to_load to the list of tool names whose schemas the model needs for TASK, then run this cell again.",
    hints=(
        'TASK does two things: look something up, then tell the customer. One tool each; nothing else is '
        'needed.',
        "toolbox.find_tools('refund status') and toolbox.find_tools('send message to customer') find "
        'candidates by purpose. Querying a refund is not creating or approving one.',
        'Shape: a list of the two names find_tools returns first for those two queries, in task order.',
    ),
    stub="""
to_load = ____  # a list of tool names
""",
    solution="""
print(toolbox.find_tools("refund status", limit=3))
print(toolbox.find_tools("send message to customer", limit=3))
to_load = ["query_refund_status", "send_customer_message"]
""",
)
