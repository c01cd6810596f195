"""The website build's own rules (scripts/build_site.py), without Sphinx or a browser (tests/browser/test_site.py
checks the built pages)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_build_site():
    return load_script("build_site")


def test_home_note_says_where_the_sources_are_with_and_without_a_repository():
    """A build without EVIDENCE_SITE_REPOSITORY said "clone the repository" and named none: it now says to get
    the sources where the site came from (no made-up address); with one, it links it."""
    build = load_build_site()
    without = build.site_note(None)
    assert "the repository you received this site with" in without and "github.com" not in without
    with_repo = build.site_note("example-org/evidence-series", badges=True)
    assert "[the repository](https://github.com/example-org/evidence-series)" in with_repo
    assert "Binder" in with_repo


def test_home_note_promises_no_binder_badge_the_pages_do_not_have():
    """A published build (EVIDENCE_SITE_REPOSITORY set) while pyproject.toml names no repository: the notebooks carry
    no launch badges, and the note and widget hints said to use one anyway."""
    build = load_build_site()
    note = build.site_note("example-org/evidence-series", badges=False)
    assert "github.com/example-org/evidence-series" in note and "Binder" not in note
    assert ("Binder" in build.binder_hint("example-org/evidence-series")) == build.badges_written()


def test_build_warns_when_no_repository_is_configured(monkeypatch, capsys, tmp_path):
    """No repository address: the build says so on stderr before it stages anything."""
    build = load_build_site()
    monkeypatch.delenv(build.REPOSITORY_ENV, raising=False)

    def stop(*args, **kwargs):
        raise SystemExit(0)

    monkeypatch.setattr(build, "stage", stop)
    try:
        build.main(["--src", str(tmp_path / "src"), "--out", str(tmp_path / "out")])
    except SystemExit:
        pass
    assert f"warning: {build.REPOSITORY_ENV} is not set" in capsys.readouterr().err


def test_api_reference_reads_as_code_not_as_the_bug_tracker():
    """A fresh-eyes review of site/api.md: type hints were quoted strings (`tenant: 'str'`, 81 of them), a
    dataclass showed its generated signature as its description, docstrings cited issue numbers, and the
    Contents cut the long headings (`evidence_lib.Evidenc...`): short headings now, the full name under them."""
    page = load_script("api_reference").page()
    import re

    assert not re.findall(r"\w: '[\w\[\]., |]+'", page), "a type hint is shown as a quoted string"
    assert not re.findall(r"\(issue \d+", page), "a public docstring cites an issue number"
    assert "AnswerCheck(answer: Answer" not in page.split("```python\nAnswerCheck(")[1].split("```", 1)[1]
    assert not re.findall(r"^### `evidence_lib", page, flags=re.M), "headings are the short names"


def test_solution_note_comes_right_under_the_title():
    """A fresh-eyes review: the "Facilitator material" note came after the solution's whole first cell (its
    introduction); learners must meet it first, right under the title."""
    import nbformat

    build = load_build_site()
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Workshop part 1\n\nThe introduction, several lines long.\n\nMore."),
        nbformat.v4.new_code_cell("x = 1"),
    ])
    out, _ = build.transform(nb, "exercises/solutions/workshop_part1.ipynb", None)
    sources = [c.source for c in out.cells]
    assert sources[0] == "# Solutions · Workshop part 1"
    assert "Facilitator material" in sources[1]
    assert sources[2].startswith("The introduction") and sources[3] == "x = 1"


def test_figures_have_readable_titles_and_alt_text_not_file_names():
    """A fresh-eyes review: the Figures page's headings and alt texts were file names (figure1-experiment.en) and
    a notebook chart's alt text was its hash file name."""
    import nbformat

    build = load_build_site()
    heading, alt = build.figure_title(ROOT / "figures" / "figure2-flow.zh.png")
    assert heading == "Figure 2 · From manifest to position to text (Chinese)"
    assert alt.startswith("Figure 2 · From manifest to position to text, Chinese labels: ") and "figure2" not in alt
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# A notebook\n\n## Where the bytes go"),
        nbformat.v4.new_code_cell("plot()", outputs=[nbformat.v4.new_output(
            "display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})]),
    ])
    out, _ = build.transform(nb, "01_x.ipynb", None)
    assert out.cells[1].metadata["mystnb"]["image"]["alt"] == "Chart drawn by the code above, in “Where the bytes go”"
