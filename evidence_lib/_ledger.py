"""One budget per task, shared by the three tools. Taught in notebook 05.

A page limit bounds one call; the ledger bounds the task: calls, characters, UTF-8 bytes and
cl100k tokens returned, and reads per document. It remembers every read as
``(doc_id, revision, start, end, sha256)`` so a read already covered *by the same bytes* is
answered ``already_read`` without text. Over budget, tools raise ``budget_exhausted`` with the totals.

A refused call is not charged against the budget, but it is not free either: its error message
enters the model's context. The ledger records that size too (:meth:`Ledger.context`), and after
``max_refusals`` refused calls it refuses everything with ``budget_exhausted`` (reason
``refusals``), so a model looping on bad calls is stopped.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

from . import _calls as calls
from ._errors import EvidenceError, error_payload, to_json
from ._measure import Size
from ._paging import covering_reads
from ._spans import Span

__all__ = ["Budget", "Ledger", "LedgerEntry", "ReadRecord", "Tally"]


@dataclass(frozen=True)
class Budget:
    """Limits for one task; ``None`` means unlimited."""

    max_calls: int | None = 20
    max_chars: int | None = 6_000
    max_bytes: int | None = 16_000
    max_tokens: int | None = 6_000
    max_reads_per_doc: int | None = 4
    max_refusals: int | None = 10


@dataclass(frozen=True)
class ReadRecord(Span):
    """One range served to the model: a :class:`~evidence_lib._spans.Span` whose ``sha256`` is required, so a read is
    bound to the bytes it came from, not only to labels."""

    sha256: str = field()  # required here: field() drops the default inherited from Span


@dataclass(frozen=True)
class LedgerEntry:
    """One call as the ledger saw it. Sizes are what entered the context; refusals have ``charged=False``."""

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
    excerpts: tuple[ReadRecord, ...] = ()  # text served by a compact locate (cited windows), also reads

    @property
    def refused(self) -> bool:
        return not self.charged


@dataclass(frozen=True)
class Tally:
    """The counters every limit is checked against, as one storage sees them at one moment."""

    step: int  # entries so far (charged and refused)
    calls: int
    chars: int
    bytes: int
    tokens: int
    refused: int
    doc_reads: Callable[[str], int]  # charged page reads of one doc_id
    #: earlier reads of the same bytes covering a range: ``covering(doc_id, revision, sha256, start, end)``
    covering: Callable[[str, str, str, int, int], list[tuple[int, int]]] = lambda *_: []

    def spent(self) -> dict[str, int]:
        return {"calls": self.calls, "chars": self.chars, "bytes": self.bytes, "tokens": self.tokens}


@dataclass
class Ledger:
    """Cumulative spend of one task. Hand the same ledger to :func:`evidence_tools` (and to every other reading
    tool of the task: one budget covers them all).

    The limits are checked here, once, for every storage: this class keeps its entries in a list, and
    :class:`~evidence_lib.store.StoreLedger` in a store shared by many workers. A storage provides three hooks:
    :meth:`tally` (the counters now), :meth:`locked` (the counters under the storage's write lock, for one
    charge) and :meth:`append` (write one entry under that lock).

    It is safe under concurrent calls: LangGraph runs one message's tool calls in threads. A call decides on the
    counters as they are (:meth:`admit`: within budget? already read?), does its work (a read fetches its page)
    outside any lock, and is charged under the storage's lock with every limit checked again (:meth:`charge`,
    :meth:`charge_read`), so parallel calls overlap and never overspend a limit. Inside one tool call
    (:mod:`evidence_lib._calls`) the counters are read once for all its decisions: a store ledger adds one read and
    one write to a call.
    """

    budget: Budget = field(default_factory=Budget)
    entries: list[LedgerEntry] = field(default_factory=list)
    _lock: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False, compare=False)

    # -- storage hooks (overridden by StoreLedger) ----------------------------------------
    def tally(self) -> Tally:
        """The counters now: for early refusals and reports."""
        with self._lock:
            entries = list(self.entries)
        charged = [e for e in entries if e.charged]
        per_doc = Counter(e.read.doc_id for e in charged if e.read is not None)
        return Tally(len(entries), len(charged), sum(e.chars for e in charged), sum(e.bytes for e in charged),
                     sum(e.tokens for e in charged), len(entries) - len(charged), per_doc.__getitem__,
                     lambda *rng: covering_reads(_reads(charged), *rng) or [])

    @contextmanager
    def locked(self) -> Iterator[Tally]:
        """The counters under this ledger's lock, held until the block ends: no other thread checks or writes
        meanwhile (without it, 4 calls were charged under ``max_calls=3``)."""
        with self._lock:
            yield self.tally()

    def append(self, tally: Tally, entry: LedgerEntry) -> None:
        """Write ``entry`` (its ``step`` is ``tally.step + 1``) inside :meth:`locked`."""
        self.entries.append(entry)

    # -- what has been spent ------------------------------------------------------------
    @property
    def charged(self) -> list[LedgerEntry]:
        """The entries the budget paid for (refusals cost nothing)."""
        return [e for e in self.entries if e.charged]

    @property
    def reads(self) -> list[ReadRecord]:
        """Every range of document text the model was served (pages and excerpts), in order."""
        return _reads(self.charged)

    @property
    def refusals(self) -> list[LedgerEntry]:
        """The entries the ledger refused: nothing was read for them."""
        return [e for e in self.entries if not e.charged]

    def totals(self) -> dict[str, int]:
        """What was charged against the budget: calls that returned content."""
        return self.tally().spent()

    def context(self) -> dict[str, int]:
        """What entered the model's context through these tools: charged calls *and* refusals."""
        entries = self.entries
        return {"calls": len(entries), "chars": sum(e.chars for e in entries), "bytes": sum(e.bytes for e in entries),
                "tokens": sum(e.tokens for e in entries), "refused": sum(1 for e in entries if not e.charged)}

    def limits(self) -> dict[str, int | None]:
        """The budget's four caps by name (calls, chars, bytes, tokens); ``None`` is no cap."""
        b = self.budget
        return {"calls": b.max_calls, "chars": b.max_chars, "bytes": b.max_bytes, "tokens": b.max_tokens}

    def _now(self) -> Tally:
        """The counters a call decides on: :meth:`tally`, read once per tool call (kept on the call until this ledger
        writes), so its refusal check, admission and dedupe share one read. Decisions only: a charge re-checks."""
        call = calls.current()
        if call is None:
            return self.tally()
        key = ("tally", id(self))
        if key not in call.kept:
            call.kept[key] = self.tally()
        return call.kept[key]

    def _wrote(self) -> None:
        """This ledger wrote: the call's counters are read again if it decides anything more."""
        call = calls.current()
        if call is not None:
            call.kept.pop(("tally", id(self)), None)

    def _exhausted(self, reason: str, tally: Tally | None = None) -> EvidenceError:
        spent = (tally or self.tally()).spent()
        return EvidenceError("budget_exhausted", _MESSAGES.get(reason), reason=reason, spent=spent,
                             limits=self.limits())

    def _check(self, t: Tally, *, size: Size | None = None, doc_id: str | None = None) -> None:
        """Every limit, in one place: refusals, calls, reads of ``doc_id``, and (with ``size``) chars, bytes, tokens."""
        b = self.budget
        if b.max_refusals is not None and t.refused >= b.max_refusals:
            raise self._exhausted("refusals", t)
        if b.max_calls is not None and t.calls >= b.max_calls:
            raise self._exhausted("calls", t)
        if doc_id is not None and b.max_reads_per_doc is not None and t.doc_reads(doc_id) >= b.max_reads_per_doc:
            raise self._exhausted("reads_per_doc", t)
        if size is not None:
            for unit, n in (("chars", size.chars), ("bytes", size.utf8_bytes), ("tokens", size.cl100k_tokens)):
                limit = self.limits()[unit]
                if limit is not None and getattr(t, unit) + n > limit:
                    raise self._exhausted(unit, t)

    # -- the hooks the tools call -----------------------------------------------------------
    def admit(self, tool: str, doc_id: str | None = None) -> None:
        """Refuse before any work when the call count or the per-document reads are used up."""
        self._check(self._now(), doc_id=doc_id)

    def check_refusals(self) -> None:
        """Refuse every call once ``max_refusals`` calls were refused: the caller is looping."""
        t = self._now()
        if self.budget.max_refusals is not None and t.refused >= self.budget.max_refusals:
            raise self._exhausted("refusals", t)

    def covering(self, doc_id: str, revision: str, sha256: str, start: int, end: int) -> list[tuple[int, int]]:
        """Earlier ranges read from the same bytes that together cover ``[start, end)``, else ``[]``."""
        return covering_reads(self.reads, doc_id, revision, sha256, start, end) or []

    def charge(self, tool: str, content: str, *, status: str = "ok",
               read: tuple[str, str, int, int, str] | None = None,
               covered: tuple[str, int, int] | None = None,
               excerpts: list[tuple[str, str, int, int, str]] | tuple = ()) -> None:
        """Record ``content`` as returned, or refuse it whole if it would overrun a limit.

        Every limit is re-checked under the storage's lock (:meth:`locked`), so two workers (or threads) sharing
        one ledger can never overspend it together.
        """
        size = Size.of(content)
        with self.locked() as t:
            self._write(t, tool, content, size, status=status, read=read, covered=covered, excerpts=excerpts)

    def charge_read(self, tool: str, read: tuple[str, str, int, int, str], render: Callable[[], str],
                    seen: Callable[[list[tuple[int, int]]], str]) -> str:
        """Serve one page ``read = (doc_id, revision, start, end, sha256)``: admitted (refusals, calls), then answered
        ``already_read`` with ``seen(earlier)`` when earlier reads of the same bytes cover it (a call, not a read),
        else the per-document limit is checked and ``render()`` (which fetches the page) is charged as the read.

        Decide, fetch, charge (notebook 05; issue 31): the decision is made on the counters as they are, the page is
        fetched outside any lock (parallel reads overlap), and the charge re-checks everything under the storage's
        lock: if another call read the same range meanwhile this one is ``already_read``, and no limit is ever
        passed. A store ledger's part of the call is one read of its counters and one write."""
        doc_id, revision, start, end, sha256 = read
        t = self._now()
        self._check(t)  # admission: refusals and calls, before anything is looked at
        content = None
        if not t.covering(doc_id, revision, sha256, start, end):
            self._check(t, doc_id=doc_id)  # before the page is fetched: nothing is read past the limit
            content = render()
        while True:
            with self.locked() as t:
                earlier = t.covering(doc_id, revision, sha256, start, end)
                if earlier:  # read before, or by a parallel call meanwhile
                    shown = seen(earlier)
                    return self._write(t, tool, shown, Size.of(shown), status="already_read",
                                       covered=(doc_id, start, end))
                if content is not None:
                    return self._write(t, tool, content, Size.of(content), read=read)
                self._check(t, doc_id=doc_id)  # covered when decided, no longer (a deleted history): fetch now
            content = render()

    def _write(self, t: Tally, tool: str, content: str, size: Size, *, status: str = "ok",
               read: tuple[str, str, int, int, str] | None = None, covered: tuple[str, int, int] | None = None,
               excerpts: list[tuple[str, str, int, int, str]] | tuple = ()) -> str:
        """Check every limit against the locked tally ``t`` and append the entry; ``content`` back."""
        self._check(t, size=size, doc_id=read[0] if read else None)
        self.append(t, LedgerEntry(t.step + 1, tool, status, size.chars, size.utf8_bytes, size.cl100k_tokens,
                                   read=ReadRecord(*read) if read else None, covered=covered,
                                   excerpts=tuple(ReadRecord(*x) for x in excerpts)))
        self._wrote()
        return content

    def refused(self, tool: str, error: EvidenceError) -> EvidenceError:
        """Record a refused call: never charged, but its error message did enter the context. Returns the error the
        call answers with: ``error``, or ``budget_exhausted`` (reason ``refusals``) when, under the lock, the refusal
        cap turns out to be reached already (parallel calls decided before the refusals that reached it were
        recorded), so every call after ``max_refusals`` refusals is refused as such, whatever the interleaving."""
        with self.locked() as t:
            b = self.budget
            if b.max_refusals is not None and t.refused >= b.max_refusals and error.details.get("reason") != "refusals":
                error = self._exhausted("refusals", t)
            size = Size.of(to_json(error_payload(error)))
            self.append(t, LedgerEntry(t.step + 1, tool, error.code, size.chars, size.utf8_bytes, size.cl100k_tokens,
                                       charged=False, reason=error.details.get("reason")))
        self._wrote()
        return error

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
        t, lim, ctx = self.totals(), self.limits(), self.context()
        lines.append(
            "charged: " + ", ".join(f"{k} {t[k]:,}" + (f"/{lim[k]:,}" if lim[k] is not None else "") for k in t)
        )
        cap = f"/{self.budget.max_refusals}" if self.budget.max_refusals is not None else ""
        lines.append(f"context: calls {ctx['calls']:,} ({ctx['refused']}{cap} refused), chars {ctx['chars']:,}, "
                     f"bytes {ctx['bytes']:,}, tokens {ctx['tokens']:,}")
        return "\n".join(lines)

    def as_rows(self) -> list[dict]:
        """Every entry as a plain dict, one row per call: for a table or JSON."""
        return [asdict(e) for e in self.entries]


#: A refusal's message where the registry's ("the budget for this task is spent ...") would be wrong: after
#: ``reads_per_doc`` only one document is closed, and calls and characters may remain (notebook 05).
_MESSAGES: dict[str, str] = {
    "reads_per_doc": "this document was read as often as the budget allows; read other documents, or answer with "
                     "what you have",
}


def _reads(charged: list[LedgerEntry]) -> list[ReadRecord]:
    """The ranges of text ``charged`` entries served: each page read, then the entry's excerpts, in order."""
    return [r for e in charged for r in ((e.read,) if e.read is not None else ()) + e.excerpts]
