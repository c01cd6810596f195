"""Static hygiene of the committed notebooks (nbval checks their outputs; this checks the rest).

These check how the repository's notebooks are *committed*, so they read each notebook as ``HEAD`` has it (``git
show HEAD:path``), never the file a learner just ran: running cell 1, then cell 2 twice and letting JupyterLab
autosave made ``make test`` fail here after minutes (``[1, 3, 3, 4, ...] == [1, 2, 3, ...]``) and named no fix
(issue 34 item 7). Where commits are checked, ``make check-notebooks`` (run by ``.ci/run``, and worth running
before a commit) checks the working files instead (``EVIDENCE_NOTEBOOK_CHECKS=worktree``); each failure names its
fix: ``make execute NB=...`` re-executes the notebook in a fresh kernel, ``git checkout -- ...`` restores the
committed copy. Outside a git checkout the committed version cannot be read: the per-notebook checks skip.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
#: "worktree": check the files on disk (make check-notebooks, CI); anything else: the committed versions.
MODE_ENV = "EVIDENCE_NOTEBOOK_CHECKS"
WORKTREE = os.environ.get(MODE_ENV) == "worktree"


def _on_disk() -> list[Path]:
    return sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts and "workspace" not in p.parts)


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, timeout=120)


@functools.cache
def committed() -> dict[Path, str] | None:
    """Every notebook under notebooks/ as HEAD has it (path -> JSON text), or None outside a git checkout."""
    try:
        listed = _git("ls-tree", "-r", "-z", "--name-only", "HEAD", "--", "notebooks")
    except (OSError, subprocess.TimeoutExpired):
        return None
    if listed.returncode != 0:
        return None
    names = [n for n in listed.stdout.decode().split("\0") if n.endswith(".ipynb") and "/workspace/" not in n
             and ".ipynb_checkpoints" not in n]
    batch = subprocess.run(["git", "-C", str(ROOT), "cat-file", "--batch"], capture_output=True, timeout=120,
                           input="".join(f"HEAD:{n}\n" for n in names).encode())
    texts, data = {}, batch.stdout
    for name in names:  # each: "<sha> blob <size>\n<content>\n"
        header, _, data = data.partition(b"\n")
        size = int(header.split()[2])
        texts[ROOT / name] = data[:size].decode("utf-8")
        data = data[size + 1:]
    return texts


def _checked() -> list[Path]:
    """The notebooks these checks read: the committed ones, or the files on disk in worktree mode."""
    if WORKTREE:
        return _on_disk()
    return sorted(committed() or {})


ALL = _checked()
#: The series and its optional deep dives (NNx_*.ipynb), as scripts/nbnav.py lists them.
SERIES = [p for p in ALL if p.parent == ROOT / "notebooks" and re.match(r"\d\d[a-z]?_", p.name)
          and not p.name.startswith("00_")]
EXERCISES = ROOT / "notebooks" / "exercises"
WORKSHOP = [p for p in ALL if p.name.startswith("workshop_part") and p.parent in (EXERCISES, EXERCISES / "solutions")]
MACHINE_PATH = re.compile(r"(/tmp/|/root/|/home/\w+|/private/var/|/var/folders/|C:\\\\Users|/work/)")
NOT_A_CHECKOUT = ("not a git checkout: these check how the notebooks are committed (git show HEAD:path); "
                  "`make check-notebooks` checks the files on disk")


def _nb(path: Path) -> dict:
    """The notebook as checked: its committed JSON (default) or the file on disk (worktree mode)."""
    return json.loads(path.read_text(encoding="utf-8") if WORKTREE else committed()[path])


def _ids(paths):
    return [p.relative_to(ROOT / "notebooks").as_posix() for p in paths]


def fix(path: Path) -> str:
    """How to fix a notebook that fails a check, in the words of the mode that found it."""
    rel = path.relative_to(ROOT).as_posix()
    if WORKTREE:
        return (f"Fix: `make execute NB={rel}` re-executes it in a fresh kernel (then commit it), or "
                f"`git checkout -- {rel}` restores the committed copy (your runs in the lab are dropped)")
    return f"Fix: the committed {rel} is wrong: `make execute NB={rel}` re-executes it in a fresh kernel; commit it"


def test_the_checks_read_every_committed_notebook():
    """The committed notebooks are read (and in worktree mode, every notebook on disk), or the reason is said."""
    if committed() is None:
        pytest.skip(NOT_A_CHECKOUT)
    assert len(ALL) >= 20 and SERIES and WORKSHOP
    assert {p for p in ALL if not WORKTREE} <= set(_on_disk()), "a committed notebook is missing on disk"


def execution_counts(nb: dict) -> list:
    return [c["execution_count"] for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]


@pytest.mark.parametrize("path", ALL, ids=_ids(ALL))
def test_notebook_is_committed_executed_in_order_without_clock_times(path):
    nb = _nb(path)
    assert nb["metadata"]["kernelspec"]["name"] == "python3", fix(path)
    assert "widgets" not in nb["metadata"], f"saved widget state carries random model ids. {fix(path)}"
    counts = execution_counts(nb)
    assert counts == list(range(1, len(counts) + 1)), f"execution counts {counts} are not 1 to {len(counts)}. {fix(path)}"
    for c in nb["cells"]:
        assert "execution" not in c.get("metadata", {}), f"per-cell timing metadata is a clock time. {fix(path)}"


@pytest.fixture(scope="module")
def installed_kernelspec() -> dict:
    """What the environment's python3 kernel reports (``jupyter kernelspec list --json``), as notebook metadata."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    return {"display_name": spec.display_name, "language": spec.language, "name": "python3"}


