"""Workshop part 2: the three-tool protocol (notebook 02's ideas).

Exercises: q1 write a page reader that matches ``read_evidence``, q2 page through a whole document
with ``next_offset``, q3 name the code each bad call is refused with, q4 measure the byte reduction
honestly. Used by ``notebooks/exercises/workshop_part2.ipynb``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..corpus import ANSWER_DOC_ID, REVISION, Document, article_corpus, baseline_dump
from ..errors import ERROR_CODES
from ..measure import Size, reduction_percent
from ..tools import MAX_PAGE_CHARS, evidence_tools, run_tool_call, tool_call
from ._shared import cut, show, temp_index
from .core import Exercise, NotAttempted, Result, ____, call, correct, incorrect

__all__ = ["BAD_CALLS", "LOCATE_TERM", "PAGE_LIMIT", "PROTOCOL_CODES", "SEARCH_QUERY", "describe_call",
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
            return incorrect(f"next_offset should be None at the end of the text (nothing is left to read), "
                             f"got {g!r} {where}")
        if field == "end" and isinstance(g, int) and g > w:
            return incorrect(f"end should be {w}, got {g} {where}: a page cannot run past the end of the text, "
                             "end = min(offset + limit, len(text))")
        if field == "text":
            shown = cut(g) if isinstance(g, str) else show(g)
            return incorrect(f"text should be text[start:end] = {cut(w)}, got {shown} {where} (offsets count code "
                             "points, not bytes; end is excluded)")
        return incorrect(f"{field} should be {w!r}, got {g!r} {where}")
    return None


def _check_read_page(read_page: Any) -> Result:
    if not callable(read_page):
        return incorrect(f"read_page should be a function, got {show(read_page)}")
    texts = page_reader_texts()
    docs = [Document(f"t{i}", label, REVISION, text) for i, (label, text) in enumerate(texts.items())]
    call(read_page, docs[0].text, 0, PAGE_LIMIT, name="read_page")  # still the stub?
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
                offset, parts, steps = 0, [], 0
                while offset is not None and steps <= n + 1:
                    page = call(read_page, doc.text, offset, limit, name="read_page")
                    if not isinstance(page, Mapping) or not isinstance(page.get("text"), str):
                        return incorrect(f"read_page returned {show(page)} while paging the {doc.title} text")
                    parts.append(page["text"])
                    offset, steps = page.get("next_offset"), steps + 1
                if "".join(parts) != doc.text:
                    return incorrect(f"following next_offset from 0 with limit={limit} does not give back the "
                                     f"{doc.title} text")
    return correct(f"read_page agrees with read_evidence on {pages} pages of {len(docs)} texts (Chinese, emoji, "
                   "combining marks, CRLF, empty), including the empty last page at offset == len(text), and "
                   "following next_offset from 0 gives back every text.")


q1 = Exercise(
    "2.1", "Write the page reader",
    checker=_check_read_page,
    ask="fill in read_page(text, offset, limit) so it returns the page as a dict, then run this cell again.",
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
    """Wraps ``read_evidence``: counts calls and stops a loop that never ends."""

    def __init__(self, tool: Any, max_calls: int) -> None:
        self._tool = tool
        self.name = tool.name
        self.calls = 0
        self.max_calls = max_calls

    def invoke(self, args: Any, *rest: Any, **kw: Any) -> str:
        self.calls += 1
        if self.calls > self.max_calls:
            raise _TooManyCalls
        return self._tool.invoke(args, *rest, **kw)

    def __repr__(self) -> str:
        return "read_evidence"


def _reference_pages(read: Any, doc_id: str) -> int:
    offset, calls = 0, 0
    while offset is not None:
        page = json.loads(read.invoke({"doc_id": doc_id, "offset": offset, "limit": MAX_PAGE_CHARS}))
        offset, calls = page["next_offset"], calls + 1
    return calls


def _check_read_all(read_all: Any) -> Result:
    if not callable(read_all):
        return incorrect(f"read_all should be a function, got {show(read_all)}")
    d03 = next(d for d in article_corpus() if d.doc_id == ANSWER_DOC_ID)
    docs = [
        d03,
        Document("exact", "two full pages", REVISION, ("批处理" * MAX_PAGE_CHARS)[: 2 * MAX_PAGE_CHARS]),
        Document("short", "one sentence", REVISION, d03.text.splitlines()[-1]),
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
                return incorrect(f"read_all made more than {reader.max_calls} calls for the {len(doc.text):,}-"
                                 f"character document {doc.doc_id!r}: is offset moving to next_offset after every "
                                 "page?")
            what = f"document {doc.doc_id!r} ({len(doc.text):,} chars)"
            if not isinstance(text, str):
                return incorrect(f"read_all should return the text as one str, got {show(text)} for {what}")
            if text != doc.text:
                at = next((i for i, (a, b) in enumerate(zip(text, doc.text)) if a != b), min(len(text), len(doc.text)))
                return incorrect(f"the joined pages differ from {what} at character {at:,} (you got {len(text):,} "
                                 "chars): next_offset is already the first character you have not read")
            if reader.calls > expected_calls:
                tip = ("ask for limit=800, the largest page" if reader.calls > expected_calls + 1 else
                       "stop when next_offset is None; do not ask for the empty page at offset == total_chars")
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


# -- q3 · which code refuses each bad call -------------------------------------------------------------

def _d03_chars() -> int:
    return len(next(d for d in article_corpus() if d.doc_id == ANSWER_DOC_ID).text)


#: label -> (tool, args, why). The code each call gets is computed by running it; ``why`` explains it.
BAD_CALLS: dict[str, tuple[str, dict[str, Any], str]] = {
    "a": ("read_evidence", {"doc_id": "d03", "offset": 5000},
          "the bounds themselves are fine; the document is shorter than the offset"),
    "b": ("read_evidence", {"doc_id": "../d03"},
          "a doc_id is looked up in the index, never used as a path; there is no such id"),
    "c": ("read_evidence", {"doc_id": "d03", "limit": MAX_PAGE_CHARS + 1},
          f"a page holds at most {MAX_PAGE_CHARS} characters; bounds are checked before anything is opened"),
    "d": ("read_evidence", {"doc_id": "d03", "offset": "10"},
          "the schema is strict: the string \"10\" is not an integer"),
    "e": ("read_evidence", {"doc_id": "d03", "offset": _d03_chars()},
          "offset == total_chars is allowed: it returns the empty last page with next_offset null"),
    "f": ("locate_evidence", {"term": "上限" * 33},
          "a locate term is 1 to 64 characters"),
    "g": ("read_evidence", {"doc_id": "d03", "principal": "admin"},
          "unknown argument names are refused: who the caller is comes from the application, never the model"),
    "h": ("read_evidence", {"doc_id": "d03", "offset": -1},
          "offsets start at 0"),
}


def _arg(value: Any) -> str:
    if isinstance(value, str) and len(value) > 16:
        return f"{value[:4]!r}... ({len(value)} chars)"
    return repr(value)


def describe_call(label: str) -> str:
    """``(a) read_evidence(doc_id='d03', offset=5000)``; long strings shortened."""
    name, args, _ = BAD_CALLS[label]
    return f"({label}) {name}({', '.join(f'{k}={_arg(v)}' for k, v in args.items())})"


def _count(wrong: int, total: int) -> str:
    return f"{wrong} of {total} {'is' if wrong == 1 else 'are'} wrong"


def _expected_codes() -> dict[str, str]:
    with temp_index() as index:
        tools = evidence_tools(index)
        out = {}
        for label, (name, args, _) in BAD_CALLS.items():
            message = run_tool_call(tools, tool_call(name, args, f"call-{label}"))
            out[label] = json.loads(message.content)["error"] if message.status == "error" else "ok"
        return out


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
        k = wrong[0]
        said, real = answer[k], expected[k]
        outcome = "it is not refused" if real == "ok" else f"it is refused with {real}"
        return incorrect(f"{_count(len(wrong), len(expected))}. {describe_call(k)}: you said {said}, but {outcome}: "
                         f"{BAD_CALLS[k][2]}")
    refused = sum(code != "ok" for code in expected.values())
    return correct(f"all {len(expected)} right: {refused} refusals with {len(set(expected.values()) - {'ok'})} "
                   "different codes, and one call that only looks wrong. A stable code lets the model (and your "
                   "tests) react without parsing prose.")


q3 = Exercise(
    "2.3", "Which code refuses each bad call?",
    checker=_check_codes,
    ask="set codes to a dict from each label (a to h) to the error code the call is refused with, or \"ok\" if "
        "it is not refused, then run this cell again.",
    hints=(
        "The tools check in a fixed order: the arguments' names and types, then the page bounds, then the "
        "index, then the document's length. The first check that fails names the code.",
        'The codes are the keys of ERROR_CODES: invalid_arguments (a wrong type or an unknown argument name), '
        'invalid_page_bounds (offset below 0, limit outside 1-800), invalid_term (1 to 64 characters), '
        'unknown_doc_id, offset_exceeds_document (past the end of this document; offset == total_chars is '
        'still a page).',
        "Check yourself by running each call: run_tool_call(tools, tool_call(name, args, 'x')) and read the "
        '\'error\' field of its content (a success has none: that label is "ok").',
    ),
    stub="""
