"""The two peer baselines of the offload benchmark (issue 19, item 3), offline, with scripted models.

(Two more, Pydantic AI's harness and Haystack, are in bench/offload_peers_harness.py: issue 25 item 4.)

Two tools that offload large tool results today, each driven the way a capable user gets it, by a scripted model
that makes the strongest honest use of what the offloader gives it:

* **Deep Agents** (``deepagents``, the optional ``deepagents`` extra): ``FilesystemMiddleware`` evicts a tool result
  over ``tool_token_limit_before_evict`` (default 20,000 "tokens", counted as 4 characters each) to
  ``/large_tool_results/<tool_call_id>`` in the thread's graph state and shows a 5+5-line head/tail preview.
  :func:`run_deepagents` runs ``langchain.agents.create_agent(model, [tool], middleware=[FilesystemMiddleware()])``
  (``harness="create_deep_agent"``: ``deepagents.create_deep_agent(model, [tool])``, its whole harness).
* **Strands Agents** (``strands-agents``, the benchmark-only ``strands`` extra): the ``ContextOffloader`` plugin
  (``strands.vended_plugins.context_offloader``) offloads a tool result over ``max_result_tokens`` (default 2,500,
  estimated as characters / 4) with a ``preview_tokens`` (default 1,000, i.e. 4,000 characters) preview and registers
  ``retrieve_offloaded_content`` (regex search with context, or a line range). :func:`run_strands` runs
  ``strands.Agent(model, tools=[tool], plugins=[ContextOffloader(storage=LocalFileStorage(dir))])``.
  Strands' ``Model`` interface is an async stream of events, so a tiny scripted ``Model`` subclass drives it fully
  offline: nothing had to be left as reference-only (:data:`STRANDS_DOCUMENTED` keeps its documented thresholds for
  a machine without the package).

The scripted reader, the same for both (it decides from the messages it receives, never from the answer):
call the big tool; if the result came back whole, answer from the first line holding ``term``; if it was offloaded,
parse the handle (Deep Agents: the file path; Strands: the stored reference) from the notice and search the stored
text for ``term`` (Deep Agents: ``grep(pattern=term, path=..., output_mode="content")``; Strands:
``retrieve_offloaded_content(reference, pattern=re.escape(term))``); if the matching line is visible in the reply,
answer quoting it; else read around the line number the reply gave (``read_file(file_path, offset=max(line-2, 0),
limit=10)`` / ``line_range={start: max(line-1, 1), end: line+8}``), then answer from what that shows (or say what is
missing). ``need_context=True`` always reads the window before answering (a question about the lines around a hit).

:func:`run_deepagents` and :func:`run_strands` take the same arguments and return the same JSON-ready shape:

``peer``, ``version``, ``api`` (the calls made, as text), ``settings`` (thresholds in effect), ``offloaded`` and
``handle`` (path or reference), ``calls`` (per model call: what it was sent, :func:`call_context`'s parts in UTF-8
bytes and cl100k tokens, and what it returned), ``model_calls``, ``calls_to_answer``, ``answered`` (``answer_check``
on the final answer), ``answer_visible`` (``answer_check`` on some tool output the model received), ``answer``,
``messages`` (the final history, one small dict per message), ``total`` (the prompts of all calls summed),
``properties`` (what happens to the offloaded content, each a short fact with the installed source file and line it
was read from, found at run time) and ``probes`` (the same questions measured: the handle read again after
``probe_turns`` more turns, and read by another thread / another agent).

``call_context`` / ``strands_call_context`` measure a prompt the same way for any run (the bench can measure its
no-offload and EvidenceMiddleware runs with them): ``messages`` is every message's text plus its tool-call
arguments (JSON), ``schemas`` the tool schemas the model interface was given (JSON, in that framework's format),
``prompt`` both. Message envelopes (roles, ids) are not counted.

Needs ``.venv-bench`` (``make bench-eval``: the ``deepagents`` and ``strands`` extras). Each runner raises
``ImportError`` without its package; :func:`available` says which are installed.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from evidence_lib._errors import to_json
from evidence_lib._measure import Size
from evidence_lib.audit._history import text_of

__all__ = ["DISTRIBUTIONS", "PROBE_TURNS", "STRANDS_DOCUMENTED", "RecordingChatModel", "available", "call_context",
           "deepagents_properties", "default_question", "quote_line", "run_deepagents", "run_strands",
           "strands_call_context", "strands_model_class", "strands_properties"]

#: The distribution behind each peer (what ``pip install`` takes).
DISTRIBUTIONS = {"deepagents": "deepagents", "strands": "strands-agents"}

#: Strands' ContextOffloader defaults as its documentation states them (reference only; the run measures its own).
STRANDS_DOCUMENTED = {
    "max_result_tokens": 2_500, "preview_tokens": 1_000, "evict_after_cycles": 20, "context_lines": 5,
    "retrieval_tool": "retrieve_offloaded_content(reference, pattern=None, line_range=None, context_lines=None)",
}

#: How many turns the probes let pass before reading the handle again: one more than Strands' default
#: ``evict_after_cycles``.
PROBE_TURNS = STRANDS_DOCUMENTED["evict_after_cycles"] + 1


def available() -> dict[str, str | None]:
    """Installed version of each peer's distribution, ``None`` if it is not installed."""
    out: dict[str, str | None] = {}
    for peer, dist in DISTRIBUTIONS.items():
        try:
            out[peer] = version(dist) if importlib.util.find_spec(peer) is not None else None
        except PackageNotFoundError:
            out[peer] = None
    return out


