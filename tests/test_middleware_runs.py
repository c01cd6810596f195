"""EvidenceMiddleware across runs and odd results: per-run state, one answer parser, unencodable and text-file
blocks, handles within a run, and TTLs. Real create_agent runs with the offline models and real stores."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import threading
from datetime import timedelta

import pytest

pytest.importorskip("langchain.agents", reason="the agents extra (langchain>=1): make setup installs it")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from middleware_kit import (  # noqa: F401
    ALICE,
    ANSWER,
    BIG,
    LOG,
    MARKER,
    START,
    T0,
    answer_citing,
    call,
    clock,
    get_logs,
    seen,
    store,
    tool_messages,
)

from evidence_lib._errors import EvidenceError
from evidence_lib._ledger import Budget
from evidence_lib._measure import cl100k_tokens
from evidence_lib.course.offload_reader import HandleReader
from evidence_lib.course.readers import PolicyChatModel, ScriptedChatModel
from evidence_lib.integrations.langchain._middleware import RUN_KEY, EvidenceMiddleware
from evidence_lib.store import MemoryStore, SQLiteStore
from evidence_lib.store._offload import HANDLE_MAX_TOKENS

OTHER = "\n".join(f"2026-11-30T14:{i // 60 % 60:02}:{i % 60:02}Z WARN cache-{i % 5} slow seq={i}" for i in range(4000))


@tool
def get_cache_logs(service: str) -> str:
    """The cache's log lines (large)."""
    return OTHER


def offload_log(mw) -> tuple[str, str]:
    """LOG offloaded outside any agent run; its handle and revision."""
    out = mw.offloaded(ToolMessage(LOG, tool_call_id="pre", name="get_logs"), {"name": "get_logs"})
    meta = out.response_metadata["evidence_offload"]
    return meta["doc_id"], meta["revision"]


# -- 1. state per run ---------------------------------------------------------------------------------------------
def test_a_second_run_leaves_the_first_runs_answer_verified(store):
    mw = EvidenceMiddleware(store, ALICE, session="s1")
    first_agent = create_agent(PolicyChatModel(reader=HandleReader(
        {"name": "get_logs", "args": {"service": "payments"}}, "ERROR payment")), [get_logs], middleware=[mw])
    second_agent = create_agent(PolicyChatModel(reader=HandleReader(
        {"name": "get_cache_logs", "args": {"service": "cache"}}, "WARN cache-3")), [get_cache_logs], middleware=[mw])
    first = first_agent.invoke({"messages": [HumanMessage("Why did payment-7 fail?")]})
    second = second_agent.invoke({"messages": [HumanMessage("Why is the cache slow?")]})
    answer = first["messages"][-1].content
    assert ANSWER in answer
    assert [c.reason for c in mw.verify_answer(answer)] == ["ok"]  # was never_read after the second run
    assert [c.reason for c in mw.verify_answer(answer, run=first)] == ["ok"]
    assert [c.reason for c in mw.verify_answer(answer, run=second)] == ["never_read"]  # that run did not read it
    assert [c.reason for c in mw.verify_answer(second["messages"][-1].content, run=second)] == ["ok"]


class RendezvousReader:
    """Meets the other run at a barrier (so both runs have started), then reads the handle's answer line once."""

    def __init__(self, handle: str, revision: str) -> None:
        self.handle, self.revision = handle, revision

    def respond(self, messages):
        done = tool_messages(messages)
        if not done:
            return AIMessage("", tool_calls=[call("rendezvous", "m1")])
        if len(done) == 1:
            return AIMessage("", tool_calls=[call("read_evidence", "r1", doc_id=self.handle, offset=START,
                                                  limit=len(ANSWER))])
        if done[-1].status != "success":
            return AIMessage(f"INSUFFICIENT EVIDENCE: {done[-1].content}")
        return AIMessage(answer_citing(self.handle, self.revision, START, START + len(ANSWER), ANSWER))


def read_replies(result) -> list[ToolMessage]:
    return [m for m in tool_messages(result["messages"]) if m.name == "read_evidence"]


