"""The article figures: byte-identical on every run, both languages, no missing glyphs, no system fonts."""

import fnmatch
import importlib.util
import json
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from matplotlib import cbook, font_manager
from matplotlib.ft2font import FT2Font
from matplotlib.text import Text

import evidence_lib.course.figures as figures
from evidence_lib.course.experiment import run_article
from evidence_lib.course.figures import (
    FIGURES,
    MissingFontError,
    cjk_family,
    cjk_font_path,
    drawn_characters,
    figure3,
    save_stable,
    write_figures,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def result():
    return run_article()


def _drawn_texts(fig) -> list[str]:
    """Every string the figure shows, tick labels included, after a draw; mathtext is drawn by DejaVu."""
    fig.canvas.draw()
    texts = [t.get_text() for t in fig.findobj(Text) if t.get_visible()]
    return [s for s in texts if s and not cbook.is_math_text(s)]


def test_write_figures_twice_gives_identical_bytes(tmp_path, result):
    langs = ("en", "zh")
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


def test_english_figures_never_touch_the_cjk_font(tmp_path, result, monkeypatch):
    def no_cjk():
        raise MissingFontError("the English figures must not ask for a CJK font")

    monkeypatch.setattr(figures, "cjk_family", no_cjk)
    written = write_figures(tmp_path, langs=("en",), result=result)
    assert len(written) == len(FIGURES) * 2 and all(p.stat().st_size > 0 for p in written)


def test_shipped_cjk_font_covers_every_character_the_zh_figures_draw(result):
    charmap = FT2Font(str(cjk_font_path())).get_charmap()
    drawn = set()
    for draw in FIGURES.values():
        fig = draw(result, "zh")
        drawn |= set("".join(_drawn_texts(fig)))
        plt.close(fig)
    drawn -= {"\n"}
    assert any("\u4e00" <= c <= "\u9fff" for c in drawn)  # the Chinese labels really are drawn
    assert drawn <= set(drawn_characters("zh"))  # what the subset script keeps covers what is drawn
    missing = sorted(c for c in set(drawn_characters("zh")) if ord(c) not in charmap)
    assert not missing, f"regenerate the subset with scripts/subset_cjk_font.py: missing {''.join(missing)!r}"


def test_zh_figures_draw_and_save_with_no_missing_glyph_warning(tmp_path, result):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for stem, draw in FIGURES.items():
            fig = draw(result, "zh")
            save_stable(fig, tmp_path / f"{stem}.zh", "zh")
            plt.close(fig)
    glyph_warnings = [str(w.message) for w in caught if "missing from" in str(w.message)
                      or "Glyph" in str(w.message)]
    assert not glyph_warnings


def test_drawing_the_zh_figures_in_a_fresh_interpreter_prints_nothing_to_stderr(result, tmp_path):
    """What notebook 02 sees: no findfont warning (e.g. for bold labels), no missing-glyph warning."""
    code = ("import json, sys, matplotlib; matplotlib.use('agg')\n"
            "import matplotlib.pyplot as plt\n"
            "from evidence_lib.course.figures import FIGURES\n"
            "result = json.loads(sys.stdin.read())\n"
            "for draw in FIGURES.values():\n"
            "    fig = draw(result, 'zh'); fig.canvas.draw(); plt.close(fig)\n")
    run = subprocess.run([sys.executable, "-c", code], input=json.dumps(result), capture_output=True,
                         text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""


def test_zh_style_uses_the_packaged_font_and_never_a_system_one():
    family = cjk_family()
    assert family == "Evidence CJK Sans SC"
    assert cjk_family() == family  # registering twice adds no second entry
    entries = [f for f in font_manager.fontManager.ttflist if Path(f.fname) == cjk_font_path()]
    assert sorted(f.weight for f in entries) == [400, 700]  # the one file, registered for bold labels too
    assert {f.name for f in entries} == {family}
    found = font_manager.findfont(font_manager.FontProperties(family=family), fallback_to_default=False)
    assert Path(found) == cjk_font_path()
    assert Path(figures.__file__).parent / "fonts" in cjk_font_path().parents  # evidence_lib/course/fonts/
    assert figures.style("zh")["font.family"] == ["DejaVu Sans", family]


def test_missing_packaged_font_raises_missing_font_error_naming_the_fix(monkeypatch):
    monkeypatch.setattr(figures, "CJK_FONT_FILE", "NoSuchFont-Regular.otf")
    with pytest.raises(MissingFontError, match="subset_cjk_font.py"):
        figures.cjk_family()


def test_font_licence_ships_next_to_the_font_and_the_package_data_includes_both():
    fonts = cjk_font_path().parent
    assert "SIL OPEN FONT LICENSE Version 1.1" in (fonts / "OFL.txt").read_text(encoding="utf-8")
    assert cjk_font_path().stat().st_size < 100_000  # a subset, not the 16 MB font
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "tool"]["setuptools"]["package-data"]["evidence_lib"]
    for name in (f"course/fonts/{figures.CJK_FONT_FILE}", "course/fonts/OFL.txt"):
        assert any(fnmatch.fnmatch(name, p) for p in patterns), name


def _subset_script():
    spec = importlib.util.spec_from_file_location("subset_cjk_font", ROOT / "scripts" / "subset_cjk_font.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_subset_script_check_passes_for_the_shipped_font_and_fails_for_one_without_chinese(capsys):
    script = _subset_script()
    assert script.main(["--check"]) == 0
    dejavu = font_manager.findfont("DejaVu Sans")  # covers ASCII, not one Chinese character
    assert script.main(["--check", "--out", dejavu]) == 1
    assert "missing" in capsys.readouterr().err
