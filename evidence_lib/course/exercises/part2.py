"""Workshop part 2: the three-tool protocol (notebook 02's ideas).

Exercises: q1 write a page reader that matches ``read_evidence`` (yourself: delegating to the library's
the library's own page arithmetic is refused, with the reason), q2 page through a whole document with
``next_offset``, q3 name the one code a call that breaks two rules gets (the order of the checks, which notebook 02
shows rule by rule), q4 measure the byte reduction honestly, as a function the checker runs on sessions no notebook
prints. Used by ``notebooks/exercises/workshop_part2.ipynb``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from types import CodeType
from typing import Any

from langchain_core.messages import ToolMessage

from ... import _paging as paging
from ..._documents import Document, baseline_dump
from ..._errors import ERROR_CODES
from ..._index import EvidenceIndex
from ..._measure import Size, reduction_percent
from ..._toolkit import EvidenceTool
from ..._tools import MAX_PAGE_CHARS, evidence_tools, run_tool_call, tool_call
from ...audit._history import text_of
from ..article import ANSWER_DOC_ID, REVISION, article_corpus
from ._shared import cut, show, temp_index, variant_corpus, watching
from .core import Exercise, NotAttempted, Result, ____, call, correct, incorrect

__all__ = ["BAD_CALLS", "CHECK_ORDER", "LOCATE_TERM", "PAGE_LIMIT", "PROTOCOL_CODES", "SEARCH_QUERY", "describe_call",
           "page_reader_texts", "q1", "q2", "q3", "q4"]

#: The article's three calls (notebook 02): 批处理上限 "batch limit", 单批上限 "per-batch limit".
SEARCH_QUERY = "批处理上限"
LOCATE_TERM = "单批上限"
PAGE_LIMIT = 300
#: The refusal codes of the three evidence tools (the other codes in ERROR_CODES belong to later notebooks).
PROTOCOL_CODES = ("invalid_arguments", "invalid_query", "invalid_term", "unknown_doc_id", "invalid_page_bounds",
                  "offset_exceeds_document", "evidence_changed")


def page_reader_texts() -> dict[str, str]:
    """The texts q1's checker pages through: Chinese, emoji, combining marks, CRLF, empty."""
    d03 = next(d for d in article_corpus() if d.doc_id == ANSWER_DOC_ID)
    return {
        "d03 (Chinese, 4,339 chars)": d03.text,
        "emoji": "ok 👍🏽 fine 🇨🇳 done; 批处理 🧾 end",
        "combining marks": "Cafe\u0301 cre\u0300me bru\u0302le\u0301e, n\u0303",
        "CRLF lines": "line one\r\nline two\r\n\r\nlast line",
        "empty text": "",
    }


# -- q1 · a page reader ---------------------------------------------------------------------------------

_FIELDS = ("start", "end", "next_offset", "text")


