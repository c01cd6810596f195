"""The exercise object behind the workshop notebooks in ``notebooks/exercises/``.

Modelled on Kaggle's learntools: ``q1.check(answer)`` never raises and says *correct*,
*incorrect because ...* or *not attempted yet*; ``q1.hint()`` and ``q1.solution()`` help.
Hints are a ladder: ``q1.hint(1)``, ``q1.hint(2)``, ... and ``q1.hint()`` gives the next rung. No rung
before the last gives the solution away; the last may show the shape of the code.
Every checker computes its expected result with the library itself, never from a pasted number.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Exercise", "Hint", "NotAttempted", "Result", "Solution", "____", "call", "correct", "incorrect",
           "is_placeholder"]


class _Placeholder:
    """The blank a learner replaces: ``answer = ____``. A single, stable object."""

    __slots__ = ()
    _instance: _Placeholder | None = None

    def __new__(cls) -> _Placeholder:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "____"

    def __reduce__(self) -> tuple[type, tuple]:
        return (_Placeholder, ())


#: Put this where your answer goes; checking it says "Not attempted yet".
____ = _Placeholder()


def is_placeholder(value: Any) -> bool:
    """``____`` and ``None`` both mean "not attempted yet"."""
    return value is ____ or value is None


class NotAttempted(Exception):
    """Raised inside a checker when the learner's function still returns ``____``."""


Status = Literal["correct", "incorrect", "not_attempted"]
_PREFIX: dict[str, str] = {
    "correct": "Correct: ",
    "incorrect": "Incorrect: because ",
    "not_attempted": "Not attempted yet: ",
}
_COLOUR = {"correct": "#2e7d32", "incorrect": "#c62828", "not_attempted": "#6d6d6d"}
_MD_SPECIAL = re.compile(r"([\\*_\[\]<>|#])")


def _md_escape(text: str) -> str:
    """Escape Markdown outside `code spans` (kept as written); newlines become line breaks."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # unbalanced backticks: escape everything
        return _MD_SPECIAL.sub(r"\\\1", text).replace("`", "\\`").replace("\n", "  \n")
    out = [p if i % 2 else _MD_SPECIAL.sub(r"\\\1", p) for i, p in enumerate(parts)]
    return "`".join(out).replace("\n", "  \n")


@dataclass(frozen=True)
class Result:
    """What a check says. ``str()``/``repr()`` is exactly the line a learner reads."""

    status: Status
    message: str

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    @property
    def text(self) -> str:
        return _PREFIX[self.status] + self.message

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__

    def _repr_markdown_(self) -> str:
        label, rest = self.text.split(": ", 1)
        return f'<span style="color:{_COLOUR[self.status]}">**{label}:**</span> {_md_escape(rest)}'


def correct(message: str) -> Result:
    return Result("correct", message)


def incorrect(because: str) -> Result:
    """``because`` continues the sentence "Incorrect: because ..."."""
    return Result("incorrect", because)


@dataclass(frozen=True)
class Hint:
    """One rung of an exercise's hint ladder: ``Hint 2 of 3: ...``."""

    text: str
    rung: int = 1
    of: int = 1

    @property
    def label(self) -> str:
        return f"Hint {self.rung} of {self.of}" if self.rung else "Hint"

    def __repr__(self) -> str:
        return f"{self.label}: {self.text}"

    __str__ = __repr__

    def _repr_markdown_(self) -> str:
        return f"**{self.label}:** {_md_escape(self.text)}"


@dataclass(frozen=True)
class Solution:
    code: str
    note: str = ""

    def __repr__(self) -> str:
        return "Solution:\n" + self.code + (f"\n\n{self.note}" if self.note else "")

    __str__ = __repr__

    def _repr_markdown_(self) -> str:
        note = f"\n\n{_md_escape(self.note)}" if self.note else ""
        return f"**Solution:**\n\n```python\n{self.code}\n```{note}"


_ANSWER_NAME = re.compile(r"^(?:def (\w+)\(|(\w+) = )", re.MULTILINE)
_ADDRESS = re.compile(r"\s+at 0x[0-9a-fA-F]+")


def strip_addresses(text: str) -> str:
    """Drop `` at 0x7f...`` from default reprs: outputs must not change from run to run."""
    return _ADDRESS.sub("", text)


def describe(error: BaseException) -> str:
    """``ValueError: message`` on one line: no traceback, no memory address, bounded length."""
    lines = str(error).strip().splitlines()
    message = strip_addresses(lines[0]) if lines else ""
    if len(message) > 160:
        message = message[:157] + "..."
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def call(fn: Any, *args: Any, name: str = "your function") -> Any:
    """Call the learner's function; a ``____`` result means it is still the stub."""
    if not callable(fn):
        raise TypeError(f"{name} should be a function, got {type(fn).__name__}")
    out = fn(*args)
    if out is ____:
        raise NotAttempted
    return out


class Exercise:
    """One workshop exercise: ``check(answer)``, ``hint()``, ``solution()``.

    ``checker(answer)`` returns a :class:`Result`; it may raise anything: :meth:`check` turns an
    exception into "Incorrect: because your code raised ...", so a check never raises.
    """

    def __init__(self, key: str, title: str, *, checker: Callable[[Any], Result], ask: str, hints: Sequence[str],
                 solution: str, stub: str, solution_note: str = "") -> None:
        if isinstance(hints, str) or len(hints) < 2 or not all(isinstance(h, str) and h for h in hints):
            raise ValueError(f"exercise {key}: hints is a ladder of at least two non-empty rungs")
        self.key = key
        self.title = title
        self._checker = checker
        self.ask = ask
        self.hints: tuple[str, ...] = tuple(hints)
        self._next_rung = 1
        self.solution_code = solution.strip("\n")
        self.stub = stub.strip("\n")
        self._solution_note = solution_note

    def __repr__(self) -> str:
        return f"Exercise {self.key} · {self.title}"

    @property
    def answer_name(self) -> str:
        """The name the learner defines (``dump_size``, ``read_page``): what the check cell passes in."""
        m = _ANSWER_NAME.search(self.stub)
        if m is None:
            raise ValueError(f"exercise {self.key}: the stub defines no name")
        return m.group(1) or m.group(2)

    @property
    def check_call(self) -> str:
        """The check cell's source: ``q1.check(dump_size)``."""
        return f"q{self.key.split('.')[1]}.check({self.answer_name})"

    def check(self, answer: Any = ____) -> Result:
        """Say whether ``answer`` is right, and why not; never raises."""
        if is_placeholder(answer):
            return Result("not_attempted", self.ask)
        try:
            result = self._checker(answer)
        except NotAttempted:
            return Result("not_attempted", self.ask)
        except Exception as error:  # noqa: BLE001 - a check must never raise
            return incorrect(f"your code raised {describe(error)}")
        return result

    def hint(self, rung: Any = None) -> Hint:
        """Rung ``rung`` of the ladder (1 = gentlest); without a number, the rung after the last one shown.

        Never raises: a rung out of range is answered with a line that says which rungs exist.
        """
        n = len(self.hints)
        if rung is None:
            rung = self._next_rung
        elif not (isinstance(rung, int) and not isinstance(rung, bool) and 1 <= rung <= n):
            return Hint(f"this exercise has hints 1 to {n}: try {self.check_call.split('.')[0]}.hint(1)", 0, n)
        self._next_rung = min(rung + 1, n)
        return Hint(self.hints[rung - 1], rung, n)

    def solution(self) -> Solution:
        return Solution(self.solution_code, self._solution_note)
