"""Fixtures for the store's contract tests: one ``estore`` per backend (memory, SQLite, PostgreSQL).

PostgreSQL is a real server: set ``EVIDENCE_PG_DSN`` (``make postgres-up`` prints it; ``.ci/run`` sets it).
Without it the PostgreSQL cases skip with a message naming that command. Every PostgreSQL test gets its own
schema, dropped afterwards, so tests and concurrent runs never see each other's rows.
"""

from __future__ import annotations

import pytest

from evidence_lib import ManualClock

from .storekit import BACKENDS, T0, open_spec, pg_dsn


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def spec(backend, tmp_path):
    """``(backend, where)`` for the backend this test runs on (a module may narrow ``backend``)."""
    if backend == "memory":
        yield ("memory", "")
    elif backend == "sqlite":
        yield ("sqlite", str(tmp_path / "store.db"))
    else:
        from evidence_lib.store._postgres import scratch_schema

        with scratch_schema(pg_dsn(), "t") as where:
            yield ("postgres", where)


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture
def estore(spec, clock):
    s = open_spec(spec, clock)
    yield s
    s.close()


