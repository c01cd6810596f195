#!/usr/bin/env python3
"""Scale benchmark of ``python -m evidence_lib audit`` (notebook 09): seconds against history length.

Builds a long conversation from real loop runs, one run per task, every task's revisions renamed so that no task
sees another's bytes, and writes it as an OpenAI-style history file. One cycle is the careful reader and each
careless reader on the article profile (manifests with previews: about 900 bytes a message), then the same readers
on the compact profile (about 220 bytes a message) :data:`COMPACT_WEIGHT` times over: about 300 bytes a message, so
100,000 messages are about 30 MB, under the audit's 64 MB cap. Then it times what the CLI does with it: read and parse the file
(``load_history``) and build the report (``audit``: steps, the checker, sizes), for several lengths up to 100,000
messages. A linear audit takes about twice as long for twice the messages; before issue 16 (defect 13) the checker
rescanned every earlier step at every step and a 100,000-message history took about 20 minutes.

Tests assert behaviour (``tests/test_agent_trust.py`` checks findings on a long history and that the audit's work
grows linearly); time lives here. Results: bench/results/audit.json.

    .venv/bin/python bench/bench_audit.py [--messages 100000] [--steps 4] [--out bench/results/audit.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

from langchain_core.messages import SystemMessage, convert_to_openai_messages

from evidence_lib.audit._report import audit, load_history
from evidence_lib.course.readers import CARELESS_READERS, CarefulReader
from evidence_lib.course.tasks import run_setting

OUT = Path(__file__).resolve().parent / "results" / "audit.json"
#: How many times a cycle repeats the compact runs for each article run.
COMPACT_WEIGHT = 16


def small_runs(root: Path) -> list[list]:
    """One cycle of tasks (StaleCiter needs two tasks of its own and is left out; the compact ExhaustiveReader too:
    its habit cannot show there)."""
    readers = [CarefulReader, *(r for r in CARELESS_READERS if r.habit != "citation_stale")]
    article = [run_setting(r, r.habit or "duplicate_read", root / "article" / r.__name__).messages for r in readers]
    compact = [run_setting(r, r.habit or "duplicate_read", root / "compact" / r.__name__, profile="compact").messages
               for r in readers if r.habit != "exhaustive_reading"]
    return [convert_to_openai_messages(m[1:]) for m in article + compact * COMPACT_WEIGHT]


def history(runs: list[list], n_messages: int) -> list[dict]:
    """``n_messages`` OpenAI messages: a system prompt, then the runs as tasks, over and over, revisions renamed."""
    out = convert_to_openai_messages([SystemMessage("You answer questions from evidence.")])
    k = 0
    texts = [json.dumps(r, ensure_ascii=False) for r in runs]
    while len(out) < n_messages:
        out += json.loads(texts[k % len(texts)].replace("2026-10-27", f"2026-10-27.{k}"))
        k += 1
    return out[:n_messages]


def measure(runs: list[list], n_messages: int, workdir: Path) -> dict:
    path = workdir / f"history-{n_messages}.json"
    path.write_text(json.dumps(history(runs, n_messages), ensure_ascii=False), encoding="utf-8")
    t0 = time.perf_counter()
    messages, fmt = load_history(path)
    t1 = time.perf_counter()
    report = audit(messages, fmt)
    t2 = time.perf_counter()
    return {"messages": report["messages"], "bytes": path.stat().st_size, "tool_calls": report["tool_calls"],
            "final_answers": report["final_answers"], "findings": len(report["findings"]),
            "load_seconds": round(t1 - t0, 3), "audit_seconds": round(t2 - t1, 3), "seconds": round(t2 - t0, 3)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=100_000, help="the longest history (default 100,000 messages)")
    ap.add_argument("--steps", type=int, default=4, help="lengths measured: messages / 2**k for k < steps")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    sizes = sorted({max(1, args.messages >> k) for k in range(args.steps)})
    with tempfile.TemporaryDirectory(prefix="bench-audit-") as tmp:
        runs = small_runs(Path(tmp) / "runs")
        rows = []
        for n in sizes:
            row = measure(runs, n, Path(tmp))
            rows.append(row)
            print(f"{row['messages']:>8,} messages {row['bytes'] / 1e6:>7.1f} MB  load {row['load_seconds']:>6.2f} s  "
                  f"audit {row['audit_seconds']:>6.2f} s  findings {row['findings']:,}", file=sys.stderr)
    largest = rows[-1]
    result = {
        "what": "python -m evidence_lib audit on an OpenAI-style history built from real loop runs: load + audit",
        "messages": largest["messages"], "seconds": largest["seconds"], "bytes": largest["bytes"],
        "scaling": rows,
        "seconds_per_1000_messages": [round(1000 * r["seconds"] / r["messages"], 4) for r in rows],
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "langchain_core": version("langchain-core")},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out.name}: {largest['messages']:,} messages in {largest['seconds']:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
