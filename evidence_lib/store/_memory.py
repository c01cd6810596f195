"""The in-memory backend: the store interface over dicts and one lock, for teaching and tests. Notebook 11.

Same contract as SQLite and PostgreSQL (the contract tests run on all three), but it lives and dies with the
process, so it is one worker's store: nothing is shared with another process. Locate scans the chunks in
memory with ``str.find`` (no re-hashing of whole documents, but no index either: no trigrams, no CJK gram
postings, so :meth:`stats` counts ``chunk_grams`` as 0).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .._clock import Clock
from .._errors import EvidenceError
from ._base import EvidenceStore
from ._common import ChunkRow, DocRow, SnapRow, SnapshotKey, WsKey, is_artifact_query, session_of
from ._ledger import COUNTERS

__all__ = ["ZERO_COUNTERS", "ZERO_LEDGER", "MemoryStore"]

ZERO_COUNTERS = dict.fromkeys(COUNTERS, 0)
#: What a deleted ledger reads as: no entries (its counters are None: ``ledger_expired``).
ZERO_LEDGER = {"limits": (), "counters": ZERO_COUNTERS, "entries": (), "excerpts": ()}


class _LedgerTxn:
    def __init__(self, ledger: dict[str, Any] | None) -> None:
        self._ledger = ledger
        self.counters = None if ledger is None else dict(ledger["counters"])  # None: deleted or cleaned up

    @property
    def _l(self) -> dict[str, Any]:
        if self._ledger is None:  # the caller saw counters None: ledger_expired before it reads or writes
            raise EvidenceError("ledger_expired")
        return self._ledger

    def doc_reads(self, doc_id: str) -> int:
        return sum(1 for r in self._l["entries"] if r[6] and r[7] == doc_id)

    def reads_of(self, doc_id: str, sha256: str) -> list[tuple[Any, ...]]:
        pages = [tuple(r[7:12]) for r in self._l["entries"] if r[6] and r[7] == doc_id and r[11] == sha256]
        return pages + [tuple(x[1:]) for x in self._l["excerpts"] if x[1] == doc_id and x[5] == sha256]

    def write(self, row: tuple[Any, ...], counters: dict[str, int], excerpts: Sequence[tuple[Any, ...]] = ()) -> None:
        self._l["entries"].append(row)
        self._l["excerpts"].extend(excerpts)
        self._l["counters"] = dict(counters)


class _TaskTxn:
    def __init__(self, state: str | None) -> None:
        self.state = state  # None: the task is gone

    def write(self, state: str) -> None:
        self.state = state


class _Reader:
    """What one call of the page-serving path asks (:meth:`MemoryStore.reading`): each question under the store's
    lock, held for that question only, so calls in other threads read meanwhile."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def published(self, snap_id: int) -> bool:
        with self.store._lock:
            return self.store._snap_row(snap_id) is not None

    def candidates(self, snap_id: int, term: str) -> list[tuple[int, int]]:
        """Every chunk holding ``term``: a scan of the snapshot's chunks (no index in memory)."""
        with self.store._lock:
            maps = self.store._chunk_map
            docs = [(d[0], dict(maps.get((snap_id, d[0]), {}))) for d in self.store._docs.get(snap_id, ())]
        return [(d, c) for d, chunks in docs for c, (body, _) in chunks.items() if term in body]

    def candidates_many(self, items: list[tuple[int, str]]) -> list[tuple[int, int, int]]:
        return [(s, d, c) for s, term in items for d, c in self.candidates(s, term)]

    def chunks_many(self, wanted: list[tuple[int, list[tuple[int, int, int]]]]) -> list[tuple[int, int, int, str, str]]:
        return [(s, *row) for s, spans in wanted for row in self.chunks(s, spans)]

    def chunks(self, snap_id: int, spans: list[tuple[int, int, int]]) -> list[tuple[int, int, str, str]]:
        out: list[tuple[int, int, str, str]] = []
        with self.store._lock:
            for d, lo, hi in spans:
                chunks = self.store._chunk_map.get((snap_id, d), {})
                out.extend((d, c, *chunks[c]) for c in range(lo, hi + 1) if c in chunks)
        return out


