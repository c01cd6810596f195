"""Where a notebook keeps its evidence stores: a fresh ``workspace/<name>`` folder per run.

Notebooks 02-05 and the workshop build their stores with ``notebook_workspace("02")`` and print paths with
``display_path``. In JupyterLab the folder is ``workspace/<name>`` next to the notebook, so learners can open
the files; ``make test`` sets ``EVIDENCE_WORKSPACE`` to a temporary directory per run, so two runs at once
never share (or wipe) each other's stores, and the printed paths are the same in both cases.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ENV = "EVIDENCE_WORKSPACE"


def workspace_root() -> Path:
    """``$EVIDENCE_WORKSPACE`` when set, else the working directory (a notebook's own folder)."""
    return Path(os.environ.get(ENV) or ".")


def notebook_workspace(name: str) -> Path:
    """An empty directory ``<root>/workspace/<name>`` for one notebook's stores, wiped first so re-runs match.

    ``name`` is one folder name (``"02"``, ``"part3"``); the root is :func:`workspace_root`.
    """
    if not name or name in (".", "..") or "/" in name or "\\" in name:
        raise ValueError(f"notebook_workspace() needs one folder name, not {name!r}")
    path = workspace_root() / "workspace" / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def display_path(path: str | os.PathLike[str]) -> str:
    """``path`` relative to the workspace root, POSIX style: ``workspace/02/d03.txt`` on every machine."""
    path, root = Path(path), workspace_root()
    for base in (root, root.resolve()):
        try:
            return path.relative_to(base).as_posix()
        except ValueError:
            pass
    raise ValueError(f"{path} is not inside the workspace root {root}")
