"""Isolation, expiry at the boundary, cleanup, the store-backed ledger and the task workspace, on every backend."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from evidence_lib import (
    Access,
    Budget,
    Document,
    EvidenceError,
    EvidenceIndex,
    Ledger,
    Principal,
    evidence_tools,
    run_tool_call,
    tool_call,
)
from evidence_lib.course.article import article_corpus
from evidence_lib.store import ToolResults
from evidence_lib.store._workspace import ENTRY_PATH

HOUR = timedelta(hours=1)
TICK = timedelta(microseconds=1)
ACME, GLOBEX = Principal("acme", "alice"), Principal("globex", "bob")


def docs_of(tenant: str) -> list[Document]:
    return [Document(f"{tenant}-{i}", f"{tenant} doc {i}", "r1", f"{tenant} secret marker-{tenant}-{i} 上限",
                     Access(tenant)) for i in range(3)]


def call(tools, name, args, cid="c1"):
    return run_tool_call(tools, tool_call(name, args, cid))


# -- isolation ---------------------------------------------------------------------------------------------
def test_another_tenants_doc_id_is_indistinguishable_from_a_missing_one(estore):
    a = estore.put_snapshot("acme", "s-1", "q", docs_of("acme"))
    b = estore.put_snapshot("globex", "s-1", "q", docs_of("globex"))  # same session and query names
    tools_b = evidence_tools(b, GLOBEX)
    foreign = call(tools_b, "read_evidence", {"doc_id": "acme-0"})
    missing = call(tools_b, "read_evidence", {"doc_id": "never-stored"})
    assert (foreign.status, foreign.content) == (missing.status, missing.content)
    assert json.loads(foreign.content)["error"] == "unknown_doc_id"
    assert json.loads(call(tools_b, "locate_evidence", {"term": "marker-acme"}).content) == []
    assert [r["doc_id"] for r in json.loads(call(tools_b, "search_evidence", {"query": "q"}).content)] == \
        ["globex-0", "globex-1", "globex-2"]
    # the acme principal bound to globex's snapshot sees nothing, and its doc_ids are unknown there too
    assert b.visible(ACME) == [] and a.visible(GLOBEX) == []
    for snap, who, doc_id in [(b, ACME, "globex-0"), (a, GLOBEX, "acme-0")]:
        with pytest.raises(EvidenceError, match="unknown_doc_id"):
            snap.entry(doc_id, who)


def test_another_tenants_result_handle_is_indistinguishable_from_a_missing_one(estore):
    h = ToolResults(estore, ACME, "s-1", ids="minted", seed="t").put("trace " * 500, tool="query_logistics").doc_id
    assert ToolResults(estore, ACME, "s-1").read(h, 0, 10)["text"] == "trace trac"
    refusals = []
    for who, session, aid in [(GLOBEX, "s-1", h), (ACME, "s-2", h), (ACME, "s-1", "art-0000000000000000"),
                              (ACME, "s-1", "../x" * 40)]:
        with pytest.raises(EvidenceError) as info:
            ToolResults(estore, who, session).read(aid)
        refusals.append((info.value.code, info.value.details))
    assert refusals == [("unknown_doc_id", {})] * 4


def test_a_workspace_is_private_to_its_tenant_session_and_user(estore):
    mine = estore.workspace(ACME, "s-1")
    mine.write_note("limit", "d03: 单批上限为200条", summary="what d03 says")
    assert estore.workspace(GLOBEX, "s-1").files() == []  # same session name, other tenant: empty
    assert estore.workspace(ACME, "s-2").files() == []
    for who in (GLOBEX, Principal("acme", "mallory")):
        tools = evidence_tools(mine, who)
        assert json.loads(call(tools, "search_evidence", {"query": "x"}).content) == []
        refused = call(tools, "read_evidence", {"doc_id": "notes/limit"})
        assert json.loads(refused.content)["error"] == "unknown_doc_id"


# -- expiry exactly at the boundary ------------------------------------------------------------------------
def test_a_snapshot_is_readable_until_just_before_expires_at_and_expired_at_it(estore, clock):
    snap = estore.put_snapshot("acme", "s-1", "q", article_corpus()[:2], ttl=HOUR)
    assert snap.expires_at == snap.created_at + HOUR
    tools = evidence_tools(snap)
    clock.advance(HOUR - TICK)
    assert call(tools, "read_evidence", {"doc_id": "d00", "limit": 5}).status == "success"
    assert estore.cleanup()["snapshots"] == 0
    clock.advance(TICK)  # now == expires_at: expired (exclusive)
    for name, args in [("search_evidence", {"query": "q"}), ("locate_evidence", {"term": "批处理"}),
                       ("read_evidence", {"doc_id": "d00"})]:
        assert json.loads(call(tools, name, args).content)["error"] == "snapshot_expired"
    with pytest.raises(EvidenceError, match="snapshot_expired"):
        estore.snapshot("acme", "s-1", "q")
    assert estore.cleanup()["snapshots"] == 1
    assert estore.cleanup()["snapshots"] == 0


def test_a_result_expires_at_expires_at_and_cleanup_removes_it(estore, clock):
    results = ToolResults(estore, ACME, "s-1", ttl=HOUR)
    h = results.put("x" * 100, tool="t").doc_id
    clock.advance(HOUR - TICK)
    assert results.read(h)["total_chars"] == 100
    assert estore.cleanup()["snapshots"] == 0
    clock.advance(TICK)
    with pytest.raises(EvidenceError) as info:
        results.read(h)
    assert (info.value.code, info.value.details) == ("unknown_doc_id", {})  # expired: as if never issued
    assert estore.cleanup()["snapshots"] == 1
    with pytest.raises(EvidenceError, match="unknown_doc_id"):
        results.read(h)
    assert results.expire(results.put("y", tool="t").doc_id)


def test_a_workspace_expires_ttl_after_its_last_write(estore, clock):
    ws = estore.workspace(ACME, "s-1", ttl=HOUR)
    ws.write_plan("1. search\n2. read")
    clock.advance(HOUR - TICK)
    ws.write_note("n1", "still here")  # a write moves expires_at on
    clock.advance(HOUR - TICK)
    assert [e.doc_id for e in ws.files()] == [ENTRY_PATH, "notes/n1", "plan.md"]
    assert estore.cleanup()["workspaces"] == 0
    clock.advance(TICK)
    tools = evidence_tools(ws, ACME)
    assert json.loads(call(tools, "read_evidence", {"doc_id": "plan.md"}).content)["error"] == "workspace_expired"
    assert estore.cleanup()["workspaces"] == 1
    with pytest.raises(EvidenceError, match="workspace_expired"):
        ws.files()
    fresh = estore.workspace(ACME, "s-1", ttl=HOUR)
    assert fresh.files() == []


def test_delete_session_removes_everything_it_left(estore):
    estore.put_snapshot("acme", "s-1", "q", article_corpus()[:1])
    ToolResults(estore, ACME, "s-1").put("x", tool="t")  # under the owner-qualified session of s-1
    estore.ledger("acme", "s-1", "t", Budget())
    estore.workspace(ACME, "s-1").write_plan("p")
    keep = estore.put_snapshot("acme", "s-2", "q", article_corpus()[:1])
    assert estore.delete_session("acme", "s-1") == {"snapshots": 2, "artifacts": 0, "ledgers": 1, "workspaces": 1}
    assert len(keep.visible()) == 1


# -- the store-backed ledger ---------------------------------------------------------------------------------
def test_the_store_ledger_keeps_the_same_books_as_the_teaching_ledger(estore, tmp_path):
    budget = Budget(max_calls=6, max_bytes=2_000, max_reads_per_doc=2, max_refusals=3)
    index = EvidenceIndex.build(article_corpus(), tmp_path / "teaching")
    snap = estore.put_snapshot("acme", "s-1", "q", article_corpus())
    core, stored = Ledger(budget), estore.ledger("acme", "s-1", "task", budget)
    plan = [("search_evidence", {"query": "q"}), ("read_evidence", {"doc_id": "d03", "offset": 4300, "limit": 40}),
            ("read_evidence", {"doc_id": "d03", "offset": 4300, "limit": 20}),
            ("read_evidence", {"doc_id": "d03", "offset": 0, "limit": 800}),
            ("read_evidence", {"doc_id": "d03", "offset": 900, "limit": 800}),
            ("read_evidence", {"doc_id": "nope"}), ("read_evidence", {"doc_id": "d01", "limit": 800}),
            ("read_evidence", {"doc_id": "d02", "limit": 800}), ("read_evidence", {"doc_id": "d04"}),
            ("locate_evidence", {"term": "上限"})]
    for i, (name, args) in enumerate(plan):
        a = call(evidence_tools(index, ledger=core), name, args, f"c{i}")
        b = call(evidence_tools(snap, ledger=stored), name, args, f"c{i}")
        assert (a.status, a.content) == (b.status, b.content), (name, args)
    assert stored.entries == core.entries
    assert (stored.totals(), stored.context(), stored.reads) == (core.totals(), core.context(), core.reads)
    assert stored.summary() == core.summary()
    again = estore.ledger("acme", "s-1", "task")  # a second worker opens the same books
    assert again.totals() == core.totals() and again.budget == budget
    with pytest.raises(ValueError, match="different budget"):
        estore.ledger("acme", "s-1", "task", Budget(max_calls=99))


# -- the task workspace ----------------------------------------------------------------------------------------
def test_the_workspace_is_read_through_the_evidence_tools_with_an_entry_file(estore):
    ws = estore.workspace(ACME, "s-1")
    ws.write_plan("1. locate 上限\n2. read d03\n3. answer with a citation", summary="three steps")
    ws.write_note("d03", "d03 [4321, 4338): 单批上限为200条，超时设为30秒。", summary="the answer clause")
    ws.write_result("limits.json", json.dumps({"max_items": 200, "timeout_s": 30}), summary="parsed limits")
    tools = evidence_tools(ws, ACME)
    rows = json.loads(call(tools, "search_evidence", {"query": "what is where"}).content)
    assert [r["doc_id"] for r in rows] == [ENTRY_PATH, "notes/d03", "plan.md", "results/limits.json"]
    entry = json.loads(call(tools, "read_evidence", {"doc_id": ENTRY_PATH, "limit": 800}).content)
    for path in ("plan.md", "notes/d03", "results/limits.json"):
        assert path in entry["text"]
    assert json.loads(call(tools, "locate_evidence", {"term": "上限"}).content) == [
        {"doc_id": "notes/d03", "offset": 20}, {"doc_id": "plan.md", "offset": 10}]
    page = json.loads(call(tools, "read_evidence", {"doc_id": "notes/d03", "offset": 18, "limit": 18}).content)
    assert (page["text"], page["revision"], page["start"], page["end"]) == ("单批上限为200条，超时设为30秒。", "r1", 18, 36)
    # a file rewritten between its entry and its read is refused, like changed evidence
    e = ws.entry("plan.md", ACME)
    ws.write_plan("1. (rewritten)")
    with pytest.raises(EvidenceError, match="evidence_changed"):
        ws.snapshot("plan.md", ACME)
    assert ws.entry("plan.md", ACME).revision == "r2" != e.revision
    assert ws.delete("results/limits.json") and not ws.delete(ENTRY_PATH)
    with pytest.raises(EvidenceError, match="evidence_changed"):  # ENTRY.md changed since it was served
        ws.snapshot(ENTRY_PATH, ACME)
    ws.entry(ENTRY_PATH, ACME)  # what a new search + read does
    assert "results/limits.json" not in ws.snapshot(ENTRY_PATH, ACME).text
    with pytest.raises(ValueError, match="workspace paths"):
        ws.write("../etc/passwd", "x")


def test_documents_keep_their_grants_inside_a_store_snapshot(estore):
    finance = Principal("acme", "carol", groups={"finance"})
    docs = [replace(d, access=Access("acme", read={"group:finance"}, discover={"*"})) for d in docs_of("acme")[:1]]
    snap = estore.put_snapshot("acme", "s-1", "q", docs + docs_of("acme")[1:])
    row = json.loads(call(evidence_tools(snap, ACME), "search_evidence", {"query": "q"}).content)[0]
    assert row["doc_id"] == "acme-0" and row["sha256"] is None and row["preview"] is None
    assert json.loads(call(evidence_tools(snap, ACME), "read_evidence", {"doc_id": "acme-0"}).content)["error"] == \
        "unknown_doc_id"
    assert call(evidence_tools(snap, finance), "read_evidence", {"doc_id": "acme-0"}).status == "success"
