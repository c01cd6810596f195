"""Summaries are navigation; a final answer needs the full clause. Taught in notebook 06.

:func:`dropped_conditions` shows what a one-line summary leaves out of a clause;
:class:`AnswerGate` allows a final answer only after every required clause was read in full
(range coverage from :mod:`evidence_lib._paging`, the same check citations use).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.messages import ToolMessage

from .._errors import EvidenceError
from .._paging import covers
from ._catalog import source_label

__all__ = ["CONDITIONS", "AnswerGate", "dropped_conditions"]

#: Conditions a summary of the return clause must not lose. 三十天内 "within thirty days",
#: 经核实 "after verification".
CONDITIONS: dict[str, str] = {"三十天内": "within thirty days", "经核实": "after verification"}


def dropped_conditions(summary: str, clause: str, conditions: Iterable[str] = CONDITIONS) -> list[str]:
    """Conditions present in ``clause`` but missing from ``summary``, in the order given."""
    return [c for c in conditions if c in clause and c not in summary]


class AnswerGate:
    """Allows a final answer only after each required ``(resource_id, section)`` was read end to end.

    A catalog summary or a partial page does not count; the answer carries the source labels
    (with revisions) of what was read.
    """

    def __init__(self, required: Iterable[tuple[str, str]]) -> None:
        self.required = tuple(required)
        self._ranges: dict[tuple[str, str, str], list[tuple[int, int]]] = {}
        self._totals: dict[tuple[str, str, str], int] = {}

    def observe(self, reply: Mapping[str, Any] | ToolMessage) -> None:
        """Record a ``read_section`` reply (a dict, or a ``ToolMessage`` carrying one as JSON)."""
        if isinstance(reply, ToolMessage):
            if reply.status == "error" or not isinstance(reply.content, str):  # a read_section reply is one string
                return
            try:
                reply = json.loads(reply.content)
            except ValueError:
                return
        if not isinstance(reply, Mapping) or reply.get("kind") != "data" or "total_chars" not in reply \
                or "resource_id" not in reply:
            return
        key = (reply["resource_id"], reply["revision"], reply["section"])
        self._ranges.setdefault(key, []).append((reply["start"], reply["end"]))
        self._totals[key] = reply["total_chars"]

    def _complete(self) -> dict[tuple[str, str], str]:
        done = {}
        for (rid, revision, section), ranges in sorted(self._ranges.items()):
            if covers(ranges, 0, self._totals[(rid, revision, section)]):
                done[(rid, section)] = source_label(rid, revision, section)
        return done

    def missing(self) -> list[str]:
        """The required ``resource_id#section`` pairs not yet read end to end: what still blocks the answer
        (notebook 06)."""
        done = self._complete()
        return [f"{rid}#{section}" for rid, section in self.required if (rid, section) not in done]

    def final_answer(self, text: str) -> dict[str, Any]:
        """The answer with its sources, or ``evidence_incomplete`` naming the clauses still unread."""
        missing = self.missing()
        if missing:
            raise EvidenceError("evidence_incomplete", missing=missing)
        done = self._complete()
        return {"answer": text, "sources": [done[r] for r in self.required]}


