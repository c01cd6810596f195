"""Helpers the checkers share: a throwaway index, unlimited budgets, short reprs."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ..corpus import Document, article_corpus
from ..index import EvidenceIndex
from ..ledger import Budget
from .core import strip_addresses


@contextmanager
def temp_index(documents: Iterable[Document] | None = None) -> Iterator[EvidenceIndex]:
    """An index of ``documents`` (default: the article's corpus) in a directory removed afterwards.

    Checkers build their own index so a learner's edits to their workspace cannot change a verdict.
    """
    with tempfile.TemporaryDirectory(prefix="evidence-exercise-") as tmp:
        yield EvidenceIndex.build(list(documents) if documents is not None else article_corpus(), tmp)


def unlimited() -> Budget:
    """A budget with every limit switched off: the ledger only remembers."""
    return Budget(max_calls=None, max_chars=None, max_bytes=None, max_tokens=None, max_reads_per_doc=None,
                  max_refusals=None)


def show(value: Any, width: int = 60) -> str:
    """``type repr`` of a learner's value, cut to ``width`` characters."""
    r = strip_addresses(repr(value))
    if len(r) > width:
        r = r[: width - 3] + "..."
    return f"{type(value).__name__} {r}"


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def pair_of_ints(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and len(value) == 2 and all(is_int(v) for v in value)


def cut(text: str, width: int = 40) -> str:
    """``repr`` of ``text``, shortened in the middle."""
    if len(text) <= width:
        return repr(text)
    half = (width - 3) // 2
    return repr(text[:half]) + "..." + repr(text[-half:])
