#!/usr/bin/env python3
"""Build the series' static website (``make site``) from the committed, executed notebooks, without running them.

Sphinx + MyST-NB (``nb_execution_mode = "off"``) with the Sphinx Book Theme, pinned in ``site/requirements.txt``
and installed into the project's venv by ``make site``; the configuration is ``site/conf.py``. Everything is
local: no Node, no browser, no CDN; the pages use relative links, so they work under any path.

What this script does, in a staging folder (``build/site-src/``, rebuilt every time) so the committed notebooks
are never changed:

* copies the pages in the series' order, found by glob (never a hard-coded list, so new notebooks appear by
  themselves): ``notebooks/NN_*.ipynb`` sorted, then the workshop (``notebooks/exercises/README.md``, the student
  copies ``workshop_part*.ipynb`` and their ``solutions/``);
* writes the landing page ``index.md`` with the table of contents and a ``figures.md`` page showing every PNG
  in ``figures/`` (with a link to its SVG);
* injects a note after every widget cell (an ipywidgets output: in the committed notebooks only its
  ``text/plain`` summary is stored) saying that the controls need a live kernel;
* swaps the Binder / Colab badge images (hot-linked from their sites) for local copies, so every page is
  self-contained; the badges still link to Binder and Colab.

Usage: ``python scripts/build_site.py [--out build/site]``. ``BASE_URL`` (e.g. ``/read-evidence-on-demand`` for a
project site at ``https://<owner>.github.io/read-evidence-on-demand/``) sets the pages' canonical URLs
(``html_baseurl``); the links themselves are relative and need no prefix.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
FIGURES = ROOT / "figures"
CONF_DIR = ROOT / "site"
BADGES = {  # hot-linked badge image -> local copy under site/badges/
    "https://mybinder.org/badge_logo.svg": "binder-badge.svg",
    "https://colab.research.google.com/assets/colab-badge.svg": "colab-badge.svg",
}
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
#: The text/plain summary evidence_lib.teaching.widgets stores for a widget (see its ``__repr__``).
WIDGET_REPR = re.compile(r"^<\w+: .*; call \.set\(\.\.\.\) and \.state_text\(\)>$", re.S)
WIDGET_NOTE = """\
```{{admonition}} Live widget: this needs a running Python kernel
:class: important

The output above is only the widget's stored text summary: its sliders and buttons do not work on this static
page. To use them, open `{path}` in JupyterLab (`make lab`) or launch it on Binder with the badge at the top of
the page, and run the cells. The cells after it drive the same widget from code, so their printed numbers are the
ones you would see.
```
"""


def series() -> list[Path]:
    """The series in order: notebooks/NN_*.ipynb, sorted (00_index first)."""
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def workshop() -> tuple[list[Path], list[Path]]:
    ex = NOTEBOOKS / "exercises"
    return sorted(ex.glob("workshop_part*.ipynb")), sorted((ex / "solutions").glob("workshop_part*.ipynb"))


def is_widget_output(output: dict) -> bool:
    data = output.get("data", {})
    if WIDGET_MIME in data:
        return True
    text = data.get("text/plain", "")
    text = "".join(text) if isinstance(text, list) else text
    return output.get("output_type") == "execute_result" and bool(WIDGET_REPR.match(text.strip()))


def transform(nb: nbformat.NotebookNode, rel: str) -> tuple[nbformat.NotebookNode, int]:
    """The staged copy: local badge images, a live-kernel note after each widget cell. Returns (nb, widgets)."""
    cells, widgets = [], 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for url, name in BADGES.items():
                cell.source = cell.source.replace(url, f"/_badges/{name}")  # "/" = the staging root
        cells.append(cell)
        if cell.cell_type == "code" and any(is_widget_output(o) for o in cell.get("outputs", [])):
            widgets += 1
            cells.append(nbformat.v4.new_markdown_cell(WIDGET_NOTE.format(path=f"notebooks/{rel}"),
                                                       id=f"site-widget-note-{widgets}"))
    nb.cells = cells
    return nb, widgets


def title_of(path: Path) -> str:
    """The first level-1 heading of a notebook or markdown page (for the figures page and log lines)."""
    if path.suffix == ".ipynb":
        text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    else:
        text = path.read_text(encoding="utf-8")
    m = re.search(r"^# (.+)$", text, re.M)
    return m.group(1).strip() if m else path.stem


def toctree(caption: str, entries: list[str]) -> str:
    return "```{toctree}\n:caption: " + caption + "\n:maxdepth: 1\n\n" + "\n".join(entries) + "\n```\n"


def stage(src: Path) -> dict[str, int]:
    if src.exists():
        shutil.rmtree(src)
    (src / "_badges").mkdir(parents=True)
    for name in BADGES.values():
        shutil.copy2(CONF_DIR / "badges" / name, src / "_badges" / name)

    students, solutions = workshop()
    pages = series() + students + solutions
    counts = {"notebooks": len(pages), "widget cells": 0, "figures": 0}
    for path in pages:
        rel = path.relative_to(NOTEBOOKS).as_posix()
        nb, widgets = transform(nbformat.read(path, as_version=4), rel)
        counts["widget cells"] += widgets
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, src / rel)
    readme = NOTEBOOKS / "exercises" / "README.md"
    if readme.exists():
        shutil.copy2(readme, src / "exercises" / "README.md")

    figures = sorted(FIGURES.glob("*.png"))
    counts["figures"] = len(figures)
    if figures:
        shutil.copytree(FIGURES, src / "figures", ignore=shutil.ignore_patterns("*.tmp"))
        lines = ["# Figures", "",
                 "The article's figures as `make figures` regenerates them into `figures/` (PNG and SVG, in English "
                 "and Chinese; byte-identical on every run).", ""]
        for png in figures:
            svg = png.with_suffix(".svg")
            lines += [f"## {png.stem}", "", f"```{{figure}} figures/{png.name}", f":alt: {png.stem}", ":width: 100%", "",
                      f"`figures/{png.name}`" + (f" ({{download}}`SVG <figures/{svg.name}>`)" if svg.exists() else ""),
                      "```", ""]
        (src / "figures.md").write_text("\n".join(lines), encoding="utf-8")

    stem = lambda p: p.relative_to(NOTEBOOKS).with_suffix("").as_posix()  # noqa: E731
    index = [
        "# Read evidence on demand", "",
        "A Jupyter tutorial series and its library, `evidence_lib`: search returns a bounded **manifest**, locate "
        "returns **positions**, read returns bounded **pages** with revision, sha256 and a half-open `[start, end)` "
        "range, so every cited sentence can be traced back to the exact snapshot it came from.", "",
        "These pages are the committed notebooks with their stored outputs, not re-run. Everything runs offline: "
        "to run a notebook, clone the repository and `make lab`, or use the Binder badge at the top of each page. "
        "The interactive widgets of notebook 10 need that live kernel.", "",
        toctree("The series", [stem(p) for p in series()]),
    ]
    workshop_entries = (["exercises/README"] if readme.exists() else []) + [stem(p) for p in students]
    if workshop_entries:
        index.append(toctree("Workshop", workshop_entries))
    if solutions:
        index.append(toctree("Workshop solutions (facilitators)", [stem(p) for p in solutions]))
    if figures:
        index.append(toctree("Figures", ["figures"]))
    (src / "index.md").write_text("\n".join(index), encoding="utf-8")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "site", help="output folder (default: build/site)")
    parser.add_argument("--src", type=Path, default=ROOT / "build" / "site-src", help="staging folder")
    args = parser.parse_args(argv)
    started = time.monotonic()
    counts = stage(args.src)
    print("site 1/2: staged " + ", ".join(f"{n} {k}" for k, n in counts.items()) + f" in {args.src}")
    if args.out.exists():
        shutil.rmtree(args.out)
    doctrees = args.src.parent / "site-doctrees"
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-E", "-W", "--keep-going", "-j", "auto",
           "-c", str(CONF_DIR), "-d", str(doctrees), str(args.src), str(args.out)]
    base = os.environ.get("BASE_URL", "")
    print(f"site 2/2: sphinx-build into {args.out}" + (f" (BASE_URL={base})" if base else ""))
    result = subprocess.run(cmd, cwd=ROOT)
    if result.returncode != 0:
        print("site: sphinx-build failed (warnings count as errors, see above)", file=sys.stderr)
        return result.returncode
    (args.out / ".nojekyll").touch()  # GitHub Pages: serve the _static/ and _images/ folders as they are
    pages = sum(1 for _ in args.out.rglob("*.html"))
    print(f"site: {pages} pages in {args.out} ({time.monotonic() - started:.1f} s); "
          f"open {args.out / 'index.html'} or serve it: python -m http.server -d {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
