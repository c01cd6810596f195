"""Evidence for any LangChain agent: one middleware that offloads large tool results and reads them on demand.

Notebook 12. ``create_agent(model, tools, middleware=[EvidenceMiddleware(store, principal)])``: every tool result
over a cl100k token threshold becomes a result in the evidence store (see :mod:`evidence_lib.offload`: owned by the
principal, with a revision, a sha256 and a TTL) and the model sees a short handle; the middleware adds
``locate_evidence`` and ``read_evidence`` over those results (the compact profile of :func:`evidence_tools`), charged
to one task budget, so a citation of an offloaded result verifies like any other evidence
(:meth:`EvidenceMiddleware.verify_answer`, :func:`~evidence_lib.agent.check_history`, ``python -m evidence_lib audit``).

It uses LangChain's public middleware API (``AgentMiddleware.wrap_tool_call`` and ``tools``; the ``agents`` extra,
``langchain>=1``). Results of the middleware's own tools are never offloaded; a tool can have its own threshold, or
``None`` to never be offloaded. A tool message whose content holds non-text blocks (an image) keeps those blocks
and is offloaded by its text only if the text alone crosses the threshold.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage, convert_to_messages
from langgraph.types import Command

from ..access import Principal
from ..citations import Citation, CitationCheck, verify_citation
from ..errors import EvidenceError
from ..ledger import Budget, Ledger
from ..offload import DEFAULT_THRESHOLD_TOKENS, DEFAULT_TTL, OffloadShelf, offload, owner_session
from ..tools import evidence_tools
from ..toolkit import refusal_message, run_tool_call
from .prompt import SOURCES, parse_answer

__all__ = ["EvidenceMiddleware", "MEDIA_BLOCKS", "OWN_TOOLS", "model_text"]

#: Content blocks the middleware passes on untouched (media; every other block's text is measured and offloaded).
MEDIA_BLOCKS = frozenset({"image", "image_url", "audio", "video", "file", "input_audio"})


def model_text(content: Any) -> tuple[str, list]:
    """``(the text a model reads in content, the media blocks kept)``: text blocks as their text, every other
    non-media block (json, search results, documents, ...) as its JSON, so nothing reaches the model unmeasured."""
    if isinstance(content, str):
        return content, []
    parts, kept = [], []
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif isinstance(block, dict) and block.get("type") in MEDIA_BLOCKS:
            kept.append(block)
        else:
            parts.append(json.dumps(block, ensure_ascii=False, sort_keys=True, default=str))
    return "".join(parts), kept


def _as_message(m: Any) -> Any:
    """A message dict of a Command's update as the message it stands for (``add_messages`` accepts both)."""
    if isinstance(m, dict):
        try:
            return convert_to_messages([m])[0]
        except (ValueError, TypeError, NotImplementedError):
            return m
    return m

#: The tools the middleware adds (the compact profile's locate and read), never offloaded themselves.
OWN_TOOLS = ("locate_evidence", "read_evidence")


