"""One index protocol, one ledger: both profiles x every backend x both ledgers give the same replies and books.

Issue 16 defect 8: the compact profile over a store snapshot answered ``internal_error`` (its excerpt window ran a
regex over a lazily fetched text object) and a ``StoreLedger`` raised ``TypeError`` on the excerpts a compact locate
serves. The reference is the in-memory index with the teaching ledger; every other combination must reply
byte for byte the same, keep the same books, and let the same citations verify.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from evidence_lib import Budget, EvidenceIndex, Ledger, Principal, evidence_tools, verify_citation
from evidence_lib._index import IndexProtocol
from evidence_lib._toolkit import run_tool_call, tool_call
from evidence_lib.course.article import article_corpus
from evidence_lib.profiles import excerpts

ALICE = Principal("acme", "alice")
BUDGET = Budget(max_calls=12, max_chars=None, max_bytes=None, max_tokens=None, max_reads_per_doc=3)
CALLS = [
    ("search_evidence", {"query": "单批上限是多少"}),
    ("locate_evidence", {"term": "单批上限"}),
    ("locate_evidence", {"term": "上限", "doc_id": "d03"}),
    ("read_evidence", {"doc_id": "d03", "offset": 4300, "limit": 39}),
    ("read_evidence", {"doc_id": "d03", "offset": 4321, "limit": 18}),  # covered by the page before: already_read
    ("read_evidence", {"doc_id": "d03", "offset": 99_999, "limit": 10}),  # refused: offset beyond the end
]


def replay(source, ledger, profile):
    tools = evidence_tools(source, ALICE, ledger=ledger, profile=profile)
    return [run_tool_call(tools, tool_call(name, args, f"c{i}")) for i, (name, args) in enumerate(CALLS)]


def books(ledger):
    return [(e.step, e.tool, e.status, e.chars, e.bytes, e.tokens, e.charged, e.read, e.covered, e.excerpts)
            for e in ledger.entries]


@pytest.fixture
def snap(estore):
    return estore.put_snapshot("acme", "s-1", "batch limit", article_corpus(), ttl=timedelta(hours=1))


@pytest.mark.parametrize("profile", ["article", "compact"])
@pytest.mark.parametrize("ledger_kind", ["teaching", "store"])
def test_both_profiles_on_every_backend_and_ledger_reply_like_the_in_memory_index(estore, snap, profile,
                                                                                   ledger_kind):
    assert isinstance(snap, IndexProtocol)
    ref_ledger = Ledger(BUDGET)
    expected = replay(EvidenceIndex.in_memory(article_corpus()), ref_ledger, profile)

    ledger = Ledger(BUDGET) if ledger_kind == "teaching" else estore.ledger("acme", "s-1", f"t-{profile}", BUDGET)
    got = replay(snap, ledger, profile)

    assert [m.content for m in got] == [m.content for m in expected]
    # the article's fixed-index locate takes no doc_id (refused as invalid_arguments); compact takes it
    restricted = "success" if profile == "compact" else "error"
    assert [m.status for m in got] == ["success", "success", restricted, "success", "success", "error"]
    assert "already_read" in got[4].content
    assert books(ledger) == books(ref_ledger)
    assert ledger.totals() == ref_ledger.totals() and ledger.context() == ref_ledger.context()

    shown = excerpts(got)
    assert any(x.doc_id == "d03" and x.start <= 4321 and 4339 <= x.end for x in shown)
    for x in shown:  # every piece of text the model was shown is citable from this backend and this ledger
        check = verify_citation(snap, x.citation(), ledger, ALICE)
        assert check.ok, (x, check.reason)


def test_a_compact_locate_is_a_read_in_the_store_ledger(estore, snap):
    ledger = estore.ledger("acme", "s-1", "excerpts", BUDGET)
    tools = evidence_tools(snap, ALICE, ledger=ledger, profile="compact")
    reply = run_tool_call(tools, tool_call("locate_evidence", {"term": "单批上限"}, "c1"))
    assert reply.status == "success"
    (x,) = [x for x in excerpts([reply]) if x.doc_id == "d03"]
    assert [(r.doc_id, r.start, r.end) for r in ledger.reads] == [(x.doc_id, x.start, x.end)]
    # a page inside the excerpt is answered from memory, as in the teaching ledger
    page = run_tool_call(tools, tool_call("read_evidence", {"doc_id": "d03", "offset": 4321, "limit": 18}, "c2"))
    assert page.content.startswith('{"status": "already_read"')
