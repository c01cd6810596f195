"""Workshop part 8: large tool results behind a handle (notebook 12).

Exercises: q1 decide whether a tool result is offloaded (more cl100k tokens than the threshold) without running the
tokenizer when the UTF-8 bytes already settle it, on texts no notebook prints (Chinese where characters, bytes and
tokens all differ, characters of three tokens each, the empty string, texts exactly at the threshold, a run of spaces
far over the threshold in bytes and under it in tokens); q2 read one JSON section of an offloaded result by its key
path with the model's own tools, in bounded pages, on JSON replies no notebook prints (a section longer than a page,
one of exactly two pages, a key that another key starts with). Used by ``notebooks/exercises/workshop_part8.ipynb``.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from types import FrameType
from typing import Any

from langchain_core.tools import BaseTool

from ..._errors import EvidenceError
from ..._measure import cl100k, utf8_bytes
from ..._paging import MAX_PAGE_CHARS
from ..._toolkit import EvidenceTool
from ._shared import cut, profiled, show
from .core import Exercise, Result, call, correct, describe, incorrect

__all__ = ["OffloadCase", "SectionCase", "PART8_T0", "decision_cases", "offloaded_handle", "q1", "q2", "section_cases"]

#: When the checker's stores start their clock (the handles say "readable until" an hour later).
PART8_T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _tokens(text: str) -> int:
    return len(cl100k().encode(text, disallowed_special=()))


# -- q1 · offload or not -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OffloadCase:
    """One text q1's checker decides: offloaded iff ``tokens > threshold``."""

    label: str
    text: str
    threshold: int
    tokens: int

    @property
    def chars(self) -> int:
        return len(self.text)

    @property
    def bytes(self) -> int:
        return utf8_bytes(self.text)

    @property
    def over(self) -> bool:
        return self.tokens > self.threshold

    def describe(self) -> str:
        return (f"{self.label} ({self.chars:,} characters, {self.bytes:,} UTF-8 bytes, {self.tokens:,} cl100k tokens) "
                f"with threshold_tokens={self.threshold:,}")


#: Common Chinese characters (one or two cl100k tokens each) and rare ones (three tokens each).
_HANZI = ("的是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多"
          "定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还"
          "因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没"
          "结解问意建月公无系军很情者最立代想已通并提直题程展五果料象员位入常文总次品式活设及管特件长求老头基资边流路级"
          "少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热")
_RARE = "鬱齉ꙮﷺ𠀀"


def _log_lines(rng: random.Random, n: int) -> str:
    return "".join(f"2026-12-0{1 + i // 1440 % 9}T{i // 60 % 24:02}:{i % 60:02}:{rng.randrange(60):02}Z WARN "
                   f"cache-{rng.randrange(16)} evicted {rng.randrange(2, 900)} keys in {rng.randrange(1, 250)} ms\n"
                   for i in range(n))


def _prose(rng: random.Random, n: int) -> str:
    out = []
    for i in range(n):
        out.append(rng.choice(_HANZI))
        if i % 23 == 22:
            out.append("，" if i % 3 else "。")
    return "".join(out)


def _with_tokens(source: str, n: int) -> str:
    """A prefix of ``source`` (or of ``source`` without its first few characters) with exactly ``n`` cl100k tokens:
    Chinese tokens can span two characters, so not every count is some prefix's."""
    for skip in range(40):
        text = source[skip:]
        lo, hi = 0, len(text)
        while lo < hi:  # the longest prefix with at most n tokens
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if _tokens(text[:mid]) <= n else (lo, mid - 1)
        if _tokens(text[:lo]) == n:
            return text[:lo]
    raise ValueError(f"no text of exactly {n} tokens")  # pragma: no cover - the seeds below have one


