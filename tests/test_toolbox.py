"""Tool discovery: find by purpose, load schemas separately, authorize on every execution."""

from __future__ import annotations

import json

import pytest

from evidence_lib._access import Principal
from evidence_lib._errors import EvidenceError, error_payload, to_json
from evidence_lib._tools import run_tool_call, tool_call
from evidence_lib.course.after_sales import after_sales_toolbox
from evidence_lib.disclosure._toolbox import discovery_tools, measure_schema_loading

AGENT = Principal("shop-a", "user-417", groups={"support"})
APPROVER = Principal("shop-a", "user-020", groups={"support", "refund_approver"})
OTHER_SHOP = Principal("shop-b", "user-417", groups={"support", "refund_approver"})
TYPICAL_QUERY = "create a return request for a quality issue"


@pytest.fixture
def toolbox():
    return after_sales_toolbox()


def refusal(fn, *args):
    with pytest.raises(EvidenceError) as info:
        fn(*args)
    return to_json(error_payload(info.value))


def test_registry_has_at_least_30_tools_with_distinct_one_line_purposes(toolbox):
    specs = list(toolbox.specs.values())
    assert len(specs) >= 30
    purposes = [s.purpose for s in specs]
    assert len(set(purposes)) == len(purposes)
    assert all("\n" not in p and len(p) <= 120 for p in purposes)
    assert not any(p.lower().startswith("handle") for p in purposes)


def test_every_schema_is_a_full_langchain_core_function_schema(toolbox):
    for schema in toolbox.all_schemas():
        fn = schema["function"]
        assert schema["type"] == "function"
        assert fn["parameters"]["type"] == "object"
        assert fn["parameters"]["required"]
        assert all("description" in p for p in fn["parameters"]["properties"].values())


def test_find_tools_returns_names_and_purposes_only(toolbox):
    found = toolbox.find_tools("refund status")
    assert all(set(f) == {"name", "purpose"} for f in found)
    assert "parameters" not in to_json(found)


def test_find_tools_tells_query_refund_status_from_create_refund_request(toolbox):
    names = [f["name"] for f in toolbox.find_tools("refund status")]
    assert names[0] == "query_refund_status"
    assert names.index("query_refund_status") < names.index("create_refund_request")
    assert [f["name"] for f in toolbox.find_tools(TYPICAL_QUERY)][0] == "create_return_request"


def test_find_tools_is_bounded(toolbox):
    assert len(toolbox.find_tools("order", limit=10)) == 10
    assert json.loads(refusal(toolbox.find_tools, "order", 11))["error"] == "invalid_arguments"
    assert json.loads(refusal(toolbox.find_tools, "x" * 257))["error"] == "invalid_query"
    assert toolbox.find_tools("zzz") == []


def test_load_tools_returns_full_schemas_in_the_order_asked(toolbox):
    loaded = toolbox.load_tools(["query_refund_status", "create_refund_request"])
    assert [s["function"]["name"] for s in loaded] == ["query_refund_status", "create_refund_request"]
    assert "refund_id" in loaded[0]["function"]["parameters"]["properties"]
    assert json.loads(refusal(toolbox.load_tools, ["no_such_tool"]))["error"] == "unknown_tool"
    assert json.loads(refusal(toolbox.load_tools, ["lookup_order"] * 6))["error"] == "invalid_arguments"


def test_find_plus_load_is_much_smaller_than_all_schemas_up_front(toolbox):
    m = measure_schema_loading(toolbox, TYPICAL_QUERY)
    assert m.loaded == ("create_return_request", "cancel_return_request")
    assert m.find_and_load.utf8_bytes * 5 < m.all_up_front.utf8_bytes
    assert m.find_and_load.cl100k_tokens * 5 < m.all_up_front.cl100k_tokens
    assert m.ratio("utf8_bytes") > 5 and m.ratio("cl100k_tokens") > 5


