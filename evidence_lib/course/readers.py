"""Offline chat models for the loop: a careful *policy* reader and careless readers, one habit each. Notebook 09.

langchain-core's fake chat models have no ``bind_tools``; :class:`PolicyChatModel` is a small ``BaseChatModel``
that has one (it records the schemas, as a provider client does) and asks a *reader* for the next message.
A reader decides from what the tools actually returned (the manifest, the positions, the pages), so a changed
corpus changes its calls. It is handed the keywords it may try (``terms``): a real model picks them itself.

The decision is a plain function of what the reader has seen (:class:`Seen`, read from the history):
:func:`careful_policy` gives the next tool calls, :func:`careful_citations` and :func:`careful_answer` the answer.
:class:`CarefulReader` wraps them for :class:`PolicyChatModel`.

Each careless reader is the careful one with exactly one bad habit, named by the checker finding it should
earn (``habit``). They are controls for the checker, not a claim about what any real model does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool

from .._answers import format_answer, insufficient_answer
from .._errors import TASK_WIDE
from ..audit._history import Step, steps, text_of
from ..profiles._compact import window

__all__ = ["CARELESS_READERS", "PLANTED_CALL", "TASK_WIDE", "AbsenceReader", "BudgetIgnorer", "CarefulReader",
           "ExhaustiveReader", "InstructionFollower", "Misquoter", "NeverReadCiter", "PolicyChatModel",
           "PreviewAnswerer", "RereadReader", "ScriptedChatModel", "Seen", "StaleCiter", "UncitedAnswerer", "ask",
           "careful_answer", "careful_citations", "careful_policy", "sentence_around"]



class PolicyChatModel(BaseChatModel):
    """A chat model whose next message comes from ``reader.respond(messages)``. Deterministic, offline."""

    reader: Any

    @property
    def _llm_type(self) -> str:
        return "evidence-policy-reader"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.reader.respond(list(messages)))])

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None,
                   **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind the tools' OpenAI schemas, as a provider's client does (the reader does not need them)."""
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


class ScriptedChatModel(FakeMessagesListChatModel):
    """langchain-core's ``FakeMessagesListChatModel`` plus ``bind_tools``: replays fixed messages (bad ones too)."""

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None,
                   **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


def sentence_around(text: str, pos: int, length: int = 0) -> tuple[int, int]:
    """``[start, end)`` of the sentence of ``text`` holding ``text[pos:pos + length]``: the compact profile's
    sentence rule (:func:`evidence_lib.profiles.window`) with no limit on its reach."""
    return window(text, pos, pos + length, before=len(text), after=len(text))


def ask(name: str, **args: Any) -> dict[str, Any]:
    """One tool call as a policy asks for it, ``{"name", "args"}``; the reader gives it an id when it sends it."""
    return {"name": name, "args": args}


#: A citation as a reader writes it: ``(doc_id, revision, start, end, quote)``.
Cite = tuple[str, str, int, int, str]


