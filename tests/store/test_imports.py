"""The core never loads the store, and the store loads psycopg only for the PostgreSQL backend."""

from __future__ import annotations

import subprocess
import sys


def loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    return set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())


def test_the_core_never_imports_the_store_or_psycopg():
    mods = loaded_after("import evidence_lib; from evidence_lib import evidence_tools, EvidenceIndex, Ledger")
    assert not {m for m in mods if m.startswith(("evidence_lib.store", "psycopg"))}


def test_the_store_imports_psycopg_only_with_the_postgres_backend():
    mods = loaded_after("from evidence_lib.store import MemoryStore, SQLiteStore, open_store")
    assert "evidence_lib.store.sqlite" in mods and not {m for m in mods if m.startswith("psycopg")}
    assert "evidence_lib.store.postgres" not in mods
