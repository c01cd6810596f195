"""The offload benchmark's smoke run (no peers): it runs end to end and its JSON says what the targets need."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langchain.agents", reason="the agents extra (make setup installs it)")

ROOT = Path(__file__).resolve().parents[1]


def test_bench_offload_runs_the_middleware_and_no_offload_on_the_four_tasks(tmp_path):
    out = tmp_path / "offload.json"
    subprocess.run([sys.executable, str(ROOT / "bench" / "bench_offload.py"), "--out", str(out),
                    "--setups", "none,evidence"], check=True, capture_output=True, timeout=600)
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert set(doc["tasks"]) == {"log", "json", "web", "sql"} and out.with_suffix(".png").stat().st_size > 0
    for name, row in doc["tasks"].items():
        ev, none = row["evidence"], row["none"]
        assert ev["verified"] is True and none["verified"] is None and none["visible"] is True, name
        assert ev["total_context"]["cl100k_tokens"] < none["total_context"]["cl100k_tokens"] / 10, name
        assert ev["after_ttl"] == ev["other_principal"] == "unknown_doc_id", name
        assert ev["after_ttl_same_as_never_issued"] and ev["other_principal_same_as_never_issued"], name
        for setup in (ev, none):  # messages only (issue 25) beside the total with the tool schemas, per call too
            assert 0 < setup["messages_only"]["cl100k_tokens"] <= setup["total_context"]["cl100k_tokens"], name
            assert len(setup["messages_only_per_call"]) == setup["model_calls"] == len(setup["context_per_call"])
        assert all(row[p] == {"skipped": "not asked for (--setups)"} for p in ("deepagents", "strands", "pydantic_ai",
                                                                                "haystack")), name
        t = doc["targets"][name]
        assert t["verified_citation"]["met"] and t["reads_after_ttl"]["met"] and t["foreign_reads"]["met"], name