def test_two_runs_in_threads_each_get_their_own_budget(store):
    mw = EvidenceMiddleware(store, ALICE, session="s1", budget=Budget(max_calls=1))
    handle, revision = offload_log(mw)
    barrier = threading.Barrier(2)

    @tool
    def rendezvous() -> str:
        """Waits until the other run gets here."""
        barrier.wait(timeout=30)
        return "met"

    agent = create_agent(PolicyChatModel(reader=RendezvousReader(handle, revision)), [rendezvous], middleware=[mw])
    results: list = [None, None]

    def run(i: int) -> None:
        results[i] = agent.invoke({"messages": [HumanMessage(f"run {i}")]})

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [[m.status for m in read_replies(r)] for r in results] == [["success"], ["success"]]
    for r in results:
        assert [c.reason for c in mw.verify_answer(r["messages"][-1].content, run=r)] == ["ok"]


def test_two_runs_in_asyncio_gather_each_get_their_own_budget(clock):
    mw = EvidenceMiddleware(MemoryStore(clock), ALICE, session="s1", budget=Budget(max_calls=1))
    handle, revision = offload_log(mw)

    async def main():
        barrier = asyncio.Barrier(2)

        @tool
        async def rendezvous() -> str:
            """Waits until the other run gets here."""
            await asyncio.wait_for(barrier.wait(), 30)
            return "met"

        agent = create_agent(PolicyChatModel(reader=RendezvousReader(handle, revision)), [rendezvous],
                             middleware=[mw])
        return await asyncio.gather(*(agent.ainvoke({"messages": [HumanMessage(f"run {i}")]}) for i in range(2)))

    results = asyncio.run(main())
    assert [[m.status for m in read_replies(r)] for r in results] == [["success"], ["success"]]


def test_runs_of_one_task_share_its_budget(store):
    mw = EvidenceMiddleware(store, ALICE, session="s1", task="incident-42", budget=Budget(max_calls=1))
    handle, revision = offload_log(mw)
    read = [AIMessage("", tool_calls=[call("read_evidence", "r1", doc_id=handle, offset=START, limit=len(ANSWER))]),
            AIMessage("done")]
    agent = create_agent(ScriptedChatModel(responses=read * 2), [get_logs], middleware=[mw])
    first = tool_messages(agent.invoke({"messages": [HumanMessage("run 1")]})["messages"])
    second = tool_messages(agent.invoke({"messages": [HumanMessage("run 2")]})["messages"])
    assert first[0].status == "success"
    assert second[0].status == "error" and json.loads(second[0].content)["error"] == "budget_exhausted"


def test_the_latest_runs_tools_ledger_and_shelf_stay_usable_outside_the_agent(clock):
    # notebook 12 and workshop part 8: offload, then read with mw.tools and look at mw.ledger and mw.shelf
    from evidence_lib._toolkit import run_tool_call, tool_call

    mw = EvidenceMiddleware(MemoryStore(clock), ALICE, session="s1")
    handle, _ = offload_log(mw)
    assert mw.shelf.handles == [handle]
    page = run_tool_call(mw.tools, tool_call("read_evidence", {"doc_id": handle, "offset": START,
                                                                "limit": len(ANSWER)}, "x1"))
    assert page.status == "success" and page.content.endswith(ANSWER)
    assert [(e.read.start, e.read.end) for e in mw.ledger.charged] == [(START, START + len(ANSWER))]


# -- 5. one Sources parser ----------------------------------------------------------------------------------------
def test_verify_answer_ignores_the_word_sources_in_the_prose(clock):
    mw = EvidenceMiddleware(MemoryStore(clock), ALICE, session="s1")
    handle, revision = offload_log(mw)
    agent = create_agent(ScriptedChatModel(responses=[AIMessage("", tool_calls=[
        call("read_evidence", "r1", doc_id=handle, offset=START, limit=len(ANSWER))]), AIMessage("done")]),
        [get_logs], middleware=[mw])
    result = agent.invoke({"messages": [HumanMessage("?")]})
    prose = "The logs (Sources: see below) say it timed out. [1]"
    answer = answer_citing(handle, revision, START, START + len(ANSWER), ANSWER, prose=prose)
    assert [c.reason for c in mw.verify_answer(answer, run=result)] == ["ok"]
    good = answer.split("\n")[-1]
    bad_first = f"It timed out. [1] [2]\n\nSources:\n[2] {handle} around the error line\n{good}"
    assert [c.reason for c in mw.verify_answer(bad_first, run=result)] == ["malformed", "ok"]