class EvidenceMiddleware(AgentMiddleware):
    """Offload tool results over ``threshold_tokens`` (cl100k) into ``store``; add locate and read over them.

    ``principal`` owns every result of the run (another principal's handle is ``unknown_doc_id``, byte-identical to
    a handle never issued; so is an expired one). ``thresholds`` overrides the threshold per tool name (``None``: never
    offload that tool). ``budget`` bounds the reads of the run; with ``task`` the ledger lives in the store, shared by
    every worker of that task, else in this object. Notebook 12.
    """

    def __init__(self, store: Any, principal: Principal, *, session: str = "default", task: str | None = None,
                 threshold_tokens: int = DEFAULT_THRESHOLD_TOKENS, thresholds: Mapping[str, int | None] | None = None,
                 ttl: timedelta = DEFAULT_TTL, budget: Budget | None = None) -> None:
        super().__init__()
        if not isinstance(threshold_tokens, int) or isinstance(threshold_tokens, bool) or threshold_tokens < 1:
            raise ValueError("threshold_tokens is a positive int (cl100k tokens)")
        thresholds = dict(thresholds or {})
        for name, value in thresholds.items():
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"the threshold of {name!r} is a positive int or None")
            if name in OWN_TOOLS:
                raise ValueError(f"{name} is the middleware's own tool: its results are never offloaded")
        self.store, self.principal = store, principal
        self.shelf = OffloadShelf(store, principal, session, ttl=ttl)
        self.threshold_tokens, self.thresholds = threshold_tokens, thresholds
        self.task, self.budget = task, budget or Budget()
        self.ledger: Ledger = (Ledger(self.budget) if task is None else
                               store.ledger(principal.tenant, owner_session(session, principal.user), task, self.budget))
        self._own: set[int] = set()  # every tool object this middleware made (create_agent binds the first ones)
        self.tools = self._tools()  # the current run's locate and read; create_agent binds the first set's schemas
        self._lock = threading.Lock()  # the ledger sees one call at a time

    # -- the hooks ---------------------------------------------------------------------------------------------
    def before_agent(self, state: Any, runtime: Any) -> None:
        """A new run: its own budget (unless ``task`` shares one in the store), its own replies' memory (which
        revision was shown), and only its own results listed; earlier results stay readable by handle."""
        self._new_run()

    async def abefore_agent(self, state: Any, runtime: Any) -> None:
        self._new_run()

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        self._check_names(request.tools)
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        self._check_names(request.tools)
        return await handler(request)

    def wrap_tool_call(self, request: Any, handler: Any) -> ToolMessage | Command:
        call = request.tool_call
        if call.get("name") in OWN_TOOLS:
            return self._own_call(call)
        return self.offloaded(handler(request), call)

    async def awrap_tool_call(self, request: Any, handler: Any) -> ToolMessage | Command:
        """As :meth:`wrap_tool_call`; the blocking part (tokenizing, store I/O, the ledger's lock) runs in a worker
        thread (``asyncio.to_thread``), so the event loop keeps serving the agent's other coroutines meanwhile."""
        call = request.tool_call
        if call.get("name") in OWN_TOOLS:
            return await asyncio.to_thread(self._own_call, call)
        result = await handler(request)
        return await asyncio.to_thread(self.offloaded, result, call)

    def _own_call(self, call: Mapping[str, Any]) -> ToolMessage:
        with self._lock:
            return run_tool_call(self.tools, call)

    def _new_run(self) -> None:
        with self._lock:
            if self.task is None:
                self.ledger = Ledger(self.budget)
            self.tools = self._tools()
            self.shelf.forget()

    def _tools(self) -> list:
        tools = [t for t in evidence_tools(self.shelf, self.principal, ledger=self.ledger, profile="compact")
                 if t.name in OWN_TOOLS]
        self._own.update(id(t) for t in tools)
        return tools

    def _check_names(self, tools: Any) -> None:
        mine = self._own
        names = [getattr(t, "name", None) or (t.get("name") if isinstance(t, dict) else None) for t in tools or ()]
        clashes = sorted({n for t, n in zip(tools or (), names) if n in OWN_TOOLS and (id(t) not in mine
                                                                                       or names.count(n) > 1)})
        if clashes:
            raise ValueError(f"the agent has its own tool named {', '.join(clashes)}: EvidenceMiddleware adds tools "
                             f"of that name; rename the agent's tool")

    # -- what the model sees instead of a large result --------------------------------------------------------
    def threshold_for(self, tool: str) -> int | None:
        return self.thresholds.get(tool, self.threshold_tokens)

    def offloaded(self, result: Any, call: Mapping[str, Any]) -> Any:
        """``result`` with every ToolMessage in it (a Command's ``messages`` update too, message dicts included)
        offloaded if too large. Thresholds follow the tool the call was routed to, not the name a result claims."""
        tool = call.get("name") if isinstance(call.get("name"), str) else None
        if isinstance(result, ToolMessage):
            return self._message(result, tool)
        if isinstance(result, Command) and isinstance(result.update, dict) \
                and isinstance(result.update.get("messages"), list):
            messages = [self._message(m, tool) if isinstance(m, ToolMessage) else m
                        for m in (_as_message(m) for m in result.update["messages"])]
            return Command(graph=result.graph, update={**result.update, "messages": messages}, resume=result.resume,
                           goto=result.goto)
        return result

    def _message(self, msg: ToolMessage, tool: str | None = None) -> ToolMessage:
        tool = tool or msg.name or "tool"
        threshold = self.threshold_for(tool)
        if threshold is None or tool in OWN_TOOLS:
            return msg
        text, kept = model_text(msg.content)
        try:
            shown, entry = offload(self.shelf, text, tool=tool, call_id=msg.tool_call_id, threshold_tokens=threshold)
        except Exception as e:  # noqa: BLE001 - the agent goes on: a refusal the model can act on, never the result
            return refusal_message(e, msg.tool_call_id, tool)
        if entry is None:
            return msg
        content: Any = [{"type": "text", "text": shown}, *kept] if kept else shown
        return msg.model_copy(update={"content": content,
                                      "response_metadata": {**msg.response_metadata, "evidence_offload": {
                                          "doc_id": entry.doc_id, "revision": entry.revision,
                                          "sha256": entry.sha256, "chars": entry.chars}}})

    # -- checking what the model cited --------------------------------------------------------------------------
    def verify(self, citation: Citation) -> CitationCheck:
        """One citation against the stored result, its sha256 and the reads this run made."""
        return verify_citation(self.shelf, citation, self.ledger, self.principal)

    def verify_answer(self, text: str) -> list[CitationCheck]:
        """Every ``Sources:`` line of a final answer in order, checked with :meth:`verify` (a line without a content
        handle is checked against the stored sha256 of the result it names); a line that does not parse is
        ``malformed``. An answer is verified when this list is not empty and every check is ok."""
        head, sep, tail = (text if isinstance(text, str) else "").partition(SOURCES)
        checks = []
        for line in tail.splitlines() if sep else []:
            if not line.strip():
                continue
            parsed = parse_answer(f"{SOURCES}\n{line}")
            if not parsed.citations:
                checks.append(CitationCheck(Citation("", "", 0, 0, "", None), "malformed"))
                continue
            c = parsed.citations[0]
            sha = c.sha256
            if sha is None:
                try:
                    sha = self.shelf.entry(c.doc_id, self.principal).sha256
                except EvidenceError:  # an unknown handle: the check reports it
                    sha = ""
            checks.append(self.verify(Citation(c.doc_id, c.revision, c.start, c.end, sha, c.quote)))
        return checks
