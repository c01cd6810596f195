#!/usr/bin/env python3
"""Execute notebooks top to bottom in a fresh python3 kernel and store them without clock times.

`make execute` runs this over the series; pass paths to execute only some. Each notebook runs
with its own folder as the working directory (as nbval and JupyterLab do). Per-cell timing
metadata is neither recorded nor kept, nor is the saved widget state (random model ids),
so a re-run changes only what really changed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def execute(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=600, record_timing=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    nb.metadata.pop("widgets", None)  # saved widget state carries random model ids
    nbformat.write(nb, path)


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for p in paths:
        print(f"executing {p.resolve().relative_to(ROOT)}", flush=True)
        execute(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
