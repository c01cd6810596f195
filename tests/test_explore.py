"""The live explorers' logic (evidence_lib.course.explore): context model, stepper, ledger playground."""

from __future__ import annotations

import json

import pytest

from evidence_lib import Budget, EvidenceIndex
from evidence_lib._measure import cl100k_tokens, utf8_bytes
from evidence_lib.course.article import ANSWER, article_corpus
from evidence_lib.course.explore import (
    LEDGER_SCRIPTS,
    ContextModel,
    ReadSpec,
    Stepper,
    as_budget,
    byte_budget,
    default_index,
    describe_budget,
    ledger_run,
    run_protocol,
    text_bar,
)


@pytest.fixture(scope="module")
def model() -> ContextModel:
    return ContextModel()


def sizes(steps) -> tuple[int, int]:
    return (sum(utf8_bytes(str(s.message.content)) for s in steps),
            sum(cl100k_tokens(str(s.message.content)) for s in steps))


# -- (a) context model ------------------------------------------------------------------------------

def test_article_setting_reproduces_the_article_numbers(model):
    p = model.point(top_k=12, page_limit=300, reads=1)
    assert (p.baseline.utf8_bytes, p.baseline.cl100k_tokens) == (156_982, 49_508)
    # 3,920 bytes as in the article; tokens are summed per message (1,600 for the concatenation).
    assert (p.protocol.utf8_bytes, p.protocol.cl100k_tokens) == (3_920, 1_601)
    assert [s.name for s in p.steps] == ["search_evidence", "locate_evidence", "read_evidence"]
    assert p.answer_in_baseline and p.answer_in_manifest and p.answer_reached
    assert p.byte_share_percent == 2.5


def test_protocol_size_is_the_measured_tool_message_content(model):
    for args in [(12, 300, 1), (5, 40, 6), (2, 800, 3), (12, 7, 12)]:
        p = model.point(*args)
        assert (p.protocol.utf8_bytes, p.protocol.cl100k_tokens) == sizes(p.steps)
        assert p.protocol.chars == sum(len(str(s.message.content)) for s in p.steps)


def test_baseline_grows_strictly_with_top_k(model):
    base = [model.point(k).baseline for k in range(1, 13)]
    assert all(a.utf8_bytes < b.utf8_bytes and a.cl100k_tokens < b.cl100k_tokens for a, b in zip(base, base[1:]))


def test_manifest_grows_with_top_k_but_stays_small(model):
    manifests = [model.point(k).steps[0].size.utf8_bytes for k in range(1, 13)]
    assert manifests == sorted(manifests) and len(set(manifests)) == 12
    assert manifests[-1] < model.point(1).baseline.utf8_bytes


@pytest.mark.parametrize("top_k", [1, 2, 3])
def test_answer_is_dropped_when_top_k_is_below_4(model, top_k):
    for reads in (1, 6, 12):
        p = model.point(top_k, 800, reads)
        assert not (p.answer_in_baseline or p.answer_in_manifest or p.answer_reached)
        assert json.loads(p.steps[1].message.content) == []  # locate finds nothing


@pytest.mark.parametrize("top_k", [4, 8, 12])
def test_answer_is_kept_from_top_k_4(model, top_k):
    p = model.point(top_k, 300, 1)
    assert p.answer_in_baseline and p.answer_in_manifest and p.answer_reached


def test_protocol_grows_with_reads_without_budget(model):
    totals = [model.point(12, 300, r).protocol.utf8_bytes for r in range(0, 13)]
    assert all(a < b for a, b in zip(totals, totals[1:]))
    assert model.point(12, 300, 0).reads_ok == 0 and not model.point(12, 300, 0).answer_reached


def test_a_short_page_needs_more_reads_to_reach_the_answer(model):
    assert len(ANSWER) == 18
    assert model.point(12, 18, 1).answer_reached
    assert not model.point(12, 17, 1).answer_reached
    assert not model.point(12, 10, 1).answer_reached and model.point(12, 10, 2).answer_reached


def test_reads_follow_next_offset_then_move_to_the_next_candidate(model):
    reads = [s.call["args"] for s in model.point(12, 5, 6).steps if s.name == "read_evidence"]
    assert [(a["doc_id"], a["offset"]) for a in reads] == [
        ("d03", 4321), ("d03", 4326), ("d03", 4331), ("d03", 4336), ("d00", 0), ("d00", 5)]


