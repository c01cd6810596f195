"""One large-result mechanism (issue 24): the store's artifacts are one-document snapshots under a reserved key.

Before, ``put_artifact`` kept its own ``artifacts`` table (and the memory backend its own dict) beside the snapshots
the offload shelf uses. Now an artifact is a snapshot of one document whose query is
:func:`~evidence_lib.store._common.artifact_query` of its id: it is read back through the snapshot's verified chunks,
expires, is cleaned up and deleted with its session like any snapshot, and a schema v5 store's artifact rows are
moved into snapshots when it is opened (schema v6).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from evidence_lib import EvidenceError

from .storekit import T0, open_spec, raw_sql

HOUR = timedelta(hours=1)


def artifact_snapshot(estore, tenant: str, session: str, artifact_id: str):
    """The published snapshot row holding ``artifact_id`` (None if there is none)."""
    from evidence_lib.store._common import SnapshotKey, artifact_query

    return estore.lookup_snapshot(SnapshotKey(tenant, session, artifact_query(artifact_id)))


def test_put_artifact_data_is_a_one_document_snapshot_of_the_reserved_prefix(estore):
    content = "trace line\n" * 1000
    h = estore.put_artifact("acme", "s-1", content, summary="carrier trace")
    row = artifact_snapshot(estore, "acme", "s-1", h["artifact_id"])
    assert row is not None
    docs = estore.document_rows(row.snap_id)
    assert [(d[1], d[2], d[4], d[6]) for d in docs] == [(h["artifact_id"], "carrier trace", h["chars"], h["sha256"])]
    assert estore.read_artifact("acme", "s-1", h["artifact_id"], 4090, 11)["text"] == content[4090:4101]


def test_a_tampered_artifact_chunk_is_refused(spec, estore):
    h = estore.put_artifact("acme", "s-1", "trace line\n" * 1000)
    row = artifact_snapshot(estore, "acme", "s-1", h["artifact_id"])
    if spec[0] == "memory":
        chunks = estore._chunk_map[(row.snap_id, 0)]
        body, sha = chunks[1]
        chunks[1] = ("X" + body[1:], sha)
    else:
        p = "?" if spec[0] == "sqlite" else "%s"
        with raw_sql(spec) as conn:
            conn.execute(f"UPDATE chunks SET body = 'X' || substr(body, 2) WHERE snap_id = {p} AND chunk_no = 1",
                         (row.snap_id,))
    assert estore.read_artifact("acme", "s-1", h["artifact_id"], 0, 100)["end"] == 100  # chunk 0 is intact
    with pytest.raises(EvidenceError) as info:
        estore.read_artifact("acme", "s-1", h["artifact_id"], 4096, 100)
    assert info.value.code == "evidence_changed" and info.value.details["doc_id"] == h["artifact_id"]


def test_put_snapshot_refuses_the_reserved_artifact_prefix(estore):
    from evidence_lib import Document
    from evidence_lib.store._common import artifact_query

    h = estore.put_artifact("acme", "s-1", "kept")
    for attempt in (lambda: estore.put_snapshot("acme", "s-1", artifact_query(h["artifact_id"]),
                                                [Document("d", "t", "r", "replaced")]),
                    lambda: estore.snapshot("acme", "s-1", artifact_query(h["artifact_id"])),
                    lambda: estore.delete_snapshot("acme", "s-1", artifact_query(h["artifact_id"]))):
        with pytest.raises(EvidenceError) as info:
            attempt()
        assert info.value.code == "invalid_arguments"
    assert estore.read_artifact("acme", "s-1", h["artifact_id"])["text"] == "kept"


def test_artifacts_are_counted_apart_from_snapshots_by_stats_cleanup_and_delete_session(estore, clock):
    estore.put_artifact("acme", "s-1", "x" * 10, ttl=HOUR)
    estore.put_artifact("acme", "s-2", "y" * 10)
    stats = estore.stats()
    assert (stats["snapshots"], stats["artifacts"], stats["documents"], stats["chunks"]) == (0, 2, 0, 0)
    clock.advance(hours=1)
    assert estore.cleanup() == {"snapshots": 0, "artifacts": 1, "workspaces": 0, "ledgers": 0}
    assert estore.delete_session("acme", "s-2") == {"snapshots": 0, "artifacts": 1, "ledgers": 0, "workspaces": 0}
    assert estore.stats()["artifacts"] == 0


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
        page = store.read_artifact("acme", "s-1", rows[0][2], 4090, 20)
        assert page["text"] == body[4090:4110] and page["sha256"] == rows[0][5] and page["total_chars"] == len(body)
        with pytest.raises(EvidenceError, match="evidence_changed"):
            store.read_artifact("acme", "s-1", rows[1][2])
        assert store.stats()["artifacts"] == 2
        with raw_sql(spec) as conn:
            version = conn.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone()[0]
            kinds = conn.execute("SELECT count(*) FROM snapshots WHERE tenant = 'acme'").fetchone()[0]
            with pytest.raises(Exception, match="artifacts"):
                conn.execute("SELECT count(*) FROM artifacts")
        assert (version, kinds) == ("6", 2)
    finally:
        store.close()


def test_an_sqlite_artifact_persists_across_store_objects_on_the_same_file(tmp_path, clock):
    from evidence_lib.store import SQLiteStore

    with SQLiteStore(tmp_path / "one.db", clock) as first:
        h = first.put_artifact("acme", "s-1", "kept on disk", summary="s")
    with SQLiteStore(tmp_path / "one.db", clock) as second:
        assert second.read_artifact("acme", "s-1", h["artifact_id"])["text"] == "kept on disk"
        assert artifact_snapshot(second, "acme", "s-1", h["artifact_id"]) is not None
