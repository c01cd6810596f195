"""The parallel-reads benchmark's smoke run (a tiny latency, one repeat): it runs end to end on every backend it can
reach, and its JSON says what notebook cells and item 21's targets need. Time is not asserted (benchmarks, not timed
tests): only that every case ran, read its four pages, and never overspent a budget of two calls."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langchain.agents", reason="the agents extra (make setup installs it)")

ROOT = Path(__file__).resolve().parents[1]


def test_bench_parallel_reads_runs_every_case_within_its_budget(tmp_path):
    out = tmp_path / "parallel_reads.json"
    subprocess.run([sys.executable, str(ROOT / "bench" / "bench_parallel_reads.py"), "--out", str(out),
                    "--latency", "0.01", "--repeats", "1"], check=True, capture_output=True, timeout=600)
    doc = json.loads(out.read_text(encoding="utf-8"))
    backends = {"memory", "sqlite"} | ({"postgres"} if "postgres" in doc["backends"] else set())
    cases = {"create_agent, index"} | {f"{how}, {b}" for how in ("create_agent", "middleware") for b in backends}
    assert set(doc["median_seconds"]) == set(doc["within_target"]) == set(doc["budget_max_calls_2"]) == cases
    assert all(check == {"max_calls": 2, "charged": 2, "overspent": 0} for check in doc["budget_max_calls_2"].values())
    assert doc["reads"] == 4 and doc["target_seconds"] == 0.35
