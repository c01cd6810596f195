"""00_index is a learner's first page (issue 34 review: it opened with maintainer material, showed the tracks as long
paragraphs and its glossary lacked terms the notebooks use unexplained).

The first cell starts with what the series teaches, what you need and how to start, then the path; the source
articles and how the notebooks are checked come after the path, the workshop and the tracks. Each track is a table.
The glossary defines the terms the review found unexplained, and says where a term is met before it is taught.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
COURSE = tomllib.loads((NOTEBOOKS / "course.toml").read_text(encoding="utf-8"))


def _cells() -> list:
    return nbformat.read(NOTEBOOKS / "00_index.ipynb", as_version=4).cells


def test_a_learners_start_comes_before_the_path_and_the_maintainers_material_after_it():
    text = _cells()[0].source
    order = ["**What you will learn.**", "**What you need.**", "**How to start.**", "## The path", "## Workshop",
             "## Tracks", "## About the series"]
    places = [text.find(s) for s in order]
    assert -1 not in places and places == sorted(places), dict(zip(order, places))
    start = text[:text.index("## The path")]
    for later in ("nbval", "《", "course.toml", "scripts/nbnav.py"):
        assert later not in start, f"{later!r} is maintainer or background material: it belongs after the path"
    assert len(start.split()) < 350, f"the learner's start has {len(start.split())} words"


def test_every_track_is_a_table():
    text = _cells()[0].source
    for track in COURSE["tracks"].values():
        m = re.search(rf"^\*\*{re.escape(track['title'])}\*\*[^\n]*\n\n\| ", text, flags=re.MULTILINE)
        assert m, f"the track {track['title']!r} is not followed by its table"


@pytest.mark.parametrize("term", ["stdio", "bearer-token", "oauth-resource-server", "cjk", "gram-postings",
                                  "answer-gate", "idle-round", "middleware", "mcp", "cl100k", "ttl", "task-handle"])
def test_the_glossary_defines_the_terms_learners_met_unexplained(term):
    glossary = _cells()[1].source
    assert f"\n### {term}\n" in glossary, term


def test_a_term_used_before_the_notebook_that_teaches_it_says_where_it_is_met_first():
    """middleware is taught in 12, but 09 already draws "the middleware and ledger" in its loop picture."""
    definition, first, *met = COURSE["glossary"]["middleware"]
    assert (first, met) == ("12", ["09"])
    uses = sorted(p.name[:2] for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb") if p.name[:2] not in ("00",)
                  and "middleware" in "".join(c.source for c in nbformat.read(p, as_version=4).cells
                                              if c.cell_type == "markdown" and c.get("id") != "nav").lower())
    assert uses[0] == "09", uses
    entry = _cells()[1].source.split("\n### middleware\n", 1)[1].split("\n### ", 1)[0]
    assert "Met first in [09](09_agent-loop.ipynb), taught in [12](12_offload-middleware.ipynb)." in entry
