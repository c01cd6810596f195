"""Evidence for any LangChain agent: one middleware that offloads large tool results and reads them on demand.

Notebook 12. ``create_agent(model, tools, middleware=[EvidenceMiddleware(store, principal)])``: every tool result
over a cl100k token threshold becomes a result in the evidence store (see :mod:`evidence_lib.store._offload`: owned by the
principal, with a revision, a sha256 and a TTL) and the model sees a short handle; the middleware adds
``locate_evidence`` and ``read_evidence`` over those results (the compact profile of :func:`evidence_tools`), charged
to the run's budget, so a citation of an offloaded result verifies like any other evidence
(:meth:`EvidenceMiddleware.verify_answer`, :func:`~evidence_lib.audit._checker.check_history`, ``python -m evidence_lib audit``).

It uses LangChain's public middleware API (``before_agent``, ``wrap_tool_call``, ``tools`` and a ``state_schema``;
the ``agents`` extra, ``langchain>=1``). One middleware object serves many runs, in threads and in
``asyncio.gather`` alike: ``before_agent`` mints a run id into the agent state (:data:`RUN_KEY`, as LangChain's own
``ToolCallLimitMiddleware`` keeps its run counters there), and every tool call finds its run by that id, never from
"whatever ran last". The store is the run's source of truth: its budget is a store ledger keyed by the run id (a
task's ledger with ``task``), its listing of results a store listing keyed by the run id
(:func:`~evidence_lib.store._offload.run_session`), so a run resumed on another worker (from a checkpointer) or after this
object forgot it has its budget and listing. The object keeps only a bounded cache of runs' tools (:data:`MAX_RUNS`):
forgetting a run's entry re-shows each result's ``@revision`` label once, and changes nothing else. Results of the middleware's own tools are never offloaded;
a tool can have its own threshold, or ``None`` to never be offloaded. Text in any content block (text, JSON, a
plain-text file) is measured; only real media (image, audio, video, binary file data) is kept as it is.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain.agents.middleware.types import OmitFromInput
from langchain_core.messages import ToolMessage, convert_to_messages
from langgraph.types import Command
from pydantic import Field, WithJsonSchema

from ..._access import Principal
from ..._citations import Citation, CitationCheck, verify_citation, verify_sources
from ..._errors import EvidenceError
from ..._ledger import Budget, Ledger, ReadRecord
from ..._measure import TokenCounter, cl100k_tokens
from ..._paging import MAX_PAGE_CHARS
from ..._toolkit import StrictArgs, refusal_message, run_tool_call
from ..._tools import DEFAULT_PAGE_CHARS, evidence_tools
from ...profiles._offloaded import OFFLOADED
from ...store._base import EvidenceStore
from ...store._common import DEFAULT_STORE_TTL
from ...store._ledger import StoreLedger
from ...store._offload import DEFAULT_RESULT_TTL, DEFAULT_THRESHOLD_TOKENS, ToolResults, offload, owner_session
from ._blocks import MEDIA_BLOCKS, encodes, model_text

__all__ = ["MAX_RUNS", "MEDIA_BLOCKS", "OWN_TOOLS", "RUN_KEY", "EvidenceMiddleware", "EvidenceState", "model_text"]

#: The tools the middleware adds (the compact profile's locate and read), never offloaded themselves.
OWN_TOOLS = ("locate_evidence", "read_evidence")
#: The agent-state key holding the id of the current run (minted by ``before_agent``; part of the agent's result).
RUN_KEY = "evidence_run"
#: How many runs' tools one middleware caches, the most recently used kept. Only an optimisation: a run's budget and
#: listing live in the store; a run rebuilt after eviction shows each result's ``@revision`` label once again.
MAX_RUNS = 256
#: The task key of a run's own ledger is this prefix and the run id; a ``task`` may not start with it.
RUN_TASK_PREFIX = "run/"


_TERM_CHARS = OFFLOADED.default_locate_options().max_term_chars


# Issue 33: the schemas go with every model call. Each field's schema is what the model is sent (``WithJsonSchema``):
# its type and the one bound a call is planned by; validation keeps every bound of the field. Defaults are factories,
# which pydantic leaves out of a schema: the model needs to know what it may leave out ("required"), not the value.
class OffloadedLocateArgs(StrictArgs):
    """``locate_evidence`` over offloaded results: the term, one result's handle, the cursor. No ``query`` (there is
    no search to rank by) and no manifest to name."""

    term: Annotated[str, WithJsonSchema({"type": "string", "maxLength": _TERM_CHARS})] = Field(
        min_length=1, max_length=_TERM_CHARS)
    doc_id: Annotated[str | None, WithJsonSchema({"type": "string"})] = Field(default_factory=lambda: None,
                                                                              max_length=128)
    cursor: Annotated[int, WithJsonSchema({"type": "integer"})] = Field(default_factory=int, ge=0)


class OffloadedReadArgs(StrictArgs):
    """``read_evidence`` over offloaded results: a handle, an offset and a limit, bounded as every read is."""

    doc_id: Annotated[str, WithJsonSchema({"type": "string"})]
    offset: Annotated[int, WithJsonSchema({"type": "integer"})] = Field(default_factory=int, ge=0)
    limit: Annotated[int, WithJsonSchema({"type": "integer", "maximum": MAX_PAGE_CHARS})] = Field(
        default_factory=lambda: DEFAULT_PAGE_CHARS, ge=1, le=MAX_PAGE_CHARS)


#: The argument schemas of the middleware's own tools.
OFFLOADED_ARGS: dict[str, type[StrictArgs]] = {"locate_evidence": OffloadedLocateArgs, "read_evidence": OffloadedReadArgs}


class EvidenceState(AgentState):
    """The agent state with the run id (:data:`RUN_KEY`): set by the middleware, never by the caller's input."""

    evidence_run: NotRequired[Annotated[str, OmitFromInput]]


