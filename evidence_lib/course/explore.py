"""The logic behind the live explorers: context size, a tool-call stepper, a ledger playground.

Taught in notebook 10 ("Explore it live"); :mod:`evidence_lib.course.widgets` only wires controls to
these functions. Nothing here is estimated: every protocol number is the measured content of a
real ``ToolMessage`` returned by the real tools over an :class:`~evidence_lib._index.EvidenceIndex`
(a temporary copy of the article corpus unless you pass one). Results are cached per setting, so
moving a slider back and forth costs one dictionary lookup.

Sizes are summed per message (each ``ToolMessage`` is tokenized on its own in a chat request), so
the article's three messages are 1,601 cl100k tokens here against 1,600 for their concatenation.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from .._documents import Document, baseline_dump
from .._index import EvidenceIndex
from .._ledger import Budget, Ledger
from .._measure import Size
from .._tools import MAX_PAGE_CHARS, evidence_tools, run_tool_call, tool_call
from .article import ANSWER, article_corpus

#: What the scripted model searches for and which literal term it locates (the article's pair).
QUERY = "批处理上限"  # "batch limit"
TERM = "单批上限"  # "per-batch limit"
MAX_READS = 20
BAR_WIDTH = 40

BudgetLike = Budget | int | None


def byte_budget(max_bytes: int) -> Budget:
    """A budget that limits UTF-8 bytes only (no call, char, token or per-document limit)."""
    return Budget(max_calls=None, max_chars=None, max_bytes=max_bytes, max_tokens=None, max_reads_per_doc=None)


def as_budget(budget: BudgetLike) -> Budget | None:
    """``None`` (no ledger), a :class:`Budget`, or an int meaning :func:`byte_budget`."""
    if budget is None or isinstance(budget, Budget):
        return budget
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValueError(f"budget must be None, a Budget or a byte count >= 0, not {budget!r}")
    return byte_budget(budget)


def describe_budget(budget: Budget | None) -> str:
    """A one-line, stable description of a budget's limits."""
    if budget is None:
        return "no budget"
    parts = [f"{name} {value:,}" for name, value in (
        ("calls", budget.max_calls), ("chars", budget.max_chars), ("bytes", budget.max_bytes),
        ("tokens", budget.max_tokens), ("reads/doc", budget.max_reads_per_doc)) if value is not None]
    return "budget: " + (", ".join(parts) if parts else "unlimited")


def text_bar(value: int, scale: int, width: int = BAR_WIDTH) -> str:
    """``value`` as a bar of ``width * value / scale`` blocks; anything above zero shows at least one."""
    if value <= 0 or scale <= 0:
        return ""
    return "█" * max(1, min(width, round(width * value / scale)))


@cache
def default_index() -> EvidenceIndex:
    """The article corpus in a temporary store, built once per process (removed at exit)."""
    tmp = tempfile.TemporaryDirectory(prefix="evidence-explore-")
    index = EvidenceIndex.build(article_corpus(), tmp.name)
    index._explore_tmp = tmp  # type: ignore[attr-defined]  # keep the directory alive with the index
    return index


def _sum_sizes(sizes: Iterable[Size]) -> Size:
    sizes = list(sizes)
    return Size(*(sum(getattr(s, f) for s in sizes) for f in ("chars", "utf8_bytes", "cl100k_tokens", "approx_tokens")))


# -- one tool call, measured -----------------------------------------------------------------------

@dataclass(frozen=True)
class ToolStep:
    """One tool call as the model saw it: the call, the ``ToolMessage`` and the running totals."""

    step: int
    call: dict = field(repr=False)
    message: ToolMessage = field(repr=False)
    size: Size
    total_bytes: int
    total_tokens: int

    @property
    def name(self) -> str:
        return self.call["name"]

    @property
    def status(self) -> str:
        """``ok``, ``already_read`` or the refusal's error code."""
        body = _body(self.message)
        if self.message.status == "error":
            return str(body.get("error", "error")) if isinstance(body, dict) else "error"
        if isinstance(body, dict) and body.get("status") == "already_read":
            return "already_read"
        return "ok"

    @property
    def reason(self) -> str | None:
        """Which limit a ``budget_exhausted`` refusal hit (calls, chars, bytes, tokens, reads_per_doc)."""
        body = _body(self.message)
        return body.get("reason") if self.message.status == "error" and isinstance(body, dict) else None

    def args_text(self) -> str:
        return json.dumps(self.call["args"], ensure_ascii=False)

    def line(self) -> str:
        """``step  tool(args)  status  bytes tokens  running totals``, fixed width."""
        return (f"{self.step:>2}  {self.name + '(' + self.args_text() + ')':<62} {self.status:<16} "
                f"{self.size.utf8_bytes:>6,} B {self.size.cl100k_tokens:>5,} tok   "
                f"total {self.total_bytes:>6,} B {self.total_tokens:>5,} tok")


