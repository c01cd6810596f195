"""The store benchmark's quick mode runs and writes what the notebook reads (speed itself is measured in bench/)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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
        for short in ("locate_short", "locate_1char", "locate_1char_common"):  # issue 17 item 5: timed on both
            assert row["scan"][short]["hits"] == row["sqlite"][short]["hits"], short
        assert row["sqlite"]["locate_1char"]["hits"] >= 1 and row["sqlite"]["gram_index_bytes"] > 0
    last = result["corpus"][-1]
    assert last["scan"]["peak_rss_bytes"] != last["sqlite"]["peak_rss_bytes"]  # each worker its own peak
    assert set(result["targets"]["sqlite"]) == {"locate_speedup_vs_scan_p50", "locate_2char_cjk_speedup_vs_scan_p50",
                                                "locate_1char_cjk_speedup_vs_scan_p50",
                                                "read_p50_ratio_largest_to_smallest_doc", "worker_peak_rss_mib"}


def _bench_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("_bench_store_under_test", ROOT / "bench" / "bench_store.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _own_hwm_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM line")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM is Linux's /proc/self/status")
def test_a_worker_reports_its_own_peak_not_its_large_parents(tmp_path):
    """Issue 16 defect 22: each worker's peak RSS is its own. A parent that first holds ~200 MiB must not make
    its worker report ~200 MiB (getrusage's ru_maxrss survives fork and exec; VmHWM belongs to the new process),
    and two workloads report two figures: a scan that reads a 32 MiB document peaks higher than one that does not."""
    from evidence_lib import Document
    from evidence_lib.course.article import article_corpus

    bench = _bench_module()
    small, large = tmp_path / "small", tmp_path / "large"
    small.mkdir()
    large.mkdir()
    bench.build_scan(article_corpus(), 12, small)
    bench.build_scan([*article_corpus(), Document("big", "big", "r1", "x" * (32 << 20))], 13, large)
    spec = {"method": "scan", "locate_reps": 1, "short_reps": 0, "read_reps": 1}
    ballast = b"\x01" * (200 << 20)  # every page touched: the parent's peak is at least 200 MiB
    try:
        parent_peak = _own_hwm_bytes()
        light = bench.measure({**spec, "where": str(small)})["peak_rss_bytes"]
        heavy = bench.measure({**spec, "where": str(large)})["peak_rss_bytes"]
    finally:
        del ballast
    assert parent_peak >= 200 << 20
    assert light < parent_peak - (120 << 20), (light, parent_peak)
    assert heavy >= light + (32 << 20), (heavy, light)
