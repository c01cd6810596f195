"""Static hygiene of the committed notebooks (nbval checks their outputs; this checks the rest)."""

from __future__ import annotations

import importlib.util
import json
import tomllib
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
ALL = sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb")
             if ".ipynb_checkpoints" not in p.parts and "workspace" not in p.parts)
#: The series and its optional deep dives (NNx_*.ipynb), as scripts/nbnav.py lists them.
SERIES = sorted(p for p in (ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb") if re.match(r"\d\d[a-z]?_", p.name))
SERIES = [p for p in SERIES if not p.name.startswith("00_")]
EXERCISES = ROOT / "notebooks" / "exercises"
WORKSHOP = (sorted(EXERCISES.glob("workshop_part*.ipynb"))
            + sorted((EXERCISES / "solutions").glob("workshop_part*.ipynb")))
MACHINE_PATH = re.compile(r"(/tmp/|/root/|/home/\w+|/private/var/|/var/folders/|C:\\\\Users|/work/)")


def _nb(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _ids(paths):
    return [p.relative_to(ROOT / "notebooks").as_posix() for p in paths]


@pytest.mark.parametrize("path", ALL, ids=_ids(ALL))
def test_notebook_is_committed_executed_in_order_without_clock_times(path):
    nb = _nb(path)
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert "widgets" not in nb["metadata"], "saved widget state carries random model ids"
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1))
    for c in nb["cells"]:
        assert "execution" not in c.get("metadata", {}), "per-cell timing metadata is a clock time"


@pytest.fixture(scope="module")
def installed_kernelspec() -> dict:
    """What the environment's python3 kernel reports (``jupyter kernelspec list --json``), as notebook metadata."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    return {"display_name": spec.display_name, "language": spec.language, "name": "python3"}


@pytest.mark.parametrize("path", ALL, ids=_ids(ALL))
def test_notebook_kernelspec_is_the_installed_python3_kernels(path, installed_kernelspec):
    # JupyterLab writes the running kernel's spec back on save: any other value changes the file on opening.
    assert _nb(path)["metadata"]["kernelspec"] == installed_kernelspec


@pytest.mark.parametrize("path", ALL, ids=_ids(ALL))
def test_notebook_language_info_is_what_the_python3_kernel_reports(path):
    # JupyterLab also writes the kernel's language_info back on opening; only its Python version may differ here.
    from ipykernel.ipkernel import IPythonKernel

    info = dict(_nb(path)["metadata"]["language_info"])
    expected = dict(IPythonKernel.language_info)
    assert re.fullmatch(r"3\.\d+\.\d+", info.pop("version")) and expected.pop("version")
    assert info == expected


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
                assert "raises-exception" in tags
            text = json.dumps(out, ensure_ascii=False)
            assert not MACHINE_PATH.search(text), MACHINE_PATH.search(text).group(0)
            assert not re.search(r" at 0x[0-9a-f]{6,}", text)


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
    assert (i == 0) == ("← (start)" in source) and (i == len(group) - 1) == ("(end) →" in source)
    for j in (i - 1, i + 1):
        if 0 <= j < len(group):
            assert f"({group[j].name})" in source
    rel = path.relative_to(ROOT).as_posix()
    if REPOSITORY:  # Binder and Colab badges, only for a configured repository
        assert f"?labpath={rel})" in source and source.count(f"{rel})") == 2
    else:
        assert "mybinder.org" not in source and "colab.research.google.com" not in source


def test_index_lists_the_series_and_the_workshop():
    index = "".join(_nb(ROOT / "notebooks" / "00_index.ipynb")["cells"][0]["source"])
    for path in SERIES + WORKSHOP:
        assert f"({path.relative_to(ROOT / 'notebooks').as_posix()})" in index, path.name
