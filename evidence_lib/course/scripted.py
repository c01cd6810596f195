"""A scripted reader for the after-sales task: its tool calls come from the task, not from the text.

Taught in notebook 06. :class:`ScriptedReturnShippingPolicy` is a deterministic stand-in for a
model (no LLM): its calls depend on the task and on structured fields, never on instructions found
in source text. It is a *control*: it shows what a reader that ignores planted text does, not that
a model would ignore it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from .._toolkit import run_tool_call, tool_call
from ..disclosure._gate import AnswerGate


@dataclass
class ScriptRun:
    """What a scripted run did: the tool calls it made, the replies, and the gated answer."""

    calls: list[dict[str, Any]]
    messages: list[ToolMessage]
    answer: dict[str, Any]


class ScriptedReturnShippingPolicy:
    """"Who pays the return shipping for this order?" answered by a fixed plan. Deterministic, no LLM.

    It discovers, then reads the order's header, delivery and remark, and the two clauses, each at
    the latest revision it discovered. It parses structured fields only; a remark's text is carried
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
        latest = {e["resource_id"]: e["latest_revision"] for e in json.loads(messages[0].text)}
        rid, section = self.plan[n - 1]
        return tool_call("read_resource_section",
                         {"resource_id": rid, "revision": latest[rid], "section": section}, f"call-{n + 1}")

    def answer(self, messages: Sequence[ToolMessage]) -> str:
        replies = [json.loads(m.text) for m in messages[1:] if m.status != "error"]
        by = {(r["resource_id"], r["section"]): r for r in replies}
        signed = json.loads(by[(f"order:{self.order_id}", "delivery")]["text"])["signed_at"]
        quality = by[("policy:returns", "quality")]["source"]
        shipping = by[("policy:shipping", "return_shipping")]["source"]
        return (f"Order {self.order_id} was signed for at {signed}. The merchant pays return shipping only for a "
                f"quality issue that appears within thirty days of sign-off and is verified ({quality}); "
                f"for any other reason the buyer pays ({shipping}). Next step: quality verification.")


def drive(tools: Sequence[BaseTool], reader: Any, gate: AnswerGate | None = None,
          max_steps: int = 10) -> tuple[list[dict[str, Any]], list[ToolMessage]]:
    """Ask ``reader.next_call(messages)`` until it returns None; run each call; the gate sees every section read."""
    calls: list[dict[str, Any]] = []
    messages: list[ToolMessage] = []
    while len(calls) < max_steps:
        call = reader.next_call(messages)
        if call is None:
            break
        calls.append(call)
        messages.append(run_tool_call(tools, call))
        if gate is not None and call["name"] == "read_resource_section":
            gate.observe(messages[-1])
    return calls, messages


def run_script(tools: Sequence[BaseTool], policy: ScriptedReturnShippingPolicy,
               gate: AnswerGate | None = None, max_steps: int = 10) -> ScriptRun:
    """Drive ``policy`` against real tools until it stops; the answer passes through ``gate``."""
    calls, messages = drive(tools, policy, gate, max_steps)
    text = policy.answer(messages)
    answer = gate.final_answer(text) if gate is not None else {"answer": text, "sources": []}
    return ScriptRun(calls, messages, answer)


