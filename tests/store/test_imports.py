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
    assert "evidence_lib.store._sqlite" in mods and not {m for m in mods if m.startswith("psycopg")}
    assert "evidence_lib.store._postgres" not in mods


#: Imports still allowed to close a circle, each with what removes it (none left).
PENDING: set[tuple[str, str]] = set()


def store_imports() -> dict[str, set[str]]:
    """Which of the store's modules each one imports: every import statement, in functions and under
    TYPE_CHECKING too (an import inside a function is still an edge; it only hides the circle until run time)."""
    import ast
    from pathlib import Path

    import evidence_lib.store

    folder = Path(evidence_lib.store.__file__).parent
    names = {p.stem for p in folder.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                edges.update([node.module.split(".")[0]] if node.module else [a.name for a in node.names])
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(
                    "evidence_lib.store."):
                edges.add(node.module.split(".")[2])
            elif isinstance(node, ast.Import):
                edges.update(a.name.split(".")[2] for a in node.names if a.name.startswith("evidence_lib.store."))
        graph[path.stem] = (edges & names) - {path.stem}
    return graph


def test_the_stores_modules_never_import_each_other_in_a_circle():
    graph = store_imports()
    for a, b in PENDING:
        assert b in graph[a], f"{a} no longer imports {b}: remove ({a!r}, {b!r}) from PENDING"
        graph[a].discard(b)
    done: set[str] = set()

    def visit(path: list[str]) -> None:  # depth first; path is the chain of imports that led here
        for n in sorted(graph[path[-1]]):
            assert n not in path, "import circle: " + " -> ".join(path[path.index(n):] + [n])
            if n not in done:
                visit(path + [n])
        done.add(path[-1])

    for m in sorted(graph):
        if m not in done:
            visit([m])