def default_question(tool_name: str, term: str) -> str:
    """The task both peers get unless the bench passes its own."""
    return f"Call {tool_name}, find the line of its result that mentions {term!r}, and quote that line with its source."


# -- measuring a prompt -----------------------------------------------------------------------------
def _size(text: str) -> dict[str, int]:
    s = Size.of(text)
    return {"utf8_bytes": s.utf8_bytes, "cl100k_tokens": s.cl100k_tokens}


def _parts(messages_text: str, schemas_text: str) -> dict[str, dict[str, int]]:
    m, s = _size(messages_text), _size(schemas_text)
    return {"messages": m, "schemas": s, "prompt": {k: m[k] + s[k] for k in m}}


def call_context(messages: Sequence[BaseMessage], tool_schemas: Sequence[dict[str, Any]] | None) -> dict:
    """What one LangChain model call was sent: ``messages`` (every message's text, tool-call arguments as JSON),
    ``schemas`` (the bound tool schemas, JSON) and ``prompt`` (both), each in UTF-8 bytes and cl100k tokens."""
    texts = []
    for m in messages:
        texts.append(text_of(m))
        if isinstance(m, AIMessage):
            texts += [to_json(c.get("args")) for c in m.tool_calls]
    return _parts("\n".join(texts), to_json(list(tool_schemas or [])))


def _strands_block_texts(block: dict[str, Any]) -> list[str]:
    out = []
    if "text" in block:
        out.append(block["text"])
    if "toolUse" in block:
        out.append(to_json(block["toolUse"].get("input", {})))
    if "toolResult" in block:
        for item in block["toolResult"].get("content", []):
            if "text" in item:
                out.append(item["text"])
            if "json" in item:
                out.append(to_json(item["json"]))
    return out


def strands_call_context(messages: Sequence[dict[str, Any]], tool_specs: Sequence[dict[str, Any]] | None,
                         system_prompt: str | None = None) -> dict:
    """:func:`call_context` for a Strands model call: the system prompt, every text block, tool-use inputs (JSON) and
    tool-result items; ``schemas`` is the ``tool_specs`` list as JSON."""
    texts = [system_prompt] if system_prompt else []
    for m in messages:
        for block in m.get("content", []):
            texts += _strands_block_texts(block)
    return _parts("\n".join(texts), to_json(list(tool_specs or [])))


def _sum_prompts(calls: Sequence[dict]) -> dict[str, int]:
    return {k: sum(c["prompt"][k] for c in calls) for k in ("utf8_bytes", "cl100k_tokens")}


