"""Issues 10 and 11: a wrapped locate stays bounded in what it shows and proportional to the text in what it does.

A compact locate matches a term across a line wrap (:mod:`evidence_lib._locate`): ``上\\n<indentation>限`` is a
match of ``上限`` however deep the indentation. Issue 10: the excerpt around such a match used to hold all of the
match, so a 40,000-space wrap made a 40 KB reply that the middleware's default budget refused (the match could
never be located). Issue 11: past 64 characters of indentation, finding where each match ends re-read and
re-verified the whole document, once per match. These tests use real indexes, a real SQLite store file and a real
``create_agent`` run with an offline model; they count work (whole-document reads, characters fetched), never time.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evidence_lib import Document, EvidenceIndex, LocateOptions, ManualClock, Principal, evidence_tools
from evidence_lib._citations import verify_citation
from evidence_lib._ledger import Budget, Ledger
from evidence_lib._locate import find_spans, match_end_within
from evidence_lib.profiles import excerpts
from evidence_lib.profiles._compact import (
    MAX_EXCERPT_CHARS,
    MAX_MATCH_SHOWN,
    WINDOW_AFTER,
    WINDOW_BEFORE,
    located_documents,
)
from evidence_lib.store import SQLiteStore

T0 = datetime(2026, 12, 1, 9, tzinfo=UTC)
HOUR = timedelta(hours=1)
WRAPPED = LocateOptions(wrapped=True)
WRAPPED_NFC = LocateOptions(wrapped=True, normalization="NFC")
DEEP = "配置说明：单批上\n" + " " * 40_000 + "限为200条，超时设为30秒。"
#: A tool result large enough to be offloaded (white space tokenizes densely), holding the deep wrap.
RESULT = "".join(f"line {i} INFO ok\n" for i in range(3_000)) + DEEP
CONTINUES = re.compile(r"^\(a match here continues to offset (\d+): read_evidence there for the rest\)$", re.M)
#: What one compact locate reply may hold at most: a head line, an "also:" line, and per excerpt a block line, its
#: span line (the text JSON-quoted: at most 6 characters per character) and one "continues" line.
REPLY_BOUND = 400 + 20 * 40 + 20 * (200 + 6 * MAX_EXCERPT_CHARS + 80)


def locate(tools, **args) -> str:
    return tools[1].invoke(args)


def continued(reply: str) -> list[int]:
    """The offsets the reply's "continues" lines name, in order."""
    return [int(m) for m in CONTINUES.findall(reply)]


def reaches(reply: str) -> dict[tuple[int, int], int]:
    """Per excerpt ``(start, end)``, how far its matches reach: a "continues" line after its span line, else its end."""
    out, last = {}, None
    for line in reply.split("\n"):
        span = re.match(r"^\[(\d+),(\d+)\) ", line)
        if span:
            last = (int(span[1]), int(span[2]))
            out[last] = last[1]
        elif (m := CONTINUES.match(line)) and last is not None:
            out[last] = int(m[1])
    return out


# -- issue 10: an excerpt is bounded whatever the wrap -------------------------------------------------------

def test_the_excerpt_bound_leaves_room_for_the_window_around_a_shown_match():
    """Issue 10: a window reaches WINDOW_BEFORE back and WINDOW_AFTER past the part of a match it shows, so the
    part shown is what the excerpt bound leaves; a literal term of the longest default length is never cut."""
    assert MAX_MATCH_SHOWN == MAX_EXCERPT_CHARS - WINDOW_BEFORE - WINDOW_AFTER
    assert MAX_MATCH_SHOWN >= LocateOptions().max_term_chars


def test_a_match_across_a_40000_space_wrap_is_located_with_a_bounded_excerpt_that_verifies(tmp_path):
    """Issue 10: the compact locate finds 上限 across the wrap, shows the text around the match's start (bounded),
    says where the match ends, and the excerpt's citation verifies against the stored bytes."""
    index = EvidenceIndex.build([Document("d1", "t", "r1", DEEP)], tmp_path / "idx")
    ledger = Ledger(Budget())
    tools = evidence_tools(index, ledger=ledger, profile="compact")
    reply = locate(tools, term="上限")
    assert len(reply) < 600, len(reply)
    assert reply.startswith("locate: 1 match")
    (x,) = excerpts([reply])
    start = DEEP.index("上")
    assert x.start <= start < x.end <= start + MAX_MATCH_SHOWN and x.text == DEEP[x.start:x.end]
    assert x.text.endswith("单批上")  # the excerpt stops at the last character of the match it shows
    assert continued(reply) == [DEEP.index("限") + 1]  # the match's true end, where read_evidence finds the rest
    assert verify_citation(index, x.citation(), ledger).ok
    (page,) = excerpts([tools[2].invoke({"doc_id": "d1", "offset": DEEP.index("限") - 10, "limit": 40})])
    assert "限为200条" in page.text


