"""Workshop exercises, learntools style: ``q1.check(answer)``, ``q1.hint()``, ``q1.solution()``.

Four parts, one notebook each in ``notebooks/exercises/`` (solutions in ``solutions/``):

* :mod:`.part1` baseline and measurement (notebook 01)
* :mod:`.part2` the three-tool protocol (notebook 02)
* :mod:`.part3` citations and failure scenarios (notebooks 03 and 04)
* :mod:`.part4` budgets, dedupe and loading tool schemas on demand (notebooks 04 to 06)

A check never raises: it returns a :class:`Result` whose text starts with ``Correct:``,
``Incorrect: because`` or ``Not attempted yet:``. ``____`` (or ``None``) marks a blank answer.
"""

from __future__ import annotations

from importlib import import_module

from .core import Exercise, Hint, Result, Solution, ____, is_placeholder

__all__ = ["PARTS", "Exercise", "Hint", "Result", "Solution", "____", "all_exercises", "exercise", "is_placeholder"]

#: Module name of each part, in workshop order.
PARTS = ("part1", "part2", "part3", "part4")


def all_exercises() -> dict[str, Exercise]:
    """Every exercise by key (``"1.1"`` .. ``"4.4"``), in workshop order."""
    out: dict[str, Exercise] = {}
    for part in PARTS:
        module = import_module(f"{__name__}.{part}")
        for name in sorted(n for n in vars(module) if n[:1] == "q" and n[1:].isdigit()):
            ex = getattr(module, name)
            out[ex.key] = ex
    return out


def exercise(key: str) -> Exercise:
    """One exercise by key, e.g. ``exercise("2.1")``."""
    return all_exercises()[key]
