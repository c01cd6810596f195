"""Generic tool plumbing: strict argument schemas, tools that refuse with stable codes, and one runner.

Introduced in notebook 02 (refusals). Every model-facing tool in the series is an
:class:`EvidenceTool` over a :class:`StrictArgs` schema; :func:`run_tool_call` runs one tool call
the way an agent loop would and always returns a ``ToolMessage``, never raises.

Arguments are checked *before* langchain-core sees them: ``BaseTool.run`` formats the raw input
with ``str()`` for its callbacks (a 5,000-digit integer cannot be formatted) and skips validation
entirely for a schema without fields (a smuggled ``principal`` would be ignored). Overriding the
public ``run``/``arun`` keeps the check in front of everything; ``_parse_input`` is overridden only so that what they
validated is not validated a second time (one validation per call).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.messages.tool import tool_call as _lc_tool_call
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, ConfigDict, ValidationError

from . import _calls as calls
from ._errors import EvidenceError, error_payload, to_json

__all__ = ["BOUND_ERRORS", "MAX_ARG_DEPTH", "MAX_ARG_VALUES", "MAX_ECHO_CHARS", "MAX_QUERY_CHARS", "MAX_WIRE_INT",
           "EvidenceTool", "StrictArgs", "check_args", "clean_text", "echo", "refusal_message", "run_tool_call",
           "tool_call"]

#: One bound for every free-text query in the series (search_evidence, find_tools, ...).
MAX_QUERY_CHARS = 256
#: Integers beyond this magnitude are clamped before validation (they are never formatted).
MAX_WIRE_INT = 2**63 - 1
#: Arguments larger than this (values counted across nested lists and objects) are refused.
MAX_ARG_VALUES = 1_000
MAX_ARG_DEPTH = 8
#: How much of an argument *name* a refusal may echo; longer or unencodable names are replaced.
MAX_ECHO_CHARS = 64
#: pydantic error types that mean "a bound in the schema was crossed".
BOUND_ERRORS = frozenset({"greater_than_equal", "greater_than", "less_than_equal", "less_than",
                          "string_too_short", "string_too_long", "too_short", "too_long"})


class StrictArgs(BaseModel):
    """Base of every tool's arguments in the series.

    strict: 10 is an int, but True, "10" and 2.5 are not; forbid: unknown names (a smuggled
    "principal", say) are refused rather than ignored.
    """

    model_config = ConfigDict(strict=True, extra="forbid")


def clean_text(value: str) -> bool:
    """True when ``value`` can be stored and shown: valid UTF-8 (no lone surrogates) and no NUL."""
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def echo(name: Any) -> str | None:
    """A field name safe to show the model (never an unencodable or unbounded value)."""
    if not isinstance(name, (str, int)) or isinstance(name, bool):
        return None
    text = str(name) if isinstance(name, str) or abs(name) <= MAX_WIRE_INT else "?"
    if not clean_text(text):
        return "?"
    return text if len(text) <= MAX_ECHO_CHARS else text[:MAX_ECHO_CHARS] + "…"


def _wire(value: Any, path: tuple[Any, ...], depth: int, budget: list[int],
          problems: list[dict[str, Any]]) -> Any:
    """A copy of ``value`` that is safe to validate and format, recording what no schema can report.

    Integers beyond 64 bits are clamped to just past the bound (so "offset 10**5000" is still
    "beyond the end", and a limit that large still fails its ``maximum``), never formatted.
    Unencodable strings, NUL bytes and runaway nesting become problems.
    """
    budget[0] -= 1
    here = ".".join(e for e in (echo(p) for p in path) if e is not None) or None
    if budget[0] < 0 or depth > MAX_ARG_DEPTH:
        problems.append({"field": here, "problem": "too_large"})
        return None
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return value
    if isinstance(value, int):
        return value if abs(value) <= MAX_WIRE_INT else (MAX_WIRE_INT + 1) * (1 if value > 0 else -1)
    if isinstance(value, str):
        if not clean_text(value):
            problems.append({"field": here, "problem": "invalid_text"})
        return value
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str) or not clean_text(k):
                problems.append({"field": "?", "problem": "invalid_name"})
                continue
            out[k] = _wire(v, (*path, k), depth + 1, budget, problems)
        return out
    if isinstance(value, (list, tuple)):
        return [_wire(v, (*path, i), depth + 1, budget, problems) for i, v in enumerate(value)]
    problems.append({"field": here, "problem": "unsupported_type"})
    return None


def _refusal(problems: list[dict[str, Any]], codes: Mapping[str, str]) -> EvidenceError:
    """One error for a list of problems: a field's own code for a crossed bound, else invalid_arguments."""
    for p in problems:
        code = codes.get(p["field"] or "")
        if code is not None and p["problem"] in BOUND_ERRORS:
            return EvidenceError(code)
    return EvidenceError("invalid_arguments", problems=problems[:10])


