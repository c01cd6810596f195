"""EvidenceMiddleware inside LangChain's create_agent: real messages, an offline model, verified citations."""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

pytest.importorskip("langchain.agents", reason="the agents extra (langchain>=1): make setup installs it")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.types import Command

from evidence_lib import ManualClock, Principal
from evidence_lib._measure import cl100k_tokens
from evidence_lib.audit._checker import check_history
from evidence_lib.audit._report import audit
from evidence_lib.course.offload_reader import HandleReader
from evidence_lib.course.readers import PolicyChatModel, ScriptedChatModel
from evidence_lib.integrations.langchain._middleware import OWN_TOOLS, EvidenceMiddleware
from evidence_lib.store import MemoryStore
from evidence_lib.store._offload import HANDLE_MAX_TOKENS

ALICE = Principal("acme", "alice")
T0 = datetime(2026, 12, 1, 9, tzinfo=UTC)
ANSWER = "2026-11-30T12:41:40Z ERROR payment-7 timeout after 30s"
LOG = "\n".join([f"2026-11-30T12:{i // 60 % 60:02}:{i % 60:02}Z INFO worker-{i % 7} ok seq={i}" for i in range(2500)]
                + [ANSWER] + [f"2026-11-30T13:00:{i % 60:02}Z INFO worker-{i % 7} ok seq={i}" for i in range(1500)])


@tool
def get_logs(service: str) -> str:
    """The service's log lines (large)."""
    return LOG


@tool
def get_status(service: str) -> str:
    """One line of status (small)."""
    return f"{service}: degraded"


def run(mw, reader, tools=(get_logs, get_status), question="Why did payment-7 fail?"):
    agent = create_agent(PolicyChatModel(reader=reader), list(tools), middleware=[mw])
    return agent.invoke({"messages": [HumanMessage(question)]})["messages"]


@pytest.fixture
def clock():
    return ManualClock(T0)


@pytest.fixture
def mw(clock):
    return EvidenceMiddleware(MemoryStore(clock), ALICE, session="s1")


def test_a_large_result_becomes_a_handle_and_the_answer_cites_it_verified(mw):
    messages = run(mw, HandleReader({"name": "get_logs", "args": {"service": "payments"}}, "ERROR payment"))
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    handle = tool_messages[0]
    assert ANSWER not in handle.content and cl100k_tokens(handle.content) <= HANDLE_MAX_TOKENS
    assert handle.response_metadata["evidence_offload"]["chars"] == len(LOG)
    assert [m.name for m in tool_messages] == ["get_logs", "locate_evidence"]
    answer = messages[-1].content
    assert ANSWER in answer
    assert [c.reason for c in mw.verify_answer(answer)] == ["ok"]
    assert check_history(messages) == []
    assert audit(messages)["findings"] == []


def test_small_results_and_tools_set_to_none_pass_through(clock):
    mw = EvidenceMiddleware(MemoryStore(clock), ALICE, thresholds={"get_logs": None})
    messages = run(mw, HandleReader({"name": "get_logs", "args": {"service": "payments"}}, "ERROR payment"))
    assert [m.content for m in messages if isinstance(m, ToolMessage)] == [LOG]
    small = run(mw, HandleReader({"name": "get_status", "args": {"service": "payments"}}, "degraded"))
    assert [m.content for m in small if isinstance(m, ToolMessage)] == ["payments: degraded"]
    assert mw.shelf.handles == []


def test_a_per_tool_threshold_offloads_a_small_result(clock):
    mw = EvidenceMiddleware(MemoryStore(clock), ALICE, thresholds={"get_status": 2})
    messages = run(mw, HandleReader({"name": "get_status", "args": {"service": "payments"}}, "degraded"))
    assert "stored as res-" in [m for m in messages if isinstance(m, ToolMessage)][0].content


def test_the_middlewares_own_tools_are_never_offloaded_and_cannot_be_configured_to_be(clock):
    with pytest.raises(ValueError):
        EvidenceMiddleware(MemoryStore(clock), ALICE, thresholds={"read_evidence": 10})
    mw = EvidenceMiddleware(MemoryStore(clock), ALICE, threshold_tokens=1)
    assert [t.name for t in mw.tools] == list(OWN_TOOLS)
    messages = run(mw, HandleReader({"name": "get_logs", "args": {"service": "payments"}}, "ERROR payment"))
    locate = [m for m in messages if isinstance(m, ToolMessage) and m.name == "locate_evidence"][0]
    assert "stored as" not in locate.content and ANSWER in locate.content


def test_bad_calls_to_the_middlewares_tools_are_refused_and_the_agent_goes_on(mw):
    calls = [AIMessage("", tool_calls=[{"name": "read_evidence", "args": {"doc_id": "res-0000000000", "offset": -5},
                                        "id": "c1", "type": "tool_call"},
                                       {"name": "locate_evidence", "args": {"term": "", "principal": "root"},
                                        "id": "c2", "type": "tool_call"}]),
             AIMessage("INSUFFICIENT EVIDENCE: nothing readable")]
    agent = create_agent(ScriptedChatModel(responses=calls), [get_logs], middleware=[mw])
    messages = agent.invoke({"messages": [HumanMessage("?")]})["messages"]
    refusals = [m for m in messages if isinstance(m, ToolMessage)]
    assert [m.status for m in refusals] == ["error", "error"]
    assert all(json.loads(m.content)["error"] for m in refusals)
    assert messages[-1].content.startswith("INSUFFICIENT EVIDENCE")


