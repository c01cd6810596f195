"""run_loop's parallel read-only calls (notebook 09): the calls run side by side, bounded by ``LoopRules.max_workers``,
their blocking reads overlap, the replies come back in call order and the shared budget is never overspent.

Concurrency is shown as behaviour, not time: the source below holds every document read until ``want`` readers
are inside it at once (or a liveness timeout passes) and records the most readers it ever held together.
"""

from __future__ import annotations

import json
import re

import pytest
from gates import GatedIndex
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool

from evidence_lib import Budget, EvidenceIndex, Ledger, evidence_tools
from evidence_lib.course.article import article_corpus
from evidence_lib.course.readers import ScriptedChatModel
from evidence_lib.integrations.langchain._loop import LoopRules, run_loop


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


def shown(reply: tuple[str, str, str]) -> tuple[str, str, str]:
    """A reply without the compact profile's revision labels, each shown with a document's first block only (a
    search's manifest marks them shown too): which of two parallel calls shows one depends on which is served first."""
    call_id, status, content = reply
    return call_id, status, re.sub(r" @\S+", "", content)


@pytest.mark.parametrize("profile", ["article", "compact"])
@pytest.mark.parametrize("budget", [Budget(max_refusals=None), Budget(max_calls=6, max_refusals=None),
                                    Budget(max_bytes=900, max_refusals=None)], ids=["open", "calls", "bytes"])
def test_parallel_replies_match_a_sequential_run_and_the_budget_holds(tmp_path, profile, budget):
    """The calls really run side by side now (the page fetch outside the ledger's lock), so the order they reach the
    ledger is theirs: the same range read twice in one message is one page and one ``already_read`` whichever
    comes first, and a budget that runs out within the message is never overspent."""
    par, _, par_ledger = run(tmp_path / "par", MIXED, profile=profile, budget=budget)
    seq, _, seq_ledger = run(tmp_path / "seq", MIXED, profile=profile, budget=budget, parallel=False)
    assert [m.tool_call_id for m in par.tool_messages] == [c["id"] for c in MIXED]  # in call order
    limits = par_ledger.limits()
    assert all(limits[k] is None or v <= limits[k] for k, v in par_ledger.totals().items())
    assert sum(m.status == "success" for m in par.tool_messages) == par_ledger.totals()["calls"]
    ran_out = [r for r in replies(par) + replies(seq) if '"budget_exhausted"' in r[2]]
    if not ran_out:  # nothing runs out: the same replies and the same spend
        same_range = {"a0", "a2"}  # one is the page, the other already_read, in either order
        assert [shown(r) for r in replies(par) if r[0] not in same_range] == \
            [shown(r) for r in replies(seq) if r[0] not in same_range]
        assert sorted(shown(r)[1:] for r in replies(par) if r[0] in same_range) == \
            sorted(shown(r)[1:] for r in replies(seq) if r[0] in same_range)
        if profile == "article":  # the compact replies' sizes depend on where the labels fell
            assert par_ledger.totals() == seq_ledger.totals()
        assert par_ledger.totals()["calls"] == seq_ledger.totals()["calls"]
        statuses = {json.loads(c).get("status") if c.startswith("{") else None for _, _, c in replies(par)}
        assert profile == "compact" or "already_read" in statuses
    else:  # the budget ran out within the message: refused as such, after charging what it allowed
        assert budget.max_calls == 6 or budget.max_bytes == 900
        for mine, alone in zip(replies(par), replies(seq)):  # any other refusal is the call's own, as in sequence
            if mine[1] == "error" and '"budget_exhausted"' not in mine[2]:
                assert mine == alone


def test_a_document_changed_on_disk_is_refused_in_parallel_too(tmp_path):
    index = EvidenceIndex.build(article_corpus(), tmp_path)
    index.stored_file("d02").write_text("changed", encoding="utf-8")
    tools = evidence_tools(index, ledger=Ledger(Budget()))
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=FOUR), AIMessage(content="done")])
    result = run_loop(model, tools, "q")
    by_id = {m.tool_call_id: m for m in result.tool_messages}
    assert json.loads(by_id["r1"].content)["error"] == "evidence_changed"
    assert [by_id[i].status for i in ("r0", "r2", "r3")] == ["success"] * 3