def _body(message: ToolMessage) -> Any:
    content = message.content
    try:
        return json.loads(content) if isinstance(content, str) else None
    except (TypeError, ValueError):
        return None


class _Transcript:
    """Runs calls through :func:`run_tool_call` and keeps the measured steps in order."""

    def __init__(self, tools: Sequence[BaseTool]) -> None:
        self.tools = tools
        self.steps: list[ToolStep] = []

    def call(self, name: str, args: dict) -> ToolStep:
        n = len(self.steps) + 1
        call = tool_call(name, args, f"{name.split('_')[0]}-{n}")
        message = run_tool_call(self.tools, call)
        size = Size.of(message)
        before_b = self.steps[-1].total_bytes if self.steps else 0
        before_t = self.steps[-1].total_tokens if self.steps else 0
        step = ToolStep(n, call, message, size, before_b + size.utf8_bytes, before_t + size.cl100k_tokens)
        self.steps.append(step)
        return step


def run_protocol(index: EvidenceIndex, page_limit: int = 300, reads: int = 1, budget: BudgetLike = None,
                 query: str = QUERY, term: str = TERM) -> tuple[ToolStep, ...]:
    """The scripted model: search, locate ``term``, then ``reads`` read calls of ``page_limit`` characters.

    The first read starts at the first located position; each further read follows ``next_offset``;
    when a document ends, reading goes on with the next manifest candidate from offset 0 (a model
    that keeps reading after it found the answer). Reading stops at the first refusal, e.g.
    ``budget_exhausted``. With a budget, one :class:`Ledger` is shared by the three tools.
    """
    if not 1 <= page_limit <= MAX_PAGE_CHARS:
        raise ValueError(f"page_limit must be 1..{MAX_PAGE_CHARS}")
    if not 0 <= reads <= MAX_READS:
        raise ValueError(f"reads must be 0..{MAX_READS}")
    b = as_budget(budget)
    t = _Transcript(evidence_tools(index, ledger=Ledger(b) if b is not None else None))
    listing = t.call("search_evidence", {"query": query})
    positions = t.call("locate_evidence", {"term": term})
    manifest = [e["doc_id"] for e in _body(listing.message)] if listing.status == "ok" else []
    hits = _body(positions.message) if positions.status == "ok" else []
    queue = [(h["doc_id"], h["offset"]) for h in hits[:1]]
    queue += [(doc_id, 0) for doc_id in manifest if doc_id not in {d for d, _ in queue}]
    done = 0
    while queue and done < reads:
        doc_id, offset = queue.pop(0)
        while done < reads:
            step = t.call("read_evidence", {"doc_id": doc_id, "offset": offset, "limit": page_limit})
            done += 1
            if step.status != "ok":
                return tuple(t.steps)
            offset = _body(step.message)["next_offset"]
            if offset is None:
                break
    return tuple(t.steps)


def read_texts(steps: Iterable[ToolStep]) -> dict[str, str]:
    """The text each document returned, pages concatenated in call order."""
    out: dict[str, str] = {}
    for s in steps:
        if s.name == "read_evidence" and s.status == "ok":
            body = _body(s.message)
            out[body["doc_id"]] = out.get(body["doc_id"], "") + body["text"]
    return out


# -- (a) the context-size model ----------------------------------------------------------------------

