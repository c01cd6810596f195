"""Evaluation flows that compare the evidence protocol with other ways of reading documents (notebook 08).

:func:`answer_citation` is the rule that makes a protocol flow's answer count (:mod:`.answered`);
:mod:`.flows` holds the protocol flows and the two choosers (``oracle``, ``overlap``); :mod:`.deepagents_flow`
the Deep Agents comparison flows (``deepagents``, efficient, and ``deepagents_default``); :mod:`.run` runs them
side by side (``python -m evidence_lib eval``).

:func:`data_path` finds the QA sets and the Chinese folder corpus that ship with the package, wherever it is
installed (a clone, a wheel, Colab).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from .answered import answer_citation, shown_ranges

__all__ = ["MAX_CALLS", "answer_citation", "data_path", "shown_ranges"]


def __getattr__(name: str) -> object:
    if name == "MAX_CALLS":  # every reading flow's call limit (:mod:`.flows`, loaded on first use)
        from .flows import MAX_CALLS

        return MAX_CALLS
    raise AttributeError(name)


def data_path(name: str) -> Path:
    """``evidence_lib/eval/data/<name>``: ``pydoc_qa.json``, ``zh_qa.json`` or ``zh_corpus``."""
    return Path(str(files(__package__) / "data" / name))
