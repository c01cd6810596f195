"""The ``eval`` subcommand: load, check, run, write, and print a one-screen summary."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .run import FLOWS, QAError, evaluate, load_corpus, load_qa, targets


def main(args) -> int:
    flows = tuple(f.strip() for f in args.flows.split(",")) if args.flows else FLOWS
    unknown = [f for f in flows if f not in FLOWS]
    if unknown:
        print(f"error: unknown flow(s) {', '.join(unknown)}; choose from {', '.join(FLOWS)}", file=sys.stderr)
        return 2
    try:
        name, docs = load_corpus(args.corpus, args.revision)
        items = load_qa(args.qa, docs)
    except (QAError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    def progress(flow: str, done: int, total: int) -> None:
        if done == total or done % 10 == 0:
            print(f"  {flow}: {done}/{total}", file=sys.stderr, flush=True)

    result = evaluate(name, docs, items, flows, progress=progress)
    result["targets"] = targets(result)
    Path(args.out).write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{name}: {len(docs)} documents, {len(items)} questions -> {args.out}")
    print(f"{'flow':<11} {'answered':>9} {'median B':>9} {'p90 B':>9} {'median tok':>10} {'p90 tok':>8} {'calls':>6}")
    for flow, s in result["flows"].items():
        print(f"{flow:<11} {s['answered']:>4}/{s['questions']:<4} {s['median_bytes']:>9,.0f} {s['p90_bytes']:>9,.0f} "
              f"{s['median_tokens']:>10,.0f} {s['p90_tokens']:>8,.0f} {s['median_calls']:>6}")
    for flow, why in result["skipped"].items():
        print(f"{flow:<11} skipped: {why}")
    if result["targets"]:
        print("targets:", json.dumps(result["targets"]))
    return 0
