"""The article figures: byte-identical on every run, both languages, no missing glyphs."""

import os
import warnings

import matplotlib.pyplot as plt
import pytest

from evidence_lib.experiment import run_article
from evidence_lib.figures import FIGURES, MissingFontError, cjk_family, figure3, write_figures


@pytest.fixture(scope="module")
def result():
    return run_article()


def _langs():
    try:
        cjk_family()
    except MissingFontError as e:
        if os.environ.get("CI"):
            raise  # CI installs the font (make fonts); a missing font there is a real failure
        pytest.skip(str(e))
    return ("en", "zh")


def test_write_figures_twice_gives_identical_bytes(tmp_path, result):
    langs = _langs()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Glyph ... missing from font" is a UserWarning
        first = write_figures(tmp_path / "a", langs=langs, result=result)
        second = write_figures(tmp_path / "b", langs=langs, result=result)
    assert len(first) == len(FIGURES) * len(langs) * 2
    assert [p.name for p in first] == [p.name for p in second]
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_svg_output_has_no_date_or_tool_version(tmp_path, result):
    svg = next(p for p in write_figures(tmp_path, langs=("en",), result=result) if p.suffix == ".svg")
    text = svg.read_text(encoding="utf-8")
    assert "<dc:date>" not in text and "Matplotlib v" not in text


def test_figure3_shows_the_measured_byte_counts(result):
    fig = figure3(result)
    texts = {t.get_text() for t in fig.axes[0].texts}
    plt.close(fig)
    assert {"156,982", "3,920", "97.5% fewer bytes"} <= texts
    assert fig.axes[0].get_yscale() == "log"


def test_missing_cjk_font_error_names_the_fix(monkeypatch):
    import evidence_lib.figures as figures

    monkeypatch.setattr(figures, "CJK_FAMILIES", ("No Such CJK Font",))
    monkeypatch.setattr(figures.font_manager, "findSystemFonts", lambda: [])
    with pytest.raises(MissingFontError, match="fonts-noto-cjk"):
        figures.cjk_family()
