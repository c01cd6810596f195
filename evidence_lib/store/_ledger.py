"""A budget ledger whose counters live in the store: two workers can never overspend one budget. Notebook 11.

:class:`StoreLedger` *is* a :class:`~evidence_lib._ledger.Ledger`: the same ``admit``, ``charge``, ``refused``,
``covering`` and reports, the same limit checks. It only says where the entries live, through the ledger's three
storage hooks: ``tally`` reads the stored counters, ``locked`` opens one transaction holding the ledger's lock
(SQLite ``BEGIN IMMEDIATE``, i.e. a write lock taken when the transaction begins; PostgreSQL
``SELECT ... FOR UPDATE``; a mutex in memory) and ``append`` writes the entry and the new counters in it. So every
limit is re-checked against the stored counters under the lock: whatever the interleaving, they never pass one.

The counters are kept incrementally in the ledger's row (and a document's reads counted by one aggregate query), so
a call never reloads the ledger's history: only :attr:`StoreLedger.entries` (reports) reads every entry. A task
ledger expires ``ttl`` after its last entry (like a workspace): afterwards every call is ``ledger_expired``,
:meth:`~evidence_lib.store.EvidenceStore.cleanup` removes it, and opening the task again starts a new budget.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any

from .._errors import EvidenceError
from .._ledger import Budget, Ledger, LedgerEntry, ReadRecord, Tally
from .._paging import covering_reads
from ._common import (
    DEFAULT_STORE_TTL,
    MAX_KEY_CHARS,
    LedgerStorage,
    LedgerTxn,
    check_int64,
    check_text,
    expiry_us,
    to_us,
    ttl_us,
)

__all__ = ["COUNTERS", "LIMITS", "StoreLedger", "budget_limits", "entry_from_row", "entry_row"]

LIMITS = tuple(f.name for f in fields(Budget))
COUNTERS = ("step", "calls", "chars", "bytes", "tokens", "all_calls", "all_chars", "all_bytes", "all_tokens",
            "refused", "expires_us")


def budget_limits(budget: Budget) -> tuple[int | None, ...]:
    return tuple(None if getattr(budget, n) is None else check_int64(getattr(budget, n), n, lo=0) for n in LIMITS)


def entry_from_row(row: tuple, excerpts: tuple[ReadRecord, ...] = ()) -> LedgerEntry:
    step, tool, status, chars, size, tokens, charged, rd, rr, rs, re_, rsha, reason, cd, cs, ce = row
    return LedgerEntry(step, tool, status, chars, size, tokens, bool(charged),
                       read=ReadRecord(rd, rr, rs, re_, rsha) if rd is not None else None,
                       reason=reason, covered=(cd, cs, ce) if cd is not None else None, excerpts=excerpts)


def entry_row(entry: LedgerEntry) -> tuple:
    """``entry`` as the store's row (the order of ``ENTRY_COLUMNS``); its excerpts are written beside it."""
    rd = (entry.read.doc_id, entry.read.revision, entry.read.start, entry.read.end, entry.read.sha256) \
        if entry.read is not None else (None,) * 5
    cv = entry.covered if entry.covered is not None else (None,) * 3
    return (entry.step, entry.tool, entry.status, entry.chars, entry.bytes, entry.tokens, int(entry.charged), *rd,
            entry.reason, *cv)


@dataclass(frozen=True)
class _Locked(Tally):
    txn: LedgerTxn | None = None  # the store transaction holding the ledger's lock


