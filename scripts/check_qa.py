#!/usr/bin/env python3
"""Check the shipped QA files against their corpora; exit 1 on any problem.

    python scripts/check_qa.py

* ``evidence_lib/eval/data/pydoc_qa.json`` against the pinned documentation topics the series ships
  (Python 3.11.7's ``pydoc_data.topics``), or with ``--running`` against this Python's own. The file's
  ``python_version`` and ``corpus_sha256`` are compared with the corpus's: when the topics differ
  (another Python release), the script says so and lists the items whose spans no longer match.
* ``evidence_lib/eval/data/zh_qa.json`` against the folder corpus ``zh_corpus/*.txt`` (UTF-8).

Prints one summary line per file: items, documents covered, spans starting at or past character
2,000, and locate_terms that occur in more than 5 documents. Errors follow, one per bad item.

Only the standard library is used, and ``evidence_lib/eval/_qa_check.py`` is loaded from its file
rather than through the package (whose ``__init__`` needs the library's dependencies), so any
bare ``python3`` can check the data, including a Python whose topics you want to compare.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QA_CHECK = ROOT / "evidence_lib" / "eval" / "_qa_check.py"


def load_qa_check():
    spec = importlib.util.spec_from_file_location("_evidence_qa_check", QA_CHECK)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


qa = load_qa_check()


def summary_line(name: str, docs: dict[str, str], items: list, unit: str) -> str:
    s = qa.summarize(docs, items)
    return (f"{name}: {s['items']} items, {s['docs_covered']} of {len(docs)} {unit} covered, "
            f"{s['deep_spans']} spans past character 2,000, "
            f"{s['ambiguous_terms']} locate_terms in more than 5 {unit}")


def read_json(path: Path, errors: list[str]):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        errors.append(f"{path.relative_to(ROOT)}: cannot be read: {exc}")
        return None


def span_matches(docs: dict[str, str], item) -> bool:
    """True when the item's answer_span is still at [start, end) of its document."""
    if not isinstance(item, dict):
        return False
    doc_id, start, end = item.get("doc_id"), item.get("start"), item.get("end")
    text = docs.get(doc_id) if isinstance(doc_id, str) else None
    if text is None or not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
        return False
    return text[start:end] == item.get("answer_span")


def check_pydoc(path: Path, source: str = "pinned") -> tuple[list[str], list[str]]:
    """(lines to print, errors) for the pydoc QA file."""
    errors: list[str] = []
    data = read_json(path, errors)
    if data is None:
        return [], errors
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        return [], [f"{path.name}: expected an object with an 'items' list"]
    if data.get("corpus") != "pydoc":
        errors.append(f"{path.name}: corpus is {data.get('corpus')!r}, expected 'pydoc'")

    docs, version = qa.pydoc_corpus(source)
    sha = qa.corpus_sha256(docs)
    items = data["items"]
    item_errors = qa.check_items(docs, items)
    lines = [summary_line(path.name, docs, items, "topics") + f" (Python {version})"]

    same_version = data.get("python_version") == version
    same_corpus = data.get("corpus_sha256") == sha
    if not same_corpus:
        stale = [item.get("id", f"item #{i}") for i, item in enumerate(items) if not span_matches(docs, item)]
        errors.append(
            f"{path.name}: the corpus differs: this file was written for Python {data.get('python_version')} "
            f"(corpus_sha256 {data.get('corpus_sha256')}), this is Python {version} (corpus_sha256 {sha}); "
            + (f"{len(stale)} of {len(items)} items' spans no longer match: {', '.join(stale)}" if stale
               else f"all {len(items)} items' spans still match"))
    elif not same_version:
        lines.append(f"note: {path.name} says Python {data.get('python_version')}, this is Python {version}, "
                     f"but the topics are identical (same corpus_sha256)")
    return lines, errors + item_errors


def check_folder(path: Path, folder: Path) -> tuple[list[str], list[str]]:
    """(lines to print, errors) for a QA file over a folder of UTF-8 .txt documents."""
    errors: list[str] = []
    items = read_json(path, errors)
    if items is None:
        return [], errors
    if not isinstance(items, list):
        return [], [f"{path.name}: expected a list of items"]
    try:
        docs = qa.folder_corpus(folder)
    except UnicodeDecodeError as exc:
        return [], [f"{folder.relative_to(ROOT)}: a file is not valid UTF-8: {exc}"]
    if not docs:
        return [], [f"{folder.relative_to(ROOT)}: no .txt documents"]
    return [summary_line(path.name, docs, items, "documents")], qa.check_items(docs, items)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--running", action="store_true",
                        help="check the pydoc QA set against this Python's topics, not the pinned copy")
    args = parser.parse_args(argv)
    data = qa.DATA_DIR
    failed = False
    for lines, errors in (check_pydoc(data / "pydoc_qa.json", "running" if args.running else "pinned"),
                          check_folder(data / "zh_qa.json", data / "zh_corpus")):
        for line in lines:
            print(line)
        for error in errors:
            print(f"  error: {error}", file=sys.stderr)
        failed = failed or bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
