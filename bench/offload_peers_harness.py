"""Two more peers of the offload benchmark (issue 25 item 4): Pydantic AI's harness and Haystack, offline.

Each is driven by a scripted model through the framework's own agent loop, with the same help and the same reader as
the Deep Agents and Strands peers of :mod:`offload_peers` (call the big tool; if its result came back whole, answer
from the first line holding ``term``; if it was offloaded, search the stored text for ``term`` and answer quoting the
matching line, or say it is missing):

* **Pydantic AI harness** (``pydantic-ai-harness``, the benchmark-only ``pydantic-ai`` extra):
  ``pydantic_ai.Agent(FunctionModel(policy), capabilities=[ToolOutputLimits(store=LocalFileStore(dir))])``.
  ``ToolOutputLimits`` (``pydantic_ai_harness/tool_output_limits/_capability.py``) spills a return of 10,000+
  characters (its default band, ``Spill(then=Truncate())``) to a handle and shows a 1,000-character head/tail preview
  and a one-line JSON shape of a structured return; it registers ``read_tool_result(handle, offset, limit, from_end,
  pattern)``: a literal ``pattern`` keeps only the lines holding it, at most 1,000 lines / 50,000 characters, without
  line numbers. The reader calls ``read_tool_result(handle, pattern=term)``.
* **Haystack** (``haystack-ai``, the benchmark-only ``haystack`` extra): ``haystack.components.agents.Agent(
  chat_generator=<scripted>, tools=[tool, read_offloaded], hooks={"after_tool": [ToolResultOffloadHook(
  FileSystemToolResultStore(dir), {"*": OffloadOverChars(8000)})]})``. The hook
  (``haystack/hooks/tool_result_offloading/hooks.py``) writes a result its policy selects to the store and leaves a
  pointer with the file path and a 200-character preview; Haystack ships no tool that reads the store back (its
  docstring expects "a bash/read tool ... scoped to the store"), so the benchmark gives the agent the smallest reader
  that lets it answer, :func:`haystack_reader` on ``ToolResultStore.read``: lines holding a literal pattern with their
  line numbers, or a line range, at most 50 lines / 4,000 characters. That reader is ours, and the JSON says so.
  ``OffloadOverChars(8000)`` is the threshold of the hook's own docstring example for unlisted tools.

Both runners return the shape of :func:`offload_peers.run_deepagents` (``calls`` with ``messages`` / ``schemas`` /
``prompt`` parts per model call, ``answered``, ``properties`` with the installed source line of each fact, ...);
``probes`` is empty (the bench reads the probes of Deep Agents and Strands only). Each raises ``ImportError``
without its package.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any

from offload_peers import (
    _answer,
    _fact,
    _missing,
    _parts,
    _sum_prompts,
    _whole_result,
    default_question,
    producer,
    quote_line,
)

from evidence_lib._errors import to_json

__all__ = ["HAYSTACK_OFFLOAD_OVER_CHARS", "READER_MAX_CHARS", "READER_MAX_LINES", "haystack_properties",
           "haystack_reader", "pydantic_ai_properties", "run_haystack", "run_pydantic_ai"]

#: Haystack's hook has no default threshold; 8,000 characters is the wildcard of its own docstring example.
HAYSTACK_OFFLOAD_OVER_CHARS = 8_000
#: Bounds of the benchmark's reader for Haystack's store (Haystack ships none).
READER_MAX_LINES = 50
READER_MAX_CHARS = 4_000


def _openai_schema(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """A tool schema in the OpenAI function format, as LangChain's peers are measured."""
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def _found_answer(text: str, term: str, handle: str) -> str:
    """The answer from a search reply: the first line holding ``term`` (a ``N: `` line number kept as the source)."""
    numbered = []
    for line in text.split("\n"):
        g = re.match(r"^(\d+): (.*)$", line)
        numbered.append((int(g.group(1)), g.group(2)) if g else (None, line))
    hit = next(((n, t) for n, t in numbered[1:] if term in t), None)  # line 0 is the reply's header
    if hit is None:
        return _missing(term, f"the search of {handle} does not show it")
    return _answer(quote_line(hit[1], term), handle, hit[0])


