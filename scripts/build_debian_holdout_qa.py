#!/usr/bin/env python3
"""Write the ``debian_holdout`` QA set by fixed rules, before any reading flow sees it (issue 33, item 1).

    python scripts/build_debian_holdout_corpus.py build/debs   # the corpus, first (its docstring says how)
    python scripts/build_debian_holdout_qa.py                  # bench/data/debian_holdout_qa.json, then checks it
    python scripts/build_debian_holdout_qa.py --check          # validate it with evidence_lib/eval/_qa_check.py

The rules are ``scripts/build_debian_mix_qa.py``'s, rules 1-7 of its module docstring unchanged (this is its
``--set debian_holdout``), on ``bench/data/debian_holdout.tar.xz``: 60 questions, a third per document-frequency
bucket (``100+``, ``10-99``, ``<10``) and half of each past character 2,000; 2 per package and the rest in
proportion to the packages' documents; at most one per document. Its own sampler seed
(``random.Random("debian-holdout-qa:debian_holdout:333")``), fixed before any question was drawn; item ids
``debian-holdout-001`` ... No reading flow, retriever or model is used or consulted.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_debian_mix_qa as mqa


def main(argv: list[str] | None = None) -> int:
    return mqa.main(["--set", mqa.mix.HOLDOUT, *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
