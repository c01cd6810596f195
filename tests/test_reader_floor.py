"""Issue 33's physical floor (the answer span with its citation line) and what bench/eval_compare.py reports of it;
the compare script's reuse of committed Deep Agents rows for a set whose corpus and questions did not change."""

from __future__ import annotations

import importlib.util
import json
import statistics
from pathlib import Path

import pytest

from evidence_lib import parse_answer
from evidence_lib.eval._answered import physical_floor
from evidence_lib.eval._run import evaluate, load_corpus, load_qa

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "evidence_lib" / "eval" / "data"


def _compare():
    spec = importlib.util.spec_from_file_location("_eval_compare", ROOT / "bench" / "eval_compare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_physical_floor_is_the_sources_line_that_cites_the_answer_span():
    """The line the answer format writes (quote escaped as JSON) and nothing else: it parses back to the span."""
    span = 'When "break" passes control\nout of a "try"'
    item = {"doc_id": "break", "start": 404, "end": 404 + len(span), "answer_span": span}
    line = f'[1] break@3.11 [404, {404 + len(span)}) "When \\"break\\" passes control\\nout of a \\"try\\""'
    assert physical_floor(item, "3.11") == len(line.encode("utf-8"))
    cited = parse_answer("x [1]\n\nSources:\n" + line).citations[0]
    assert (cited.doc_id, cited.start, cited.end, cited.quote) == ("break", item["start"], item["end"], span)
    chinese = {**item, "answer_span": "单批上限为200条。", "end": 404 + 10}
    assert physical_floor(chinese, "r1") == len('[1] break@r1 [404, 414) "单批上限为200条。"'.encode())


def test_the_eval_reports_each_flows_median_bytes_over_the_sets_median_floor():
    name, docs = load_corpus(str(DATA / "zh_corpus"))
    items = load_qa(DATA / "zh_qa.json", docs)[:7]
    result = evaluate(name, docs, items, flows=("compact", "article"))
    by_id = {d.doc_id: d for d in docs}
    floor = statistics.median(physical_floor(i, by_id[i["doc_id"]].revision) for i in items)
    assert result["physical_floor"]["median_bytes"] == floor and "Sources line" in result["physical_floor"]["what"]
    for summary in result["flows"].values():
        assert summary["median_bytes_over_floor"] == round(summary["median_bytes"] / floor, 2)
    assert result["flows"]["compact"]["median_bytes_over_floor"] < result["flows"]["article"]["median_bytes_over_floor"]


def _file(chooser_runs: dict, **extra) -> dict:
    """A result file as the compare script writes it: the oracle run on top, the overlap run under by_chooser."""
    oracle, overlap = chooser_runs["oracle"], chooser_runs["overlap"]
    return {"corpus_sha256": "c0ffee", "qa_sha256": "qa1", "chooser": "oracle", "physical_floor": {"median_bytes": 100},
            **oracle, "by_chooser": {"overlap": {"chooser": "overlap", **overlap}}, **extra}


def _run(flows: dict, ids=("q1", "q2")) -> dict:
    summaries = {f: {"answered": a, "questions": 2, "median_bytes": b, "median_tokens": b // 4, "p90_bytes": 2 * b}
                 for f, (a, b) in flows.items()}
    return {"flows": summaries, "skipped": {}, "targets": {},
            "per_question": {f: [{"id": i, "bytes": b} for i in ids] for f, (_, b) in flows.items()}}


def test_reusing_deep_agents_keeps_their_committed_rows_and_says_so():
    compare = _compare()
    committed = _file({c: _run({"compact": (1, 900), "deepagents": (1, 1000), "deepagents_default": (0, 3000)})
                       for c in ("oracle", "overlap")}, deepagents_version="0.9", deepagents_grep_engine="ripgrep",
                      deepagents_runs={"runs": 3},
                      deepagents_python_grep={c: {"flows": {"compact": {}, "deepagents": {
                          "answered": 2, "questions": 2, "median_bytes": 800, "median_tokens": 200, "p90_bytes": 900}}}
                          for c in ("oracle", "overlap")})
    fresh = _file({c: _run({"article": (2, 5000), "compact": (2, 300)}) for c in ("oracle", "overlap")})
    compare.reuse_deepagents(fresh, committed, "eval_x.json")
    for run in (fresh, fresh["by_chooser"]["overlap"]):
        assert list(run["flows"]) == ["article", "compact", "deepagents", "deepagents_default"]
        assert run["flows"]["deepagents"]["median_bytes"] == 1000 and run["flows"]["compact"]["median_bytes"] == 300
        assert run["flows"]["deepagents"]["median_bytes_over_floor"] == 10.0
        assert list(run["per_question"]) == list(run["flows"]) and run["targets"]["answered_at_least_as_many"]
        assert [r["bytes"] for r in run["per_question"]["compact"]] == [300, 300]  # this run's, not the committed
        assert [r["bytes"] for r in run["per_question"]["deepagents"]] == [1000, 1000]
    assert (fresh["deepagents_version"], fresh["deepagents_runs"]) == ("0.9", {"runs": 3})
    grep = fresh["deepagents_python_grep"]["oracle"]
    assert grep["flows"]["compact"]["median_bytes"] == 300 and grep["targets"]["median_bytes_ratio"] == 0.375
    assert "eval_x.json" in fresh["deepagents_reused"]["from"]
    rows = compare.floor_table({"x": fresh}).splitlines()
    assert rows[0].split() == ["set", "chooser", "flow", "median", "B", "floor", "B", "median", "B", "/", "floor"]
    assert any(r.split()[:3] == ["x", "overlap", "deepagents"] and r.endswith("10.00x") for r in rows[1:])


@pytest.mark.parametrize("change", [{"corpus_sha256": "other"}, {"qa_sha256": "qa2"}])
def test_reusing_deep_agents_refuses_a_file_made_from_another_corpus_or_qa_file(change):
    compare = _compare()
    committed = _file({c: _run({"deepagents": (1, 1000)}) for c in ("oracle", "overlap")}, **change)
    fresh = _file({c: _run({"compact": (2, 300)}) for c in ("oracle", "overlap")})
    with pytest.raises(SystemExit, match="another corpus or QA file"):
        compare.reuse_deepagents(fresh, committed, "eval_x.json")


def test_reusing_deep_agents_checks_the_question_ids_where_the_file_has_no_qa_hash():
    compare = _compare()
    committed = _file({c: _run({"deepagents": (1, 1000)}, ids=("q1", "q9")) for c in ("oracle", "overlap")})
    del committed["qa_sha256"]
    fresh = _file({c: _run({"compact": (2, 300)}) for c in ("oracle", "overlap")})
    with pytest.raises(SystemExit):
        compare.reuse_deepagents(fresh, committed, "eval_x.json")
    committed = json.loads(json.dumps(committed).replace('"q9"', '"q2"'))
    compare.reuse_deepagents(fresh, committed, "eval_x.json")
    assert "deepagents" in fresh["flows"]