def test_a_deep_wrap_is_bounded_through_the_doc_id_scope_and_on_a_store(tmp_path):
    """Issue 10: the same bound when locate is restricted to one document, over a SQLite store's snapshot."""
    store = SQLiteStore(tmp_path / "s.db", ManualClock(T0))
    try:
        snap = store.put_snapshot("acme", "s", "q", [Document("d1", "t", "r1", DEEP * 3)], ttl=HOUR)
        ledger = Ledger(Budget())
        tools = evidence_tools(snap, ledger=ledger, profile="compact")
        reply = locate(tools, term="上限", doc_id="d1")
        assert reply.startswith("locate in d1: 3 matches") and len(reply) < 1500, len(reply)
        shown = excerpts([reply])
        assert len(shown) == 3 and all(x.end - x.start <= MAX_EXCERPT_CHARS for x in shown)
        ends = [m.end() for m in re.finditer("限", DEEP * 3)]
        assert continued(reply) == ends
        assert all(verify_citation(snap, x.citation(), ledger).ok for x in shown)
    finally:
        store.close()


def test_a_long_match_keeps_the_window_before_it_and_a_short_one_is_unchanged():
    """Issue 10: a cut match still shows its sentence's start; a wrap under the bound shows the whole sentence."""
    text = "第一句。配置说明：单批上\n" + " " * 500 + "限为200条。第三句。"
    tools = evidence_tools(EvidenceIndex.in_memory([Document("d", "t", "r", text)]), profile="compact")
    (x,) = excerpts([locate(tools, term="上限")])
    assert x.text == "配置说明：单批上"
    shallow = "第一句。配置说明：单批上\n" + " " * 100 + "限为200条。第三句。"
    tools = evidence_tools(EvidenceIndex.in_memory([Document("d", "t", "r", shallow)]), profile="compact")
    reply = locate(tools, term="上限")
    (x,) = excerpts([reply])
    assert x.text == "配置说明：单批上\n" + " " * 100 + "限为200条。" and continued(reply) == []


def test_through_the_middleware_a_deep_wrap_is_located_within_the_default_budget_and_cited():
    """Issue 10: an offloaded result with a 40,000-space wrap; the agent's locate is not refused by the default
    Budget, its reply is bounded, and the answer citing the excerpt verifies."""
    pytest.importorskip("langchain.agents", reason="the agents extra (langchain>=1)")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool

    from evidence_lib._answers import format_answer
    from evidence_lib.course.readers import PolicyChatModel
    from evidence_lib.integrations.langchain._middleware import EvidenceMiddleware
    from evidence_lib.store import MemoryStore

    @tool
    def get_config(name: str) -> str:
        """The configuration notes (large)."""
        return RESULT

    class Reader:
        """Calls the tool, locates 上限 in the handle it got, cites the excerpt."""

        def respond(self, messages):
            tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
            if not tool_messages:
                return self.call("get_config", {"name": "batch"}, 1)
            last = tool_messages[-1]
            if last.name == "get_config":
                handle = last.response_metadata["evidence_offload"]["doc_id"]
                return self.call("locate_evidence", {"term": "上限", "doc_id": handle}, 2)
            (x,) = excerpts(tool_messages)
            return AIMessage(format_answer("The limit starts here.", [(x.doc_id, x.revision, x.start, x.end,
                                                                        x.text, x.sha256)]))

        @staticmethod
        def call(name, args, n):
            return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c{n}", "type": "tool_call"}])

    mw = EvidenceMiddleware(MemoryStore(ManualClock(T0)), Principal("acme", "alice"), session="s1")
    agent = create_agent(PolicyChatModel(reader=Reader()), [get_config], middleware=[mw])
    messages = agent.invoke({"messages": [HumanMessage("What is the batch limit?")]})["messages"]
    (found,) = [m for m in messages if isinstance(m, ToolMessage) and m.name == "locate_evidence"]
    assert found.status != "error", found.content
    assert found.content.startswith("locate in res-") and len(found.content) < 600
    assert continued(found.content) == [RESULT.index("限") + 1]
    assert [c.reason for c in mw.verify_answer(messages[-1].content)] == ["ok"]


