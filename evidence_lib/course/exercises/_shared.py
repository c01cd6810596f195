"""Helpers the checkers share: a throwaway index, unlimited budgets, short reprs, and candidate lists no notebook
shows (so that a number copied from an output cannot pass a checker)."""

from __future__ import annotations

import atexit
import random
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from types import FrameType
from typing import Any

from ..._documents import Document
from ..._index import EvidenceIndex
from ..._ledger import Budget
from ..article import ANSWER, ANSWER_DOC_ID, FILLER, FILLER_REPEATS, NO_ANSWER, article_corpus
from .core import strip_addresses


@contextmanager
def temp_index(documents: Iterable[Document] | None = None) -> Iterator[EvidenceIndex]:
    """An index of ``documents`` (default: the article's corpus) in a directory removed afterwards.

    Checkers build their own index so a learner's edits to their workspace cannot change a verdict.
    """
    with tempfile.TemporaryDirectory(prefix="evidence-exercise-") as tmp:
        yield EvidenceIndex.build(list(documents) if documents is not None else article_corpus(), tmp)


_KEPT: dict[str, EvidenceIndex] = {}


def kept_index(key: str, documents: Iterable[Document]) -> EvidenceIndex:
    """An index of ``documents`` built once per process under ``key``, in a private directory removed at exit.

    For checkers that read a fixed corpus again and again (nothing they do writes to it): a check stays cheap
    however often it runs, and the learner's workspace still cannot change a verdict.
    """
    if key not in _KEPT:
        root = tempfile.mkdtemp(prefix="evidence-exercise-")
        atexit.register(shutil.rmtree, root, True)
        _KEPT[key] = EvidenceIndex.build(list(documents), root)
    return _KEPT[key]


@contextmanager
def watching(codes: frozenset, seen: list[str]) -> Iterator[None]:
    """Append to ``seen`` the name of every function whose code is in ``codes`` that runs inside the block.

    A profile hook, so it does not matter how the learner imported the function: the checkers use it to refuse an
    answer that delegates to the library's own answer to the exercise (2.1, 5.2, 6.3).
    """
    def on_call(frame: FrameType) -> None:
        if frame.f_code in codes:
            seen.append(frame.f_code.co_name)

    with profiled(on_call):
        yield


@contextmanager
def profiled(on_call: Callable[[FrameType], None]) -> Iterator[None]:
    """Call ``on_call(frame)`` for every Python function call inside the block (a profile hook, restored after)."""
    def watch(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            on_call(frame)

    previous = sys.getprofile()
    sys.setprofile(watch)
    try:
        yield
    finally:
        sys.setprofile(previous)


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


def variant_corpus(seed: str, size: int | None = None, *, answer_at: str = "end", first: bool = False,
                   last: bool = False) -> list[Document]:
    """A ranking of the article's notes that no notebook prints, drawn from ``seed`` (the checker's, never shown).

    ``size`` notes (3 to 9 if None), d03 always among them; every note keeps a random number (20 to 240) of its
    filler sentences, so the sizes differ; the answer sentence ends d03 (``answer_at="end"``) or sits in the middle
    of its filler (``"middle"``, the tail line then says there is no limit). ``first``/``last`` put d03 there.
    """
    rng = random.Random(f"evidence-exercises/{seed}")
    docs = article_corpus()
    answer = next(d for d in docs if d.doc_id == ANSWER_DOC_ID)
    others = [d for d in docs if d.doc_id != ANSWER_DOC_ID]
    k = size if size is not None else rng.randint(3, 9)
    picked = rng.sample(others, k - 1)
    picked.insert(0 if first else k - 1 if last else rng.randrange(k), answer)
    out = []
    for d in picked:
        n = rng.randint(20, FILLER_REPEATS)
        body, tail = FILLER * n, d.text.rsplit("\n", 1)[1]
        if d.doc_id == ANSWER_DOC_ID and answer_at == "middle":
            cut_at = len(FILLER) * rng.randint(5, n - 5)
            body, tail = body[:cut_at] + ANSWER + body[cut_at:], NO_ANSWER
        out.append(replace(d, text=body + "\n" + tail))
    return out