@cache
def _decision_cases() -> tuple[OffloadCase, ...]:
    rng = random.Random("evidence-exercises/8.1")
    log = _log_lines(rng, 60)
    prose = _prose(rng, 400)
    line = log.splitlines()[0]
    short = (line + " " + line)[:48]
    rare = "".join(rng.choice(_RARE) for _ in range(20))
    cases = [
        ("the empty string", "", 48),
        ("a log line cut to exactly 48 bytes", short, 48),
        ("the same line one byte longer", (line + " " + line)[:49], 48),
        ("log lines of exactly 48 tokens", _with_tokens(log, 48), 48),
        ("log lines of 49 tokens", _with_tokens(log, 49), 48),
        ("Chinese prose", prose[:100], 150),
        ("Chinese prose of exactly 150 tokens", _with_tokens(prose, 150), 150),
        ("Chinese prose of 151 tokens", _with_tokens(prose, 151), 150),
        ("twenty rare characters (鬱, 齉, ꙮ: three tokens each)", rare, 30),
        ("sixteen emoji, exactly 64 bytes", "🙂" * 16, 64),
        ("the word 'ok'", "ok", 1),
        ("the words 'no way'", "no way", 1),
        ("a 200 KB service log", (log * (200_000 // len(log) + 1))[:200_000], 2_000),
        ("log lines of 1,900 tokens", _with_tokens(log * 3, 1_900), 2_000),
        ("10,000 spaces (what deep indentation adds to JSON)", " " * 10_000, 100),
    ]
    return tuple(OffloadCase(label, text, threshold, _tokens(text)) for label, text, threshold in cases)


def decision_cases() -> list[OffloadCase]:
    """The texts and thresholds q1's checker decides (no notebook prints them)."""
    return list(_decision_cases())


#: Wrong rules a learner may write, each with what it gets wrong (said for the first case it decides wrongly).
_RULES: dict[str, tuple[Callable[[OffloadCase], bool], str]] = {
    "characters": (lambda c: c.chars > c.threshold,
                   "you compared characters (len(text)) with the threshold, which counts cl100k tokens: a character "
                   "is often less than a token in English and can be three tokens in Chinese"),
    "bytes": (lambda c: c.bytes > c.threshold,
              "you compared UTF-8 bytes with the threshold: bytes only bound the tokens from above (a token is at "
              "least one byte), they do not count them; past the bound, count the tokens"),
    "chars/4": (lambda c: c.chars / 4 > c.threshold,
                "the chars/4 estimate is not cl100k: it undercounts Chinese (often one token per character or more) "
                "and misses exact thresholds"),
    "chars//4": (lambda c: c.chars // 4 > c.threshold,
                 "the chars/4 estimate is not cl100k: it undercounts Chinese (often one token per character or more) "
                 "and misses exact thresholds"),
    "approx_tokens": (lambda c: -(-(c.chars + 4) // 4) > c.threshold,
                      "langchain's count_tokens_approximately (approx_tokens) is the chars/4 estimate, not cl100k: "
                      "it undercounts Chinese (often one token per character or more) and misses exact thresholds"),
    "at the threshold": (lambda c: c.tokens >= c.threshold,
                         "a text of exactly threshold_tokens tokens is at the threshold, not over it: the middleware "
                         "offloads a result of *more* than threshold_tokens tokens (> , not >=)"),
    "character bound": (lambda c: c.tokens > c.threshold if c.chars > c.threshold else False,
                        "no more characters than the threshold does not mean no more tokens: a character can be "
                        "several tokens (𠀀 is three). The bound that holds is bytes: a cl100k token is at least one "
                        "UTF-8 byte"),
    "always True": (lambda c: True, "your function offloads every text, even one that fits"),
    "always False": (lambda c: False, "your function never offloads"),
}

#: tiktoken's encoding methods: any of them running on a text means the tokenizer ran on it.
_ENCODE_NAMES = ("encode", "encode_ordinary", "encode_batch", "encode_ordinary_batch", "encode_to_numpy",
                 "encode_with_unstable")


def _watched_codes() -> tuple[frozenset, frozenset]:
    import tiktoken

    from ...store._offload import count_tokens_over, offload

    encoders = frozenset(getattr(tiktoken.Encoding, n).__code__ for n in _ENCODE_NAMES
                         if hasattr(getattr(tiktoken.Encoding, n, None), "__code__"))
    return encoders, frozenset({count_tokens_over.__code__, offload.__code__})


@contextmanager
def _watching(encoded: list[int], delegated: list[str]) -> Iterator[None]:
    """Record the UTF-8 bytes of every text the tokenizer is asked to encode, and calls of the library's decision."""
    encoders, library = _watched_codes()

    def on_call(frame: FrameType) -> None:
        if frame.f_code in encoders:
            text = frame.f_locals.get("text")
            for t in (text if isinstance(text, list) else [text]):
                if isinstance(t, str):
                    encoded.append(utf8_bytes(t))
        elif frame.f_code in library:
            delegated.append(frame.f_code.co_name)

    with profiled(on_call):
        yield


def _check_should_offload(should_offload: Any) -> Result:
    if not callable(should_offload):
        return incorrect(f"should_offload should be a function, got {show(should_offload)}")
    cases = _decision_cases()
    answers: list[bool] = []
    encodes: list[list[int]] = []
    for case in cases:
        encoded: list[int] = []
        delegated: list[str] = []
        with _watching(encoded, delegated):
            got = call(should_offload, case.text, case.threshold, name="should_offload")
        if delegated:
            return incorrect(f"should_offload delegates to evidence_lib.store._offload.{delegated[0]}, the library's own "
                             "decision (what EvidenceMiddleware runs): that is what this exercise asks you to write. "
                             "Write the lines yourself; in your own code, reusing count_tokens_over is right")
        if not isinstance(got, bool):
            return incorrect(f"should_offload should return True or False, got {show(got)} for {case.describe()}")
        answers.append(got)
        encodes.append(encoded)
    wrong = [c for c, a in zip(cases, answers) if a != c.over]
    if wrong:
        first = wrong[0]
        said = answers[cases.index(first)]
        where = (f"for {first.describe()} you said {said}, but it is {'offloaded' if first.over else 'kept'} "
                 f"({first.tokens:,} {'>' if first.over else '<='} {first.threshold:,})")
        for rule, because in _RULES.values():
            if all(rule(c) == a for c, a in zip(cases, answers)):
                return incorrect(f"{because}: {where}")
        if all(a and c.bytes > 2 * c.threshold for c, a in zip(cases, answers) if a != c.over):
            return incorrect(f"{where}. Only texts of many UTF-8 bytes were offloaded wrongly: bytes bound tokens from "
                             "above (a token is at least one byte), never from below, so no number of bytes settles "
                             f"that a text is over: this one has {first.bytes / first.threshold:,.0f} times "
                             "threshold_tokens in bytes and is kept. Past the byte bound, count the tokens")
        return incorrect(f"{where}: offloaded means more than threshold_tokens cl100k tokens, counted by the "
                         "tokenizer (cl100k_tokens)")
    for case, encoded in zip(cases, encodes):
        if encoded and case.bytes <= case.threshold:
            edge = " (at most: exactly threshold_tokens bytes too)" if case.bytes == case.threshold and case.bytes else ""
            return incorrect(f"every decision is right, but you ran the tokenizer on {case.describe()}: a cl100k token "
                             f"is at least one UTF-8 byte, so a text of at most threshold_tokens bytes{edge} has at "
                             "most threshold_tokens tokens, and is kept without encoding it (utf8_bytes(text) is "
                             "cheap; Size.of counts the tokens too). The middleware decides for every tool result, "
                             "and most are small")
    big = max(cases, key=lambda c: c.bytes)
    blank = next(c for c in cases if c.text and c.text.isspace())
    return correct(f"all {len(cases)} decisions are right (Chinese prose, characters of three tokens, the empty "
                   f"string, texts exactly at and one over the threshold, a {big.bytes // 1000} KB log, "
                   f"{blank.chars:,} spaces that are {blank.tokens} tokens), and the "
                   "tokenizer ran only on texts with more UTF-8 bytes than the threshold. The library's "
                   "offload (evidence_lib.store._offload) does the same before it decides, and tokenizes a larger text once.")


q1 = Exercise(
    "8.1", "Offload or keep?",
    checker=_check_should_offload,
    ask="fill in should_offload(text, threshold_tokens): True when text has more than threshold_tokens cl100k "
        "tokens, without running the tokenizer when the UTF-8 bytes already settle it, then run this cell again.",
    hints=(
        "The middleware offloads a result when its cl100k tokens are more than the threshold: at the threshold it "
        "stays. Characters and bytes are not tokens, but one of the two is a bound on the tokens that always holds.",
        "Every cl100k token is at least one UTF-8 byte, so a text of at most threshold_tokens bytes (utf8_bytes) "
        "can never be over: answer False without counting tokens. Only a longer text needs cl100k_tokens, however "
        "many bytes it has (runs of spaces are cheap in tokens), and the comparison is strictly greater. Characters "
        "bound nothing: one character can be three tokens.",
        "Shape: if utf8_bytes(text) <= threshold_tokens: return False / return cl100k_tokens(text) > "
        "threshold_tokens.",
    ),
    stub='''
def should_offload(text, threshold_tokens):
    """True when text has more than threshold_tokens cl100k tokens; the tokenizer runs only when it must."""
    return ____
''',
    solution='''
def should_offload(text, threshold_tokens):
    """True when text has more than threshold_tokens cl100k tokens; the tokenizer runs only when it must."""
    if utf8_bytes(text) <= threshold_tokens:
        return False  # a cl100k token is at least one UTF-8 byte
    return cl100k_tokens(text) > threshold_tokens
''',
)


# -- q2 · read a JSON section by its key path -----------------------------------------------------------------------

@dataclass(frozen=True)
class SectionCase:
    """One section q2's checker asks for: ``path`` in the JSON ``text`` that ``tool`` returned."""

    label: str
    tool: str
    text: str
    path: str


def _tickets(rng: random.Random) -> str:
    kinds = ("login", "refund", "shipping", "invoice", "password")
    events = [{"id": f"EV-{5100 + i}", "at": f"2026-11-30T{8 + i // 12:02}:{i * 5 % 60:02}:00Z",
               "kind": rng.choice(kinds), "message": f"customer {rng.randrange(10**5):05} asked about "
                                                    f"{rng.choice(kinds)} (channel {rng.choice(('mail', 'chat'))})",
               "tags": rng.sample(["vip", "eu", "mobile", "repeat", "web"], 2)} for i in range(70)]
    timeline = [{"at": f"2026-11-30T{13 + i}:{rng.randrange(60):02}:00Z",
                 "note": f"step {i + 1}: {rng.choice(('paged', 'called back', 'refund held', 'carrier asked'))} "
                         f"by {rng.choice(('ops-berlin', 'ops-lyon', 'tier2'))}"} for i in range(9)]
    event = {"id": "EV-ESC-9", "kind": "escalation", "owner": "ops-berlin", "timeline": timeline,
             "summary": "Refund for order 88213 held twice by the fraud rule; the customer was promised a call."}
    return json.dumps({"events": events, "event": event}, indent=2)


def _inventory(rng: random.Random) -> str:
    items = [{"sku": f"SKU-{rng.randrange(10**4):04}", "name": "".join(rng.choice(_HANZI) for _ in range(6)),
              "qty": rng.randrange(0, 500), "bin": f"B-{rng.randrange(100):02}"} for _ in range(39)]
    history = [{"date": f"2026-11-{1 + i:02}", "change": rng.randrange(-40, 60),
                "说明": "".join(rng.choice(_HANZI) for _ in range(18))} for i in range(15)]
    items.append({"sku": "SKU-9001", "name": "防潮密封箱（大号）", "qty": 0, "bin": "B-00", "history": history})
    notes = _prose(rng, 1_598)[:1_598]  # with its quotes, a JSON string section of exactly two pages
    return json.dumps({"report": {"warehouse": "华东二号仓", "generated": "2026-12-01T06:00:00Z"}, "notes": notes,
                       "items": items}, indent=2, ensure_ascii=False)


@cache
def _section_cases() -> tuple[SectionCase, ...]:
    rng = random.Random("evidence-exercises/8.2")
    tickets, inventory = _tickets(rng), _inventory(rng)
    return (
        SectionCase("a short string", "list_tickets", tickets, "$.event.owner"),
        SectionCase("the last item, three pages", "stock_report", inventory, "$.items[39]"),
        SectionCase("a string of exactly two pages", "stock_report", inventory, "$.notes"),
        SectionCase("a key that another key listed before it starts with", "list_tickets", tickets, "$.event"),
        SectionCase("the last item of an array", "list_tickets", tickets, "$.events[69]"),
    )


def section_cases() -> list[SectionCase]:
    """The JSON results and key paths q2's checker reads (no notebook prints them)."""
    return list(_section_cases())


def offloaded_handle(text: str, tool: str, *, call_id: str = "call-1") -> tuple[Any, str]:
    """``(middleware, handle text)``: ``text`` returned by ``tool`` and offloaded by a fresh
    :class:`~evidence_lib.integrations.langchain._middleware.EvidenceMiddleware` (memory store, clock at :data:`PART8_T0`, default budget)."""
    from langchain_core.messages import ToolMessage

    from ..._access import Principal
    from ..._clock import ManualClock
    from ...integrations.langchain._middleware import EvidenceMiddleware
    from ...store import MemoryStore

    mw = EvidenceMiddleware(MemoryStore(ManualClock(PART8_T0)), Principal("acme", "dana"), session="part8")
    shown = mw.offloaded(ToolMessage(content=text, name=tool, tool_call_id=call_id), {"id": call_id})
    if not (isinstance(shown.content, str) and shown.content.startswith(f"{tool} returned")):
        raise ValueError(f"{tool}'s result was not offloaded")  # pragma: no cover - every case is large
    return mw, shown.content


class _TooManyCalls(BaseException):
    """Stops a runaway reading loop; a BaseException so ``except Exception`` in learner code cannot eat it."""


def _guarded(tools: Sequence[BaseTool], max_calls: int) -> list[BaseTool]:
    """Copies of the middleware's tools that stop the learner's loop after ``max_calls`` calls."""
    count = [0]
    out: list[BaseTool] = []
    for tool in tools:
        assert isinstance(tool, EvidenceTool)  # the middleware's tools are evidence_tools'
        inner = tool.before_call

        def before(inner: Callable[[], None] | None = inner) -> None:
            count[0] += 1
            if count[0] > max_calls:
                raise _TooManyCalls
            if inner is not None:
                inner()

        out.append(tool.model_copy(update={"before_call": before}))
    return out


_HEADER = re.compile(r"res-[0-9a-f]{10} [@#][0-9a-f]+ \[\d+,\d+\) of \d+")


def _pages(ledger: Any) -> list[tuple[int, int]]:
    return [(e.read.start, e.read.end) for e in ledger.charged if e.read is not None]


def _wrong_section(ledger: Any, listed: dict[str, Any], case: SectionCase, start: int, end: int,
                   where: str) -> Result | None:
    """The diagnosis when the first page read starts another listed section (a path that starts with ours)."""
    pages = _pages(ledger)
    if not pages or pages[0][0] == start:
        return None
    for path, s in listed.items():
        if path != case.path and path.startswith(case.path) and s.start == pages[0][0]:
            return incorrect(f"you are reading {path} [{s.start}, {s.end}), not {case.path} [{start}, {end}) {where}: "
                             f"find the line whose key path is exactly {case.path} (the word after '- '), not one "
                             "that merely starts with it")
    return None


def _refused(code: str, reason: str | None, ledger: Any, start: int, end: int, where: str) -> Result:
    pages = _pages(ledger)
    n = end - start
    covered = bool(pages) and min(s for s, _ in pages) <= start and max(e for _, e in pages) >= end
    if code == "invalid_page_bounds":
        if covered:
            return incorrect(f"after the last page of the section you asked for one more, and read_evidence refused "
                             f"it with invalid_page_bounds {where}: stop when offset reaches the section's end (a "
                             "limit of 0 is refused)")
        return incorrect(f"read_evidence refused a call with invalid_page_bounds {where}: limit is 1 to "
                         f"{MAX_PAGE_CHARS} characters and offset >= 0, and the section is {n:,} characters: read it "
                         f"in pages of at most {MAX_PAGE_CHARS}")
    if code == "budget_exhausted":
        sizes = sorted({e - s for s, e in pages})
        return incorrect(f"the task's budget refused a call (budget_exhausted, {reason}) {where}, after {len(pages)} "
                         f"pages of {', '.join(map(str, sizes))} characters: the section is {n:,} characters, so "
                         f"{-(-n // MAX_PAGE_CHARS)} pages of up to {MAX_PAGE_CHARS} hold it (without limit a page is "
                         "300 characters)")
    if code == "unknown_doc_id":
        return incorrect(f"read_evidence answered unknown_doc_id {where}: take the doc_id from the handle, the res-… "
                         "after 'stored as'")
    if code == "invalid_arguments":
        return incorrect(f"read_evidence refused a call with invalid_arguments {where}: doc_id is a str, offset and "
                         "limit are ints")
    return incorrect(f"read_evidence refused a call with {code} {where}")


def _already_read(ledger: Any, where: str) -> Result | None:
    """The diagnosis when a read came back already_read (no text): after a locate's excerpts, or a range read twice."""
    repeated = next((e for e in ledger.charged if e.status == "already_read" and e.covered), None)
    if repeated is None:
        return None
    _, s, e = repeated.covered
    shown = [x for entry in ledger.charged for x in entry.excerpts if x.start <= s and e <= x.end]
    if shown:
        return incorrect(f"read_evidence answered [{s}, {e}) with an already_read reply {where}, without text: your "
                         f"locate_evidence call had already served [{shown[0].start}, {shown[0].end}) as an excerpt, "
                         "and the ledger never sends a range twice. The handle already gives the section's [start, "
                         "end): read it with read_evidence alone, no locate")
    return incorrect(f"read_evidence answered [{s}, {e}) with an already_read reply {where}, without text: you read "
                     "a range twice; each page starts where the last one ended")


def _mismatch(got: str, want: str, case: SectionCase, listed: dict[str, Any], start: int, end: int,
              where: str, ledger: Any) -> Result:
    for path, s in listed.items():
        if path != case.path and got == case.text[s.start:s.end]:
            return incorrect(f"you returned the text of {path} [{s.start}, {s.end}), not of {case.path} [{start}, "
                             f"{end}) {where}: find the line whose key path is exactly {case.path} (the word after "
                             "'- '), not one that merely starts with it")
    if _HEADER.search(got):
        return incorrect(f"your text holds a reply's first line (res-… [start,end) of total next …) {where}: that "
                         "line is the page's header; the page's text is what follows the first newline")
    if (repeat := _already_read(ledger, where)) is not None:
        return repeat
    n = len(want)
    if got and want.startswith(got):
        tip = ("the page's first line says next <offset>: read on from there until offset reaches the section's end "
               f"({end:,}), not until a header says 'end'" if len(got) <= MAX_PAGE_CHARS
               else f"read on until offset reaches the section's end ({end:,})")
        if len(got) == n - 1:
            tip = "the section is text[start:end], all end - start characters"
        return incorrect(f"your text is the first {len(got):,} of the section's {n:,} characters {where}: {tip}")
    if got.startswith(want) and len(got) > n:
        tip = (": [start, end) is half-open, the character at end is not part of the section" if len(got) == n + 1
               else f": ask only for what is left of the section, limit=min({MAX_PAGE_CHARS}, end - offset) (without "
                    "limit, read_evidence reads 300 characters)")
        return incorrect(f"your text has {len(got) - n:,} character{'s' if len(got) - n > 1 else ''} after the "
                         f"section's end {where}{tip}")
    at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), n))
    return incorrect(f"your text ({len(got):,} characters) differs from the section ({n:,} characters) first at "
                     f"character {at:,} {where}: it starts {cut(got[:20])}, the section starts {cut(want[:20])}")


def _check_read_section(read_section: Any) -> Result:
    from ...store._offload import json_sections

    if not callable(read_section):
        return incorrect(f"read_section should be a function, got {show(read_section)}")
    cases = _section_cases()
    for case in cases:
        mw, handle = offloaded_handle(case.text, case.tool)
        listed = {s.path: s for s in json_sections(case.text)}
        section = listed[case.path]
        start, end = section.start, section.end
        want = case.text[start:end]
        where = f"for {case.path} [{start}, {end}) of {case.tool}'s result ({case.label}, {end - start:,} characters)"
        needed = -(-len(want) // MAX_PAGE_CHARS)
        tools = _guarded(list(mw.tools), 3 * needed + 10)
        try:
            got = call(read_section, tools, handle, case.path, name="read_section")
        except _TooManyCalls:
            return _wrong_section(mw.ledger, listed, case, start, end, where) or \
                incorrect(f"read_section made more than {3 * needed + 10} tool calls {where}: is offset moving to "
                          "the next page after every read, and does the loop stop at end?")
        except EvidenceError as e:
            return _wrong_section(mw.ledger, listed, case, start, end, where) or \
                _refused(e.code, e.details.get("reason"), mw.ledger, start, end, where)
        except json.JSONDecodeError as e:
            return incorrect(f"your code raised JSONDecodeError: {e.msg} {where}: the middleware's read_evidence "
                             "replies in the compact profile, not JSON: a first line 'doc_id … [start,end) of total "
                             "next <offset>' (or 'end'), then the text verbatim")
        except Exception as e:
            if not mw.ledger.refusals:
                raise
            first = mw.ledger.refusals[0]
            cause = _wrong_section(mw.ledger, listed, case, start, end, where) or \
                _refused(first.status, first.reason, mw.ledger, start, end, where)
            return incorrect(f"your code raised {describe(e)} on a refusal: {cause.message}")
        refusals = mw.ledger.refusals
        if refusals:
            first = refusals[0]
            return _wrong_section(mw.ledger, listed, case, start, end, where) or \
                _refused(first.status, first.reason, mw.ledger, start, end, where)
        if not isinstance(got, str):
            return incorrect(f"read_section should return the section's text (a str), got {show(got)} {where}")
        if got != want:
            return _wrong_section(mw.ledger, listed, case, start, end, where) or \
                _mismatch(got, want, case, listed, start, end, where, mw.ledger)
        pages = _pages(mw.ledger)
        outside = [(s, e) for s, e in pages if s < start or e > end]
        if outside or any(c.excerpts for c in mw.ledger.charged):
            lo, hi = outside[0] if outside else (start, end)
            extra = (max(start - lo, 0) + max(hi - end, 0)) if outside else 0
            what = (f"your read of [{lo}, {hi}) served {extra:,} characters outside the section" if outside
                    else "locate_evidence served excerpts")
            return incorrect(f"the text is right, but {what} {where}: ask for limit=min({MAX_PAGE_CHARS}, end - "
                             "offset), so only the section enters the context")
        if len(pages) > needed or len(mw.ledger.charged) > needed:
            return incorrect(f"the text is right, but you made {len(mw.ledger.charged)} calls {where}, where "
                             f"{needed} page{'s' if needed > 1 else ''} of up to {MAX_PAGE_CHARS} characters hold it: "
                             "every call is a model turn and a charge on the budget")
    return correct(f"all {len(cases)} sections come back exactly (a short string, a section of three pages, one of "
                   f"exactly two, a key that another key starts with, an array's last item), each read in the fewest "
                   f"pages of at most {MAX_PAGE_CHARS} characters, none outside the section, no call refused. A model "
                   "with the handle can do the same: the handle's [start, end) is all it needs.")


q2 = Exercise(
    "8.2", "A JSON section, by key path",
    checker=_check_read_section,
    ask="fill in read_section(tools, handle, path): the exact text of the JSON section at path, found in the handle "
        "and read with the tools' read_evidence in bounded pages, then run this cell again.",
    hints=(
        "The handle already says where the section lies: each line under 'JSON sections' is '- <key path> <kind> "
        "[start, end)'. You want the stored result's characters start to end - 1, and read_evidence fetches at most "
        "800 of them per call.",
        "Take the doc_id after 'stored as' and the line whose key path is exactly path (another path may start with "
        "it). Read from offset=start asking only for what is left of the section, at most 800 (MAX_PAGE_CHARS). A "
        "compact reply's first line ends with 'next <offset>' or 'end'; the text follows the first newline. Move "
        "offset on and stop when it reaches the section's end (a header says 'end' only at the result's end).",
        "Shape: read = next(t for t in tools if t.name == 'read_evidence'); start, end from re.findall(r'^- (\\S+) "
        ".*\\[(\\d+), (\\d+)\\)$', handle, re.M); while offset < end: reply = read.invoke({'doc_id': doc_id, "
        "'offset': offset, 'limit': min(MAX_PAGE_CHARS, end - offset)}); head, text = reply.split('\\n', 1); "
        "keep text; offset = the number after 'next'.",
    ),
    stub='''
def read_section(tools, handle, path):
    """The exact text of the JSON section at key path, read in pages of at most MAX_PAGE_CHARS characters."""
    return ____
''',
    solution='''
def read_section(tools, handle, path):
    """The exact text of the JSON section at key path, read in pages of at most MAX_PAGE_CHARS characters."""
    read = next(t for t in tools if t.name == "read_evidence")
    doc_id = re.search(r"stored as (res-[0-9a-f]+)", handle)[1]
    lines = re.findall(r"^- (\\S+) .*\\[(\\d+), (\\d+)\\)$", handle, re.MULTILINE)
    start, end = next((int(s), int(e)) for p, s, e in lines if p == path)
    parts, offset = [], start
    while offset < end:
        reply = read.invoke({"doc_id": doc_id, "offset": offset, "limit": min(MAX_PAGE_CHARS, end - offset)})
        head, text = reply.split("\\n", 1)
        parts.append(text)
        found = re.search(r" next (\\d+)$", head)
        offset = int(found[1]) if found else end
    return "".join(parts)
''',
)