class StoreLedger(Ledger):
    """The ledger of one task ``(tenant, session, task)``, shared by every worker serving that task.

    The first worker to open it fixes the budget; opening it again with a different budget is an error (unless
    the stored ledger expired: then it starts anew). It expires ``ttl`` after its last entry.
    """

    def __init__(self, store: LedgerStorage, tenant: str, session: str, task: str, budget: Budget | None = None, *,
                 ttl: timedelta = DEFAULT_STORE_TTL, opened: tuple[int, tuple[Any, ...]] | None = None) -> None:
        self.store = store
        self.key = (check_text(tenant, "tenant", lo=1, hi=MAX_KEY_CHARS),
                    check_text(session, "session", lo=1, hi=MAX_KEY_CHARS),
                    check_text(task, "task", lo=1, hi=MAX_KEY_CHARS))
        asked = budget_limits(budget or Budget())
        now = store.now_us()
        self.ttl_us = ttl_us(ttl)
        # ``opened``: the ``(lid, limits)`` of a ledger the caller just found (a task's row: store/_tasks.py)
        self.lid, stored = opened or store.ledger_open(*self.key, asked, now, expiry_us(now, ttl))
        if budget is not None and tuple(stored) != asked:
            raise ValueError("this task's ledger already exists with a different budget")
        self.budget = Budget(**dict(zip(LIMITS, stored)))

    def __repr__(self) -> str:
        t = self.totals()
        return f"StoreLedger({self.store.backend}, task={self.key[2]!r}, calls={t['calls']}, bytes={t['bytes']})"

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    # -- where the entries live ----------------------------------------------------------------------
    @property
    def entries(self) -> list[LedgerEntry]:  # type: ignore[override]  # Ledger's list; here read from the store
        """Every charge of this task, read from the store: what all of its workers spent (notebook 11)."""
        excerpts: dict[int, list[ReadRecord]] = {}
        for step, *x in self.store.ledger_excerpts(self.lid):
            excerpts.setdefault(step, []).append(ReadRecord(*x))
        return [entry_from_row(r, tuple(excerpts.get(r[0], ()))) for r in self.store.ledger_entries(self.lid)]

    @property
    def reads(self) -> list[ReadRecord]:
        return [e for x in self.entries if x.charged for e in ((x.read,) if x.read else ()) + x.excerpts]

    def _counters(self, counters: dict[str, int] | None) -> dict[str, int]:
        """``counters`` if the ledger is still there and alive, else ``ledger_expired`` (deleted or past its TTL)."""
        if counters is None or counters["expires_us"] <= self.store.now_us():
            raise EvidenceError("ledger_expired")
        return counters

    def tally(self) -> Tally:
        """The stored counters (one query); a document's reads and the covering ranges are asked for when needed."""
        c = self._counters(self.store.ledger_counters(self.lid))
        return Tally(c["step"], c["calls"], c["chars"], c["bytes"], c["tokens"], c["refused"],
                     lambda doc_id: self.store.ledger_doc_reads(self.lid, doc_id), self.covering)

    def covering(self, doc_id: str, revision: str, sha256: str, start: int, end: int) -> list[tuple[int, int]]:
        """Earlier reads of the same bytes covering ``[start, end)``: only that document's reads are fetched."""
        rows = self.store.ledger_reads_of(self.lid, doc_id, sha256)
        return covering_reads((ReadRecord(*r) for r in rows), doc_id, revision, sha256, start, end) or []

    @contextmanager
    def locked(self) -> Iterator[Tally]:
        with self.store.ledger_txn(self.lid) as txn:
            c = self._counters(txn.counters)

            def covering(doc_id: str, revision: str, sha256: str, start: int, end: int) -> list[tuple[int, int]]:
                reads = (ReadRecord(*r) for r in txn.reads_of(doc_id, sha256))
                return covering_reads(reads, doc_id, revision, sha256, start, end) or []

            yield _Locked(c["step"], c["calls"], c["chars"], c["bytes"], c["tokens"], c["refused"], txn.doc_reads,
                          covering, txn)

    def append(self, tally: Tally, entry: LedgerEntry) -> None:
        """Write ``entry`` and the new counters; the ledger now expires ``ttl`` after this entry."""
        txn = tally.txn if isinstance(tally, _Locked) else None
        if txn is None or txn.counters is None:
            raise TypeError("StoreLedger.append takes the tally its locked() yielded, inside that block")
        c = dict(txn.counters)
        c["expires_us"] = expiry_us(self.store.now_us(), timedelta(microseconds=self.ttl_us))
        c["step"] = entry.step
        for unit in ("chars", "bytes", "tokens"):
            c["all_" + unit] += getattr(entry, unit)
            if entry.charged:
                c[unit] += getattr(entry, unit)
        c["all_calls"] += 1
        c["calls" if entry.charged else "refused"] += 1
        txn.write(entry_row(entry), c, [(entry.step, x.doc_id, x.revision, x.start, x.end, x.sha256)
                                        for x in entry.excerpts])

    def keep_until(self, until: datetime) -> None:
        """Live at least until ``until``: something the task can still read (an offloaded result) expires then, so
        its ledger must not expire first (without it, a result stored after a day's idleness answered
        ``ledger_expired`` while its handle said it was readable). An alive ledger's expiry is extended; one that
        expired or was removed is opened anew, a new budget, as opening the task again would."""
        now, until_us = self.store.now_us(), to_us(until)
        if not self.store.ledger_extend(self.lid, until_us, now):
            expires = max(expiry_us(now, timedelta(microseconds=self.ttl_us)), until_us)
            self.lid, _ = self.store.ledger_open(*self.key, budget_limits(self.budget), now, expires)
            self.store.ledger_extend(self.lid, until_us, now)  # another worker may have opened it first

    def context(self) -> dict[str, int]:
        c = self._counters(self.store.ledger_counters(self.lid))
        return {"calls": c["all_calls"], "chars": c["all_chars"], "bytes": c["all_bytes"],
                "tokens": c["all_tokens"], "refused": c["refused"]}