# -- 8. content json cannot encode --------------------------------------------------------------------------------
def deep(n: int) -> dict:
    node: dict = {"tag": "span", "text": MARKER}
    for _ in range(n):
        node = {"tag": "div", "children": [node]}
    return node


def cyclic() -> dict:
    node: dict = {"tag": "div", "text": BIG}
    node["self"] = node
    return node


UNENCODABLE = {
    "3000-deep DOM": lambda: {"type": "json", "json": deep(3000)},
    "non-string keys": lambda: {"type": "json", "json": {("row", 1): BIG, 2: "x", "k": "y"}},
    "a cycle": lambda: {"type": "json", "json": cyclic()},
}


@pytest.mark.parametrize("kind", list(UNENCODABLE))
def test_a_block_json_cannot_encode_does_not_stop_the_run(clock, kind):
    make = UNENCODABLE[kind]

    @tool
    def scrape(url: str) -> list:
        """A scraped page as content blocks."""
        return [make()]

    mw = EvidenceMiddleware(MemoryStore(clock), ALICE, session="s1")
    agent = create_agent(ScriptedChatModel(responses=[AIMessage("", tool_calls=[call("scrape", url="x")]),
                                                      AIMessage("done")]), [scrape], middleware=[mw])
    messages = agent.invoke({"messages": [HumanMessage("?")]})["messages"]
    (msg,) = tool_messages(messages)
    assert messages[-1].content == "done"
    assert isinstance(msg.content, str) and cl100k_tokens(msg.content) <= HANDLE_MAX_TOKENS
    assert MARKER not in msg.content


def test_a_nested_block_renders_fully_into_the_stored_result(clock):
    mw = EvidenceMiddleware(MemoryStore(clock), ALICE, session="s1", threshold_tokens=50)
    out = mw.offloaded(ToolMessage([{"type": "json", "json": deep(3000)}], tool_call_id="c1", name="scrape"),
                       {"name": "scrape"})
    doc_id = out.response_metadata["evidence_offload"]["doc_id"]
    stored = mw.shelf.text(doc_id, ALICE)
    assert MARKER in stored and stored.count('"div"') == 3000


# -- 9. text-bearing file blocks ----------------------------------------------------------------------------------
TEXT_FILES = {
    "v0 file, source_type text": lambda: {"type": "file", "source_type": "text", "text": BIG},
    "v0 file, text in url": lambda: {"type": "file", "source_type": "text", "url": BIG, "mime_type": "text/plain"},
    "v1 text-plain": lambda: {"type": "text-plain", "text": BIG, "mime_type": "text/plain"},
    "v1 file with text": lambda: {"type": "file", "mime_type": "text/plain", "text": BIG},
    "v1 file, text/plain base64": lambda: {"type": "file", "mime_type": "text/plain",
                                           "base64": base64.b64encode(BIG.encode()).decode()},
    "v0 file, text/csv base64": lambda: {"type": "file", "source_type": "base64", "mime_type": "text/csv",
                                         "data": base64.b64encode(BIG.encode()).decode()},
}


@pytest.mark.parametrize("kind", list(TEXT_FILES))
def test_a_plain_text_file_block_is_measured_as_text_and_offloaded(clock, kind):
    block = TEXT_FILES[kind]()

    @tool
    def export(q: str) -> list:
        """An export as a file block."""
        return [block]

    mw = EvidenceMiddleware(MemoryStore(clock), ALICE, session="s1")
    agent = create_agent(ScriptedChatModel(responses=[AIMessage("", tool_calls=[call("export", q="x")]),
                                                      AIMessage("done")]), [export], middleware=[mw])
    (msg,) = tool_messages(agent.invoke({"messages": [HumanMessage("?")]})["messages"])
    assert MARKER not in seen(msg) and "stored as res-" in seen(msg)
    assert cl100k_tokens(seen(msg)) <= HANDLE_MAX_TOKENS
    assert MARKER in mw.shelf.text(msg.response_metadata["evidence_offload"]["doc_id"], ALICE)


