"""The three-tool protocol: search_evidence, locate_evidence, read_evidence. Taught in notebook 02.

``evidence_tools(index)`` returns real LangChain tools with strict argument schemas. Every
refusal raises :class:`~evidence_lib.errors.EvidenceError`; :func:`run_tool_call` runs one
tool call the way an agent loop would and always returns a ``ToolMessage``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .access import Principal, allowed
from .errors import EvidenceError, error_payload, to_json
from .index import EvidenceIndex
from .ledger import Ledger
from .locate import LocateOptions, locate

MAX_PAGE_CHARS = 800
DEFAULT_PAGE_CHARS = 300
MAX_QUERY_CHARS = 256
MANIFEST_LIMIT = 20


class StrictArgs(BaseModel):
    """Base of every tool's arguments in the series.

    strict: 10 is an int, but True, "10" and 2.5 are not; forbid: unknown names (a smuggled
    "principal", say) are refused rather than ignored.
    """

    model_config = ConfigDict(strict=True, extra="forbid")


class SearchArgs(StrictArgs):
    query: str = Field(description="What you are looking for, in words (1-256 characters).")


class LocateArgs(StrictArgs):
    term: str = Field(description="A literal keyword to find (1-64 characters).")


class ReadArgs(StrictArgs):
    doc_id: str = Field(description="A doc_id from the search_evidence manifest.")
    offset: int = Field(0, description="First character to read (0-based, a Python string index).",
                        json_schema_extra={"minimum": 0})
    limit: int = Field(DEFAULT_PAGE_CHARS, description="Characters to read, 1-800.",
                       json_schema_extra={"minimum": 1, "maximum": MAX_PAGE_CHARS})


class EvidenceTool(StructuredTool):
    """A StructuredTool whose schema violations raise ``EvidenceError("invalid_arguments")``.

    ``on_refusal`` (set by :func:`evidence_tools`) hears about those refusals too, so a ledger
    records every refused call, not only the ones the tool body refused.
    """

    on_refusal: Callable[[str, EvidenceError], None] | None = None

    def _parse_input(self, tool_input: str | dict[str, Any], tool_call_id: str | None) -> str | dict[str, Any]:
        try:
            if not isinstance(tool_input, (str, dict)):
                raise EvidenceError("invalid_arguments", problems=[{"field": None, "problem": "not_an_object"}])
            try:
                return super()._parse_input(tool_input, tool_call_id)
            except ValidationError as e:
                problems = [
                    {"field": ".".join(str(p) for p in err["loc"]) or None, "problem": err["type"]}
                    for err in e.errors(include_url=False, include_input=False)
                ]
                raise EvidenceError("invalid_arguments", problems=problems) from None
        except EvidenceError as e:
            if self.on_refusal is not None:
                self.on_refusal(self.name, e)
            raise


@dataclass
class _Session:
    """What the tools share: the index, the principal bound by the application, the ledger."""

    index: EvidenceIndex
    principal: Principal | None
    ledger: Ledger | None
    locate_options: LocateOptions
    manifest_limit: int

    def guarded(self, tool: str, fn, *args):
        try:
            return fn(*args)
        except EvidenceError as e:
            self.record_refusal(tool, e)
            raise

    def record_refusal(self, tool: str, error: EvidenceError) -> None:
        if self.ledger is not None:
            self.ledger.refused(tool, error.code, error.details.get("reason"))

    # -- search ---------------------------------------------------------------------------
    def search(self, query: str) -> str:
        if not 1 <= len(query) <= MAX_QUERY_CHARS:
            raise EvidenceError("invalid_query")
        if self.ledger:
            self.ledger.admit("search_evidence")
        # Teaching version: the candidate set is fixed; the query is not used for ranking.
        # Permission filtering happens here, before any title, preview or count is built.
        content = to_json([self._manifest_row(e) for e in self.candidates()])
        return self._charge("search_evidence", content)

    def candidates(self):
        """This question's candidate set: what the principal may discover, capped at the manifest limit."""
        return self.index.visible(self.principal, "discover")[: self.manifest_limit]

    def readable_candidates(self):
        """The candidates locate may scan: the same set as the manifest, minus what may not be read."""
        return [e for e in self.candidates() if allowed(e.access, self.principal, "read")]

    def _manifest_row(self, entry) -> dict[str, object]:
        row = entry.manifest_entry()
        if not allowed(entry.access, self.principal, "read"):
            # May know it exists, may not read it: no text (preview) and no fingerprint of the text.
            row["sha256"] = row["preview"] = None
        return row

    # -- locate ---------------------------------------------------------------------------
    def locate(self, term: str, cursor: int = 0) -> str:
        if cursor < 0:  # only the paged tool has a cursor; the article's tool always passes 0
            raise EvidenceError("invalid_page_bounds")
        opts = self.locate_options
        if not 1 <= len(term) <= opts.max_term_chars:
            raise EvidenceError("invalid_term")
        if self.ledger:
            self.ledger.admit("locate_evidence")
        readable = self.readable_candidates()
        texts = ((e.doc_id, self.index.snapshot(e.doc_id, self.principal).text) for e in readable)
        content = to_json(locate(texts, term, opts, cursor=cursor))
        return self._charge("locate_evidence", content)

    # -- read -----------------------------------------------------------------------------
    def read(self, doc_id: str, offset: int = 0, limit: int = DEFAULT_PAGE_CHARS) -> str:
        # Bounds first: nothing is looked up or opened for an impossible page.
        if offset < 0 or not 1 <= limit <= MAX_PAGE_CHARS:
            raise EvidenceError("invalid_page_bounds")
        entry = self.index.entry(doc_id, self.principal, "read")  # re-checked on every call
        if offset > entry.chars:
            raise EvidenceError("offset_exceeds_document", total_chars=entry.chars)
        if self.ledger:
            self.ledger.admit("read_evidence")
        snap = self.index.snapshot(entry.doc_id, self.principal)
        text = snap.text
        end = min(offset + limit, len(text))
        if self.ledger:
            earlier = self.ledger.covering(entry.doc_id, entry.revision, offset, end)
            if earlier:  # answered from memory: costs a call, not a read of the document
                content = to_json({
                    "status": "already_read", "doc_id": entry.doc_id, "revision": entry.revision,
                    "start": offset, "end": end, "covered_by": [list(r) for r in earlier],
                })
                return self._charge("read_evidence", content, status="already_read",
                                    covered=(entry.doc_id, offset, end))
            self.ledger.admit("read_evidence", doc_id=entry.doc_id)
        content = to_json({
            "doc_id": entry.doc_id,
            "revision": entry.revision,
            "sha256": entry.sha256,
            "start": offset,
            "end": end,
            "total_chars": len(text),
            "next_offset": end if end < len(text) else None,
            "text": text[offset:end],
        })
        return self._charge("read_evidence", content, read=(entry.doc_id, entry.revision, offset, end))

    def _charge(self, tool: str, content: str, **kw: Any) -> str:
        if self.ledger is not None:
            self.ledger.charge(tool, content, **kw)
        return content