# -- Pydantic AI harness ----------------------------------------------------------------------------------------------
_PA_HANDLE = re.compile(r"stored to handle '([^']+)'")


def _pa_text(part: Any) -> list[str]:
    """The texts a Pydantic AI message part puts in the prompt: content, or a tool call's arguments as JSON."""
    if hasattr(part, "tool_name") and hasattr(part, "args"):
        args = part.args if isinstance(part.args, dict) else json.loads(part.args or "{}")
        return [to_json(args)]
    content = getattr(part, "content", None)
    if content is None:
        return []
    return [content if isinstance(content, str) else to_json(content)]


def pydantic_ai_call_context(messages: Sequence[Any], tools: Sequence[Any], instructions: str | None) -> dict:
    """What one Pydantic AI model call was sent (as :func:`offload_peers.call_context`): every part's text and tool-call
    arguments; ``schemas`` the function tools in the OpenAI format."""
    texts = [instructions] if instructions else []
    for m in messages:
        for part in m.parts:
            texts += _pa_text(part)
    schemas = [_openai_schema(t.name, t.description or "", t.parameters_json_schema) for t in tools]
    return _parts("\n".join(texts), to_json(schemas))


class _PydanticReader:
    """The scripted reader on ToolOutputLimits (see the module docstring)."""

    def __init__(self, tool_name: str, term: str, tool_args: Mapping[str, Any] | None = None) -> None:
        self.tool_name, self.term, self.handle = tool_name, term, None
        self.tool_args = dict(tool_args or {})

    def __call__(self, messages: list[Any]) -> tuple[str, dict] | str:
        returns = [p for m in messages for p in m.parts if getattr(p, "part_kind", "") == "tool-return"]
        first = next((p for p in returns if p.tool_name == self.tool_name), None)
        if first is None:
            return (self.tool_name, dict(self.tool_args))
        text = first.content if isinstance(first.content, str) else to_json(first.content)
        found = _PA_HANDLE.search(text) if text.startswith("[Tool output too large") else None
        if found is None:
            return _whole_result(text, self.term, self.tool_name)
        self.handle = found.group(1)
        if returns[-1].tool_name == self.tool_name:
            return ("read_tool_result", {"handle": found.group(1), "pattern": self.term})
        reply = str(returns[-1].content)
        line = next((t for t in reply.split("\n")[1:] if self.term in t), None)
        if line is None:
            return _missing(self.term, f"read_tool_result found no line in {found.group(1)}")
        return _answer(quote_line(line, self.term), found.group(1), None)


def pydantic_ai_properties() -> dict[str, dict[str, str]]:
    """What ToolOutputLimits does with a spilled return, each fact with the installed line it is read from."""
    cap, bands = "pydantic_ai_harness.tool_output_limits._capability", "pydantic_ai_harness.tool_output_limits._bands"
    store = "pydantic_ai_harness.tool_output_limits._store"
    return {
        "threshold": _fact("spills a return of 10,000 characters or more (default band Spill(then=Truncate())); "
                           "over_tokens=True measures a ~4-character token estimate instead", cap,
                           "_DEFAULT_THRESHOLD = 10_000"),
        "preview": _fact("the model sees a header with the handle and a read hint, a one-line JSON shape of a "
                         "structured return, and 1,000 characters: half from the head, half from the tail", bands,
                         "_DEFAULT_PREVIEW_CHARS = 1_000"),
        "retrieval": _fact("read_tool_result(handle, offset, limit, from_end, pattern): pattern is a literal "
                           "substring; lines are returned without line numbers", cap, "if pattern is not None:"),
        "read_bound": _fact("one read returns at most 1,000 lines and 50,000 characters", cap,
                            "_MAX_READ_LINES = 1_000"),
        "where": _fact("LocalFileStore: a file run_id/tool_call_id.retry under a per-user temporary root", store,
                       "class LocalFileStore:"),
        "expiry": _fact("LocalFileStore keeps files for ever unless cleanup_after (file modification time) is set",
                        store, "cleanup_after: timedelta | None = None"),
        "owner": _fact("no owner check beyond the file system: 'a later agent or run by the same user can read a "
                       "spill a previous run produced'", store, "a later agent or run by the same user can"),
        "integrity": _fact("no hash or revision: a handle is a path; the bytes are read as they are now", cap,
                           "data = await read(handle)"),
    }


