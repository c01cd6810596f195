"""Issue 34 item 2: every prediction's answer stays hidden until the learner runs or opens it.

A prediction is found by scripts/predictions.py's rule (a markdown cell asking **Predict** outside a try-it; its
answer is the next code cell's output). In every committed notebook each answer cell carries what JupyterLab folds on
opening (``collapsed`` and ``jupyter.outputs_hidden``, which JupyterLab keeps in step) and what the site folds
(MyST-NB's ``hide-output`` tag, under a "Show the answer" toggle). tests/browser/test_site.py checks a built page
in Chromium: the answer is not visible until its toggle is clicked.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted([*(ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"),
                    *(ROOT / "notebooks" / "exercises").rglob("workshop_part*.ipynb")])


def _script(name: str):
    if name in sys.modules:
        return sys.modules[name]
    sys.path.insert(0, str(ROOT / "scripts"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


predictions = _script("predictions")


def _predictions(path: Path) -> list[tuple[str, str]]:
    nb = nbformat.read(path, as_version=4)
    return [(nb.cells[p].id, nb.cells[a].id) for p, a in predictions.predictions(nb)]


def test_the_rule_finds_every_prediction_the_learner_named():
    """06 [28] and [46], 08x [5], 09x [14], 12 [8], 13 [18] and [27] as the review counted them, named here by the
    cell id of each answer (indices move when cells are added)."""
    found = {path.name.split("_")[0]: {answer for _, answer in _predictions(path)}
             for path in NOTEBOOKS if path.parent.name == "notebooks"}
    named = {"06": {"c26", "c37"}, "08x": {"bytes-by-tool"}, "09x": {"3b392d65"}, "12": {"c08"}, "13": {"c18", "c26"}}
    for key, answers in named.items():
        assert answers <= found.get(key, set()), (key, found.get(key))


def test_a_try_it_that_asks_for_a_prediction_is_not_a_stored_answer():
    """A try-it's answer is never stored (the learner edits a cell first): its next code cell is not folded."""
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("**Try it yourself.** Change 3 to 4. **Predict**: what prints?"),
        nbformat.v4.new_code_cell("print(3)"),
        nbformat.v4.new_markdown_cell("**Predict.** What prints?"),
        nbformat.v4.new_markdown_cell("Think first."),
        nbformat.v4.new_code_cell("print(4)"),
    ])
    assert predictions.predictions(nb) == [(2, 4)]
    assert predictions.apply(nb) and not predictions.apply(nb)  # idempotent
    assert predictions.is_hidden(nb.cells[4]) and nb.cells[1].metadata == {}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix())
def test_every_prediction_answer_is_folded_in_the_lab_and_on_the_site(path: Path):
    nb = nbformat.read(path, as_version=4)
    shown = [nb.cells[a].id for _, a in predictions.predictions(nb) if not predictions.is_hidden(nb.cells[a])]
    assert not shown, (f"{path.name}: the answers of cells {shown} show under their prediction; fix: python "
                       f"scripts/predictions.py notebooks/{path.relative_to(ROOT / 'notebooks').as_posix()}")


def test_the_notebook_executor_folds_the_answers_it_stores():
    """scripts/execute_notebooks.py's tidy (run after every execution) applies the rule: a re-run keeps it."""
    execute = _script("execute_notebooks")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("**Predict** the sum."),
                                         nbformat.v4.new_code_cell("1 + 1")])
    execute.tidy(nb)
    assert predictions.is_hidden(nb.cells[1])


def test_the_site_draws_the_hide_output_tag_as_a_closed_toggle():
    """The site's renderer honours the tag (MyST-NB's hide-output: a closed <details>) and our toggle's words."""
    render = pytest.importorskip("myst_nb.core.render", reason="the site's tools: make site installs them")
    source = Path(render.__file__).read_text(encoding="utf-8")
    assert re.search(r'hide_output = "hide-output" in tags', source)
    config = pytest.importorskip("myst_nb.core.config")
    fields = {f.name for f in config.NbParserConfig.__dataclass_fields__.values()}
    assert set(predictions.SITE_PROMPTS) <= fields