@dataclass(frozen=True)
class ContextPoint:
    """Baseline vs protocol for one setting of the explorer."""

    top_k: int
    page_limit: int
    reads: int
    budget: Budget | None
    baseline: Size
    protocol: Size
    steps: tuple[ToolStep, ...] = field(repr=False)
    answer_in_baseline: bool
    answer_in_manifest: bool
    answer_reached: bool
    scale_bytes: int = field(repr=False, default=0)

    @property
    def manifest(self) -> Size:
        """The size of the first step's reply: the manifest ``search_evidence`` returned."""
        return self.steps[0].size

    @property
    def reads_ok(self) -> int:
        return sum(s.name == "read_evidence" and s.status == "ok" for s in self.steps)

    @property
    def refused(self) -> int:
        return sum(s.message.status == "error" for s in self.steps)

    @property
    def byte_share_percent(self) -> float:
        """Protocol bytes as a percentage of baseline bytes."""
        return round(100 * self.protocol.utf8_bytes / self.baseline.utf8_bytes, 2)

    def numbers(self) -> dict[str, int | bool]:
        """The displayed numbers as a flat dict (what the widget and the browser test read)."""
        return {
            "baseline_bytes": self.baseline.utf8_bytes, "baseline_tokens": self.baseline.cl100k_tokens,
            "protocol_bytes": self.protocol.utf8_bytes, "protocol_tokens": self.protocol.cl100k_tokens,
            "calls": len(self.steps), "reads_ok": self.reads_ok, "refused": self.refused,
            "answer_in_baseline": self.answer_in_baseline, "answer_reached": self.answer_reached,
        }

    def summary(self) -> str:
        """Stable multi-line text: settings, the two sizes with text bars, where the answer is."""
        scale = self.scale_bytes or self.baseline.utf8_bytes
        yes = {True: "yes", False: "NO"}
        rows = [(f"baseline ({self.top_k} full texts)", self.baseline),
                (f"protocol ({len(self.steps)} tool calls)", self.protocol)]
        lines = [f"top_k {self.top_k} · page limit {self.page_limit} · reads {self.reads} · "
                 f"{describe_budget(self.budget)}",
                 f"{'':<26} {'UTF-8 bytes':>11} {'cl100k tokens':>13}"]
        lines += [f"{name:<26} {s.utf8_bytes:>11,} {s.cl100k_tokens:>13,}  {text_bar(s.utf8_bytes, scale)}"
                  for name, s in rows]
        lines.append(f"protocol = {self.byte_share_percent:.2f}% of the baseline's bytes")
        lines.append(f"answer: in baseline {yes[self.answer_in_baseline]} · in manifest "
                     f"{yes[self.answer_in_manifest]} · reached by the reads {yes[self.answer_reached]}")
        lines.append(f"reads returning text: {self.reads_ok} · refused calls: {self.refused}")
        return "\n".join(lines)


class ContextModel:
    """Baseline vs protocol context size over one evidence index, cached per setting.

    ``top_k`` takes the index's first ``top_k`` candidates (the retriever's top k): the baseline
    dumps their full text, the protocol runs :func:`run_protocol` over an index of just those.
    """

    def __init__(self, index: EvidenceIndex | None = None) -> None:
        self.index = index if index is not None else default_index()
        self.entries = self.index.visible()
        self._baseline: dict[int, Size] = {}
        self._points: dict[tuple, ContextPoint] = {}

    @property
    def max_top_k(self) -> int:
        return len(self.entries)

    def documents(self, top_k: int) -> list[Document]:
        return [Document(e.doc_id, e.title, e.revision, self.index.snapshot(e.doc_id).text)
                for e in self.entries[:top_k]]

    def baseline(self, top_k: int) -> Size:
        """Size of :func:`baseline_dump` of the first ``top_k`` candidates."""
        if top_k not in self._baseline:
            self._baseline[top_k] = Size.of(baseline_dump(self.documents(top_k)))
        return self._baseline[top_k]

    def candidates(self, top_k: int) -> EvidenceIndex:
        """The first ``top_k`` entries as an index over the same stored files (nothing is copied)."""
        return EvidenceIndex(self.index.root, self.entries[:top_k])

    def point(self, top_k: int = 12, page_limit: int = 300, reads: int = 1,
              budget: BudgetLike = None) -> ContextPoint:
        """Measure one setting (cached)."""
        if not 1 <= top_k <= self.max_top_k:
            raise ValueError(f"top_k must be 1..{self.max_top_k}")
        b = as_budget(budget)
        key = (top_k, page_limit, reads, b)
        if key not in self._points:
            steps = run_protocol(self.candidates(top_k), page_limit, reads, b)
            dump_docs = self.documents(top_k)
            manifest = _body(steps[0].message) if steps[0].status == "ok" else []
            self._points[key] = ContextPoint(
                top_k, page_limit, reads, b,
                baseline=self.baseline(top_k),
                protocol=_sum_sizes(s.size for s in steps),
                steps=steps,
                answer_in_baseline=ANSWER in baseline_dump(dump_docs),
                answer_in_manifest=any(ANSWER in d.text for d in dump_docs
                                       if d.doc_id in {e["doc_id"] for e in manifest}),
                answer_reached=any(ANSWER in text for text in read_texts(steps).values()),
                scale_bytes=self.baseline(self.max_top_k).utf8_bytes,
            )
        return self._points[key]


# -- (b) the tool-call stepper ------------------------------------------------------------------------

