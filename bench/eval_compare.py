#!/usr/bin/env python3
"""The reading flows side by side, Deep Agents included: writes bench/results/eval_pydoc.json and eval_zh.json.

Run with an interpreter that has the optional extra installed (``make bench-eval`` makes ``.venv-bench`` with
``pip install -e '.[deepagents]'``). Without deepagents the comparison flow is reported as skipped.
Everything else is the same command a team runs on its own QA set: ``python -m evidence_lib eval``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from evidence_lib.__main__ import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "evidence_lib" / "eval" / "data"
OUT = ROOT / "bench" / "results"

RUNS = [
    ("pydoc", DATA / "pydoc_qa.json", OUT / "eval_pydoc.json"),
    (str(DATA / "zh_corpus"), DATA / "zh_qa.json", OUT / "eval_zh.json"),
]

if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for corpus, qa, out in RUNS:
        code = main(["eval", "--corpus", corpus, "--qa", str(qa), "--out", str(out)])
        if code:
            sys.exit(code)
