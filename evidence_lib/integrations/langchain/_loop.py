"""The protocol inside a real message loop: model -> tool calls -> ToolMessages -> model. Notebook 09.

:func:`run_loop` takes any ``BaseChatModel``, binds the tools, runs every tool call of every ``AIMessage``
through :func:`~evidence_lib._toolkit.run_tool_call` (the ledger is inside the tools), appends one
``ToolMessage`` per call, and stops on a final answer or on a stop rule (article 2): the budget is exhausted,
the refusal cap is hit, rounds bring no new evidence, or the turns run out. After a stop rule fires the
model gets one more turn to answer; tool calls made then are refused, not run.

It never raises on bad model output: unknown tools, arguments that are not an object (``invalid_tool_calls``),
missing, duplicate or unstorable ids (a NUL or a lone surrogate) and oversized batches each get a refusal
``ToolMessage``; a model error or an empty message ends the loop with a stop reason. A call whose id is replaced is
replaced in the ``AIMessage`` too (``loop-{turn}-{position}``, deterministic and unique), so every call in the
history is answered by a ``ToolMessage`` with its own id. Stop reasons are :data:`evidence_lib._errors.LOOP_STOP_REASONS`;
the loop's own budget refusals carry the reasons ``calls_per_message`` and ``loop_stopped``
(:data:`evidence_lib._errors.BUDGET_REASONS`).

Several read-only calls in one message run concurrently, in at most ``LoopRules.max_workers`` threads, as
LangGraph's tool node runs them: each call decides on the shared ledger, fetches its page outside the ledger's lock
and is charged under it (:meth:`~evidence_lib._ledger.Ledger.charge_read`), so the fetches overlap and the budget is
never overspent; the replies come back in call order. Which of two parallel calls is charged first is the order they
reach the ledger: under a budget that runs out within the message, or for two reads of one range (the later is
``already_read``), it may differ from a sequential run's. A message with any other call (a write) runs sequentially.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool

from ..._answers import SYSTEM_PROMPT
from ..._errors import LOOP_STOP_REASONS, TASK_WIDE, EvidenceError
from ..._toolkit import clean_text, refusal_message, run_tool_call
from ...audit._history import Step, steps, text_of

__all__ = ["LOOP_STOP_REASONS", "READ_ONLY_TOOLS", "LoopResult", "LoopRules", "evidence_found",
           "run_loop", "sleep_latency", "stop_rule"]

#: The evidence tools change nothing but the ledger: safe to run side by side.
READ_ONLY_TOOLS = frozenset({"search_evidence", "locate_evidence", "read_evidence"})


@dataclass(frozen=True)
class LoopRules:
    """Stop rules for one task. Business choices, not optima (article 2: 次数是业务策略)."""

    max_turns: int = 12  # model calls
    max_calls_per_message: int = 16  # calls past this in one message are refused unrun
    max_idle_rounds: int = 3  # consecutive tool rounds that brought no new evidence
    max_workers: int = 4  # threads for the read-only calls of one message


@dataclass
class LoopResult:
    """What a run did: the whole history, why it stopped, and what the loop had to repair."""

    messages: list[BaseMessage]
    stop_reason: str  # one of errors.LOOP_STOP_REASONS
    turns: int
    answer: str | None = None
    repairs: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.stop_reason not in LOOP_STOP_REASONS:
            raise KeyError(f"unregistered loop stop reason: {self.stop_reason!r}")

    @property
    def tool_messages(self) -> list[ToolMessage]:
        """The run's tool messages (``ToolMessage``) in order: what the tools answered (notebook 09)."""
        return [m for m in self.messages if isinstance(m, ToolMessage)]


def sleep_latency(seconds: float, sleep: Callable[[float], None] = time.sleep) -> Callable[[Mapping[str, Any]], None]:
    """A latency hook for :func:`run_loop`: every tool call first waits ``seconds`` (a remote source's round trip)."""
    def wait(call: Mapping[str, Any]) -> None:
        sleep(seconds)
    return wait


