"""evidence_lib.course.mcp_session.McpSession.close (notebook 13): a closed session leaves nothing of its loop behind.

Under load, notebook 13 once printed "Task was destroyed but it is pending!" on the kernel's stderr after a session
closed. Its cause: ``close`` exited the client's contexts from another task than the one that entered them, which
anyio's task groups refuse (the error was swallowed), leaving the transport's tasks and generators behind. One task now
opens and closes them, and ``close`` ends the loop as ``asyncio.run`` does.
"""

from __future__ import annotations

import gc
import logging
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'evidence-lib[mcp]')")

from mcp_kit import ALICE_TOKEN, READY_SECONDS, ROOT, server_env, write_corpus, write_tokens

from evidence_lib.course.mcp_session import McpSession, ServerProcess


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_closed_sessions_leave_no_pending_task_or_async_generator(tmp_path: Path) -> None:
    corpus, tokens = write_corpus(tmp_path / "docs"), write_tokens(tmp_path / "tokens.json")
    records = _Records()
    logging.getLogger("asyncio").addHandler(records)
    try:
        with ServerProcess.start(["--corpus", str(corpus), "--tokens", str(tokens)], cwd=ROOT, env=server_env(),
                                 timeout=READY_SECONDS) as server:
            loops = []
            for _ in range(8):
                with McpSession.http(server.url, ALICE_TOKEN) as session:
                    assert "task" in session.call_json("start_task")
                    loops.append(session._loop)
                assert session._lifetime.exception() is None  # the contexts closed in the task that opened them
                gc.collect()
                assert loops[-1].is_closed() and not loops[-1]._asyncgens  # every async generator was closed
    finally:
        logging.getLogger("asyncio").removeHandler(records)
    assert not [m for m in records.messages if "destroyed but it is pending" in m], records.messages
