"""An offline reader for agents whose tools return large results: call the tool, find the term, cite it. Notebook 12.

:class:`HandleReader` is a policy for :class:`~evidence_lib.course.readers.PolicyChatModel` (no API key). It is handed the
tool call to make and the term to look for (the same help every setup of the benchmark gets) and decides the rest
from what it sees:

* the tool's result is in the context (small, or no offloading): it finds the term there and answers, quoting the
  line; such an answer is *visible*, not verifiable (nothing records which bytes it came from);
* the result is a handle (``EvidenceMiddleware`` marks it in ``response_metadata["evidence_offload"]``, which a
  tool's text cannot forge): it locates the term in that handle and cites the line around the
  first hit from the excerpt, ``handle@revision [start, end)``, which the checker and the store verify;
* a locate finds nothing in the excerpt's reach: it reads one bounded page at the hit first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from .._answers import format_answer, insufficient_answer
from ..audit._history import steps, text_of

__all__ = ["HandleReader", "line_around"]

def line_around(text: str, pos: int, length: int = 0) -> tuple[int, int]:
    """``[start, end)`` of the line of ``text`` holding ``text[pos:pos+length]`` (a log line, a JSON member, a row)."""
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos + length)
    return start, len(text) if end < 0 else end


class HandleReader:
    """Make ``call`` (``{"name", "args"}``), then find ``term`` in what came back, and answer with a citation."""

    def __init__(self, call: Mapping[str, Any], term: str, *, page: int = 400) -> None:
        self.first_call = {"name": call["name"], "args": dict(call.get("args", {}))}
        self.term, self.page = term, page

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        history = steps(list(messages))
        if not history:
            return self._send(self.first_call, 1)
        last = history[-1]
        n = len(history) + 1
        if last.name == self.first_call["name"]:
            result = next(m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == last.call_id)
            text = text_of(result)
            issued = result.response_metadata.get("evidence_offload")  # set by the middleware, never by a tool's text
            if not isinstance(issued, dict):  # the whole result is in the context
                pos = text.find(self.term)
                if pos < 0:
                    return AIMessage(insufficient_answer(f"{self.term!r} is not in the result"))
                s, e = line_around(text, pos, len(self.term))
                return AIMessage(f"The result says: {text[s:e]}")
            return self._send({"name": "locate_evidence", "args": {"term": self.term, "doc_id": issued["doc_id"]}}, n)
        for page in last.pages():
            body = page.get("text", "")
            pos = body.find(self.term)
            if pos < 0:
                continue
            s, e = line_around(body, pos, len(self.term))
            quote = body[s:e]
            start = page["start"] + s
            revision = page.get("revision") or self._revision(messages, page["doc_id"])
            # doc_id@revision: format_answer writes a revision as one field (one holding "#" is quoted), so the
            # content handle is not glued to it; the checker finds the sha256 of the bytes in the reads
            return AIMessage(format_answer(f"The result says: {quote}", [(page["doc_id"], revision, start,
                                                                            start + len(quote), quote)]))
        if last.kind == "locate" and last.hits():
            hit = last.hits()[0]
            return self._send({"name": "read_evidence", "args": {"doc_id": hit["doc_id"], "offset": max(
                hit["offset"] - self.page // 2, 0), "limit": self.page}}, n)
        return AIMessage(insufficient_answer(f"{self.term!r} was not found"))

    @staticmethod
    def _revision(messages: Sequence[BaseMessage], doc_id: str) -> str:
        for m in messages:
            issued = m.response_metadata.get("evidence_offload") if isinstance(m, ToolMessage) else None
            if isinstance(issued, dict) and issued.get("doc_id") == doc_id:
                return issued["revision"]
        return ""

    @staticmethod
    def _send(call: Mapping[str, Any], n: int) -> AIMessage:
        return AIMessage(content="", tool_calls=[{"name": call["name"], "args": dict(call["args"]), "id": f"call-{n:02}",
                                                  "type": "tool_call"}])
