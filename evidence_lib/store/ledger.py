"""A budget ledger whose counters live in the store: two workers can never overspend one budget. Notebook 11.

:class:`StoreLedger` has the methods the tools call on :class:`~evidence_lib.ledger.Ledger` (``admit``,
``check_refusals``, ``covering``, ``charge``, ``refused``) and its reports (``totals``, ``context``, ``reads``,
``entries``, ``summary``). ``admit`` is a cheap early refusal; the guarantee is in ``charge`` and ``refused``:
each runs in one transaction holding the ledger's lock (SQLite ``BEGIN IMMEDIATE``, PostgreSQL
``SELECT ... FOR UPDATE``, a mutex in memory), re-checks *every* limit against the stored counters and only
then writes the entry and the new counters. Whatever the interleaving, the counters never pass a limit.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ..errors import EvidenceError, error_payload, to_json
from ..ledger import Budget, Ledger, LedgerEntry, ReadRecord
from ..measure import cl100k_tokens, utf8_bytes
from ..paging import covering
from .base import MAX_KEY_CHARS, check_int64, check_text

LIMITS = tuple(f.name for f in fields(Budget))
COUNTERS = ("step", "calls", "chars", "bytes", "tokens", "all_calls", "all_chars", "all_bytes", "all_tokens",
            "refused")


def budget_limits(budget: Budget) -> tuple[int | None, ...]:
    return tuple(None if getattr(budget, n) is None else check_int64(getattr(budget, n), n, lo=0) for n in LIMITS)


def entry_from_row(row: tuple) -> LedgerEntry:
    step, tool, status, chars, size, tokens, charged, rd, rr, rs, re_, rsha, reason, cd, cs, ce = row
    return LedgerEntry(step, tool, status, chars, size, tokens, bool(charged),
                       read=ReadRecord(rd, rr, rs, re_, rsha) if rd is not None else None,
                       reason=reason, covered=(cd, cs, ce) if cd is not None else None)


class StoreLedger(Ledger):
    """The ledger of one task ``(tenant, session, task)``, shared by every worker serving that task.

    The first worker to open it fixes the budget; opening it again with a different budget is an error.
    """

    def __init__(self, store, tenant: str, session: str, task: str, budget: Budget | None = None) -> None:
        self.store = store
        self.key = (check_text(tenant, "tenant", lo=1, hi=MAX_KEY_CHARS),
                    check_text(session, "session", lo=1, hi=MAX_KEY_CHARS),
                    check_text(task, "task", lo=1, hi=MAX_KEY_CHARS))
        asked = budget_limits(budget or Budget())
        self.lid, stored = store._ledger_open(*self.key, asked)
        if budget is not None and tuple(stored) != asked:
            raise ValueError("this task's ledger already exists with a different budget")
        self.budget = Budget(**dict(zip(LIMITS, stored)))

    def __repr__(self) -> str:
        t = self.totals()
        return f"StoreLedger({self.store.backend}, task={self.key[2]!r}, calls={t['calls']}, bytes={t['bytes']})"

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    # -- reports, from the stored counters -------------------------------------------------------------
    @property
    def entries(self) -> list[LedgerEntry]:  # type: ignore[override]
        return [entry_from_row(r) for r in self.store._ledger_entries(self.lid)]

    @property
    def reads(self) -> list[ReadRecord]:
        return [ReadRecord(*r) for r in self.store._ledger_reads(self.lid)]

    def totals(self) -> dict[str, int]:
        c = self.store._ledger_counters(self.lid)
        return {k: c[k] for k in ("calls", "chars", "bytes", "tokens")}

    def context(self) -> dict[str, int]:
        c = self.store._ledger_counters(self.lid)
        return {"calls": c["all_calls"], "chars": c["all_chars"], "bytes": c["all_bytes"],
                "tokens": c["all_tokens"], "refused": c["refused"]}

    def _refuse(self, reason: str, c: dict[str, int]) -> EvidenceError:
        return EvidenceError("budget_exhausted", reason=reason,
                             spent={k: c[k] for k in ("calls", "chars", "bytes", "tokens")}, limits=self.limits())

    # -- the hooks the tools call ----------------------------------------------------------------------
    def check_refusals(self) -> None:
        c = self.store._ledger_counters(self.lid)
        if self.budget.max_refusals is not None and c["refused"] >= self.budget.max_refusals:
            raise self._refuse("refusals", c)

    def admit(self, tool: str, doc_id: str | None = None) -> None:
        """Refuse early, before any work, when calls or this document's reads are used up."""
        b = self.budget
        c = self.store._ledger_counters(self.lid)
        if b.max_refusals is not None and c["refused"] >= b.max_refusals:
            raise self._refuse("refusals", c)
        if b.max_calls is not None and c["calls"] >= b.max_calls:
            raise self._refuse("calls", c)
        if doc_id is not None and b.max_reads_per_doc is not None:
            if len(self.store._ledger_reads(self.lid, doc_id)) >= b.max_reads_per_doc:
                raise self._refuse("reads_per_doc", c)

    def covering(self, doc_id: str, revision: str, sha256: str, start: int, end: int) -> list[tuple[int, int]]:
        rows = self.store._ledger_reads(self.lid, doc_id)
        return covering(((s, e) for d, r, s, e, h in rows if (r, h) == (revision, sha256)), start, end) or []

    def charge(self, tool: str, content: str, *, status: str = "ok",
               read: tuple[str, str, int, int, str] | None = None,
               covered: tuple[str, int, int] | None = None) -> None:
        """Record ``content`` or refuse it whole; every limit is re-checked under the ledger's lock."""
        size = {"chars": len(content), "bytes": utf8_bytes(content), "tokens": cl100k_tokens(content)}
        b, lim = self.budget, self.limits()
        with self.store._ledger_txn(self.lid) as txn:
            c = dict(txn.counters)
            if b.max_calls is not None and c["calls"] + 1 > b.max_calls:
                raise self._refuse("calls", c)
            if read is not None and b.max_reads_per_doc is not None and txn.doc_reads(read[0]) >= b.max_reads_per_doc:
                raise self._refuse("reads_per_doc", c)
            for unit in ("chars", "bytes", "tokens"):
                if lim[unit] is not None and c[unit] + size[unit] > lim[unit]:
                    raise self._refuse(unit, c)
            self._write(txn, c, tool, status, size, True, read=read, covered=covered)

    def refused(self, tool: str, error: EvidenceError) -> None:
        content = to_json(error_payload(error))
        size = {"chars": len(content), "bytes": utf8_bytes(content), "tokens": cl100k_tokens(content)}
        with self.store._ledger_txn(self.lid) as txn:
            self._write(txn, dict(txn.counters), tool, error.code, size, False, reason=error.details.get("reason"))

    @staticmethod
    def _write(txn: Any, c: dict[str, int], tool: str, status: str, size: dict[str, int], charged: bool, *,
               read=None, covered=None, reason=None) -> None:
        c["step"] += 1
        for unit in ("chars", "bytes", "tokens"):
            c["all_" + unit] += size[unit]
            if charged:
                c[unit] += size[unit]
        c["all_calls"] += 1
        c["calls" if charged else "refused"] += 1
        rd = read if read is not None else (None,) * 5
        cv = covered if covered is not None else (None,) * 3
        txn.write((c["step"], tool, status, size["chars"], size["bytes"], size["tokens"], int(charged), *rd,
                   reason, *cv), c)
