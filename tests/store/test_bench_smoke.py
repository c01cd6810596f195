"""The store benchmark's quick mode runs and writes what the notebook reads (speed itself is measured in bench/)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_store_quick_writes_json_and_plot_with_every_target(tmp_path):
    out = tmp_path / "store.json"
    env = {k: v for k, v in os.environ.items() if k != "EVIDENCE_PG_DSN"}  # SQLite and scan only: a smoke run
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_store.py"), "--quick", "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    assert out.with_suffix(".png").stat().st_size > 0
    assert result["parameters"]["methods"] == ["scan", "sqlite"]
    assert [r["docs"] for r in result["corpus"]] == [12, 60]
    for row in result["corpus"]:
        assert row["scan"]["locate"]["hits"] == row["sqlite"]["locate"]["hits"] >= 1  # same answers
    assert set(result["targets"]["sqlite"]) == {"locate_speedup_vs_scan_p50", "read_p50_ratio_largest_to_smallest_doc",
                                                "worker_peak_rss_mib"}
