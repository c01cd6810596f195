"""A slow source, to measure what overlapping reads save (notebook 09x, ``bench/bench_loop_parallel.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .._index import IndexEntry, Snapshot

__all__ = ["SlowIndex"]


class SlowIndex:
    """An index whose document reads (``text``, ``snapshot``) first block for ``seconds``: a remote source's round
    trip, to measure what parallel reads save (:func:`~evidence_lib.integrations.langchain.run_loop`) (notebook 09x, ``bench/bench_loop_parallel.py``)."""

    def __init__(self, index: Any, seconds: float, sleep: Callable[[float], None] = time.sleep) -> None:
        self.index, self.seconds, self.sleep = index, seconds, sleep

    def visible(self, principal: Any = None, action: Any = "discover") -> list[IndexEntry]:
        return self.index.visible(principal, action)

    def entry(self, doc_id: str, principal: Any = None, action: Any = "read") -> IndexEntry:
        return self.index.entry(doc_id, principal, action)

    def snapshot(self, doc_id: str, principal: Any = None) -> Snapshot:
        self.sleep(self.seconds)
        return self.index.snapshot(doc_id, principal)

    def text(self, doc_id: str, principal: Any = None, start: int = 0, end: int | None = None) -> str:
        self.sleep(self.seconds)
        return self.index.text(doc_id, principal, start, end)

    def find(self, term: str, doc_ids: Iterable[str], principal: Any = None, *, first_only: bool = False,
             options: Any = None) -> Iterator[tuple[str, int]]:
        return self.index.find(term, doc_ids, principal, first_only=first_only, options=options)
