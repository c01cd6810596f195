"""Every tool call costs a bounded number of store transactions, on every path (issue 31, items 20 and 22).

A tool call's store work is at most :data:`MAX_TRANSACTIONS` transactions whatever it finds: hundreds of matches, a
locate by doc_id, a read, an already-read range, a refusal; on a store snapshot (the tools of notebook 11) and on the
offload shelf (the middleware's locate and read over offloaded results, notebook 12). The ledger's part of a call is
one read of its counters and one write (item 22). Statements are counted on the real databases (SQLite's trace
callback sees every statement, BEGIN included; psycopg's libpq trace every message on PostgreSQL), and a call's
statements do not grow with its matches either.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import ToolMessage

from evidence_lib import Budget, Document, EvidenceIndex, Principal, evidence_tools, run_tool_call, tool_call
from evidence_lib.integrations.langchain._middleware import EvidenceMiddleware

from .storekit import round_trips

ALICE = Principal("acme", "alice")
#: The issue's bound: at most this many store transactions per tool call, whatever it finds.
MAX_TRANSACTIONS = 4
#: What a call may send, whatever it finds (its statements, BEGIN and COMMIT included).
MAX_STATEMENTS = 24
UNLIMITED = Budget(max_calls=None, max_chars=None, max_bytes=None, max_tokens=None, max_reads_per_doc=None,
                   max_refusals=None)
#: Twelve documents, each with 40 lines holding "limit" (480 matches) and one line holding "上限".
LINES = [f"line {i}: the batch limit is {i} rows; keep under the limit.\n" for i in range(40)]
DOCS = [Document(f"d{i:02}", f"doc {i}", "r1", "".join(LINES) + f"单批上限为{i}条。\n" + "".join(LINES))
        for i in range(12)]
#: A 600-line tool result, "limit" on every line (the issue's measured case: 7,486 transactions for one locate).
RESULT = "".join(f"2026-11-30T12:{i // 60:02}:{i % 60:02}Z INFO worker-{i % 7} limit={i} ok\n" for i in range(600))

#: (what, tool, arguments, whether the call is refused)
SNAPSHOT_CALLS = [
    ("search", "search_evidence", {"query": "batch limit"}, False),
    ("locate, hundreds of matches", "locate_evidence", {"term": "limit"}, False),
    ("locate, CJK", "locate_evidence", {"term": "上限"}, False),
    ("locate by doc_id", "locate_evidence", {"term": "limit", "doc_id": "d03"}, False),
    ("read", "read_evidence", {"doc_id": "d05", "offset": 100, "limit": 200}, False),
    ("already_read", "read_evidence", {"doc_id": "d05", "offset": 120, "limit": 100}, False),
    ("refusal: unknown doc_id", "read_evidence", {"doc_id": "nope", "offset": 0, "limit": 10}, True),
    ("refusal: bad arguments", "locate_evidence", {"term": ""}, True),
]


def measured(store, tools, name: str, args: dict, refused: bool):
    with round_trips(store) as trips:
        msg = run_tool_call(tools, tool_call(name, args, "c1"))
    assert (msg.status == "error") == refused, msg.content
    return trips, msg


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("profile", ["article", "compact"])
def test_every_call_on_a_store_snapshot_costs_at_most_four_transactions(estore, profile):
    snap = estore.put_snapshot("acme", "s-1", "q", DOCS)
    ledger = estore.ledger("acme", "s-1", f"task-{profile}", UNLIMITED)
    tools = evidence_tools(snap, ALICE, ledger=ledger, profile=profile)
    schemas = {t.name: t.args_schema.model_fields for t in tools}
    costs = {}
    for what, name, args, refused in SNAPSHOT_CALLS:
        if not set(args) <= set(schemas[name]):  # the article's fixed-index locate has no doc_id
            continue
        trips, msg = measured(estore, tools, name, args, refused)
        costs[what] = (trips.transactions, len(trips.statements))
        if what == "already_read":
            assert "already_read" in msg.content
    assert all(t <= MAX_TRANSACTIONS and s <= MAX_STATEMENTS for t, s in costs.values()), costs


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_every_call_on_a_fixed_index_with_a_store_ledger_costs_the_ledgers_read_and_write(estore):
    """A fixed index touches no store: a call's transactions are the ledger's, one read and one write at most."""
    tools = evidence_tools(EvidenceIndex.in_memory(DOCS), ALICE, ledger=estore.ledger("acme", "s-1", "t", UNLIMITED),
                           profile="compact")
    for what, name, args, refused in SNAPSHOT_CALLS:
        trips, _ = measured(estore, tools, name, args, refused)
        assert trips.transactions <= 2 and len(trips.statements) <= MAX_STATEMENTS, (what, trips.groups)


def shelf_tools(store, results: int = 1):
    """A middleware with ``results`` offloaded 600-line results, and its locate and read."""
    mw = EvidenceMiddleware(store, ALICE, session="s-1", threshold_tokens=50, budget=UNLIMITED)
    handles = []
    for i in range(results):
        shown = mw.offloaded(ToolMessage(content=RESULT.replace("ok", f"ok{i}"), name="get_logs",
                                         tool_call_id=f"call-{i}"), {"id": f"call-{i}", "name": "get_logs"})
        handles.append(shown.response_metadata["evidence_offload"]["doc_id"])
    return mw, handles


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("results", [1, 20])
def test_every_call_on_the_offload_shelf_costs_at_most_four_transactions(estore, results):
    """However many results the run holds: a locate without doc_id asks for every result's candidates and first
    chunks together (it took one statement more per result)."""
    mw, handles = shelf_tools(estore, results)
    calls = [
        ("locate, hundreds of matches", "locate_evidence", {"term": "limit"}, False),
        ("locate by doc_id", "locate_evidence", {"term": "limit", "doc_id": handles[-1]}, False),
        ("locate, no match", "locate_evidence", {"term": "absent"}, False),
        ("locate, a match in one result", "locate_evidence", {"term": "ok0"}, False),
        ("locate across a line wrap", "locate_evidence", {"term": "limit=5 ok"}, False),
        ("read", "read_evidence", {"doc_id": handles[0], "offset": 100, "limit": 300}, False),
        ("already_read", "read_evidence", {"doc_id": handles[0], "offset": 150, "limit": 100}, False),
        ("refusal: unknown handle", "read_evidence", {"doc_id": "res-0000000000", "offset": 0, "limit": 10}, True),
        ("refusal: bad arguments", "read_evidence", {"doc_id": handles[0], "limit": 0}, True),
    ]
    costs = {}
    for what, name, args, refused in calls:
        trips, _ = measured(estore, mw.tools, name, args, refused)
        costs[what] = (trips.transactions, len(trips.statements))
    assert all(t <= MAX_TRANSACTIONS and s <= MAX_STATEMENTS for t, s in costs.values()), costs


# -- item 22: the ledger's part of a call ---------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("name, args", [
    ("search_evidence", {"query": "batch limit"}),
    ("locate_evidence", {"term": "limit"}),
    ("read_evidence", {"doc_id": "d07", "offset": 10, "limit": 300}),
    ("read_evidence", {"doc_id": "d07", "offset": 20, "limit": 50}),  # already read: answered from the ledger
])
def test_a_store_ledger_adds_one_read_of_its_counters_and_one_write_to_a_call(estore, name, args):
    snap = estore.put_snapshot("acme", "s-1", "q", DOCS)
    tools = evidence_tools(snap, ALICE, ledger=estore.ledger("acme", "s-1", "task", UNLIMITED), profile="compact")
    run_tool_call(tools, tool_call("read_evidence", {"doc_id": "d07", "offset": 10, "limit": 300}, "c0"))
    trips, msg = measured(estore, tools, name, args, False)
    ledger = trips.touching("ledgers", "ledger_entries", "ledger_excerpts")
    writes = [g for g in ledger if any(sql.startswith("UPDATE ledgers") for sql in g)]
    reads = [g for g in ledger if g not in writes]
    counter_reads = [sql for g in reads for sql in g if sql.startswith("SELECT") and " FROM ledgers " in sql + " "]
    assert len(writes) == 1 and len(reads) <= 1 and len(counter_reads) <= 1, trips.groups
    assert trips.published_checks() <= (name != "read_evidence"), trips.statements  # a read's chunks prove it