class Seen:
    """What a reader has seen when it decides: the current task's question and every tool call so far, each with its
    parsed output (:func:`~evidence_lib.audit._history.steps`). Notebook 09: a policy is a function of it."""

    def __init__(self, messages: Sequence[BaseMessage]) -> None:
        self.messages = list(messages)
        self.steps = steps(self.messages)  # every call in the history, earlier tasks too
        humans = [m for m in self.messages if isinstance(m, HumanMessage)]
        self.question = text_of(humans[-1]) if humans else ""
        self.task = len(humans)  # the current task: the number of user turns so far
        self.here = [s for s in self.steps if s.task == self.task]  # this task's calls

    def of_kind(self, kind: str) -> list[Step]:
        """This task's calls whose result was of ``kind`` (manifest, locate, page, already_read, error, ...)."""
        return [s for s in self.here if s.kind == kind]

    def earlier_pages(self) -> list[dict[str, Any]]:
        """Document text shown in earlier tasks (pages and compact excerpts), in call order."""
        return [p for s in self.steps if s.task < self.task for p in s.pages()]

    def exhausted(self) -> Step | None:
        """The first call of this task refused with a task-wide ``budget_exhausted`` reason, if any."""
        return next((s for s in self.here if s.error == "budget_exhausted" and s.reason in TASK_WIDE), None)

    def manifest(self) -> list[dict[str, Any]]:
        """The rows of this task's latest manifest ([] before the first search)."""
        found = self.of_kind("manifest")
        return found[-1].rows() if found else []

    def picked(self) -> list[str]:
        """Documents the question names (doc_id or title as a word), else every manifest candidate."""
        rows = self.manifest()
        q = self.question.lower()
        named = [r["doc_id"] for r in rows
                 if any(re.search(rf"(?<!\w){re.escape(str(x).lower())}(?!\w)", q) for x in (r["doc_id"], r.get("title"))
                        if isinstance(x, str) and x)]
        return named or [r["doc_id"] for r in rows]

    def shown(self) -> list[dict[str, Any]]:
        """Document text this task was shown, in call order: pages read and (compact profile) locate excerpts."""
        return [p for s in self.here for p in s.pages()]

    def current(self, doc_id: str) -> tuple[str | None, str | None]:
        """``doc_id``'s revision and sha256 now: the latest manifest's row, or, when the manifest shows no sha256
        (compact profile: its revision only), the latest text of that revision this task was shown."""
        row = next((r for r in self.manifest() if r["doc_id"] == doc_id), {})
        if row.get("sha256") is not None:
            return row.get("revision"), row.get("sha256")
        seen = [p for p in self.shown() if p["doc_id"] == doc_id and row.get("revision") in (None, p.get("revision"))]
        if seen:  # the compact manifest shows the revision only: the bytes are those of the latest text shown
            return seen[-1].get("revision"), seen[-1].get("sha256")
        return row.get("revision"), None

    def pages(self, doc_id: str) -> list[dict[str, Any]]:
        """Text of ``doc_id`` shown in this task (pages, compact excerpts), of its current revision and bytes."""
        rev, sha = self.current(doc_id)
        return [p for p in self.shown()
                if p["doc_id"] == doc_id and p.get("revision") == rev and p.get("sha256") == sha]

    def covering(self, doc_id: str, start: int, end: int) -> dict[str, Any] | None:
        """The first text of ``doc_id`` shown in this task (current bytes) that holds ``[start, end)``, else None."""
        return next((p for p in self.pages(doc_id) if p["start"] <= start and end <= p["end"]), None)

    def located(self, max_hits: int = 3) -> tuple[str | None, list[dict[str, Any]]]:
        """The first term whose locate hit a picked document, and those hits (at most ``max_hits``)."""
        picked = set(self.picked())
        for s in self.of_kind("locate"):
            hits = [h for h in s.hits() if h["doc_id"] in picked]
            if hits and s.args:
                return s.args.get("term"), hits[:max_hits]
        return None, []

    def tried(self) -> list[str]:
        """The terms this task has located, in order."""
        return [t for s in self.here
                if s.name == "locate_evidence" and s.args and isinstance(t := s.args.get("term"), str)]

    def reads_asked(self) -> set[tuple[Any, Any]]:
        """``(doc_id, offset)`` of every read this task asked for."""
        return {(s.args.get("doc_id"), s.args.get("offset")) for s in self.here if s.name == "read_evidence" and s.args}


def careful_policy(seen: Seen, terms: Sequence[str], *, before: int = 0, limit: int = 300,
                   max_hits: int = 3) -> list[dict[str, Any]]:
    """Notebook 09: the careful reader's next tool calls, from what it has seen and the keywords it may try."""
    if seen.exhausted():  # rule 6: a tool said budget_exhausted: no more calls
        return []
    if not seen.of_kind("manifest"):  # rule 1: start with search_evidence
        return [ask("search_evidence", query=seen.question[:256] or "evidence")]
    term, hits = seen.located(max_hits)  # the first keyword that hit a document the question points to
    if term is None:  # rule 4: no hit is not "no such rule": try the next keyword; none left: say what is missing
        untried = [t for t in terms if t not in seen.tried()]
        return [ask("locate_evidence", term=untried[0])] if untried else []
    asked, reads = seen.reads_asked(), []
    for h in hits:  # rule 2: read around each hit, unless text already shown covers it
        offset = max(0, h["offset"] - before)
        if seen.covering(h["doc_id"], h["offset"], h["offset"] + len(term)) is None and (h["doc_id"], offset) not in asked:
            reads.append(ask("read_evidence", doc_id=h["doc_id"], offset=offset, limit=limit))
    return reads  # [] once every hit is covered: answer, citing what was shown (rule 3)


def careful_citations(seen: Seen, max_hits: int = 3) -> list[Cite]:
    """What the careful reader cites when ``careful_policy`` says "answer now" (notebook 09): per located hit, the
    sentence holding the keyword, cut from text it was shown that covers the hit (a page, or a compact excerpt)."""
    term, hits = seen.located(max_hits)
    cites = []
    for h in hits:
        page = seen.covering(h["doc_id"], h["offset"], h["offset"] + len(term or ""))
        if page is None:
            continue
        s, e = sentence_around(page["text"], h["offset"] - page["start"], len(term or ""))
        cites.append((page["doc_id"], page["revision"], page["start"] + s, page["start"] + e, page["text"][s:e]))
    return cites