# -- the property: exactly the scan's matches, every reply bounded --------------------------------------------

CJK = "上限批处理"
WRAP_SPACE = st.sampled_from([" ", "\t", "\u3000"])


def wrap(draw) -> str:
    """A line wrap with indentation of random depth (0..5,000), or a blank line (which is not a wrap)."""
    depth = draw(st.one_of(st.integers(0, 8), st.integers(60, 300), st.integers(0, 5_000)))
    brk = draw(st.sampled_from(["\n", "\r\n", "\r", "\n\n"]))
    return draw(st.sampled_from(["", " "])) + brk + draw(WRAP_SPACE) * depth


@st.composite
def wrapped_texts(draw, term: str = ""):
    """CJK text and sentences with random wraps, ``term`` planted in it with wraps between its characters."""
    parts = []
    for _ in range(draw(st.integers(1, 12))):
        if term and draw(st.booleans()):
            parts.append(term[0] + "".join((wrap(draw) if draw(st.booleans()) else "") + c for c in term[1:]))
        else:
            parts.append(draw(st.text(st.sampled_from(CJK + "。 ab"), min_size=1, max_size=8)))
        if draw(st.booleans()):
            parts.append(wrap(draw))
    return "".join(parts)


@st.composite
def text_and_term(draw):
    term = draw(st.text(st.sampled_from(CJK), min_size=1, max_size=3))
    return draw(wrapped_texts(term)), term


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tt=text_and_term())
def test_compact_locate_finds_exactly_the_scans_matches_with_every_reply_bounded(tt):
    """Issues 10 and 11: paging one document's matches, every match of the wrapped scan lies in a shown excerpt;
    a match the excerpt cuts is named by its true end; every excerpt and every reply is bounded."""
    text, term = tt
    spans = list(find_spans(text, term, WRAPPED))
    index = EvidenceIndex.in_memory([Document("d", "t", "r", text)])
    ledger = Ledger(Budget(max_calls=None, max_chars=None, max_bytes=None, max_tokens=None))
    tools = evidence_tools(index, ledger=ledger, profile="compact")
    shown, reach, cursor = [], {}, 0
    while True:
        reply = locate(tools, term=term, doc_id="d", cursor=cursor)
        assert len(reply) <= REPLY_BOUND
        if not spans:
            assert "no literal match" in reply
            return
        assert located_documents(reply) == [("d", len(spans))]
        shown += excerpts([reply])
        reach.update(reaches(reply))
        m = re.search(r"next cursor (\d+)", reply.partition("\n")[0])
        if m is None:
            break
        cursor = int(m[1])
    for x in shown:
        assert x.end - x.start <= MAX_EXCERPT_CHARS and x.text == text[x.start:x.end]
        assert verify_citation(index, x.citation(), ledger).ok
    for s, e in spans:  # every match is in an excerpt, which shows its end or names how far its matches go
        holders = [x for x in shown if x.start <= s < x.end]
        assert holders and any(e <= reach[x.start, x.end] for x in holders), (s, e, shown, reach)