def run_pydantic_ai(tool_name: str, tool_output: str, term: str, answer_check: Callable[[str], bool], *,
                    question: str | None = None, tool_description: str | None = None,
                    tool_args: Mapping[str, Any] | None = None, **_ignored: Any) -> dict[str, Any]:
    """Pydantic AI's harness ``ToolOutputLimits`` (defaults, a ``LocalFileStore`` in a temporary directory) on one
    task: the arguments and returned shape of :func:`offload_peers.run_deepagents`."""
    from pydantic_ai import Agent, Tool
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai_harness.tool_output_limits import LocalFileStore, ToolOutputLimits

    reader, sent = _PydanticReader(tool_name, term, tool_args), []

    def policy(messages: list[Any], info: AgentInfo) -> ModelResponse:
        sent.append(pydantic_ai_call_context(messages, info.function_tools, info.instructions))
        step = reader(messages)
        if isinstance(step, str):
            sent[-1]["returned"] = "final answer"
            return ModelResponse(parts=[TextPart(step)])
        sent[-1]["returned"] = step[0]
        return ModelResponse(parts=[ToolCallPart(step[0], step[1], tool_call_id=f"call_{len(sent)}")])

    produce = producer(tool_output, tool_args)
    with tempfile.TemporaryDirectory() as tmp:
        limits = ToolOutputLimits(store=LocalFileStore(base_dir=Path(tmp)))
        big = Tool(produce, name=tool_name, description=tool_description or f"Return the {tool_name} result.")
        agent = Agent(FunctionModel(policy), tools=[big], capabilities=[limits])
        final = str(agent.run_sync(question or default_question(tool_name, term)).output)
    calls = [{"call": k, **c} for k, c in enumerate(sent, 1)]
    ok = answer_check(final)
    return _result("pydantic_ai", version("pydantic-ai-harness"), calls, final, ok, reader.handle, {
        "api": f"pydantic_ai.Agent(FunctionModel(policy), tools=[{tool_name}], capabilities=[ToolOutputLimits("
               f"store=LocalFileStore(base_dir=tmp))])",
        "settings": {"band": "over 10,000 characters: Spill(preview_chars=1,000, then=Truncate())",
                     "read_tool": "read_tool_result (shipped)", "pydantic-ai-slim": version("pydantic-ai-slim")},
        "properties": pydantic_ai_properties()})


# -- Haystack ---------------------------------------------------------------------------------------------------------
_HS_POINTER = re.compile(r"^Tool result offloaded to text \(\d+ characters\) at '([^']+)'")


def haystack_reader(store: Any) -> Callable[..., str]:
    """``read_offloaded(reference, pattern=None, offset=0, limit=50)`` on ``store.read``: the benchmark's reader
    for Haystack's offloaded results (Haystack ships none). Lines holding ``pattern`` literally, or ``limit`` lines
    from ``offset``; each with its 1-based number; at most :data:`READER_MAX_LINES` lines and
    :data:`READER_MAX_CHARS` characters."""

    def read_offloaded(reference: Annotated[str, "the path from the 'Tool result offloaded to' pointer"],
                       pattern: Annotated[str | None, "literal text: only lines holding it"] = None,
                       offset: Annotated[int, "first line (0-based) when no pattern"] = 0,
                       limit: Annotated[int, "lines to return, at most 50"] = READER_MAX_LINES) -> str:
        """Read an offloaded tool result: its lines holding a literal pattern, or a range of lines, numbered."""
        try:
            text = store.read(reference)
        except (OSError, ValueError):
            return f"no offloaded result at {reference!r}"
        lines = list(enumerate(str(text).split("\n"), 1))
        chosen = [(n, t) for n, t in lines if pattern in t] if pattern else lines[max(offset, 0):]
        shown = "\n".join(f"{n}: {t}" for n, t in chosen[:max(1, min(limit, READER_MAX_LINES))])[:READER_MAX_CHARS]
        return f"{len(chosen):,} line(s)" + ("\n" + shown if shown else "")

    return read_offloaded


