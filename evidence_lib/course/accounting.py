"""Full-context accounting: what every model call is sent and returns, not only the tool outputs. Notebook 09.

Article 1's byte table counts tool outputs only; a provider is sent, on *every* call, the system prompt, the
bound tool schemas and the whole conversation so far (tool-call arguments, tool outputs, message wrappers),
and returns a message. :func:`account` measures each part in UTF-8 bytes and cl100k tokens, per model call and
cumulative. A message's *wrapper* is its OpenAI chat envelope with content and arguments emptied (role, ids,
names); providers add a few tokens per message of their own, which no offline count can know.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from .._answers import format_answer
from .._documents import Document, baseline_dump
from .._errors import to_json
from .._measure import Size
from ..audit._history import text_of
from ..profiles import ARTICLE, profile_of
from .readers import CarefulReader, sentence_around

__all__ = ["DUMP_SYSTEM_PROMPT", "CONTEXT_PARTS", "Accounting", "CallCost", "DumpReader", "PaddedReader",
           "account", "break_even", "dump_tools", "padded_totals", "run_dump", "schema_text", "snippet_corpus"]

CONTEXT_PARTS = ("system", "schemas", "user", "tool_args", "tool_outputs", "wrappers", "answer")

#: The baseline's prompt: same answer format, no reading contract (there is nothing to read on demand).
DUMP_SYSTEM_PROMPT = """\
Answer the question from the documents retrieve_documents returns. Cite every claim.
Answer format: prose with markers [1], [2], then a line "Sources:" and one line per marker:
[1] doc_id@revision [start, end) "exact quoted text\""""


ZERO = Size(0, 0, 0, 0)


@lru_cache(maxsize=4096)
def _size(text: str) -> Size:
    """:meth:`Size.of` one part's text, cached (a history repeats its system prompt, schemas and wrappers)."""
    return Size.of(text) if text else ZERO


def _sum(sizes: Sequence[Size]) -> Size:
    return sum(sizes, ZERO)


def schema_text(tools: Sequence[BaseTool]) -> str:
    """The bound tool schemas as sent to an OpenAI-style API (``convert_to_openai_tool``), as JSON."""
    return to_json([convert_to_openai_tool(t) for t in tools])


def _parts(m: BaseMessage) -> dict[str, Size]:
    """One message split into the parts a provider is sent (or returns)."""
    text = text_of(m)
    if isinstance(m, SystemMessage):
        return {"system": _size(text), "wrappers": _size(to_json({"role": "system", "content": ""}))}
    if isinstance(m, HumanMessage):
        return {"user": _size(text), "wrappers": _size(to_json({"role": "user", "content": ""}))}
    if isinstance(m, ToolMessage):
        env: dict[str, Any] = {"role": "tool", "tool_call_id": m.tool_call_id, "content": ""}
        return {"tool_outputs": _size(text), "wrappers": _size(to_json(env))}
    if isinstance(m, AIMessage):
        calls: list[tuple[str | None, str | None, str]] = [(c.get("id"), c.get("name"), to_json(c.get("args")))
                                                           for c in m.tool_calls]
        calls += [(c.get("id"), c.get("name"), a if isinstance(a := c.get("args"), str) else "")
                  for c in m.invalid_tool_calls]
        env = {"role": "assistant", "content": "",
               "tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": ""}} for i, n, _ in calls]}
        return {"answer": _size(text), "tool_args": _sum([_size(a) for *_, a in calls]),
                "wrappers": _size(to_json(env if calls else {"role": "assistant", "content": ""}))}
    return {"wrappers": _size(text)}


def _add(a: dict[str, Size], b: dict[str, Size]) -> dict[str, Size]:
    return {k: a.get(k, ZERO) + b.get(k, ZERO) for k in CONTEXT_PARTS if k in a or k in b}


