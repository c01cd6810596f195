"""Evaluation flows that compare the evidence protocol with other ways of reading documents (notebook 08).

:func:`evaluate` runs every flow on every question of a QA set side by side (``python -m evidence_lib eval``):
the protocol flows under the two choosers (:data:`CHOOSERS`: ``oracle``, ``overlap``), a top-5 dump, and LangChain
Deep Agents' tools (with the ``deepagents`` extra). :func:`load_corpus` and :func:`load_qa` read a corpus and a QA
file, checked against each other (:class:`QAError`); :func:`answer_citation` is the rule that makes a protocol flow's
answer count; :data:`MAX_CALLS` is every reading flow's call limit. :func:`data_path` finds the QA sets and the
Chinese folder corpus that ship with the package, wherever it is installed (a clone, a wheel, Colab).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from ._answered import answer_citation
from ._flows import CHOOSERS, MAX_CALLS
from ._run import FLOWS, QAError, evaluate, load_corpus, load_qa

__all__ = ["CHOOSERS", "FLOWS", "MAX_CALLS", "QAError", "answer_citation", "data_path", "evaluate", "load_corpus",
           "load_qa"]


def data_path(name: str) -> Path:
    """``evidence_lib/eval/data/<name>``: ``pydoc_qa.json``, ``zh_qa.json`` or ``zh_corpus``."""
    return Path(str(files(__package__) / "data" / name))
