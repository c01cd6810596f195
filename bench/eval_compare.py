#!/usr/bin/env python3
"""The reading flows side by side, Deep Agents included, with both choosers: writes bench/results/eval_pydoc.json
and eval_zh.json.

Run with an interpreter that has the optional extra installed (``make bench-eval`` makes ``.venv-bench`` with
``pip install -e '.[deepagents]'``). Without deepagents the two Deep Agents flows are reported as skipped.
Everything else is the same command a team runs on its own QA set: ``python -m evidence_lib eval``, once per
chooser. Each file is the ``--chooser oracle`` run, keys as they were (``chooser``, ``flows``, ``per_question``,
``targets``, ...), plus ``by_chooser``: ``{"overlap": {"chooser", "flows", "skipped", "targets", "per_question"}}``,
the ``--chooser overlap`` run of the same flows on the same corpus and QA set.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from evidence_lib.__main__ import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "evidence_lib" / "eval" / "data"
OUT = ROOT / "bench" / "results"

RUNS = [
    ("pydoc", DATA / "pydoc_qa.json", OUT / "eval_pydoc.json"),
    (str(DATA / "zh_corpus"), DATA / "zh_qa.json", OUT / "eval_zh.json"),
]
#: The choosers run besides the oracle, each kept under by_chooser.
OTHER_CHOOSERS = ("overlap",)
KEPT = ("chooser", "flows", "skipped", "targets", "per_question")


def run(corpus: str, qa: Path, out: Path) -> int:
    code = main(["eval", "--corpus", corpus, "--qa", str(qa), "--out", str(out), "--chooser", "oracle"])
    if code:
        return code
    result = json.loads(out.read_text(encoding="utf-8"))
    result["by_chooser"] = {}
    with tempfile.TemporaryDirectory(prefix="eval-compare-") as tmp:
        for chooser in OTHER_CHOOSERS:
            other = Path(tmp) / f"{chooser}.json"
            code = main(["eval", "--corpus", corpus, "--qa", str(qa), "--out", str(other), "--chooser", chooser])
            if code:
                return code
            body = json.loads(other.read_text(encoding="utf-8"))
            if body["corpus_sha256"] != result["corpus_sha256"]:
                raise SystemExit(f"{out.name}: the {chooser} run read another corpus")
            result["by_chooser"][chooser] = {k: body[k] for k in KEPT}
    out.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for corpus, qa, out in RUNS:
        code = run(corpus, qa, out)
        if code:
            sys.exit(code)
