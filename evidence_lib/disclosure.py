"""Summaries are navigation; reads must stop. Taught in notebooks 06 (gate, planted text) and 07 (stopping).

* :func:`dropped_conditions` shows what a one-line summary leaves out of a clause;
  :class:`AnswerGate` allows a final answer only after every required clause was read in full.
* :class:`ScriptedReturnShippingPolicy` is a deterministic stand-in for a model (no LLM): its tool
  calls depend on the task and on structured fields, never on instructions found in source text.
* :class:`ReadSession` enforces the article's stop conditions: at most N supplementary reads,
  the same resource at the same version reused rather than re-read, and consecutive reads without
  new evidence stop the loop with a report of what is missing.
* :func:`plan_loading` and :class:`LatencyIllustration`: prefetch what nearly every task needs,
  load rare large things on demand, and the article's latency arithmetic, labelled as such.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from .access import Principal
from .catalog import Catalog, source_label
from .errors import EvidenceError
from .measure import Size
from .tools import run_tool_call, tool_call

#: Conditions a summary of the return clause must not lose. 三十天内 "within thirty days",
#: 经核实 "after verification".
CONDITIONS: dict[str, str] = {"三十天内": "within thirty days", "经核实": "after verification"}


def dropped_conditions(summary: str, clause: str, conditions: Iterable[str] = CONDITIONS) -> list[str]:
    """Conditions present in ``clause`` but missing from ``summary``, in the order given."""
    return [c for c in conditions if c in clause and c not in summary]


class AnswerGate:
    """Allows a final answer only after each required ``(resource_id, section)`` was read end to end.

    A catalog summary or a partial page does not count; the answer carries the source labels
    (with versions) of what was read.
    """

    def __init__(self, required: Iterable[tuple[str, str]]) -> None:
        self.required = tuple(required)
        self._ranges: dict[tuple[str, str, str], list[tuple[int, int]]] = {}
        self._totals: dict[tuple[str, str, str], int] = {}

    def observe(self, reply: Mapping[str, Any] | ToolMessage) -> None:
        """Record a ``read_section`` reply (a dict, or a ``ToolMessage`` carrying one as JSON)."""
        if isinstance(reply, ToolMessage):
            if reply.status == "error":
                return
            reply = json.loads(reply.content)  # type: ignore[arg-type]
        if not isinstance(reply, Mapping) or reply.get("kind") != "data" or "total_chars" not in reply:
            return
        key = (reply["resource_id"], reply["version"], reply["section"])
        self._ranges.setdefault(key, []).append((reply["start"], reply["end"]))
        self._totals[key] = reply["total_chars"]

    def _complete(self) -> dict[tuple[str, str], str]:
        done = {}
        for (rid, version, section), ranges in sorted(self._ranges.items()):
            reach = 0
            for s, e in sorted(ranges):
                if s <= reach:
                    reach = max(reach, e)
            if reach >= self._totals[(rid, version, section)]:
                done[(rid, section)] = source_label(rid, version, section)
        return done

    def missing(self) -> list[str]:
        done = self._complete()
        return [f"{rid}#{section}" for rid, section in self.required if (rid, section) not in done]

    def final_answer(self, text: str) -> dict[str, Any]:
        """The answer with its sources, or ``evidence_incomplete`` naming the clauses still unread."""
        missing = self.missing()
        if missing:
            raise EvidenceError("evidence_incomplete", missing=missing)
        done = self._complete()
        return {"answer": text, "sources": [done[r] for r in self.required]}


# -- a scripted policy: tool calls come from the task, not from the text ------------------------

@dataclass
class ScriptRun:
    """What a scripted run did: the tool calls it made, the replies, and the gated answer."""

    calls: list[dict[str, Any]]
    messages: list[ToolMessage]
    answer: dict[str, Any]


class ScriptedReturnShippingPolicy:
    """"Who pays the return shipping for this order?" answered by a fixed plan. Deterministic, no LLM.

    It discovers, then reads the order's header, delivery and remark, and the two clauses, each at
    the latest version it discovered. It parses structured fields only; a remark's text is carried
    as quoted data and has no way to add, drop or change a call.
    """

    def __init__(self, order_id: str = "A1042") -> None:
        o = f"order:{order_id}"
        self.order_id = order_id
        self.plan: tuple[tuple[str, str], ...] = (
            (o, "header"), (o, "delivery"), (o, "remarks"),
            ("policy:returns", "quality"), ("policy:shipping", "return_shipping"),
        )

    def next_call(self, messages: Sequence[ToolMessage]) -> dict[str, Any] | None:
        n = len(messages)
        if n == 0:
            return tool_call("discover_resources", {}, "call-1")
        if n - 1 >= len(self.plan):
            return None
        latest = {e["resource_id"]: e["latest_version"] for e in json.loads(messages[0].content)}
        rid, section = self.plan[n - 1]
        return tool_call("read_resource_section",
                         {"resource_id": rid, "version": latest[rid], "section": section}, f"call-{n + 1}")

    def answer(self, messages: Sequence[ToolMessage]) -> str:
        replies = [json.loads(m.content) for m in messages[1:] if m.status != "error"]
        by = {(r["resource_id"], r["section"]): r for r in replies}
        signed = json.loads(by[(f"order:{self.order_id}", "delivery")]["text"])["signed_at"]
        quality = by[("policy:returns", "quality")]["source"]
        shipping = by[("policy:shipping", "return_shipping")]["source"]
        return (f"Order {self.order_id} was signed for at {signed}. The merchant pays return shipping only for a "
                f"quality issue that appears within thirty days of sign-off and is verified ({quality}); "
                f"for any other reason the buyer pays ({shipping}). Next step: quality verification.")


def run_script(tools: Sequence[BaseTool], policy: ScriptedReturnShippingPolicy,
               gate: AnswerGate | None = None, max_steps: int = 10) -> ScriptRun:
    """Drive ``policy`` against real tools until it stops; the answer passes through ``gate``."""
    calls: list[dict[str, Any]] = []
    messages: list[ToolMessage] = []
    while len(calls) < max_steps:
        call = policy.next_call(messages)
        if call is None:
            break
        calls.append(call)
        messages.append(run_tool_call(tools, call))
        if gate is not None and call["name"] == "read_resource_section":
            gate.observe(messages[-1])
    text = policy.answer(messages)
    answer = gate.final_answer(text) if gate is not None else {"answer": text, "sources": []}
    return ScriptRun(calls, messages, answer)


# -- stop conditions ----------------------------------------------------------------------------

@dataclass(frozen=True)
class StopRules:
    """A business choice, not a universal optimum (the article's example values are the defaults)."""

    max_supplementary_reads: int = 2
    max_reads_without_new_evidence: int = 2


@dataclass(frozen=True)
class Need:
    """One piece of evidence the task needs; found when a read's text contains ``marker`` literally."""

    name: str
    marker: str


@dataclass
class ReadSession:
    """Reads for one task under :class:`StopRules`; prefetched reads do not count as supplementary."""

    catalog: Catalog
    principal: Principal | None
    needs: tuple[Need, ...]
    rules: StopRules = field(default_factory=StopRules)
    catalog_reads: int = 0
    supplementary_reads: int = 0
    reused: int = 0
    stop_reason: str | None = None
    found: dict[str, str] = field(default_factory=dict)  # need name -> source label
    log: list[dict[str, Any]] = field(default_factory=list)
    _cache: dict[str, str] = field(default_factory=dict, repr=False)
    _idle: int = 0

    def prefetch(self, resource_id: str, version: str, section: str) -> dict[str, Any]:
        """Load something (nearly) every task needs, before the loop; not counted against the limit."""
        return self._load(resource_id, version, section, supplementary=False)

    def read(self, resource_id: str, version: str, section: str) -> dict[str, Any]:
        """One supplementary read, unless a stop condition holds or the same thing is already loaded."""
        label = source_label(resource_id, version, section)
        if label in self._cache:
            self.reused += 1
            return self._note(label, "reused", [])
        if self.stop_reason is not None:
            return self._note(label, "stopped", [], reason=self.stop_reason)
        return self._load(resource_id, version, section, supplementary=True)

    def _load(self, resource_id: str, version: str, section: str, *, supplementary: bool) -> dict[str, Any]:
        label = source_label(resource_id, version, section)
        if label in self._cache:
            self.reused += 1
            return self._note(label, "reused", [])
        self.catalog_reads += 1
        self.supplementary_reads += supplementary
        try:
            text, offset = "", 0
            while offset is not None:  # one logical read of the whole section, page by page
                page = self.catalog.read_section(self.principal, resource_id, version, section, offset)
                text, offset = text + page["text"], page["next_offset"]
            status = "read"
        except EvidenceError as e:
            text, status = "", e.code
        else:
            self._cache[label] = text
        new = [n.name for n in self.needs if n.name not in self.found and n.marker in text]
        for name in new:
            self.found[name] = label
        if supplementary:
            self._idle = 0 if new else self._idle + 1
        self._update_stop()
        return self._note(label, status, new)

    def _update_stop(self) -> None:
        if self.stop_reason is not None:
            return
        if not self.missing():
            self.stop_reason = "all_needs_found"
        elif self._idle >= self.rules.max_reads_without_new_evidence:
            self.stop_reason = "no_new_evidence"
        elif self.supplementary_reads >= self.rules.max_supplementary_reads:
            self.stop_reason = "read_limit"

    def _note(self, label: str, status: str, new: list[str], **extra: Any) -> dict[str, Any]:
        row = {"source": label, "status": status, "new_evidence": new, **extra}
        self.log.append(row)
        return row

    def missing(self) -> list[str]:
        return [n.name for n in self.needs if n.name not in self.found]

    def report(self) -> dict[str, Any]:
        """What the loop knows when it stops: found evidence with sources, and what is still missing."""
        return {
            "stopped": self.stop_reason is not None,
            "reason": self.stop_reason,
            "found": dict(sorted(self.found.items())),
            "missing": self.missing(),
            "supplementary_reads": self.supplementary_reads,
            "max_supplementary_reads": self.rules.max_supplementary_reads,
            "reused": self.reused,
            "catalog_reads": self.catalog_reads,
        }


# -- prefetch vs on demand, and the article's latency arithmetic --------------------------------

@dataclass(frozen=True)
class LoadItem:
    """Something a task may need: its measured size and the share of tasks assumed to need it."""

    label: str
    size: Size
    need_rate: float  # an assumption about the workload, not a measurement


#: plan_loading's default rule: prefetch an item only if at least this share of tasks needs it ...
PREFETCH_RATE = 0.8
#: ... and it is at most this many UTF-8 bytes. Everything else is loaded on demand.
MAX_PREFETCH_BYTES = 2_000


def plan_loading(items: Sequence[LoadItem], *, prefetch_rate: float = PREFETCH_RATE,
                 max_prefetch_bytes: int = MAX_PREFETCH_BYTES) -> dict[str, Any]:
    """Prefetch small items most tasks need; leave the rest on demand. Expected bytes per task both ways.

    An item is prefetched when ``need_rate >= prefetch_rate`` and ``size.utf8_bytes <= max_prefetch_bytes``;
    a small item needed less often (or a frequent but large one) stays on demand.
    """
    pre = [i for i in items if i.need_rate >= prefetch_rate and i.size.utf8_bytes <= max_prefetch_bytes]
    lazy = [i for i in items if i not in pre]
    return {
        "prefetch": [i.label for i in pre],
        "on_demand": [i.label for i in lazy],
        "bytes_everything_up_front": sum(i.size.utf8_bytes for i in items),
        "bytes_expected_with_plan": round(sum(i.size.utf8_bytes for i in pre)
                                          + sum(i.need_rate * i.size.utf8_bytes for i in lazy)),
    }


@dataclass(frozen=True)
class LatencyIllustration:
    """The article's example: decide 1 s + read 0.2 s + answer 1 s. Arithmetic, not a measurement."""

    decide_s: Decimal = Decimal("1")
    read_s: Decimal = Decimal("0.2")
    answer_s: Decimal = Decimal("1")
    label: str = "illustrative arithmetic, not a measurement"

    @property
    def direct_s(self) -> Decimal:
        """Everything given up front (a one-page source): just the answering call."""
        return self.answer_s

    @property
    def progressive_s(self) -> Decimal:
        return self.decide_s + self.read_s + self.answer_s

    @property
    def extra_s(self) -> Decimal:
        return self.progressive_s - self.direct_s

    def __str__(self) -> str:
        return (f"[{self.label}] direct: {self.direct_s} s; progressive: {self.decide_s} s + {self.read_s} s + "
                f"{self.answer_s} s = {self.progressive_s} s; extra: {self.extra_s} s")
