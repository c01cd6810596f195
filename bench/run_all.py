#!/usr/bin/env python3
"""Benchmarks: sizes and speeds of the protocol, written as JSON to bench/results/.

Tests assert behaviour; wall time lives here. Run with `make bench`. Timings depend on the
machine, so the JSON records the Python and library versions next to every number.
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

from evidence_lib import Budget, Document, EvidenceIndex, Ledger, evidence_tools, run_tool_call, tool_call
from evidence_lib.course.article import article_corpus
from evidence_lib.course.experiment import run_article

OUT = Path(__file__).resolve().parent / "results"


def timed(fn, repeat: int = 200) -> dict[str, float]:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return {"median_ms": round(statistics.median(samples) * 1e3, 4),
            "p95_ms": round(sorted(samples)[int(0.95 * len(samples)) - 1] * 1e3, 4), "repeat": repeat}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    article = run_article()
    with tempfile.TemporaryDirectory() as tmp:
        index = EvidenceIndex.build(article_corpus(), Path(tmp) / "article")
        tools = evidence_tools(index)
        search, locate, read = tools
        big = [Document(f"b{i:04}", f"doc {i}", "r1", article_corpus()[i % 12].text) for i in range(500)]
        big_index = EvidenceIndex.build(big, Path(tmp) / "big")
        big_locate = evidence_tools(big_index)[1]
        results = {
            "environment": {"python": platform.python_version(), "machine": platform.machine(),
                            "langchain_core": version("langchain-core"), "evidence_lib": version("evidence-lib")},
            "sizes": {k: article[k] for k in article if k.endswith(("_bytes", "_tokens", "_percent"))},
            "speed": {
                "search_evidence (12 docs)": timed(lambda: search.invoke({"query": "批处理上限"})),
                "locate_evidence (12 docs, hash-checked)": timed(lambda: locate.invoke({"term": "单批上限"})),
                "locate_evidence (500 docs, miss)": timed(lambda: big_locate.invoke({"term": "不存在的词"}), repeat=20),
                "read_evidence (800 chars)": timed(lambda: read.invoke({"doc_id": "d03", "limit": 800})),
                "run_tool_call refusal": timed(lambda: run_tool_call(tools, tool_call(
                    "read_evidence", {"doc_id": "../x"}, "c1"))),
                "read with ledger (800 chars)": timed(lambda: evidence_tools(index, ledger=Ledger(Budget()))[2]
                                                      .invoke({"doc_id": "d03", "limit": 800})),
            },
        }
    path = OUT / "bench.json"
    path.write_text(json.dumps(results, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    json.dump(results, sys.stdout, ensure_ascii=False, indent=2)
    print(f"\nwrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