def _page_cases(n: int, limit: int) -> list[int]:
    return sorted({0, min(3, n), n // 2, max(n - limit, 0), max(n - 1, 0), n})


def _compare_page(got: Any, want: Mapping[str, Any], where: str) -> Result | None:
    if not isinstance(got, Mapping):
        return incorrect(f"read_page should return a dict with {', '.join(_FIELDS)}; got {show(got)} {where}")
    for field in _FIELDS:
        if field not in got:
            return incorrect(f"the page has no {field!r} key {where}")
    for field in _FIELDS:
        g, w = got[field], want[field]
        if g == w and type(g) is type(w):
            continue
        if field == "next_offset" and w is None and g == want["end"]:
            return incorrect(f"next_offset was {g!r} {where}, but that page ends at len(text) = {_total(want)}: "
                             "nothing remains, so next_offset should be None")
        if field == "next_offset" and g is None and isinstance(w, int):
            return incorrect(f"next_offset was None {where}, but {_remain(want)} after end={want['end']}: "
                             "next_offset should be end while end < len(text)")
        if field == "end" and isinstance(g, int) and g > w:
            return incorrect(f"end should be {w}, got {g} {where}: a page cannot run past the end of the text, "
                             "end = min(offset + limit, len(text))")
        if field == "text":
            shown = cut(g) if isinstance(g, str) else show(g)
            return incorrect(f"text should be text[start:end] = {cut(w)}, got {shown} {where} (offsets count code "
                             "points, not bytes; end is excluded)")
        return incorrect(f"{field} should be {w!r}, got {g!r} {where}")
    return None


def _total(want: Mapping[str, Any]) -> int:
    """The text's length, from the reference page: its ``total_chars``."""
    return int(want["total_chars"])


def _remain(want: Mapping[str, Any]) -> str:
    left = _total(want) - want["end"]
    return f"{left:,} character{'' if left == 1 else 's'} remain{'s' if left == 1 else ''}"


def _getter_code(cls: type, name: str) -> CodeType:
    """The code of property ``name``'s getter on ``cls``."""
    prop = vars(cls)[name]
    assert isinstance(prop, property) and prop.fget is not None
    return prop.fget.__code__


#: The library's own page arithmetic: what q1 asks the learner to write (notebook 02 shows read_evidence using it).
_LIBRARY_PAGING = frozenset({paging.page.__code__, _getter_code(paging.Page, "next_offset")})


@cache
def _reader_codes() -> frozenset[CodeType]:
    """The read_evidence tool's own code (its function, shared by every index's tools, and its session's read)."""
    read = evidence_tools(EvidenceIndex.in_memory([Document("x", "x", REVISION, "x")]))[2]
    assert isinstance(read, EvidenceTool) and read.func is not None  # evidence_tools: EvidenceTools of functions
    return frozenset({read.func.__code__, type(read.session).read.__code__})


def _delegation(fn: Any, *args: Any) -> str | None:
    """What library answer calling ``fn(*args)`` runs first: "read_evidence" (the tool), "paging" (the library's
    page arithmetic, ``_paging.page`` or ``Page``), or None (the learner's own lines)."""
    seen: list[str] = []
    with watching(_LIBRARY_PAGING | _reader_codes(), seen):
        call(fn, *args, name="read_page")
    if not seen:
        return None
    return "read_evidence" if seen[0] in ("read_evidence", "read") else "paging"


def _check_read_page(read_page: Any) -> Result:
    if not callable(read_page):
        return incorrect(f"read_page should be a function, got {show(read_page)}")
    texts = page_reader_texts()
    docs = [Document(f"t{i}", label, REVISION, text) for i, (label, text) in enumerate(texts.items())]
    delegated = _delegation(read_page, docs[0].text, 0, PAGE_LIMIT)  # also: still the stub?
    if delegated == "read_evidence":
        return incorrect("read_page calls the read_evidence tool: the checker compares your function with that "
                         "tool, so it is the answer this exercise asks you to write, not a way to it. Slice the text "
                         "yourself (end = min(offset + limit, len(text)), next_offset None at the end); no index is "
                         "needed, the text is given")
    if delegated == "paging":
        return incorrect("read_page delegates to the library's own page arithmetic (the code read_evidence pages "
                         "with): that is the answer this exercise asks you to write (end = min(offset + limit, "
                         "len(text)), next_offset None at the end). Write those lines yourself; in your own code, "
                         "call the public evidence_lib.read_page or the read_evidence tool instead")
    pages = 0
    with temp_index(docs) as index:
        read = evidence_tools(index)[2]
        for doc in docs:
            n = len(doc.text)
            for limit in (1, 7, PAGE_LIMIT, MAX_PAGE_CHARS):
                for offset in _page_cases(n, limit):
                    want = json.loads(read.invoke({"doc_id": doc.doc_id, "offset": offset, "limit": limit}))
                    got = call(read_page, doc.text, offset, limit, name="read_page")
                    where = f"for the {doc.title} text at offset={offset}, limit={limit}"
                    if (bad := _compare_page(got, want, where)) is not None:
                        return bad
                    pages += 1
                # Following next_offset from 0 must give back the whole text.
                at: object = 0  # then whatever the learner's next_offset says
                parts: list[str] = []
                steps = 0
                while at is not None and steps <= n + 1:
                    page = call(read_page, doc.text, at, limit, name="read_page")
                    if not isinstance(page, Mapping) or not isinstance(page.get("text"), str):
                        return incorrect(f"read_page returned {show(page)} while paging the {doc.title} text")
                    parts.append(page["text"])
                    last, at, steps = at, page.get("next_offset"), steps + 1
                read_to = sum(map(len, parts))
                if at is None and read_to < n and "".join(parts) == doc.text[:read_to]:
                    left = n - read_to
                    return incorrect(f"next_offset was None at offset {last:,} (limit={limit}) in the {doc.title} "
                                     f"text, but {left:,} character{'' if left == 1 else 's'} "
                                     f"remain{'s' if left == 1 else ''}: next_offset is end while end < len(text)")
                if "".join(parts) != doc.text:
                    return incorrect(f"following next_offset from 0 with limit={limit} does not give back the "
                                     f"{doc.title} text")
    return correct(f"read_page agrees with read_evidence on {pages} pages of {len(docs)} texts (Chinese, emoji, "
                   "combining marks, CRLF, empty), including the empty last page at offset == len(text), and "
                   "following next_offset from 0 gives back every text.")


q1 = Exercise(
    "2.1", "Write the page reader",
    checker=_check_read_page,
    ask="fill in read_page(text, offset, limit) so it returns the page as a dict (yourself, without the "
        "library's page function), then run this cell again.",
    hints=(
        'A page is the half-open range [offset, end) of the text: end never passes len(text), and next_offset '
        'says where the next page starts, or None when nothing is left to read.',
        "end is offset + limit, cut down to len(text). The page's text is a plain str slice: Python indices "
        "count code points, the unit of read_evidence's offsets, so 👍🏽 is two of them and a page may end "
        'between them. next_offset is end while end is short of len(text), else None; an offset of len(text) '
        'is a valid empty page.',
        "Shape: compute end, then return {'start': offset, 'end': end, 'next_offset': end if end < len(text) "
        "else None, 'text': text[offset:end]}.",
    ),
    stub='''
def read_page(text, offset, limit):
    """The page [offset, offset + limit) of text as {"start", "end", "next_offset", "text"}."""
    return ____
''',
    solution='''
def read_page(text, offset, limit):
    """The page [offset, offset + limit) of text as {"start", "end", "next_offset", "text"}."""
    end = min(offset + limit, len(text))
    return {
        "start": offset,
        "end": end,
        "next_offset": end if end < len(text) else None,
        "text": text[offset:end],
    }
''',
)


# -- q2 · read a whole document by following next_offset -------------------------------------------------

class _TooManyCalls(BaseException):
    """Stops a runaway paging loop; a BaseException so ``except Exception`` in learner code cannot eat it."""


class CountingReader:
    """Wraps ``read_evidence``: counts calls, remembers the pages served, and stops a loop that never ends."""

    def __init__(self, tool: Any, max_calls: int) -> None:
        self._tool = tool
        self.name = tool.name
        self.calls = 0
        self.max_calls = max_calls
        self.pages: list[tuple[int, int]] = []  # (start, end) of every page served, in order

    def invoke(self, args: Any, *rest: Any, **kw: Any) -> str:
        self.calls += 1
        if self.calls > self.max_calls:
            raise _TooManyCalls
        reply = self._tool.invoke(args, *rest, **kw)
        try:
            page = json.loads(reply)
        except (TypeError, ValueError):
            return reply  # not a page: the checker reports what the learner's code makes of it
        if isinstance(page, dict) and "start" in page and "text" in page:
            self.pages.append((page["start"], page["end"]))
        return reply

    def advancing(self) -> bool:
        """Whether every page started where the one before ended: the loop moves, its pages are just small."""
        return len(self.pages) > 1 and all(b[0] == a[1] for a, b in zip(self.pages, self.pages[1:]))

    def largest_page(self) -> int:
        return max((e - s for s, e in self.pages), default=0)

    def __repr__(self) -> str:
        return "read_evidence"


def _reference_pages(read: Any, doc_id: str) -> int:
    offset, calls = 0, 0
    while offset is not None:
        page = json.loads(read.invoke({"doc_id": doc_id, "offset": offset, "limit": MAX_PAGE_CHARS}))
        offset, calls = page["next_offset"], calls + 1
    return calls


def _too_many_calls(reader: CountingReader, doc: Document) -> str:
    """Why a loop ran past its call limit: pages that follow next_offset but are small, or a loop that never moves."""
    what = f"read_all made more than {reader.max_calls} calls for the {len(doc.text):,}-character document {doc.doc_id!r}"
    if reader.advancing() and reader.largest_page() < MAX_PAGE_CHARS:
        return (f"{what}: offset follows next_offset, but your pages hold at most {reader.largest_page()} characters. "
                f"Ask for limit={MAX_PAGE_CHARS}, the largest page, and {-(-len(doc.text) // MAX_PAGE_CHARS)} calls "
                "suffice")
    return f"{what}: is offset moving to next_offset after every page?"


def _why_more_calls(reader: CountingReader, doc: Document) -> str:
    """Why a loop that rebuilt the text made more calls than needed: it asked for the empty page at the end, or its
    pages were smaller than the largest page (limit=799 included), named from the pages it really asked for."""
    if doc.text and (len(doc.text), len(doc.text)) in reader.pages:
        return "stop when next_offset is None; do not ask for the empty page at offset == total_chars"
    if reader.largest_page() < MAX_PAGE_CHARS:
        return (f"your pages hold at most {reader.largest_page()} characters; ask for limit={MAX_PAGE_CHARS}, the "
                "largest page")
    return f"ask for limit={MAX_PAGE_CHARS}, the largest page, and follow next_offset"


def _edge_text() -> str:
    """Three pages whose edges are whitespace: a newline ends pages 1 and 2, a space starts pages 2 and 3, so a loop
    that strips each page loses characters."""
    body = "批处理上限" * MAX_PAGE_CHARS
    return body[: MAX_PAGE_CHARS - 1] + "\n " + body[: MAX_PAGE_CHARS - 2] + "\n " + body[:100]


def _check_read_all(read_all: Any) -> Result:
    if not callable(read_all):
        return incorrect(f"read_all should be a function, got {show(read_all)}")
    d03 = next(d for d in article_corpus() if d.doc_id == ANSWER_DOC_ID)
    docs = [
        d03,
        Document("exact", "two full pages", REVISION, ("批处理" * MAX_PAGE_CHARS)[: 2 * MAX_PAGE_CHARS]),
        Document("short", "one sentence", REVISION, d03.text.splitlines()[-1]),
        Document("edges", "whitespace at the page edges", REVISION, _edge_text()),
        Document("empty", "empty", REVISION, ""),
    ]
    with temp_index(docs) as index:
        read = evidence_tools(index)[2]
        for doc in docs:
            expected_calls = _reference_pages(read, doc.doc_id)
            reader = CountingReader(read, max_calls=3 * expected_calls + 10)
            try:
                text = call(read_all, reader, doc.doc_id, name="read_all")
            except _TooManyCalls:
                return incorrect(_too_many_calls(reader, doc))
            what = f"document {doc.doc_id!r} ({len(doc.text):,} chars)"
            if not isinstance(text, str):
                return incorrect(f"read_all should return the text as one str, got {show(text)} for {what}")
            if text != doc.text:
                at = next((i for i, (a, b) in enumerate(zip(text, doc.text)) if a != b), min(len(text), len(doc.text)))
                if at < len(doc.text) and doc.text[at].isspace() and any(at in (s, e - 1) for s, e in reader.pages):
                    return incorrect(f"the joined pages differ from {what} at character {at:,}, the whitespace "
                                     f"{doc.text[at]!r} at a page's edge: stripping a page drops characters at its "
                                     "edge; keep page['text'] exactly as it is")
                return incorrect(f"the joined pages differ from {what} at character {at:,} (you got {len(text):,} "
                                 "chars): next_offset is already the first character you have not read")
            if reader.calls > expected_calls:
                tip = _why_more_calls(reader, doc)
                return incorrect(f"read_all made {reader.calls} calls for {what} where {expected_calls} suffice: {tip}")
    return correct(f"read_all rebuilt all {len(docs)} documents with the fewest calls (d03: "
                   f"{-(-len(d03.text) // MAX_PAGE_CHARS)} pages of at most {MAX_PAGE_CHARS} characters), stopping "
                   "when next_offset is None.")


q2 = Exercise(
    "2.2", "Read a whole document with next_offset",
    checker=_check_read_all,
    ask="fill in read_all(read, doc_id) so it returns the document's full text, then run this cell again.",
    hints=(
        'Start at offset 0 and follow next_offset: it is the first character you have not read yet, and None '
        'once the document is finished.',
        "read.invoke({...}) returns the page as JSON (json.loads it). Collect every page's text and stop when "
        'its next_offset is None; ask for the largest page (limit=800) so that the fewest calls suffice.',
        "Shape: parts, offset = [], 0; while offset is not None: page = json.loads(read.invoke({'doc_id': "
        "doc_id, 'offset': offset, 'limit': 800})); keep page['text']; move offset to page['next_offset']. "
        'Join the parts.',
    ),
    stub='''
def read_all(read, doc_id):
    """The whole text of doc_id, read page by page with the read_evidence tool."""
    return ____
''',
    solution='''
def read_all(read, doc_id):
    """The whole text of doc_id, read page by page with the read_evidence tool."""
    parts, offset = [], 0
    while offset is not None:
        page = json.loads(read.invoke({"doc_id": doc_id, "offset": offset, "limit": 800}))
        parts.append(page["text"])
        offset = page["next_offset"]
    return "".join(parts)
''',
)


# -- q3 · two mistakes in one call: which refusal wins -----------------------------------------------

def _d03_chars() -> int:
    return len(next(d for d in article_corpus() if d.doc_id == ANSWER_DOC_ID).text)


#: The order the tools check a call in (``evidence_lib._toolkit._refusal``, then ``read_page``): the one refusal a
#: call that breaks several rules gets is the first rule's.
CHECK_ORDER = (
    "a crossed bound (offset below 0, limit outside 1-800, a term or query of the wrong length) names its own code, "
    "even next to other schema problems",
    "any other schema problem (a wrong type, an unknown or missing argument) is invalid_arguments",
    "then the doc_id is looked up in the index (unknown_doc_id)",
    "then the offset is compared with that document's length (offset_exceeds_document)",
)

#: label -> (tool, args, also, why): ``also`` are the codes of the other rules the call breaks (or seems to), which
#: a learner who does not know the order names; ``why`` says which check comes first. The code each call gets is
#: computed by running it. Notebook 02 shows each rule broken alone; here a call breaks two, or only seems to.
BAD_CALLS: dict[str, tuple[str, dict[str, Any], tuple[str, ...], str]] = {
    "a": ("read_evidence", {"doc_id": "../secret", "offset": -1}, ("unknown_doc_id",),
          "the bounds are checked before the doc_id is looked up: nothing is looked up for an impossible page"),
    "b": ("read_evidence", {"doc_id": "nope", "offset": 5000}, ("offset_exceeds_document",),
          "the offset can only exceed a document that exists: the doc_id is looked up first, and there is no such "
          "document"),
    "c": ("read_evidence", {"doc_id": "d03", "offset": 5000, "limit": 0}, ("offset_exceeds_document",),
          "limit 0 is outside 1-800, a bound, and bounds come first; the document's length is checked last"),
    "d": ("read_evidence", {"doc_id": "nope", "offset": "10"}, ("unknown_doc_id",),
          "the schema is checked before anything is looked up: the string \"10\" is not an integer"),
    "e": ("read_evidence", {"doc_id": "d03", "offset": -1, "principal": "admin"}, ("invalid_arguments",),
          "the unknown argument principal is a schema problem, but a crossed bound (offset -1) names its own code "
          "even next to other schema problems"),
    "f": ("read_evidence", {"doc_id": "d03", "offset": 4000, "limit": MAX_PAGE_CHARS},
          ("offset_exceeds_document", "invalid_page_bounds"),
          f"offset 4000 is inside d03 ({_d03_chars():,} characters) and limit {MAX_PAGE_CHARS} is allowed; a page "
          f"that would run past the end is cut to the text ([4000, {_d03_chars()}), next_offset null)"),
    "g": ("read_evidence", {"doc_id": "d03", "offset": _d03_chars(), "limit": MAX_PAGE_CHARS + 1}, (),
          f"offset == total_chars alone would be the empty last page, but limit {MAX_PAGE_CHARS + 1} crosses the "
          "page bound, and bounds are checked before anything else"),
}


def _arg(value: Any) -> str:
    if isinstance(value, str) and len(value) > 16:
        return f"{value[:4]!r}... ({len(value)} chars)"
    return repr(value)


def describe_call(label: str) -> str:
    """``(a) read_evidence(doc_id='../secret', offset=-1)``; long strings shortened."""
    name, args, _, _ = BAD_CALLS[label]
    return f"({label}) {name}({', '.join(f'{k}={_arg(v)}' for k, v in args.items())})"


def _count(wrong: int, total: int) -> str:
    return f"{wrong} of {total} {'is' if wrong == 1 else 'are'} wrong"


def _expected_codes() -> dict[str, str]:
    with temp_index() as index:
        tools = evidence_tools(index)
        out = {}
        for label, (name, args, _, _) in BAD_CALLS.items():
            message = run_tool_call(tools, tool_call(name, args, f"call-{label}"))
            out[label] = json.loads(text_of(message))["error"] if message.status == "error" else "ok"
        return out


def _diagnosis(label: str, said: str, real: str) -> str:
    """Why ``said`` is not what ``describe_call(label)`` gets: the learner named a rule checked later, called a
    refused call fine, refused a fine one, or named a rule the call does not break."""
    _, _, also, why = BAD_CALLS[label]
    if real == "ok":
        return f"you said {said}, but it is not refused: {why}"
    if said == "ok":
        return f"you said ok, but it is refused with {real}: {why}"
    if said in also:
        return f"it does break the rule of {said} too, but {real} is checked first: {why}"
    return f"you said {said}, but this call does not break that rule; it is refused with {real}: {why}"


def _check_codes(answer: Any) -> Result:
    if not isinstance(answer, Mapping):
        return incorrect(f"the answer should be a dict like {{'a': 'unknown_doc_id', ...}}, got {show(answer)}")
    expected = _expected_codes()
    missing = [k for k in expected if k not in answer or answer[k] is ____]
    if len(missing) == len(expected):
        raise NotAttempted
    if missing:
        return incorrect(f"no code for {', '.join(missing)} yet")
    extra = sorted(set(answer) - set(expected), key=str)
    if extra:
        return incorrect(f"there is no call labelled {extra[0]!r}; the labels are {', '.join(expected)}")
    for label, code in answer.items():
        if code != "ok" and code not in ERROR_CODES:
            return incorrect(f"{code!r} for ({label}) is neither \"ok\" nor one of the codes in ERROR_CODES")
    wrong = [k for k in expected if answer[k] != expected[k]]
    if wrong:
        return incorrect(f"{_count(len(wrong), len(expected))}. " + "; ".join(
            f"{describe_call(k)}: {_diagnosis(k, answer[k], expected[k])}" for k in wrong))
    refused = sum(code != "ok" for code in expected.values())
    return correct(f"all {len(expected)} right: {refused} refusals, each with the code of the first rule the call "
                   "breaks, and one call that only looks wrong. A fixed order (crossed bounds, the rest of the schema, "
                   "the index, the document's length) keeps the code stable: the same call always gets the same code, "
                   "and the model is told the first thing to fix.")


q3 = Exercise(
    "2.3", "Two mistakes in one call: which refusal wins?",
    checker=_check_codes,
    ask="set codes to a dict from each label (a to g) to the one error code the call is refused with, or \"ok\" "
        "if it is not refused, then run this cell again.",
    hints=(
        "A call gets one refusal, never a list: the first rule it breaks, in the order the tools check. Notebook "
        "02's Step 4 shows the order inside read_page: page_request (the bounds) runs before index.entry (the "
        "doc_id), and the page is cut to the document's length last.",
        "The schema check comes before read_page: a wrong type or an unknown argument is invalid_arguments, "
        "except that a crossed bound (offset below 0, limit outside 1-800) names its own code, "
        "invalid_page_bounds, even when the call has other schema problems too.",
        "In order: " + "; ".join(CHECK_ORDER) + ". A call that breaks none of them gets a page, even one cut "
        "short at the end. Check yourself by running a call: run_tool_call(tools, tool_call(name, args, 'x')).",
    ),
    stub="""
codes = {
    "a": ____, "b": ____, "c": ____, "d": ____,
    "e": ____, "f": ____, "g": ____,
}
""",
    solution="""
codes = {
    "a": "invalid_page_bounds", "b": "unknown_doc_id", "c": "invalid_page_bounds", "d": "invalid_arguments",
    "e": "invalid_page_bounds", "f": "ok", "g": "invalid_page_bounds",
}
""",
    solution_note="Check yourself by running each call: run_tool_call(tools, tool_call(name, args, 'x')).",
)


# -- q4 · the byte reduction, measured honestly ----------------------------------------------------------

#: A tool call of a scripted session: the tool's name and its arguments.
_Call = tuple[str, dict[str, Any]]


def _session(docs: list[Document], calls: list[_Call]) -> list[ToolMessage]:
    """Run ``calls`` as an agent loop would; a read may say ``{"hit": 0, ...}``: the first located position."""
    with temp_index(docs) as index:
        tools = evidence_tools(index)
        messages: list[ToolMessage] = []
        hits: list[dict[str, Any]] = []  # the last locate_evidence's positions
        for i, (name, args) in enumerate(calls, 1):
            if "hit" in args:
                hit = hits[args["hit"]]
                offset = max(hit["offset"] - args.get("before", 0), 0) + args.get("skip", 0)
                args = {"doc_id": hit["doc_id"], "offset": offset, "limit": args["limit"]}
            message = run_tool_call(tools, tool_call(name, args, f"call-{i}"))
            if name == "locate_evidence":
                hits = json.loads(text_of(message))
            messages.append(message)
        return messages


@cache
def _reduction_cases() -> tuple[tuple[str, str, tuple[ToolMessage, ...]], ...]:
    """(label, baseline dump, ToolMessages): the notebook's session first, then three it never prints."""
    article = article_corpus()
    variant = variant_corpus("q2.4-a", 6)
    middle = variant_corpus("q2.4-b", 8, answer_at="middle")
    search: _Call = ("search_evidence", {"query": SEARCH_QUERY})
    locate: _Call = ("locate_evidence", {"term": LOCATE_TERM})
    cases: list[tuple[str, list[Document], list[_Call]]] = [
        ("the notebook's session", article,
         [search, locate, ("read_evidence", {"hit": 0, "limit": PAGE_LIMIT})]),
        ("a session that locates 超时设为 and reads 800 characters before it", article,
         [search, ("locate_evidence", {"term": "超时设为"}), ("read_evidence", {"hit": 0, "before": 780, "limit": 800})]),
        ("a session on 6 other candidates that reads two pages", variant,
         [search, locate, ("read_evidence", {"hit": 0, "before": 900, "limit": 800}),
          ("read_evidence", {"hit": 0, "before": 100, "limit": 800})]),
        ("a session on 8 other candidates, the answer in the middle of d03", middle,
         [search, locate, ("read_evidence", {"hit": 0, "before": 300, "limit": 600})]),
    ]
    return tuple((label, baseline_dump(docs), tuple(_session(docs, calls))) for label, docs, calls in cases)


_MISTAKES = {
    "fraction": "that looks like a fraction; give a percentage (0 to 100)",
    "remains": "that is the share that remains, not the reduction",
    "last page": "you counted only the last page; the model also saw the manifest, the positions and every other page: "
                 "every ToolMessage in the history counts",
    "one missing": "one of the {n} ToolMessages is missing: manifest, positions and every page all count",
    "tokens": "that is the token reduction; the question asks for UTF-8 bytes",
    "chars": "that counts characters; the question asks for UTF-8 bytes",
}


def _reduction_mistakes(baseline: str, messages: tuple[ToolMessage, ...]) -> list[tuple[str, float]]:
    """(mistake, the percentage it gives) for one session, in the order of :data:`_MISTAKES`."""
    before, after = Size.of(baseline), Size.of(*messages)
    full = reduction_percent(before.utf8_bytes, after.utf8_bytes, 1)

    def pct(*ms: ToolMessage) -> float:
        return reduction_percent(before.utf8_bytes, Size.of(*ms).utf8_bytes, 1)

    return ([("fraction", round(full / 100, 3)), ("remains", round(100 - full, 1)), ("last page", pct(messages[-1]))]
            + [("one missing", pct(*(m for m in messages if m is not left))) for left in messages]
            + [("tokens", reduction_percent(before.cl100k_tokens, after.cl100k_tokens, 1)),
               ("chars", reduction_percent(before.chars, after.chars, 1))])


def _same(got: float, value: float) -> bool:
    return round(got, 1) == round(value, 1) if value >= 1 else round(got, 3) == value


def _check_reduction(reduction: Any) -> Result:
    if not callable(reduction):
        return incorrect(f"reduction should be a function of (baseline, messages), got {show(reduction)}")
    cases = _reduction_cases()
    answers = []
    for label, baseline, messages in cases:
        answer = call(reduction, baseline, [m.model_copy() for m in messages], name="reduction")
        if isinstance(answer, bool) or not isinstance(answer, (int, float)):
            return incorrect(f"reduction should return a number (a percentage), got {show(answer)} for {label}")
        answers.append(float(answer))
    expected = [reduction_percent(Size.of(b).utf8_bytes, Size.of(*ms).utf8_bytes, 1) for _, b, ms in cases]
    wrong = [i for i, (got, want) in enumerate(zip(answers, expected)) if round(got, 1) != want]
    if not wrong and (j := next((i for i, got in enumerate(answers) if got != round(got, 1)), None)) is not None:
        return incorrect(f"the percentage is right but not rounded to one decimal: {answers[j]!r} for {cases[j][0]}; return "
                         f"{expected[j]} (round(x, 1), or reduction_percent(before, after, 1))")
    if not wrong:
        _, baseline, messages = cases[0]
        before, after = Size.of(baseline), Size.of(*messages)
        parts = " + ".join(f"{Size.of(m).utf8_bytes:,}" for m in messages)
        tokens = reduction_percent(before.cl100k_tokens, after.cl100k_tokens, 1)
        return correct(f"reduction agrees on {len(cases)} sessions, three of them never printed. In the notebook's "
                       f"the model saw {after.utf8_bytes:,} bytes (manifest + positions + page = {parts}) instead of "
                       f"{before.utf8_bytes:,}: {expected[0]}% fewer bytes ({tokens}% fewer cl100k tokens).")
    i = wrong[0]
    label, _, messages = cases[i]
    where = f"for {label}, {len(messages)} ToolMessages"
    # The mistake that explains every session the function got wrong (one rounded percentage can fit two).
    per_case = [_reduction_mistakes(b, ms) for _, b, ms in cases]
    for mistake in _MISTAKES:
        if all(any(k == mistake and _same(answers[j], v) for k, v in per_case[j]) for j in wrong):
            return incorrect(f"{_MISTAKES[mistake].format(n=len(messages))} ({where})")
    if i > 0 and round(answers[i], 1) == expected[0]:
        return incorrect(f"your function returns {answers[i]:g} {where}, exactly what the notebook's session gives: "
                         "it must measure the baseline and the messages it is given (the checker passes sessions no "
                         "notebook prints, so a number copied from an output cannot pass)")
    return incorrect(f"{answers[i]:g} is not 100 * (1 - bytes of the messages / bytes of the baseline), rounded to one "
                     f"decimal, {where} ({expected[i]})")


q4 = Exercise(
    "2.4", "The byte reduction, measured honestly",
    checker=_check_reduction,
    ask="fill in reduction(baseline, messages): the percentage of UTF-8 bytes the messages save against the "
        "baseline dump, rounded to one decimal, then run this cell again.",
    hints=(
        'Every tool result the model saw counts: every ToolMessage in messages (the manifest, the positions, each '
        'page), against the whole baseline dump.',
        'Size.of(*messages) measures several messages together, envelope included; reduction_percent(before, '
        "after, 1) does the arithmetic, with before the baseline's UTF-8 bytes. The checker passes sessions with "
        'more than one page too.',
        'Shape: before = utf8_bytes(baseline); after = the UTF-8 bytes of Size.of(*messages); '
        'reduction_percent(before, after, 1).',
    ),
    stub='''
def reduction(baseline, messages):
    """Percent of UTF-8 bytes the messages save against the baseline dump, one decimal."""
    return ____
''',
    solution='''
def reduction(baseline, messages):
    """Percent of UTF-8 bytes the messages save against the baseline dump, one decimal."""
    before = utf8_bytes(baseline)
    after = Size.of(*messages).utf8_bytes
    return reduction_percent(before, after, 1)

messages = [listing, positions, page]
print(f"{utf8_bytes(baseline):,} -> {Size.of(*messages).utf8_bytes:,} bytes: {reduction(baseline, messages)}% fewer")
''',
)
