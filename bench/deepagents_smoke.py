#!/usr/bin/env python3
"""Smoke run of the Deep Agents comparison flows (efficient and default, both choosers) on Python's topics.

Needs deepagents installed next to evidence_lib (it is not a dependency of the library):
    make bench-eval   (or: python -m venv .venv-bench && .venv-bench/bin/pip install -e '.[deepagents]')
    .venv-bench/bin/python bench/deepagents_smoke.py

Documents: ``pydoc_data.topics.topics`` of the running Python (doc_id = topic name). Three
handmade questions: one answered by the first page, one that needs a second page, one whose
locate term occurs in many topics (so grep's output is the expensive part). Prints one line
per flow, chooser and question, then the per-call detail as JSON. Exits 1 if any question is unanswered.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from evidence_lib.eval._deepagents_flow import DEEPAGENTS_FLOWS, available, deepagents_version, run_deepagents
from evidence_lib.eval._flows import CHOOSERS

QUESTIONS = [
    {
        "id": "zfill-pad",
        "question": "What does str.zfill pad a string with?",
        "doc_id": "string-methods",
        "answer_span": 'Return a copy of the string left filled with ASCII "\'0\'" digits to\n'
                       "   make a string of length *width*.",
        "locate_term": "str.zfill",
    },
    {
        "id": "after-set-name",
        "question": "After the __set_name__ methods run, which hook is called during class creation?",
        "doc_id": "specialnames",
        "answer_span": 'The "__init_subclass__()" hook is called on the immediate parent of\n'
                       "   the new class in its method resolution order.",
        "locate_term": "__set_name__",
    },
    {
        "id": "with-target",
        "question": "In a with statement with a target, what is assigned to the target?",
        "doc_id": "with",
        "answer_span": 'the return value\n   from "__enter__()" is assigned to it.',
        "locate_term": "__enter__",
    },
]


def with_offsets(docs: dict[str, str], questions: list[dict]) -> list[dict]:
    """Add start/end, insisting the span occurs exactly once in its document."""
    out = []
    for q in questions:
        text = docs[q["doc_id"]]
        start = text.find(q["answer_span"])
        if start < 0 or text.find(q["answer_span"], start + 1) >= 0:
            raise SystemExit(f"{q['id']}: answer_span must occur exactly once in {q['doc_id']!r}")
        out.append({**q, "start": start, "end": start + len(q["answer_span"])})
    return out


def main() -> int:
    if not available():
        print("deepagents is not installed; see this file's docstring", file=sys.stderr)
        return 2
    from pydoc_data.topics import topics

    docs = dict(sorted(topics.items()))
    items = with_offsets(docs, QUESTIONS)
    print(f"deepagents {deepagents_version()}, Python {sys.version.split()[0]}, {len(docs)} topics")
    everything = {}
    for flow in DEEPAGENTS_FLOWS:
        for chooser in CHOOSERS:
            with tempfile.TemporaryDirectory() as tmp:
                results = run_deepagents(docs, items, Path(tmp) / "docs", flow=flow, chooser=chooser)
            everything[f"{flow}/{chooser}"] = results
            for r in results:
                tools = " ".join(c["tool"] for c in r["calls"])
                print(f"{flow:<18} {chooser:<7} {r['id']:15} answered={r['answered']!s:5} calls={len(r['calls'])} "
                      f"({tools}) bytes={r['bytes']} tokens={r['tokens']}")
    print(json.dumps(everything, indent=1, ensure_ascii=False))
    return 0 if all(r["answered"] for rs in everything.values() for r in rs) else 1


if __name__ == "__main__":
    sys.exit(main())
