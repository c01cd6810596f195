"""Concurrency shown as behaviour, not time (tests/test_loop_parallel.py, tests/test_parallel_reads.py): a gate holds
each caller until ``want`` callers are inside at once, and records the most that ever were."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from evidence_lib import EvidenceIndex
from evidence_lib._index import IndexEntry, Snapshot


class Gate:
    """Holds each caller until ``want`` callers are inside at once (then stays open), or ``timeout`` passes (it only
    keeps a sequential run from hanging). ``peak`` is the most that were ever inside together; ``entered`` counts
    every caller."""

    def __init__(self, want: int, timeout: float = 2.0) -> None:
        self.want, self.timeout = want, timeout
        self.inside = self.peak = self.entered = 0
        self.open = False
        self.cv = threading.Condition()

    @contextmanager
    def held(self) -> Iterator[None]:
        with self.cv:
            self.inside += 1
            self.entered += 1
            self.peak = max(self.peak, self.inside)
            self.open = self.open or self.inside >= self.want
            self.cv.notify_all()
            self.cv.wait_for(lambda: self.open, self.timeout)
        try:
            yield
        finally:
            with self.cv:
                self.inside -= 1


class GatedIndex:
    """An index whose document reads (``text``, ``snapshot``) pass through a :class:`Gate` of ``want`` readers;
    ``peak`` and ``reads`` are the gate's."""

    def __init__(self, inner: EvidenceIndex, want: int, timeout: float = 2.0) -> None:
        self.inner, self.gate = inner, Gate(want, timeout)

    peak = property(lambda self: self.gate.peak)
    reads = property(lambda self: self.gate.entered)

    def visible(self, principal=None, action="discover") -> list[IndexEntry]:
        return self.inner.visible(principal, action)

    def entry(self, doc_id, principal=None, action="read") -> IndexEntry:
        return self.inner.entry(doc_id, principal, action)

    def snapshot(self, doc_id, principal=None) -> Snapshot:
        with self.gate.held():
            return self.inner.snapshot(doc_id, principal)

    def text(self, doc_id, principal=None, start=0, end=None) -> str:
        with self.gate.held():
            return self.inner.text(doc_id, principal, start, end)

    def find(self, term: str, doc_ids: Iterable[str], principal=None, *, first_only=False,
             options=None) -> Iterator[tuple[str, int]]:
        return self.inner.find(term, doc_ids, principal, first_only=first_only, options=options)
