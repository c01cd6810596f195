"""Real MCP clients against ``python -m evidence_lib mcp`` (issue 27): the SDK's own client over stdio and streamable
HTTP, langchain-mcp-adapters' tools inside ``create_agent`` with an offline model, and the MCP Inspector's CLI.

Every server is a subprocess (HTTP on a free loopback port, torn down by the test). No network: the Inspector test
uses the copy scripts/mcp_clients.sh installed into build/mcp-node/, and is skipped without it or without Node.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_kit import (
    ALICE_TOKEN,
    BOB_TOKEN,
    LIMITS,
    ROOT,
    ask,
    corpus,  # noqa: F401 - a pytest fixture, used by name
    http_server,
    task_of,
    tokens,  # noqa: F401 - corpus and tokens are fixtures
)

from evidence_lib._access import Access, Principal
from evidence_lib._ledger import Budget, Ledger
from evidence_lib._toolkit import run_tool_call
from evidence_lib._tools import evidence_tools
from evidence_lib.eval._run import bm25_source, load_corpus

NODE_BIN = ROOT / "build" / "mcp-node" / "node_modules" / ".bin"
QUESTION = [("search_evidence", {"query": "batch limit"}), ("locate_evidence", {"term": "batch limit"}),
            ("read_evidence", {"doc_id": "limits", "offset": 12, "limit": 40}),
            ("locate_evidence", {"term": "上限"}),
            ("read_evidence", {"doc_id": "payroll", "offset": 0, "limit": 800})]


def stdio_params(corpus: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "evidence_lib", "mcp", "--corpus", str(corpus)],
                                 cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT)})


def langchain_replies(corpus: Path, principal: Principal) -> list[tuple[str, bool]]:
    """The same question through the LangChain tools over the same source (a BM25 retriever over the folder, as
    ``--corpus`` serves it; compact profile, one ledger)."""
    _, docs = load_corpus(str(corpus))
    tools = evidence_tools(bm25_source(docs), principal, ledger=Ledger(Budget()), profile="compact")
    msgs = [run_tool_call(tools, {"name": n, "args": a, "id": f"c{i}", "type": "tool_call"})
            for i, (n, a) in enumerate(QUESTION)]
    return [(m.content, m.status == "error") for m in msgs]


async def test_stdio_client_gets_the_langchain_tools_bytes(corpus: Path) -> None:
    async with stdio_client(stdio_params(corpus)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = [t.name for t in (await session.list_tools()).tools]
        assert names == ["start_task", "search_evidence", "locate_evidence", "read_evidence", "verify_citations"]
        task = await task_of(session)
        got = [await ask(session, n, task=task, **a) for n, a in QUESTION]
        bad = await ask(session, "read_evidence", task=task, doc_id="limits", offset=-5)
    assert got == langchain_replies(corpus, Principal("local", "local"))
    assert bad[1] and json.loads(bad[0])["error"] == "invalid_page_bounds"


def http_session(url: str, token: str):
    return streamable_http_client(url, http_client=httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                                                      timeout=30))


async def test_http_clients_see_one_tool_list_and_their_own_documents(corpus: Path, tokens: Path) -> None:
    with http_server(corpus, tokens) as url:
        async with http_session(url, ALICE_TOKEN) as (r, w, _), ClientSession(r, w) as alice:
            await alice.initialize()
            alice_tools = (await alice.list_tools()).model_dump()
            alice_task = await task_of(alice)
            page = await ask(alice, "read_evidence", task=alice_task, doc_id="payroll")
        async with http_session(url, BOB_TOKEN) as (r, w, _), ClientSession(r, w) as bob:
            await bob.initialize()
            bob_tools = (await bob.list_tools()).model_dump()
            bob_task = await task_of(bob)
            forbidden = await ask(bob, "read_evidence", task=bob_task, doc_id="payroll")
            missing = await ask(bob, "read_evidence", task=bob_task, doc_id="no-such-doc")
            reused = await ask(bob, "search_evidence", task=alice_task, query="上限")
            unknown = await ask(bob, "search_evidence", task="t-never-minted", query="上限")
        async with httpx.AsyncClient(timeout=30) as raw:
            anonymous = await raw.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                       headers={"Authorization": "Bearer not-a-token-at-all"})
    assert alice_tools == bob_tools
    assert not page[1] and "单批上限为200条" in page[0]
    assert forbidden == missing and json.loads(forbidden[0])["error"] == "unknown_doc_id"
    assert reused == unknown and reused[1]
    assert anonymous.status_code == 401


async def test_http_client_gets_the_langchain_tools_bytes(corpus: Path, tokens: Path) -> None:
    alice = Principal("acme", "alice", frozenset({"finance"}))
    with http_server(corpus, tokens) as url:
        async with http_session(url, ALICE_TOKEN) as (r, w, _), ClientSession(r, w) as session:
            await session.initialize()
            task = await task_of(session)
            got = [await ask(session, n, task=task, **a) for n, a in QUESTION]
    _, docs = load_corpus(str(corpus))
    grants = {"payroll": Access("acme", frozenset({"group:finance"}))}
    tools = evidence_tools(bm25_source([replace(d, access=grants.get(d.doc_id)) for d in docs]), alice,
                           ledger=Ledger(Budget()), profile="compact")
    want = [run_tool_call(tools, {"name": n, "args": a, "id": f"c{i}", "type": "tool_call"})
            for i, (n, a) in enumerate(QUESTION)]
    assert got == [(m.content, m.status == "error") for m in want]


# -- langchain-mcp-adapters inside create_agent ------------------------------------------------------------------------
class CitingReader:
    """An offline reader: start a task, locate the term, cite the excerpt it was shown, verify, answer."""

    def __init__(self, revision: str) -> None:
        self.revision = revision
        self.verdict: dict | None = None

    def respond(self, messages):
        from langchain_core.messages import AIMessage, ToolMessage

        results = [m for m in messages if isinstance(m, ToolMessage)]
        text = lambda m: m.content if isinstance(m.content, str) else "".join(  # noqa: E731
            b.get("text", "") for b in m.content if isinstance(b, dict))
        step = len(results)
        if step == 0:
            return AIMessage("", tool_calls=[{"name": "start_task", "args": {}, "id": "c0"}])
        task = json.loads(text(results[0]))["task"]
        if step == 1:
            return AIMessage("", tool_calls=[{"name": "locate_evidence", "args": {"task": task, "term": "batch limit"},
                                              "id": "c1"}])
        if step == 2:
            verify = {"task": task, "answer": self.answer()}
            return AIMessage("", tool_calls=[{"name": "verify_citations", "args": verify, "id": "c2"}])
        self.verdict = json.loads(text(results[2]))
        return AIMessage(self.answer())

    def answer(self) -> str:
        from evidence_lib._answers import format_answer

        start = LIMITS.index("The batch")
        quote = "The batch limit is 200 rows per call."
        return format_answer("The batch limit is 200 rows per call. [1]",
                             [("limits", self.revision, start, start + len(quote), quote)])


async def test_langchain_agent_answers_through_the_mcp_tools_with_a_verified_citation(corpus: Path,
                                                                                      tokens: Path) -> None:
    pytest.importorskip("langchain_mcp_adapters", reason="langchain-mcp-adapters is not installed (the mcp extra)")
    pytest.importorskip("langchain.agents", reason="create_agent needs the agents extra")
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_mcp_adapters.client import MultiServerMCPClient

    from evidence_lib.course.readers import PolicyChatModel

    revision = {d.doc_id: d.revision for d in load_corpus(str(corpus))[1]}["limits"]
    reader = CitingReader(revision)
    with http_server(corpus, tokens) as url:
        client = MultiServerMCPClient({"evidence": {"transport": "streamable_http", "url": url,
                                                    "headers": {"Authorization": f"Bearer {ALICE_TOKEN}"}}})
        tools = await client.get_tools()
        agent = create_agent(PolicyChatModel(reader=reader), tools)
        result = await agent.ainvoke({"messages": [HumanMessage("What is the batch limit?")]})
    assert sorted(t.name for t in tools) == ["locate_evidence", "read_evidence", "search_evidence", "start_task",
                                             "verify_citations"]
    assert reader.verdict == {"verified": True, "checks": [
        {"line": 1, "doc_id": "limits", "start": 12, "end": 49, "reason": "ok"}]}
    assert result["messages"][-1].content == reader.answer()


# -- the MCP Inspector's CLI (Node) ------------------------------------------------------------------------------------
def inspector() -> str:
    exe = NODE_BIN / "mcp-inspector"
    if shutil.which("node") is None:
        pytest.skip("Node is not installed: the MCP Inspector CLI test needs node 18+")
    if not exe.exists():
        pytest.skip("the MCP Inspector is not installed: run scripts/mcp_clients.sh (npm, once)")
    return str(exe)


def run_inspector(corpus: Path, *args: str) -> dict:
    cmd = [inspector(), "--cli", sys.executable, "-m", "evidence_lib", "mcp", "--corpus", str(corpus), *args]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_inspector_cli_lists_the_tools_and_calls_one(corpus: Path) -> None:
    listing = run_inspector(corpus, "--method", "tools/list")
    assert [t["name"] for t in listing["tools"]] == ["start_task", "search_evidence", "locate_evidence",
                                                     "read_evidence", "verify_citations"]
    started = run_inspector(corpus, "--method", "tools/call", "--tool-name", "start_task")
    assert json.loads(started["content"][0]["text"])["task"].startswith("t-")
    refused = run_inspector(corpus, "--method", "tools/call", "--tool-name", "read_evidence",
                            "--tool-arg", "task=t-never-minted", "--tool-arg", "doc_id=limits")
    assert refused["isError"] is True and json.loads(refused["content"][0]["text"])["error"] == "unknown_task"
