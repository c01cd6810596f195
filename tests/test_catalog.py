"""The resource catalog: discovery filtered per principal, fixed-revision section reads, uniform refusals."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evidence_lib._access import Access, Principal
from evidence_lib._errors import EvidenceError, error_payload, to_json
from evidence_lib._tools import run_tool_call, tool_call
from evidence_lib.course.after_sales import QUALITY_CLAUSE, RETURNS_SUMMARY, after_sales_catalog, logistics_sections
from evidence_lib.disclosure._catalog import catalog_tools

AGENT = Principal("shop-a", "user-417", groups={"support"})
FINANCE = Principal("shop-a", "user-900", groups={"finance"})
OTHER_SHOP = Principal("shop-b", "user-417", groups={"support"})


@pytest.fixture
def catalog():
    return after_sales_catalog()


def ids(entries):
    return [e["resource_id"] for e in entries]


def refusal(fn, *args):
    with pytest.raises(EvidenceError) as info:
        fn(*args)
    return to_json(error_payload(info.value))


def test_discover_lists_only_what_each_principal_may_discover(catalog):
    assert ids(catalog.discover(AGENT)) == [
        "contract:carrier-sla", "logistics:A1042", "order:A1042", "policy:returns", "policy:shipping",
        "product:SKU-7781",
    ]
    assert "policy:refund-exceptions" in ids(catalog.discover(FINANCE))
    assert "contract:carrier-sla" not in ids(catalog.discover(FINANCE))
    assert ids(catalog.discover(OTHER_SHOP)) == ["order:B2077"]
    assert catalog.discover(None) == []


def test_discover_shows_descriptions_revisions_and_sections_but_no_text_or_storage(catalog):
    listing = to_json(catalog.discover(AGENT))
    order = next(e for e in catalog.discover(AGENT) if e["resource_id"] == "order:A1042")
    assert order["revisions"] == ["r11", "r12"] and order["latest_revision"] == "r12"
    assert order["sections"] == ["header", "delivery", "remarks"]
    assert "signed_at" in order["key_fields"] and "category" in order["key_fields"]
    assert "orders/" not in listing and "policies/" not in listing
    assert QUALITY_CLAUSE not in listing and "2026-09-03T18:42" not in listing


def test_discover_shows_the_summary_a_model_navigates_by(catalog):
    returns = next(e for e in catalog.discover(AGENT) if e["resource_id"] == "policy:returns")
    assert returns["summary"] == RETURNS_SUMMARY


def test_read_section_reads_the_pinned_version(catalog):
    r11 = json.loads(catalog.read_section(AGENT, "order:A1042", "r11", "delivery")["text"])
    r12 = json.loads(catalog.read_section(AGENT, "order:A1042", "r12", "delivery")["text"])
    assert r11["signed_at"] is None
    assert r12["signed_at"] == "2026-09-03T18:42:00+08:00"


def test_reply_keeps_its_source_label_and_marks_text_as_data(catalog):
    reply = catalog.read_section(AGENT, "policy:returns", "r5", "quality")
    assert reply["source"] == "policy:returns@r5#quality"
    assert reply["kind"] == "data"
    assert reply["text"] == QUALITY_CLAUSE


@settings(max_examples=40, deadline=None)
@given(limit=st.integers(min_value=1, max_value=800))
def test_pages_are_half_open_and_concatenate_back_to_the_section(limit):
    catalog = after_sales_catalog()
    text, offset, pages = "", 0, 0
    while offset is not None:
        page = catalog.read_section(AGENT, "policy:returns", "r5", "quality", offset, limit)
        assert page["end"] - page["start"] == len(page["text"])
        text, offset, pages = text + page["text"], page["next_offset"], pages + 1
    assert text == QUALITY_CLAUSE
    assert pages == -(-len(QUALITY_CLAUSE) // limit)


@pytest.mark.parametrize("who, rid, version, section", [
    (AGENT, "order:Z9999", "r1", "header"),                 # does not exist
    (AGENT, "policy:refund-exceptions", "r2", "limits"),    # exists, no grant
    (AGENT, "contract:carrier-sla", "r1", "compensation"),  # discoverable, not readable
    (AGENT, "order:B2077", "r3", "header"),                 # another tenant's
    (OTHER_SHOP, "order:A1042", "r12", "delivery"),         # same user name, other tenant
    (None, "order:A1042", "r12", "delivery"),               # no principal at all
    (AGENT, "order:A1042", "r99", "delivery"),              # no such revision
    (AGENT, "order:A1042", "r12", "payment"),               # no such section
    (AGENT, "../../etc/passwd", "r1", "x"),                 # a path is never an id
    (AGENT, "orders/shop-a/A1042", "r12", "delivery"),      # nor is the storage key itself
])
def test_missing_and_forbidden_resources_give_byte_identical_errors(catalog, who, rid, version, section):
    missing = refusal(catalog.read_section, AGENT, "order:Z9999", "r1", "header")
    assert refusal(catalog.read_section, who, rid, version, section) == missing
    assert json.loads(missing) == {"error": "unknown_resource",
                                   "message": "no such resource, revision or section is available"}


def test_tool_refusals_are_identical_tool_messages(catalog):
    tools = catalog_tools(catalog, AGENT)
    contents = {
        run_tool_call(tools, tool_call("read_resource_section",
                                       {"resource_id": rid, "revision": v, "section": s}, "c1")).content
        for rid, v, s in [("order:Z9999", "r1", "header"), ("policy:refund-exceptions", "r2", "limits"),
                          ("order:B2077", "r3", "header")]
    }
    assert len(contents) == 1


def test_audit_keeps_the_real_reason_for_the_operator_only(catalog):
    for rid, v, s in [("order:Z9999", "r1", "h"), ("policy:refund-exceptions", "r2", "limits"),
                      ("order:B2077", "r3", "header"), ("../x", "r1", "h")]:
        with pytest.raises(EvidenceError):
            catalog.read_section(AGENT, rid, v, s)
    assert [a.reason for a in catalog.audit] == ["not_found", "no_read_grant", "other_tenant", "malformed_id"]


def test_revoking_read_access_applies_to_the_next_read(catalog):
    catalog.read_section(AGENT, "policy:shipping", "r3", "return_shipping")
    catalog.set_access("policy:shipping", Access("shop-a", read={"group:finance"}))
    with pytest.raises(EvidenceError) as info:
        catalog.read_section(AGENT, "policy:shipping", "r3", "return_shipping")
    assert info.value.code == "unknown_resource"


def test_publishing_a_revision_keeps_earlier_revisions_readable(catalog):
    catalog.publish("logistics:A1042", "r9", logistics_sections("r9"))
    assert catalog.current_revision("logistics:A1042") == "r9"
    r8 = catalog.read_section(AGENT, "logistics:A1042", "r8", "exceptions")
    r9 = catalog.read_section(AGENT, "logistics:A1042", "r9", "exceptions")
    assert r8["text"].count("\n") + 1 == 1 and r9["text"].count("\n") + 1 == 2


def test_page_bounds_are_checked_before_anything_is_looked_up(catalog):
    for offset, limit in [(-1, 10), (0, 0), (0, 801)]:
        with pytest.raises(EvidenceError) as info:
            catalog.read_section(AGENT, "order:Z9999", "r1", "x", offset, limit)
        assert info.value.code == "invalid_page_bounds"
    assert catalog.audit == []


def test_read_tool_refuses_a_smuggled_principal_argument(catalog):
    msg = run_tool_call(catalog_tools(catalog, AGENT), tool_call(
        "read_resource_section",
        {"resource_id": "order:A1042", "revision": "r12", "section": "delivery", "principal": "admin"}, "c1"))
    assert msg.status == "error" and json.loads(msg.content)["error"] == "invalid_arguments"


def test_the_logistics_trace_has_5000_lines():
    assert sum(len(t.split("\n")) for t in logistics_sections("r8").values()) == 5_000
    assert sum(len(t.split("\n")) for t in logistics_sections("r9").values()) == 5_001
