"""Helpers for the store tests (imported by the fixtures, the tests and the spawned worker processes).

PostgreSQL is a real server: set ``EVIDENCE_PG_DSN`` (``make postgres-up`` prints it; ``.ci/run`` sets it).
Without it the PostgreSQL cases skip with a message naming that command. Every PostgreSQL test gets its own
schema, dropped afterwards, so tests and concurrent runs never see each other's rows.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from evidence_lib.store import MemoryStore, SQLiteStore

T0 = datetime(2026, 10, 27, 9, 0, tzinfo=UTC)
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
    from evidence_lib.store._postgres import PostgresStore

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


def own_connections(store) -> list:
    """Every DB-API connection the store has open (``sqlite3`` or psycopg): one per transaction it ran at once, so a
    store used from one thread at a time has one. For a test that must watch the store's own statements: SQLite's
    trace callback and progress handler, PostgreSQL's session settings, notices and protocol trace. Anything a second
    client can do goes through :func:`raw_sql` instead; this is the one place a test reaches into a store."""
    if store.backend not in ("sqlite", "postgres"):
        raise ValueError("the memory backend has no connection")
    return list(store._conns)


def own_connection(store):
    """The store's one connection (:func:`own_connections`), when it has exactly one."""
    conns = own_connections(store)
    assert len(conns) == 1, f"the store has {len(conns)} connections open"
    return conns[0]


@contextmanager
def on_every_connection(store, start, stop) -> Iterator[None]:
    """``start(conn)`` on each connection the store has and opens during the block; ``stop(conn)`` after it."""
    touched = list(own_connections(store))
    for conn in touched:
        start(conn)

    def opened(conn) -> None:
        touched.append(conn)
        start(conn)

    store._on_connect.append(opened)
    try:
        yield
    finally:
        store._on_connect.remove(opened)
        for conn in touched:
            stop(conn)


def sqlite_steps(store, fn) -> int:
    """Virtual-machine instructions SQLite runs for ``fn()``, in units of 10 (FTS5's own statements included)."""
    steps = [0]

    def tick() -> int:
        steps[0] += 1
        return 0

    with on_every_connection(store, lambda conn: conn.set_progress_handler(tick, 10),  # the store's own statements
                             lambda conn: conn.set_progress_handler(None, 10)):
        fn()
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


@dataclass
class Trips:
    """What a store sent its database during a block: statements, and the transactions they ran in (a statement
    outside BEGIN ... COMMIT is a transaction of its own)."""

    statements: list[str] = field(default_factory=list)
    groups: list[list[str]] = field(default_factory=list)  # the statements of each transaction, in order

    @property
    def transactions(self) -> int:
        return len(self.groups)

    def touching(self, *tables: str) -> list[list[str]]:
        """The transactions with a statement naming one of ``tables``."""
        return [g for g in self.groups if any(f" {t} " in f"{sql} " for sql in g for t in tables)]

    def published_checks(self) -> int:
        """Statements that only ask whether a snapshot is still published."""
        return sum(1 for sql in self.statements if sql.startswith("SELECT 1 FROM snapshots WHERE snap_id = "))

    def chunk_fetches(self) -> int:
        return sum(1 for sql in self.statements if "FROM chunks WHERE snap_id = " in sql and "chunk_no" in sql)

    def ledger_history_loads(self) -> int:
        """Statements reading a ledger's entries without naming one document (reports do; a call must not)."""
        return sum(1 for sql in self.statements if "FROM ledger_entries WHERE lid = " in sql
                   and "read_doc_id = " not in sql and "INSERT" not in sql)


def _count(trips: Trips, statements: list[tuple[str, bool]]) -> None:
    """Fill ``trips`` from ``(sql, in_transaction_before)`` pairs."""
    for sql, busy in statements:
        trips.statements.append(sql)
        if not busy or not trips.groups:
            trips.groups.append([])
        trips.groups[-1].append(sql)


@contextmanager
def round_trips(store) -> Iterator[Trips]:
    """Every statement ``store`` sends in the block, on every connection: SQLite's trace callback (BEGIN included),
    PostgreSQL's libpq protocol trace (simple queries and parsed statements, with the server's idle or in-transaction
    status). Statements of one connection group into its transactions."""
    trips = Trips()
    if store.backend == "sqlite":
        seen: dict[int, list[str]] = {}

        def trace(conn) -> None:
            statements = seen.setdefault(id(conn), [])
            # "-- ..." lines are statements SQLite runs inside one of ours (FTS5's own, triggers): not round trips
            conn.set_trace_callback(lambda sql: sql.startswith("-- ") or statements.append(sql))

        with on_every_connection(store, trace, lambda conn: conn.set_trace_callback(None)):
            yield trips
        for statements in seen.values():
            busy, pairs = False, []
            for sql in statements:
                pairs.append((sql, busy))
                word = sql.split(None, 1)[0].upper()
                busy = word == "BEGIN" or (busy and word not in ("COMMIT", "ROLLBACK"))
            _count(trips, pairs)
        return
    from psycopg import pq

    files: dict[int, Any] = {}

    def start(conn) -> None:
        f = files[id(conn)] = tempfile.TemporaryFile("w+")
        conn.pgconn.trace(f.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)

    with on_every_connection(store, start, lambda conn: conn.pgconn.untrace()):
        yield trips
    for f in files.values():
        with f:
            f.seek(0)
            busy, pairs = False, []
            for line in f:
                side, _, kind, *rest = line.rstrip("\n").split("\t")
                if side == "F" and kind in ("Query", "Parse"):
                    pairs.append((_pg_sql(kind, rest[0]) if rest else kind, busy))
                    busy = True  # until the server says it is idle again
                elif side == "B" and kind == "ReadyForQuery":
                    busy = rest[0].strip() != "I"
            _count(trips, pairs)


def _pg_sql(kind: str, traced: str) -> str:
    """The statement of a traced ``Query`` (``"BEGIN"``) or ``Parse`` (``"" "SELECT ..." 1 NNNN``) message."""
    text = traced.strip()
    if kind == "Parse":
        text = text.split('"', 2)[2].strip()  # past the statement's name (""), to its quoted text
    return text[1:text.rindex('"')] if text.startswith('"') else text
