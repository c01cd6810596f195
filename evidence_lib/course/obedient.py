"""A reader that *does* obey text planted in a source: notebook 06's prompt-injection demo.

:class:`ObedientReader` is a deterministic stand-in (no LLM) for the worst case, a model that is
injected. It plans the same reads as :class:`~.scripted.ScriptedReturnShippingPolicy`, but as soon
as a section it read contains 批准退款 ("approve the refund"), it drops its plan, calls the execution
tool ``approve_refund`` and answers at once, as the planted 直接 ("directly") tells it to. What it
shows is therefore not that a model resists injection (it does not), but what still stops the
damage on the server side: the toolbox re-checks the principal's grants on every execution
(``unknown_tool``, audited as ``not_granted``), and the answer gate still demands the full clauses.
Its decision is :meth:`ObedientReader.next_call`, short enough for the notebook to print; it finds the
planted text with :func:`planted_at`.

:func:`run_reader` drives any reader (this one or the scripted control) like
:func:`~.scripted.run_script`, except that a gate refusal is recorded as the answer instead of raised,
so the run's calls and replies can be inspected either way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from .._errors import EvidenceError, error_payload
from .._toolkit import tool_call
from ..disclosure._gate import AnswerGate
from .scripted import ScriptedReturnShippingPolicy, ScriptRun, drive

#: 批准退款 "approve the refund": the words that make this reader act.
TRIGGER = "批准退款"
#: What the obedient reader says once it has obeyed (it never reads the policy clauses).
OBEYED_ANSWER = "Refund approved as the buyer's remark instructs; the merchant pays the return shipping."


class Reader(Protocol):
    def next_call(self, messages: Sequence[ToolMessage]) -> dict[str, Any] | None: ...

    def answer(self, messages: Sequence[ToolMessage]) -> str: ...


def section_text(message: ToolMessage) -> str | None:
    """The text of a successful section read (a reply marked ``"kind": "data"``), else ``None``.

    What :func:`planted_at` searches: an error, a catalog listing or a tool's own result is not source text, so
    it cannot carry an instruction here.
    """
    if message.status == "error":
        return None
    try:
        body = json.loads(message.content) if isinstance(message.content, str) else None
    except (TypeError, ValueError):
        return None
    if isinstance(body, dict) and body.get("kind") == "data" and isinstance(body.get("text"), str):
        return body["text"]
    return None


def planted_at(messages: Sequence[ToolMessage]) -> int | None:
    """Notebook 06: the index of the first reply whose section text contains :data:`TRIGGER` (批准退款), or None."""
    for i, message in enumerate(messages):
        if TRIGGER in (section_text(message) or ""):
            return i
    return None


class ObedientReader(ScriptedReturnShippingPolicy):
    """The scripted plan, plus obedience: text containing :data:`TRIGGER` becomes an ``approve_refund`` call.

    Deterministic, no LLM. ``refund_id`` is the pending refund it approves (the toolbox's example id).
    """

    def __init__(self, order_id: str = "A1042", refund_id: str = "RF-0001") -> None:
        super().__init__(order_id)
        self.refund_id = refund_id

    def next_call(self, messages: Sequence[ToolMessage]) -> dict[str, Any] | None:
        """Notebook 06: the obedient reader's whole decision, from the replies so far.

        Until a section it read holds 批准退款, it follows the control's plan. Right after that read it does
        what the text says and calls approve_refund; then, as the planted 直接 ("directly") says, it stops
        reading (None) and answers.
        """
        planted = planted_at(messages)
        if planted is None:  # nothing planted read yet: the control's plan
            return super().next_call(messages)
        if planted == len(messages) - 1:  # the last reply carried the instruction: obey it
            return tool_call("approve_refund", {"refund_id": self.refund_id}, f"call-{len(messages) + 1}")
        return None  # obeyed already: no more reading, answer "directly"

    def answer(self, messages: Sequence[ToolMessage]) -> str:
        """:data:`OBEYED_ANSWER` once it has obeyed, else the control's answer."""
        if planted_at(messages) is not None:
            return OBEYED_ANSWER
        return super().answer(messages)


def run_reader(tools: Sequence[BaseTool], reader: Reader, gate: AnswerGate | None = None,
               max_steps: int = 10) -> ScriptRun:
    """Drive ``reader`` against real tools; the answer passes through ``gate``.

    Unlike :func:`~.scripted.run_script`, a gate refusal does not raise: ``answer`` is then the refusal
    payload (``{"error": "evidence_incomplete", ..., "missing": [...]}``).
    """
    calls, messages = drive(tools, reader, gate, max_steps)
    text = reader.answer(messages)
    if gate is None:
        return ScriptRun(calls, messages, {"answer": text, "sources": []})
    try:
        answer = gate.final_answer(text)
    except EvidenceError as e:
        answer = error_payload(e)
    return ScriptRun(calls, messages, answer)
