"""Old module paths -> new ones: the deliberate renames of the layout (issue 24), and the one mechanism that keeps
the old paths importing.

:data:`RENAMES` is the table. :func:`install` (called by ``evidence_lib/__init__.py``) puts :class:`RenameFinder` at
the front of ``sys.meta_path``: importing an old path imports the new module and binds the old name to that same
module object, so ``evidence_lib.agent.middleware is evidence_lib.integrations.langchain.middleware`` and a class has
one identity whichever path named it. Nothing in the repository imports an old path except
``tests/test_layers.py``, which checks every row.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Final

__all__ = ["RENAMES", "RenameFinder", "install"]

_TEACHING = ("experiment", "explore", "figures", "large_results", "widgets", "workspace")
_EXERCISES = ("_shared", "core", "part1", "part2", "part3", "part4", "part5", "part6", "part7", "part8")
_LANGCHAIN = ("harness", "loop", "middleware", "offload_reader")

#: Old module path -> new module path, one row per moved or renamed module.
RENAMES: Final[dict[str, str]] = {
    # course/: the teaching side, which nothing outside it imports
    "evidence_lib.teaching": "evidence_lib.course",
    **{f"evidence_lib.teaching.{m}": f"evidence_lib.course.{m}" for m in _TEACHING},
    "evidence_lib.exercises": "evidence_lib.course.exercises",
    **{f"evidence_lib.exercises.{m}": f"evidence_lib.course.exercises.{m}" for m in _EXERCISES},
    "evidence_lib.agent.models": "evidence_lib.course.readers",
    "evidence_lib.agent.tasks": "evidence_lib.course.tasks",
    "evidence_lib.agent.accounting": "evidence_lib.course.accounting",
    "evidence_lib.disclosure.datasets": "evidence_lib.course.after_sales",
    "evidence_lib.disclosure.obedient": "evidence_lib.course.obedient",
    "evidence_lib.disclosure.scripted": "evidence_lib.course.scripted",
    # the article's demo data; Document and baseline_dump live in evidence_lib.documents and are re-exported there
    "evidence_lib.corpus": "evidence_lib.course.article",
    # integrations/: LangChain
    **{f"evidence_lib.agent.{m}": f"evidence_lib.integrations.langchain.{m}" for m in _LANGCHAIN},
    # audit/
    "evidence_lib.agent.history": "evidence_lib.audit.history",
    "evidence_lib.agent.checker": "evidence_lib.audit.checker",
    "evidence_lib.agent.audit": "evidence_lib.audit.report",
    # core: the one answer format and its parser
    "evidence_lib.agent.prompt": "evidence_lib.answers",
}


#: New modules that are packages: an old path naming one is a package too, so its submodules import.
_PACKAGES: Final[frozenset[str]] = frozenset({"evidence_lib.course", "evidence_lib.course.exercises"})


class _Alias(importlib.abc.Loader):
    """Loads an old path as the already-imported new module (one module object under two names)."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.new)
        spec.loader_state = module.__spec__  # the import system is about to replace it with the old path's spec
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = module.__spec__.loader_state  # give the module its own spec back: nothing else to run


class RenameFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths of :data:`RENAMES` (and only those)."""

    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        new = RENAMES.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new), is_package=new in _PACKAGES)


def install() -> None:
    """Put one :class:`RenameFinder` first on ``sys.meta_path`` (idempotent)."""
    if not any(isinstance(f, RenameFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, RenameFinder())