# -- the scripted reader (shared) -------------------------------------------------------------------
def quote_line(line: str, term: str, width: int = 400) -> str:
    """``line`` stripped, or the ``width`` characters of it centred on ``term`` when it is longer."""
    line = line.strip()
    if len(line) <= width:
        return line
    i = max(line.find(term), 0)
    start = max(0, min(i - width // 2, len(line) - width))
    return line[start:start + width]


def _answer(quote: str, handle: str, line: int | None) -> str:
    where = f"{handle}, line {line}" if line is not None else handle
    return f"{quote}\n\nSource: {where}"


def _missing(term: str, why: str) -> str:
    return f"Not enough evidence: {why}; the line mentioning {term!r} was not seen."


def _first_hit(numbered: Sequence[tuple[int, str]], term: str) -> tuple[int, str] | None:
    return next(((n, t) for n, t in numbered if term in t), None)


def _whole_result(text: str, term: str, tool_name: str) -> str:
    """The answer when the tool's result came back in full."""
    hit = _first_hit(list(enumerate(text.split("\n"), 1)), term)
    if hit is None:
        return _missing(term, f"no line of the {tool_name} result contains it")
    return _answer(quote_line(hit[1], term), f"the {tool_name} result", hit[0])


# -- Deep Agents --------------------------------------------------------------------------------------
class RecordingChatModel(BaseChatModel):
    """A chat model whose next message is ``policy(messages)``; it records what every call was sent (the messages
    and the bound tool schemas), as a provider would see them. Deterministic, offline."""

    policy: Any
    sent: list = []

    @property
    def _llm_type(self) -> str:
        return "offload-peer-scripted"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.sent.append((list(messages), kwargs.get("tools")))
        return ChatResult(generations=[ChatGeneration(message=self.policy(list(messages)))])

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any):
        """Bind the tools' OpenAI schemas, as a provider's client does."""
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


_DA_EVICTED = re.compile(r"was saved in the filesystem at this path: (\S+)")
_DA_GREP_LINE = re.compile(r"^\s+(\d+)[:-] (.*)$")
_DA_READ_HEAD = re.compile(r"^@@ lines (\d+)-(\d+) of \d+")


def _lc_call(name: str, args: dict[str, Any], n: int) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{n}", "type": "tool_call"}])


class _DeepAgentsReader:
    """The scripted reader on Deep Agents' tools (see the module docstring)."""

    def __init__(self, tool_name: str, term: str, need_context: bool = False,
                 tool_args: Mapping[str, Any] | None = None) -> None:
        self.tool_name, self.term, self.need_context = tool_name, term, need_context
        self.tool_args = dict(tool_args or {})

    def __call__(self, messages: list[BaseMessage]) -> AIMessage:
        task = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=0)
        here = messages[task:]
        results = [m for m in here if isinstance(m, ToolMessage)]
        n = sum(len(m.tool_calls) for m in messages if isinstance(m, AIMessage)) + 1
        first = next((m for m in results if m.name == self.tool_name), None)
        if first is None:
            return _lc_call(self.tool_name, dict(self.tool_args), n)
        found = _DA_EVICTED.search(text_of(first))
        if found is None:
            return AIMessage(content=_whole_result(text_of(first), self.term, self.tool_name))
        path = found.group(1)
        last = results[-1]
        if last.name == self.tool_name:
            return _lc_call("grep", {"pattern": self.term, "path": path, "output_mode": "content"}, n)
        if last.name == "grep":
            numbered = [(int(g.group(1)), g.group(2)) for line in text_of(last).split("\n")
                        if (g := _DA_GREP_LINE.match(line))]
            hit = _first_hit(numbered, self.term)
            if hit is not None and not self.need_context:
                return AIMessage(content=_answer(quote_line(hit[1], self.term), path, hit[0]))
            line = hit[0] if hit else (numbered[0][0] if numbered else None)
            if line is None:
                return AIMessage(content=_missing(self.term, f"grep found no match in {path}"))
            return _lc_call("read_file", {"file_path": path, "offset": max(line - 2, 0), "limit": 10}, n)
        body = text_of(last).split("\n")
        head = _DA_READ_HEAD.match(body[0]) if body else None
        asked = next((c["args"] for m in here if isinstance(m, AIMessage) for c in m.tool_calls
                      if c["id"] == last.tool_call_id), {})
        start = int(head.group(1)) if head else int(asked.get("offset", 0)) + 1
        hit = _first_hit(list(enumerate(body[1:] if head else body, start)), self.term)
        if hit is None:
            return AIMessage(content=_missing(self.term, f"the lines read from {path} do not show it"))
        return AIMessage(content=_answer(quote_line(hit[1], self.term), path, hit[0]))


def producer(tool_output: str, tool_args: Mapping[str, Any] | None = None) -> Callable[..., str]:
    """The task's tool as a plain function every framework can wrap: it returns ``tool_output`` and takes the task's
    arguments (``tool_args``' names, each a ``str``), so each setup is sent the same tool schema and makes the same
    call (issue 33: the peers used to get a tool without arguments)."""

    def produce(**_: Any) -> str:
        return tool_output

    names = list(tool_args or {})
    produce.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=str) for n in names], return_annotation=str)
    produce.__annotations__ = {**{n: str for n in names}, "return": str}
    return produce


def _big_tool(tool_name: str, tool_output: str, description: str | None,
              tool_args: Mapping[str, Any] | None = None) -> BaseTool:
    return StructuredTool.from_function(producer(tool_output, tool_args), name=tool_name,
                                        description=description or f"Return the {tool_name} result.")


def _lc_message(m: BaseMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.type, "text": text_of(m)}
    if isinstance(m, AIMessage) and m.tool_calls:
        out["tool_calls"] = [{"name": c["name"], "args": c["args"]} for c in m.tool_calls]
    if isinstance(m, ToolMessage):
        out["name"] = m.name
    return out


def _returned(m: AIMessage) -> str:
    return ", ".join(c["name"] for c in m.tool_calls) if m.tool_calls else "final answer"


def _measure_lc(sent: Sequence[tuple[list[BaseMessage], Any]], replies: Sequence[AIMessage]) -> list[dict]:
    return [{"call": k, **call_context(msgs, tools), "returned": _returned(r)}
            for k, ((msgs, tools), r) in enumerate(zip(sent, replies), 1)]


