"""One API for a large result kept outside the context (issue 32 item 3): :class:`evidence_lib.store.ToolResults`.

Put, handle, read a range, expire; two id policies (content ``res-`` ids, HMAC-minted ``art-`` ids); one error code
(``unknown_doc_id``) for a handle that is unknown, expired or someone else's, byte-identical; one read tool
(``read_evidence``); on every backend, with round trips per call that do not grow with the result's size.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest

import evidence_lib
from evidence_lib import EvidenceError, Principal, evidence_tools, run_tool_call, tool_call
from evidence_lib.store import MemoryStore, ToolResults, offload

from .storekit import round_trips

ALICE, BOB, EVE = Principal("acme", "alice"), Principal("acme", "bob"), Principal("globex", "alice")
LOG = "".join(f"2026-11-30T12:00:{i % 60:02}Z INFO worker-{i % 7} heartbeat ok seq={i}\n" for i in range(2000))


def read_reply(results: ToolResults, principal: Principal, doc_id: str, **args) -> str:
    return run_tool_call(evidence_tools(results, principal), tool_call("read_evidence", {"doc_id": doc_id, **args},
                                                                       "c1")).content


def test_put_then_read_a_range_returns_that_range_with_its_revision_and_sha256(estore):
    results = ToolResults(estore, ALICE, "s1")
    entry = results.put(LOG, tool="get_logs", call_id="c1")
    page = results.read(entry.doc_id, 4000, 120)
    assert (page["doc_id"], page["revision"], page["sha256"]) == (entry.doc_id, entry.revision, entry.sha256)
    assert (page["start"], page["end"], page["total_chars"], page["text"]) == (4000, 4120, len(LOG), LOG[4000:4120])
    assert page["next_offset"] == 4120


def test_content_ids_are_res_and_deterministic_minted_ids_are_hmac_and_never_reissued(estore, clock):
    content = ToolResults(estore, ALICE, "s1")
    a, b = content.put(LOG, tool="t", call_id="c1"), content.put(LOG, tool="t", call_id="c1")
    assert re.fullmatch(r"res-[0-9a-f]{10}", a.doc_id) and a.doc_id == b.doc_id
    minted = ToolResults(estore, ALICE, "s1", ids="minted", seed="tests")
    twin = ToolResults(estore, ALICE, "s1", ids="minted", seed="tests")  # same seed, another object, same store
    ids = [minted.put(LOG, tool="t", call_id="c1").doc_id for _ in range(3)]
    ids.append(twin.put(LOG, tool="t", call_id="c1").doc_id)
    assert all(re.fullmatch(r"art-[0-9a-f]{16}", i) for i in ids) and len(set(ids)) == 4
    fresh = ToolResults(MemoryStore(clock), ALICE, "s1", ids="minted", seed="tests")
    assert fresh.put(LOG, tool="t", call_id="c1").doc_id == ids[0]  # seeded: reproducible in notebooks
    assert minted.put(LOG[:10], tool="t").doc_id not in ids  # the content plays no part: an id says nothing about it
    with pytest.raises(ValueError, match="ids"):
        ToolResults(estore, ALICE, "s1", ids="random")  # type: ignore[arg-type]


@pytest.mark.parametrize("ids", ["content", "minted"])
def test_unknown_expired_and_forbidden_handles_get_byte_identical_replies(estore, clock, ids):
    mine = ToolResults(estore, ALICE, "s1", ttl=timedelta(minutes=10), ids=ids, seed="t")
    handle = mine.put(LOG, tool="get_logs", call_id="c1").doc_id
    never = handle[:-4] + ("0000" if not handle.endswith("0000") else "1111")
    replies = {
        "never issued": read_reply(mine, ALICE, never),
        "another user": read_reply(ToolResults(estore, BOB, "s1", ids=ids, seed="t"), BOB, handle),
        "another tenant": read_reply(ToolResults(estore, EVE, "s1", ids=ids, seed="t"), EVE, handle),
        "another session": read_reply(ToolResults(estore, ALICE, "s2", ids=ids, seed="t"), ALICE, handle),
    }
    clock.advance(minutes=10)  # expires_at is exclusive: at that instant the result is gone
    replies["expired"] = read_reply(mine, ALICE, handle)
    assert len(set(replies.values())) == 1, replies
    assert json.loads(replies["expired"])["error"] == "unknown_doc_id"
    for doc_id in (handle, never):  # the application's read answers the same one code
        with pytest.raises(EvidenceError) as e:
            mine.read(doc_id)
        assert e.value.code == "unknown_doc_id" and e.value.details == {}


def test_expire_removes_a_result_at_once_and_reports_whether_there_was_one(estore):
    results = ToolResults(estore, ALICE, "s1")
    handle = results.put(LOG, tool="t", call_id="c1").doc_id
    assert results.expire(handle) is True and results.expire(handle) is False
    assert results.expire("res-not-a-handle") is False and results.visible(ALICE) == []
    with pytest.raises(EvidenceError, match="unknown_doc_id"):
        results.read(handle)
    assert ToolResults(estore, BOB, "s1").expire(results.put(LOG, tool="t").doc_id) is False  # not Bob's to expire


def test_one_read_costs_the_same_round_trips_whatever_the_results_size(estore):
    if estore.backend == "memory":
        pytest.skip("the memory backend has no round trips")
    results = ToolResults(estore, ALICE, "s1")
    small, large = (results.put(LOG * n, tool="t", call_id=f"c{n}").doc_id for n in (1, 40))
    counts = []
    for handle in (small, large):
        with round_trips(estore) as trips:
            results.read(handle, 5000, 800)
        counts.append(len(trips.statements))
        with round_trips(estore) as trips:
            read_reply(results, ALICE, handle, offset=5000, limit=800)
        counts.append(len(trips.statements))
    assert counts[0] == counts[2] and counts[1] == counts[3], counts


def test_the_handle_the_model_sees_names_the_result_and_how_to_cite_it(estore):
    # The read tools' descriptions say how to read a handle (issue 33 item 4: the handle carries what a citation
    # needs and nothing else), so the handle names the stored result and the citation's form.
    results = ToolResults(estore, ALICE, "s1", ids="minted", seed="t")
    shown, entry = offload(results, LOG, tool="get_logs", call_id="c1", threshold_tokens=100)
    assert entry.doc_id.startswith("art-") and entry.doc_id in shown and "[start, end)" in shown


def test_the_three_old_large_result_apis_are_gone():
    import evidence_lib.store as store

    for name in ("ArtifactStore", "OffloadShelf", "logistics_tools"):
        assert not hasattr(store, name) and not hasattr(evidence_lib, name)
    for method in ("put_artifact", "read_artifact", "delete_artifact"):
        assert not hasattr(store.EvidenceStore, method)
    assert "unknown_artifact" not in evidence_lib.ERROR_CODES and "artifact_expired" not in evidence_lib.ERROR_CODES


def test_one_read_is_one_read_transaction_like_read_evidence(estore):
    if estore.backend == "memory":
        pytest.skip("the memory backend has no transactions")
    results = ToolResults(estore, ALICE, "s1")
    handle = results.put(LOG * 10, tool="t", call_id="c1").doc_id
    with round_trips(estore) as trips:
        results.read(handle, 5000, 800)
    with round_trips(estore) as tool:
        read_reply(results, ALICE, handle, offset=5000, limit=800)
    assert trips.transactions == tool.transactions == 1