def _wait(latency: Callable[[Mapping[str, Any]], None] | None, call: Mapping[str, Any]) -> None:
    """Run the injected latency hook; a failing hook must not break the loop."""
    if latency is not None:
        try:
            latency(call)
        except Exception:  # noqa: BLE001
            pass


def _refuse(code: str, call_id: str, name: str, **details: Any) -> ToolMessage:
    return refusal_message(EvidenceError(code, **details), call_id, name)


def _normalize(ai: AIMessage, turn: int, seen: set[str], rules: LoopRules,
               repairs: list[str]) -> tuple[AIMessage, list[tuple[dict[str, Any], ToolMessage | None]]]:
    """Give every call (valid or not) a unique id, and decide which calls are refused before running."""
    plan: list[tuple[dict[str, Any], ToolMessage | None]] = []
    fixed_valid: list[dict[str, Any]] = []
    fixed_invalid: list[dict[str, Any]] = []
    raw = [(c, True) for c in ai.tool_calls] + [(c, False) for c in ai.invalid_tool_calls]
    # ids the message may keep: a replacement id never takes one of them (or one used before)
    kept = {i for c, _ in raw if isinstance(i := c.get("id"), str) and i and clean_text(i)}
    for pos, (given, valid) in enumerate(raw):
        c: dict[str, Any] = dict(given)
        name: str = c["name"] if isinstance(c.get("name"), str) else ""
        cid = c.get("id")
        refusal = None
        if not isinstance(cid, str) or not cid or cid in seen or not clean_text(cid):
            problem = ("missing" if not isinstance(cid, str) or not cid else "invalid_text" if not clean_text(cid)
                       else "duplicate")
            new = f"loop-{turn}-{pos}"
            while new in seen or new in kept:
                new += "x"
            repairs.append(f"turn {turn}, call {pos}: {problem} id, answered as {new}")
            c["id"] = new
            refusal = _refuse("invalid_arguments", new, name, problems=[{"field": "id", "problem": problem}])
        seen.add(c["id"])
        if refusal is None and not valid:
            refusal = _refuse("invalid_arguments", c["id"], name,
                              problems=[{"field": None, "problem": "not_an_object"}])
        if refusal is None and pos >= rules.max_calls_per_message:
            refusal = _refuse("budget_exhausted", c["id"], name, reason="calls_per_message",
                              limit=rules.max_calls_per_message)
        (fixed_valid if valid else fixed_invalid).append(c)
        plan.append((c, refusal))
    if len(raw) > rules.max_calls_per_message:
        repairs.append(f"turn {turn}: {len(raw)} calls in one message, {len(raw) - rules.max_calls_per_message} refused unrun")
    ai = ai.model_copy(update={"tool_calls": fixed_valid, "invalid_tool_calls": fixed_invalid})
    return ai, plan


def _execute(tools: Sequence[BaseTool], plan: list[tuple[dict[str, Any], ToolMessage | None]], parallel: bool,
             read_only: frozenset[str], latency: Callable[[Mapping[str, Any]], None] | None,
             max_workers: int) -> list[ToolMessage]:
    """One message's calls, answered in call order: refusals as planned, the rest run (see the module docstring)."""
    runnable = [plan[i][0] for i, (_, refusal) in enumerate(plan) if refusal is None]
    concurrent = parallel and len(runnable) > 1 and all(c.get("name") in read_only for c in runnable)
    ran = iter(_run_concurrently(tools, runnable, latency, max_workers) if concurrent
               else [_run_one(tools, c, latency) for c in runnable])
    return [refusal if refusal is not None else next(ran) for _, refusal in plan]


def _run_one(tools: Sequence[BaseTool], call: dict[str, Any],
             latency: Callable[[Mapping[str, Any]], None] | None) -> ToolMessage:
    _wait(latency, call)
    return run_tool_call(tools, call)


def _run_concurrently(tools: Sequence[BaseTool], calls: list[dict[str, Any]],
                      latency: Callable[[Mapping[str, Any]], None] | None, max_workers: int) -> list[ToolMessage]:
    """Each call (its latency first) in at most ``max_workers`` threads; the replies in call order."""
    with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(calls)))) as pool:
        return list(pool.map(lambda call: _run_one(tools, call, latency), calls))


