"""Offloaded tool results (evidence_lib.store._offload) on every store backend: handles, owners, expiry, bounded context."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from evidence_lib import Principal
from evidence_lib._citations import Citation, verify_citation
from evidence_lib._errors import EvidenceError
from evidence_lib._ledger import Ledger
from evidence_lib._measure import cl100k_tokens
from evidence_lib._toolkit import run_tool_call, tool_call
from evidence_lib._tools import evidence_tools
from evidence_lib.store._offload import HANDLE_MAX_TOKENS, ToolResults, offload, owner_session

ALICE = Principal("acme", "alice")
BOB = Principal("acme", "bob")
EVE = Principal("other", "alice")
ANSWER = "2026-11-30T12:41:40Z ERROR payment-7 timeout after 30s"


def big_log(lines: int = 4000) -> str:
    rows = [f"2026-11-30T12:{i // 60 % 60:02}:{i % 60:02}Z INFO worker-{i % 7} heartbeat ok seq={i}" for i in range(lines)]
    rows.insert(lines * 5 // 8, ANSWER)
    return "\n".join(rows)


def reader_tools(shelf: ToolResults, principal: Principal, ledger: Ledger | None = None):
    return {t.name: t for t in evidence_tools(shelf, principal, ledger=ledger, profile="compact")}


def call(tools, name, **args):
    return run_tool_call(list(tools.values()), tool_call(name, args, "c1"))


# -- offloading ----------------------------------------------------------------------------------------------------
def test_small_results_pass_through_unchanged(estore):
    shelf = ToolResults(estore, ALICE, "s1")
    shown, entry = offload(shelf, "ok: 3 rows", tool="sql")
    assert (shown, entry) == ("ok: 3 rows", None)
    assert shelf.handles == []


def test_a_large_result_becomes_a_bounded_handle_and_reads_back_verified(estore):
    log = big_log()
    shelf = ToolResults(estore, ALICE, "s1")
    shown, entry = offload(shelf, log, tool="get_logs", call_id="call-1")
    assert entry is not None and entry.chars == len(log)
    assert cl100k_tokens(shown) <= HANDLE_MAX_TOKENS < cl100k_tokens(log)
    assert entry.doc_id in shown and ANSWER not in shown
    assert entry.revision not in shown  # issue 33: the revision comes with the handle's first locate or read
    tools = reader_tools(shelf, ALICE, Ledger())
    found = call(tools, "locate_evidence", term="ERROR payment", doc_id=entry.doc_id)
    assert found.status == "success" and ANSWER in found.content and entry.revision in found.content
    start = log.index(ANSWER)
    again = json.loads(call(tools, "read_evidence", doc_id=entry.doc_id, offset=start, limit=len(ANSWER)).content)
    assert again["status"] == "already_read"  # the excerpt was charged as read: the ledger sends no text twice
    page = call(reader_tools(shelf, ALICE, Ledger()), "read_evidence", doc_id=entry.doc_id, offset=start,
                limit=len(ANSWER)).content
    head, text = page.split("\n", 1)
    assert text == ANSWER and f"[{start},{start + len(ANSWER)})" in head and entry.revision in head
    assert shelf.text(entry.doc_id, ALICE, start, start + len(ANSWER)) == ANSWER


def test_the_same_call_and_content_keep_their_handle_and_another_call_gets_another(estore):
    shelf = ToolResults(estore, ALICE, "s1")
    log = big_log()
    _, a = offload(shelf, log, tool="get_logs", call_id="call-1")
    _, b = offload(shelf, log, tool="get_logs", call_id="call-1")
    _, c = offload(shelf, log, tool="get_logs", call_id="call-2")
    assert a.doc_id == b.doc_id != c.doc_id and shelf.handles == [a.doc_id, c.doc_id]


def test_a_citation_of_an_offloaded_result_verifies_only_after_it_was_read(estore):
    log = big_log()
    shelf = ToolResults(estore, ALICE, "s1")
    _, entry = offload(shelf, log, tool="get_logs", call_id="call-1")
    ledger = Ledger()
    start = log.index(ANSWER)
    cite = Citation(entry.doc_id, entry.revision, start, start + len(ANSWER), entry.sha256, ANSWER)
    assert verify_citation(shelf, cite, ledger, ALICE).reason == "never_read"
    call(reader_tools(shelf, ALICE, ledger), "read_evidence", doc_id=entry.doc_id, offset=start, limit=len(ANSWER))
    assert verify_citation(shelf, cite, ledger, ALICE).ok
    wrong = Citation(entry.doc_id, entry.revision, start, start + len(ANSWER), entry.sha256, "ERROR nothing")
    assert verify_citation(shelf, wrong, ledger, ALICE).reason == "text_mismatch"


# -- owners and expiry: one answer for foreign, expired and never issued -------------------------------------------
@pytest.mark.parametrize("other", [BOB, EVE], ids=["another user", "another tenant"])
def test_another_principal_sees_a_handle_exactly_like_one_never_issued(estore, other):
    shelf = ToolResults(estore, ALICE, "s1")
    _, entry = offload(shelf, big_log(), tool="get_logs", call_id="call-1")
    theirs = reader_tools(ToolResults(estore, other, "s1"), other)
    never = "res-" + "0" * 10
    for name, args in (("read_evidence", {"offset": 0}), ("locate_evidence", {"term": "ERROR"})):
        got = call(theirs, name, doc_id=entry.doc_id, **args)
        missing = call(theirs, name, doc_id=never, **args)
        assert got.status == "error" and got.content == missing.content
        assert json.loads(got.content)["error"] == "unknown_doc_id"
    assert ToolResults(estore, other, "s1").visible(other) == []


def test_another_session_of_the_same_user_does_not_see_the_handle(estore):
    shelf = ToolResults(estore, ALICE, "s1")
    _, entry = offload(shelf, big_log(), tool="get_logs", call_id="call-1")
    other = reader_tools(ToolResults(estore, ALICE, "s2"), ALICE)
    assert json.loads(call(other, "read_evidence", doc_id=entry.doc_id).content)["error"] == "unknown_doc_id"


def test_an_expired_result_is_refused_like_a_missing_one_and_cleanup_removes_it(estore, clock):
    shelf = ToolResults(estore, ALICE, "s1", ttl=timedelta(minutes=10))
    _, entry = offload(shelf, big_log(), tool="get_logs", call_id="call-1")
    tools = reader_tools(shelf, ALICE)
    assert call(tools, "read_evidence", doc_id=entry.doc_id).status == "success"
    clock.advance(timedelta(minutes=10))  # readable on [created, expires): expired at the instant itself
    expired = call(tools, "read_evidence", doc_id=entry.doc_id)
    never = call(tools, "read_evidence", doc_id="res-" + "0" * 10)
    assert expired.status == "error" and expired.content == never.content
    assert shelf.visible(ALICE) == []
    before = estore.stats()["snapshots"]
    estore.cleanup()
    assert estore.stats()["snapshots"] == before - 1


def test_owner_sessions_never_collide():
    assert owner_session("a/b", "c") != owner_session("a", "b/c")
    assert owner_session("s", "u:1") != owner_session("s", "u") != owner_session("1/s", "u")


def test_a_shelf_refuses_a_non_positive_ttl(estore):
    with pytest.raises(EvidenceError) as e:
        ToolResults(estore, ALICE, "s1", ttl=timedelta(0))
    assert e.value.code == "invalid_ttl"
