#!/usr/bin/env python3
"""Write the navigation line and launch badges into every notebook, and generate 00_index.ipynb.

Never typed by hand: run `python scripts/nbnav.py` after adding or renaming a notebook;
`python scripts/nbnav.py --check` exits 1 when a notebook's navigation is stale (tests run it).
The repository slug for the Binder/Colab badges comes from pyproject.toml
([tool.evidence-series] repository) so forks change one line.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
NAV_ID = "nav"
INDEX = "00_index.ipynb"


def settings() -> tuple[str, str]:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["evidence-series"]
    return cfg["repository"], cfg.get("branch", "main")


def series() -> list[Path]:
    return sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb") if p.name != INDEX)


def title_of(nb) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.get("id") != NAV_ID:
            m = re.search(r"^# (.+)$", cell.source, flags=re.M)
            if m:
                return m.group(1).strip()
    return "(untitled)"


def badges(path: Path, repo: str, branch: str) -> str:
    rel = path.relative_to(ROOT).as_posix()
    binder = f"https://mybinder.org/v2/gh/{repo}/{branch}?labpath={rel}"
    colab = f"https://colab.research.google.com/github/{repo}/blob/{branch}/{rel}"
    return (f"[![Launch on Binder](https://mybinder.org/badge_logo.svg)]({binder}) "
            f"[![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab})")


def nav_source(i: int, paths: list[Path], repo: str, branch: str) -> str:
    prev = f"[← {paths[i - 1].stem}]({paths[i - 1].name})" if i > 0 else "← (start)"
    nxt = f"[{paths[i + 1].stem} →]({paths[i + 1].name})" if i + 1 < len(paths) else "(end) →"
    return f"{prev} · [index]({INDEX}) · {nxt}\n\n{badges(paths[i], repo, branch)}"


def nav_cell(source: str):
    cell = nbformat.v4.new_markdown_cell(source)
    cell.id = NAV_ID
    return cell


def apply(paths: list[Path], repo: str, branch: str) -> dict[Path, str]:
    """The new text of every file whose navigation differs (index included)."""
    changed: dict[Path, str] = {}
    rows = []
    for i, path in enumerate(paths):
        nb = nbformat.read(path, as_version=4)
        want = nav_source(i, paths, repo, branch)
        if nb.cells and nb.cells[0].get("id") == NAV_ID:
            nb.cells[0].source = want
        else:
            nb.cells.insert(0, nav_cell(want))
        rows.append(f"| [{path.stem[:2]}]({path.name}) | {title_of(nb)} |")
        text = nbformat.writes(nb) + "\n"
        if text != path.read_text(encoding="utf-8"):
            changed[path] = text
    index = nbformat.v4.new_notebook()
    index.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                      "language_info": {"name": "python"}}
    intro = nbformat.v4.new_markdown_cell(
        "# Read evidence on demand: the series\n\n"
        "Keep retrieval results out of an LLM's context and read evidence on demand. Each notebook imports the "
        "shared library `evidence_lib`, runs offline and is checked by strict nbval.\n\n"
        "| # | notebook |\n|---|---|\n" + "\n".join(rows) + "\n\n"
        "Workshop exercises and the facilitator guide are in [exercises/](exercises/README.md).\n\n"
        + badges(NOTEBOOKS / INDEX, repo, branch))
    intro.id = "index"
    index.cells = [intro]
    text = nbformat.writes(index) + "\n"
    ipath = NOTEBOOKS / INDEX
    if not ipath.exists() or ipath.read_text(encoding="utf-8") != text:
        changed[ipath] = text
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if any notebook's navigation is stale")
    args = parser.parse_args(argv)
    repo, branch = settings()
    changed = apply(series(), repo, branch)
    if args.check:
        for p in changed:
            print(f"stale navigation: {p.relative_to(ROOT)}")
        return 1 if changed else 0
    for p, text in changed.items():
        p.write_text(text, encoding="utf-8")
        print(f"updated {p.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
