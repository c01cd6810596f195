#!/usr/bin/env python3
"""Execute notebooks top to bottom in a fresh python3 kernel and store them without clock times.

`make execute` runs this over the series; pass paths to execute only some. It is the series' one
notebook executor: ``scripts/make_student_copies.py`` (and through it the tests) calls :func:`run`.
Each notebook runs with its own folder as the working directory (as nbval and JupyterLab do) and its
evidence stores in a fresh temporary ``EVIDENCE_WORKSPACE`` (see ``evidence_lib.course.workspace``), so two
runs at once never share files. Per-cell timing metadata is neither recorded nor kept, nor are widget
model ids, a print that arrived in several chunks is stored as one stream output, and the kernelspec
and language_info are what the installed python3 kernel reports (JupyterLab writes both back as soon
as a notebook is opened), so a re-run or merely opening the notebook changes only what really changed.
Every prediction's answer is stored folded (``scripts/predictions.py``), in JupyterLab and on the site.
"""

from __future__ import annotations

import copy
import os
import re
import sys
import tempfile
from functools import cache
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient
from traitlets.config import Config

if str(Path(__file__).resolve().parent) not in sys.path:  # the sibling scripts, also when loaded by path
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import predictions

ROOT = Path(__file__).resolve().parents[1]
KERNEL = "python3"
TIMEOUT = 600
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@cache
def _kernelspec() -> tuple[str, str]:
    spec = KernelSpecManager().get_kernel_spec(KERNEL)
    return spec.display_name, spec.language


def kernelspec() -> dict[str, str]:
    """The installed python3 kernel as notebook metadata: ``{"display_name", "language", "name"}``."""
    display_name, language = _kernelspec()
    return {"display_name": display_name, "language": language, "name": KERNEL}


def language_info() -> dict:
    """The language_info the python3 kernel (ipykernel on this Python) reports, as nbclient would store it."""
    from ipykernel.ipkernel import IPythonKernel

    return copy.deepcopy(IPythonKernel.language_info)


def run(nb: nbformat.NotebookNode, cwd: Path) -> nbformat.NotebookNode:
    """Execute ``nb`` top to bottom in a fresh python3 kernel whose working directory is ``cwd``, then tidy it.

    The kernel's evidence stores go to a temporary ``EVIDENCE_WORKSPACE``, removed afterwards. Any cell
    that raises (without the ``raises-exception`` tag) stops the run with ``CellExecutionError``.
    """
    with tempfile.TemporaryDirectory(prefix="evidence-workspace-") as workspace:
        env = {**os.environ, "EVIDENCE_WORKSPACE": workspace}
        # The kernel talks over Unix sockets in the workspace, not TCP ports: jupyter_client picks free ports and
        # closes them before the kernel binds, so kernels started at once (the student copies build in a pool, two
        # runs side by side) could take each other's ports ("Address already in use", the kernel dies).
        # (Set through the config so that nbclient still creates, owns and shuts down the kernel and its sockets.)
        config = Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(workspace, "kernel")}})
        # Figures are stored at twice their pixel size, tagged with their display size ("retina"): sharp on a HiDPI
        # screen in the lab and on the site, the same size on the page (nbval compares the text, not the image).
        NotebookClient(nb, kernel_name=KERNEL, timeout=TIMEOUT, record_timing=False, coalesce_streams=True,
                       extra_arguments=["--InlineBackend.figure_formats=retina"],
                       resources={"metadata": {"path": str(cwd)}}, config=config).execute(env=env)
    tidy(nb)
    return nb


def execute(path: Path) -> None:
    """Re-execute the notebook at ``path`` in place (``make execute``)."""
    nb = run(nbformat.read(path, as_version=4), path.parent)
    nbformat.write(nb, path)


def tidy(nb) -> None:
    """Drop what differs between identical runs: timings, widget model ids, stream split points; pin the kernelspec;
    fold every prediction's answer (scripts/predictions.py) so a re-run keeps it hidden."""
    predictions.apply(nb)
    nb.metadata["kernelspec"] = kernelspec()  # what JupyterLab would write back when the notebook is opened,
    nb.metadata["language_info"] = language_info()  # and this too (its version is the running Python's)
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


def series_paths() -> list[Path]:
    """The notebooks ``make execute`` runs by default: the series (``NN_*.ipynb``) and its optional deep dives
    (``NNx_*.ipynb``, notebooks 08x, 09x, 11x), in reading order."""
    return sorted(p for p in (ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb") if re.match(r"\d\d[a-z]?_", p.name))


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or series_paths()
    for p in paths:
        print(f"executing {p.resolve().relative_to(ROOT)}", flush=True)
        execute(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