def _haystack_generator(policy: Callable[[list[Any]], Any], sent: list[dict]) -> Any:
    """A Haystack chat generator whose reply is ``policy(messages)`` (a text, or ``(tool name, arguments)``); it
    records what every call was sent."""
    from haystack import component
    from haystack.dataclasses import ChatMessage, ToolCall

    @component
    class ScriptedChatGenerator:
        @component.output_types(replies=list[ChatMessage])
        def run(self, messages: list[ChatMessage], tools: Any = None, **kwargs: Any) -> dict[str, Any]:
            specs = [t.tool_spec for t in (tools or [])]
            sent.append(haystack_call_context(messages, specs))
            step = policy(messages)
            if isinstance(step, str):
                sent[-1]["returned"] = "final answer"
                return {"replies": [ChatMessage.from_assistant(step)]}
            sent[-1]["returned"] = step[0]
            call = ToolCall(tool_name=step[0], arguments=step[1], id=f"call_{len(sent)}")
            return {"replies": [ChatMessage.from_assistant(tool_calls=[call])]}

    return ScriptedChatGenerator()


def haystack_call_context(messages: Sequence[Any], specs: Sequence[dict[str, Any]]) -> dict:
    """What one Haystack chat generator call was sent: every message's text, tool calls' arguments and tool results;
    ``schemas`` the tools' specs in the OpenAI format."""
    texts = []
    for m in messages:
        texts += [m.text] if m.text else []
        texts += [to_json(c.arguments) for c in m.tool_calls]
        texts += [r.result if isinstance(r.result, str) else to_json(str(r.result)) for r in m.tool_call_results]
    schemas = [_openai_schema(s["name"], s.get("description", ""), s.get("parameters", {})) for s in specs]
    return _parts("\n".join(texts), to_json(schemas))


class _HaystackReader:
    """The scripted reader on Haystack's pointer and the benchmark's ``read_offloaded``."""

    def __init__(self, tool_name: str, term: str, tool_args: Mapping[str, Any] | None = None) -> None:
        self.tool_name, self.term, self.handle = tool_name, term, None
        self.tool_args = dict(tool_args or {})

    def __call__(self, messages: list[Any]) -> tuple[str, dict] | str:
        results = [r for m in messages for r in m.tool_call_results]
        first = next((r for r in results if r.origin.tool_name == self.tool_name), None)
        if first is None:
            return (self.tool_name, dict(self.tool_args))
        found = _HS_POINTER.match(str(first.result))
        if found is None:
            return _whole_result(str(first.result), self.term, self.tool_name)
        self.handle = found.group(1)
        if results[-1].origin.tool_name == self.tool_name:
            return ("read_offloaded", {"reference": found.group(1), "pattern": self.term})
        return _found_answer(str(results[-1].result), self.term, found.group(1))


