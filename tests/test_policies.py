"""The decision code notebooks 08 and 09 print (issue 18 item 3): the careful reader's policy, the loop's stop rules
and the eval's rule for "answered", as short public functions that behave as the code they replaced."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from evidence_lib import Budget, Citation, EvidenceIndex, Excerpt, ReadRecord, verify_citation
from evidence_lib._answers import parse_answer
from evidence_lib.audit._history import Step, steps
from evidence_lib.course.article import ANSWER, article_corpus
from evidence_lib.course.readers import (
    CarefulReader,
    InstructionFollower,
    Seen,
    careful_answer,
    careful_citations,
    careful_policy,
)
from evidence_lib.course.tasks import ARTICLE_TERMS, moved_corpus, run_reader
from evidence_lib.eval import _flows as flows
from evidence_lib.eval import answer_citation, data_path
from evidence_lib.eval._answered import shown_ranges
from evidence_lib.eval._run import evaluate, load_corpus, load_qa
from evidence_lib.integrations.langchain._loop import LoopRules, stop_rule

ROOT = Path(__file__).resolve().parents[1]
TERM = ARTICLE_TERMS[0]


def _names(calls):
    return [(c["name"], c["args"]) for c in calls]


# -- the careful reader's policy ---------------------------------------------------------------------------------
def test_the_policy_decides_each_step_of_the_article_task_from_what_it_has_seen(tmp_path):
    run = run_reader(CarefulReader(ARTICLE_TERMS), tmp_path)
    m = run.messages  # 0 system, 1 question, then (AIMessage, ToolMessage) pairs, then the answer
    decide = [careful_policy(Seen(m[:k]), ARTICLE_TERMS) for k in (2, 4, 6, 8)]
    assert [_names(d) for d in decide] == [
        [("search_evidence", {"query": m[1].content})],
        [("locate_evidence", {"term": TERM})],
        [("read_evidence", {"doc_id": "d03", "offset": 4321, "limit": 300})],
        [],  # every hit is covered by a page read: answer now
    ]
    seen = Seen(m[:8])
    (cite,) = careful_citations(seen)
    assert cite == ("d03", "2026-10-27", 4321, 4339, ANSWER)
    assert careful_answer(seen, [cite]) == run.result.answer


def test_an_empty_locate_makes_the_policy_try_the_next_keyword_then_say_what_is_missing(tmp_path):
    gone = [d for d in moved_corpus("d07") if d.doc_id != "d07"]
    run = run_reader(CarefulReader(["每批上限", TERM]), tmp_path, gone)
    after_first = Seen(run.messages[:6])  # search, then the first locate found nothing
    assert _names(careful_policy(after_first, ["每批上限", TERM])) == [("locate_evidence", {"term": TERM})]
    done = Seen(run.messages[:-1])
    assert careful_policy(done, ["每批上限", TERM]) == []
    answer = careful_answer(done, careful_citations(done))
    assert answer.startswith("INSUFFICIENT EVIDENCE:") and "每批上限, 单批上限" in answer
    assert "this does not show the rule is absent" in answer and answer == run.result.answer


def test_a_budget_refusal_ends_the_calls_and_the_answer_says_why(tmp_path):
    run = run_reader(CarefulReader(ARTICLE_TERMS), tmp_path, budget=Budget(max_calls=2))
    seen = Seen(run.messages[:-1])
    assert seen.exhausted() is not None and careful_policy(seen, ARTICLE_TERMS) == []
    assert careful_answer(seen, careful_citations(seen)).startswith("INSUFFICIENT EVIDENCE: the budget ran out (calls)")


def test_a_compact_excerpt_covers_the_hit_so_the_policy_answers_without_a_read(tmp_path):
    run = run_reader(CarefulReader(ARTICLE_TERMS), tmp_path, profile="compact")
    assert [s.name for s in steps(run.messages)] == ["search_evidence", "locate_evidence"]
    seen = Seen(run.messages[:-1])
    assert careful_policy(seen, ARTICLE_TERMS) == []
    assert [c[:4] for c in careful_citations(seen)] == [("d03", "2026-10-27", 4321, 4339)]


def test_the_policy_reads_where_the_tools_point_not_where_it_was_told(tmp_path):
    run = run_reader(CarefulReader(ARTICLE_TERMS, before=10, limit=50), tmp_path, moved_corpus("d07"))
    assert _names(careful_policy(Seen(run.messages[:6]), ARTICLE_TERMS, before=10, limit=50)) == [
        ("read_evidence", {"doc_id": "d07", "offset": 4311, "limit": 50})]


def test_the_instruction_follower_obeys_once_then_falls_back_to_the_careful_policy(tmp_path):
    from evidence_lib.course.tasks import run_setting

    run = run_setting(InstructionFollower, "instruction_from_evidence", tmp_path)
    obeyed = [s for s in steps(run.messages) if s.args == {"term": "admin password"}]
    assert len(obeyed) == 1 and parse_answer(run.result.answer).citations[0].doc_id == "d03"


# -- the loop's stop rules ---------------------------------------------------------------------------------------
def _refused(reason: str) -> Step:
    return Step(task=1, call_index=2, position=0, call_id="c", name="read_evidence", args={}, kind="error",
                error="budget_exhausted", reason=reason)


@pytest.mark.parametrize(("reasons", "idle", "expected"), [
    ((), 0, None),
    ((), 2, None),
    ((), 3, "no_new_evidence"),
    (("calls",), 0, "budget_exhausted"),
    (("tokens",), 5, "budget_exhausted"),
    (("refusals", "calls"), 0, "refusal_cap"),
    (("reads_per_doc",), 0, None),  # one document closed: the task can go on with others
    (("calls_per_message",), 1, None),
])
def test_stop_rule(reasons, idle, expected):
    assert stop_rule([_refused(r) for r in reasons], idle, LoopRules()) == expected


def test_stop_rule_follows_the_idle_limit_of_the_rules():
    assert stop_rule([], 1, LoopRules(max_idle_rounds=1)) == "no_new_evidence"
    assert stop_rule([], 9, LoopRules(max_idle_rounds=10)) is None


# -- the eval's rule for "answered" ------------------------------------------------------------------------------
def _previous_citable(corpus: EvidenceIndex, item: Mapping[str, Any], seen: Sequence[Excerpt]) -> Citation | None:
    """evidence_lib.eval._flows.citable as it was before issue 18 (commit c4cbccd), the reference."""
    mine = sorted((x for x in seen if x.doc_id == item["doc_id"]), key=lambda x: (x.start, x.end))
    merged: list[list[Any]] = []
    for x in mine:
        if merged and x.start <= merged[-1][1] and (x.revision, x.sha256) == tuple(merged[-1][2:]):
            merged[-1][1] = max(merged[-1][1], x.end)
        else:
            merged.append([x.start, x.end, x.revision, x.sha256])
    reads = [ReadRecord(x.doc_id, x.revision, x.start, x.end, x.sha256) for x in mine]
    for s, e, rev, sha in merged:
        if s <= item["start"] and item["end"] <= e:
            cite = Citation(item["doc_id"], rev, s, e, sha)
            if verify_citation(corpus, cite, reads).ok:
                return cite
    return None


def _doc():
    corpus = EvidenceIndex.in_memory(article_corpus())
    entry = corpus.entry("d03")
    return corpus, entry


def test_shown_ranges_merge_touching_excerpts_of_the_same_bytes_only():
    corpus, e = _doc()
    text = corpus.text("d03", None, 0, e.chars)
    a = Excerpt("d03", e.revision, 4300, 4330, e.sha256, text[4300:4330])
    b = Excerpt("d03", e.revision, 4330, 4339, e.sha256, text[4330:4339])
    other = Excerpt("d03", e.revision, 4339, 4350, "0" * 64, "x")
    assert shown_ranges("d03", [b, a, other]) == [(4300, 4339, e.revision, e.sha256),
                                                  (4339, 4350, e.revision, "0" * 64)]
    assert shown_ranges("d07", [a, b]) == []


def test_answer_citation_needs_the_whole_span_shown_and_the_bytes_verified():
    corpus, e = _doc()
    text = corpus.text("d03", None, 0, e.chars)
    item = {"doc_id": "d03", "start": 4321, "end": 4339}
    page = Excerpt("d03", e.revision, 4300, 4339, e.sha256, text[4300:4339])
    assert answer_citation(corpus, item, [page]) == Citation("d03", e.revision, 4300, 4339, e.sha256)
    handle = Excerpt("d03", e.revision, 4321, 4339, "#" + e.sha256[:6], text[4321:4339])
    assert answer_citation(corpus, item, [handle]).sha256 == "#" + e.sha256[:6]
    half = Excerpt("d03", e.revision, 4300, 4330, e.sha256, text[4300:4330])
    assert answer_citation(corpus, item, [half]) is None  # the span is not all shown
    rest = Excerpt("d03", e.revision, 4330, 4339, e.sha256, text[4330:4339])
    assert answer_citation(corpus, item, [half, rest]) is not None  # together they show it
    stale = Excerpt("d03", "2026-01-01", 4300, 4339, e.sha256, text[4300:4339])
    wrong = Excerpt("d03", e.revision, 4300, 4339, "#000000", text[4300:4339])
    assert answer_citation(corpus, item, [stale]) is None and answer_citation(corpus, item, [wrong]) is None
    for shown in ([page], [handle], [half], [half, rest], [stale], [wrong], [page, wrong], []):
        assert answer_citation(corpus, item, shown) == _previous_citable(corpus, item, shown)


@pytest.mark.parametrize(("corpus_name", "qa", "committed"), [
    ("pydoc", "pydoc_qa.json", "eval_pydoc.json"),
    ("zh_corpus", "zh_qa.json", "eval_zh.json"),
])
def test_the_eval_gives_the_committed_results_and_every_check_matches_the_previous_rule(monkeypatch, corpus_name,
                                                                                      qa, committed):
    """Every excerpt list the eval checks gets the answer the previous ``citable`` gave, and the flows that need no
    optional extra reproduce bench/results/eval_*.json per question, with both choosers."""
    checked = []

    def both(corpus, item, shown):
        new = answer_citation(corpus, item, shown)
        assert new == _previous_citable(corpus, item, shown), item["id"]
        checked.append(new is not None)
        return new

    monkeypatch.setattr(flows, "answer_citation", both)
    name, docs = load_corpus("pydoc" if corpus_name == "pydoc" else str(data_path(corpus_name)))
    items = load_qa(data_path(qa), docs)
    result = json.loads((ROOT / "bench" / "results" / committed).read_text(encoding="utf-8"))
    live = ("dump_top5", "article", "compact", "no_help")
    for chooser, run in (("oracle", result), ("overlap", result["by_chooser"]["overlap"])):
        now = evaluate(name, docs, items, flows=live, chooser=chooser)
        for flow in live:
            assert now["flows"][flow] == run["flows"][flow], (chooser, flow)
            assert now["per_question"][flow] == run["per_question"][flow], (chooser, flow)
    assert any(checked) and not all(checked)  # both outcomes were exercised


# -- what the notebooks show -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["08_real-documents.ipynb", "09_agent-loop.ipynb"])
def test_the_notebook_imports_and_prints_no_private_code(name):
    cells = json.loads((ROOT / "notebooks" / name).read_text(encoding="utf-8"))["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    imports = re.findall(r"^\s*from\s+evidence_lib[\w.]*\s+import\s+\(?([^)\n]+)", code, flags=re.M)
    private = [n.strip() for line in imports for n in line.split(",") if n.strip().startswith("_")]
    assert not private, private
    assert not re.search(r"evidence_lib[\w.]*\._\w", code), "a private module or name is used"
    shown = re.findall(r"getsource\(([^)]*)\)", code)
    assert shown and not [s for s in shown if re.search(r"(^|\.)_", s)], shown
    assert not [s for s in shown if s.endswith("run_loop")], "the loop's plumbing is not the lesson"
    assert "evidence_lib.eval._flows" not in code, "the eval's check is imported from evidence_lib.eval"