def check_args(schema: type[BaseModel] | None, tool_input: Any,
               codes: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Validate a model's raw arguments against ``schema``; return them, or raise ``EvidenceError``.

    ``codes`` maps a field to the code its bound violations raise (``limit`` → ``invalid_page_bounds``),
    so the schema stays the single source of truth for bounds while refusals keep stable codes.
    """
    return _validated(schema, tool_input, codes or {})[0]


def _validated(schema: type[BaseModel] | None, tool_input: Any,
               codes: Mapping[str, str]) -> tuple[dict[str, Any], BaseModel | None]:
    """:func:`check_args`: the arguments made safe to format, and the model ``schema`` validated them into (the one
    validation a tool call gets: ``None`` without a schema)."""
    fields = list(schema.model_fields) if schema is not None else []
    if isinstance(tool_input, str) and len(fields) == 1:
        tool_input = {fields[0]: tool_input}  # langchain-core's single-string shorthand
    if not isinstance(tool_input, dict):
        raise EvidenceError("invalid_arguments", problems=[{"field": None, "problem": "not_an_object"}])
    problems: list[dict[str, Any]] = []
    tool_input = _wire(tool_input, (), 0, [MAX_ARG_VALUES], problems)
    if problems:
        raise _refusal(problems, codes)
    if schema is None:
        return tool_input, None
    try:
        return tool_input, schema.model_validate(tool_input)
    except ValidationError as e:
        problems = [
            {"field": ".".join(e for e in (echo(p) for p in err["loc"]) if e is not None) or None,
             "problem": err["type"]}
            for err in e.errors(include_url=False, include_input=False, include_context=False)
        ]
        raise _refusal(problems, codes) from None


class _Checked(dict[str, Any]):
    """Arguments :meth:`EvidenceTool.run` checked: as given (what langchain-core's callbacks show), with the keyword
    arguments the one validation made of them (``kwargs``: every field, defaults filled in as the schema says)."""

    kwargs: dict[str, Any]


class EvidenceTool(StructuredTool):
    """A StructuredTool whose argument violations raise ``EvidenceError`` with a stable code.

    ``bound_codes`` maps fields to the code a crossed bound raises; ``on_refusal`` (set by the tool
    builders) hears about every argument refusal, so a ledger can count what entered the context (and may answer
    with the error the call is refused with instead: a ledger whose refusal cap was reached meanwhile).
    """

    bound_codes: dict[str, str] = {}
    on_refusal: Callable[[str, EvidenceError], EvidenceError | None] | None = None
    #: Runs before the arguments are checked and may refuse the call (e.g. a ledger's refusal cap).
    before_call: Callable[[], None] | None = None
    #: The state the body works on (``evidence_tools``' session: source, principal, ledger), so that a caller may
    #: fetch a message's pages ahead in parallel (the agent loop, notebook 09); ``None`` for other tools.
    session: Any = None

    def _checked(self, tool_input: Any) -> dict[str, Any]:
        schema = self.args_schema if isinstance(self.args_schema, type) and issubclass(self.args_schema, BaseModel) \
            else None
        try:
            if self.before_call is not None:
                self.before_call()
            given, model = _validated(schema, tool_input, self.bound_codes)
        except EvidenceError as e:
            answer = self.on_refusal(self.name, e) if self.on_refusal is not None else None
            if isinstance(answer, EvidenceError) and answer is not e:
                raise answer from None
            raise
        checked = _Checked(given)
        checked.kwargs = given if model is None else {k: getattr(model, k) for k in type(model).model_fields}
        return checked

    def _parse_input(self, tool_input: str | dict[str, Any], tool_call_id: str | None) -> str | dict[str, Any]:
        """What :meth:`run` checked is validated already: its keyword arguments go to the tool as they are, so a call
        is validated once (langchain-core would validate the same model again here); anything else as langchain-core
        does."""
        if isinstance(tool_input, _Checked):
            return dict(tool_input.kwargs)
        return super()._parse_input(tool_input, tool_call_id)

    def run(self, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        """One tool call, in a call scope of its own (:func:`evidence_lib._calls.serving`): what it verifies, fetches
        and reads of a store (one read transaction) is its alone, and no earlier call's."""
        with calls.serving():
            return super().run(self._checked(tool_input), *args, **kwargs)

    async def arun(self, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
        """As :meth:`run`; the body runs in a worker thread (langchain-core's executor), where it opens its own call
        scope: none is held across the await."""
        with calls.serving():
            checked = self._checked(tool_input)
        return await super().arun(checked, *args, **kwargs)


def tool_call(name: str, args: Mapping[str, Any], call_id: str) -> dict[str, Any]:
    """A tool-call dict exactly as a chat model emits it (langchain-core's ``tool_call``)."""
    return dict(_lc_tool_call(name=name, args=dict(args), id=call_id))


def refusal_message(error: BaseException, call_id: str = "", name: str = "") -> ToolMessage:
    """The ``ToolMessage`` a model sees for a refused call (``status="error"``, JSON body)."""
    return ToolMessage(content=to_json(error_payload(error)), tool_call_id=call_id, name=name, status="error")


def run_tool_call(tools: BaseTool | Sequence[BaseTool], call: Any) -> ToolMessage:
    """Run one model tool call; always return a ``ToolMessage``, never raise.

    Refusals become ``status="error"`` with a JSON body ``{"error": code, ...}``; anything
    unexpected becomes ``internal_error``. No stack trace, path or unencodable value reaches the model.
    """
    by_name = {t.name: t for t in ([tools] if isinstance(tools, BaseTool) else tools)}
    call_id = call.get("id") if isinstance(call, Mapping) else None
    call_id = call_id if isinstance(call_id, str) and clean_text(call_id) else ""
    name = call.get("name") if isinstance(call, Mapping) else None
    name = name if isinstance(name, str) and clean_text(name) else ""
    if not call_id:
        return refusal_message(EvidenceError("invalid_arguments", problems=[{"field": "id", "problem": "missing"}]),
                               "", name)
    tool = by_name.get(name)
    if tool is None:
        return refusal_message(EvidenceError("unknown_tool"), call_id, name)
    args = call.get("args")
    if not isinstance(args, dict):
        return refusal_message(
            EvidenceError("invalid_arguments", problems=[{"field": None, "problem": "not_an_object"}]), call_id, name)
    try:
        msg = tool.invoke({"name": name, "args": args, "id": call_id, "type": "tool_call"})
    except Exception as e:  # noqa: BLE001 - the loop must survive any tool failure
        return refusal_message(e, call_id, name)
    if not isinstance(msg, ToolMessage):  # a tool that ignores the tool-call protocol
        msg = ToolMessage(content=to_json(msg) if not isinstance(msg, str) else msg, tool_call_id=call_id, name=name)
    return msg
