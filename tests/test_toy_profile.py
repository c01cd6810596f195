"""Issue 32: a new profile is one module plus one registration line. The toy profile below is defined here, registered
by the one line in the ``toy`` fixture, and then searched, located, read, parsed and audited through the library as
it is: no other module is touched.

Its format is its own (``key=value`` header lines, then text), so nothing in the library can read it unless the
profile itself says how (:meth:`~evidence_lib.profiles.Profile.read_reply`): the audit finding a citation read, and
flagging one that was not, proves the registry is the one place the audit learns a format from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from evidence_lib import (
    EvidenceIndex,
    IndexEntry,
    Ledger,
    LocateOptions,
    ReadRecord,
    evidence_tools,
    format_answer,
    run_tool_call,
    tool_call,
)
from evidence_lib.audit import check_history, steps
from evidence_lib.course.article import article_corpus
from evidence_lib.profiles import ARTICLE, PROFILES, Profile, profile_of, register
from evidence_lib.profiles._base import ToolSession  # the session as a profile sees it (typed, not Any)

_HEAD = re.compile(r"^(\w+)((?: \w+=\S*)*)$")


def _fields(line: str) -> tuple[str, dict[str, str]] | None:
    """``kind key=value ...`` read back."""
    m = _HEAD.match(line)
    return (m[1], dict(p.split("=", 1) for p in m[2].split())) if m else None


class ToyProfile(Profile):
    """Replies as ``kind key=value ...`` lines; locate shows the line of each document's first match."""

    name = "toy"

    @property
    def system_prompt(self) -> str:
        return "TOY. " + ARTICLE.system_prompt

    def search_description(self, fixed: bool) -> str:
        return "List candidates as 'row doc=... rev=...' lines."

    def locate_description(self, opts: LocateOptions, extended: bool) -> str:
        return f"Find a term (1-{opts.max_term_chars} characters): the line of its first match per document."

    def read_description(self) -> str:
        return "Read a page: 'page doc=... rev=... sha=... start=... end=... next=...' then the text."

    def extended(self, fixed: bool) -> bool:
        return False

    def default_locate_options(self) -> LocateOptions:
        return LocateOptions()

    def manifest(self, session: ToolSession, rows: list[dict[str, object]], cursor: int, total: int,
                 next_cursor: int | None, unfilled: tuple[int, int] | None, *, unsure: bool = False) -> str:
        return "\n".join([f"manifest total={total}"] + [f"row doc={r['doc_id']} rev={r['revision']}" for r in rows])

    def locate(self, session: ToolSession, term: str, entry: IndexEntry | None,
               cursor: int) -> tuple[str, list[ReadRecord]]:
        """Its own computation, through the typed session: the line around each document's first match."""
        entries = {e.doc_id: e for e in ([entry] if entry is not None else session.readable())}
        lines, shown = [f"locate term={term}"], []
        for doc_id, offset in session.index.find(term, list(entries), session.principal, first_only=True):
            e = entries[doc_id]
            text = session.index.text(doc_id, session.principal)
            start, end = text.rfind("\n", 0, offset) + 1, text.find("\n", offset) % (len(text) + 1)
            read = ReadRecord(doc_id, e.revision, start, end, e.sha256)
            lines += [f"hit doc={doc_id} rev={read.revision} sha={e.sha256} start={start} end={end}", text[start:end]]
            shown.append(read)
        return "\n".join(lines), shown

    def page(self, session: ToolSession, entry: IndexEntry, body: Mapping[str, Any]) -> str:
        nxt = "" if body["next_offset"] is None else body["next_offset"]
        return (f"page doc={body['doc_id']} rev={body['revision']} sha={body['sha256']} start={body['start']} "
                f"end={body['end']} next={nxt}\n{body['text']}")

    def manifest_shown(self, content: str) -> list[tuple[str, str]]:
        return [(f["doc"], "") for line in content.split("\n")[1:] if (p := _fields(line)) for f in [p[1]]]

    def located(self, content: str) -> list[str]:
        return [p[1]["doc"] for line in content.split("\n") if (p := _fields(line)) and p[0] == "hit"]

    def match_offsets(self, content: str, doc_id: str) -> tuple[list[int], int | None]:
        return [int(p[1]["start"]) for line in content.split("\n") if (p := _fields(line)) and p[0] == "hit"
                and p[1]["doc"] == doc_id], None

    def next_offset(self, content: str) -> int | None:
        head = _fields(content.split("\n", 1)[0])
        return int(head[1]["next"]) if head and head[1].get("next") else None

    def read_reply(self, tool: str, content: str) -> Any:
        """The toy replies in the article's shapes (what the audit reads)."""
        head = _fields(content.split("\n", 1)[0])
        if head is None:
            return None
        if tool == "search_evidence" and head[0] == "manifest":
            return [{"doc_id": f["doc"], "revision": f["rev"]} for line in content.split("\n")[1:]
                    if (p := _fields(line)) for f in [p[1]]]
        if tool == "locate_evidence" and head[0] == "locate":
            lines = content.split("\n")
            return {"excerpts": [self._page(p[1], lines[i + 1]) for i, line in enumerate(lines)
                                 if (p := _fields(line)) and p[0] == "hit"]}
        if tool == "read_evidence" and head[0] == "page":
            return self._page(head[1], content.split("\n", 1)[1])
        return None

    @staticmethod
    def _page(f: dict[str, str], text: str) -> dict[str, Any]:
        return {"doc_id": f["doc"], "revision": f["rev"], "sha256": f["sha"], "start": int(f["start"]),
                "end": int(f["end"]), "text": text}


