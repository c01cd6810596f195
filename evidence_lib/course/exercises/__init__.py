"""Workshop exercises, learntools style: ``q1.check(answer)``, ``q1.hint()``, ``q1.solution()``.

Eight parts, one notebook each in ``notebooks/exercises/`` (solutions in ``solutions/``):

* :mod:`.part1` baseline and measurement (notebook 01)
* :mod:`.part2` the three-tool protocol (notebook 02)
* :mod:`.part3` citations and failure scenarios (notebooks 03 and 04)
* :mod:`.part4` budgets, dedupe and loading tool schemas on demand (notebooks 04 to 06)
* :mod:`.part5` progressive disclosure, artifacts and revisions (notebooks 06 and 07)
* :mod:`.part6` real documents: a retriever, compact replies, recall (notebook 08)
* :mod:`.part7` the agent loop's answer and the production store (notebooks 09 and 11)
* :mod:`.part8` large tool results behind a handle: offload or keep, a JSON section by key path (notebook 12)

A check never raises: it returns a :class:`Result` whose text starts with ``Correct:``,
``Incorrect: because`` or ``Not attempted yet:``. ``____`` (or ``None``) marks a blank answer.
Hints are a ladder: ``q1.hint(1)``, ``q1.hint(2)``, ...; ``q1.hint()`` gives the next rung.
"""

from __future__ import annotations

from importlib import import_module

from .core import Exercise, Hint, Result, Solution, ____, is_placeholder

__all__ = ["WORKSHOP_PARTS", "Exercise", "Hint", "Result", "Solution", "____", "all_exercises", "exercise", "is_placeholder"]

#: Module name of each part, in workshop order.
WORKSHOP_PARTS = ("part1", "part2", "part3", "part4", "part5", "part6", "part7", "part8", "part9")


def all_exercises() -> dict[str, Exercise]:
    """Every exercise by key (``"1.1"`` .. ``"8.2"``), in workshop order."""
    out: dict[str, Exercise] = {}
    for part in WORKSHOP_PARTS:
        module = import_module(f"{__name__}.{part}")
        for name in sorted(n for n in vars(module) if n[:1] == "q" and n[1:].isdigit()):
            ex = getattr(module, name)
            out[ex.key] = ex
    return out


def exercise(key: str) -> Exercise:
    """One exercise by key, e.g. ``exercise("2.1")``."""
    return all_exercises()[key]
