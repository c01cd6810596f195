"""The ``eval`` subcommand: load, check, run, write, and print a one-screen summary."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .._lines import text_line, token
from ._flows import DEFAULT_CHOOSER
from ._run import FLOWS, QAError, evaluate, load_corpus, load_qa, targets

__all__ = ["main", "out_problem", "refuse"]


def refuse(message: str) -> int:
    """Print ``error: <message>`` as one escaped line on stderr and return the exit code 2."""
    print(f"error: {text_line(message)}", file=sys.stderr)
    return 2


def out_problem(out: str) -> str | None:
    """Why ``--out`` cannot be written (checked before the run, so a long run never fails at its end), or ``None``.

    The path is named by its last components only, never as an absolute path.
    """
    path = Path(out)
    name = token(path.name or out)
    if path.is_dir():
        return f"--out {name} is a folder: give the name of a file to write, e.g. {name}/results.json"
    parent = path.parent
    where = token(parent.name or str(parent))
    if not parent.exists():
        return f"--out {name}: its folder {where} does not exist"
    if not parent.is_dir():
        return f"--out {name}: {where} is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"--out {name}: no permission to write in its folder {where}"
    if path.exists() and not os.access(path, os.W_OK):
        return f"--out {name}: no permission to overwrite it"
    return None


def main(args: argparse.Namespace) -> int:
    flows = tuple(f.strip() for f in args.flows.split(",")) if args.flows else FLOWS
    unknown = [f for f in flows if f not in FLOWS]
    if unknown:
        return refuse(f"unknown flow(s) {', '.join(map(token, unknown))}; choose from {', '.join(FLOWS)}")
    problem = out_problem(args.out)
    if problem:
        return refuse(problem)
    try:
        name, docs = load_corpus(args.corpus, args.revision)
        items = load_qa(args.qa, docs)
    except (QAError, ValueError, OSError) as e:  # every message names files by their name only
        return refuse(str(e) if not isinstance(e, OSError) else f"cannot read the corpus ({e.strerror})")

    def progress(flow: str, done: int, total: int) -> None:
        if done == total or done % 10 == 0:
            print(f"  {flow}: {done}/{total}", file=sys.stderr, flush=True)

    chooser = getattr(args, "chooser", None) or DEFAULT_CHOOSER
    result = evaluate(name, docs, items, flows, progress=progress, chooser=chooser)
    result["targets"] = targets(result)
    try:
        Path(args.out).write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    except OSError as e:
        return refuse(f"--out {token(Path(args.out).name)}: cannot write ({e.strerror or type(e).__name__})")
    print(f"{token(name)}: {len(docs)} documents, {len(items)} questions, chooser {chooser} -> {token(args.out)}")
    print(f"{'flow':<18} {'answered':>9} {'median B':>9} {'p90 B':>9} {'median tok':>10} {'p90 tok':>8} {'calls':>6}")
    for flow, s in result["flows"].items():
        print(f"{flow:<18} {s['answered']:>4}/{s['questions']:<4} {s['median_bytes']:>9,.0f} {s['p90_bytes']:>9,.0f} "
              f"{s['median_tokens']:>10,.0f} {s['p90_tokens']:>8,.0f} {s['median_calls']:>6}")
    for flow, why in result["skipped"].items():
        print(f"{flow:<18} skipped: {why}")
    if result["targets"]:
        print("targets:", json.dumps(result["targets"]))
    return 0
