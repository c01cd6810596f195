#!/usr/bin/env python
"""Generate the workshop's student copies from the solution notebooks, deterministically.

Source of truth: ``notebooks/exercises/solutions/workshop_part*.ipynb``, where every cell holding a
solution is tagged ``solution`` and names its exercise in ``metadata.exercise`` (e.g. ``"2.1"``).
Each student copy ``notebooks/exercises/workshop_part*.ipynb`` is that notebook with

* every ``solution`` cell replaced by the exercise's stub (``answer = ____`` or a function whose body
  is ``return ____``), tagged ``answer``;
* relative links one level shallower (the copy lives one folder up);
* the solution's navigation cell (id ``nav``) replaced by the copy's own, written with
  ``scripts/nbnav.py``'s functions (previous / index / next among the student copies, launch badges), so
  ``nbnav.py --check`` and this script's ``--check`` agree whichever of the two ran last;
* all outputs cleared, then executed top to bottom in a fresh ``python3`` kernel whose working
  directory is ``notebooks/exercises``, so learners see "Not attempted yet" in every check cell.

Re-running gives byte-identical files. Usage (from the repository root)::

    .venv/bin/python scripts/make_student_copies.py              # write the student copies
    .venv/bin/python scripts/make_student_copies.py --check      # exit 1 if a committed copy is stale
    .venv/bin/python scripts/make_student_copies.py --solutions  # re-execute the solution notebooks in place too
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

if str(Path(__file__).resolve().parent) not in sys.path:  # the sibling scripts, also when loaded by path (tests)
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import nbnav
from execute_notebooks import run

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = ROOT / "notebooks" / "exercises"
SOLUTIONS = EXERCISES / "solutions"
_LINK = re.compile(r"\]\(\.\./")


def solution_notebooks() -> list[Path]:
    return sorted(SOLUTIONS.glob("workshop_part*.ipynb"))


def student_path(solution: Path) -> Path:
    return EXERCISES / solution.name


def _stub(cell: nbformat.NotebookNode) -> str:
    from evidence_lib.course.exercises import exercise

    key = cell.metadata.get("exercise")
    if not key:
        raise ValueError(f"solution cell {cell.get('id')!r} has no metadata.exercise")
    return exercise(key).stub


def _clear(cell: nbformat.NotebookNode) -> None:
    if cell.cell_type == "code":
        cell.outputs = []
        cell.execution_count = None
    cell.metadata.pop("execution", None)


def _execute(nb: nbformat.NotebookNode, cwd: Path) -> nbformat.NotebookNode:
    """Run ``nb`` with the series' one executor (``scripts/execute_notebooks.py``), ``cwd`` as working directory.

    Any cell that raises stops the build (``CellExecutionError``): the copies must run clean.
    """
    metadata = copy.deepcopy(nb.metadata)
    run(nb, cwd)  # fresh kernel, temporary workspace, no timings, widget model ids or split streams
    metadata["kernelspec"] = nb.metadata["kernelspec"]  # the installed python3 kernel's, as tidy() pins it
    # language_info stays the source's (the solution notebook's): its version is the Python that executed the
    # solutions, so a check run on another Python (a learner's machine, CI's) builds the same bytes.
    metadata.setdefault("language_info", nb.metadata["language_info"])
    nb.metadata = metadata  # otherwise keep the source's metadata
    return nb


def _render(nb: nbformat.NotebookNode) -> bytes:
    nbformat.validate(nb)
    text = nbformat.writes(nb)
    return (text if text.endswith("\n") else text + "\n").encode("utf-8")


def student_copy(solution: Path) -> nbformat.NotebookNode:
    """The unexecuted student copy of ``solution``, with its own navigation cell first."""
    nb = nbformat.read(solution, as_version=4)
    nb.cells = [cell for cell in nb.cells if cell.get("id") != nbnav.NAV_ID]
    for cell in nb.cells:
        _clear(cell)
        if "solution" in cell.metadata.get("tags", []):
            cell.source = _stub(cell)
            cell.metadata["tags"] = ["answer"]
        elif cell.cell_type == "markdown":
            cell.source = _LINK.sub("](", cell.source)
    return nbnav.with_nav(nb, nbnav.workshop_nav(student_path(solution)))


def build(solution: Path) -> bytes:
    """The executed student copy of ``solution``, as the bytes to commit."""
    return _render(_execute(student_copy(solution), EXERCISES))


def _build_in_pool_thread(solution: Path) -> bytes:
    """:func:`build` in a pool thread, then close the event loop nbclient left on it (jupyter_core's run_sync makes
    one per thread and never closes it; garbage-collected later, the loop and its two sockets warn mid-test)."""
    try:
        return build(solution)
    finally:
        with contextlib.suppress(RuntimeError):  # no loop: build failed before starting a kernel
            asyncio.get_event_loop_policy().get_event_loop().close()


def build_all() -> dict[Path, bytes]:
    """Every student copy, built in parallel (one kernel per notebook), keyed by its path."""
    sources = solution_notebooks()
    with ThreadPoolExecutor(max_workers=max(1, len(sources))) as pool:
        return {student_path(s): data for s, data in zip(sources, pool.map(_build_in_pool_thread, sources))}


def stale(built: dict[Path, bytes] | None = None) -> list[Path]:
    """Student copies whose committed bytes differ from a fresh build (or that are missing/orphaned)."""
    built = build_all() if built is None else built
    out = [target for target, data in built.items() if not target.exists() or target.read_bytes() != data]
    sources = solution_notebooks()
    names = {s.name for s in sources}
    out += [p for p in sorted(EXERCISES.glob("workshop_part*.ipynb")) if p.name not in names]
    return out


def check(built: dict[Path, bytes] | None = None) -> list[Path]:
    """What ``--check`` runs: the stale copies, empty when everything is up to date."""
    return stale(built)


def execute_solutions() -> list[Path]:
    """Re-execute the solution notebooks in place (fresh kernel, cwd = solutions/, no timing metadata).

    Their navigation cell is refreshed on the way, as ``scripts/nbnav.py`` would write it.
    """
    def run(solution: Path) -> None:
        nb = nbnav.with_nav(nbformat.read(solution, as_version=4), nbnav.workshop_nav(solution))
        for cell in nb.cells:
            _clear(cell)
        solution.write_bytes(_render(_execute(nb, SOLUTIONS)))

    sources = solution_notebooks()
    with ThreadPoolExecutor(max_workers=max(1, len(sources))) as pool:
        list(pool.map(run, sources))
    return sources


def write() -> list[Path]:
    built = build_all()
    for target, data in built.items():
        target.write_bytes(data)
    return list(built)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a committed student copy is stale")
    parser.add_argument("--solutions", action="store_true", help="re-execute the solution notebooks in place first")
    args = parser.parse_args(argv)
    if not solution_notebooks():
        print(f"no solution notebooks in {SOLUTIONS.relative_to(ROOT)}", file=sys.stderr)
        return 2
    if args.check:
        bad = stale()
        for path in bad:
            print(f"stale: {path.relative_to(ROOT)}", file=sys.stderr)
        if bad:
            print("run: .venv/bin/python scripts/make_student_copies.py", file=sys.stderr)
            return 1
        print(f"{len(solution_notebooks())} student copies are up to date")
        return 0
    if args.solutions:
        for path in execute_solutions():
            print(f"executed {path.relative_to(ROOT)}")
    for path in write():
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
