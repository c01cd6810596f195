"""What the tools' replies look like, in two profiles, and the one parser that reads them back. Notebook 08.

``article`` is the first article's JSON, byte-exact (the teaching default). ``compact`` carries the
same guarantees in fewer bytes and tokens: every piece of document text comes with ``doc_id``,
``revision`` and its half-open ``[start, end)``; the full sha256 reaches the model the first time a
document appears in a turn and later as its first 12 hex digits; locate returns short excerpts
(sentence-bounded windows around each match) that can be cited directly. The formats::

    manifest   candidates 1-12 of 12:            (then, when rows were left out: "next cursor 20")
               d00 批处理说明 0                    one row per document: doc_id, a space, title
    locate     locate "单批上限": 1 match          or: locate "x" in d03: matches 1-5 of 12, next cursor 5
               d03 2026-10-27 <sha256>            one block per document ...
               [4321,4339) "单批上限为200条，超时设为30秒。"   ... one line per excerpt, text as a JSON string
    read       d03 2026-10-27 <sha256> [3539,4339) of 4339 end      (or: next 4339)
               <the page's text, verbatim, after the first newline>

:func:`excerpts` turns any reply of either profile back into :class:`Excerpt` objects, resolving
short hashes against full ones seen earlier: citations are built from that, in one place.
:func:`manifest_rows` reads a compact manifest back (it carries no text, so nothing to cite).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .lines import quoted, shown_revision, text_line, token

Profile = Literal["article", "compact"]
PROFILES: tuple[Profile, ...] = ("article", "compact")
SHORT_SHA = 12
#: How far an excerpt may reach back to the start of the sentence holding a match, and forward to its end.
WINDOW_BEFORE, WINDOW_AFTER = 160, 240
_SENTENCE_END = re.compile(r"[。！？；]|[.!?](?=\s)|\n[ \t]*\n")
COMPACT_TITLE_CHARS = 80


@dataclass(frozen=True)
class Excerpt:
    """Document text the model was shown, with what it needs to cite it."""

    doc_id: str
    revision: str
    start: int
    end: int
    sha256: str  # full hex once resolved; may be a 12-hex prefix before
    text: str

    def citation(self):  # -> Citation (imported lazily: citations import the index)
        from .citations import Citation

        return Citation(self.doc_id, self.revision, self.start, self.end, self.sha256, self.text)


def window(text: str, start: int, end: int, before: int = WINDOW_BEFORE, after: int = WINDOW_AFTER) -> tuple[int, int]:
    """A sentence-bounded ``[s, e)`` around ``text[start:end]``: back to a sentence start, forward to its end.

    A sentence ends at 。！？； or at ``. ! ?`` before white space, and a blank line ends a paragraph (a single
    line break is only wrapping). The window reaches at most ``before`` characters back and ``after`` forward
    (``WINDOW_BEFORE`` and ``WINDOW_AFTER`` by default; pass ``len(text)`` for the whole sentence), and never starts
    or ends in white space.
    """
    lo, hi = max(0, start - before), min(len(text), end + after)
    s = -1
    for m in _SENTENCE_END.finditer(text, lo, start):
        s = m.end()
    if s < 0:  # no sentence start in reach: start at a line start (or a word start) instead of mid-word
        nl = text.rfind("\n", lo, start)
        s = nl + 1 if nl >= 0 else (lo if lo == 0 or text[lo - 1].isspace() else text.find(" ", lo, start) + 1 or lo)
    m = _SENTENCE_END.search(text, end, hi)
    if m:
        e = m.start() if m[0].startswith("\n") else m.end()
    else:
        nl = text.rfind("\n", end, hi)
        e = nl if nl >= 0 else hi
    while s < start and text[s].isspace():
        s += 1
    while e > end and text[e - 1].isspace():
        e -= 1
    return min(s, start), max(e, end)


def sha_label(sha256: str, first_time: bool) -> str:
    return sha256 if first_time else sha256[:SHORT_SHA] + "…"


def block_header(doc_id: str, revision: str, sha256: str, first_time: bool) -> str:
    return f"{token(doc_id)} {token(shown_revision(revision))} {sha_label(sha256, first_time)}"


def compact_manifest(rows: Sequence[tuple[str, str]], first: int, total: int, next_cursor: int | None, *,
                     unfilled: tuple[int, int] | None = None) -> str:
    """``candidates a-b of n:`` then ``doc_id title`` per row (both escaped by :mod:`evidence_lib.lines`).

    ``unfilled=(empty, k)``: ``empty`` of the ``k`` results asked of a retriever hold nothing the caller may see.
    """
    head = f"candidates {first + 1}-{first + len(rows)} of {total}:" if rows else f"candidates: none of {total}"
    if next_cursor is not None:
        head += f" (next cursor {next_cursor})"
    if unfilled is not None:
        head += f" ({unfilled[0]} of {unfilled[1]} asked: empty)"
    lines = [head] + [f"{token(d)} {text_line(' '.join(t.split())[:COMPACT_TITLE_CHARS])}" for d, t in rows]
    return "\n".join(lines)


def compact_locate(term: str, blocks: Sequence[tuple[str, str, str, bool, Sequence[tuple[int, int, str]]]],
                   doc_id: str | None, first: int, total: int, next_cursor: int | None, shown: int) -> str:
    """Excerpt blocks ``(doc_id, revision, sha256, first_time, [(start, end, text), ...])`` for ``shown`` matches
    (overlapping excerpts are merged, so a block may hold fewer excerpts than matches)."""
    scope = f" in {token(doc_id)}" if doc_id is not None else ""
    if total == 0:
        return (f"locate {quoted(term)}{scope}: no literal match (not evidence that the "
                "answer is absent; try another word)")
    if doc_id is None:
        head = (f"locate {quoted(term)}: first match in {shown} document"
                f"{'s' if shown != 1 else ''}" + (f" ({first + 1}-{first + shown})" if first else ""))
    else:
        head = f"locate {quoted(term)}{scope}: matches {first + 1}-{first + shown} of {total}"
    if next_cursor is not None:
        head += f", next cursor {next_cursor}"
    lines = [head]
    for d, rev, sha, first_time, spans in blocks:
        lines.append(block_header(d, rev, sha, first_time))
        lines.extend(f"[{s},{e}) {quoted(t)}" for s, e, t in spans)
    return "\n".join(lines)


def compact_page(doc_id: str, revision: str, sha256: str, first_time: bool, start: int, end: int, total: int,
                 next_offset: int | None, text: str) -> str:
    tail = "end" if next_offset is None else f"next {next_offset}"
    return f"{block_header(doc_id, revision, sha256, first_time)} [{start},{end}) of {total} {tail}\n{text}"


# -- reading replies back --------------------------------------------------------------------------------

_TOK = r'("(?:[^"\\]|\\.)*"|\S+)'
_HEADER = re.compile(rf"^{_TOK} {_TOK} ([0-9a-f]{{64}}|[0-9a-f]{{{SHORT_SHA}}}…)$")
_PAGE = re.compile(rf"^{_TOK} {_TOK} ([0-9a-f]{{64}}|[0-9a-f]{{{SHORT_SHA}}}…) \[(\d+),(\d+)\) of (\d+) (end|next \d+)$")
_SPAN = re.compile(r"^\[(\d+),(\d+)\) (\".*\")$")
_CANDIDATES = re.compile(r"^candidates(?: \d+-\d+ of (\d+):|: none of (\d+))(?: \(next cursor (\d+)\))?"
                         r"(?: \(\d+ of \d+ asked: empty\))?$")
_ROW = re.compile(rf"^{_TOK}(?: (.*))?$")


def _untoken(t: str) -> str:
    return json.loads(t) if t.startswith('"') else t


def _from_json(content: str) -> list[Excerpt]:
    try:
        body = json.loads(content)
    except (TypeError, ValueError):
        return []
    if isinstance(body, Mapping) and isinstance(body.get("text"), str) and "sha256" in body and "start" in body:
        return [Excerpt(body["doc_id"], body["revision"], body["start"], body["end"], body["sha256"], body["text"])]
    return []


def _from_compact(content: str) -> list[Excerpt]:
    first, _, rest = content.partition("\n")
    m = _PAGE.match(first)
    if m:
        d, rev, sha, s, e = _untoken(m[1]), _untoken(m[2]), m[3], int(m[4]), int(m[5])
        return [Excerpt(d, rev, s, e, sha, rest)]
    if not first.startswith("locate "):
        return []
    out, current = [], None
    for line in rest.split("\n"):
        h = _HEADER.match(line)
        if h:
            current = (_untoken(h[1]), _untoken(h[2]), h[3])
            continue
        sp = _SPAN.match(line)
        if sp and current is not None:
            out.append(Excerpt(current[0], current[1], int(sp[1]), int(sp[2]), current[2], json.loads(sp[3])))
    return out


def excerpts(contents: Iterable[str | Any]) -> list[Excerpt]:
    """Every excerpt in a sequence of tool replies (either profile; ``ToolMessage``s or strings), in order.

    Short hashes are resolved against a full hash of the same ``(doc_id, revision)`` seen earlier;
    an excerpt whose hash cannot be resolved keeps its prefix (and will not verify).
    """
    full: dict[tuple[str, str], str] = {}
    out = []
    for c in contents:
        if getattr(c, "status", "success") == "error":
            continue
        text = c if isinstance(c, str) else getattr(c, "content", "")
        if not isinstance(text, str):
            continue
        found = _from_json(text) if text.startswith("{") else _from_compact(text)
        for x in found:
            key = (x.doc_id, x.revision)
            if len(x.sha256) == 64:
                full[key] = x.sha256
            elif key in full and full[key].startswith(x.sha256.rstrip("…")):
                x = Excerpt(x.doc_id, x.revision, x.start, x.end, full[key], x.text)
            out.append(x)
    return out


def manifest_rows(content: str) -> tuple[list[tuple[str, str]], int, int | None] | None:
    """A compact manifest read back: its ``(doc_id, title)`` rows, the total and the next cursor; else ``None``."""
    first, _, rest = content.partition("\n") if isinstance(content, str) else ("", "", "")
    m = _CANDIDATES.match(first)
    if m is None:
        return None
    rows = []
    for line in filter(None, rest.split("\n")):
        r = _ROW.match(line)
        try:
            rows.append((_untoken(r[1]), _untoken(r[2]) if r[2] else ""))
        except (TypeError, ValueError):  # no row, or a quoted doc_id that is not a JSON string
            continue
    return rows, int(m[1] or m[2]), int(m[3]) if m[3] else None