def _source(module: str, snippet: str) -> str:
    """``package/file.py:line`` of the first line of ``module``'s installed source that contains ``snippet``."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return f"{module}: not installed"
    path = Path(spec.origin)
    depth = module.count(".") + (1 if path.name == "__init__.py" else 0)
    name = path.relative_to(path.parents[depth]).as_posix()  # from the top-level package's directory
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if snippet in line:
            return f"{name}:{i}"
    return f"{name}: {snippet!r} not found in this version"


def _fact(text: str, module: str, snippet: str) -> dict[str, str]:
    return {"fact": text, "source": _source(module, snippet)}


def deepagents_properties(limit: int | None) -> dict[str, dict[str, str]]:
    """What Deep Agents does with an evicted result, each fact with the installed line it is read from."""
    fs, ev = "deepagents.middleware.filesystem", "deepagents.middleware._message_eviction"
    chars = f"{4 * limit:,} characters" if limit else "never (eviction off)"
    return {
        "threshold": _fact(f"evicts a tool result longer than 4 x tool_token_limit_before_evict characters "
                           f"(here {limit}: {chars}); a character count, not a tokenizer", fs,
                           "if len(content_str) <= NUM_CHARS_PER_TOKEN * self._tool_token_limit_before_evict:"),
        "default_threshold": _fact("tool_token_limit_before_evict defaults to 20000", fs,
                                   "tool_token_limit_before_evict: int | None = 20000"),
        "preview": _fact("the model sees the first 5 and last 5 lines, numbered, each clipped to 1,000 characters",
                         ev, "def _create_content_preview(content_str: str, *, head_lines: int = 5, tail_lines: int = 5)"),
        "where": _fact("written to /large_tool_results/<tool_call_id> through the backend (default StateBackend)",
                       ev, 'file_path = f"{large_tool_results_prefix}/{sanitized_id}"'),
        "scope": _fact("StateBackend keeps files in the thread's graph state ('files'): they persist within a "
                       "thread, not across threads", "deepagents.backends.state", "Files persist within"),
        "expiry": _fact("none: a file leaves the state only when an update sets it to None (the delete tool); "
                        "created_at and modified_at are recorded, never compared with a clock", fs, "treated as deletion markers and removed from the result"),
        "integrity": _fact("no hash or revision: a file is content, encoding, created_at, modified_at",
                           "deepagents.backends.protocol", "class FileData(TypedDict):"),
        "owner": _fact("no owner: access rules are path patterns (FilesystemPermission); whoever continues the "
                       "thread reads its files", fs, "class FilesystemPermission:"),
        "never_evicted": _fact("results of ls, glob, grep, read_file, edit_file, write_file and delete are never evicted",
                               fs, "TOOLS_EXCLUDED_FROM_EVICTION = ("),
        "read_bound": _fact("read_file returns at most limit lines (default 100), cut at 4 x the eviction limit "
                            "characters", fs, "if token_limit and len(content) >= NUM_CHARS_PER_TOKEN * token_limit:"),
        "grep_bound": _fact("grep's reply is cut at 80,000 characters and (by default) 1,000 matches",
                            "deepagents.backends.utils", "limit = TOOL_RESULT_TOKEN_LIMIT * 4"),
    }


def run_deepagents(tool_name: str, tool_output: str, term: str, answer_check: Callable[[str], bool], *,
                   question: str | None = None, system_prompt: str | None = None, tool_description: str | None = None,
                   tool_args: Mapping[str, Any] | None = None, need_context: bool = False,
                   harness: str = "create_agent",
                   tool_token_limit_before_evict: int | None = 20000, probes: bool = True,
                   probe_turns: int = PROBE_TURNS, recursion_limit: int = 100) -> dict[str, Any]:
    """Deep Agents' eviction on one task: a tool ``tool_name`` that returns ``tool_output``, a scripted reader that
    looks for ``term``; the module docstring gives the reader and the returned shape.

    ``harness="create_agent"``: ``langchain.agents.create_agent(model, [tool], system_prompt=system_prompt,
    middleware=[FilesystemMiddleware(tool_token_limit_before_evict=...)])`` (eviction added to an existing agent);
    ``"create_deep_agent"``: ``deepagents.create_deep_agent(model, [tool], system_prompt=system_prompt)`` (its own
    FilesystemMiddleware with the default limit, plus its planning, subagent and summarization middleware and prompt).
    """
    import deepagents
    from deepagents import FilesystemMiddleware, create_deep_agent
    from langchain.agents import create_agent

    question = question or default_question(tool_name, term)
    tool = _big_tool(tool_name, tool_output, tool_description, tool_args)

    def build(policy: Callable[[list[BaseMessage]], AIMessage]) -> tuple[Any, RecordingChatModel]:
        model = RecordingChatModel(policy=policy, sent=[])
        if harness == "create_deep_agent":
            return create_deep_agent(model, [tool], system_prompt=system_prompt), model
        if harness != "create_agent":
            raise ValueError(f"harness must be 'create_agent' or 'create_deep_agent', not {harness!r}")
        fs = FilesystemMiddleware(tool_token_limit_before_evict=tool_token_limit_before_evict)
        return create_agent(model, [tool], system_prompt=system_prompt, middleware=[fs]), model

    agent, model = build(_DeepAgentsReader(tool_name, term, need_context, tool_args))
    state = agent.invoke({"messages": [HumanMessage(question)]}, {"recursion_limit": recursion_limit})
    history = list(state["messages"])
    replies = [m for m in history if isinstance(m, AIMessage)]
    calls = _measure_lc(model.sent, replies)
    final = text_of(replies[-1]) if replies and not replies[-1].tool_calls else ""
    tool_texts = [text_of(m) for m in history if isinstance(m, ToolMessage)]
    first = next((m for m in history if isinstance(m, ToolMessage) and m.name == tool_name), None)
    evicted = _DA_EVICTED.search(text_of(first)) if first is not None else None
    handle = evicted.group(1) if evicted else None
    limit = 20000 if harness == "create_deep_agent" else tool_token_limit_before_evict
    fs_prefix = f"FilesystemMiddleware(tool_token_limit_before_evict={limit})"
    sp = "..." if system_prompt else None
    api = (f"langchain.agents.create_agent(model, [{tool_name}], system_prompt={sp}, middleware=[{fs_prefix}])"
           if harness == "create_agent" else f"deepagents.create_deep_agent(model, [{tool_name}], system_prompt={sp})")
    out: dict[str, Any] = {
        "peer": "deepagents", "version": deepagents.__version__, "harness": harness, "api": api,
        "settings": {"tool_token_limit_before_evict": limit, "evict_over_chars": 4 * limit if limit else None,
                     "preview": "5 head + 5 tail lines, 1,000 characters a line",
                     "tools": [t["function"]["name"] for t in (model.sent[0][1] or [])] if model.sent else []},
        "offloaded": handle is not None, "handle": handle,
        "calls": calls, "model_calls": len(calls),
        "calls_to_answer": len(calls) if final and answer_check(final) else None,
        "answered": bool(final) and answer_check(final),
        "answer_visible": any(answer_check(t) for t in tool_texts),
        "answer": final, "messages": [_lc_message(m) for m in history], "total": _sum_prompts(calls),
        "properties": deepagents_properties(limit),
        "probes": {},
    }
    if probes and handle is not None:
        out["probes"] = _deepagents_probes(build, state, handle, term, probe_turns, recursion_limit)
    return out


class _Prober:
    """Probe policy: ``turns`` idle calls of ``idle`` (name, args), then one read, then stop."""

    def __init__(self, idle: tuple[str, dict] | None, turns: int, read: tuple[str, dict]) -> None:
        self.idle, self.turns, self.read = idle, turns, read

    def __call__(self, messages: list[BaseMessage]) -> AIMessage:
        task = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        made = sum(len(m.tool_calls) for m in messages[task:] if isinstance(m, AIMessage))
        n = sum(len(m.tool_calls) for m in messages if isinstance(m, AIMessage)) + 1
        if self.idle is not None and made < self.turns:
            return _lc_call(*self.idle, n)
        if made == (self.turns if self.idle is not None else 0):
            return _lc_call(*self.read, n)
        return AIMessage(content="probe done")


def _deepagents_probes(build: Callable, state: dict, path: str, term: str, turns: int,
                       recursion_limit: int) -> dict[str, Any]:
    """Search the evicted file again in the same thread after ``turns`` more model turns (``ls``), and read it from
    a new thread.

    The thread's state is passed back in (messages and files), as a checkpointer does for a thread id."""
    grep = {"pattern": term, "path": path, "output_mode": "content"}
    same, _ = build(_Prober(("ls", {"path": "/"}), turns, ("grep", grep)))
    later = same.invoke({"messages": [*state["messages"], HumanMessage("Search the evicted result again.")],
                         "files": state.get("files", {})}, {"recursion_limit": recursion_limit})
    reply_same = text_of([m for m in later["messages"] if isinstance(m, ToolMessage)][-1])
    other, _ = build(_Prober(None, 0, ("read_file", {"file_path": path, "offset": 0, "limit": 10})))
    fresh = other.invoke({"messages": [HumanMessage("Read the evicted result.")]}, {"recursion_limit": recursion_limit})
    reply_other = text_of([m for m in fresh["messages"] if isinstance(m, ToolMessage)][-1])
    return {
        "same_thread_after_turns": {"turns": turns, "term_visible": term in reply_same,
                                    "reply": reply_same[:300]},
        "other_thread": {"term_visible": term in reply_other, "reply": reply_other[:300]},
    }