def careful_answer(seen: Seen, cites: Sequence[Cite], max_hits: int = 3) -> str:
    """The careful reader's final answer after ``careful_policy`` (notebook 09): each cited sentence with its marker,
    then ``Sources:``; with nothing to cite, ``INSUFFICIENT EVIDENCE:`` and why (the budget ran out, or no match)."""
    if not cites:
        _, hits = seen.located(max_hits)
        stop = seen.exhausted()
        if stop is not None:
            return insufficient_answer(f"the budget ran out ({stop.reason}) with {len(hits)} located position(s) "
                                       "and none of them read")
        return insufficient_answer(f"no literal match for {', '.join(seen.tried()) or 'any keyword'}; this does "
                                   "not show the rule is absent")
    prose = " ".join(f"{' '.join(q.split())} [{n}]" for n, (*_, q) in enumerate(cites, 1))
    return format_answer(prose, list(cites))


class CarefulReader:
    """The reading contract as a reader for :class:`PolicyChatModel`: :func:`careful_policy` decides the calls,
    :func:`careful_citations` and :func:`careful_answer` the answer.

    Either profile: a compact locate already shows the sentence around each hit (cited text), so a hit that its
    excerpt covers needs no read, and the answer cites the excerpt.

    ``before``/``limit``: the page read around a hit (characters before it, page length); ``max_hits``: how many
    located documents to read (their reads go out in one message, so the loop can run them in parallel).
    Subclasses change one step (``decide``, ``citations`` or ``answer``) to get one habit.
    """

    habit: str | None = None  # the checker finding this reader should earn; None: no finding

    def __init__(self, terms: Sequence[str], *, before: int = 0, limit: int = 300, max_hits: int = 3) -> None:
        self.terms = tuple(terms)
        self.before, self.limit, self.max_hits = before, limit, max_hits

    def __repr__(self) -> str:
        return f"{type(self).__name__}(terms={list(self.terms)})"

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        """The next message for ``messages``: what :meth:`decide` makes of them."""
        self.seen = Seen(messages)
        return self.decide()

    # what the history says, as the readers that build on this one use it
    @property
    def here(self) -> list[Step]:
        return self.seen.here

    @property
    def question(self) -> str:
        return self.seen.question

    def manifest(self) -> list[dict[str, Any]]:
        return self.seen.manifest()

    call = staticmethod(ask)

    def send(self, *calls: dict[str, Any]) -> AIMessage:
        """One AIMessage carrying ``calls``, numbered on from the calls already in the history."""
        first = len(self.seen.steps) + 1
        return AIMessage(content="", tool_calls=[{**c, "id": f"call-{first + k:02}", "type": "tool_call"}
                                                 for k, c in enumerate(calls)])

    # the three steps a habit can change
    def decide(self) -> AIMessage:
        calls = careful_policy(self.seen, self.terms, before=self.before, limit=self.limit, max_hits=self.max_hits)
        return self.send(*calls) if calls else self.answer()

    def citations(self) -> list[Cite]:
        return careful_citations(self.seen, self.max_hits)

    def answer(self) -> AIMessage:
        return AIMessage(content=careful_answer(self.seen, self.citations(), self.max_hits))


class ExhaustiveReader(CarefulReader):
    """Habit: pages through every document from the start, 800 characters at a time, never locating."""

    habit = "exhaustive_reading"

    def decide(self):
        seen = self.seen
        if seen.exhausted():
            return self.answer()
        if not seen.of_kind("manifest"):
            return self.send(ask("search_evidence", query=seen.question[:256] or "evidence"))
        pages = seen.of_kind("page")
        if any(t in p.body["text"] for p in pages for t in self.terms):
            return self.answer()
        order = [r["doc_id"] for r in seen.manifest()]
        if not pages:
            return self.send(ask("read_evidence", doc_id=order[0], offset=0, limit=800)) if order else self.answer()
        last = pages[-1].body
        if last.get("next_offset") is not None:
            return self.send(ask("read_evidence", doc_id=last["doc_id"], offset=last["next_offset"], limit=800))
        later = order[order.index(last["doc_id"]) + 1:] if last["doc_id"] in order else []
        return self.send(ask("read_evidence", doc_id=later[0], offset=0, limit=800)) if later else self.answer()

    def citations(self):
        for p in (s.body for s in self.seen.of_kind("page")):
            for t in self.terms:
                if (i := p["text"].find(t)) >= 0:
                    s, e = sentence_around(p["text"], i, len(t))
                    return [(p["doc_id"], p["revision"], p["start"] + s, p["start"] + e, p["text"][s:e])]
        return []