SEARCH_DESCRIPTION = (
    "Return a manifest of the evidence candidates for this question: doc_id, title, revision, chars, "
    "sha256 and a 40-character preview per document. Never returns full text; the preview is only a "
    "hint for choosing what to read. Teaching version: the candidate set is fixed, the query is not used for ranking."
)
LOCATE_DESCRIPTION = (
    "Find a literal keyword in the evidence you may read. Returns doc_id and character offset of the first "
    "occurrence per document, at most 5 positions, never text. An empty list means no literal match, "
    "not that the answer does not exist."
)
READ_DESCRIPTION = (
    "Read up to 800 characters of one document from the manifest, starting at a character offset. Returns "
    "the text with doc_id, revision, sha256, the half-open range [start, end), total_chars and next_offset "
    "(null at the end). Cite doc_id, revision and [start, end)."
)


def evidence_tools(
    index: EvidenceIndex,
    *,
    principal: Principal | None = None,
    ledger: Ledger | None = None,
    locate_options: LocateOptions | None = None,
    manifest_limit: int = MANIFEST_LIMIT,
) -> list[BaseTool]:
    """The three tools over ``index``, in protocol order: search, locate, read.

    ``principal`` is bound here by the application (never a tool argument); ``ledger`` shares one
    budget across the three tools; ``locate_options`` switches on the production behaviours of
    :mod:`evidence_lib.locate`. Taught in notebook 02 (basics), 04 (principal), 05 (ledger).
    """
    s = _Session(index, principal, ledger, locate_options or LocateOptions(), manifest_limit)

    def search_evidence(query: str) -> str:
        return s.guarded("search_evidence", s.search, query)

    if s.locate_options.paged:
        class PagedLocateArgs(LocateArgs):
            cursor: int = Field(0, description="Where the previous batch stopped (its next_cursor).",
                                json_schema_extra={"minimum": 0})

        def locate_evidence(term: str, cursor: int = 0) -> str:
            return s.guarded("locate_evidence", s.locate, term, cursor)

        locate_schema: type[BaseModel] = PagedLocateArgs
        locate_description = (
            "Find every occurrence of a keyword in the evidence you may read, in batches. Returns matches "
            "(doc_id, offset), next_cursor (null when done) and a note when there is no match."
        )
    else:
        def locate_evidence(term: str) -> str:  # type: ignore[misc]
            return s.guarded("locate_evidence", s.locate, term)

        locate_schema, locate_description = LocateArgs, LOCATE_DESCRIPTION

    def read_evidence(doc_id: str, offset: int = 0, limit: int = DEFAULT_PAGE_CHARS) -> str:
        return s.guarded("read_evidence", s.read, doc_id, offset, limit)

    tools = [
        EvidenceTool.from_function(search_evidence, name="search_evidence",
                                   description=SEARCH_DESCRIPTION, args_schema=SearchArgs),
        EvidenceTool.from_function(locate_evidence, name="locate_evidence",
                                   description=locate_description, args_schema=locate_schema),
        EvidenceTool.from_function(read_evidence, name="read_evidence",
                                   description=READ_DESCRIPTION, args_schema=ReadArgs),
    ]
    for t in tools:
        t.on_refusal = s.record_refusal
    return tools


