"""What a session leaves behind (issue 14) and what one call costs the store (issue 15), on every backend.

Issue 14: ``delete_session(tenant, session)`` removes everything stored for the session, the offload middleware's
owner-qualified keys included, and task ledgers expire (a TTL; ``cleanup`` removes them).

Issue 15: one page-serving path. A call looks each document up once, fetches the chunks it needs in one batch,
verifies each chunk once and charges once. Round trips are counted on the real databases: SQLite's trace callback
sees every statement (BEGIN included), and psycopg's libpq trace every message of the PostgreSQL protocol.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from evidence_lib import Budget, Document, EvidenceError, Principal, evidence_tools, run_tool_call, tool_call
from evidence_lib.integrations.langchain._middleware import EvidenceMiddleware
from evidence_lib.store._offload import offload, owner_session

from .storekit import Trips, open_spec, raw_sql, round_trips

HOUR = timedelta(hours=1)
ALICE, BOB = Principal("acme", "alice"), Principal("acme", "bob")
BIG = "a large tool result line\n" * 400  # well over the offload threshold below


def offloaded(store, principal: Principal, session: str) -> tuple[EvidenceMiddleware, str]:
    """A middleware of ``principal`` in ``session`` with a task ledger, one offloaded result and one charged call."""
    mw = EvidenceMiddleware(store, principal, session=session, task="task", threshold_tokens=50)
    _, entry = offload(mw.shelf, BIG, tool="fetch_report", call_id="call-1")
    mw.ledger.charge("read_evidence", "a page")
    return mw, entry.doc_id


# -- issue 14: a session's data, owner-qualified keys included --------------------------------------------------
def test_delete_session_removes_the_middlewares_results_and_task_ledgers_of_every_user(estore):
    alice, handle = offloaded(estore, ALICE, "s-1")
    bob, _ = offloaded(estore, BOB, "s-1")
    estore.put_snapshot("acme", "s-1", "q", [Document("d1", "t", "r1", "plain session text")])
    keep, kept = offloaded(estore, ALICE, "s-10")  # another session of the same user, sharing a prefix
    other_tenant, _ = offloaded(estore, Principal("globex", "alice"), "s-1")
    # workspaces: alice's and bob's run listings (evidence_lib.store._offload.run_session)
    assert estore.delete_session("acme", "s-1") == {"snapshots": 3, "artifacts": 0, "ledgers": 2, "workspaces": 2}
    with pytest.raises(EvidenceError, match="unknown_doc_id"):
        alice.shelf.entry(handle, ALICE)
    for mw in (alice, bob):
        with pytest.raises(EvidenceError, match="ledger_expired"):
            mw.ledger.totals()
        assert estore.ledger("acme", owner_session("s-1", mw.principal.user), "task").totals()["calls"] == 0
    assert keep.shelf.entry(kept, ALICE).doc_id == kept and keep.ledger.totals()["calls"] == 1
    assert other_tenant.ledger.totals()["calls"] == 1


def test_delete_session_leaves_a_session_whose_name_only_looks_owner_qualified(estore):
    lookalike = owner_session("s-1", "alice") + "x"  # ends like another session: not one of s-1's keys
    estore.ledger("acme", lookalike, "task")
    estore.ledger("acme", "s-1", "task")
    assert estore.delete_session("acme", "s-1")["ledgers"] == 1
    assert estore.stats()["ledgers"] == 1


def test_a_task_ledger_expires_ttl_after_its_last_entry_and_cleanup_removes_it(estore, clock):
    ledger = estore.ledger("acme", "s-1", "task", Budget(), ttl=HOUR)
    clock.advance(minutes=50)
    ledger.charge("read_evidence", "a page")  # its last entry: it now expires an hour after this
    clock.advance(minutes=59)
    assert ledger.totals()["calls"] == 1 and estore.cleanup()["ledgers"] == 0
    clock.advance(minutes=1)
    with pytest.raises(EvidenceError, match="ledger_expired"):
        ledger.charge("read_evidence", "another page")
    assert estore.cleanup()["ledgers"] == 1 and estore.stats()["ledgers"] == 0
    with pytest.raises(EvidenceError, match="ledger_expired"):
        ledger.totals()


def test_an_expired_task_ledger_opened_again_starts_a_new_budget(estore, clock):
    first = estore.ledger("acme", "s-1", "task", Budget(max_calls=1), ttl=HOUR)
    first.charge("read_evidence", "a page")
    clock.advance(hours=2)
    again = estore.ledger("acme", "s-1", "task", Budget(max_calls=5), ttl=HOUR)  # no "different budget" error
    assert again.totals()["calls"] == 0 and again.budget.max_calls == 5


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_store_of_schema_version_4_is_migrated_and_its_ledgers_get_an_expiry(spec, estore, clock):
    estore.ledger("acme", "s-1", "task").charge("read_evidence", "a page")
    estore.close()
    with raw_sql(spec) as conn:  # the version-4 layout: ledgers without expires_us, artifacts in their own table
        conn.execute("CREATE TABLE artifacts (tenant TEXT NOT NULL, sess TEXT NOT NULL, artifact_id TEXT NOT NULL, "
                     "summary TEXT NOT NULL, content TEXT NOT NULL, sha256 TEXT NOT NULL, chars BIGINT NOT NULL, "
                     "created_us BIGINT NOT NULL, expires_us BIGINT NOT NULL, PRIMARY KEY (tenant, sess, artifact_id))")
        conn.execute("DROP INDEX ledgers_expiry")
        conn.execute("ALTER TABLE ledgers DROP COLUMN expires_us")
        conn.execute("UPDATE store_meta SET value = '4' WHERE key = 'schema_version'")
    store = open_spec(spec, clock)
    ledger = store.ledger("acme", "s-1", "task")
    assert ledger.totals()["calls"] == 1
    ledger.charge("read_evidence", "another page")
    clock.advance(hours=25)
    assert store.cleanup()["ledgers"] == 1
    store.close()


# -- issue 15: round trips of one call ------------------------------------------------------------------------
UNLIMITED = Budget(max_calls=None, max_chars=None, max_bytes=None, max_tokens=None, max_reads_per_doc=None,
                   max_refusals=None)


def corpus(matching: int) -> list[Document]:
    """12 documents, ``matching`` of them holding the term (上限 and "batch limit") once, far apart from each other."""
    filler = "其他内容。" * 60
    return [Document(f"d{i:02}", f"doc {i}", "r1", filler + (f"单批上限为{i}条。batch limit {i}. " if i < matching
                                                               else "无关的句子。") + filler) for i in range(12)]


def tools_on(store, docs: list[Document], profile: str = "compact"):
    snap = store.put_snapshot("acme", "s-1", "q", docs)
    ledger = store.ledger("acme", "s-1", f"task-{profile}", UNLIMITED)
    tools = evidence_tools(snap, ALICE, ledger=ledger, profile=profile)
    run_tool_call(tools, tool_call("search_evidence", {"query": "单批上限 batch limit"}, "c0"))
    return tools


def measured(store, tools, name: str, args: dict) -> tuple[Trips, str]:
    with round_trips(store) as trips:
        msg = run_tool_call(tools, tool_call(name, args, "c1"))
    assert msg.status != "error", msg.content
    return trips, msg.content


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("matching", [1, 3, 12])
@pytest.mark.parametrize("term", ["上限", "batch limit", "limit"])
def test_a_compact_locate_costs_at_most_four_transactions_whatever_the_number_of_excerpts(estore, matching, term):
    tools = tools_on(estore, corpus(matching))
    trips, content = measured(estore, tools, "locate_evidence", {"term": term})
    assert f"{matching} matches" in content or (matching == 1 and "1 match" in content)
    assert trips.transactions <= 4, trips.statements
    assert trips.chunk_fetches() <= 1 and trips.ledger_history_loads() == 0


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("profile", ["article", "compact"])
def test_a_read_costs_at_most_three_transactions_and_one_chunk_fetch(estore, profile):
    tools = tools_on(estore, corpus(3), profile)
    for offset in (0, 10, 20, 0):  # the last one is already read: answered without fetching a chunk
        trips, content = measured(estore, tools, "read_evidence", {"doc_id": "d01", "offset": offset, "limit": 40})
        assert trips.transactions <= 3, trips.statements
        assert trips.chunk_fetches() == (offset != 0 or "already_read" not in content)
        assert trips.ledger_history_loads() == 0


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_store_ledger_never_reloads_its_history_per_call(estore):
    """The tenth read of a document costs what the second did: counters kept in the ledger's row, one aggregate for
    the document's reads, only that document's reads for coverage."""
    tools = tools_on(estore, corpus(3), "article")
    costs = []
    for i in range(10):
        trips, _ = measured(estore, tools, "read_evidence", {"doc_id": f"d{i % 3:02}", "offset": 100 + i, "limit": 5})
        costs.append((trips.transactions, len(trips.statements), trips.ledger_history_loads()))
    assert len(set(costs[1:])) == 1 and costs[-1][2] == 0, costs


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_each_chunk_is_verified_once_per_locate(estore, monkeypatch):
    """A compact locate over 12 matching one-chunk documents hashes each chunk once and, for the wrapped scan, each
    document's whole text once: 24 hashes (it made 72 chunk hash checks)."""
    from evidence_lib.store import _snapshot as snapshot

    tools = tools_on(estore, corpus(12))
    hashed: list[str] = []
    real = snapshot.sha256_hex
    monkeypatch.setattr(snapshot, "sha256_hex", lambda text: hashed.append(text) or real(text))
    run_tool_call(tools, tool_call("locate_evidence", {"term": "上限"}, "c1"))
    assert len(set(hashed)) == 12 and len(hashed) == 2 * 12
