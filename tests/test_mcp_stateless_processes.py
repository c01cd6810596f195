"""Issue 33 item 5 with real processes: ``python -m evidence_lib mcp --store`` servers over streamable HTTP, called by
the ``mcp`` SDK's client. Two servers on one store (an SQLite file always; PostgreSQL with ``EVIDENCE_PG_DSN``) answer
alternate calls of one task handle with one budget; a server killed (SIGKILL) and restarted mid-task continues the
same task; two processes spending one budget at once never overspend it. Servers are started by the library's
:class:`~evidence_lib.integrations.mcp._launch.ServerProcess`, which waits until each listens (never a fixed sleep)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_kit import ALICE_TOKEN, READY_SECONDS, ROOT, server_env, store_backends, store_location, write_tokens

from evidence_lib._answers import format_answer
from evidence_lib._documents import Document
from evidence_lib.integrations.mcp._launch import ServerProcess
from evidence_lib.store import open_store, system_clock

SENTENCE = "The batch limit is 200 rows per call. "
DOCS = [Document(f"d{i:02}", f"note {i}", f"r{i}", SENTENCE * 40) for i in range(10)]
BUDGET_CALLS = 20  # the default Budget's max_calls: what every server process starts tasks with


@pytest.fixture(params=store_backends())
def where(request, tmp_path: Path) -> Iterator[str]:
    """The shared store, holding the snapshot ``(acme, mcp, mcp)`` of :data:`DOCS`: an SQLite file, or a scratch
    schema of the PostgreSQL server."""
    with store_location(request.param, tmp_path, "mcpprocs") as spec:
        with open_store(spec, system_clock) as store:
            store.put_snapshot("acme", "mcp", "mcp", DOCS)
        yield spec


@contextmanager
def server(where: str, tmp_path: Path, name: str, port: int | None = None) -> Iterator[ServerProcess]:
    tokens = tmp_path / "tokens.json"
    if not tokens.exists():
        write_tokens(tokens, documents=False)
    with ServerProcess.start(["--store", where, "--tokens", str(tokens)], port=port, cwd=ROOT, env=server_env(),
                             stderr=tmp_path / f"{name}.log", timeout=READY_SECONDS) as running:
        yield running


@asynccontextmanager
async def client(url: str) -> AsyncIterator[ClientSession]:
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {ALICE_TOKEN}"}, timeout=120)
    async with streamable_http_client(url, http_client=http) as (read, write, _), ClientSession(read, write) as s:
        await s.initialize()
        yield s


async def ask(session: ClientSession, name: str, **args) -> tuple[str, bool]:
    result = await session.call_tool(name, args)
    return result.content[0].text, bool(result.isError)


async def start(session: ClientSession) -> str:
    return json.loads((await ask(session, "start_task"))[0])["task"]


def page(n: int) -> dict:
    """The ``n``-th distinct page: a document in turn, 3 pages each (more than the budget's calls)."""
    return {"doc_id": f"d{n % len(DOCS):02}", "offset": 100 * (n // len(DOCS)), "limit": 50}


def code(text: str) -> str:
    return json.loads(text)["error"]


async def test_two_server_processes_on_one_store_answer_alternate_calls_of_one_task_with_one_budget(
        where: str, tmp_path: Path) -> None:
    with server(where, tmp_path, "a") as a, server(where, tmp_path, "b") as b:
        async with client(a.url) as sa, client(b.url) as sb:
            task = await start(sa)
            replies = []
            for n in range(BUDGET_CALLS + 2):
                on = (sa, sb)[(n + n // len(DOCS)) % 2]  # alternate; each document is read again on the other one
                replies.append(await ask(on, "read_evidence", task=task, **page(n)))
            at = DOCS[1].text.index("200 rows", 100)
            cite = ("d01", "r1", at, at + 8, "200 rows")  # inside page(11) = d01 [100, 150), read through a
            verdict = json.loads((await ask(sb, "verify_citations", task=task,
                                            answer=format_answer("200 rows [1].", [cite])))[0])
    assert [error for _, error in replies[:BUDGET_CALLS]] == [False] * BUDGET_CALLS
    assert [code(text) for text, _ in replies[BUDGET_CALLS:]] == ["budget_exhausted"] * 2  # each saw the other's
    assert replies[0][0].startswith("d00 @r0 ") and replies[len(DOCS)][0].startswith("d00 #")  # named once per task
    assert verdict["verified"] is True


async def test_a_server_killed_mid_task_and_restarted_continues_the_same_task(where: str, tmp_path: Path) -> None:
    with server(where, tmp_path, "first") as first:
        async with client(first.url) as s:
            task = await start(s)
            before = [await ask(s, "read_evidence", task=task, **page(n)) for n in range(5)]
        port = first.port
        first.kill()  # SIGKILL mid-task: nothing flushed, nothing said goodbye
    with server(where, tmp_path, "again", port=port) as again:
        async with client(again.url) as s:
            reread = await ask(s, "read_evidence", task=task, **page(0))
            after = [await ask(s, "read_evidence", task=task, **page(n)) for n in range(5, BUDGET_CALLS + 1)]
            at = SENTENCE.index("200 rows")
            cite = ("d02", "r2", at, at + 8, "200 rows")  # inside page(2), read before the kill
            verdict = json.loads((await ask(s, "verify_citations", task=task,
                                            answer=format_answer("200 rows [1].", [cite])))[0])
    assert not any(error for _, error in before)
    assert json.loads(reread[0])["status"] == "already_read"  # the reads survived
    assert after[0][0].startswith("d05 @r5 ") and not after[0][1]
    # 5 reads + 1 already_read before this loop: 14 more fit in the 20 calls, then the budget is spent
    assert [error for _, error in after] == [False] * (BUDGET_CALLS - 6) + [True] * 2
    assert code(after[-1][0]) == "budget_exhausted"
    assert verdict["verified"] is True


async def test_two_processes_spending_one_budget_at_once_never_overspend(where: str, tmp_path: Path) -> None:
    with server(where, tmp_path, "a") as a, server(where, tmp_path, "b") as b:
        async with client(a.url) as sa, client(b.url) as sb:
            task = await start(sa)
            replies = await asyncio.gather(*(ask((sa, sb)[n % 2], "read_evidence", task=task, **page(n))
                                             for n in range(30)))
    assert sum(1 for _, error in replies if not error) == BUDGET_CALLS
    assert {code(text) for text, error in replies if error} == {"budget_exhausted"}


def test_a_server_that_exits_before_listening_shows_its_own_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError) as failed:
        ServerProcess.start(["--store", str(tmp_path / "evidence.db"), "--tokens", str(tmp_path / "missing.json")],
                            cwd=ROOT, env=server_env())
    assert "exited (code 2) before it listened" in str(failed.value)
    assert "tokens file missing.json" in str(failed.value)  # the server's own stderr line


def test_a_store_server_refuses_document_grants_it_would_not_apply(tmp_path: Path) -> None:
    """With ``--store`` the documents and their grants come from the snapshot; a tokens file's ``documents`` would be
    silently ignored (a document it restricts served to everyone), so the server refuses to start and says why."""
    tokens = write_tokens(tmp_path / "tokens.json")  # Alice's and Bob's tokens, and payroll for finance only
    with pytest.raises(RuntimeError) as failed:
        ServerProcess.start(["--store", str(tmp_path / "evidence.db"), "--tokens", str(tokens)], cwd=ROOT,
                            env=server_env())
    assert "exited (code 2) before it listened" in str(failed.value)
    assert "'documents' grants apply to --corpus only" in str(failed.value)
