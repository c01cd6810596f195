"""The artifact store: handles instead of content, owners, exclusive expiry, explicit revision policies."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta

import pytest

from evidence_lib._access import Access, Principal
from evidence_lib._clock import FixedClock, ManualClock
from evidence_lib.store._artifact_store import ArtifactStore, logistics_tools
from evidence_lib.course.after_sales import CST, after_sales_catalog, logistics_sections
from evidence_lib._errors import EvidenceError, error_payload, to_json
from evidence_lib._measure import utf8_bytes
from evidence_lib._tools import run_tool_call, tool_call

AGENT = Principal("shop-a", "user-417", groups={"support"})
COLLEAGUE = Principal("shop-a", "user-418", groups={"support"})
SAME_NAME_OTHER_SHOP = Principal("shop-b", "user-417", groups={"support"})
START = datetime(2026, 9, 11, 0, 0, tzinfo=CST)
HANDLE_KEYS = ["artifact_id", "revision", "summary", "available_sections", "sha256", "expires_at"]
ID = re.compile(r"logistics-A1042-r8-[0-9a-f]{12}")


@pytest.fixture
def catalog():
    return after_sales_catalog()


@pytest.fixture
def clock():
    return ManualClock(START)


@pytest.fixture
def store(catalog, clock):
    return ArtifactStore(catalog, clock, seed="tests")


def refusal(fn, *args):
    with pytest.raises(EvidenceError) as info:
        fn(*args)
    return to_json(error_payload(info.value))


def test_query_returns_a_handle_and_the_latest_event_not_the_trace(store):
    msg = run_tool_call(logistics_tools(store, AGENT), tool_call("query_logistics", {"order_id": "A1042"}, "c1"))
    body = json.loads(msg.content)
    assert list(body) == [*HANDLE_KEYS, "latest_delivery_event"]
    assert ID.fullmatch(body["artifact_id"])
    assert body["summary"] == "存在签收记录；未发现质量核实记录"
    assert body["available_sections"] == ["delivery", "transit", "exceptions"]
    assert body["expires_at"] == "2026-09-12T00:00:00+08:00"
    assert body["latest_delivery_event"]["line"].endswith("已签收 本人签收")
    assert utf8_bytes(msg.content) < 1_000
    # The full trace travels in ToolMessage.artifact, for the application, not in the content.
    assert sum(len(v.split("\n")) for v in msg.artifact["sections"].values()) == 5_000
    assert "扫描0001" not in msg.content


def test_sha256_identifies_the_content_as_bare_hex(catalog, clock):
    a = ArtifactStore(catalog, clock).create(AGENT, "logistics:A1042")
    b = ArtifactStore(catalog, clock).create(COLLEAGUE, "logistics:A1042")
    assert a.sha256 == b.sha256 and re.fullmatch(r"[0-9a-f]{64}", a.sha256)


def test_sections_are_read_on_demand_in_half_open_pages(store):
    a = store.create(AGENT, "logistics:A1042")
    text, offset = "", 0
    while offset is not None:
        page = store.read(AGENT, a.artifact_id, "transit", offset, 800)
        assert page["end"] - page["start"] == len(page["text"]) and page["kind"] == "data"
        text, offset = text + page["text"], page["next_offset"]
    transit = logistics_sections("r8")["transit"]
    assert text == transit and len(transit.split("\n")) == 4_997
    assert page["total_chars"] == len(transit) and page["source"] == "logistics:A1042@r8#transit"


def test_page_bounds_and_unknown_sections_are_refused(store):
    a = store.create(AGENT, "logistics:A1042")
    assert json.loads(refusal(store.read, AGENT, a.artifact_id, "transit", 0, 801))["error"] == "invalid_page_bounds"
    assert json.loads(refusal(store.read, AGENT, a.artifact_id, "transit", 10**6))["error"] == \
        "offset_exceeds_document"
    body = json.loads(refusal(store.read, AGENT, a.artifact_id, "photos"))
    assert body["error"] == "invalid_arguments" and body["available_sections"] == ["delivery", "transit", "exceptions"]


@pytest.mark.parametrize("other", [COLLEAGUE, SAME_NAME_OTHER_SHOP, None])
def test_replay_by_another_principal_is_refused_like_an_unknown_id(store, other):
    a = store.create(AGENT, "logistics:A1042")
    unknown = refusal(store.read, AGENT, "logistics-A1042-r8-000000000000", "delivery")
    assert refusal(store.read, other, a.artifact_id, "delivery") == unknown
    assert json.loads(unknown) == {"error": "unknown_artifact", "message": "no such artifact is available"}
    assert store.audit[-1].reason == "other_principal"


def test_the_owner_with_other_groups_is_still_the_owner(store):
    a = store.create(AGENT, "logistics:A1042")
    same_user_new_session = Principal("shop-a", "user-417", groups={"support", "night_shift"})
    assert store.read(same_user_new_session, a.artifact_id, "delivery")["text"].count("\n") == 1


def test_revoked_source_access_makes_the_artifact_unknown(catalog, store):
    a = store.create(AGENT, "logistics:A1042")
    catalog.set_access("logistics:A1042", Access("shop-a", read={"group:logistics_lead"}))
    assert json.loads(refusal(store.read, AGENT, a.artifact_id, "delivery"))["error"] == "unknown_artifact"
    assert store.audit[-1].reason == "source_read_revoked"


def test_expires_at_is_exclusive(store, clock):
    a = store.create(AGENT, "logistics:A1042")
    clock.set(a.expires_at - timedelta(microseconds=1))
    assert store.read(AGENT, a.artifact_id, "delivery")["section"] == "delivery"
    clock.set(a.expires_at)
    body = json.loads(refusal(store.read, AGENT, a.artifact_id, "delivery"))
    assert body == {"error": "artifact_expired", "message": "the artifact expired; run the query again",
                    "artifact_id": a.artifact_id, "expires_at": "2026-09-12T00:00:00+08:00",
                    "requery": {"tool": "query_logistics", "args": {"order_id": "A1042"}}}


def test_an_artifact_is_not_readable_before_created_at(catalog):
    """[created_at, expires_at): a wall clock stepped back before the artifact existed does not read it."""
    now = [START]
    store = ArtifactStore(catalog, lambda: now[0], seed="tests")  # a clock that can step back, as NTP can
    a = store.create(AGENT, "logistics:A1042")
    now[0] = a.created_at - timedelta(microseconds=1)
    assert json.loads(refusal(store.read, AGENT, a.artifact_id, "delivery"))["error"] == "artifact_expired"
    now[0] = a.created_at
    assert store.read(AGENT, a.artifact_id, "delivery")["section"] == "delivery"


def test_an_expired_artifact_replayed_by_another_principal_is_still_unknown(store, clock):
    a = store.create(AGENT, "logistics:A1042")
    clock.advance(hours=25)
    assert json.loads(refusal(store.read, COLLEAGUE, a.artifact_id, "delivery"))["error"] == "unknown_artifact"


def test_requery_after_expiry_gives_a_fresh_readable_artifact(store, clock):
    tools = logistics_tools(store, AGENT)
    first = json.loads(run_tool_call(tools, tool_call("query_logistics", {"order_id": "A1042"}, "c1")).content)
    clock.advance(hours=24)
    expired = run_tool_call(tools, tool_call("read_artifact", {"artifact_id": first["artifact_id"],
                                                                "section": "delivery"}, "c2"))
    hint = json.loads(expired.content)["requery"]
    again = json.loads(run_tool_call(tools, tool_call(hint["tool"], hint["args"], "c3")).content)
    assert ID.fullmatch(again["artifact_id"]) and again["artifact_id"] != first["artifact_id"]
    assert again["expires_at"] == "2026-09-13T00:00:00+08:00"


def test_purged_artifacts_are_simply_unknown(store, clock):
    a = store.create(AGENT, "logistics:A1042")
    clock.advance(days=2)
    assert store.purge_expired() == 1
    assert json.loads(refusal(store.read, AGENT, a.artifact_id, "delivery"))["error"] == "unknown_artifact"


def test_pinned_policy_reads_the_revision_the_summary_was_made_from(catalog, store):
    a = store.create(AGENT, "logistics:A1042")
    catalog.publish("logistics:A1042", "r9", logistics_sections("r9"))
    page = store.read(AGENT, a.artifact_id, "exceptions")
    assert (page["revision"], page["revision_policy"], page["current_revision"]) == ("r8", "pinned", "r9")
    assert page["text"] == "2026-09-01T09:30:00+08:00 上海分拨中心 延误 天气原因"


def test_latest_policy_reports_the_change_and_rebuilds_the_summary(catalog, clock):
    store = ArtifactStore(catalog, clock, revision_policy="latest")
    a = store.create(AGENT, "logistics:A1042")
    catalog.publish("logistics:A1042", "r9", logistics_sections("r9"))
    body = json.loads(refusal(store.read, AGENT, a.artifact_id, "exceptions"))
    assert body["error"] == "revision_changed"
    assert (body["summary_revision"], body["current_revision"]) == ("r8", "r9")
    assert body["replacement"]["revision"] == "r9"
    assert body["replacement"]["summary"] == "存在签收记录；买家反馈未收到；未发现质量核实记录"
    page = store.read(AGENT, body["replacement"]["artifact_id"], "exceptions")
    assert page["revision"] == "r9" and page["text"].count("\n") == 1
    again = json.loads(refusal(store.read, AGENT, a.artifact_id, "exceptions"))
    assert again["replacement"]["artifact_id"] == body["replacement"]["artifact_id"]


def test_ids_are_stable_under_a_seed_and_a_prefix_keeps_stores_apart(catalog, clock, store):
    pinned = store.create(AGENT, "logistics:A1042")
    twin = ArtifactStore(catalog, clock, seed="tests").create(AGENT, "logistics:A1042")
    assert pinned.artifact_id == twin.artifact_id  # deterministic under an injected seed
    latest = ArtifactStore(catalog, clock, revision_policy="latest", id_prefix="latest-", seed="tests")
    a = latest.create(AGENT, "logistics:A1042")
    assert a.artifact_id == "latest-" + pinned.artifact_id and "id_prefix='latest-'" in repr(latest)
    # an id is only meaningful in the store that issued it
    assert json.loads(refusal(store.read, AGENT, a.artifact_id, "delivery"))["error"] == "unknown_artifact"
    catalog.publish("logistics:A1042", "r9", logistics_sections("r9"))
    body = json.loads(refusal(latest.read, AGENT, a.artifact_id, "exceptions"))
    assert re.fullmatch(r"latest-logistics-A1042-r9-[0-9a-f]{12}", body["replacement"]["artifact_id"])
    for bad in ("Latest-", "a/b", "x" * 17):
        with pytest.raises(ValueError):
            ArtifactStore(catalog, clock, id_prefix=bad)


def test_unseeded_stores_draw_their_own_key(catalog, clock):
    a = ArtifactStore(catalog, clock).create(AGENT, "logistics:A1042")
    b = ArtifactStore(catalog, clock).create(AGENT, "logistics:A1042")
    assert a.artifact_id != b.artifact_id


def test_purge_then_create_never_reissues_a_live_id_to_another_principal(store, clock):
    """Regression (issue 8, defect 4): a counter per store reused ids after purge_expired."""
    issued = set()
    a = store.create(AGENT, "logistics:A1042")
    issued.add(a.artifact_id)
    clock.advance(hours=12)
    b = store.create(COLLEAGUE, "logistics:A1042")
    clock.advance(hours=13)  # a expired, b alive
    assert store.purge_expired() == 1
    for who in (AGENT, COLLEAGUE, AGENT):
        c = store.create(who, "logistics:A1042")
        assert c.artifact_id not in issued | {b.artifact_id}
        issued.add(c.artifact_id)
    assert store.read(COLLEAGUE, b.artifact_id, "delivery")["artifact_id"] == b.artifact_id


def test_ids_reveal_nothing_about_other_principals_activity(catalog, clock):
    """Regression (issue 8, defect 4): one counter per store showed how many artifacts others made."""
    quiet = ArtifactStore(catalog, clock, seed="s")
    busy = ArtifactStore(catalog, clock, seed="s")
    for _ in range(7):
        busy.create(COLLEAGUE, "logistics:A1042")
    assert quiet.create(AGENT, "logistics:A1042").artifact_id == busy.create(AGENT, "logistics:A1042").artifact_id


def test_query_for_another_shops_order_is_refused_like_a_missing_one(store):
    tools = logistics_tools(store, AGENT)
    other = run_tool_call(tools, tool_call("query_logistics", {"order_id": "B2077"}, "c1"))
    missing = run_tool_call(tools, tool_call("query_logistics", {"order_id": "Z9999"}, "c1"))
    assert other.content == missing.content and json.loads(other.content)["error"] == "unknown_resource"


def test_clocks_are_aware_and_never_go_backwards():
    with pytest.raises(ValueError):
        FixedClock(datetime(2026, 9, 11))
    clock = ManualClock(START)
    assert clock.advance(minutes=5) == START + timedelta(minutes=5)
    with pytest.raises(ValueError):
        clock.advance(timedelta(seconds=-1))
    assert FixedClock(START)() == START


# -- one large-result mechanism (issue 24): the artifact store keeps its sections in an EvidenceStore -------------
def test_an_artifact_store_backed_by_sqlite_persists_across_two_objects_on_the_same_file(catalog, clock, tmp_path):
    from evidence_lib.store import SQLiteStore

    with SQLiteStore(tmp_path / "artifacts.db", clock) as first_db:
        a = ArtifactStore(catalog, clock, store=first_db, seed="tests").create(AGENT, "logistics:A1042")
    with SQLiteStore(tmp_path / "artifacts.db", clock) as second_db:
        again = ArtifactStore(catalog, clock, store=second_db, seed="other")
        page = again.read(AGENT, a.artifact_id, "exceptions")
        assert (page["artifact_id"], page["revision"], page["sha256"]) == (a.artifact_id, "r8", a.sha256)
        assert page["text"] == logistics_sections("r8")["exceptions"]
        assert json.loads(refusal(again.read, COLLEAGUE, a.artifact_id, "delivery"))["error"] == "unknown_artifact"
        assert again.create(AGENT, "logistics:A1042").artifact_id != a.artifact_id


def test_a_tampered_stored_section_is_refused(catalog, clock):
    from evidence_lib.store import MemoryStore

    db = MemoryStore(clock)
    store = ArtifactStore(catalog, clock, store=db, seed="tests")
    a = store.create(AGENT, "logistics:A1042")
    for chunks in db._chunk_map.values():  # edit the stored text behind the store's back
        chunks.update({n: ("X" + body[1:], sha) for n, (body, sha) in chunks.items()})
    assert json.loads(refusal(store.read, AGENT, a.artifact_id, "delivery"))["error"] == "evidence_changed"


def test_purge_expired_is_the_stores_cleanup(catalog, clock):
    from evidence_lib.store import MemoryStore

    db = MemoryStore(clock)
    store = ArtifactStore(catalog, clock, store=db, seed="tests")
    store.create(AGENT, "logistics:A1042")
    assert db.stats()["snapshots"] == 1 and db.stats()["documents"] == 3
    clock.advance(hours=24)
    assert store.purge_expired() == 1 and db.stats()["snapshots"] == db.stats()["documents"] == 0
    assert repr(store) == "ArtifactStore(0 artifacts, policy='pinned')"
