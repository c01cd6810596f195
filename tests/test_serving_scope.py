"""A call's verified bytes belong to that call alone (issue 31, item 11).

``serving()`` keeps what one tool call fetched and verified in a context variable. asyncio copies the context into a
task created inside the block, and a block entered and never left stays current: before, either kept serving that
call's bytes to later calls, so a file changed since was not refused and a snapshot whose session was deleted was
still served. A call is closed when its block ends (closed calls are ignored), a call opened elsewhere is never
joined, and every tool call opens its own: a later call always verifies for itself. On a fixed index, a store
snapshot and a retriever's reach.
"""

from __future__ import annotations

import asyncio

import pytest
from store.storekit import T0

from evidence_lib import (
    Document,
    EvidenceError,
    EvidenceIndex,
    ManualClock,
    Principal,
    evidence_tools,
    run_tool_call,
    tool_call,
)
from evidence_lib.retrieval import BM25Retriever, RetrieverSource
from evidence_lib.store import MemoryStore, SQLiteStore

ALICE = Principal("acme", "alice")
DOCS = [Document("d1", "one", "r1", "alpha beta gamma " * 20), Document("d2", "two", "r1", "delta epsilon " * 20)]


def read(tools, doc_id: str = "d1"):
    return run_tool_call(tools, tool_call("read_evidence", {"doc_id": doc_id, "offset": 0, "limit": 40}, "c1"))


@pytest.fixture
def index(tmp_path) -> EvidenceIndex:
    return EvidenceIndex.build(DOCS, tmp_path)


def edit(index: EvidenceIndex, doc_id: str = "d1") -> None:
    path = index.stored_file(doc_id)
    path.write_text("tampered" + path.read_text(encoding="utf-8")[8:], encoding="utf-8")


def test_a_task_created_inside_serving_verifies_the_file_again_after_the_call_ended(index):
    async def later() -> str:
        await asyncio.sleep(0)  # runs after the block below has ended
        return index.text("d1", None, 0, 10)

    async def main() -> str:
        with index.serving():
            index.snapshot("d1")  # verified, and kept for the call
            task = asyncio.create_task(later())  # the task's context is a copy of the call's
        edit(index)
        return await task

    with pytest.raises(EvidenceError, match="evidence_changed"):
        asyncio.run(main())


def test_a_serving_block_never_left_does_not_serve_later_calls(index):
    tools = evidence_tools(index)
    scope = index.serving()
    scope.__enter__()  # entered, never exited
    try:
        assert index.snapshot("d1").text.startswith("alpha")
        edit(index)
        msg = read(tools)
        assert msg.status == "error" and "evidence_changed" in msg.content
    finally:
        scope.__exit__(None, None, None)


def test_a_task_started_inside_a_call_does_not_join_it(index):
    """A task started while the call is still open is another call: it reads and verifies for itself."""
    async def main() -> str:
        with index.serving():
            index.snapshot("d1")
            edit(index)
            return await asyncio.create_task(asyncio.to_thread(index.text, "d1", None, 0, 10))

    with pytest.raises(EvidenceError, match="evidence_changed"):
        asyncio.run(main())


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    clock = ManualClock(T0)
    s = MemoryStore(clock) if request.param == "memory" else SQLiteStore(tmp_path / "s.db", clock)
    yield s
    s.close()


def test_a_task_created_inside_a_snapshots_serving_is_refused_once_the_session_is_deleted(store):
    snap = store.put_snapshot("acme", "s-1", "q", DOCS)

    async def later() -> str:
        await asyncio.sleep(0)
        return snap.text("d1", ALICE, 0, 10)

    async def main() -> str:
        with snap.serving():
            snap.text("d1", ALICE, 0, 10)  # checked published, chunk kept for the call
            task = asyncio.create_task(later())
        store.delete_session("acme", "s-1")
        return await task

    with pytest.raises(EvidenceError, match="snapshot_expired"):
        asyncio.run(main())


def test_a_snapshots_serving_never_left_does_not_serve_a_deleted_session(store):
    snap = store.put_snapshot("acme", "s-1", "q", DOCS)
    tools = evidence_tools(snap, ALICE)
    scope = snap.serving()
    scope.__enter__()
    try:
        assert snap.text("d1", ALICE, 0, 5) == "alpha"
        store.delete_session("acme", "s-1")
        msg = read(tools)
        assert msg.status == "error" and "snapshot_expired" in msg.content
    finally:
        scope.__exit__(None, None, None)


def test_a_reachs_serving_never_left_does_not_serve_a_changed_document():
    """Over a retriever, read and locate work on a Reach (the last search's snapshot and the whole corpus): its
    serving composes the two indexes' and is closed the same way."""
    from langchain_core.documents import Document as LCDocument

    corpus = [LCDocument(page_content=d.text, metadata={"doc_id": d.doc_id, "title": d.title}) for d in DOCS]
    source = RetrieverSource(BM25Retriever(documents=corpus, k=1))
    tools = evidence_tools(source, profile="compact")
    assert run_tool_call(tools, tool_call("search_evidence", {"query": "alpha"}, "c0")).status == "success"
    reach = tools[0].session.index
    scope = reach.serving()
    scope.__enter__()
    try:
        reach.snapshot("d2")  # not ranked by the search: served from the whole corpus's index
        reach.whole._blobs["d2"] = b"tampered"  # its bytes changed behind its back
        msg = read(tools, "d2")
        assert msg.status == "error" and "evidence_changed" in msg.content
    finally:
        scope.__exit__(None, None, None)
