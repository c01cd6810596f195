"""The live explorers' widgets (evidence_lib.course.widgets): built, driven from code, no browser."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("ipywidgets")

from evidence_lib.course.explore import ContextModel
from evidence_lib.course.widgets import context_explorer, ledger_playground, tool_call_stepper


@pytest.fixture(scope="module")
def model() -> ContextModel:
    return ContextModel()


def span(widget, css: str) -> str:
    m = re.search(rf'class="{css}">([^<]*)<', widget.state.value)
    assert m, f"no .{css} in the displayed HTML"
    return m.group(1)


def test_context_explorer_numbers_change_when_top_k_moves(model):
    e = context_explorer(model)
    before = e.state_text()
    assert span(e, "ev-baseline-bytes") == "156,982" and span(e, "ev-protocol-bytes") == "3,920"
    e.set(top_k=3)
    assert e.state_text() != before and "answer: in baseline NO" in e.state_text()
    assert span(e, "ev-baseline-bytes") == "39,243"
    assert e.controls["top_k"].value == 3 and e.numbers()["baseline_bytes"] == 39_243


def test_context_explorer_budget_and_reads(model):
    e = context_explorer(model).set(page_limit=800, reads=12)
    unlimited = e.numbers()
    e.set(budget=8_000)
    capped = e.numbers()
    assert capped["protocol_bytes"] < unlimited["protocol_bytes"] and capped["refused"] == 1
    assert "budget: bytes 8,000" in e.state_text()


def test_widget_repr_is_stable_and_replaces_the_widget_text(model):
    e = context_explorer(model)
    assert repr(e) == ("<ContextExplorer: top_k=12, page_limit=300, reads=1, budget=0; "
                       "call .set(...) and .state_text()>")
    bundle = e._repr_mimebundle_()
    assert bundle["text/plain"] == repr(e)
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == e.widget.model_id
    for obj in (e, tool_call_stepper(model), ledger_playground()):
        assert "0x" not in repr(obj) and "model_id" not in repr(obj)


def test_displayed_numbers_carry_known_css_classes(model):
    e, s, p = context_explorer(model), tool_call_stepper(model), ledger_playground()
    assert "evidence-context-explorer" in e.widget._dom_classes
    assert "evidence-context-numbers" in e.state._dom_classes
    assert "evidence-stepper-state" in s.state._dom_classes
    assert "evidence-ledger-state" in p.state._dom_classes


def test_set_rejects_unknown_controls(model):
    with pytest.raises(KeyError, match="top_kk"):
        context_explorer(model).set(top_kk=3)


def test_stepper_next_button_and_reset(model):
    s = tool_call_stepper(model)
    assert span(s, "ev-step") == "0" and span(s, "ev-total-bytes") == "0"
    s.next_button.click()
    s.next_button.click()
    assert s.values()["step"] == 2 and span(s, "ev-total-bytes") == "3,673"
    assert "locate-2" in s.state_text()
    s.next()
    s.next()  # clamped at the last step
    assert s.values()["step"] == 3 and span(s, "ev-total-bytes") == "3,920"
    s.reset_button.click()
    assert s.values()["step"] == 0


def test_stepper_page_limit_changes_the_script(model):
    s = tool_call_stepper(model).set(page_limit=5, reads=4)
    assert s.controls["step"].max == 6
    s.set(step=6)
    assert span(s, "ev-total-bytes") == "4,529" and "step 6 of 6" in s.state_text()
    s.set(reads=1)
    assert s.controls["step"].max == 3 and s.values()["step"] == 3


def test_ledger_playground_reacts_to_the_budget():
    p = ledger_playground()
    assert span(p, "ev-count-ok") == "4" and span(p, "ev-count-budget_exhausted") == "4"
    p.set(max_reads_per_doc=2)
    assert span(p, "ev-count-ok") == "2" and "reads/doc 2" in p.state_text()
    p.set(script="page every candidate", max_bytes=5_000)
    assert "first refusal: step 2, budget_exhausted (bytes limit)" in p.state_text()
    assert span(p, "ev-spent-bytes") == "2,598"
    assert p.budget.max_bytes == 5_000 and p.budget.max_chars == 6_000