@settings(max_examples=200, deadline=None)
@given(tt=text_and_term(), nfc=st.booleans(), tail=st.sampled_from(["", "e\u0301", "\u0301"]))
def test_a_match_end_read_from_a_piece_is_exact_or_asks_for_more(tt, nfc, tail):
    """Issue 11: the end of a match from a piece of the document that starts at the match is the scan's end when
    the piece holds the match, None ("read more") when it may not, and never another offset (a decomposed tail
    makes the text not NFC: offsets then follow normalization runs)."""
    text, term = tt[0] + tail, tt[1]
    opts = WRAPPED_NFC if nfc else WRAPPED
    normalized = unicodedata.is_normalized("NFC", text)
    for s, e in find_spans(text, term, opts):
        assert match_end_within(text[s:], term, opts, complete=True, normalized=normalized) == e - s
        for cut in {1, e - s - 1, e - s, e - s + 1, (e - s) // 2}:
            got = match_end_within(text[s:s + cut], term, opts, complete=s + cut >= len(text), normalized=normalized)
            assert got in (None, e - s)
            if not nfc and cut >= e - s:
                assert got == e - s


def test_a_piece_under_nfc_drops_its_last_normalization_run_until_the_document_ends():
    """Issue 11: in a text that is not NFC, a run may go on past the piece (a mark after it joins the run), so a
    match ending in the piece's last run is only trusted once the piece reaches the document's end."""
    text = "上\n  限\u0301x e\u0301"  # not NFC (e + acute composes); 限 + acute is one run, the match covers it
    assert list(find_spans(text, "上限", WRAPPED_NFC)) == [(0, 6)]
    assert match_end_within(text[:5], "上限", WRAPPED_NFC, complete=False, normalized=False) is None
    assert match_end_within(text[:6], "上限", WRAPPED_NFC, complete=False, normalized=False) is None
    assert match_end_within(text[:7], "上限", WRAPPED_NFC, complete=False, normalized=False) == 6
    assert match_end_within(text[:6], "上限", WRAPPED_NFC, complete=True, normalized=False) == 6
    with pytest.raises(ValueError):
        match_end_within("上 限", "上限", WRAPPED, complete=True)


# -- issue 11: no whole-document read per match -----------------------------------------------------------------

def counted_snapshot(tmp_path, text: str):
    """A real SQLite snapshot of one document; the reads the tools ask of it (``text``, the index protocol) are
    counted: how many are of the whole document, and how many characters they return."""
    store = SQLiteStore(tmp_path / f"s{len(text)}.db", ManualClock(T0))
    snap = store.put_snapshot("acme", "s", "q", [Document("d1", "t", "r", text)], ttl=HOUR)
    counts = {"whole": 0, "chars": 0}
    ranged = snap.text

    def text_of(doc_id, principal=None, start=0, end=None):
        out = ranged(doc_id, principal, start, end)
        counts["whole"] += len(out) == len(text)
        counts["chars"] += len(out)
        return out

    snap.text = text_of  # the instance's own method, counted and called through
    return store, snap, counts


def deep_text(depth: int, matches: int = 40) -> str:
    unit = "批处理任务日志。" * 20 + "上\n" + " " * depth + "限为200条。"
    return unit * matches


@pytest.mark.parametrize("nfc", [False, True])
def test_locate_reads_the_whole_document_a_fixed_number_of_times_whatever_the_indentation(tmp_path, nfc):
    """Issue 11: at shallow (8), past-the-old-threshold (100) and deep (5,000) indentation, one compact locate of
    40 matches reads the whole document as often (not once per match), and fetches characters in proportion to the
    text, not to the matches times the text (before: 41 whole reads past 64 characters of indentation)."""
    opts = WRAPPED_NFC if nfc else WRAPPED
    seen = {}
    for depth in (8, 100, 5_000):
        text = deep_text(depth)
        store, snap, counts = counted_snapshot(tmp_path, text)
        try:
            tools = evidence_tools(snap, locate_options=opts, profile="compact")
            reply = locate(tools, term="上限", doc_id="d1")
            assert reply.startswith("locate in d1: 40 matches")
            seen[depth] = counts["whole"]
            assert counts["chars"] <= 5 * len(text) + 40 * 2 * MAX_EXCERPT_CHARS, (depth, counts)
        finally:
            store.close()
    # NFC: at most the scan's read and the "is it NFC" check (one read when the call's serving scope shares it)
    assert seen[8] == seen[100] == seen[5_000] <= (2 if nfc else 0), seen


def test_a_second_locate_under_nfc_reads_no_whole_document_beyond_the_scan(tmp_path):
    """Issue 11: whether a document is NFC is learnt once per content (its sha256), not once per match or call."""
    store, snap, counts = counted_snapshot(tmp_path, deep_text(100, matches=10))
    try:
        tools = evidence_tools(snap, locate_options=WRAPPED_NFC, profile="compact")
        locate(tools, term="上限", doc_id="d1")
        first = counts["whole"]
        locate(tools, term="上限", doc_id="d1", cursor=3)
        assert counts["whole"] - first <= 1  # at most the scan's own read (NFC matching scans the whole text)
    finally:
        store.close()
