#!/usr/bin/env python3
"""Keep every prediction's answer hidden until the learner runs or opens it, in JupyterLab and on the site.

A prediction is a markdown cell that asks for one in bold (``**Predict**`` or ``**Predict.**``) outside a "Try it
yourself" (a try-it's answer is never stored: the learner edits a cell first). Its answer is the output of the next
code cell, unless that cell is a workshop exercise's answer (tagged ``solution`` or ``answer``: there the learner's
own code and the checker answer it). That cell gets, in its metadata:

* ``collapsed: true`` and ``jupyter.outputs_hidden: true``: JupyterLab opens the notebook with the output folded
  (a "…" bar the learner can click); running the cell unfolds it. JupyterLab keeps the two keys in step and writes
  both back on save, so a saved notebook keeps this form;
* the tag ``hide-output``: the site (MyST-NB, scripts/build_site.py) draws the output folded in a closed
  ``<details>``, as Jupyter Book does, under the toggle "Show the answer" (MyST-NB's cell-level ``mystnb``
  settings ``code_prompt_show`` / ``code_prompt_hide``).

The rule finds the predictions, so a new one is covered without a list to keep. scripts/execute_notebooks.py applies
it to every notebook it runs (a re-executed notebook keeps it); ``python scripts/predictions.py [paths]`` applies it
to notebooks on disk (default: the series), ``--check`` exits 1 and names the notebooks it would change.
tests/test_predictions.py checks the committed notebooks and one built page.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
#: A markdown cell that asks for a prediction whose answer the next code cell prints.
PROMPT = re.compile(r"\*\*Predict\b")
TRY_IT = "Try it yourself"
#: A workshop exercise's answer cell (scripts/make_student_copies.py): a prediction before it is answered by the check.
EXERCISE_TAGS = {"solution", "answer"}
HIDE_OUTPUT = "hide-output"
#: The site's toggle under a prediction (MyST-NB reads a cell's ``mystnb`` metadata).
SITE_PROMPTS = {"code_prompt_show": "Show the answer", "code_prompt_hide": "Hide the answer"}


def is_prediction(cell) -> bool:
    """Whether ``cell`` asks the learner to predict what the next code cell prints."""
    return cell.cell_type == "markdown" and bool(PROMPT.search(cell.source)) and TRY_IT not in cell.source


def predictions(nb) -> list[tuple[int, int]]:
    """(prompt cell index, answer cell index) of every prediction in ``nb``: the answer is the next code cell."""
    found = []
    for i, cell in enumerate(nb.cells):
        if is_prediction(cell):
            answer = next((j for j in range(i + 1, len(nb.cells)) if nb.cells[j].cell_type == "code"), None)
            if answer is not None and not EXERCISE_TAGS & set(nb.cells[answer].metadata.get("tags", [])):
                found.append((i, answer))
    return found


def is_hidden(cell) -> bool:
    """Whether the answer cell's output is folded in JupyterLab and on the site."""
    meta = cell.get("metadata", {})
    return (meta.get("collapsed") is True and meta.get("jupyter", {}).get("outputs_hidden") is True
            and HIDE_OUTPUT in meta.get("tags", []) and meta.get("mystnb") == SITE_PROMPTS)


def hide(cell) -> None:
    meta = cell.setdefault("metadata", {})
    meta["collapsed"] = True
    meta.setdefault("jupyter", {})["outputs_hidden"] = True
    tags = meta.setdefault("tags", [])
    if HIDE_OUTPUT not in tags:
        tags.append(HIDE_OUTPUT)
    meta["mystnb"] = dict(SITE_PROMPTS)


def apply(nb) -> bool:
    """Fold every prediction's answer in ``nb``; whether anything changed."""
    changed = False
    for _, answer in predictions(nb):
        if not is_hidden(nb.cells[answer]):
            hide(nb.cells[answer])
            changed = True
    return changed


def series_paths() -> list[Path]:
    return sorted(p for p in (ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb") if re.match(r"\d\d[a-z]?_", p.name))


def _shown(path: Path) -> str:
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: the series)")
    parser.add_argument("--check", action="store_true", help="exit 1 if a notebook shows a prediction's answer")
    args = parser.parse_args(argv)
    stale = []
    for path in args.paths or series_paths():
        nb = nbformat.read(path, as_version=4)
        if apply(nb):
            stale.append(path)
            if not args.check:
                nbformat.write(nb, path)
                print(f"folded the predictions' answers in {_shown(path)}")
    if args.check and stale:
        for path in stale:
            print(f"a prediction's answer shows: {_shown(path)}")
        print("fix: python scripts/predictions.py " + " ".join(_shown(p) for p in stale))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