def tool_call(name: str, args: Mapping[str, Any], call_id: str) -> dict[str, Any]:
    """A tool-call dict exactly as a chat model emits it (``type="tool_call"``)."""
    return {"name": name, "args": dict(args), "id": call_id, "type": "tool_call"}


def run_tool_call(tools: BaseTool | Sequence[BaseTool], call: Mapping[str, Any]) -> ToolMessage:
    """Run one model tool call; always return a ``ToolMessage``, never raise.

    Refusals become ``status="error"`` with a JSON body ``{"error": code, ...}``; anything
    unexpected becomes ``internal_error``. No stack trace or path ever reaches the model.
    """
    by_name = {t.name: t for t in ([tools] if isinstance(tools, BaseTool) else tools)}
    call_id = call.get("id") if isinstance(call, Mapping) else None
    call_id = call_id if isinstance(call_id, str) else ""
    name = call.get("name") if isinstance(call, Mapping) else None
    name = name if isinstance(name, str) else ""

    def refuse(err: BaseException) -> ToolMessage:
        return ToolMessage(content=to_json(error_payload(err)), tool_call_id=call_id, name=name, status="error")

    if not isinstance(call, Mapping) or not call_id:
        return refuse(EvidenceError("invalid_arguments", problems=[{"field": "id", "problem": "missing"}]))
    tool = by_name.get(name)
    if tool is None:
        return refuse(EvidenceError("unknown_tool"))
    args = call.get("args")
    if not isinstance(args, dict):
        return refuse(EvidenceError("invalid_arguments", problems=[{"field": None, "problem": "not_an_object"}]))
    try:
        return tool.invoke({"name": name, "args": args, "id": call_id, "type": "tool_call"})
    except EvidenceError as e:
        return refuse(e)
    except Exception as e:  # noqa: BLE001 - the loop must survive any tool failure
        return refuse(e)
