"""run_loop's parallel read-only calls (notebook 09): the source's blocking reads overlap, bounded by
``LoopRules.max_workers``, and the replies and the ledger are byte for byte those of a sequential run.

Concurrency is shown as behaviour, not time: the source below holds every document read until ``want`` readers
are inside it at once (or a liveness timeout passes) and records the most readers it ever held together.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool

from evidence_lib import Budget, EvidenceIndex, Ledger, article_corpus, evidence_tools
from evidence_lib.integrations.langchain.loop import LoopRules, run_loop
from evidence_lib.course.readers import ScriptedChatModel
from evidence_lib.index import IndexEntry, Snapshot


class GatedIndex:
    """An index whose document reads (``text``, ``snapshot``) wait until ``want`` readers are inside at once.

    ``peak`` is the most readers that were ever inside together; ``reads`` counts the document reads. Once ``want``
    readers met, the gate stays open. ``timeout`` only keeps a sequential run from hanging.
    """

    def __init__(self, inner: EvidenceIndex, want: int, timeout: float = 2.0) -> None:
        self.inner, self.want, self.timeout = inner, want, timeout
        self.inside = self.peak = self.reads = 0
        self.open = False
        self.cv = threading.Condition()

    def _gate(self) -> None:
        with self.cv:
            self.inside += 1
            self.reads += 1
            self.peak = max(self.peak, self.inside)
            self.open = self.open or self.inside >= self.want
            self.cv.notify_all()
            self.cv.wait_for(lambda: self.open, self.timeout)

    def _leave(self) -> None:
        with self.cv:
            self.inside -= 1

    def visible(self, principal=None, action="discover") -> list[IndexEntry]:
        return self.inner.visible(principal, action)

    def entry(self, doc_id, principal=None, action="read") -> IndexEntry:
        return self.inner.entry(doc_id, principal, action)

    def snapshot(self, doc_id, principal=None) -> Snapshot:
        self._gate()
        try:
            return self.inner.snapshot(doc_id, principal)
        finally:
            self._leave()

    def text(self, doc_id, principal=None, start=0, end=None) -> str:
        self._gate()
        try:
            return self.inner.text(doc_id, principal, start, end)
        finally:
            self._leave()

    def find(self, term: str, doc_ids: Iterable[str], principal=None, *, first_only=False,
             options=None) -> Iterator[tuple[str, int]]:
        return self.inner.find(term, doc_ids, principal, first_only=first_only, options=options)


def reads(*specs: tuple[str, int, int], prefix: str = "r") -> list[dict]:
    return [{"name": "read_evidence", "args": {"doc_id": d, "offset": o, "limit": n}, "id": f"{prefix}{i}"}
            for i, (d, o, n) in enumerate(specs)]


FOUR = reads(("d01", 0, 40), ("d02", 100, 40), ("d03", 4321, 18), ("d04", 7, 40))


def run(tmp_path, calls, *, want: int = 1, timeout: float = 2.0, parallel: bool = True, workers: int = 4,
        budget: Budget | None = None, profile: str = "article", extra_tools=()):
    """One message of ``calls`` then a final answer, on a fresh gated index; returns (result, index, ledger)."""
    index = GatedIndex(EvidenceIndex.build(article_corpus(), tmp_path), want, timeout)
    ledger = Ledger(budget or Budget(max_refusals=None))
    tools = [*evidence_tools(index, ledger=ledger, profile=profile), *extra_tools]
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=calls), AIMessage(content="done")])
    result = run_loop(model, tools, "q", parallel=parallel, rules=LoopRules(max_workers=workers))
    return result, index, ledger


def replies(result) -> list[tuple[str, str, str]]:
    return [(m.tool_call_id, m.status, m.content) for m in result.tool_messages]


def test_parallel_reads_wait_on_the_source_together(tmp_path):
    result, index, _ = run(tmp_path, FOUR, want=4)
    assert index.peak == 4, "the four reads were inside the source at once"
    assert index.reads == 4, "each page was fetched once, then served in call order"
    assert [m.tool_call_id for m in result.tool_messages] == [c["id"] for c in FOUR]
    assert all(m.status == "success" for m in result.tool_messages)


def test_parallel_reads_are_bounded_by_max_workers(tmp_path):
    result, index, _ = run(tmp_path, FOUR, want=3, timeout=0.5, workers=2)
    assert index.peak == 2, "never more readers inside the source than LoopRules.max_workers"
    assert all(m.status == "success" for m in result.tool_messages)


def test_sequential_run_reads_one_at_a_time(tmp_path):
    _, index, _ = run(tmp_path, FOUR[:2], want=2, timeout=0.3, parallel=False)
    assert index.peak == 1


def test_a_write_call_keeps_the_message_sequential(tmp_path):
    notes: list[str] = []
    note = StructuredTool.from_function(lambda text: notes.append(text) or "saved", name="save_note",
                                        description="Save a note (changes state: not read-only).")
    calls = [*FOUR[:2], {"name": "save_note", "args": {"text": "seen"}, "id": "w0"}]
    result, index, _ = run(tmp_path, calls, want=2, timeout=0.3, extra_tools=[note])
    assert index.peak == 1 and notes == ["seen"]
    assert [m.tool_call_id for m in result.tool_messages] == ["r0", "r1", "w0"]


MIXED = [
    *reads(("d03", 4321, 18), ("d05", 0, 60), ("d03", 4321, 18), ("nope", 0, 5), ("d07", 10**6, 5), prefix="a"),
    {"name": "search_evidence", "args": {"query": "上限"}, "id": "s0"},
    {"name": "locate_evidence", "args": {"term": "上限"}, "id": "l0"},
    *reads(("d03", 4300, 60), ("d08", 0, 300), ("d09", 1, 2), ("d10", 5, 5), prefix="b"),
]


@pytest.mark.parametrize("profile", ["article", "compact"])
@pytest.mark.parametrize("budget", [Budget(max_refusals=None), Budget(max_calls=6, max_refusals=None),
                                    Budget(max_bytes=900, max_refusals=None)], ids=["open", "calls", "bytes"])
def test_parallel_replies_and_ledger_are_byte_identical_to_sequential(tmp_path, profile, budget):
    par, par_index, par_ledger = run(tmp_path / "par", MIXED, profile=profile, budget=budget)
    seq, _, seq_ledger = run(tmp_path / "seq", MIXED, profile=profile, budget=budget, parallel=False)
    assert replies(par) == replies(seq)
    assert par_ledger.as_rows() == seq_ledger.as_rows() and par_ledger.totals() == seq_ledger.totals()
    statuses = {json.loads(c).get("status") if c.startswith("{") else None for _, _, c in replies(par)}
    if profile == "article" and budget.max_calls is None and budget.max_bytes is None:
        assert "already_read" in statuses, "the repeated read was answered from the ledger, in call order"


def test_a_document_changed_on_disk_is_refused_in_parallel_too(tmp_path):
    index = EvidenceIndex.build(article_corpus(), tmp_path)
    index.stored_file("d02").write_text("changed", encoding="utf-8")
    tools = evidence_tools(index, ledger=Ledger(Budget()))
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=FOUR), AIMessage(content="done")])
    result = run_loop(model, tools, "q")
    by_id = {m.tool_call_id: m for m in result.tool_messages}
    assert json.loads(by_id["r1"].content)["error"] == "evidence_changed"
    assert [by_id[i].status for i in ("r0", "r2", "r3")] == ["success"] * 3