def evidence_found(messages: Sequence[BaseMessage]) -> set[tuple]:
    """What the history has found so far: manifests' doc_ids, located positions, read ranges. A round of tool calls
    that adds nothing to it is idle (:func:`stop_rule`)."""
    found: set[tuple] = set()
    for s in steps(messages):
        if s.kind == "manifest":
            found |= {("doc", r["doc_id"], r.get("revision")) for r in s.rows()}
        elif s.kind == "locate":
            found |= {("hit", h["doc_id"], h["offset"]) for h in s.hits()}
        elif s.kind == "page":
            b = s.body
            found.add(("page", b.get("doc_id"), b.get("sha256"), b["start"], b["end"]))
    return found


def stop_rule(round_steps: Sequence[Step], idle_rounds: int, rules: LoopRules = LoopRules()) -> str | None:
    """Notebook 09: the stop rules (article 2) after one round of tool calls: a stop reason, or ``None`` to go on."""
    refused = {s.reason for s in round_steps if s.error == "budget_exhausted"}
    if "refusals" in refused:  # the ledger's refusal cap: too many refused calls in this task
        return "refusal_cap"
    if refused & TASK_WIDE:  # a task-wide budget ran out: calls, characters, bytes or tokens
        return "budget_exhausted"
    if idle_rounds >= rules.max_idle_rounds:  # rounds in a row that found no new candidate, position or page
        return "no_new_evidence"
    return None


def run_loop(model: Any, tools: Sequence[BaseTool], question: str, *, system_prompt: str = SYSTEM_PROMPT,
             history: Sequence[BaseMessage] | None = None, rules: LoopRules = LoopRules(), parallel: bool = True,
             read_only: frozenset[str] = READ_ONLY_TOOLS,
             latency: Callable[[Mapping[str, Any]], None] | None = None) -> LoopResult:
    """Run one task: ``question`` (appended to ``history``, else to a fresh system prompt) until a stop.

    ``model`` is any ``BaseChatModel`` with ``bind_tools``. The tools carry their own ledger (give
    :func:`~evidence_lib._tools.evidence_tools` one). ``latency`` runs before every tool call (inject a real
    ``time.sleep`` to measure what parallel calls save).
    """
    bound = model.bind_tools(list(tools))
    messages: list[BaseMessage] = list(history) if history else [SystemMessage(system_prompt)]
    messages.append(HumanMessage(question))
    seen = {s.call_id for s in steps(messages) if s.call_id}
    repairs: list[str] = []
    stopping: str | None = None
    idle = 0
    for turn in range(1, rules.max_turns + 1):
        try:
            ai = bound.invoke(messages)
        except Exception as e:  # noqa: BLE001 - a failing model ends the task, it does not crash the caller
            return LoopResult(messages, "model_error", turn, None, [*repairs, f"turn {turn}: {type(e).__name__}"])
        if not isinstance(ai, AIMessage):
            ai = AIMessage(content=text_of(ai) if isinstance(ai, BaseMessage) else "")
        ai, plan = _normalize(ai, turn, seen, rules, repairs)
        messages.append(ai)
        if not plan:
            text = text_of(ai).strip()
            return LoopResult(messages, "final_answer" if text else "empty_response", turn, text or None, repairs)
        if stopping is not None:  # the answer turn after a stop rule: calls are refused, not run
            messages += [refusal or _refuse("budget_exhausted", c["id"], c.get("name") or "", reason="loop_stopped",
                                            stop_reason=stopping) for c, refusal in plan]
            return LoopResult(messages, stopping, turn, None, repairs)
        before = evidence_found(messages)
        results = _execute(tools, plan, parallel, read_only, latency, rules.max_workers)
        messages += results
        idle = 0 if evidence_found(messages) - before else idle + 1
        round_steps = [s for s in steps(messages) if s.call_index == len(messages) - len(results) - 1]
        stopping = stop_rule(round_steps, idle, rules)
    return LoopResult(messages, stopping or "max_turns", rules.max_turns, None, repairs)