def _as_message(m: Any) -> Any:
    """A message dict of a Command's update as the message it stands for (``add_messages`` accepts both)."""
    if isinstance(m, dict):
        try:
            return convert_to_messages([m])[0]
        except (ValueError, TypeError, NotImplementedError):
            return m
    return m


# -- one run --------------------------------------------------------------------------------------------------------
@dataclass
class _Run:
    """One run as a cache entry: its shelf (the store listing of the results it offloaded), its store ledger (the
    task's, when the middleware has a ``task``) and its locate/read tools (which revisions they showed)."""

    run_id: str
    shelf: ToolResults
    ledger: StoreLedger
    tools: list  # safe for parallel calls: one message's reads overlap, the ledger never overspends


class EvidenceMiddleware(AgentMiddleware):
    """Offload tool results over ``threshold_tokens`` (cl100k) into ``store``; add locate and read over them.

    ``principal`` owns every result (another principal's handle is ``unknown_doc_id``, byte-identical to a handle
    never issued; so is an expired one). ``thresholds`` overrides the threshold per tool name (``None``: never
    offload that tool); ``token_counter`` measures results and handles (cl100k by default). ``budget`` bounds the
    reads of each run, in a store ledger shared by every worker serving the run; with ``task``, one budget shared by
    every run and worker of that task. Each run has its own listing of results in the store (a locate without
    ``doc_id`` searches those; earlier results stay readable by handle). ``ttl`` must be one the store can keep:
    else ``invalid_ttl`` here. Notebook 12.

    ``tools``, ``ledger`` and ``shelf`` are those of the latest run started on this object (before any, of a run
    for use outside an agent, as notebook 12 and workshop part 8 use them); with concurrent runs, name the run.
    """

    state_schema = EvidenceState

    def __init__(self, store: EvidenceStore, principal: Principal, *, session: str = "default", task: str | None = None,
                 threshold_tokens: int = DEFAULT_THRESHOLD_TOKENS, thresholds: Mapping[str, int | None] | None = None,
                 ttl: timedelta = DEFAULT_RESULT_TTL, budget: Budget | None = None,
                 token_counter: TokenCounter = cl100k_tokens) -> None:
        super().__init__()
        self.threshold_tokens, self.thresholds = _checked_thresholds(threshold_tokens, thresholds)
        if isinstance(task, str) and task.startswith(RUN_TASK_PREFIX):
            raise ValueError(f"a task name starting with {RUN_TASK_PREFIX!r} is the key of one run's own ledger")
        self.store, self.principal, self.session, self.ttl = store, principal, session, ttl
        self.task, self.budget, self.token_counter = task, budget or Budget(), token_counter
        self._marker = uuid.uuid4().hex  # marks this object's tools (create_agent binds one run's set)
        self._runs: OrderedDict[str, _Run] = OrderedDict()
        self._lock = threading.Lock()  # guards _runs and _latest
        self._latest = uuid.uuid4().hex
        self._run(self._latest)  # now: a session key, TTL or task budget the store refuses is refused here

    # -- runs ------------------------------------------------------------------------------------------------------
    @property
    def run_id(self) -> str:
        """The id of the latest run started on this object."""
        return self._latest

    @property
    def tools(self) -> list:  # type: ignore[override]
        """The latest run's locate and read (create_agent binds their schemas; calls are routed per run)."""
        return self._run(self._latest).tools

    @property
    def ledger(self) -> Ledger:
        """The latest run's ledger (with ``task``: the task's, shared by every run)."""
        return self._run(self._latest).ledger

    @property
    def shelf(self) -> ToolResults:
        """The latest run's shelf: the results it offloaded (``handles``); any of the owner's by name."""
        return self._run(self._latest).shelf

    def _run(self, run_id: str) -> _Run:
        """The run ``run_id`` from the cache, or built over the store; the least recently used beyond
        :data:`MAX_RUNS` leaves the cache (its budget and listing stay in the store)."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None:
                run = self._runs[run_id] = self._new_run(run_id)
                while len(self._runs) > MAX_RUNS:
                    self._runs.popitem(last=False)
            self._runs.move_to_end(run_id)
            return run

    def _new_run(self, run_id: str) -> _Run:
        """A run's cache entry over the store: its listing and its ledger, which outlives the results (at least the
        store's default TTL after its last entry, and at least as long as each result stored: :meth:`_message`), so
        a read after they expire is ``unknown_doc_id``, never ``ledger_expired``."""
        shelf = ToolResults(self.store, self.principal, self.session, ttl=self.ttl, run=run_id)
        ledger = self.store.ledger(self.principal.tenant, owner_session(self.session, self.principal.user),
                                   self.task or RUN_TASK_PREFIX + run_id, self.budget,
                                   ttl=max(self.ttl, DEFAULT_STORE_TTL))
        tools = [t for t in evidence_tools(shelf, self.principal, ledger=ledger, profile=OFFLOADED)
                 if t.name in OWN_TOOLS]
        for t in tools:
            t.metadata = {**(t.metadata or {}), "evidence_middleware": self._marker}
            t.args_schema = OFFLOADED_ARGS[t.name]  # the profile describes the tools; the schemas are the middleware's
        return _Run(run_id, shelf, ledger, tools)

    def _run_of(self, request: Any) -> str:
        """The run a hook's request belongs to: the id in its agent state, else the latest run (a direct call)."""
        state = getattr(request, "state", None)
        run_id = state.get(RUN_KEY) if isinstance(state, Mapping) else getattr(state, RUN_KEY, None)
        return run_id if isinstance(run_id, str) and 0 < len(run_id) <= 64 else self._latest

    def _named_run(self, run: Any) -> str:
        """A run named by its id or by the agent's result (or state) holding :data:`RUN_KEY`."""
        run_id = run.get(RUN_KEY) if isinstance(run, Mapping) else run
        if not isinstance(run_id, str) or not run_id:
            raise ValueError(f"name a run by its id or by the agent's result (a mapping with {RUN_KEY!r})")
        return run_id

    # -- the hooks ---------------------------------------------------------------------------------------------
    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
        """A new run: a fresh id in the agent state; its budget (unless ``task`` shares one), replies' memory and
        listing are its own from its first tool call on."""
        return {RUN_KEY: self._start()}

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
        return {RUN_KEY: self._start()}

    def _start(self) -> str:
        run_id = uuid.uuid4().hex
        with self._lock:
            self._latest = run_id
        return run_id

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        self._check_names(request.tools)
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        self._check_names(request.tools)
        return await handler(request)

    def wrap_tool_call(self, request: Any, handler: Any) -> ToolMessage | Command:
        run_id, call = self._run_of(request), request.tool_call
        if call.get("name") in OWN_TOOLS:
            return self._own_call(run_id, call)
        return self.offloaded(handler(request), call, run=run_id)

    async def awrap_tool_call(self, request: Any, handler: Any) -> ToolMessage | Command:
        """As :meth:`wrap_tool_call`; the blocking part (tokenizing, store I/O, the ledger's lock) runs in a worker
        thread (``asyncio.to_thread``), so the event loop keeps serving the agent's other coroutines meanwhile."""
        run_id, call = self._run_of(request), request.tool_call
        if call.get("name") in OWN_TOOLS:
            return await asyncio.to_thread(self._own_call, run_id, call)
        result = await handler(request)
        return await asyncio.to_thread(self.offloaded, result, call, run=run_id)

    def _own_call(self, run_id: str, call: Mapping[str, Any]) -> ToolMessage:
        return run_tool_call(self._run(run_id).tools, call)

    def _check_names(self, tools: Any) -> None:
        names = [getattr(t, "name", None) or (t.get("name") if isinstance(t, dict) else None) for t in tools or ()]
        clashes = sorted({n for t, n in zip(tools or (), names) if n in OWN_TOOLS and (not self._is_own(t)
                                                                                       or names.count(n) > 1)})
        if clashes:
            raise ValueError(f"the agent has its own tool named {', '.join(clashes)}: EvidenceMiddleware adds tools "
                             f"of that name; rename the agent's tool")

    def _is_own(self, tool: Any) -> bool:
        metadata = getattr(tool, "metadata", None)
        return isinstance(metadata, dict) and metadata.get("evidence_middleware") == self._marker

    # -- what the model sees instead of a large result --------------------------------------------------------
    def threshold_for(self, tool: str) -> int | None:
        """The offload threshold (cl100k tokens) for the tool ``tool``: its own from ``thresholds``, else
        ``threshold_tokens``; ``None`` means never offloaded (notebook 12)."""
        return self.thresholds.get(tool, self.threshold_tokens)

    def offloaded(self, result: Any, call: Mapping[str, Any], *, run: Any = None) -> Any:
        """``result`` with every ToolMessage in it (a Command's ``messages`` update too, message dicts included)
        offloaded if too large, onto the shelf of ``run`` (an id or the agent's result; default the latest run).
        Thresholds follow the tool the call was routed to, not the name a result claims."""
        owner = self._run(self._latest if run is None else self._named_run(run))
        tool = call.get("name") if isinstance(call.get("name"), str) else None
        if isinstance(result, ToolMessage):
            return self._message(owner, result, tool)
        if isinstance(result, Command) and isinstance(result.update, dict) \
                and isinstance(result.update.get("messages"), list):
            messages = [self._message(owner, m, tool) if isinstance(m, ToolMessage) else m
                        for m in (_as_message(m) for m in result.update["messages"])]
            return Command(graph=result.graph, update={**result.update, "messages": messages}, resume=result.resume,
                           goto=result.goto)
        return result

    def _message(self, run: _Run, msg: ToolMessage, tool: str | None = None) -> ToolMessage:
        tool = tool or msg.name or "tool"
        threshold = self.threshold_for(tool)
        if threshold is None or tool in OWN_TOOLS:
            return msg
        try:  # measuring too: content json cannot encode must not end the run
            text, kept = model_text(msg.content)
            if not encodes(kept):  # media the middleware cannot render as text, holding a cycle
                raise EvidenceError("unencodable_result")
            shown, entry = offload(run.shelf, text, tool=tool, call_id=msg.tool_call_id, threshold_tokens=threshold,
                                   count=self.token_counter)
            if entry is not None:  # the run's budget lives at least as long as what it can read (issue 31)
                expiry = run.shelf.expiry(entry.doc_id)
                run.ledger.keep_until(expiry)
        except Exception as e:  # noqa: BLE001 - the agent goes on: a refusal the model can act on, never the result
            return refusal_message(e, msg.tool_call_id, tool)
        if entry is None:  # kept inline: as it came, or as the model reads it when it holds a cycle (issue 31)
            return msg if encodes(msg.content) else msg.model_copy(update={
                "content": [{"type": "text", "text": text}, *kept] if kept else text})
        content: Any = [{"type": "text", "text": shown}, *kept] if kept else shown
        return msg.model_copy(update={"content": content,
                                      "response_metadata": {**msg.response_metadata, "evidence_offload": {
                                          "doc_id": entry.doc_id, "revision": entry.revision,
                                          "sha256": entry.sha256, "chars": entry.chars,
                                          "expires_at": expiry.isoformat()}}})

    # -- checking what the model cited --------------------------------------------------------------------------
    def _reads(self, run: Any) -> Iterable[ReadRecord]:
        """The reads a citation is checked against (from the store): the named run's, else those of every run in
        this object's cache."""
        if run is not None:
            return self._run(self._named_run(run)).ledger.reads
        with self._lock:
            ledgers = list({id(r.ledger): r.ledger for r in self._runs.values()}.values())
        if self.task is not None:
            ledgers = ledgers[-1:]  # one task ledger, opened once per run
        return [r for ledger in ledgers for r in ledger.reads]

    def verify(self, citation: Citation, *, run: Any = None) -> CitationCheck:
        """One citation against the stored result, its sha256 and the reads made: by ``run`` (its id, or the
        agent's result) when named, found through the store on any worker; else by any run in this object's cache
        (the last :data:`MAX_RUNS` it served)."""
        return verify_citation(self.shelf, citation, self._reads(run), self.principal)

    def verify_answer(self, text: str, *, run: Any = None) -> list[CitationCheck]:
        """Every ``Sources:`` line of a final answer in line order (as :func:`~evidence_lib._answers.parse_answer` reads
        them), checked as :meth:`verify` does (:func:`~evidence_lib._citations.verify_sources`; a line without a content
        handle is checked against the stored sha256 of the result it names); a line that does not parse is
        ``malformed``. An answer is verified when this list is not empty and every check is ok. Pass ``run=`` (the
        agent's result, or its :data:`RUN_KEY`) to check it against the reads of the run that produced it; without
        it, any remembered run's reads count, so a later run never turns an earlier run's verified answer into
        ``never_read``."""
        return verify_sources(self.shelf, text, list(self._reads(run)), self.principal)


def _checked_thresholds(threshold_tokens: Any, thresholds: Mapping[str, int | None] | None) -> tuple[int, dict]:
    """``(threshold_tokens, thresholds)`` if each is a positive int (``None``: never offload that tool)."""
    if not isinstance(threshold_tokens, int) or isinstance(threshold_tokens, bool) or threshold_tokens < 1:
        raise ValueError("threshold_tokens is a positive int (cl100k tokens)")
    thresholds = dict(thresholds or {})
    for name, value in thresholds.items():
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ValueError(f"the threshold of {name!r} is a positive int or None")
        if name in OWN_TOOLS:
            raise ValueError(f"{name} is the middleware's own tool: its results are never offloaded")
    return threshold_tokens, thresholds
