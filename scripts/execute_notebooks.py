#!/usr/bin/env python3
"""Execute notebooks top to bottom in a fresh python3 kernel and store them without clock times.

`make execute` runs this over the series; pass paths to execute only some. Each notebook runs
with its own folder as the working directory (as nbval and JupyterLab do). Per-cell timing
metadata is neither recorded nor kept, nor are widget model ids, and a print that arrived in
several chunks is stored as one stream output, so a re-run changes only what really changed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def execute(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=600, record_timing=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    tidy(nb)
    nbformat.write(nb, path)


def tidy(nb) -> None:
    """Drop what differs between identical runs: timings, widget model ids, stream split points."""
    nb.metadata.pop("widgets", None)  # saved widget state carries random model ids
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        merged = []
        for out in cell.outputs:
            if out.output_type in ("display_data", "execute_result"):
                out.data.pop(WIDGET_VIEW, None)  # a random model_id; text/plain stays
            if (out.output_type == "stream" and merged and merged[-1].output_type == "stream"
                    and merged[-1].name == out.name):
                merged[-1].text += out.text  # one print may arrive in several chunks
            else:
                merged.append(out)
        cell.outputs = merged


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for p in paths:
        print(f"executing {p.resolve().relative_to(ROOT)}", flush=True)
        execute(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