@pytest.mark.parametrize("max_bytes", [2_000, 4_000, 8_000, 16_000])
def test_reads_are_capped_by_the_byte_budget(model, max_bytes):
    p = model.point(12, 800, 12, max_bytes)
    charged = sum(s.size.utf8_bytes for s in p.steps if s.status == "ok")
    assert charged <= max_bytes
    assert p.reads_ok < 12
    assert [s.reason for s in p.steps if s.message.status == "error"] == ["bytes"]
    unlimited = model.point(12, 800, 12)
    assert unlimited.reads_ok == 12 and unlimited.protocol.utf8_bytes > p.protocol.utf8_bytes


def test_more_budget_allows_more_reads(model):
    done = [model.point(12, 800, 12, b).reads_ok for b in (4_000, 8_000, 16_000, 32_000)]
    assert done == sorted(done) and done[0] < done[-1]


def test_reading_stops_at_the_first_refusal(model):
    p = model.point(12, 800, 12, 8_000)
    first = next(i for i, s in enumerate(p.steps) if s.message.status == "error")
    assert first == len(p.steps) - 1


def test_a_budget_smaller_than_the_manifest_refuses_the_search(model):
    p = model.point(12, 300, 3, 1_000)
    assert p.steps[0].status == "budget_exhausted" and not p.answer_in_manifest


def test_results_are_cached_per_setting(model):
    first = model.point(7, 123, 4, Budget())
    again = model.point(7, 123, 4, Budget())
    assert again is first, "the same setting is served from the cache, not run again"


def test_a_given_index_gives_the_same_numbers(tmp_path, model):
    own = ContextModel(EvidenceIndex.build(article_corpus(), tmp_path / "store"))
    assert own.index.root == tmp_path / "store"
    assert own.point(12, 300, 2).summary() == model.point(12, 300, 2).summary()


def test_summary_is_stable_text(model):
    text = model.point(3, 300, 1).summary()
    assert text == ContextModel(default_index()).point(3, 300, 1).summary()
    assert "0x" not in text and "answer: in baseline NO" in text
    assert text.splitlines()[0] == "top_k 3 · page limit 300 · reads 1 · no budget"


@pytest.mark.parametrize("args", [dict(top_k=0), dict(top_k=13), dict(page_limit=0), dict(page_limit=801),
                                  dict(reads=-1), dict(reads=21), dict(budget=-5), dict(budget=True),
                                  dict(budget="16000")])
def test_impossible_settings_are_rejected(model, args):
    with pytest.raises(ValueError):
        model.point(**args)


def test_budget_helpers():
    assert as_budget(None) is None and as_budget(Budget()) == Budget()
    assert as_budget(500) == byte_budget(500) == Budget(None, None, 500, None, None)
    assert describe_budget(None) == "no budget"
    assert describe_budget(byte_budget(4_000)) == "budget: bytes 4,000"
    assert describe_budget(Budget(None, None, None, None, None)) == "budget: unlimited"


def test_text_bar():
    assert text_bar(0, 100) == "" and text_bar(1, 10**9) == "█"
    assert text_bar(50, 100, width=10) == "█" * 5 and text_bar(500, 100, width=10) == "█" * 10


def test_run_protocol_with_another_query_and_term(model):
    steps = run_protocol(model.index, page_limit=50, reads=1, term="没有的关键词")
    assert json.loads(steps[1].message.content) == []
    assert steps[2].call["args"] == {"doc_id": "d00", "offset": 0, "limit": 50}


# -- (b) stepper ----------------------------------------------------------------------------------------

def test_stepper_running_totals_equal_the_sum_of_message_sizes(model):
    s = Stepper(model, page_limit=10, reads=4)
    for i, step in enumerate(s.steps, start=1):
        assert step.step == i
        assert (step.total_bytes, step.total_tokens) == sizes(s.steps[:i])
    assert s.steps[-1].total_bytes == model.point(12, 10, 4).protocol.utf8_bytes


def test_stepper_walks_search_locate_read_in_order(model):
    s = Stepper(model, page_limit=300, reads=2)
    assert s.current is None and s.position == 0
    names = [s.next().name for _ in range(len(s.steps))]
    assert names == ["search_evidence", "locate_evidence", "read_evidence", "read_evidence"]
    assert s.next() is s.steps[-1]  # clamped at the end
    assert json.loads(s.steps[2].message.content)["text"] == ANSWER
    s.reset()
    assert s.position == 0 and "(no call yet: press Next)" in s.summary()


def test_stepper_go_is_clamped_and_configure_restarts(model):
    s = Stepper(model)
    s.go(99)
    assert s.position == len(s.steps) == 3
    s.go(-4)
    assert s.position == 0
    s.go(2)
    s.configure(page_limit=5, reads=4)
    assert s.position == 0 and len(s.steps) == 6


