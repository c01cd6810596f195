"""A synchronous handle on one MCP client session, for notebook 13 and bench/bench_mcp_servers.py (issue 27).

The official SDK's client is asynchronous, and a session opened with ``async with`` must be closed in the same task:
a notebook that opens it in one cell and uses it in the next cannot. :class:`McpSession` keeps the session in an
event loop of its own thread, so every cell (and every plain function, like the eval's reading flows) calls
``session.call(name, args)`` and gets ``(text, is_error)``. Transports: a server started as a subprocess on stdio
(:meth:`McpSession.stdio`), or streamable HTTP with a bearer token (:meth:`McpSession.http`) to a server that
:class:`ServerProcess` started and waited for (the library's: ``evidence_lib.integrations.mcp._launch``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any

from ..integrations.mcp._launch import ServerProcess

__all__ = ["McpSession", "ServerProcess"]

#: Seconds any one request may take before the caller gives up.
TIMEOUT = 120

# The SDK's client logs a warning when a session ends against a server that is gone (notebook 13 kills one on
# purpose); with no logging configured, Python prints it on the kernel's stderr, which a cell's stored output cannot
# hold. A handler on the SDK's logger keeps such records off stderr; they still reach any handler the caller installs.
logging.getLogger("mcp").addHandler(logging.NullHandler())


async def _drain() -> None:
    """Cancel and await every other task of the running loop, then close its async generators."""
    pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    await asyncio.get_running_loop().shutdown_asyncgens()


class McpSession:
    """One initialized MCP ``ClientSession`` driven from synchronous code. Close it with :meth:`close` (or ``with``)."""

    def __init__(self, opener: Callable[[AsyncExitStack], Any]) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._closing = asyncio.Event()
        opened: concurrent.futures.Future[Any] = concurrent.futures.Future()
        # One task opens the client's contexts and the same task closes them: anyio's task groups (the SDK's
        # transports) refuse to be exited from another task, which left their tasks pending after close.
        self._lifetime = asyncio.run_coroutine_threadsafe(self._live(opener, opened), self._loop)
        try:
            self._session = opened.result(timeout=TIMEOUT)
        except BaseException:
            self.close()
            raise

    @classmethod
    def stdio(cls, command: str, args: Sequence[str], cwd: str | None = None,
              env: Mapping[str, str] | None = None) -> McpSession:
        """Start ``command args`` as a subprocess and speak MCP over its stdin/stdout (its stderr is discarded)."""
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(command=command, args=list(args), cwd=cwd,
                                       env=dict(env) if env is not None else None)

        async def opener(stack: AsyncExitStack) -> Any:
            errlog = stack.enter_context(open(os.devnull, "w", encoding="utf-8"))
            return await stack.enter_async_context(stdio_client(params, errlog=errlog))

        return cls(opener)

    @classmethod
    def http(cls, url: str, token: str) -> McpSession:
        """Connect to a streamable HTTP server at ``url`` with ``Authorization: Bearer token``."""
        import httpx
        from mcp.client.streamable_http import streamable_http_client

        async def opener(stack: AsyncExitStack) -> Any:
            http = await stack.enter_async_context(
                httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30))
            read, write, _ = await stack.enter_async_context(streamable_http_client(url, http_client=http))
            return read, write

        return cls(opener)

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=TIMEOUT)

    async def _live(self, opener: Callable[[AsyncExitStack], Any], opened: concurrent.futures.Future[Any]) -> None:
        """Open the session, hand it over, and keep its contexts open until :meth:`close`, all in this one task."""
        from mcp import ClientSession

        try:
            async with AsyncExitStack() as stack:
                read, write = await opener(stack)
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                opened.set_result(session)
                await self._closing.wait()
        except BaseException as e:
            if not opened.done():
                opened.set_exception(e)
            raise

    def tools(self) -> list[Any]:
        """``tools/list``: the tools (name, description, inputSchema) the server offers this caller."""
        return list(self._run(self._session.list_tools()).tools)

    def call(self, name: str, args: Mapping[str, Any] | None = None) -> tuple[str, bool]:
        """One ``tools/call``: the text content blocks joined, and whether the server marked it an error."""
        result = self._run(self._session.call_tool(name, dict(args or {})))
        text = "".join(c.text for c in result.content if getattr(c, "type", "") == "text")
        return text, bool(result.isError)

    def call_json(self, name: str, args: Mapping[str, Any] | None = None) -> Any:
        """:meth:`call` for a tool whose reply is JSON (``start_task``, ``verify_citations``, a refusal)."""
        return json.loads(self.call(name, args)[0])

    def close(self) -> None:
        """Close the session (and stop a stdio server); safe to call twice."""
        if self._loop.is_closed():
            return
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._closing.set)
            try:
                self._lifetime.result(timeout=TIMEOUT)
            except Exception:  # noqa: BLE001 - a server that already exited closes with an error; nothing to keep
                pass
            # As asyncio.run ends a loop: the client's async generators closed and its leftover tasks finished
            # while the loop still runs, so none is collected later as "Task was destroyed but it is pending!" on
            # the kernel's stderr (a cell's stored output cannot hold it; seen under load in notebook 13).
            self._run(_drain())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> McpSession:
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()