class _WorkspaceTxn:
    def __init__(self, ws: dict[str, Any] | None) -> None:
        self.state: tuple[int, int, int] | None = None if ws is None else ws["state"]
        self._files: dict[str, tuple[Any, ...]] = {} if ws is None else dict(ws["files"])

    def files(self) -> list[tuple[Any, ...]]:
        return [(p, k, rev, s, sha, chars, t) for p, k, rev, s, _text, sha, chars, t in self._files.values()]

    def put(self, row: tuple[Any, ...]) -> None:
        self._files[row[0]] = row

    def delete(self, path: str) -> None:
        self._files.pop(path, None)

    def set_state(self, created: int, expires: int, version: int) -> None:
        self.state = (created, expires, version)


class MemoryStore(EvidenceStore):
    """Everything in dicts; one ``threading.RLock`` makes each operation atomic."""

    backend = "memory"

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock)
        self._lock = threading.RLock()
        self._ids = itertools.count(1)
        self._snaps: dict[int, dict] = {}
        self._ready: dict[SnapshotKey, int] = {}
        self._docs: dict[int, list[DocRow]] = {}
        self._chunk_map: dict[tuple[int, int], dict[int, tuple[str, str]]] = {}
        self._ledger_ids: dict[tuple[str, str, str], int] = {}
        self._ledgers: dict[int, dict] = {}
        self._ws: dict[WsKey, dict] = {}  # (tenant, session, owner) -> {"state", "files"}

    def __repr__(self) -> str:
        return f"MemoryStore({len(self._ready)} snapshots)"

    # -- snapshots -------------------------------------------------------------------------------------
    def begin_snapshot(self, key: SnapshotKey, created_us: int, expires_us: int) -> int:
        with self._lock:
            snap_id = next(self._ids)
            self._snaps[snap_id] = {"key": key, "ready": False, "created": created_us, "expires": expires_us}
            self._docs[snap_id] = []
            return snap_id

    def _unpublished(self, snap_id: int) -> dict:
        snap = self._snaps.get(snap_id)
        if snap is None or snap["ready"]:  # removed by cleanup or delete_session while it was written
            raise EvidenceError("snapshot_expired")
        return snap

    def add_rows(self, snap_id: int, docs: list[DocRow], chunks: list[ChunkRow]) -> None:
        with self._lock:
            self._unpublished(snap_id)
            self._docs[snap_id].extend(docs)
            for doc_no, chunk_no, body, sha in chunks:
                self._chunk_map.setdefault((snap_id, doc_no), {})[chunk_no] = (body, sha)

    def publish_snapshot(self, snap_id: int) -> None:
        with self._lock:
            key = self._unpublished(snap_id)["key"]
            old = self._ready.get(key)
            if old is not None:
                self._drop(old)
            self._snaps[snap_id]["ready"] = True
            self._ready[key] = snap_id

    def _drop(self, snap_id: int) -> None:
        snap = self._snaps.pop(snap_id, None)
        if snap is not None and self._ready.get(snap["key"]) == snap_id:
            del self._ready[snap["key"]]
        for doc in self._docs.pop(snap_id, []):
            self._chunk_map.pop((snap_id, doc[0]), None)

    def discard_snapshot(self, snap_id: int) -> None:
        with self._lock:
            if not self._snaps.get(snap_id, {}).get("ready"):
                self._drop(snap_id)

    def _snap_row(self, snap_id: int | None) -> SnapRow | None:
        s = self._snaps.get(snap_id) if snap_id is not None else None
        if snap_id is None or s is None or not s["ready"]:
            return None
        return SnapRow(snap_id, s["key"], s["created"], s["expires"])

    def lookup_snapshot(self, key: SnapshotKey) -> SnapRow | None:
        with self._lock:
            return self._snap_row(self._ready.get(key))

    def snapshot_row(self, snap_id: int) -> SnapRow | None:
        with self._lock:
            return self._snap_row(snap_id)

    def document_rows(self, snap_id: int) -> list[DocRow]:
        with self._lock:
            return list(self._docs.get(snap_id, ()))

    @contextmanager
    def reading(self) -> Iterator[_Reader]:
        yield _Reader(self)  # each question takes the lock: a slow reader never holds up the others

    def _artifact_count(self, snap_ids: list[int]) -> int:
        """How many of ``snap_ids`` are published artifacts (counted as ``artifacts``, not ``snapshots``)."""
        return sum(1 for i in snap_ids if self._snaps[i]["ready"] and is_artifact_query(self._snaps[i]["key"].query))

    def delete_snapshot_key(self, key: SnapshotKey) -> bool:
        with self._lock:
            snap_id = self._ready.get(key)
            if snap_id is None:
                return False
            self._drop(snap_id)
            return True

    def remove_expired(self, now_us: int, stale_us: int) -> dict[str, int]:
        with self._lock:
            snaps = [i for i, s in self._snaps.items()
                     if s["expires"] <= now_us or (not s["ready"] and s["created"] <= stale_us)]
            arts = self._artifact_count(snaps)
            for i in snaps:
                self._drop(i)
            wss = [k for k, w in self._ws.items() if w["state"][1] <= now_us]
            for k in wss:
                del self._ws[k]
            ledgers = [k for k, lid in self._ledger_ids.items() if self._ledgers[lid]["counters"]["expires_us"] <= now_us]
            for k in ledgers:
                del self._ledgers[self._ledger_ids.pop(k)]
            return {"snapshots": len(snaps) - arts, "artifacts": arts, "workspaces": len(wss), "ledgers": len(ledgers)}

    def delete_session_rows(self, tenant: str, session: str) -> dict[str, int]:
        def mine(tenant_and_key: tuple) -> bool:  # the session's own key, or one of its owner-qualified keys
            return tenant_and_key[0] == tenant and session_of(tenant_and_key[1]) == session

        with self._lock:
            snaps = [i for i, s in self._snaps.items() if mine((s["key"].tenant, s["key"].session))]
            arts = self._artifact_count(snaps)
            for i in snaps:
                self._drop(i)
            ledgers = [k for k in self._ledger_ids if mine(k)]
            for k in ledgers:
                del self._ledgers[self._ledger_ids.pop(k)]
            wss = [k for k in self._ws if mine(k)]  # every user's workspace of the session
            for k in wss:
                del self._ws[k]
            return {"snapshots": len(snaps) - arts, "artifacts": arts, "ledgers": len(ledgers), "workspaces": len(wss)}

    def row_counts(self) -> dict[str, int]:
        with self._lock:
            ready = sum(1 for s in self._snaps.values() if s["ready"])
            arts = {i for i, s in self._snaps.items() if s["ready"] and is_artifact_query(s["key"].query)}
            return {"snapshots": ready - len(arts), "unpublished": len(self._snaps) - ready,
                    "documents": sum(len(d) for i, d in self._docs.items() if i not in arts),
                    "chunks": sum(len(c) for (i, _), c in self._chunk_map.items() if i not in arts),
                    "chunk_grams": 0,  # no index, so no gram postings: locate checks every chunk of the snapshot
                    "artifacts": len(arts),
                    "ledgers": len(self._ledgers), "workspaces": len(self._ws),
                    "workspace_files": sum(len(w["files"]) for w in self._ws.values())}

    # -- ledgers ---------------------------------------------------------------------------------------
    def ledger_open(self, tenant: str, session: str, task: str, limits: tuple, now_us: int,
                     expires_us: int) -> tuple[int, tuple]:
        with self._lock:
            key = (tenant, session, task)
            old = self._ledger_ids.get(key)
            if old is not None and self._ledgers[old]["counters"]["expires_us"] <= now_us:  # expired: start anew
                del self._ledgers[self._ledger_ids.pop(key)]
            if key not in self._ledger_ids:
                lid = next(self._ids)
                self._ledger_ids[key] = lid
                self._ledgers[lid] = {"limits": limits, "counters": {**ZERO_COUNTERS, "expires_us": expires_us},
                                      "entries": [], "excerpts": []}
            lid = self._ledger_ids[key]
            return lid, self._ledgers[lid]["limits"]

    def ledger_extend(self, lid: int, until_us: int, now_us: int) -> bool:
        with self._lock:
            ledger = self._ledgers.get(lid)
            if ledger is None or ledger["counters"]["expires_us"] <= now_us:
                return False
            ledger["counters"]["expires_us"] = max(ledger["counters"]["expires_us"], until_us)
            return True

    @contextmanager
    def ledger_txn(self, lid: int) -> Iterator[_LedgerTxn]:
        with self._lock:
            yield _LedgerTxn(self._ledgers.get(lid))

    def ledger_counters(self, lid: int) -> dict[str, int] | None:
        with self._lock:
            ledger = self._ledgers.get(lid)
            return None if ledger is None else dict(ledger["counters"])

    def ledger_entries(self, lid: int) -> list[tuple]:
        with self._lock:
            return list(self._ledgers.get(lid, ZERO_LEDGER)["entries"])

    def ledger_excerpts(self, lid: int) -> list[tuple]:
        with self._lock:
            return list(self._ledgers.get(lid, ZERO_LEDGER)["excerpts"])

    def ledger_doc_reads(self, lid: int, doc_id: str) -> int:
        with self._lock:
            return _LedgerTxn(self._ledgers.get(lid, ZERO_LEDGER)).doc_reads(doc_id)

    def ledger_reads_of(self, lid: int, doc_id: str, sha256: str) -> list[tuple[str, str, int, int, str]]:
        with self._lock:
            return _LedgerTxn(self._ledgers.get(lid, ZERO_LEDGER)).reads_of(doc_id, sha256)

    # -- task states: the task's ledger dict holds its state, so it goes with it -------------------------------------
    def task_begin(self, tenant: str, session: str, task: str, limits: tuple, state: str, expires_us: int,
                   keep: int) -> int:
        with self._lock:
            lid = next(self._ids)
            self._ledger_ids[(tenant, session, task)] = lid
            self._ledgers[lid] = {"limits": limits, "counters": {**ZERO_COUNTERS, "expires_us": expires_us},
                                  "entries": [], "excerpts": [], "state": state}
            tasks = sorted(((i, k) for k, i in self._ledger_ids.items()
                            if k[:2] == (tenant, session) and "state" in self._ledgers[i]), reverse=True)
            for i, k in tasks[keep:]:
                del self._ledgers[i], self._ledger_ids[k]
            return lid

    def task_row(self, tenant: str, session: str, task: str) -> tuple[int, tuple, str] | None:
        with self._lock:
            lid = self._ledger_ids.get((tenant, session, task))
            ledger = None if lid is None else self._ledgers.get(lid)
            return None if lid is None or ledger is None or "state" not in ledger else \
                (lid, ledger["limits"], ledger["state"])

    @contextmanager
    def task_txn(self, lid: int) -> Iterator[_TaskTxn]:
        with self._lock:
            ledger = self._ledgers.get(lid)
            txn = _TaskTxn(None if ledger is None else ledger.get("state"))
            yield txn
            if txn.state is not None and ledger is not None:
                ledger["state"] = txn.state

    # -- workspaces ------------------------------------------------------------------------------------
    @contextmanager
    def workspace_txn(self, ws: WsKey) -> Iterator[_WorkspaceTxn]:
        with self._lock:
            txn = _WorkspaceTxn(self._ws.get(ws))
            yield txn  # an exception here leaves the workspace as it was
            files = {r[0]: (r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]) for r in txn._files.values()}
            self._ws[ws] = {"state": txn.state, "files": files}

    def workspace_state(self, ws: WsKey) -> tuple[int, int, int] | None:
        with self._lock:
            w = self._ws.get(ws)
            return None if w is None else w["state"]

    def workspace_files(self, ws: WsKey) -> list[tuple]:
        with self._lock:
            return _WorkspaceTxn(self._ws.get(ws)).files()

    def workspace_file(self, ws: WsKey, path: str) -> tuple | None:
        with self._lock:
            w = self._ws.get(ws)
            return None if w is None else w["files"].get(path)
