"""Reads must stop: the second article's stop conditions, and what to prefetch. Taught in notebook 07.

* :class:`ReadSession` enforces the article's stop conditions: at most N supplementary reads,
  the same resource at the same revision reused rather than re-read, and consecutive reads without
  new evidence stop the loop with a report of what is missing. Given the task's ``ledger`` (the one
  the tools share), every page a session loads is charged to it like ``read_section``, and a spent
  budget stops the session (``budget_exhausted``).
* :func:`plan_loading` and :class:`LatencyIllustration`: prefetch what nearly every task needs,
  load rare large things on demand, and the article's latency arithmetic, labelled as such.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from .._access import Principal
from .._errors import EvidenceError, StopReason
from .._measure import Size
from ._catalog import Catalog, source_label

__all__ = ["MAX_PREFETCH_BYTES", "PREFETCH_RATE", "LatencyIllustration", "LoadItem", "Need", "ReadSession",
           "StopRules", "plan_loading"]

if TYPE_CHECKING:
    from .._ledger import Ledger


@dataclass(frozen=True)
class StopRules:
    """A business choice, not a universal optimum (the article's example values are the defaults)."""

    max_supplementary_reads: int = 2
    max_reads_without_new_evidence: int = 2


@dataclass(frozen=True)
class Need:
    """One piece of evidence the task needs; found when a read's text contains ``marker`` literally."""

    name: str
    marker: str


@dataclass
class ReadSession:
    """Reads for one task under :class:`StopRules`; prefetched reads do not count as supplementary.

    ``ledger``: the task's budget (the one the tools share). Each page loaded is charged to it as a
    ``read_resource_section`` call; when the budget refuses, the session stops with ``budget_exhausted``.
    """

    catalog: Catalog
    principal: Principal | None
    needs: tuple[Need, ...]
    rules: StopRules = field(default_factory=StopRules)
    catalog_reads: int = 0
    supplementary_reads: int = 0
    reused: int = 0
    stop_reason: StopReason | None = None
    found: dict[str, str] = field(default_factory=dict)  # need name -> source label
    log: list[dict[str, Any]] = field(default_factory=list)
    _cache: dict[str, str] = field(default_factory=dict, repr=False)
    _idle: int = 0
    ledger: Ledger | None = field(default=None, repr=False, compare=False)

    def prefetch(self, resource_id: str, revision: str, section: str) -> dict[str, Any]:
        """Load something (nearly) every task needs, before the loop; not counted against the limit."""
        return self._load(resource_id, revision, section, supplementary=False)

    def read(self, resource_id: str, revision: str, section: str) -> dict[str, Any]:
        """One supplementary read, unless a stop condition holds or the same thing is already loaded."""
        label = source_label(resource_id, revision, section)
        if label in self._cache:
            self.reused += 1
            return self._note(label, "reused", [])
        if self.stop_reason is not None:
            return self._note(label, "stopped", [], reason=self.stop_reason)
        return self._load(resource_id, revision, section, supplementary=True)

    def _load(self, resource_id: str, revision: str, section: str, *, supplementary: bool) -> dict[str, Any]:
        label = source_label(resource_id, revision, section)
        if label in self._cache:
            self.reused += 1
            return self._note(label, "reused", [])
        self.catalog_reads += 1
        self.supplementary_reads += supplementary
        try:
            text, offset = "", 0
            while offset is not None:  # one logical read of the whole section, page by page
                page = self.catalog.read_section(self.principal, resource_id, revision, section, offset,
                                                 ledger=self.ledger)
                if page.get("status") == "already_read":  # already in the context: fetched, not charged again
                    page = self.catalog.read_section(self.principal, resource_id, revision, section, offset)
                text, offset = text + page["text"], page["next_offset"]
            status = "read"
        except EvidenceError as e:
            text, status = "", e.code
            if self.ledger is not None:
                self.ledger.refused("read_resource_section", e)
                if e.code == "budget_exhausted" and self.stop_reason is None:
                    self.stop_reason = "budget_exhausted"
        else:
            self._cache[label] = text
        new = [n.name for n in self.needs if n.name not in self.found and n.marker in text]
        for name in new:
            self.found[name] = label
        if supplementary:
            self._idle = 0 if new else self._idle + 1
        self._update_stop()
        return self._note(label, status, new)

    def _update_stop(self) -> None:
        if self.stop_reason is not None:
            return
        if not self.missing():
            self.stop_reason = "all_needs_found"
        elif self._idle >= self.rules.max_reads_without_new_evidence:
            self.stop_reason = "no_new_evidence"
        elif self.supplementary_reads >= self.rules.max_supplementary_reads:
            self.stop_reason = "read_limit"

    def _note(self, label: str, status: str, new: list[str], **extra: Any) -> dict[str, Any]:
        row = {"source": label, "status": status, "new_evidence": new, **extra}
        self.log.append(row)
        return row

    def missing(self) -> list[str]:
        """The names of the stated needs not yet found: why the stop rules would not yet let the task end
        (notebook 07)."""
        return [n.name for n in self.needs if n.name not in self.found]

    def report(self) -> dict[str, Any]:
        """What the loop knows when it stops: found evidence with sources, and what is still missing."""
        return {
            "stopped": self.stop_reason is not None,
            "reason": self.stop_reason,
            "found": dict(sorted(self.found.items())),
            "missing": self.missing(),
            "supplementary_reads": self.supplementary_reads,
            "max_supplementary_reads": self.rules.max_supplementary_reads,
            "reused": self.reused,
            "catalog_reads": self.catalog_reads,
        }


# -- prefetch vs on demand, and the article's latency arithmetic --------------------------------

@dataclass(frozen=True)
class LoadItem:
    """Something a task may need: its measured size and the share of tasks assumed to need it."""

    label: str
    size: Size
    need_rate: float  # an assumption about the workload, not a measurement


#: plan_loading's default rule: prefetch an item only if at least this share of tasks needs it ...
PREFETCH_RATE = 0.8
#: ... and it is at most this many UTF-8 bytes. Everything else is loaded on demand.
MAX_PREFETCH_BYTES = 2_000


def plan_loading(items: Sequence[LoadItem], *, prefetch_rate: float = PREFETCH_RATE,
                 max_prefetch_bytes: int = MAX_PREFETCH_BYTES) -> dict[str, Any]:
    """Prefetch small items most tasks need; leave the rest on demand. Expected bytes per task both ways.

    An item is prefetched when ``need_rate >= prefetch_rate`` and ``size.utf8_bytes <= max_prefetch_bytes``;
    a small item needed less often (or a frequent but large one) stays on demand.
    """
    pre = [i for i in items if i.need_rate >= prefetch_rate and i.size.utf8_bytes <= max_prefetch_bytes]
    lazy = [i for i in items if i not in pre]
    return {
        "prefetch": [i.label for i in pre],
        "on_demand": [i.label for i in lazy],
        "bytes_everything_up_front": sum(i.size.utf8_bytes for i in items),
        "bytes_expected_with_plan": round(sum(i.size.utf8_bytes for i in pre)
                                          + sum(i.need_rate * i.size.utf8_bytes for i in lazy)),
    }


@dataclass(frozen=True)
class LatencyIllustration:
    """The article's example: decide 1 s + read 0.2 s + answer 1 s. Arithmetic, not a measurement."""

    decide_s: Decimal = Decimal("1")
    read_s: Decimal = Decimal("0.2")
    answer_s: Decimal = Decimal("1")
    label: str = "illustrative arithmetic, not a measurement"

    @property
    def direct_s(self) -> Decimal:
        """Everything given up front (a one-page source): just the answering call."""
        return self.answer_s

    @property
    def progressive_s(self) -> Decimal:
        return self.decide_s + self.read_s + self.answer_s

    @property
    def extra_s(self) -> Decimal:
        return self.progressive_s - self.direct_s

    def __str__(self) -> str:
        return (f"[{self.label}] direct: {self.direct_s} s; progressive: {self.decide_s} s + {self.read_s} s + "
                f"{self.answer_s} s = {self.progressive_s} s; extra: {self.extra_s} s")
