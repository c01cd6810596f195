"""Worker processes for the multi-process store tests (``spawn`` children import it by name)."""

from __future__ import annotations

import json
import os
import time
from collections import Counter

from evidence_lib import Document, ManualClock, Principal, evidence_tools, run_tool_call, tool_call

from .storekit import T0, open_spec


def serve(spec, tenant: str, other: str, worker: int, calls: int) -> dict:
    """Serve ``calls`` tool calls for ``tenant`` on a shared store; also write notes and try the other tenant."""
    store = open_spec(spec, ManualClock(T0))
    snap = store.snapshot(tenant, "s", "q")
    ledger = store.ledger(tenant, "s", "task")
    me = Principal(tenant, f"w{worker}")
    tools = evidence_tools(snap, me, ledger=ledger)
    codes: Counter = Counter()
    leaked = 0
    ws = store.workspace(Principal(tenant, "shared"), "s")
    for i in range(calls):
        doc = f"{tenant}-{(worker + i) % 4}"
        msg = run_tool_call(tools, tool_call("read_evidence", {"doc_id": doc, "offset": (i * 7) % 50, "limit": 40},
                                             f"w{worker}-{i}"))
        body = json.loads(msg.content)
        codes[body.get("error", "ok")] += 1
        unmetered = evidence_tools(snap, me)  # probes of the other tenant, outside the budget
        probe = run_tool_call(unmetered, tool_call("locate_evidence", {"term": f"marker-{other}"}, f"p{worker}-{i}"))
        foreign = run_tool_call(unmetered, tool_call("read_evidence", {"doc_id": f"{other}-0"}, "x"))
        leaked += other in probe.content or other in foreign.content
        ws.write_note(f"w{worker}-{i}", f"worker {worker} step {i}")
    store.close()
    return {"codes": dict(codes), "leaked": leaked}


def slow_documents(n: int, marker: str, started: str):
    """``n`` documents of about 64 KB; announces the first batch through the file ``started``."""
    for i in range(n):
        if i == 8:
            with open(started, "w") as f:
                f.write(str(os.getpid()))
        time.sleep(0.002)
        yield Document(f"doc-{i:04}", f"doc {i}", marker, (marker + " ") * 8000)


def write_snapshot(spec, n: int, marker: str, started: str) -> None:
    """A writer that replaces the snapshot (tenant acme, s, q); the test kills it with SIGKILL half-way."""
    store = open_spec(spec, ManualClock(T0))
    store.put_snapshot("acme", "s", "q", slow_documents(n, marker, started), batch_bytes=64_000)
