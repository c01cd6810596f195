"""What the EvidenceMiddleware tests share: the principal, the large log and its answer line, the log tool, call and
answer builders, and the clock and store fixtures (memory and SQLite). Imported by tests/test_middleware*.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool

from evidence_lib import ManualClock, Principal
from evidence_lib.store import MemoryStore, SQLiteStore

__all__ = ["ALICE", "ANSWER", "BIG", "LOG", "MARKER", "START", "T0", "answer_citing", "call", "clock", "get_logs",
           "seen", "store", "tool_messages"]

ALICE = Principal("acme", "alice")
T0 = datetime(2026, 12, 1, 9, tzinfo=UTC)
ANSWER = "2026-11-30T12:41:40Z ERROR payment-7 timeout after 30s"
LOG = "\n".join([f"2026-11-30T12:{i // 60 % 60:02}:{i % 60:02}Z INFO worker-{i % 7} ok seq={i}" for i in range(2500)]
                + [ANSWER] + [f"2026-11-30T13:00:{i % 60:02}Z INFO worker-{i % 7} ok seq={i}" for i in range(1500)])
START = LOG.index(ANSWER)
MARKER = "MARKER-deep-inside-the-result"  # if this reaches the model, the whole result did
BIG = "\n".join(f"line {i} INFO ok" for i in range(5000)) + "\n" + MARKER


@tool
def get_logs(service: str) -> str:
    """The service's log lines (large)."""
    return LOG


def call(name: str, call_id: str = "c1", **args):
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def tool_messages(messages):
    return [m for m in messages if isinstance(m, ToolMessage)]


def seen(msg: ToolMessage) -> str:
    """Everything the model is sent for this message, as text (blocks serialized)."""
    return msg.content if isinstance(msg.content, str) else json.dumps(msg.content, ensure_ascii=False, default=str)


def answer_citing(doc_id: str, revision: str, start: int, end: int, quote: str | None,
                  prose: str = "It timed out. [1]") -> str:
    """A final answer in the one answer format citing ``[start, end)`` of ``doc_id@revision``."""
    tail = "" if quote is None else " " + json.dumps(quote)
    return f"{prose}\n\nSources:\n[1] {doc_id}@{revision} [{start}, {end}){tail}"


@pytest.fixture
def clock():
    return ManualClock(T0)


@pytest.fixture(params=["memory", "sqlite"])
def store(request, clock, tmp_path):
    s = MemoryStore(clock) if request.param == "memory" else SQLiteStore(str(tmp_path / "evidence.db"), clock)
    yield s
    s.close()