@pytest.mark.parametrize("path", ALL, ids=_ids(ALL))
def test_notebook_kernelspec_is_the_installed_python3_kernels(path, installed_kernelspec):
    # JupyterLab writes the running kernel's spec back on save: any other value changes the file on opening.
    assert _nb(path)["metadata"]["kernelspec"] == installed_kernelspec, fix(path)


@pytest.mark.parametrize("path", ALL, ids=_ids(ALL))
def test_notebook_language_info_is_what_the_python3_kernel_reports(path):
    # JupyterLab also writes the kernel's language_info back on opening; only its Python version may differ here.
    from ipykernel.ipkernel import IPythonKernel

    info = dict(_nb(path)["metadata"]["language_info"])
    expected = dict(IPythonKernel.language_info)
    assert re.fullmatch(r"3\.\d+\.\d+", info.pop("version")) and expected.pop("version")
    assert info == expected, fix(path)


def test_execute_notebooks_tidy_pins_the_installed_kernelspec(installed_kernelspec):
    spec = importlib.util.spec_from_file_location("execute_notebooks", ROOT / "scripts" / "execute_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"display_name": "Python 3", "language": "python",
                                                           "name": "python3"}})
    module.tidy(nb)
    assert nb.metadata["kernelspec"] == installed_kernelspec
    assert nb.metadata["language_info"]["version"] == sys.version.split()[0]


@pytest.mark.parametrize("path", ALL, ids=_ids(ALL))
def test_notebook_outputs_show_no_errors_paths_or_addresses(path):
    for c in _nb(path)["cells"]:
        tags = c.get("metadata", {}).get("tags", [])
        for out in c.get("outputs", []):
            if out["output_type"] == "error":
                assert "raises-exception" in tags, f"an error output in an untagged cell. {fix(path)}"
            text = json.dumps(out, ensure_ascii=False)
            assert not MACHINE_PATH.search(text), f"{MACHINE_PATH.search(text).group(0)} in an output. {fix(path)}"
            assert not re.search(r" at 0x[0-9a-f]{6,}", text), f"a memory address in an output. {fix(path)}"


@pytest.mark.parametrize("path", SERIES, ids=_ids(SERIES))
def test_series_notebook_opens_with_goals_and_closes_with_what_we_saw(path):
    cells = [c for c in _nb(path)["cells"] if c.get("id") != "nav"]
    first, last = "".join(cells[0]["source"]), "".join(cells[-1]["source"])
    assert first.startswith(f"# {path.name.split('_')[0]} · ") and "What you will learn" in first
    assert "## What we saw" in last


def _without_language_info(path: Path, text: str) -> dict | str:
    """A notebook's JSON without ``metadata.language_info``; any other file's text as is (the facilitator guide)."""
    if path.suffix != ".ipynb":
        return text
    nb = json.loads(text)
    nb["metadata"].pop("language_info", None)
    return nb


def stale_navigation(nbnav) -> list[Path]:
    """The files ``nbnav`` (scripts/nbnav.py, loaded as a module) would rewrite, leaving out those where only
    ``metadata.language_info`` differs: JupyterLab writes the running kernel's on autosave (another Python's patch
    version), and 00_index copies notebook 01's; it is not navigation (issue 26 item 8)."""
    changed = nbnav.apply(nbnav.series(), *nbnav.settings())
    return [path for path, text in changed.items()
            if not path.exists()
            or _without_language_info(path, text) != _without_language_info(path, path.read_text("utf-8"))]


def test_navigation_and_index_are_generated_and_up_to_date():
    spec = importlib.util.spec_from_file_location("nbnav", ROOT / "scripts" / "nbnav.py")
    nbnav = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nbnav)
    stale = [str(path.relative_to(ROOT)) for path in stale_navigation(nbnav)]
    assert not stale, (f"stale navigation: {', '.join(stale)}. Fix: `.venv/bin/python scripts/nbnav.py` rewrites the "
                       "navigation lines, badges and 00_index from notebooks/course.toml; then run `make test` again")
    for path in SERIES:
        nav = _nb(path)["cells"][0]
        assert nav["id"] == "nav" and "[index](00_index.ipynb)" in "".join(nav["source"])


#: pyproject.toml's repository for the launch badges ("" while none is configured: no badges).
REPOSITORY = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["evidence-series"]["repository"]


@pytest.mark.parametrize("path", WORKSHOP, ids=_ids(WORKSHOP))
def test_workshop_notebook_opens_with_generated_navigation(path):
    nav = _nb(path)["cells"][0]
    source = "".join(nav["source"])
    group = sorted(path.parent.glob("workshop_part*.ipynb"))
    i = group.index(path)
    index = "../00_index.ipynb" if path.parent == EXERCISES else "../../00_index.ipynb"
    assert nav["id"] == "nav" and f"[index]({index})" in source
    assert (i == 0) == (not source.startswith("[←")) and (i == len(group) - 1) == (" →](" not in source)
    assert "(start)" not in source and "(end)" not in source  # no stand-in for a missing neighbour
    for j in (i - 1, i + 1):
        if 0 <= j < len(group):
            assert f"({group[j].name})" in source
    rel = path.relative_to(ROOT).as_posix()
    if REPOSITORY:  # Binder and Colab badges, only for a configured repository
        assert f"?labpath={rel})" in source and source.count(f"{rel})") == 2
    else:
        assert "mybinder.org" not in source and "colab.research.google.com" not in source


def test_index_lists_the_series_and_the_workshop():
    if not WORKTREE and committed() is None:
        pytest.skip(NOT_A_CHECKOUT)
    index = "".join(_nb(ROOT / "notebooks" / "00_index.ipynb")["cells"][0]["source"])
    for path in SERIES + WORKSHOP:
        assert f"({path.relative_to(ROOT / 'notebooks').as_posix()})" in index, path.name