def test_loading_only_the_chosen_tool_counts_only_its_schema(toolbox):
    # notebook 06 loads just the tool that drafts a return request, not the first two hits
    both = measure_schema_loading(toolbox, TYPICAL_QUERY)
    one = measure_schema_loading(toolbox, TYPICAL_QUERY, load=["create_return_request"])
    assert one.loaded == ("create_return_request",)
    assert one.rows["find_tools result"] == both.rows["find_tools result"]
    assert one.rows["load_tools result"].utf8_bytes == len(to_json(toolbox.load_tools(["create_return_request"])).encode())
    assert one.find_and_load.utf8_bytes < both.find_and_load.utf8_bytes
    assert one.ratio("utf8_bytes") > both.ratio("utf8_bytes")


def test_discovery_tools_run_as_tool_calls(toolbox):
    tools = discovery_tools(toolbox)
    found = run_tool_call(tools, tool_call("find_tools", {"query": "refund status", "limit": 2}, "c1"))
    loaded = run_tool_call(tools, tool_call("load_tools", {"names": ["query_refund_status"]}, "c2"))
    assert [f["name"] for f in json.loads(found.content)] == ["query_refund_status", "approve_refund"]
    assert json.loads(loaded.content)[0]["function"]["name"] == "query_refund_status"


def test_a_tool_never_shown_is_still_refused_when_not_granted(toolbox):
    # approve_refund was never found or loaded in this test: execution checks grants on its own.
    assert json.loads(refusal(toolbox.execute, AGENT, "approve_refund", {"refund_id": "RF-0001"})) == {
        "error": "unknown_tool", "message": "no such tool is available"}


def test_a_loaded_tool_is_still_refused_when_not_granted(toolbox):
    tools = toolbox.tools_for(AGENT, ["approve_refund"])  # visible to the model...
    msg = run_tool_call(tools, tool_call("approve_refund", {"refund_id": "RF-0001"}, "c1"))
    assert msg.status == "error" and json.loads(msg.content)["error"] == "unknown_tool"  # ...not authorized


def test_unknown_and_forbidden_tools_give_byte_identical_errors(toolbox):
    unknown = refusal(toolbox.execute, AGENT, "no_such_tool", {})
    assert refusal(toolbox.execute, AGENT, "approve_refund", {"refund_id": "RF-0001"}) == unknown
    assert refusal(toolbox.execute, AGENT, "reissue_invoice", {"order_id": "A1042", "note": "x"}) == unknown
    assert refusal(toolbox.execute, OTHER_SHOP, "approve_refund", {"refund_id": "RF-0001"}) == unknown
    assert refusal(toolbox.execute, None, "lookup_order", {"order_id": "A1042"}) == unknown
    assert [a.reason for a in toolbox.audit] == ["not_found", "not_granted", "not_granted", "not_granted",
                                                 "not_granted"]


def test_grants_are_checked_before_arguments(toolbox):
    assert json.loads(refusal(toolbox.execute, AGENT, "approve_refund", {"bogus": 1}))["error"] == "unknown_tool"


def test_a_granted_principal_may_execute_the_restricted_tool(toolbox):
    assert toolbox.execute(APPROVER, "approve_refund", {"refund_id": "RF-0001"})["status"] == "accepted"


def test_another_shops_order_is_refused_like_a_missing_order(toolbox):
    other = refusal(toolbox.execute, AGENT, "lookup_order", {"order_id": "B2077"})
    missing = refusal(toolbox.execute, AGENT, "lookup_order", {"order_id": "Z9999"})
    assert other == missing and json.loads(other)["error"] == "unknown_resource"
    assert toolbox.execute(AGENT, "lookup_order", {"order_id": "A1042"})["category"] == "小家电"


def test_strict_arguments_refuse_coercion_and_unknown_names(toolbox):
    assert json.loads(refusal(toolbox.execute, AGENT, "check_stock",
                              {"sku": "SKU-7781", "quantity": "2"}))["error"] == "invalid_arguments"
    assert json.loads(refusal(toolbox.execute, AGENT, "lookup_order",
                              {"order_id": "A1042", "principal": "admin"}))["error"] == "invalid_arguments"
