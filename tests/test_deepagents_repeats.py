"""Deep Agents over ripgrep, reported as the median of three runs with the spread (issue 33, item 6)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evidence_lib.course.eval_tables import every_set_table
from evidence_lib.eval import _deepagents_flow as deepagents_flow
from evidence_lib.eval._deepagents_flow import RIPGREP_RUNS, median_summary

ROOT = Path(__file__).resolve().parents[1]


def _summary(answered, median_bytes, grep_bytes):
    return {"answered": answered, "questions": 10, "median_bytes": median_bytes, "p90_bytes": 2 * median_bytes,
            "median_tokens": median_bytes // 4, "p90_tokens": median_bytes // 2, "median_calls": 3,
            "picked_answer_first": answered - 1, "help": "grep, then read", "proves": "visible", "chooser": "oracle",
            "bytes_by_tool": {"grep": {"median_bytes": grep_bytes, "median_tokens": 10, "questions": 10}}}


def test_three_runs_report_the_median_of_each_figure_and_its_spread():
    runs = [_summary(7, 900, 500), _summary(9, 700, 400), _summary(8, 1_000, 450)]
    got = median_summary(runs)
    assert (got["answered"], got["median_bytes"], got["p90_bytes"], got["picked_answer_first"]) == (8, 900, 1_800, 7)
    assert got["bytes_by_tool"]["grep"]["median_bytes"] == 450  # nested figures too
    assert got["spread"]["answered"] == [7, 9] and got["spread"]["median_bytes"] == [700, 1_000]
    assert got["runs"] == 3 and got["help"] == "grep, then read" and got["questions"] == 10


def test_one_run_is_reported_as_it_is_without_a_spread():
    one = _summary(7, 900, 500)
    got = median_summary([one])
    assert got == {**one, "runs": 1}


def test_the_engine_decides_the_number_of_runs(monkeypatch):
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # no rg: Deep Agents' Python grep
    if shutil.which("rg"):
        pytest.skip("rg sits beside this interpreter")
    assert (deepagents_flow.grep_engine(), deepagents_flow.repeats()) == ("python", 1)
    if rg := shutil.which("rg", path=os.defpath + ":/usr/bin:/usr/local/bin"):
        monkeypatch.setenv("PATH", str(Path(rg).parent))
        assert (deepagents_flow.grep_engine(), deepagents_flow.repeats()) == ("ripgrep", RIPGREP_RUNS)


def test_the_table_says_deep_agents_rows_are_medians_and_gives_the_answered_spread():
    da = {**_summary(8, 900, 450), "runs": 3, "spread": {"answered": [7, 9]}}
    result = {"chooser": "oracle", "documents": 3, "questions": 10, "deepagents_grep_engine": "ripgrep",
              "deepagents_runs": {"grep_engine": "ripgrep", "runs": 3},
              "flows": {"compact": _summary(9, 300, 0), "deepagents": da}}
    table = every_set_table({"s": result})
    assert "Deep Agents rows: median of 3 runs (answered min-max: deepagents oracle 7-9)" in table


@pytest.mark.skipif(not deepagents_flow.available() or not shutil.which("rg"), reason="needs deepagents and rg")
def test_the_eval_runs_deep_agents_three_times_over_ripgrep_and_says_so(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    text = "Retries: the client retries a failed upload up to 5 times.\n" + "filler line\n" * 50
    (corpus / "guide.txt").write_text(text, encoding="utf-8")
    (corpus / "other.txt").write_text("retries are logged\n" * 30, encoding="utf-8")
    span = "the client retries a failed upload up to 5 times."
    qa = tmp_path / "qa.json"
    qa.write_text(json.dumps([{"id": "q", "question": "How often does the client retry?", "doc_id": "guide",
                               "answer_span": span, "start": text.index(span), "end": text.index(span) + len(span),
                               "locate_term": "retries"}]), encoding="utf-8")
    out = tmp_path / "out.json"
    subprocess.run([sys.executable, "-m", "evidence_lib", "eval", "--corpus", str(corpus), "--qa", str(qa),
                    "--out", str(out), "--flows", "deepagents,compact"], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["deepagents_runs"]["runs"] == 3 and "median" in result["deepagents_runs"]["reported"]
    da = result["flows"]["deepagents"]
    assert da["runs"] == 3 and da["spread"]["answered"][0] <= da["answered"] <= da["spread"]["answered"][1]
    assert result["flows"]["compact"].get("runs") is None and len(result["per_question"]["deepagents"]) == 1