codes = {
    "a": ____, "b": ____, "c": ____, "d": ____,
    "e": ____, "f": ____, "g": ____, "h": ____,
}
""",
    solution="""
codes = {
    "a": "offset_exceeds_document", "b": "unknown_doc_id", "c": "invalid_page_bounds", "d": "invalid_arguments",
    "e": "ok", "f": "invalid_term", "g": "invalid_arguments", "h": "invalid_page_bounds",
}
""",
    solution_note="Check yourself by running each call: run_tool_call(tools, tool_call(name, args, 'x')).",
)


# -- q4 · the byte reduction, measured honestly ----------------------------------------------------------

def _article_messages():
    with temp_index() as index:
        tools = evidence_tools(index)
        listing = run_tool_call(tools, tool_call("search_evidence", {"query": SEARCH_QUERY}, "search-1"))
        positions = run_tool_call(tools, tool_call("locate_evidence", {"term": LOCATE_TERM}, "locate-1"))
        hit = json.loads(positions.content)[0]
        page = run_tool_call(tools, tool_call("read_evidence", {**hit, "limit": PAGE_LIMIT}, "read-1"))
        return listing, positions, page


def _check_reduction(answer: Any) -> Result:
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        return incorrect(f"the answer should be a number (a percentage), got {show(answer)}")
    listing, positions, page = _article_messages()
    before = Size.of(baseline_dump(article_corpus()))
    after = Size.of(listing, positions, page)
    expected = reduction_percent(before.utf8_bytes, after.utf8_bytes, 1)
    got = round(float(answer), 1)
    if got == expected:
        parts = " + ".join(f"{Size.of(m).utf8_bytes:,}" for m in (listing, positions, page))
        tokens = reduction_percent(before.cl100k_tokens, after.cl100k_tokens, 1)
        return correct(f"the model saw {after.utf8_bytes:,} bytes (manifest + positions + page = {parts}) instead "
                       f"of {before.utf8_bytes:,}: {expected}% fewer bytes ({tokens}% fewer cl100k tokens).")

    def pct(*messages) -> float:
        return reduction_percent(before.utf8_bytes, Size.of(*messages).utf8_bytes, 1)

    if round(float(answer) * 100, 1) == expected:
        return incorrect("that looks like a fraction; give a percentage (0 to 100)")
    if got == round(100 - expected, 1):
        return incorrect("that is the share that remains, not the reduction")
    if got == pct(page):
        return incorrect("you counted only the page; the model also saw the manifest and the positions: every "
                         "ToolMessage in the history counts")
    if got in (pct(positions, page), pct(listing, page)):
        return incorrect("one of the three ToolMessages is missing: manifest, positions and page all count")
    if got == reduction_percent(before.cl100k_tokens, after.cl100k_tokens, 1):
        return incorrect("that is the token reduction; the question asks for UTF-8 bytes")
    if got == reduction_percent(before.chars, after.chars, 1):
        return incorrect("that counts characters; the question asks for UTF-8 bytes")
    return incorrect(f"{answer} is not 100 * (1 - protocol bytes / baseline bytes), rounded to one decimal")


q4 = Exercise(
    "2.4", "The byte reduction, measured honestly",
    checker=_check_reduction,
    ask="set reduction to the percentage of UTF-8 bytes the protocol saves against the baseline dump, rounded "
        "to one decimal, then run this cell again.",
    hints=(
        'Everything the model saw counts: the manifest, the positions and the page, all three ToolMessages, '
        'against the whole baseline dump.',
        'Size.of(*messages) measures several messages together, envelope included; reduction_percent(before, '
        "after, 1) does the arithmetic, with before the dump's UTF-8 bytes.",
        'Shape: before = utf8_bytes(baseline); after = the UTF-8 bytes of Size.of(listing, positions, page); '
        'reduction_percent(before, after, 1).',
    ),
    stub="""
reduction = ____  # percent, one decimal
""",
    solution="""
before = utf8_bytes(baseline)
after = Size.of(listing, positions, page).utf8_bytes
reduction = reduction_percent(before, after, 1)
print(f"{before:,} -> {after:,} bytes: {reduction}% fewer")
""",
)
