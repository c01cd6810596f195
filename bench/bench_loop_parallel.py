#!/usr/bin/env python3
"""Parallel read-only calls in ``run_loop`` (notebook 09): wall-clock seconds of one message of four reads from a
source whose every document read blocks for a real 0.3 s (:class:`~evidence_lib.integrations.langchain._loop.SlowIndex`, a remote
store's round trip), run sequentially and in parallel, several times; medians and their ratio.

Before issue 6 the tool bodies ran one at a time even "in parallel" (1.28 s against 1.25 s): only an injected
latency hook overlapped. Since issue 31 the calls themselves run in threads (the ledger decides, the page is fetched
outside its lock, the charge is re-checked under it). Tests prove the concurrency as behaviour
(``tests/test_loop_parallel.py``: a gated source holds readers until they are all inside, and the replies match a
sequential run's); time lives here, and ``bench/bench_parallel_reads.py`` measures the same through ``create_agent``
and the middleware on every store backend. Results: bench/results/loop_parallel.json.

    .venv/bin/python bench/bench_loop_parallel.py [--reads 4] [--latency 0.3] [--repeats 7] [--out ...]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

from langchain_core.messages import AIMessage

from evidence_lib import Budget, EvidenceIndex, Ledger, evidence_tools
from evidence_lib.course.article import article_corpus
from evidence_lib.course.readers import ScriptedChatModel
from evidence_lib.course.slow import SlowIndex
from evidence_lib.integrations.langchain._loop import LoopRules, run_loop

OUT = Path(__file__).resolve().parent / "results" / "loop_parallel.json"


def reads(n: int) -> list[dict]:
    """``n`` reads of the answer's neighbourhood in ``n`` different documents, in one message."""
    return [{"name": "read_evidence", "args": {"doc_id": f"d{i + 1:02}", "offset": 4321, "limit": 60},
             "id": f"p{i}"} for i in range(n)]


def one_run(index: EvidenceIndex, n: int, latency: float, parallel: bool) -> tuple[float, list[tuple[str, str]]]:
    """Seconds for the whole loop (two model turns, ``n`` reads), and the replies to compare."""
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=reads(n)), AIMessage(content="done")])
    tools = evidence_tools(SlowIndex(index, latency), ledger=Ledger(Budget()))
    start = time.perf_counter()
    result = run_loop(model, tools, "q", parallel=parallel, rules=LoopRules(max_workers=n))
    took = time.perf_counter() - start
    return took, [(m.tool_call_id, m.content) for m in result.tool_messages]


def measure(n: int, latency: float, repeats: int) -> dict:
    """Alternate sequential and parallel runs ``repeats`` times each; medians and the ratio."""
    with tempfile.TemporaryDirectory() as tmp:
        index = EvidenceIndex.build(article_corpus(), tmp)
        seconds: dict[str, list[float]] = {"sequential": [], "parallel": []}
        replies: dict[str, list] = {}
        for _ in range(repeats):
            for mode in ("sequential", "parallel"):
                took, replies[mode] = one_run(index, n, latency, mode == "parallel")
                seconds[mode].append(round(took, 4))
    medians = {mode: round(statistics.median(s), 4) for mode, s in seconds.items()}
    return {
        "what": f"run_loop, one message of {n} read_evidence calls, each document read blocking {latency} s "
                "(SlowIndex over the article corpus); wall-clock seconds of the whole loop",
        "reads": n, "latency_seconds": latency, "repeats": repeats, "max_workers": n,
        "seconds": seconds, "median_seconds": medians,
        "ratio": round(medians["parallel"] / medians["sequential"], 3),
        "same_replies": replies["parallel"] == replies["sequential"],
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "langchain_core": version("langchain-core")},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reads", type=int, default=4)
    ap.add_argument("--latency", type=float, default=0.3)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    report = measure(a.reads, a.latency, a.repeats)
    a.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: report[k] for k in ("median_seconds", "ratio", "same_replies")}))


if __name__ == "__main__":
    main()