def test_after_the_ttl_the_handle_reads_as_unknown_like_one_never_issued(mw, clock):
    messages = run(mw, HandleReader({"name": "get_logs", "args": {"service": "payments"}}, "ERROR payment"))
    handle = mw.shelf.handles[0]
    clock.advance(timedelta(hours=1))
    later = create_agent(ScriptedChatModel(responses=[
        AIMessage("", tool_calls=[{"name": "read_evidence", "args": {"doc_id": d}, "id": f"c{i}", "type": "tool_call"}
                                  for i, d in enumerate([handle, "res-0000000000"])]), AIMessage("done")]),
        [get_logs], middleware=[mw]).invoke({"messages": [HumanMessage("again")]})["messages"]
    expired, never = [m for m in later if isinstance(m, ToolMessage)]
    assert expired.content == never.content and json.loads(expired.content)["error"] == "unknown_doc_id"
    assert [c.reason for c in mw.verify_answer(messages[-1].content)] == ["unknown_doc_id"]


def test_another_principal_with_the_handle_reads_nothing(clock):
    store = MemoryStore(clock)
    mine = EvidenceMiddleware(store, ALICE, session="s1")
    run(mine, HandleReader({"name": "get_logs", "args": {"service": "payments"}}, "ERROR payment"))
    theirs = EvidenceMiddleware(store, Principal("acme", "bob"), session="s1")
    calls = [AIMessage("", tool_calls=[{"name": "read_evidence", "args": {"doc_id": mine.shelf.handles[0]},
                                        "id": "c1", "type": "tool_call"}]), AIMessage("done")]
    got = create_agent(ScriptedChatModel(responses=calls), [get_logs], middleware=[theirs]).invoke(
        {"messages": [HumanMessage("?")]})["messages"]
    assert json.loads([m for m in got if isinstance(m, ToolMessage)][0].content)["error"] == "unknown_doc_id"


def test_a_command_result_and_non_text_blocks_are_handled(mw):
    image = {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"}
    msg = ToolMessage(content=[{"type": "text", "text": LOG}, image], tool_call_id="c9", name="get_logs")
    out = mw.offloaded(Command(update={"messages": [msg], "other": 1}), {"name": "get_logs"})
    (new,) = out.update["messages"]
    assert out.update["other"] == 1 and new.content[1] == image and "stored as res-" in new.content[0]["text"]


def test_the_async_path_offloads_too(mw):
    agent = create_agent(PolicyChatModel(reader=HandleReader({"name": "get_logs", "args": {"service": "p"}},
                                                             "ERROR payment")), [get_logs], middleware=[mw])
    messages = asyncio.run(agent.ainvoke({"messages": [HumanMessage("Why did payment-7 fail?")]}))["messages"]
    assert [c.reason for c in mw.verify_answer(messages[-1].content)] == ["ok"]


class GatedStore(MemoryStore):
    """A store whose writes wait until the event loop has run another coroutine (or 10 s pass): a hook that
    stored on the event loop's own thread would make the loop wait for itself."""

    def __init__(self, clock) -> None:
        super().__init__(clock)
        self.gate = threading.Event()
        self.waited: list[bool] = []

    def put_snapshot(self, *args, **kwargs):
        self.waited.append(self.gate.wait(timeout=10))
        return super().put_snapshot(*args, **kwargs)


def test_the_async_hooks_store_and_read_off_the_event_loop(clock):
    """The async tool hook does its blocking work (tokenizing, store I/O, the ledger's lock) in a worker thread:
    while a large result is being stored, other coroutines of the same loop keep running."""
    store = GatedStore(clock)
    mw = EvidenceMiddleware(store, ALICE, session="s1")

    async def release():
        await asyncio.sleep(0)
        store.gate.set()

    async def main():
        call = {"name": "get_logs", "args": {"service": "p"}, "id": "c1", "type": "tool_call"}

        async def handler(request):
            return ToolMessage(LOG, tool_call_id="c1", name="get_logs")

        request = SimpleNamespace(tool_call=call)
        out, _ = await asyncio.gather(mw.awrap_tool_call(request, handler), release())
        read = {"name": "locate_evidence", "args": {"term": "ERROR payment"}, "id": "c2", "type": "tool_call"}
        return out, await mw.awrap_tool_call(SimpleNamespace(tool_call=read), handler)

    out, located = asyncio.run(main())
    assert store.waited == [True], "the store was written on the event loop's thread"
    assert "stored as res-" in out.content and located.status == "success" and "ERROR payment-7" in located.content


def test_the_reads_are_charged_to_one_task_budget_in_the_store(clock):
    store = MemoryStore(clock)
    mw = EvidenceMiddleware(store, ALICE, session="s1", task="incident-42")
    run(mw, HandleReader({"name": "get_logs", "args": {"service": "payments"}}, "ERROR payment"))
    again = EvidenceMiddleware(store, ALICE, session="s1", task="incident-42")
    assert again.ledger.totals() == mw.ledger.totals() and mw.ledger.totals()["calls"] == 1


def test_a_result_the_store_cannot_keep_becomes_a_refusal_and_the_agent_goes_on(mw, monkeypatch):
    import evidence_lib.store._offload as offload_module

    monkeypatch.setattr(offload_module, "MAX_STORED_BYTES", 1_000)  # a small store limit, for a quick test
    messages = run(mw, HandleReader({"name": "get_logs", "args": {"service": "payments"}}, "ERROR payment"))
    refusal = [m for m in messages if isinstance(m, ToolMessage)][0]
    assert refusal.status == "error" and json.loads(refusal.content)["error"] == "result_too_large"
    assert messages[-1].content.startswith("INSUFFICIENT EVIDENCE") and mw.shelf.handles == []