def test_binary_media_blocks_are_kept_untouched(clock):
    mw = EvidenceMiddleware(MemoryStore(clock), ALICE, session="s1")
    pdf = {"type": "file", "mime_type": "application/pdf", "base64": base64.b64encode(b"%PDF" * 20_000).decode()}
    image = {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"}
    msg = ToolMessage([pdf, image], tool_call_id="c1", name="fetch")
    assert mw.offloaded(msg, {"name": "fetch"}) is msg
    big = ToolMessage([{"type": "text", "text": BIG}, pdf, image], tool_call_id="c2", name="fetch")
    out = mw.offloaded(big, {"name": "fetch"})
    assert out.content[1:] == [pdf, image] and "stored as res-" in out.content[0]["text"]


# -- 12. handles within one run -----------------------------------------------------------------------------------
def colliding_contents() -> tuple[str, str]:
    """Two results whose sha256 share the first 6 hex digits (found by search; the birthday bound makes it quick)."""
    seen_prefix: dict[str, str] = {}
    for i in range(1_000_000):
        text = f"result {i}: everything is fine"
        prefix = hashlib.sha256(text.encode()).hexdigest()[:6]
        if prefix in seen_prefix:
            return seen_prefix[prefix], text
        seen_prefix[prefix] = text
    raise AssertionError("no collision found")  # pragma: no cover


class TwoResultsReader:
    """Per result: call the tool, read its first 5 characters, then the rest (a reply that no longer repeats the
    revision shows the content handle). Then done."""

    def respond(self, messages):
        done = tool_messages(messages)
        steps = [call("fetch", "f1", n=0), (0, 5), (5, 100), call("fetch", "f2", n=1), (0, 5), (5, 100)]
        if len(done) == len(steps):
            return AIMessage("done")
        step = steps[len(done)]
        if isinstance(step, tuple):
            fetched = [m for m in done if m.name == "fetch"][-1]
            doc_id = fetched.response_metadata["evidence_offload"]["doc_id"]
            step = call("read_evidence", f"r{len(done)}", doc_id=doc_id, offset=step[0], limit=step[1])
        return AIMessage("", tool_calls=[step])


def test_two_results_sharing_six_hex_digits_show_distinct_handles(clock):
    texts = colliding_contents()
    assert hashlib.sha256(texts[0].encode()).hexdigest()[:6] == hashlib.sha256(texts[1].encode()).hexdigest()[:6]

    @tool
    def fetch(n: int) -> str:
        """One of two results."""
        return texts[n]

    mw = EvidenceMiddleware(MemoryStore(clock), ALICE, session="s1", threshold_tokens=1)
    agent = create_agent(PolicyChatModel(reader=TwoResultsReader()), [fetch], middleware=[mw])
    messages = agent.invoke({"messages": [HumanMessage("?")]})["messages"]
    reads = [m for m in tool_messages(messages) if m.name == "read_evidence"]
    assert [m.status for m in reads] == ["success"] * 4
    shown = [re.search(r" #([0-9a-f]+) ", m.content.split("\n")[0]) for m in reads]
    first, second = shown[1].group(1), shown[3].group(1)  # the second reply of each result shows its handle
    assert first != second


# -- 13. TTLs -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ttl", [timedelta.max, timedelta(days=365 * 8_000)], ids=["timedelta.max", "8000 years"])
def test_a_ttl_no_store_can_keep_is_refused_when_the_middleware_is_built(clock, ttl):
    with pytest.raises(EvidenceError) as e:
        EvidenceMiddleware(MemoryStore(clock), ALICE, session="s1", ttl=ttl)
    assert e.value.code == "invalid_ttl"


# -- issue 24 item 4: the store is the source of truth of a run -------------------------------------------------
class ResumedReader:
    """Offload the log, read the answer line, pause (an interrupt: the run may resume elsewhere); after the resume,
    locate over the run's listing (no doc_id), read the line again, then cite it."""

    def respond(self, messages):
        done = tool_messages(messages)
        fetched = [m for m in done if m.name == "get_logs"]
        handle = fetched[0].response_metadata["evidence_offload"]["doc_id"] if fetched else None
        read = call("read_evidence", f"r{len(done)}", doc_id=handle, offset=START, limit=len(ANSWER))
        steps = [call("get_logs", "g1", service="payments"), read, call("pause", "p1"),
                 call("locate_evidence", "l1", term="ERROR payment-7"), read]
        if len(done) < len(steps):
            return AIMessage("", tool_calls=[steps[len(done)]])
        revision = fetched[0].response_metadata["evidence_offload"]["revision"]
        return AIMessage(answer_citing(handle, revision, START, START + len(ANSWER), ANSWER))


@tool
def pause() -> str:
    """Waits for a person's go-ahead (the run is checkpointed and may resume on another worker)."""
    from langgraph.types import interrupt

    return str(interrupt("go?"))


def resumable_agent(mw, checkpointer):
    return create_agent(PolicyChatModel(reader=ResumedReader()), [get_logs, pause], middleware=[mw],
                        checkpointer=checkpointer)


def after_resume(result) -> tuple[ToolMessage, ToolMessage]:
    """The locate and the second read of a resumed ResumedReader run."""
    done = tool_messages(result["messages"])
    return done[3], done[4]


def test_a_run_evicted_from_the_cache_keeps_its_budget_and_listing_when_resumed(store, monkeypatch):
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    from evidence_lib.integrations.langchain import _middleware as module

    monkeypatch.setattr(module, "MAX_RUNS", 1)
    mw = EvidenceMiddleware(store, ALICE, session="s1", budget=Budget(max_calls=2))
    agent_a = resumable_agent(mw, InMemorySaver())
    config = {"configurable": {"thread_id": "run-a"}}
    agent_a.invoke({"messages": [HumanMessage("Why did payment-7 fail?")]}, config)  # stops at the pause
    other = create_agent(PolicyChatModel(reader=HandleReader(
        {"name": "get_cache_logs", "args": {"service": "cache"}}, "WARN cache-3")), [get_cache_logs], middleware=[mw])
    other.invoke({"messages": [HumanMessage("Why is the cache slow?")]})  # run B: A leaves the cache
    result = agent_a.invoke(Command(resume="go"), config)
    located, reread = after_resume(result)
    handle = tool_messages(result["messages"])[0].response_metadata["evidence_offload"]["doc_id"]
    assert located.status == "success" and handle in located.content  # A's listing, not an empty one
    assert reread.status == "error" and json.loads(reread.content)["error"] == "budget_exhausted"  # A's budget
    assert [c.reason for c in mw.verify_answer(result["messages"][-1].content, run=result)] == ["ok"]


def test_two_workers_sharing_one_sqlite_store_serve_one_run(clock, tmp_path):
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    path = str(tmp_path / "shared.db")
    first, second = SQLiteStore(path, clock), SQLiteStore(path, clock)  # two workers, one database
    mw1 = EvidenceMiddleware(first, ALICE, session="s1", budget=Budget(max_calls=2))
    mw2 = EvidenceMiddleware(second, ALICE, session="s1", budget=Budget(max_calls=2))
    checkpointer = InMemorySaver()  # what both workers resume runs from
    config = {"configurable": {"thread_id": "run-1"}}
    paused = resumable_agent(mw1, checkpointer).invoke({"messages": [HumanMessage("Why did payment-7 fail?")]},
                                                       config)
    result = resumable_agent(mw2, checkpointer).invoke(Command(resume="go"), config)
    assert result[RUN_KEY] == paused[RUN_KEY]
    located, reread = after_resume(result)
    handle = tool_messages(result["messages"])[0].response_metadata["evidence_offload"]["doc_id"]
    assert located.status == "success" and handle in located.content  # the listing worker 1 made
    assert reread.status == "error" and json.loads(reread.content)["error"] == "budget_exhausted"  # one budget
    answer = result["messages"][-1].content
    for mw in (mw1, mw2):
        assert [c.reason for c in mw.verify_answer(answer, run=result)] == ["ok"]
    first.close()
    second.close()


def test_a_token_counter_given_to_the_middleware_decides_what_is_offloaded(clock):
    text = "x" * 5_000  # about 600 cl100k tokens: under the default threshold of 2,000
    msg = ToolMessage(text, tool_call_id="c1", name="dump")
    assert EvidenceMiddleware(MemoryStore(clock), ALICE).offloaded(msg, {"name": "dump"}) is msg
    by_char = EvidenceMiddleware(MemoryStore(clock), ALICE, token_counter=len)
    out = by_char.offloaded(msg, {"name": "dump"})
    assert "stored as res-" in out.content and "dump returned 5,000 characters" in out.content


def test_the_content_block_helpers_live_in_their_own_module():
    from evidence_lib.integrations.langchain import _blocks as blocks
    from evidence_lib.integrations.langchain import _middleware as middleware

    assert middleware.model_text is blocks.model_text and middleware.MEDIA_BLOCKS is blocks.MEDIA_BLOCKS
    assert blocks.model_text([{"type": "text", "text": "a"}, {"type": "image", "base64": "iVBO"}]) == (
        "a", [{"type": "image", "base64": "iVBO"}])


def test_the_middleware_ttl_defaults_to_the_result_ttl(clock):
    from evidence_lib.store._offload import DEFAULT_RESULT_TTL

    assert EvidenceMiddleware(MemoryStore(clock), ALICE).ttl == DEFAULT_RESULT_TTL


def test_a_task_named_like_a_runs_own_ledger_is_refused(clock):
    mw = EvidenceMiddleware(MemoryStore(clock), ALICE)
    with pytest.raises(ValueError, match="run/"):
        EvidenceMiddleware(MemoryStore(clock), ALICE, task="run/" + mw.run_id)  # would spend that run's budget


# -- issue 31 item 18: a block the middleware cannot encode never ends the run --------------------------------------
def cycle_in(block: dict) -> dict:
    node: dict = {"tag": "div"}
    node["self"] = node
    return {**block, "extras": node}


KEPT_OR_SMALL = {
    "a small text block with a cyclic extra": lambda: [cycle_in({"type": "text", "text": "hi"})],
    "an image block with a cyclic extra": lambda: [cycle_in({"type": "image", "base64": "aGk=",
                                                             "mime_type": "image/png"})],
    "a small json block holding a cycle": lambda: [{"type": "json", "json": cycle_in({"k": "v"})}],
}


@pytest.mark.parametrize("kind", list(KEPT_OR_SMALL))
def test_a_cyclic_block_below_the_threshold_or_kept_never_ends_a_checkpointed_run(clock, kind):
    from langgraph.checkpoint.memory import InMemorySaver

    make = KEPT_OR_SMALL[kind]

    @tool
    def scrape(url: str) -> list:
        """A scraped page as content blocks."""
        return make()

    mw = EvidenceMiddleware(MemoryStore(clock), ALICE, session="s1")
    agent = create_agent(ScriptedChatModel(responses=[AIMessage("", tool_calls=[call("scrape", url="x")]),
                                                      AIMessage("done")]), [scrape], middleware=[mw],
                         checkpointer=InMemorySaver())
    messages = agent.invoke({"messages": [HumanMessage("?")]}, {"configurable": {"thread_id": kind}})["messages"]
    (msg,) = tool_messages(messages)
    assert messages[-1].content == "done"
    json.dumps(msg.content)  # what the model and the checkpointer get encodes
    if "image" in kind:  # media cannot be rendered as text: the model is told, the run goes on
        assert msg.status == "error" and json.loads(msg.content)["error"] == "unencodable_result"
    else:  # text is rendered as the model reads it (a json block's cycle named), nothing else
        assert msg.status == "success" and seen(msg) == ("hi" if "text block" in kind else '{"json": {"extras": '
                                                         '{"self": "<cycle>", "tag": "div"}, "k": "v"}, "type": "json"}')
