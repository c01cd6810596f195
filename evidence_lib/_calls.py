"""One tool call's scope: what the call fetched and verified, kept for that call alone. Notebooks 02 and 11.

A call reads one document many times (a compact locate cuts a window per match) and may touch a store many times.
Within one call each document is read and checked against its sha256 once, a store snapshot's chunks are fetched
once, its published check is made once, and a store's reads share one read transaction (issues 15 and 31). What the
call keeps lives on a :class:`Call` in a context variable, never on a shared object, and only for that call:

* every tool call opens its own (:class:`~evidence_lib._toolkit.EvidenceTool` does, with :func:`serving`), so a later
  call always verifies for itself;
* a call belongs to the thread and the asyncio task that opened it. A task or thread started inside it (asyncio's
  tasks, ``asyncio.to_thread`` and ``copy_context().run`` copy the context) does not see it: it verifies for itself,
  and never joins a call it did not open;
* a call is closed when its block ends: what it kept is dropped, what it holds (a read transaction) is released, and
  a closed call is ignored, so a context copied from it, or a block entered and never left, serves nothing later.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["Call", "current", "serving", "within"]


def _here() -> tuple[int, Any]:
    """The thread and the asyncio task running now (``None`` outside a task)."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop running in this thread
        task = None
    return threading.get_ident(), task


class Call:
    """One tool call's scope: ``kept`` holds what its indexes and stores keep for it (keyed by who keeps it);
    ``neighbours`` asks a store snapshot to fetch the chunks either side of a locate's candidates (its windows)."""

    def __init__(self, neighbours: bool = False) -> None:
        self.neighbours = neighbours
        self.kept: dict[Any, Any] = {}
        self.closed = False
        self._owner = _here()
        self._closers: list[Callable[[], None]] = []

    def mine(self) -> bool:
        """Open, and opened by the thread and task running now."""
        if self.closed:
            return False
        thread, task = _here()
        return thread == self._owner[0] and task is self._owner[1]

    def on_close(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` when the call ends (releasing what it holds), last registered first."""
        self._closers.append(fn)

    def close(self) -> None:
        """End the call: release what it holds, drop what it kept; later lookups ignore it."""
        if self.closed:
            return
        self.closed = True
        closers, self._closers = self._closers, []
        try:
            for fn in reversed(closers):
                fn()
        finally:
            self.kept.clear()


_CALL: ContextVar[Call | None] = ContextVar("evidence_call", default=None)


def current() -> Call | None:
    """The call this code runs in: open, and opened by this thread and task; else ``None``."""
    call = _CALL.get()
    return call if call is not None and call.mine() else None


@contextmanager
def serving(*, neighbours: bool = False) -> Iterator[Call]:
    """Open a call of its own for the block (never joining one already open) and close it when the block ends."""
    call = Call(neighbours)
    token = _CALL.set(call)
    try:
        yield call
    finally:
        try:
            _CALL.reset(token)
        except ValueError:  # left in another context than it was entered in: the call is closed all the same
            pass
        call.close()


@contextmanager
def within(*, neighbours: bool = False) -> Iterator[Call]:
    """The current call (the tool call this body runs in), else one of its own for the block."""
    call = current()
    if call is None:
        with serving(neighbours=neighbours) as call:
            yield call
        return
    call.neighbours = call.neighbours or neighbours
    yield call