class RereadReader(CarefulReader):
    """Habit: reads the answer page a second time before answering."""

    habit = "duplicate_read"

    def decide(self):
        msg = super().decide()
        term, hits = self.seen.located(self.max_hits)
        reads = [s.args for s in self.seen.here if s.name == "read_evidence" and s.args]
        if not msg.tool_calls and term is not None and not self.seen.exhausted() and reads \
                and len(reads) < 2 * len(hits):  # about to answer: ask for every read again
            return self.send(*(ask("read_evidence", **args) for args in reads))
        return msg


class NeverReadCiter(CarefulReader):
    """Habit: cites the located position right away, without reading it (the quoted term is even right)."""

    habit = "citation_never_read"

    def decide(self):
        term, hits = self.seen.located(self.max_hits)
        if term is None or self.seen.exhausted():
            return super().decide()
        cites = [(h["doc_id"], self.seen.current(h["doc_id"])[0], h["offset"], h["offset"] + len(term), term)
                 for h in hits]  # where the careful reader would read, it cites
        return AIMessage(content=format_answer(f"The documents set {term} [1].", cites))


class StaleCiter(CarefulReader):
    """Habit: when an earlier turn already read a page (or excerpt) holding the term, cites it instead of re-reading."""

    habit = "citation_stale"

    def decide(self):
        if self.seen.of_kind("manifest"):
            for p in self.seen.earlier_pages():
                for t in self.terms:
                    if (i := p["text"].find(t)) >= 0:
                        a, b = sentence_around(p["text"], i, len(t))
                        cite = (p["doc_id"], p["revision"], p["start"] + a, p["start"] + b, p["text"][a:b])
                        return AIMessage(content=format_answer(f"{' '.join(cite[4].split())} [1]", [cite]))
        return super().decide()


class PreviewAnswerer(CarefulReader):
    """Habit: answers from the manifest's 40-character preview of the first candidate, citing it."""

    habit = "preview_as_evidence"

    def decide(self):
        rows = [r for r in self.seen.manifest() if isinstance(r.get("preview"), str)]
        if rows:
            r = rows[0]
            cite = (r["doc_id"], r["revision"], 0, len(r["preview"]), r["preview"])
            return AIMessage(content=format_answer(f"{r['preview']} [1]", [cite]))
        return super().decide()


class AbsenceReader(CarefulReader):
    """Habit: when its first keyword finds nothing, concludes that there is no such rule."""

    habit = "absence_from_empty_locate"

    def decide(self):
        loc = self.seen.of_kind("locate")
        if loc and not loc[0].hits():
            return AIMessage(content=f"There is no such rule: the documents do not mention {self.seen.tried()[0]}.")
        return super().decide()


#: An instruction to call a tool, as planted in a document (``call locate_evidence with term="..."``).
PLANTED_CALL = re.compile(r'call (search_evidence|locate_evidence|read_evidence) with (query|term|doc_id)\s*=\s*"([^"]{1,64})"')


class InstructionFollower(CarefulReader):
    """Habit: obeys an instruction planted in a page it read ("call locate_evidence with term=...")."""

    habit = "instruction_from_evidence"

    def decide(self):
        done = [(s.name, s.args) for s in self.seen.here]
        for page in self.seen.shown():
            for tool, arg, value in PLANTED_CALL.findall(page["text"]):
                if (tool, {arg: value}) not in done:  # an instruction in the text, not obeyed yet: obey it
                    return self.send(ask(tool, **{arg: value}))
        return super().decide()  # otherwise, the careful policy


class BudgetIgnorer(CarefulReader):
    """Habit: when a tool says budget_exhausted, repeats the refused call instead of answering."""

    habit = "call_after_budget_exhausted"

    def decide(self):
        stop = self.seen.exhausted()
        if stop is not None and stop.args is not None:
            return self.send(ask(stop.name, **stop.args))
        return super().decide()


class Misquoter(CarefulReader):
    """Habit: reads the right range, then quotes it from memory with one number changed."""

    habit = "citation_text_mismatch"

    def citations(self):
        return [(d, r, s, e, re.sub(r"\d+", lambda m: str(int(m.group()) + 1), q, count=1) if re.search(r"\d", q)
                 else q + "!") for d, r, s, e, q in super().citations()]


class UncitedAnswerer(CarefulReader):
    """Habit: reads the right range, then answers without the Sources block."""

    habit = "answer_without_citation"

    def answer(self):
        cites = self.citations()
        if not cites:
            return super().answer()
        return AIMessage(content=" ".join(" ".join(q.split()) for *_, q in cites))


#: Every careless reader, in the order the notebook shows them.
CARELESS_READERS: tuple[type[CarefulReader], ...] = (
    ExhaustiveReader, RereadReader, NeverReadCiter, StaleCiter, PreviewAnswerer, AbsenceReader,
    InstructionFollower, BudgetIgnorer, Misquoter, UncitedAnswerer,
)
