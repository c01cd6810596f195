"""Issue 16, "the small core is true": what ``import evidence_lib`` loads, who imports whose private names, and
whether the "taught in notebook NN" pointers in docstrings name a notebook that really uses the name."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import evidence_lib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "evidence_lib"
HEAVY = ("disclosure", "retrieval", "eval", "store", "integrations", "audit", "course")


def loaded_after(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys, json\n"
                          "print(json.dumps(sorted(m for m in sys.modules if m.startswith('evidence_lib'))))"],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout)


def test_import_evidence_lib_loads_the_protocol_core_only():
    mods = loaded_after("import evidence_lib")
    assert not [m for m in mods if m.split(".")[1:2] and m.split(".")[1] in HEAVY], mods
    assert set(mods) == {"evidence_lib", *(f"evidence_lib.{m}" for m in (
        "_access", "_answers", "_calls", "_citations", "_clock", "_documents", "_errors", "_handles", "_ids", "_index",
        "_ledger", "_lines", "_locate", "_measure", "_paging", "_spans", "_text", "_toolkit", "_tools", "profiles",
        "profiles._article", "profiles._base", "profiles._compact", "profiles._offloaded", "profiles._registry"))}


def test_the_course_loads_only_when_it_is_imported():
    mods = loaded_after("import evidence_lib\nfrom evidence_lib.course.article import ANSWER")
    assert [m for m in mods if m.startswith("evidence_lib.course")] == ["evidence_lib.course",
                                                                       "evidence_lib.course.article"]


def test_the_evidence_tools_load_no_retriever_until_one_is_used():
    mods = loaded_after("from evidence_lib import EvidenceIndex, evidence_tools\n"
                        "from evidence_lib.course.article import article_corpus\n"
                        "evidence_tools(EvidenceIndex.in_memory(article_corpus()))")
    assert "evidence_lib.retrieval" not in mods


def test_every_top_level_name_resolves_and_unknown_names_raise():
    for name in evidence_lib.__all__:
        assert getattr(evidence_lib, name) is not None, name
    with pytest.raises(AttributeError):
        evidence_lib.no_such_name  # noqa: B018


def test_retrieval_does_not_import_eval():
    mods = loaded_after("import evidence_lib.retrieval")
    assert not [m for m in mods if m.startswith("evidence_lib.eval")], mods


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out.append((".".join(parts), path))
    return out


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_module(name: str) -> bool:
    parts = name.split(".")
    return ROOT.joinpath(*parts).with_suffix(".py").is_file() or ROOT.joinpath(*parts, "__init__.py").is_file()


def test_no_module_imports_another_modules_private_names():
    found = []
    for module, path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = _resolve(module, node, path.name == "__init__.py")
                if not source.startswith("evidence_lib") or source == module:
                    continue
                # a package's own __init__ may gather its modules' names; private names never cross modules
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")
                           and not _is_module(f"{source}.{a.name}")]  # a private module is how a layer is built
                if private:
                    found.append(f"{module} imports {private} from {source}")
    assert not found, "\n".join(found)


NOTEBOOKS = {p.name.split("_")[0]: p for p in (ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb")}  # "08", "08x"
#: "Taught in notebook 06", "Introduced in notebook 02", "(notebook 11)", "... Notebook 08." in a first paragraph
POINTER = re.compile(r"(?:[Tt]aught in|[Ii]ntroduced in|\(|\. |^)[Nn]otebooks? (\d{2}x?)\b")


def _code(nb: Path) -> str:
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def test_every_taught_in_notebook_pointer_names_a_notebook_that_uses_the_name():
    code = {k: _code(v) for k, v in NOTEBOOKS.items()}
    wrong = []
    for info in pkgutil.walk_packages(evidence_lib.__path__, "evidence_lib."):
        if info.name.startswith("evidence_lib.course.exercises"):
            continue  # the workshop's checkers point at the workshop parts, not at notebooks
        mod = importlib.import_module(info.name)
        for name, obj in vars(mod).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != info.name:
                continue
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            first = (inspect.getdoc(obj) or "").split("\n\n")[0]
            names = [name, *re.findall(r"``([A-Za-z_][A-Za-z0-9_]*)(?:\(\))?", first)]
            for m in POINTER.finditer(first):
                nb = m[1]
                if nb in code and not any(re.search(rf"\b{re.escape(n)}\b", code[nb]) for n in names):
                    wrong.append(f"{info.name}.{name} points at notebook {nb}, which does not use it")
    assert not wrong, "\n".join(wrong)