# -- Strands Agents -------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def strands_model_class() -> type:
    """``ScriptedStrandsModel``: a Strands ``Model`` whose reply is ``policy(messages)`` (a text, or ``(tool name,
    input)``), streamed as Strands' events (messageStart, contentBlockStart/Delta/Stop, messageStop). It records
    what every call was sent (messages, tool specs, system prompt). Deterministic, offline."""
    from strands.models.model import Model

    class _ScriptedStrandsModel(Model):
        def __init__(self, policy: Callable[[list[dict]], Any]) -> None:
            self.policy, self.sent, self.config = policy, [], {}

        def update_config(self, **model_config: Any) -> None:
            self.config.update(model_config)

        def get_config(self) -> dict[str, Any]:
            return self.config

        async def structured_output(self, output_model: Any, prompt: Any, system_prompt: str | None = None,
                                    **kwargs: Any):
            raise NotImplementedError("the scripted model has no structured output")
            yield  # pragma: no cover

        async def stream(self, messages: list[dict], tool_specs: list[dict] | None = None,
                         system_prompt: str | None = None, **kwargs: Any):
            snapshot = json.loads(json.dumps(messages, default=str))
            self.sent.append((snapshot, list(tool_specs or []), system_prompt))
            reply = self.policy(snapshot)
            yield {"messageStart": {"role": "assistant"}}
            if isinstance(reply, str):
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": reply}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "end_turn"}}
                return
            name, args = reply
            uses = sum(1 for m in snapshot for b in m.get("content", []) if "toolUse" in b)
            yield {"contentBlockStart": {"start": {"toolUse": {"name": name, "toolUseId": f"tooluse_{uses + 1}"}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}

    _ScriptedStrandsModel.__name__ = _ScriptedStrandsModel.__qualname__ = "ScriptedStrandsModel"
    return _ScriptedStrandsModel


_ST_REFS = re.compile(r"\[Stored references:\]\n\s+(\S+)")
_ST_LINE = re.compile(r"^[> ] *(\d+)\| (.*)$")


def _st_results(messages: list[dict]) -> list[tuple[str, str]]:
    """(tool name, text) of every tool result in order, names from the matching toolUse."""
    names = {b["toolUse"]["toolUseId"]: b["toolUse"]["name"] for m in messages for b in m.get("content", [])
             if "toolUse" in b}
    out = []
    for m in messages:
        for b in m.get("content", []):
            if "toolResult" in b:
                r = b["toolResult"]
                out.append((names.get(r.get("toolUseId"), ""), "\n".join(_strands_block_texts(b))))
    return out


class _StrandsReader:
    """The scripted reader on Strands' ContextOffloader (see the module docstring)."""

    def __init__(self, tool_name: str, term: str, need_context: bool = False,
                 tool_args: Mapping[str, Any] | None = None) -> None:
        self.tool_name, self.term, self.need_context = tool_name, term, need_context
        self.tool_args = dict(tool_args or {})

    def __call__(self, messages: list[dict]) -> Any:
        results = _st_results(messages)
        first = next((t for n, t in results if n == self.tool_name), None)
        if first is None:
            return (self.tool_name, dict(self.tool_args))
        found = _ST_REFS.search(first) if first.startswith("[Offloaded:") else None
        if found is None:
            return _whole_result(first, self.term, self.tool_name)
        ref = found.group(1)
        name, last = results[-1]
        if name == self.tool_name:
            return ("retrieve_offloaded_content", {"reference": ref, "pattern": re.escape(self.term)})
        numbered = [(int(g.group(1)), g.group(2)) for line in last.split("\n") if (g := _ST_LINE.match(line))]
        hit = _first_hit(numbered, self.term)
        searched = sum(1 for n, _ in results if n == "retrieve_offloaded_content")
        if hit is not None and (searched > 1 or not self.need_context):
            return _answer(quote_line(hit[1], self.term), ref, hit[0])
        if searched > 1:
            return _missing(self.term, f"the lines retrieved from {ref} do not show it")
        marked = [int(g.group(1)) for line in last.split("\n") if (g := re.match(r"^> *(\d+)\|", line))]
        line = hit[0] if hit else (marked[0] if marked else None)
        if line is None:
            return _missing(self.term, f"no match in {ref}: {last[:120]}")
        return ("retrieve_offloaded_content", {"reference": ref, "line_range": {"start": max(line - 1, 1),
                                                                                  "end": line + 8}})


def strands_properties(max_result_tokens: int, preview_tokens: int, storage: str) -> dict[str, dict[str, str]]:
    """What Strands' ContextOffloader does with an offloaded result, each fact with the installed line it is read
    from."""
    pl, st = "strands.vended_plugins.context_offloader.plugin", "strands.vended_plugins.context_offloader.storage"
    return {
        "threshold": _fact(f"offloads a result whose estimated token count exceeds max_result_tokens (here "
                           f"{max_result_tokens:,}; default 2,500)", pl, "if token_count <= self._max_result_tokens:"),
        "estimate": _fact("the estimate is the agent's model.count_tokens: in the base Model class (so for the "
                          "scripted model) a heuristic, text characters / 4 and JSON characters / 2, though its "
                          "docstring names tiktoken; Bedrock, Anthropic, Gemini, OpenAI Responses and llama.cpp call "
                          "their provider's counter only with use_native_token_count=True", "strands.models.model",
                          "return math.ceil(len(text) / 4)"),
        "preview": _fact(f"the preview is the first preview_tokens x 4 characters of the text (here "
                         f"{preview_tokens * 4:,})", pl, "return text[: self._preview_tokens * _CHARS_PER_TOKEN]"),
        "retrieval": _fact("retrieve_offloaded_content: a regex pattern (5 lines of context) or a 1-indexed line "
                           "range, its reply cut at max_result_tokens x 4 characters", pl,
                           "max_chars = self._max_result_tokens * _CHARS_PER_TOKEN"),
        "full_read": _fact("without pattern or line_range it returns the whole stored content, unbounded", pl,
                           "return self._decode_full_content(content_bytes, content_type, reference)"),
        "where": _fact("each block is stored under key <toolUseId>_<block index>, in the 'offloader' namespace of "
                       "the storage (LocalFileStorage: a file under its directory)"
                       if storage == "file" else "each block is stored in memory as mem_<n>_<toolUseId>_<index>",
                       pl if storage == "file" else st,
                       'key = f"{tool_use_id}_{i}"' if storage == "file" else 'reference = f"mem_{self._counter}_{key}"'),
        "expiry": _fact("by agent loop cycles, not time: an entry is deleted before a model call when it was last "
                        "stored or retrieved more than evict_after_cycles (default 20) cycles ago", pl,
                        "threshold = cycle - self._evict_after_cycles") if storage == "file" else
        _fact("by agent loop cycles, not time: InMemoryStorage drops entries idle for more than evict_after_turns "
              "(default 20) cycles", st, "threshold = cycle - self._evict_after_turns"),
        "expiry_bookkeeping": _fact("the cycle of each entry is kept in memory per Agent object; entries stored "
                                    "by an agent that is gone are never deleted by the plugin", pl,
                                    "self._stored_cycles: weakref.WeakKeyDictionary"),
        "legacy_storages": _fact("the deprecated FileStorage and S3Storage never evict: their protocol 'intentionally "
                                 "does not include eviction'", st, "This protocol intentionally does not include eviction"),
        "owner": _fact("no owner or permission check: a reference is resolved in the storage alone, so any agent "
                       "given the same storage reads it", pl,
                       "content_bytes, content_type = await _retrieve_content(storage, reference)"),
        "integrity": _fact("no hash or revision: a reference is a key plus a size ('text, N chars')", pl,
                           "references.append((ref, \"text/plain\", f\"text, {len(block['text']):,} chars\"))"),
    }


def _st_message(m: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.get("role"), "text": "\n".join(t for b in m.get("content", []) if "toolUse" not in b
                                                                    for t in _strands_block_texts(b))}
    uses = [b["toolUse"] for b in m.get("content", []) if "toolUse" in b]
    if uses:
        out["tool_calls"] = [{"name": u["name"], "args": u.get("input", {})} for u in uses]
    return out


def run_strands(tool_name: str, tool_output: str, term: str, answer_check: Callable[[str], bool], *,
                question: str | None = None, system_prompt: str | None = None, tool_description: str | None = None,
                tool_args: Mapping[str, Any] | None = None, need_context: bool = False, storage: str = "file",
                storage_dir: str | Path | None = None,
                max_result_tokens: int = 2_500, preview_tokens: int = 1_000, evict_after_cycles: int | None = 20,
                probes: bool = True, probe_turns: int = PROBE_TURNS) -> dict[str, Any]:
    """Strands Agents' ContextOffloader on one task: same arguments and returned shape as :func:`run_deepagents`.

    ``storage="file"``: ``ContextOffloader(storage=strands.storage.LocalFileStorage(dir), max_result_tokens,
    preview_tokens, evict_after_cycles=...)`` (``dir``: ``storage_dir``, else a temporary directory removed
    afterwards); ``"memory"``: its fallback when given no storage, the offloader's own ``InMemoryStorage()`` (one
    agent only, so the other-agent probe is not run).
    """
    from strands import Agent
    from strands import tool as strands_tool
    from strands.storage import LocalFileStorage
    from strands.vended_plugins.context_offloader import ContextOffloader, InMemoryStorage

    model_class = strands_model_class()
    question = question or default_question(tool_name, term)
    if storage not in ("file", "memory"):
        raise ValueError(f"storage must be 'file' or 'memory', not {storage!r}")

    produce = producer(tool_output, tool_args)
    produce.__name__ = tool_name
    produce.__doc__ = tool_description or f"Return the {tool_name} result."
    big = strands_tool(name=tool_name)(produce)

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(storage_dir) if storage_dir is not None else Path(tmp)

        def offloader() -> Any:
            store = LocalFileStorage(str(base)) if storage == "file" else InMemoryStorage()
            return ContextOffloader(storage=store, max_result_tokens=max_result_tokens,
                                    preview_tokens=preview_tokens, evict_after_cycles=evict_after_cycles)

        model = model_class(_StrandsReader(tool_name, term, need_context, tool_args))
        agent = Agent(model=model, tools=[big], plugins=[offloader()], system_prompt=system_prompt,
                      callback_handler=None)
        agent(question)
        history = json.loads(json.dumps(agent.messages, default=str))
        calls = []
        for k, (msgs, specs, sp) in enumerate(model.sent, 1):
            reply = history[len(msgs)] if len(msgs) < len(history) else {}
            uses = [b["toolUse"]["name"] for b in reply.get("content", []) if "toolUse" in b]
            calls.append({"call": k, **strands_call_context(msgs, specs, sp),
                          "returned": ", ".join(uses) if uses else "final answer"})
        last = history[-1] if history else {}
        final = "" if any("toolUse" in b for b in last.get("content", [])) else \
            "\n".join(b.get("text", "") for b in last.get("content", []))
        results = _st_results(history)
        first = next((t for n, t in results if n == tool_name), "")
        found = _ST_REFS.search(first) if first.startswith("[Offloaded:") else None
        handle = found.group(1) if found else None
        ok = bool(final) and answer_check(final)
        api = (f"strands.Agent(model, tools=[{tool_name}], system_prompt={'...' if system_prompt else None}, "
               f"plugins=[ContextOffloader(storage="
               f"{'strands.storage.LocalFileStorage(dir)' if storage == 'file' else 'InMemoryStorage()'}, max_result_tokens="
               f"{max_result_tokens}, preview_tokens={preview_tokens}, evict_after_cycles={evict_after_cycles})])")
        out: dict[str, Any] = {
            "peer": "strands", "version": version("strands-agents"), "harness": "Agent", "api": api,
            "settings": {"max_result_tokens": max_result_tokens, "preview_tokens": preview_tokens,
                         "preview_chars": 4 * preview_tokens, "evict_after_cycles": evict_after_cycles,
                         "storage": storage, "tools": [s["name"] for s in model.sent[0][1]] if model.sent else []},
            "offloaded": handle is not None, "handle": handle,
            "calls": calls, "model_calls": len(calls),
            "calls_to_answer": len(calls) if ok else None, "answered": ok,
            "answer_visible": any(answer_check(t) for _, t in results),
            "answer": final, "messages": [_st_message(m) for m in history], "total": _sum_prompts(calls),
            "properties": strands_properties(max_result_tokens, preview_tokens, storage),
            "probes": {},
        }
        if probes and handle is not None:
            out["probes"] = _strands_probes(agent, model, offloader, base, handle, term, probe_turns,
                                            model_class, storage, Agent, strands_tool)
        return out


def _strands_probes(agent: Any, model: Any, offloader: Callable[[], Any], base: Path, ref: str, term: str,
                    turns: int, model_class: type, storage: str, agent_class: type, strands_tool: Any) -> dict:
    """Read the offloaded reference from another agent on the same storage, then from the same agent after
    ``turns`` more loop cycles that do not touch it."""
    out: dict[str, Any] = {}
    search = {"reference": ref, "pattern": re.escape(term)}
    if storage == "file":
        other = agent_class(model=model_class(lambda _m: "probe done"), plugins=[offloader()], callback_handler=None)
        got = other.tool.retrieve_offloaded_content(**search)
        text = "\n".join(c.get("text", "") for c in got.get("content", []))
        out["other_agent_same_storage"] = {"status": got.get("status"), "term_visible": term in text,
                                           "reply": text[:300]}

    def wait() -> str:
        """Do nothing (a turn that does not touch the offloaded content)."""
        return "ok"

    agent.tool_registry.register_tool(strands_tool(name="wait")(wait))

    def prober(messages: list[dict]) -> Any:
        task = max(i for i, m in enumerate(messages) if m.get("role") == "user"
                   and any("text" in b for b in m.get("content", [])))
        made = sum(1 for m in messages[task:] for b in m.get("content", []) if "toolUse" in b)
        if made < turns:
            return ("wait", {})
        if made == turns:
            return ("retrieve_offloaded_content", search)
        return "probe done"

    model.policy = prober
    cycles_before = agent.event_loop_metrics.cycle_count
    agent("Search the offloaded result again.")
    results = _st_results(json.loads(json.dumps(agent.messages, default=str)))
    reply = results[-1][1] if results else ""
    stored = [p.name for p in (base / "offloader").glob("*")] if storage == "file" else None
    out["same_agent_after_cycles"] = {
        "turns": turns, "cycles_elapsed": agent.event_loop_metrics.cycle_count - cycles_before,
        "term_visible": term in reply, "reply": reply[:300],
        **({"files_left_in_storage": stored} if stored is not None else {}),
    }
    return out


def _demo() -> None:  # pragma: no cover - manual run: .venv-bench/bin/python bench/offload_peers.py
    lines = [f"2026-11-30T11:{i // 60 % 60:02}:{i % 60:02}Z INFO svc-{i % 13} request ok id={i:06}"
             for i in range(3800)]
    answer = "2026-11-30T12:00:00Z ERROR payment-7 timeout after 30s"
    lines[2345] = answer
    log = "\n".join(lines)
    for name, run in (("deepagents", run_deepagents), ("strands", run_strands)):
        if available()[name] is None:
            print(f"{name}: not installed")
            continue
        r = run("fetch_logs", log, "payment-7", lambda t: answer in t)
        per_call = [(c["returned"], c["prompt"]["cl100k_tokens"]) for c in r["calls"]]
        print(f"{name} {r['version']}: {len(log.encode()):,} bytes log, calls {per_call}, total "
              f"{r['total']['cl100k_tokens']:,} tokens, answered {r['answered']}")
        print(json.dumps(r["probes"], indent=1)[:1500])


if __name__ == "__main__":  # pragma: no cover
    _demo()