def test_stepper_summary_shows_the_current_tool_message(model):
    s = Stepper(model)
    s.go(1)
    text = s.summary(content_chars=40)
    assert "ToolMessage(tool_call_id='search-1', status='success'):" in text
    assert text.endswith("chars)") and "(+2,518 chars)" in text
    s.go(3)
    assert s.summary().splitlines()[-1] == json.dumps(
        json.loads(s.steps[2].message.content), ensure_ascii=False)


def test_stepper_with_a_budget_shows_the_refusal(model):
    s = Stepper(model, page_limit=800, reads=6, budget=6_000)
    s.go(len(s.steps))
    assert s.current.status == "budget_exhausted" and s.current.message.status == "error"
    assert "budget_exhausted" in s.summary()


# -- (c) ledger playground ------------------------------------------------------------------------------

def test_rereading_the_answer_is_already_read_and_still_charged():
    r = ledger_run("re-read the answer")
    assert r.statuses == ["ok", "already_read", "already_read", "ok"]
    assert r.totals()["calls"] == 4
    again = json.loads(r.steps[1].message.content)
    assert again["status"] == "already_read" and "text" not in again and again["covered_by"] == [[4321, 4339]]


def test_tiny_read_loop_is_stopped_by_reads_per_doc():
    r = ledger_run("tiny-read loop", Budget(max_reads_per_doc=4))
    assert r.statuses == ["ok"] * 4 + ["budget_exhausted"] * 4
    assert {s.reason for s in r.steps[4:]} == {"reads_per_doc"}
    assert "first refusal: step 5, budget_exhausted (reads_per_doc limit)" in r.summary()
    assert ledger_run("tiny-read loop", Budget(max_reads_per_doc=2)).statuses.count("ok") == 2


@pytest.mark.parametrize("max_bytes", [3_000, 5_000, 10_000, 16_000])
def test_paging_every_candidate_is_capped_by_bytes(max_bytes):
    r = ledger_run("page every candidate", Budget(max_chars=None, max_tokens=None, max_bytes=max_bytes))
    assert r.totals()["bytes"] <= max_bytes
    assert r.statuses.count("ok") == max_bytes // 2_598
    refused = [s.reason for s in r.steps if s.status != "ok"]
    # the byte limit stops it first; a caller that keeps going then hits the refusal cap
    assert refused[0] == "bytes" and set(refused) <= {"bytes", "refusals"}


def test_max_calls_caps_the_script():
    r = ledger_run("page every candidate", Budget(max_calls=3, max_chars=None, max_tokens=None, max_bytes=None))
    refused = [s.reason for s in r.steps[3:]]
    assert r.statuses.count("ok") == 3 and refused[0] == "calls" and set(refused) <= {"calls", "refusals"}


def test_refused_calls_are_recorded_but_not_charged():
    r = ledger_run("tiny-read loop", Budget(max_reads_per_doc=3))
    charged = [s for s in r.steps if s.message.status != "error"]
    assert r.totals() == {
        "calls": len(charged),
        "chars": sum(s.size.chars for s in charged),
        "bytes": sum(s.size.utf8_bytes for s in charged),
        "tokens": sum(s.size.cl100k_tokens for s in charged),
    }
    assert len(r.ledger.entries) == len(r.steps)
    assert [e.status for e in r.ledger.entries] == r.statuses


def test_ledger_run_takes_custom_scripts_and_indexes(tmp_path):
    index = EvidenceIndex.build(article_corpus(4), tmp_path / "four")
    r = ledger_run([ReadSpec("d03", 4321, 18), ReadSpec("d07")], index=index)
    assert r.statuses == ["ok", "unknown_doc_id"]


def test_ledger_summary_is_deterministic():
    a = ledger_run("page every candidate").summary()
    assert a == ledger_run(list(LEDGER_SCRIPTS["page every candidate"])).summary()
    assert a.splitlines()[0] == "budget: calls 20, chars 6,000, bytes 16,000, tokens 6,000, reads/doc 4"
    assert a.splitlines()[-1] == "first refusal: step 7, budget_exhausted (chars limit)"


def test_a_point_names_its_manifest_size():
    p = ContextModel().point(12, 300, 1)
    assert p.steps[0].name == "search_evidence"
    assert p.manifest == p.steps[0].size and p.manifest.utf8_bytes == 3638, "the article's 12-row manifest"
