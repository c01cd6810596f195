"""What tasks cost the MCP server's memory (issue 31, item 2), measured in a real server process through the SDK's
client over stdio and HTTP: 40 tasks whose searches each rank one 10 MB file add at most 50 MiB of resident memory
(the documents' bytes are shared by every snapshot and task), and one principal holds at most
``MAX_TASKS_PER_PRINCIPAL`` live tasks.

The figures are the server's own: ``VmRSS`` and ``VmHWM`` from ``/proc/<pid>/status`` of the server process (never
the test's, nor a peak ``getrusage`` would inherit), read before and after the 40 tasks.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

from mcp_kit import TRANSPORTS, Served, ask, mcp_session, task_of, write_corpus, write_tokens

from evidence_lib.integrations.mcp._server import MAX_TASKS_PER_PRINCIPAL

MIB = 1024 * 1024
TASKS = 40
#: What 40 tasks may add to the server's resident memory (issue 31: each kept its own copy, 390 MiB in all).
MAX_GROWTH = 50 * MIB
SENTENCE = "The batch limit is 200 rows per call, and the retry limit is seven. "


def status(pid: int) -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` of process ``pid``, in bytes."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) * 1024
    return fields


def server_pid(served: Served) -> int:
    """The server process: the HTTP server's, or the stdio client's child running ``evidence_lib mcp``."""
    if served.running is not None:
        return served.running.proc.pid
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[1] == me and b"evidence_lib" in cmdline and b"mcp" in cmdline:
            return int(entry.name)
    raise AssertionError("the stdio server process was not found among this process's children")


@pytest.fixture
def big_corpus(tmp_path: Path) -> Path:
    folder = write_corpus(tmp_path / "docs")
    (folder / "big.txt").write_text("Big\n" + SENTENCE * (10_000_000 // len(SENTENCE)), encoding="utf-8")
    assert 9.5 * 1_000_000 < (folder / "big.txt").stat().st_size <= 10 * 1_000_000
    return folder


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_forty_tasks_searching_one_10_mb_file_share_its_bytes(transport: str, big_corpus: Path,
                                                                    tmp_path: Path) -> None:
    tokens = write_tokens(tmp_path / "tokens.json")
    async with mcp_session(transport, big_corpus, tokens) as served:
        s, pid = served.session, server_pid(served)
        for _ in range(2):  # warm up: the whole-corpus index and the shared bytes exist from here on
            task = await task_of(s)
            reply, error = await ask(s, "search_evidence", task=task, query="batch limit")
            assert not error and "big" in reply
        before = status(pid)
        for n in range(TASKS):
            task = await task_of(s)
            reply, error = await ask(s, "search_evidence", task=task, query=f"batch limit {n}")
            assert not error and "big" in reply
        after = status(pid)
    grew, peak = after["VmRSS"] - before["VmRSS"], after["VmHWM"] - before["VmHWM"]
    print(f"{transport}: VmRSS {before['VmRSS'] / MIB:.0f} -> {after['VmRSS'] / MIB:.0f} MiB (+{grew / MIB:.1f}); "
          f"VmHWM {before['VmHWM'] / MIB:.0f} -> {after['VmHWM'] / MIB:.0f} MiB (+{peak / MIB:.1f})")
    assert before["VmRSS"] > 10 * MIB  # the figures are the server's: it holds the 10 MB document
    assert grew <= MAX_GROWTH and peak <= MAX_GROWTH


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_principal_holds_at_most_sixteen_live_tasks(transport: str, tmp_path: Path) -> None:
    corpus, tokens = write_corpus(tmp_path / "docs"), write_tokens(tmp_path / "tokens.json")
    async with mcp_session(transport, corpus, tokens) as served:
        s = served.session
        tasks = [await task_of(s) for _ in range(MAX_TASKS_PER_PRINCIPAL + 1)]
        forgotten = await ask(s, "read_evidence", task=tasks[0], doc_id="limits")
        kept = await ask(s, "read_evidence", task=tasks[1], doc_id="limits")
        never = await ask(s, "read_evidence", task="t-never-issued", doc_id="limits")
    assert MAX_TASKS_PER_PRINCIPAL == 16
    assert forgotten == never and forgotten[1] and '"unknown_task"' in forgotten[0]
    assert not kept[1]
