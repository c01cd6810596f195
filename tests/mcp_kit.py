"""What the MCP tests share (issues 27 and 31): a small folder corpus, a tokens file, a server on a free loopback port
(waited on until it listens, never a fixed sleep), and an SDK client session over stdio or streamable HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from evidence_lib.integrations.mcp._launch import ServerProcess

ROOT = Path(__file__).resolve().parents[1]
ALICE_TOKEN = "alice-token-0123456789"
BOB_TOKEN = "bob-token-0123456789ab"
LIMITS = "Batch limit\nThe batch limit is 200 rows per call. Timeout is 30 seconds.\n"
PAYROLL = "工资单\n单批上限为200条，超时设为30秒。只有财务组可以读。\n"
#: How long a test waits for a server to listen: generous, the machine is shared and busy.
READY_SECONDS = 180
TRANSPORTS = ("stdio", "http")


def write_corpus(folder: Path) -> Path:
    """Two documents: ``limits`` (open) and ``payroll`` (finance only, by the tokens file)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "limits.txt").write_text(LIMITS, encoding="utf-8")
    (folder / "payroll.txt").write_text(PAYROLL, encoding="utf-8")
    return folder


def write_tokens(path: Path, *, documents: bool = True) -> Path:
    """Alice (finance) may read ``payroll``; Bob, same tenant, may not (``documents=False``: the tokens only, as a
    ``--store`` server takes them, its documents' grants being the snapshot's)."""
    grants = {"documents": {"payroll": {"tenant": "acme", "read": ["group:finance"]}}} if documents else {}
    path.write_text(json.dumps({
        "tokens": {ALICE_TOKEN: {"tenant": "acme", "user": "alice", "groups": ["finance"]},
                   BOB_TOKEN: {"tenant": "acme", "user": "bob"}}, **grants}), encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """The two-document folder of :func:`write_corpus` (import the fixture into a test module to use it)."""
    return write_corpus(tmp_path / "docs")


@pytest.fixture
def tokens(tmp_path: Path) -> Path:
    """The tokens file of :func:`write_tokens`."""
    return write_tokens(tmp_path / "tokens.json")


def store_backends() -> list:
    """The stores an MCP test runs on: an SQLite file always, PostgreSQL when ``EVIDENCE_PG_DSN`` is set."""
    pg = pytest.mark.skipif(not os.environ.get("EVIDENCE_PG_DSN"),
                            reason="EVIDENCE_PG_DSN is not set (bash scripts/postgres.sh up prints one)")
    return ["sqlite", pytest.param("postgres", marks=pg)]


@contextmanager
def store_location(backend: str, folder: Path, prefix: str = "mcp") -> Iterator[str]:
    """Where a store is: an SQLite file in ``folder``, or a scratch schema of the PostgreSQL server (dropped after)."""
    if backend == "sqlite":
        yield str(folder / "evidence.db")
        return
    from evidence_lib.store._postgres import scratch_schema

    with scratch_schema(os.environ["EVIDENCE_PG_DSN"], prefix) as dsn:
        yield dsn


def server_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "evidence_lib", "mcp", *args]


def server_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@dataclass
class Running:
    """A server subprocess: its URL, its process and the file its stderr goes to."""

    url: str
    proc: subprocess.Popen
    log: Path

    def log_lines(self) -> list[str]:
        return self.log.read_text(encoding="utf-8", errors="replace").splitlines()


@contextmanager
def serve_http(corpus: Path | str, tokens: Path, log: Path, *, host: str = "127.0.0.1",
               extra: tuple[str, ...] = (), where: str = "--corpus") -> Iterator[Running]:
    """``python -m evidence_lib mcp --transport http`` in a subprocess on a free port of ``host``, its stderr in
    ``log``, started by the library's :class:`~evidence_lib.integrations.mcp._launch.ServerProcess` (it waits until the
    server listens, and raises with the server's own stderr if it exits first). Stopped when the block ends."""
    with ServerProcess.start([where, str(corpus), "--tokens", str(tokens), *extra], host=host, stderr=log, cwd=ROOT,
                             env=server_env(), timeout=READY_SECONDS) as server:
        yield Running(server.url, server.proc, log)


@contextmanager
def http_server(corpus: Path, tokens: Path) -> Iterator[str]:
    """:func:`serve_http` on 127.0.0.1 with its stderr beside the tokens file; the server's URL."""
    with serve_http(corpus, tokens, tokens.with_name(tokens.name + ".server.log")) as running:
        yield running.url


@dataclass
class Served:
    """A client's view of one server: the initialized SDK session, the file the server's stderr goes to, and the HTTP
    server (``None`` over stdio)."""

    session: object
    log: Path
    running: Running | None = None

    def log_lines(self) -> list[str]:
        return self.log.read_text(encoding="utf-8", errors="replace").splitlines()


@asynccontextmanager
async def mcp_session(transport: str, corpus: Path, tokens: Path, *, token: str = ALICE_TOKEN,
                      extra: tuple[str, ...] = ()) -> AsyncIterator[Served]:
    """An initialized SDK ``ClientSession`` to a server over ``corpus``: stdio (the local principal) or HTTP (the
    principal of ``token``, from ``tokens``). The server's stderr goes to a file beside ``tokens``."""
    import httpx
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    log = tokens.with_name(f"{tokens.name}.{transport}.log")
    if transport == "stdio":
        params = StdioServerParameters(command=sys.executable, args=server_command("--corpus", str(corpus), *extra)[1:],
                                       cwd=str(ROOT), env=server_env())
        with open(log, "w", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                yield Served(session, log)
        return
    with serve_http(corpus, tokens, log, extra=extra) as running:
        client = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
        async with streamable_http_client(running.url, http_client=client) as (read, write, _), \
                ClientSession(read, write) as session:
            await session.initialize()
            yield Served(session, log, running)


async def ask(session, name: str, **args) -> tuple[str, bool]:
    """``(text, is_error)`` of one ``tools/call``."""
    result = await session.call_tool(name, args)
    return result.content[0].text, bool(result.isError)


async def task_of(session) -> str:
    """A new task's handle (``start_task``)."""
    return json.loads((await ask(session, "start_task"))[0])["task"]
