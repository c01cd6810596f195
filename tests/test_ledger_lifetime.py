"""A task's ledger lives at least as long as anything its task can still read; one error for one malformed doc_id
(issue 31, item 23).

A run's ledger expires a TTL after its last entry; a result stored later carries its own TTL. Before, a result
offloaded after the run had been idle about a day answered ``ledger_expired`` while its handle still said it was
readable. Now storing a result extends the ledger's expiry to at least the result's. And the in-memory index (and
``build``) refuse a malformed doc_id with ``EvidenceError("invalid_arguments")``, as the stores do.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

pytest.importorskip("langchain.agents", reason="the agents extra (langchain>=1): make setup installs it")

from langchain_core.messages import ToolMessage
from middleware_kit import ALICE, LOG, clock, store  # noqa: F401

from evidence_lib import Document, EvidenceError, EvidenceIndex, run_tool_call, tool_call
from evidence_lib.integrations.langchain._middleware import EvidenceMiddleware
from evidence_lib.store._common import DEFAULT_STORE_TTL


def offload(mw: EvidenceMiddleware, text: str, call_id: str) -> tuple[str, str]:
    shown = mw.offloaded(ToolMessage(text, tool_call_id=call_id, name="get_logs"), {"name": "get_logs"})
    meta = shown.response_metadata["evidence_offload"]
    return meta["doc_id"], shown.content


def read(mw: EvidenceMiddleware, handle: str):
    return run_tool_call(mw.tools, tool_call("read_evidence", {"doc_id": handle, "offset": 0, "limit": 80}, "r1"))


def test_a_result_stored_late_in_an_idle_run_is_readable_for_as_long_as_its_handle_says(store, clock):
    mw = EvidenceMiddleware(store, ALICE, threshold_tokens=50)  # results live an hour, the ledger a day
    first, _ = offload(mw, LOG, "call-1")
    assert read(mw, first).status == "success"  # the ledger's last entry: it expires a day after this
    clock.advance(DEFAULT_STORE_TTL - timedelta(minutes=30))  # idle for most of a day
    late, handle = offload(mw, LOG.replace("INFO", "WARN"), "call-2")  # readable for another hour, it says
    clock.advance(timedelta(minutes=45))  # past the ledger's old expiry, before the result's
    msg = read(mw, late)
    assert msg.status == "success", msg.content


def test_a_result_stored_after_the_ledger_expired_starts_the_task_a_new_budget(store, clock):
    mw = EvidenceMiddleware(store, ALICE, threshold_tokens=50)
    first, _ = offload(mw, LOG, "call-1")
    assert read(mw, first).status == "success"
    clock.advance(DEFAULT_STORE_TTL + timedelta(hours=1))  # the ledger expired (and cleanup may remove it)
    store.cleanup()
    late, _ = offload(mw, LOG.replace("INFO", "WARN"), "call-2")
    msg = read(mw, late)
    assert msg.status == "success", msg.content
    assert mw.ledger.totals()["calls"] == 1  # a new budget: the expired one's spend is gone with it


@pytest.mark.parametrize("doc_id", ["a b", "a@b", "", "d\x00", "d\u202e"])
def test_the_in_memory_index_refuses_a_malformed_doc_id_with_the_stores_error(doc_id):
    with pytest.raises(EvidenceError) as info:
        EvidenceIndex.in_memory([Document(doc_id, "t", "r1", "text")])
    assert info.value.code == "invalid_arguments" and isinstance(info.value, ValueError)


@pytest.mark.parametrize("doc_id", ["a b", "../x", "", "退款"])
def test_a_built_index_refuses_a_doc_id_it_cannot_file_with_the_same_error(tmp_path, doc_id):
    with pytest.raises(EvidenceError) as info:
        EvidenceIndex.build([Document(doc_id, "t", "r1", "text")], tmp_path)
    assert info.value.code == "invalid_arguments" and isinstance(info.value, ValueError)
