"""Injected clocks: time is a parameter, never ``datetime.now()`` inside the library.

Introduced in notebook 07 (artifact expiry) and used by every store with a TTL. A clock is any
zero-argument callable returning an aware ``datetime``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

__all__ = ["Clock", "FixedClock", "ManualClock"]

Clock = Callable[[], datetime]


class FixedClock:
    """A clock that always says ``at`` (an aware datetime). Use instead of ``datetime.now``."""

    def __init__(self, at: datetime) -> None:
        if at.tzinfo is None or at.utcoffset() is None:
            raise ValueError("clock times must be timezone-aware")
        self._at = at

    def __call__(self) -> datetime:
        return self._at

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._at.isoformat()})"


class ManualClock(FixedClock):
    """A fixed clock that a test or notebook moves forward explicitly."""

    def advance(self, delta: timedelta | None = None, **kwargs: float) -> datetime:
        """Move forward by ``delta`` or by ``timedelta(**kwargs)``; return the new time."""
        step = delta if delta is not None else timedelta(**kwargs)
        if step < timedelta(0):
            raise ValueError("a clock does not go backwards")
        self._at = self._at + step
        return self._at

    def set(self, at: datetime) -> None:
        """Move the clock to ``at``; never backwards (``ValueError``), as a TTL must not come back to life
        (notebooks 07 and 11 move it past a TTL)."""
        if at < self._at:
            raise ValueError("a clock does not go backwards")
        self._at = at
