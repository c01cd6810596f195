"""One large-result mechanism (issues 24 and 32): a large result is a one-document snapshot of the store.

Issue 24 made the store's artifacts one-document snapshots under a reserved key; issue 32 left one API for the idea,
:class:`~evidence_lib.store.ToolResults`: a result is a snapshot of one document under the owner-qualified session, read
back through the snapshot's verified chunks, expired, cleaned up and deleted with its session like any snapshot.
A schema v5 store's artifact rows are still moved into snapshots under the reserved key when it is opened (schema v6),
so nothing a store kept is lost; the store counts them as ``artifacts`` until they expire.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from evidence_lib import EvidenceError, Principal
from evidence_lib.store import ToolResults
from evidence_lib.store._common import SnapshotKey, artifact_query, owner_session
from evidence_lib.store._snapshot import StoreSnapshot
from evidence_lib.store._sqlbase import SCHEMA_VERSION

from .storekit import T0, open_spec, raw_sql

HOUR = timedelta(hours=1)
ALICE = Principal("acme", "alice")


def result_row(estore, handle: str, principal: Principal = ALICE, session: str = "s-1"):
    """The published snapshot row holding the result ``handle`` (None if there is none)."""
    return estore.lookup_snapshot(SnapshotKey(principal.tenant, owner_session(session, principal.user), handle))


def test_a_result_is_a_one_document_snapshot_under_its_owners_session(estore):
    content = "trace line\n" * 1000
    entry = ToolResults(estore, ALICE, "s-1").put(content, tool="query_logistics")
    row = result_row(estore, entry.doc_id)
    assert row is not None
    docs = estore.document_rows(row.snap_id)
    assert [(d[1], d[2], d[4], d[6]) for d in docs] == [(entry.doc_id, "result of query_logistics", len(content),
                                                         entry.sha256)]
    assert ToolResults(estore, ALICE, "s-1").read(entry.doc_id, 4090, 11)["text"] == content[4090:4101]


def test_a_tampered_result_chunk_is_refused(spec, estore):
    results = ToolResults(estore, ALICE, "s-1")
    handle = results.put("trace line\n" * 1000, tool="t").doc_id
    row = result_row(estore, handle)
    if spec[0] == "memory":
        chunks = estore._chunk_map[(row.snap_id, 0)]
        body, sha = chunks[1]
        chunks[1] = ("X" + body[1:], sha)
    else:
        p = "?" if spec[0] == "sqlite" else "%s"
        with raw_sql(spec) as conn:
            conn.execute(f"UPDATE chunks SET body = 'X' || substr(body, 2) WHERE snap_id = {p} AND chunk_no = 1",
                         (row.snap_id,))
    assert results.read(handle, 0, 100)["end"] == 100  # chunk 0 is intact
    with pytest.raises(EvidenceError) as info:
        results.read(handle, 4096, 100)
    assert info.value.code == "evidence_changed" and info.value.details["doc_id"] == handle


def test_put_snapshot_refuses_the_reserved_artifact_prefix(estore):
    from evidence_lib import Document

    for attempt in (lambda: estore.put_snapshot("acme", "s-1", artifact_query("art-1"), [Document("d", "t", "r", "x")]),
                    lambda: estore.snapshot("acme", "s-1", artifact_query("art-1")),
                    lambda: estore.delete_snapshot("acme", "s-1", artifact_query("art-1"))):
        with pytest.raises(EvidenceError) as info:
            attempt()
        assert info.value.code == "invalid_arguments"


def test_results_are_snapshots_to_stats_cleanup_and_delete_session(estore, clock):
    ToolResults(estore, ALICE, "s-1", ttl=HOUR).put("x" * 10, tool="t")
    ToolResults(estore, ALICE, "s-2", ttl=2 * HOUR).put("y" * 10, tool="t")
    stats = estore.stats()
    assert (stats["snapshots"], stats["artifacts"], stats["documents"], stats["chunks"]) == (2, 0, 2, 2)
    clock.advance(hours=1)
    assert estore.cleanup() == {"snapshots": 1, "artifacts": 0, "workspaces": 0, "ledgers": 0}
    assert estore.delete_session("acme", "s-2") == {"snapshots": 1, "artifacts": 0, "ledgers": 0, "workspaces": 0}
    assert estore.stats()["snapshots"] == 0


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_schema_v5_stores_artifact_rows_become_snapshots_when_it_is_opened(spec, clock):
    """The v6 migration: artifact rows of a v5 store are readable afterwards, through snapshots, and the
    ``artifacts`` table is gone; a row whose content no longer matches its sha256 stays refused."""
    open_spec(spec, clock).close()  # the current schema, then put back what a v5 store had
    from evidence_lib.store._common import sha256_text, to_us

    now = to_us(T0)
    created, expires = now, now + 3_600_000_000
    body = "old trace\n" * 900
    rows = [("acme", "s-1", "art-0123456789abcdef01234567", "old summary", body, sha256_text(body), len(body),
             created, expires),
            ("acme", "s-1", "art-tampered00000000000000000", "", "edited", sha256_text("original"), 6, created,
             expires)]
    p = "?" if spec[0] == "sqlite" else "%s"
    with raw_sql(spec) as conn:
        conn.execute("CREATE TABLE artifacts (tenant TEXT NOT NULL, sess TEXT NOT NULL, artifact_id TEXT NOT NULL, "
                     "summary TEXT NOT NULL, content TEXT NOT NULL, sha256 TEXT NOT NULL, chars BIGINT NOT NULL, "
                     "created_us BIGINT NOT NULL, expires_us BIGINT NOT NULL, PRIMARY KEY (tenant, sess, artifact_id))")
        for row in rows:
            conn.execute(f"INSERT INTO artifacts VALUES ({', '.join([p] * 9)})", row)
        conn.execute("UPDATE store_meta SET value = '5' WHERE key = 'schema_version'")
    store = open_spec(spec, clock)
    try:
        migrated = [store.lookup_snapshot(SnapshotKey("acme", "s-1", artifact_query(r[2]))) for r in rows]
        kept, edited = (StoreSnapshot(store, row, store.document_rows(row.snap_id)) for row in migrated)
        entry = kept.entry(rows[0][2])
        assert kept.text(rows[0][2], None, 4090, 4110) == body[4090:4110]
        assert (entry.sha256, entry.chars) == (rows[0][5], len(body))
        with pytest.raises(EvidenceError, match="evidence_changed"):
            edited.text(rows[1][2])
        assert store.stats()["artifacts"] == 2
        with raw_sql(spec) as conn:
            version = conn.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone()[0]
            kinds = conn.execute("SELECT count(*) FROM snapshots WHERE tenant = 'acme'").fetchone()[0]
            with pytest.raises(Exception, match="artifacts"):
                conn.execute("SELECT count(*) FROM artifacts")
        assert (version, kinds) == (SCHEMA_VERSION, 2)  # migrated through every later version too
    finally:
        store.close()


def test_a_result_persists_across_sqlite_store_objects_on_the_same_file(tmp_path, clock):
    from evidence_lib.store import SQLiteStore

    with SQLiteStore(tmp_path / "one.db", clock) as first:
        handle = ToolResults(first, ALICE, "s-1", ids="minted", seed="t").put("kept on disk", tool="t").doc_id
    with SQLiteStore(tmp_path / "one.db", clock) as second:
        assert ToolResults(second, ALICE, "s-1").read(handle)["text"] == "kept on disk"
        assert result_row(second, handle) is not None