@pytest.fixture
def toy():
    profile = register(ToyProfile())  # the one registration line
    yield profile
    del PROFILES["toy"]


def _run(tools: list, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """A history as an agent leaves it: each call in an AIMessage, its ToolMessage after it."""
    messages: list[Any] = [SystemMessage(profile_of("toy").system_prompt), HumanMessage("单批上限是多少？")]
    for i, (name, args) in enumerate(calls):
        messages.append(AIMessage("", tool_calls=[tool_call(name, args, f"c{i}")]))
        messages.append(run_tool_call(tools, tool_call(name, args, f"c{i}")))
    return messages


def test_a_toy_profile_registered_by_one_line_is_searched_located_read_parsed_and_audited(toy):
    index = EvidenceIndex.in_memory(article_corpus())
    ledger = Ledger()
    tools = evidence_tools(index, ledger=ledger, profile="toy")  # by its registered name
    assert tools[0].description == "List candidates as 'row doc=... rev=...' lines."
    messages = _run(tools, [("search_evidence", {"query": "批处理上限"}), ("locate_evidence", {"term": "单批上限"}),
                            ("read_evidence", {"doc_id": "d03", "offset": 4300, "limit": 39})])
    search, locate, read = (m for m in messages if isinstance(m, ToolMessage))
    assert search.content.startswith("manifest total=") and "row doc=d03" in search.content
    assert locate.content.startswith("locate term=单批上限\nhit doc=d03")
    assert read.content.startswith("page doc=d03 ") and read.content.endswith("单批上限为200条，超时设为30秒。")
    assert ledger.totals()["calls"] == 3 and len(ledger.reads) == 2  # the excerpt shown and the page read

    # parse: the audit reads the toy replies in the article's shapes, through the profile registered
    parsed = steps(messages)
    assert [s.kind for s in parsed] == ["manifest", "locate", "page"]
    assert [r["doc_id"] for r in parsed[0].rows()][:1] and parsed[2].body["start"] == 4300
    excerpt = parsed[1].pages()[0]
    assert excerpt["doc_id"] == "d03" and "单批上限" in excerpt["text"]
    assert toy.located(locate.content) == ["d03"] and toy.next_offset(read.content) is None  # the end of d03

    # audit: a citation of the page read passes, one of text never shown is flagged
    page = parsed[2].body
    good = format_answer("单批上限为200条。 [1]", [(page["doc_id"], page["revision"], page["start"], page["end"],
                                                   page["text"])])
    assert check_history([*messages, AIMessage(good)]) == []
    bad = format_answer("单批上限为200条。 [1]", [("d03", page["revision"], 10, 40, None)])
    assert [f.code for f in check_history([*messages, AIMessage(bad)])] == ["citation_never_read"]


def test_the_toy_profile_is_unknown_once_unregistered():
    assert "toy" not in PROFILES
    with pytest.raises(ValueError, match="profile is one of"):
        evidence_tools(EvidenceIndex.in_memory(article_corpus()), profile="toy")
