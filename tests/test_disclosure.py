"""Summaries are navigation, source text stays data, and reads stop."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from langchain_core.messages import ToolMessage

from evidence_lib._access import Principal
from evidence_lib._errors import EvidenceError
from evidence_lib._measure import Size
from evidence_lib.course.after_sales import (
    PLANTED_INSTRUCTION,
    QUALITY_CLAUSE,
    RETURNS_SUMMARY,
    after_sales_catalog,
    after_sales_toolbox,
)
from evidence_lib.course.scripted import ScriptedReturnShippingPolicy, run_script
from evidence_lib.disclosure import AnswerGate, LoadItem, Need, ReadSession, StopRules, dropped_conditions, plan_loading
from evidence_lib.disclosure._catalog import catalog_tools
from evidence_lib.disclosure._session import MAX_PREFETCH_BYTES, PREFETCH_RATE, LatencyIllustration

AGENT = Principal("shop-a", "user-417", groups={"support"})
REQUIRED = [("policy:returns", "quality"), ("policy:shipping", "return_shipping")]
NEEDS = (Need("signed_at", '"signed_at": "2026'), Need("quality_clause", "三十天内"),
         Need("verification_record", "质量核实记录"))


def test_the_summary_drops_the_thirty_day_and_verification_conditions():
    assert dropped_conditions(RETURNS_SUMMARY, QUALITY_CLAUSE) == ["三十天内", "经核实"]
    assert dropped_conditions(QUALITY_CLAUSE, QUALITY_CLAUSE) == []


def test_gate_refuses_a_final_answer_after_only_the_summary():
    catalog = after_sales_catalog()
    gate = AnswerGate(REQUIRED)
    for entry in catalog.discover(AGENT):  # a discovery listing is not a read
        gate.observe(entry)
    with pytest.raises(EvidenceError) as info:
        gate.final_answer("The merchant pays.")
    assert info.value.code == "evidence_incomplete"
    assert info.value.details == {"missing": ["policy:returns#quality", "policy:shipping#return_shipping"]}


def test_gate_refuses_after_a_partial_page_and_allows_after_the_rest():
    catalog = after_sales_catalog()
    gate = AnswerGate([("policy:returns", "quality")])
    first = catalog.read_section(AGENT, "policy:returns", "r5", "quality", 0, 20)
    gate.observe(first)
    assert gate.missing() == ["policy:returns#quality"]
    gate.observe(catalog.read_section(AGENT, "policy:returns", "r5", "quality", first["next_offset"], 800))
    assert gate.final_answer("ok") == {"answer": "ok", "sources": ["policy:returns@r5#quality"]}


def test_gate_ignores_tool_messages_that_are_not_a_section_reply():
    catalog = after_sales_catalog()
    gate = AnswerGate([("policy:returns", "quality")])
    whole = json.dumps(catalog.read_section(AGENT, "policy:returns", "r5", "quality", 0, 800), ensure_ascii=False)
    for content in ([{"type": "text", "text": whole}], "not json", whole):
        gate.observe(ToolMessage(content=content, tool_call_id="c", status="error" if content == whole else "success"))
    assert gate.missing() == ["policy:returns#quality"]
    gate.observe(ToolMessage(content=whole, tool_call_id="c"))
    assert gate.missing() == []


def run(planted: bool):
    catalog = after_sales_catalog(planted_instruction=planted)
    return run_script(catalog_tools(catalog, AGENT), ScriptedReturnShippingPolicy(), AnswerGate(REQUIRED))


def test_a_planted_instruction_does_not_change_the_tool_calls():
    clean, planted = run(planted=False), run(planted=True)
    assert planted.calls == clean.calls
    assert [c["name"] for c in planted.calls] == ["discover_resources"] + ["read_resource_section"] * 5
    remark = json.loads(planted.messages[3].content)
    assert PLANTED_INSTRUCTION in remark["text"] and remark["kind"] == "data"
    assert remark["source"] == "order:A1042@r12#remarks"
    assert PLANTED_INSTRUCTION not in json.loads(clean.messages[3].content)["text"]
    assert planted.answer == clean.answer


def test_the_scripted_answer_passes_the_gate_with_versioned_sources():
    answer = run(planted=True).answer
    assert answer["sources"] == ["policy:returns@r5#quality", "policy:shipping@r3#return_shipping"]
    assert "thirty days" in answer["answer"] and "verified" in answer["answer"]


def test_a_planted_instruction_does_not_change_permissions():
    # Even a model that obeyed the remark could not approve the refund: execution re-checks the principal.
    with pytest.raises(EvidenceError) as info:
        after_sales_toolbox().execute(AGENT, "approve_refund", {"refund_id": "RF-0001"})
    assert info.value.code == "unknown_tool"


def test_the_same_resource_at_the_same_version_is_reused_not_reread():
    s = ReadSession(after_sales_catalog(), AGENT, NEEDS, StopRules(max_supplementary_reads=5))
    s.prefetch("order:A1042", "r12", "delivery")
    assert s.read("order:A1042", "r12", "delivery")["status"] == "reused"
    assert s.read("order:A1042", "r11", "delivery")["status"] == "read"  # another version is another read
    assert (s.catalog_reads, s.supplementary_reads, s.reused) == (2, 1, 1)


def test_at_most_n_supplementary_reads_then_a_report_of_what_is_missing():
    s = ReadSession(after_sales_catalog(), AGENT, NEEDS, StopRules(max_supplementary_reads=2,
                                                                   max_reads_without_new_evidence=5))
    s.prefetch("order:A1042", "r12", "delivery")
    assert s.read("policy:returns", "r5", "quality")["new_evidence"] == ["quality_clause"]
    s.read("product:SKU-7781", "r4", "overview")
    third = s.read("policy:returns", "r5", "process")
    assert third == {"source": "policy:returns@r5#process", "status": "stopped", "new_evidence": [],
                     "reason": "read_limit"}
    report = s.report()
    assert report["reason"] == "read_limit" and report["missing"] == ["verification_record"]
    assert report["found"] == {"quality_clause": "policy:returns@r5#quality", "signed_at": "order:A1042@r12#delivery"}
    assert s.catalog_reads == 3


def test_consecutive_reads_without_new_evidence_stop_the_loop():
    s = ReadSession(after_sales_catalog(), AGENT, NEEDS, StopRules(max_supplementary_reads=10,
                                                                   max_reads_without_new_evidence=2))
    s.read("order:A1042", "r12", "delivery")          # new: signed_at
    s.read("product:SKU-7781", "r4", "overview")      # nothing new
    s.read("policy:shipping", "r3", "exchange_shipping")  # nothing new -> stop
    assert s.report()["reason"] == "no_new_evidence"
    assert s.read("policy:returns", "r5", "quality")["status"] == "stopped"
    assert s.report()["missing"] == ["quality_clause", "verification_record"]


def test_a_refused_read_counts_and_adds_no_evidence():
    s = ReadSession(after_sales_catalog(), AGENT, NEEDS)
    assert s.read("policy:refund-exceptions", "r2", "limits")["status"] == "unknown_resource"
    assert s.supplementary_reads == 1 and s.found == {}


def test_the_loop_stops_when_every_need_is_found():
    s = ReadSession(after_sales_catalog(), AGENT, NEEDS[:2])
    s.read("order:A1042", "r12", "delivery")
    s.read("policy:returns", "r5", "quality")
    assert s.report()["reason"] == "all_needs_found" and s.report()["missing"] == []


def test_the_latency_example_is_labelled_arithmetic_and_adds_up():
    lat = LatencyIllustration()
    assert lat.progressive_s == Decimal("2.2") and lat.extra_s == Decimal("1.2") and lat.direct_s == 1
    assert "illustrative arithmetic, not a measurement" in str(lat)


def test_plan_prefetches_small_frequent_fields_and_leaves_rare_large_ones_on_demand():
    items = [LoadItem("order header", Size.of("x" * 150), 0.95), LoadItem("trace", Size.of("y" * 300_000), 0.1)]
    plan = plan_loading(items)
    assert plan["prefetch"] == ["order header"] and plan["on_demand"] == ["trace"]
    assert plan["bytes_everything_up_front"] == 300_150
    assert plan["bytes_expected_with_plan"] == 30_150


def test_prefetch_needs_both_a_high_need_rate_and_a_small_size():
    assert (PREFETCH_RATE, MAX_PREFETCH_BYTES) == (0.8, 2_000)
    items = [
        LoadItem("at both limits", Size.of("a" * MAX_PREFETCH_BYTES), PREFETCH_RATE),
        LoadItem("small but needed less often", Size.of("b" * 150), 0.6),
        LoadItem("frequent but one byte too large", Size.of("c" * (MAX_PREFETCH_BYTES + 1)), 1.0),
    ]
    plan = plan_loading(items)
    assert plan["prefetch"] == ["at both limits"]
    assert plan["on_demand"] == ["small but needed less often", "frequent but one byte too large"]
    assert plan_loading(items, prefetch_rate=0.5)["prefetch"] == ["at both limits", "small but needed less often"]