@dataclass(frozen=True)
class CallCost:
    """One model call: what it was sent (``input``), what it returned (``output``), the running total."""

    call: int
    input: Size
    output: Size
    cumulative: Size
    parts: dict[str, Size]  # input and output together, by part
    returned: str  # "2 tool calls" or "final answer"


@dataclass
class Accounting:
    """Every model call of one conversation, measured. ``label`` names the row in tables."""

    label: str
    calls: list[CallCost] = field(default_factory=list)

    @property
    def total(self) -> Size:
        return self.calls[-1].cumulative if self.calls else ZERO

    def parts(self) -> dict[str, Size]:
        out: dict[str, Size] = {}
        for c in self.calls:
            out = _add(out, c.parts)
        return {k: out.get(k, ZERO) for k in CONTEXT_PARTS}

    def table(self) -> str:
        """Per call and cumulative, in bytes and tokens (fixed width, stable for notebooks)."""
        head = (f"{'call':>4}  {'returned':<14} {'in bytes':>9} {'in tokens':>9} {'out bytes':>9} {'out tok':>7}"
                f" {'cum bytes':>10} {'cum tokens':>10}")
        rows = [f"{c.call:>4}  {c.returned:<14} {c.input.utf8_bytes:>9,} {c.input.cl100k_tokens:>9,} {c.output.utf8_bytes:>9,} "
                f"{c.output.cl100k_tokens:>7,} {c.cumulative.utf8_bytes:>10,} {c.cumulative.cl100k_tokens:>10,}" for c in self.calls]
        return "\n".join([f"{self.label}:", head, *rows])


def account(messages: Sequence[BaseMessage], tools: Sequence[BaseTool], label: str = "") -> Accounting:
    """Measure every model call in ``messages`` (one per AIMessage), with ``tools``' schemas sent on each."""
    schemas = {"schemas": _size(schema_text(tools))} if tools else {}
    per = [_parts(m) for m in messages]
    out = Accounting(label)
    sent: dict[str, Size] = dict(schemas)
    cumulative = ZERO
    for i, m in enumerate(messages):
        if isinstance(m, AIMessage):
            inp, outp = _sum(list(sent.values())), _sum(list(per[i].values()))
            cumulative += inp + outp
            n = len(m.tool_calls) + len(m.invalid_tool_calls)
            returned = f"{n} tool call{'s' if n != 1 else ''}" if n else "final answer"
            out.calls.append(CallCost(len(out.calls) + 1, inp, outp, cumulative, _add(sent, per[i]), returned))
        sent = _add(sent, per[i])
    return out


def break_even(dump: Size, totals: Sequence[tuple[int, Size]], unit: str = "utf8_bytes") -> int | None:
    """The first ``n`` of ``(n, total)`` pairs whose total costs more than ``dump`` in ``unit`` (a :class:`Size`
    field: ``utf8_bytes`` or ``cl100k_tokens``), else ``None``."""
    return next((n for n, t in totals if getattr(t, unit) > getattr(dump, unit)), None)


# -- the baseline: one tool that dumps every candidate's full text ---------------------------
def dump_tools(docs: Sequence[Document]) -> list[BaseTool]:
    """The naive RAG tool as a LangChain tool: ``retrieve_documents`` returns every candidate's full text (the dump
    measured since the first notebook; ``run_dump`` runs it in notebook 09)."""
    def retrieve_documents(query: str) -> str:
        return baseline_dump(list(docs))

    return [StructuredTool.from_function(retrieve_documents, name="retrieve_documents",
                                         description="Return the documents retrieved for the question, full text.")]


class DumpReader(CarefulReader):
    """The baseline's model: one retrieval call, then the same answer (offsets computed from the dumped text)."""

    def decide(self):
        done = [s for s in self.here if s.name == "retrieve_documents" and isinstance(s.body, list)]
        if not done:
            return self.send(self.call("retrieve_documents", query=self.question[:256]))
        docs = json.loads(done[-1].content)
        for d in docs:
            for t in self.terms:
                if (i := d["text"].find(t)) >= 0:
                    s, e = sentence_around(d["text"], i, len(t))
                    cite = (d["id"], d["revision"], s, e, d["text"][s:e])
                    return AIMessage(content=format_answer(f"{' '.join(cite[4].split())} [1]", [cite]))
        return self.answer()


