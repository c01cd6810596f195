"""A message history read as protocol steps: each tool call paired with its result, parsed once. Notebook 09.

The offline readers (:mod:`evidence_lib.course.readers`), the checker (:mod:`.checker`) and the audit
(:mod:`.report`) all read histories through :func:`steps`, so "what a tool returned" is parsed in one place. Tool
outputs are JSON (the article profile's replies, and every refusal), or what a registered profile reads back
(:meth:`~evidence_lib.profiles.Profile.read_reply`, in the article's shapes: the compact profile reads its replies
with its own readers, ``excerpts`` and ``manifest_rows``), and :func:`steps` then resolves short hashes with
``excerpts`` over the history in order. A compact locate's excerpts are document text the model was shown (the
ledger records them as reads): :meth:`Step.pages` returns them next to read pages, for citation checks.

A history in which a ToolMessage answers no call (no earlier call has its ``tool_call_id``, or every call with that id
is answered already) is malformed: :func:`steps` refuses it with ``EvidenceError("malformed_history")`` naming the
message index, instead of dropping the result (its bytes, and any citation resting on it).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from .._errors import EvidenceError
from ..profiles._registry import PROFILES

__all__ = ["Step", "final_answers", "malformed", "parse_output", "steps", "text_of"]


def text_of(message: BaseMessage) -> str:
    """A message's text: string content, or the text blocks of a list content."""
    c = message.content
    if isinstance(c, str):
        return c
    parts = []
    for block in c if isinstance(c, list) else []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "".join(parts)


def parse_output(name: str, content: str) -> Any:
    """The parsed body of one tool output (JSON), or what the first registered profile that reads it makes of it
    (:meth:`~evidence_lib.profiles.Profile.read_reply`, in registration order), else ``None``."""
    try:
        return json.loads(content)
    except (TypeError, ValueError):
        pass
    for profile in list(PROFILES.values()):
        body = profile.read_reply(name, content)
        if body is not None:
            return body
    return None


@dataclass
class Step:
    """One tool call and its result. ``kind``: manifest, locate, page, already_read, error, other or missing."""

    task: int  # which user turn (0 before the first HumanMessage)
    call_index: int  # message index of the AIMessage that made the call
    position: int  # the call's position inside that AIMessage
    call_id: str
    name: str
    args: dict[str, Any] | None  # None: the arguments were not a JSON object (invalid_tool_calls)
    result_index: int | None = None
    status: str = "missing"
    content: str = ""
    kind: str = "missing"
    body: Any = None
    error: str | None = None
    reason: str | None = None  # budget_exhausted's reason
    flags: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.kind in ("manifest", "locate", "page", "already_read")

    # -- typed views of the body ---------------------------------------------------------
    def rows(self) -> list[dict[str, Any]]:
        """Manifest rows (search_evidence)."""
        b = self.body
        rows = b.get("candidates") if isinstance(b, dict) else b
        return [r for r in rows or [] if isinstance(r, dict) and "doc_id" in r] if isinstance(rows, list) else []

    def hits(self) -> list[dict[str, Any]]:
        """Locate positions ``{doc_id, offset}`` (a compact excerpt's: where the located term is inside it)."""
        b = self.body
        if isinstance(b, dict) and "excerpts" in b:
            term = (self.args or {}).get("term")
            return [{"doc_id": x["doc_id"], "offset": x["start"] + max(0, x["text"].find(term))
                     if isinstance(term, str) and term else x["start"]} for x in self.pages()]
        hits = b.get("matches") if isinstance(b, dict) else b
        return [h for h in hits or [] if isinstance(h, dict) and "doc_id" in h and "offset" in h] \
            if isinstance(hits, list) else []

    def pages(self) -> list[dict[str, Any]]:
        """Document text this step showed the model, as page dicts: a read's page, a compact locate's excerpts."""
        if self.kind == "page":
            return [self.body]
        if self.kind == "locate" and isinstance(self.body, dict) and isinstance(self.body.get("excerpts"), list):
            return self.body["excerpts"]
        return []


