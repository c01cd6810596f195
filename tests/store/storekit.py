"""Helpers for the store tests (imported by the fixtures, the tests and the spawned worker processes).

PostgreSQL is a real server: set ``EVIDENCE_PG_DSN`` (``make postgres-up`` prints it; ``.ci/run`` sets it).
Without it the PostgreSQL cases skip with a message naming that command. Every PostgreSQL test gets its own
schema, dropped afterwards, so tests and concurrent runs never see each other's rows.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone

import pytest

from evidence_lib.store import MemoryStore, SQLiteStore

T0 = datetime(2026, 10, 27, 9, 0, tzinfo=timezone.utc)
BACKENDS = ("memory", "sqlite", "postgres")
PG_SKIP = ("PostgreSQL backend not tested: EVIDENCE_PG_DSN is not set. Run `make postgres-up` "
           "(or `bash scripts/postgres.sh up`) and export the DSN it prints; `make test-store` does both.")


def pg_dsn() -> str:
    dsn = os.environ.get("EVIDENCE_PG_DSN", "")
    if not dsn:
        pytest.skip(PG_SKIP)
    return dsn


def open_spec(spec: tuple[str, str], clock):
    """A store from a picklable spec ``(backend, where)``: what a worker process opens."""
    backend, where = spec
    if backend == "memory":
        return MemoryStore(clock)
    if backend == "sqlite":
        return SQLiteStore(where, clock)
    from evidence_lib.store.postgres import PostgresStore

    return PostgresStore(where, clock)


@contextmanager
def raw_sql(spec: tuple[str, str]) -> Iterator:
    """A plain autocommit DB-API connection to a SQL store's database (``conn.execute(sql)``): a second client, as
    an operator's ``sqlite3`` or ``psql`` shell would be, for what the store's API does not show or change."""
    backend, where = spec
    if backend == "sqlite":
        conn = sqlite3.connect(where, isolation_level=None)
    elif backend == "postgres":
        import psycopg

        conn = psycopg.connect(where, autocommit=True)
    else:
        raise ValueError("the memory backend has no database to connect to")
    try:
        yield conn
    finally:
        conn.close()


def own_connection(store):
    """The store's own DB-API connection (``sqlite3`` or psycopg), for a test that must watch the store's own
    statements: SQLite's progress handler, PostgreSQL's session settings and notices. Anything a second client
    can do goes through :func:`raw_sql` instead; this is the one place a test reaches into a store."""
    if store.backend not in ("sqlite", "postgres"):
        raise ValueError("the memory backend has no connection")
    return store._conn


def sqlite_steps(store, fn) -> int:
    """Virtual-machine instructions SQLite runs for ``fn()``, in units of 10 (FTS5's own statements included)."""
    steps = [0]

    def tick() -> int:
        steps[0] += 1
        return 0

    conn = own_connection(store)  # the store's own statements are what is counted
    conn.set_progress_handler(tick, 10)
    try:
        fn()
    finally:
        conn.set_progress_handler(None, 10)
    return steps[0]


def auto_explain(pg):
    """Collect the JSON plans PostgreSQL logs for this connection's statements (skip if auto_explain is absent)."""
    import psycopg

    plans: list[dict] = []

    def notice(diag) -> None:
        text = diag.message_primary or ""
        if "{" in text:
            plans.append(json.loads(text[text.index("{"):]))

    conn = own_connection(pg)  # the store's own session is what is explained
    try:
        conn.execute("LOAD 'auto_explain'")
    except psycopg.Error as e:
        pytest.skip(f"auto_explain cannot be loaded on this server ({e.sqlstate})")
    for setting in ("auto_explain.log_min_duration = 0", "auto_explain.log_analyze = on",
                    "auto_explain.log_format = json", "client_min_messages = log"):
        conn.execute(f"SET {setting}")
    conn.add_notice_handler(notice)
    return plans


def nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def tamper(spec: tuple[str, str], estore, snap, doc_id: str, chunk_no: int = 0) -> None:
    """Change one stored chunk behind the store's back (the operator's 'someone edited the data' experiment)."""
    if spec[0] == "memory":  # no database to edit: the memory store's own dict (documents are numbered in order)
        doc_no = [e.doc_id for e in snap].index(doc_id)
        chunks = estore._chunk_map[(snap.row.snap_id, doc_no)]
        body, sha = chunks[chunk_no]
        chunks[chunk_no] = ("X" + body[1:], sha)
        return
    p = "?" if spec[0] == "sqlite" else "%s"
    with raw_sql(spec) as conn:
        conn.execute(f"UPDATE chunks SET body = 'X' || substr(body, 2) WHERE snap_id = {p} AND chunk_no = {p} AND "
                     f"doc_no = (SELECT doc_no FROM documents WHERE snap_id = {p} AND doc_id = {p})",
                     (snap.row.snap_id, chunk_no, snap.row.snap_id, doc_id))
