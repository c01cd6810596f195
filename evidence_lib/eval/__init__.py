"""Evaluation flows that compare the evidence protocol with other ways of reading documents (notebook 08).

:mod:`.flows` holds the protocol flows and the two choosers (``oracle``, ``overlap``); :mod:`.deepagents_flow`
the Deep Agents comparison flows (``deepagents``, efficient, and ``deepagents_default``); :mod:`.run` runs them
side by side (``python -m evidence_lib eval``).

:func:`data_path` finds the QA sets and the Chinese folder corpus that ship with the package, wherever it is
installed (a clone, a wheel, Colab).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def data_path(name: str) -> Path:
    """``evidence_lib/eval/data/<name>``: ``pydoc_qa.json``, ``zh_qa.json`` or ``zh_corpus``."""
    return Path(str(files(__package__) / "data" / name))
