"""One budget per task, shared by the three tools. Taught in notebook 05.

A page limit bounds one call; the ledger bounds the task: calls, characters, UTF-8 bytes and
cl100k tokens returned, and reads per document. It remembers every read as
``(doc_id, revision, start, end)`` so a read already covered is answered ``already_read``
without text. Over budget, tools raise ``budget_exhausted`` with the totals; refused calls
are recorded but never charged.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

from .errors import EvidenceError
from .measure import cl100k_tokens, utf8_bytes


@dataclass(frozen=True)
class Budget:
    """Limits for one task; ``None`` means unlimited."""

    max_calls: int | None = 20
    max_chars: int | None = 6_000
    max_bytes: int | None = 16_000
    max_tokens: int | None = 6_000
    max_reads_per_doc: int | None = 4


@dataclass(frozen=True)
class ReadRecord:
    doc_id: str
    revision: str
    start: int
    end: int


@dataclass(frozen=True)
class LedgerEntry:
    """One call as the ledger saw it; refused calls have ``charged=False`` and zero sizes."""

    step: int
    tool: str
    status: str  # "ok", "already_read", or an error code
    chars: int = 0
    bytes: int = 0
    tokens: int = 0
    charged: bool = True
    read: ReadRecord | None = None
    reason: str | None = None  # for budget_exhausted: which limit ran out
    covered: tuple[str, int, int] | None = None  # for already_read: the range asked for


@dataclass
class Ledger:
    """Cumulative spend of one task. Hand the same ledger to :func:`evidence_tools`."""

    budget: Budget = field(default_factory=Budget)
    entries: list[LedgerEntry] = field(default_factory=list)

    # -- what has been spent ------------------------------------------------------------
    @property
    def charged(self) -> list[LedgerEntry]:
        return [e for e in self.entries if e.charged]

    @property
    def reads(self) -> list[ReadRecord]:
        return [e.read for e in self.charged if e.read is not None]

    def totals(self) -> dict[str, int]:
        c = self.charged
        return {
            "calls": len(c),
            "chars": sum(e.chars for e in c),
            "bytes": sum(e.bytes for e in c),
            "tokens": sum(e.tokens for e in c),
        }

    def limits(self) -> dict[str, int | None]:
        b = self.budget
        return {"calls": b.max_calls, "chars": b.max_chars, "bytes": b.max_bytes, "tokens": b.max_tokens}

    def _exhausted(self, reason: str) -> EvidenceError:
        return EvidenceError("budget_exhausted", reason=reason, spent=self.totals(), limits=self.limits())

    # -- the three hooks the tools call ---------------------------------------------------
    def admit(self, tool: str, doc_id: str | None = None) -> None:
        """Refuse before any work when the call count or the per-document reads are used up."""
        b = self.budget
        if b.max_calls is not None and len(self.charged) >= b.max_calls:
            raise self._exhausted("calls")
        if doc_id is not None and b.max_reads_per_doc is not None:
            if Counter(r.doc_id for r in self.reads)[doc_id] >= b.max_reads_per_doc:
                raise self._exhausted("reads_per_doc")

    def covering(self, doc_id: str, revision: str, start: int, end: int) -> list[tuple[int, int]]:
        """Earlier ranges of the same doc and revision that together cover ``[start, end)``, else []."""
        if start >= end:
            return []
        ranges = sorted((r.start, r.end) for r in self.reads if (r.doc_id, r.revision) == (doc_id, revision))
        used, reach = [], start
        for s, e in ranges:
            if s <= reach < e:
                used.append((s, e))
                reach = e
                if reach >= end:
                    return used
        return []

    def charge(self, tool: str, content: str, *, status: str = "ok",
               read: tuple[str, str, int, int] | None = None,
               covered: tuple[str, int, int] | None = None) -> None:
        """Record ``content`` as returned, or refuse it whole if it would overrun a limit."""
        size = {"chars": len(content), "bytes": utf8_bytes(content), "tokens": cl100k_tokens(content)}
        spent, limits = self.totals(), self.limits()
        for unit in ("chars", "bytes", "tokens"):
            if limits[unit] is not None and spent[unit] + size[unit] > limits[unit]:
                raise self._exhausted(unit)
        self.entries.append(LedgerEntry(len(self.entries) + 1, tool, status, **size,
                                        read=ReadRecord(*read) if read else None, covered=covered))

    def refused(self, tool: str, code: str, reason: str | None = None) -> None:
        """Record a refused call (kept for the record, never charged)."""
        self.entries.append(LedgerEntry(len(self.entries) + 1, tool, code, charged=False, reason=reason))

    # -- reporting -----------------------------------------------------------------------
    def summary(self) -> str:
        """A fixed-width table of every call and the running totals."""
        lines = [f"{'step':>4}  {'tool':<16} {'status':<30} {'chars':>6} {'bytes':>7} {'tokens':>7}  range"]
        for e in self.entries:
            status = f"{e.status} ({e.reason})" if e.reason else e.status
            if e.read:
                rng = f"{e.read.doc_id} [{e.read.start}, {e.read.end})"
            elif e.covered:
                rng = f"{e.covered[0]} [{e.covered[1]}, {e.covered[2]}) seen"
            else:
                rng = ""
            lines.append(f"{e.step:>4}  {e.tool:<16} {status:<30} {e.chars:>6,} {e.bytes:>7,} {e.tokens:>7,}  {rng}".rstrip())
        t, lim = self.totals(), self.limits()
        lines.append(
            "spent: " + ", ".join(f"{k} {t[k]:,}" + (f"/{lim[k]:,}" if lim[k] is not None else "") for k in t)
        )
        return "\n".join(lines)

    def as_rows(self) -> list[dict]:
        return [asdict(e) for e in self.entries]

    def plot(self, ax=None, unit: str = "bytes"):
        """Cumulative spend per step (refused calls drawn as crosses at the current total)."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6.4, 3.2))
        total, xs, ys, refused = 0, [0], [0], []
        for e in self.entries:
            total += getattr(e, unit) if e.charged else 0
            xs.append(e.step)
            ys.append(total)
            if not e.charged:
                refused.append((e.step, total))
        ax.step(xs, ys, where="post", label=f"cumulative {unit}")
        limit = self.limits().get(unit)
        if limit is not None:
            ax.axhline(limit, color="tab:red", linestyle="--", label=f"budget ({limit:,} {unit})")
        if refused:
            ax.scatter(*zip(*refused), marker="x", color="tab:red", zorder=3, label="refused (not charged)")
        ax.set_xlabel("tool call")
        ax.set_ylabel(unit)
        ax.legend(loc="lower right")
        return ax
