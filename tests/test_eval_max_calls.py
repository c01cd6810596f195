"""evaluate's call limit (notebook 08x's try-it): a reading flow given fewer calls makes the same calls, up to the limit."""

from __future__ import annotations

import pytest

from evidence_lib.eval import MAX_CALLS, data_path, evaluate, load_corpus, load_qa

READING = ("article", "compact", "no_help")


@pytest.fixture(scope="module")
def zh():
    name, docs = load_corpus(str(data_path("zh_corpus")))
    return name, docs, load_qa(data_path("zh_qa.json"), docs)


@pytest.mark.parametrize("chooser", ["oracle", "overlap"])
def test_a_lower_call_limit_cuts_each_reading_flow_to_a_prefix_of_its_calls(zh, chooser):
    name, docs, items = zh
    full = evaluate(name, docs, items, flows=READING, chooser=chooser)
    cut = evaluate(name, docs, items, flows=READING, chooser=chooser, max_calls=2)
    for flow in READING:
        for whole, short in zip(full["per_question"][flow], cut["per_question"][flow], strict=True):
            assert len(short["calls"]) <= 2
            assert short["calls"] == whole["calls"][:len(short["calls"])], (flow, whole["id"])
            assert short["answered"] == (whole["answered"] and whole["calls_until_answer"] <= 2), (flow, whole["id"])


def test_the_default_call_limit_is_max_calls(zh):
    name, docs, items = zh
    assert evaluate(name, docs, items, flows=("no_help",)) == evaluate(name, docs, items, flows=("no_help",),
                                                                        max_calls=MAX_CALLS)


def test_one_call_leaves_no_help_only_its_search(zh):
    name, docs, items = zh
    runs = evaluate(name, docs, items, flows=("no_help",), max_calls=1)["per_question"]["no_help"]
    assert {tuple(c["tool"] for c in r["calls"]) for r in runs} == {("search_evidence",)}
    assert not any(r["answered"] for r in runs)


@pytest.mark.parametrize("max_calls", [0, -1])
def test_a_call_limit_under_one_is_refused_before_any_flow_runs(zh, max_calls):
    """Issue 34 (08x review item 12): max_calls=0 or -1 ran silently and reported every question unanswered."""
    name, docs, items = zh
    with pytest.raises(ValueError, match="max_calls must be at least 1"):
        evaluate(name, docs, items, flows=("compact",), max_calls=max_calls)


@pytest.mark.parametrize("chooser", ["oracle", "overlap"])
def test_the_call_limit_bounds_the_opening_calls_too(zh, chooser):
    """Issue 34 (08x review, third pass, item 1): at max_calls=1 article still made its search and its locate, and
    compact under overlap its locate and its search; the limit bounded only the reading after them."""
    name, docs, items = zh
    full = evaluate(name, docs, items, flows=READING, chooser=chooser)
    cut = evaluate(name, docs, items, flows=READING, chooser=chooser, max_calls=1)
    for flow in READING:
        for whole, short in zip(full["per_question"][flow], cut["per_question"][flow], strict=True):
            assert short["calls"] == whole["calls"][:1], (flow, whole["id"])
            assert short["bytes"] == whole["calls"][0]["utf8_bytes"], (flow, whole["id"])