def haystack_properties() -> dict[str, dict[str, str]]:
    """What ToolResultOffloadHook does with a result, each fact with the installed line it is read from."""
    hooks, utils = "haystack.hooks.tool_result_offloading.hooks", "haystack.hooks.tool_result_offloading.utils"
    policies, stores = "haystack.hooks.tool_result_offloading.policies", "haystack.hooks.tool_result_offloading.stores"
    return {
        "threshold": _fact("no default: a policy per tool name (or '*'); OffloadOverChars(n) offloads a result longer "
                           "than n characters (here the docstring example's wildcard, 8,000)", policies,
                           "return len(result) > self.threshold"),
        "preview": _fact("the pointer is the text's length, its store reference and its first preview_chars "
                         "(default 200) characters", utils, 'return reference, f"text ({len(text)} characters) at'),
        "retrieval": _fact("Haystack ships no tool that reads the store back: the benchmark supplies read_offloaded "
                           "(bench/offload_peers_harness.py) on ToolResultStore.read", hooks,
                           "important especially when a bash/read tool is scoped to the store"),
        "where": _fact("FileSystemToolResultStore: a file <root>/<step>_<tool>_<call id>.txt", hooks,
                       'key_prefix=f"{step}_{tool_name}_{result.origin.id'),
        "expiry": _fact("none: files stay until someone deletes them", stores, "path.write_text(content"),
        "owner": _fact("no owner: isolation is a store per run passed in hook_context", hooks,
                       "RESULT_STORE_CONTEXT_KEY = "),
        "integrity": _fact("no hash or revision: a reference is a file path", stores, "return str(path)"),
    }


def run_haystack(tool_name: str, tool_output: str, term: str, answer_check: Callable[[str], bool], *,
                 question: str | None = None, tool_description: str | None = None,
                 tool_args: Mapping[str, Any] | None = None, offload_over_chars: int = HAYSTACK_OFFLOAD_OVER_CHARS,
                 **_ignored: Any) -> dict[str, Any]:
    """Haystack's ``ToolResultOffloadHook`` on one task: the arguments and returned shape of
    :func:`offload_peers.run_deepagents`."""
    from haystack.components.agents import Agent
    from haystack.dataclasses import ChatMessage
    from haystack.hooks.tool_result_offloading import FileSystemToolResultStore, OffloadOverChars, ToolResultOffloadHook
    from haystack.tools import create_tool_from_function

    produce = producer(tool_output, tool_args)
    sent: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = FileSystemToolResultStore(root=tmp)
        big = create_tool_from_function(produce, name=tool_name,
                                        description=tool_description or f"Return the {tool_name} result.")
        reader = create_tool_from_function(haystack_reader(store), name="read_offloaded")
        hook = ToolResultOffloadHook(store, {"*": OffloadOverChars(offload_over_chars)})
        policy = _HaystackReader(tool_name, term, tool_args)
        agent = Agent(chat_generator=_haystack_generator(policy, sent),
                      tools=[big, reader], hooks={"after_tool": [hook]})
        out = agent.run(messages=[ChatMessage.from_user(question or default_question(tool_name, term))])
        final = out["messages"][-1].text or ""
    calls = [{"call": k, **c} for k, c in enumerate(sent, 1)]
    ok = answer_check(final)
    return _result("haystack", version("haystack-ai"), calls, final, ok, policy.handle, {
        "api": f"haystack.components.agents.Agent(chat_generator=<scripted>, tools=[{tool_name}, read_offloaded], "
               f"hooks={{'after_tool': [ToolResultOffloadHook(FileSystemToolResultStore(tmp), "
               f"{{'*': OffloadOverChars({offload_over_chars})}})]}})",
        "settings": {"offload_over_chars": offload_over_chars, "preview_chars": 200,
                     "read_tool": "read_offloaded: supplied by the benchmark (Haystack ships no reader), on "
                                  "ToolResultStore.read, lines with numbers, at most 50 lines / 4,000 characters"},
        "properties": haystack_properties()})


# -- shared ----------------------------------------------------------------------------------------------------------
def _result(peer: str, ver: str, calls: list[dict], final: str, ok: bool, handle: str | None,
            extra: dict[str, Any]) -> dict[str, Any]:
    return {"peer": peer, "version": ver, **extra, "offloaded": handle is not None, "handle": handle,
            "calls": calls, "model_calls": len(calls), "calls_to_answer": len(calls) if ok else None,
            "answered": ok, "answer": final, "total": _sum_prompts(calls), "probes": {}}

