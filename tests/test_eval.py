"""The evaluation CLI: refusals that name the item, the output format, and flows measured with the same help."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evidence_lib.eval._run import QAError, evaluate, load_corpus, load_qa, summarize
from evidence_lib.retrieval import pydoc_corpus

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "evidence_lib" / "eval" / "data"
FLOW_KEYS = {"answered", "questions", "median_bytes", "p90_bytes", "median_tokens", "p90_tokens", "median_calls",
             "help", "proves", "chooser", "bytes_by_tool"}


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "evidence_lib", "eval", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT)


def test_a_span_that_does_not_match_the_corpus_is_an_error_naming_the_item(tmp_path):
    items = json.loads((DATA / "zh_qa.json").read_text(encoding="utf-8"))
    items[3] = {**items[3], "start": items[3]["start"] + 1}
    qa = tmp_path / "qa.json"
    qa.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    proc = _cli("--corpus", str(DATA / "zh_corpus"), "--qa", str(qa), "--out", str(tmp_path / "out.json"))
    assert proc.returncode == 2 and items[3]["id"] in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out.json").exists()


def test_a_corpus_hash_mismatch_is_refused(tmp_path):
    data = json.loads((DATA / "pydoc_qa.json").read_text(encoding="utf-8"))
    data["corpus_sha256"] = "0" * 64
    qa = tmp_path / "qa.json"
    qa.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(QAError, match="corpus_sha256"):
        load_qa(qa, pydoc_corpus())


def test_unreadable_qa_files_and_unknown_flows_get_clear_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    proc = _cli("--corpus", "pydoc", "--qa", str(bad), "--out", str(tmp_path / "o.json"))
    assert proc.returncode == 2 and "cannot read a JSON QA file" in proc.stderr
    proc = _cli("--corpus", "pydoc", "--qa", str(DATA / "pydoc_qa.json"), "--out", str(tmp_path / "o.json"),
                "--flows", "magic")
    assert proc.returncode == 2 and "unknown flow" in proc.stderr


def test_the_cli_on_a_chinese_folder_corpus_writes_every_flow_and_every_question(tmp_path):
    out = tmp_path / "out.json"
    proc = _cli("--corpus", str(DATA / "zh_corpus"), "--qa", str(DATA / "zh_qa.json"), "--out", str(out),
                "--flows", "dump_top5,article,compact,no_help")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text(encoding="utf-8"))
    n = len(json.loads((DATA / "zh_qa.json").read_text(encoding="utf-8")))
    assert set(result["flows"]) == {"dump_top5", "article", "compact", "no_help"}
    for flow, summary in result["flows"].items():
        assert FLOW_KEYS <= set(summary) and summary["questions"] == n
        assert len(result["per_question"][flow]) == n
    assert result["flows"]["compact"]["answered"] == n  # two-character Chinese terms included
    assert result["flows"]["compact"]["median_bytes"] < result["flows"]["dump_top5"]["median_bytes"]


def test_answered_means_a_citation_built_from_tool_output_verified():
    name, docs = load_corpus(str(DATA / "zh_corpus"))
    items = load_qa(DATA / "zh_qa.json", docs)[:3]
    wrong = [{**i, "locate_term": "不存在的词"} for i in items]  # a term that locates nothing: nothing to cite
    result = evaluate(name, docs, wrong, flows=("compact",))
    assert result["flows"]["compact"]["answered"] == 0
    assert all(r["calls_until_answer"] == len(r["calls"]) for r in result["per_question"]["compact"])


def test_bytes_count_only_up_to_the_call_that_made_the_answer_citable():
    name, docs = load_corpus(str(DATA / "zh_corpus"))
    items = load_qa(DATA / "zh_qa.json", docs)[:5]
    for r in evaluate(name, docs, items, flows=("article",))["per_question"]["article"]:
        upto = r["calls"][: r["calls_until_answer"]]
        assert r["bytes"] == sum(c["utf8_bytes"] for c in upto) and len(r["calls"]) <= 10


def test_p90_is_linear_interpolation():
    runs = [{"answered": True, "bytes": b, "tokens": b, "calls_until_answer": 1} for b in range(1, 11)]
    s = summarize(runs, "article")
    assert (s["median_bytes"], s["p90_bytes"]) == (5.5, 9.1)


def test_the_committed_benchmark_meets_the_targets_against_deep_agents():
    result = json.loads((ROOT / "bench" / "results" / "eval_pydoc.json").read_text(encoding="utf-8"))
    assert result["questions"] >= 40 and "deepagents" in result["flows"], "run `make bench-eval` to regenerate"
    assert all(v is True for k, v in result["targets"].items() if k.endswith(("many", "0.7x", "deepagents", "0.5x")))


@pytest.mark.parametrize("name", ["eval_pydoc.json", "eval_zh.json"])
def test_the_committed_benchmarks_hold_both_choosers_and_both_deep_agents_flows(name):
    """Issue 17 items 1 and 2: the oracle run keeps the first version's keys; the overlap run of the same flows is
    added under by_chooser; both Deep Agents flows ran; every flow says where its bytes went, per tool."""
    result = json.loads((ROOT / "bench" / "results" / name).read_text(encoding="utf-8"))
    assert result["chooser"] == "oracle" and set(result["by_chooser"]) == {"overlap"}
    overlap = result["by_chooser"]["overlap"]
    assert overlap["chooser"] == "overlap" and set(overlap["flows"]) == set(result["flows"])
    for run in (result, overlap):
        assert {"deepagents", "deepagents_default"} <= set(run["flows"]) and not run["skipped"]
        for flow, summary in run["flows"].items():
            assert FLOW_KEYS <= set(summary) and summary["chooser"] == run["chooser"], flow
            assert len(run["per_question"][flow]) == result["questions"]
    assert "handed the answer's doc_id" in result["flows"]["compact"]["help"]
    assert "handed the answer's doc_id" not in overlap["flows"]["compact"]["help"]
