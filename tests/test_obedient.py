"""An injected reader: the server-side grant check and the answer gate stop what it tries."""

from __future__ import annotations

import inspect
import json
import re

from langchain_core.messages import ToolMessage

from evidence_lib._access import Principal
from evidence_lib._errors import EvidenceError, error_payload, to_json
from evidence_lib.course.after_sales import after_sales_catalog, after_sales_toolbox
from evidence_lib.course.obedient import OBEYED_ANSWER, TRIGGER, ObedientReader, planted_at, run_reader, section_text
from evidence_lib.course.scripted import ScriptedReturnShippingPolicy
from evidence_lib.disclosure import AnswerGate
from evidence_lib.disclosure._catalog import catalog_tools

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


# -- the decision code notebook 06 prints (issue 18 item 3) ----------------------------------------------------
def replies(principal=AGENT, planted=True):
    """The control's five reads and what came back: discover, header, delivery, remarks, return clause."""
    result, _ = run(ScriptedReturnShippingPolicy("A1042"), principal, planted)
    return result.messages


def test_the_printed_decision_is_short_public_and_names_notebook_06():
    source = inspect.getsource(ObedientReader.next_call)
    assert "06" in ObedientReader.next_call.__doc__
    assert not re.search(r"(?<![\w.])_[A-Za-z]|\._[A-Za-z]", source), "the notebook prints no private name"
    assert len(source.splitlines()) <= 20
    assert "06" in planted_at.__doc__


def test_section_text_is_the_text_of_a_successful_section_read_only():
    messages = replies()
    assert section_text(messages[0]) is None  # discover_resources: a listing, not a section
    assert TRIGGER in section_text(messages[3])  # the buyer's remark
    error = ToolMessage(content=f'{{"kind": "data", "text": "{TRIGGER}"}}', tool_call_id="x", status="error")
    assert section_text(error) is None
    assert section_text(ToolMessage(content="not json", tool_call_id="y")) is None


def test_planted_at_is_the_first_section_reply_carrying_the_trigger():
    messages = replies()
    assert [planted_at(messages[:n]) for n in range(1, 6)] == [None, None, None, 3, 3]
    assert planted_at(replies(planted=False)) is None


def test_the_decision_follows_the_plan_obeys_once_then_stops():
    messages = replies()
    reader, control = ObedientReader("A1042", refund_id="RF-0042"), ScriptedReturnShippingPolicy("A1042")
    for n in range(4):  # before the remark was read: exactly the control's next call
        assert reader.next_call(messages[:n]) == control.next_call(messages[:n])
    obey = reader.next_call(messages[:4])
    assert (obey["name"], obey["args"], obey["id"]) == ("approve_refund", {"refund_id": "RF-0042"}, "call-5")
    assert reader.next_call(messages[:5]) is None  # "directly": no more reading after obeying
    assert reader.answer(messages[:5]) == OBEYED_ANSWER