class PaddedReader(CarefulReader):
    """The careful reader plus ``extra`` reads nobody needed, before answering (for the break-even).

    ``mode``: ``"turns"`` one 800-character page per model call, ``"batch"`` all pages in one message,
    ``"idle"`` one tiny call per model call (a locate of a term that is not there): turns that read nothing.
    """

    def __init__(self, terms: Sequence[str], extra: int = 0, mode: str = "turns", **kw: Any) -> None:
        super().__init__(terms, **kw)
        self.extra, self.mode = extra, mode

    def _padding(self) -> list[dict[str, Any]]:
        docs = [r["doc_id"] for r in self.manifest()]
        if self.mode == "idle":
            return [self.call("locate_evidence", term=f"no-such-term-{k}") for k in range(self.extra)]
        pages = [(d, o) for o in range(0, 10**6, 800) for d in docs][: self.extra]
        return [self.call("read_evidence", doc_id=d, offset=o, limit=800) for d, o in pages]

    def answer(self):
        made = sum(1 for s in self.here if s.args and (str(s.args.get("term", "")).startswith("no-such-term-")
                                                       or s.args.get("limit") == 800))
        todo = self._padding()[made:]
        if todo and self.citations():
            return self.send(*(todo if self.mode == "batch" else todo[:1]))
        return super().answer()


def snippet_corpus() -> list[Document]:
    """The "when not to bother" case (article 1, section 08): three short snippets."""
    from .article import ANSWER, FILLER, NO_ANSWER, REVISION

    return [Document(f"s{i}", f"snippet {i}", REVISION, text) for i, text in enumerate([FILLER, ANSWER, NO_ANSWER])]


# -- measured runs: the dump, the protocol, and the protocol padded with reads nobody needed ---------------
def run_dump(docs: Sequence[Document], terms: Sequence[str], question: str) -> tuple[list[BaseMessage], Accounting]:
    """The baseline conversation (one retrieval of every full text, then the answer), measured."""
    from ..integrations.langchain._loop import run_loop
    from .readers import PolicyChatModel

    tools = dump_tools(docs)
    result = run_loop(PolicyChatModel(reader=DumpReader(terms)), tools, question, system_prompt=DUMP_SYSTEM_PROMPT)
    return result.messages, account(result.messages, tools, "dump")


def padded_totals(root: str | Path, mode: str, extras: Sequence[int], docs: Sequence[Document] | None = None,
                  terms: Sequence[str] = ("单批上限",), question: str | None = None,
                  profile: str = "article") -> list[tuple[int, Size]]:
    """Cumulative cost of the careful run plus ``n`` unneeded reads (or idle turns), for each ``n`` in ``extras``.

    No budget and no idle stop here: this measures what the budget and the stop rules exist to prevent.
    ``profile`` is the tools' reply format (the system prompt follows it).
    """
    from ..integrations.langchain._loop import LoopRules
    from .article import QUESTION
    from .tasks import UNLIMITED, run_reader

    rules = LoopRules(max_turns=max(extras, default=0) + 8, max_calls_per_message=max(extras, default=0) + 4,
                      max_idle_rounds=10**6)
    shown = profile_of(profile)
    prefix = "" if shown is ARTICLE else f"{shown.name}-"  # the article's runs keep their folder names
    out = []
    for n in extras:
        where = Path(root) / f"{prefix}{mode}-{n}"
        run = run_reader(PaddedReader(terms, extra=n, mode=mode), where,
                         list(docs) if docs is not None else None, budget=UNLIMITED, rules=rules,
                         question=question or QUESTION, profile=profile)
        out.append((n, account(run.messages, run.tools).total))
    return out