class Stepper:
    """Step through one scripted run (search, locate, read, more pages) one ``ToolMessage`` at a time."""

    def __init__(self, model: ContextModel | None = None, page_limit: int = 300, reads: int = 1,
                 budget: BudgetLike = None) -> None:
        self.model = model if model is not None else ContextModel()
        self.position = 0
        self.configure(page_limit, reads, budget)

    def configure(self, page_limit: int, reads: int, budget: BudgetLike = None) -> None:
        """Choose the script (page limit, number of reads, budget) and go back to step 0."""
        self.page_limit, self.reads, self.budget = page_limit, reads, as_budget(budget)
        self.steps = self.model.point(self.model.max_top_k, page_limit, reads, self.budget).steps
        self.position = 0

    @property
    def current(self) -> ToolStep | None:
        return self.steps[self.position - 1] if self.position else None

    def go(self, position: int) -> None:
        """Show the first ``position`` steps (clamped to 0..len(steps))."""
        self.position = max(0, min(len(self.steps), position))

    def next(self) -> ToolStep | None:
        self.go(self.position + 1)
        return self.current

    def reset(self) -> None:
        self.go(0)

    def summary(self, content_chars: int = 300) -> str:
        """The steps done so far with running totals, then the current message's content (shortened)."""
        head = (f"page limit {self.page_limit} · reads {self.reads} · {describe_budget(self.budget)} · "
                f"step {self.position} of {len(self.steps)}")
        lines = [head] + [s.line() for s in self.steps[: self.position]]
        cur = self.current
        if cur is None:
            lines.append("(no call yet: press Next)")
        else:
            content = str(cur.message.content)
            more = len(content) - content_chars
            shown = content[:content_chars] + (f" … (+{more:,} chars)" if more > 0 else "")
            lines.append(f"ToolMessage(tool_call_id={cur.message.tool_call_id!r}, status={cur.message.status!r}):")
            lines.append(shown)
        return "\n".join(lines)


# -- (c) the ledger playground -------------------------------------------------------------------------

@dataclass(frozen=True)
class ReadSpec:
    """One scripted ``read_evidence`` call."""

    doc_id: str
    offset: int = 0
    limit: int = 300

    def args(self) -> dict[str, object]:
        return {"doc_id": self.doc_id, "offset": self.offset, "limit": self.limit}


#: Named read scripts for the playground: a repeat, the tiny-read loop, a model paging everything.
LEDGER_SCRIPTS: dict[str, tuple[ReadSpec, ...]] = {
    "re-read the answer": (ReadSpec("d03", 4321, 18), ReadSpec("d03", 4321, 18), ReadSpec("d03", 4325, 5),
                           ReadSpec("d03", 4300, 39)),
    "tiny-read loop": tuple(ReadSpec("d03", 20 * i, 20) for i in range(8)),
    "page every candidate": tuple(ReadSpec(f"d{i:02}", 0, 800) for i in range(12)),
}


@dataclass(frozen=True)
class LedgerRun:
    """The outcome of a read script under a budget: every call, its status, and the ledger."""

    script: tuple[ReadSpec, ...]
    budget: Budget
    steps: tuple[ToolStep, ...] = field(repr=False)
    ledger: Ledger = field(repr=False)

    @property
    def statuses(self) -> list[str]:
        return [s.status for s in self.steps]

    def status_counts(self) -> dict[str, int]:
        return dict(sorted(Counter(self.statuses).items()))

    def totals(self) -> dict[str, int]:
        """What the ledger charged (refused calls are recorded but never charged)."""
        return self.ledger.totals()

    def summary(self) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in self.status_counts().items())
        lines = [describe_budget(self.budget), self.ledger.summary(), f"statuses: {counts}"]
        first = next((s for s in self.steps if s.reason), None)
        if first is not None:
            lines.append(f"first refusal: step {first.step}, {first.status} ({first.reason} limit)")
        return "\n".join(lines)


def ledger_run(script: Sequence[ReadSpec] | str, budget: Budget | None = None,
               index: EvidenceIndex | None = None) -> LedgerRun:
    """Run ``script`` (a name from :data:`LEDGER_SCRIPTS` or read specs) through tools sharing one ledger.

    Unlike the scripted model, the playground does not stop at a refusal: every scripted call is
    made, so you see ``already_read`` and ``budget_exhausted`` side by side.
    """
    specs = LEDGER_SCRIPTS[script] if isinstance(script, str) else tuple(script)
    budget = budget if budget is not None else Budget()
    return _default_ledger_run(specs, budget) if index is None else _ledger_run(specs, budget, index)


@cache
def _default_ledger_run(specs: tuple[ReadSpec, ...], budget: Budget) -> LedgerRun:
    return _ledger_run(specs, budget, default_index())


def _ledger_run(specs: tuple[ReadSpec, ...], budget: Budget, index: EvidenceIndex) -> LedgerRun:
    ledger = Ledger(budget)
    t = _Transcript(evidence_tools(index, ledger=ledger))
    for spec in specs:
        t.call("read_evidence", spec.args())
    return LedgerRun(specs, budget, tuple(t.steps), ledger)
