"""Where the MCP server keeps its tasks: in its memory (a folder corpus), or in the store (``--store``). Issues 27, 33.

A task is what ``start_task`` mints a handle for: its principal, the index it reads, its ledger (one budget,
notebook 05), what its replies showed (the compact profile names a revision once per task, notebook 08) and its
``verify_citations`` calls. :class:`MemoryTasks` keeps them in the server's memory, bounded per principal. With a store
(:meth:`Source.from_store`) :class:`StoreTasks` keeps *nothing* of a task in the process between calls: the handle names
the task's ledger and state in the store (:mod:`evidence_lib.store._tasks`), so several server processes behind one
load balancer serve one task with one budget, and a server restarted mid-task loses nothing (notebook 13). The
budget holds across processes because every charge re-checks the stored counters under the store's lock
(:class:`~evidence_lib.store.StoreLedger`). MCP's direction is the same: its 2026-07-28 revision is stateless, and the
SDK's ``stateless_http`` already serves every HTTP request without a session.
"""

from __future__ import annotations

import re
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from ..._access import Principal
from ..._errors import EvidenceError
from ..._index import IndexProtocol
from ..._ledger import Budget, Ledger
from ..._toolkit import EvidenceTool
from ..._tools import evidence_tools
from ...store._base import EvidenceStore
from ...store._common import owner_session
from ...store._ledger import StoreLedger
from ...store._snapshot import StoreSnapshot
from ...store._tasks import begin_task, change_task, find_task

if TYPE_CHECKING:  # only when a folder is served: the server never loads the retrieval package otherwise
    from ...retrieval._folder import FolderSource
    from ...retrieval._snapshot import RetrieverSource

#: What a task reads: a fixed index (a store snapshot too), or a retriever source (a folder behind BM25, one snapshot
#: per query), as ``evidence_tools`` takes it.
TaskIndex: TypeAlias = "IndexProtocol | RetrieverSource | FolderSource"

__all__ = ["MAX_TASKS_PER_PRINCIPAL", "MAX_VERIFY_CALLS", "MemoryTasks", "Source", "StoreSource", "StoreTasks", "Task"]

#: ``verify_citations`` calls per task: checking is outside the reading budget, but not free.
MAX_VERIFY_CALLS = 20
#: Live tasks per principal; starting one more forgets that principal's oldest task (its handle is then refused as
#: ``unknown_task``). An agent works on a few tasks at once; 16 leaves room for parallel sub-agents and bounds what one
#: token can pin (a task holds its ledger and its last snapshot's entries; the documents' bytes are shared by all
#: tasks, issue 31). The server as a whole holds at most this many per principal of the tokens file.
MAX_TASKS_PER_PRINCIPAL = 16
#: What a minted handle looks like (``t-`` and URL-safe characters); anything else is ``unknown_task`` unlooked-up.
HANDLE = re.compile(r"t-[A-Za-z0-9_-]{1,62}")
#: Store snapshots a store server keeps open (a snapshot never changes; every call still checks it is published).
SNAPSHOTS_KEPT = 32


def mint_handle() -> str:
    """A new task handle: random, unguessable, 26 characters."""
    return "t-" + secrets.token_urlsafe(18)


@dataclass(frozen=True)
class Source:
    """Where a principal's task reads: ``index_for(principal)`` (a fixed index or a store snapshot) and
    ``ledger_for(principal, handle, budget)`` (in memory, or a store ledger shared by every worker)."""

    index_for: Callable[[Principal], TaskIndex]
    ledger_for: Callable[[Principal, str, Budget], Ledger] = lambda _p, _h, budget: Ledger(budget)

    def tasks(self, budget: Budget, profile: str) -> MemoryTasks:
        """The server's tasks: in its memory."""
        return MemoryTasks(self, budget, profile)

    @staticmethod
    def from_store(store: EvidenceStore, session: str = "mcp", query: str = "mcp") -> StoreSource:
        """What :func:`~evidence_lib.integrations.mcp.build_server` serves from a store: each principal reads the
        snapshot ``(its tenant, session, query)``, and the server keeps no task in its memory (handles, budgets and
        reads live in the store), so several server processes on one store serve one task. Notebook 13."""
        return StoreSource(store, session, query)


@dataclass
class Task:
    """One task: its principal, the index it reads, its ledger and its tools (which revisions they showed)."""

    principal: Principal
    index: TaskIndex
    ledger: Ledger
    tools: list
    verified: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)  # one call of the task at a time


def _catalog(source: Any, principal: Principal) -> Any:
    """What the catalog lists for ``principal``: the source's index, or every document a retriever source knows
    (``None`` when it cannot enumerate them), as it is now."""
    if isinstance(source, IndexProtocol):
        return source
    getattr(source, "generation", None)  # a source that follows a folder checks it now (FolderSource)
    return source.whole(principal)


