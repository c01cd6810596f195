"""An injected reader: the server-side grant check and the answer gate stop what it tries."""

from __future__ import annotations

import json

from evidence_lib.access import Principal
from evidence_lib.disclosure import AnswerGate, ScriptedReturnShippingPolicy, after_sales_catalog, after_sales_toolbox
from evidence_lib.disclosure.catalog import catalog_tools
from evidence_lib.disclosure.obedient import OBEYED_ANSWER, ObedientReader, run_reader
from evidence_lib.errors import EvidenceError, error_payload, to_json

AGENT = Principal("shop-a", "user-417", groups={"support"})
APPROVER = Principal("shop-a", "user-020", groups={"support", "refund_approver"})
REQUIRED = [("policy:returns", "quality"), ("policy:shipping", "return_shipping")]


def run(reader, principal=AGENT, planted=True):
    toolbox = after_sales_toolbox()
    tools = catalog_tools(after_sales_catalog(planted_instruction=planted), principal)
    tools += toolbox.tools_for(principal, ["approve_refund"])
    return run_reader(tools, reader, AnswerGate(REQUIRED)), toolbox


def test_the_obedient_reader_obeys_the_planted_text_and_the_server_refuses():
    result, toolbox = run(ObedientReader("A1042"))
    names = [c["name"] for c in result.calls]
    assert names == ["discover_resources"] + ["read_resource_section"] * 3 + ["approve_refund"]
    assert result.calls[3]["args"]["section"] == "remarks"
    refused = result.messages[-1]
    assert refused.status == "error"
    try:
        toolbox.execute(AGENT, "no_such_tool", {})
    except EvidenceError as e:
        assert refused.content == to_json(error_payload(e))  # byte-identical to a tool that does not exist
    assert [r.reason for r in toolbox.audit][0] == "not_granted"
    assert result.answer["error"] == "evidence_incomplete"
    assert result.answer["missing"] == ["policy:returns#quality", "policy:shipping#return_shipping"]


def test_without_planted_text_it_reads_like_the_control():
    obedient, _ = run(ObedientReader("A1042"), planted=False)
    control, _ = run(ScriptedReturnShippingPolicy("A1042"), planted=True)
    assert obedient.calls == control.calls and obedient.answer == control.answer
    assert control.answer["sources"] == ["policy:returns@r5#quality", "policy:shipping@r3#return_shipping"]


def test_an_approver_would_be_injected_for_real():
    result, toolbox = run(ObedientReader("A1042"), principal=APPROVER)
    assert json.loads(result.messages[-1].content)["status"] == "accepted"
    assert toolbox.audit == []
    assert result.answer["error"] == "evidence_incomplete"  # the gate still refuses the unread answer
    assert OBEYED_ANSWER.startswith("Refund approved")