def _kind(name: str, status: str, body: Any) -> tuple[str, str | None, str | None]:
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return "error", body["error"], body.get("reason") if isinstance(body.get("reason"), str) else None
    if status == "error":
        return "error", "unparsed_error", None
    if name == "search_evidence" and (isinstance(body, list) or (isinstance(body, dict) and "candidates" in body)):
        return "manifest", None, None
    if name == "locate_evidence" and (isinstance(body, list) or (isinstance(body, dict)
                                                                 and ("matches" in body or "excerpts" in body))):
        return "locate", None, None
    if name == "read_evidence" and isinstance(body, dict):
        if body.get("status") == "already_read":
            return "already_read", None, None
        if isinstance(body.get("text"), str) and isinstance(body.get("start"), int) and isinstance(body.get("end"), int):
            return "page", None, None
    return "other", None, None


def malformed(index: int, problem: str) -> EvidenceError:
    """The refusal for a malformed history: ``message {index}: {problem}`` (never the message's content)."""
    return EvidenceError("malformed_history", f"message {index}: {problem}", index=index)


def steps(messages: Sequence[BaseMessage]) -> list[Step]:
    """Every tool call in ``messages`` (valid and invalid), paired with its ToolMessage by ``tool_call_id``.

    Calls that share an id are answered in call order. A ToolMessage that answers no open call raises
    ``EvidenceError("malformed_history")`` naming its index (see the module docstring).
    """
    out: list[Step] = []
    pending: dict[str, deque[Step]] = {}
    task = 0
    for i, m in enumerate(messages):
        if isinstance(m, HumanMessage):
            task += 1
        elif isinstance(m, AIMessage):
            calls: list[tuple[Any, Any, Any]] = [(c.get("id"), c.get("name"), c.get("args")) for c in m.tool_calls]
            calls += [(c.get("id"), c.get("name"), None) for c in m.invalid_tool_calls]
            for pos, (cid, name, args) in enumerate(calls):
                s = Step(task, i, pos, cid if isinstance(cid, str) else "", name if isinstance(name, str) else "",
                         args if isinstance(args, dict) else None)
                out.append(s)
                if s.call_id:
                    pending.setdefault(s.call_id, deque()).append(s)
        elif isinstance(m, ToolMessage):
            open_calls = pending.get(m.tool_call_id) if isinstance(m.tool_call_id, str) else None
            if not open_calls:
                answered = isinstance(m.tool_call_id, str) and any(x.call_id == m.tool_call_id for x in out)
                raise malformed(i, "a tool message answers a call that was answered already" if answered else
                                "a tool message whose tool_call_id matches no earlier tool call")
            s = open_calls.popleft()
            s.result_index, s.status, s.content = i, m.status or "success", text_of(m)
            s.body = parse_output(s.name, s.content)
            s.kind, s.error, s.reason = _kind(s.name, s.status, s.body)
    _resolve_in_order(out)
    return out


def _resolve_in_order(all_steps: list[Step]) -> None:
    """Fill in the revisions compact blocks leave out, as ``profiles.excerpts`` reads them in history order.

    ``excerpts`` is the one place that knows the rule (a block's revision is the one shown last for its doc_id, by a
    manifest row or an earlier block): it is run over every successful reply, in order, and what it reads is handed
    back to the steps that showed text (a step whose text it reads differently is left as it is).
    """
    done = sorted((s for s in all_steps if s.result_index is not None and s.status != "error"),
                  key=lambda s: s.result_index or 0)
    if not any(isinstance(p.get("sha256"), str) and p["sha256"].startswith("#") for s in done for p in s.pages()):
        return  # no compact text in this history: nothing to fill in
    from ..profiles._compact import excerpts

    resolved = iter(excerpts([s.content for s in done]))
    for s in done:
        mine = [next(resolved, None) for _ in excerpts([s.content])]
        views = s.pages()
        if len(mine) == len(views) and all(x is not None and (x.doc_id, x.start, x.end) == (v.get("doc_id"),
                                           v.get("start"), v.get("end")) for x, v in zip(mine, views)):
            for x, v in zip(mine, views):
                assert x is not None  # (checked above)
                v["revision"], v["sha256"] = x.revision, x.sha256


def final_answers(messages: Sequence[BaseMessage]) -> dict[int, tuple[int, str]]:
    """Per task, the last AIMessage with text and no tool calls: ``{task: (message index, text)}``."""
    out: dict[int, tuple[int, str]] = {}
    task = 0
    for i, m in enumerate(messages):
        if isinstance(m, HumanMessage):
            task += 1
        elif isinstance(m, AIMessage) and not m.tool_calls and not m.invalid_tool_calls and text_of(m).strip():
            out[task] = (i, text_of(m))
    return out