class MemoryTasks:
    """Handles -> tasks in the server's memory, bounded per principal. A handle of another principal is refused like
    an unknown one."""

    def __init__(self, source: Source, budget: Budget, profile: str) -> None:
        self.source, self.budget, self.profile = source, budget, profile
        self._tasks: OrderedDict[str, Task] = OrderedDict()
        self._lock = threading.Lock()

    def start(self, principal: Principal) -> str:
        handle = mint_handle()
        index = self.source.index_for(principal)
        ledger = self.source.ledger_for(principal, handle, self.budget)
        task = Task(principal, index, ledger, evidence_tools(index, principal, ledger=ledger, profile=self.profile))
        with self._lock:
            self._tasks[handle] = task
            own = [h for h, t in self._tasks.items() if t.principal == principal]
            for old in own[:-MAX_TASKS_PER_PRINCIPAL]:
                del self._tasks[old]
        return handle

    def catalog_index(self, principal: Principal) -> Any:
        return _catalog(self.source.index_for(principal), principal)

    def get(self, handle: Any, principal: Principal) -> Task:
        with self._lock:
            task = self._tasks.get(handle) if isinstance(handle, str) else None
        if task is None or task.principal != principal:
            raise EvidenceError("unknown_task")  # never issued, forgotten and another's: one refusal
        return task

    @contextmanager
    def use(self, handle: Any, principal: Principal) -> Iterator[Task]:
        """The task of ``handle`` for one call: one call of a task at a time."""
        task = self.get(handle, principal)
        with task.lock:
            yield task

    @staticmethod
    def spend_verify(task: Task) -> None:
        """Count one ``verify_citations`` call of ``task`` (inside :meth:`use`), or refuse past the limit."""
        if task.verified >= MAX_VERIFY_CALLS:
            raise EvidenceError("budget_exhausted", reason="calls")
        task.verified += 1


@dataclass(frozen=True)
class StoreSource:
    """A store's snapshot ``(tenant, session, query)`` per principal's tenant, with every task kept in the store
    (:class:`StoreTasks`). Made by :meth:`Source.from_store`."""

    store: EvidenceStore
    session: str = "mcp"
    query: str = "mcp"

    def index_for(self, principal: Principal) -> StoreSnapshot:
        return self.store.snapshot(principal.tenant, self.session, self.query)

    def tasks(self, budget: Budget, profile: str) -> StoreTasks:
        """The server's tasks: in the store."""
        return StoreTasks(self, budget, profile)


class StoreTasks:
    """Tasks kept in the store: each call finds its task there (one statement), runs on the snapshot the task began
    on with the task's :class:`~evidence_lib.store.StoreLedger`, and writes back what its replies showed (one locked
    transaction, only when something changed). Nothing of a task stays in the process between calls; the snapshots
    kept open are the store's immutable documents, checked to be published at every call."""

    def __init__(self, source: StoreSource, budget: Budget, profile: str) -> None:
        self.source, self.budget, self.profile = source, budget, profile
        self._snapshots: OrderedDict[int, StoreSnapshot] = OrderedDict()
        self._lock = threading.Lock()  # guards the snapshots kept, never a call

    def _key(self, principal: Principal, handle: str) -> tuple[str, str, str]:
        return principal.tenant, owner_session(self.source.session, principal.user), "mcp/" + handle

    @staticmethod
    def _who(principal: Principal) -> list:
        return [principal.tenant, principal.user, sorted(principal.groups)]

    def _snapshot(self, snap_id: int) -> StoreSnapshot:
        with self._lock:
            snap = self._snapshots.get(snap_id)
            if snap is not None:
                self._snapshots.move_to_end(snap_id)
                return snap
        snap = self.source.store.published(snap_id)  # snapshot_expired once replaced, deleted or expired
        self._keep(snap)
        return snap

    def _keep(self, snap: StoreSnapshot) -> None:
        with self._lock:
            self._snapshots[snap.row.snap_id] = snap
            while len(self._snapshots) > SNAPSHOTS_KEPT:
                self._snapshots.popitem(last=False)

    def start(self, principal: Principal) -> str:
        handle = mint_handle()
        snap = self.source.index_for(principal)  # snapshot_expired: no snapshot for this tenant
        state = {"principal": self._who(principal), "snapshot": snap.row.snap_id, "query": None, "shown": [],
                 "verified": 0}
        begin_task(self.source.store, *self._key(principal, handle), self.budget, state, keep=MAX_TASKS_PER_PRINCIPAL)
        self._keep(snap)
        return handle

    def catalog_index(self, principal: Principal) -> Any:
        return self.source.index_for(principal)

    @contextmanager
    def use(self, handle: Any, principal: Principal) -> Iterator[Task]:
        """The task of ``handle`` as the store holds it now, for one call; afterwards the revisions its replies showed
        and its last query are merged into the stored state (under the task's lock: parallel calls lose nothing)."""
        found = find_task(self.source.store, *self._key(principal, handle)) \
            if isinstance(handle, str) and HANDLE.fullmatch(handle) else None
        if found is None or found[1].get("principal") != self._who(principal):
            raise EvidenceError("unknown_task")  # never issued, forgotten and another's: one refusal
        ledger, state = found
        snap = self._snapshot(state["snapshot"])
        tools = evidence_tools(snap, principal, ledger=ledger, profile=self.profile)
        search = tools[0]
        assert isinstance(search, EvidenceTool)  # evidence_tools makes EvidenceTools, each with the shared session
        session = search.session
        shown = {tuple(x) for x in state["shown"]}
        session.query, session.rev_shown = state["query"], set(shown)
        yield Task(principal, snap, ledger, tools, state["verified"])
        if session.query != state["query"] or not session.rev_shown <= shown:
            change_task(self.source.store, ledger, lambda now: {
                **now, "query": session.query, "shown": sorted(map(list, {tuple(x) for x in now["shown"]}
                                                                   | session.rev_shown))})

    def spend_verify(self, task: Task) -> None:
        """Count one ``verify_citations`` call in the stored state (under the task's lock), or refuse past the limit."""
        def count(state: dict) -> dict:
            if state["verified"] >= MAX_VERIFY_CALLS:
                raise EvidenceError("budget_exhausted", reason="calls")
            return {**state, "verified": state["verified"] + 1}

        assert isinstance(task.ledger, StoreLedger)  # use() gave this task the store's ledger
        change_task(self.source.store, task.ledger, count)
