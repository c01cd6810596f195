"""00_index is a learner's first page (issue 34 review: it opened with maintainer material, showed the tracks as long
paragraphs and its glossary lacked terms the notebooks use unexplained).

The first cell starts with what the series teaches, what you need and how to start, then the path; the source
articles and how the notebooks are checked come after the path, the workshop and the tracks. Each track is a table.
The glossary defines the terms the review found unexplained, and says where a term is met before it is taught.

A later review (A-): the 90-minute track was a one-column table, the one-day track's title said 17:00 where it ended
at 16:50 and promised the teams' own documents with no slot for them, the three-day text put real documents on day 3
where its table has 08 on day 2, and the glossary's headings were anchor slugs (``begin-immediate``).
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


def test_every_track_is_a_table_or_for_one_untimed_day_a_list():
    text = _cells()[0].source
    for track in COURSE["tracks"].values():
        listed = len(track["days"]) == 1 and "starts" not in track
        m = re.search(rf"^\*\*{re.escape(track['title'])}\*\*[^\n]*\n\n{re.escape('* [') if listed else '[|] '}", text,
                      flags=re.MULTILINE)
        assert m, f"the track {track['title']!r} is not followed by its {'list' if listed else 'table'}"
    assert "| step |\n|---|\n| [part 2]" not in text, "the 90-minute track is a one-column table again"


def test_a_timed_tracks_title_states_when_its_days_end():
    """"(9:00-17:00)" over a day whose table ends at 16:50: the stated end is the latest day's end."""
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    import nbnav

    plan = nbnav.course()
    for track in COURSE["tracks"].values():
        if "starts" not in track:
            continue
        h, m = map(int, track["starts"].split(":"))
        last = max(h * 60 + m + sum(nbnav.step_minutes(s, plan) for s in day) for day in track["days"])
        assert track["ends"] == f"{last // 60}:{last % 60:02d}", (track["title"], track["ends"])


def test_track_texts_promise_only_what_their_days_hold():
    one, three = COURSE["tracks"]["one-day"], COURSE["tracks"]["three-days"]
    text = " ".join(one["text"].split())
    assert "End with the teams' own documents" not in text and "Afterwards" in text
    days = [set(day) for day in three["days"]]
    assert "08" in days[1]
    text = " ".join(three["text"].split())
    assert "real documents on day 2" in text and "every core notebook" in text.lower()
    assert all(d in text for d in ("08x", "09x", "11x")), "say which notebooks the full course leaves out"


def _glossary_entry(term: str) -> str:
    """A glossary entry by its anchor: ``### <term>`` or an explicit ``<a id="<term>">`` before a readable heading."""
    glossary = _cells()[1].source
    m = re.search(rf'(?:^<a id="{re.escape(term)}"></a>\n\n### [^\n]+|^### {re.escape(term)})\n(.*?)(?=^<a id=|^### |\Z)',
                  glossary, flags=re.MULTILINE | re.DOTALL)
    assert m, f"no glossary entry with the anchor {term!r}"
    return m.group(0)


@pytest.mark.parametrize("term, heading", [("begin-immediate", "BEGIN IMMEDIATE"), ("snap_id-shift", "snap_id shift"),
                                           ("p50-p90", "p50, p90"), ("recall-at-k", "recall at k"),
                                           ("half-open-range", "half-open range")])
def test_glossary_headings_read_as_words_and_keep_their_anchors(term, heading):
    assert _glossary_entry(term).split("\n\n", 2)[1] == f"### {heading}"


def test_every_glossary_headings_slug_is_its_anchor():
    """The website (MyST) resolves ``00_index.ipynb#<key>`` by heading slugs, not by raw <a id>: a heading whose slug
    is not its key broke `make site` (``local id not found in doc 'index': 'learntools-style'``)."""
    headings = re.findall(r"^### (.+)$", _cells()[1].source, flags=re.MULTILINE)
    slugs = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}
    assert slugs == set(COURSE["glossary"]), sorted(slugs ^ set(COURSE["glossary"]))


def test_every_glossary_link_from_a_notebook_has_its_anchor():
    """Notebooks link ``00_index.ipynb#<key>``: each key is an anchor of the index (a heading or an <a id>)."""
    linked = {m for p in NOTEBOOKS.rglob("*.ipynb")
              for m in re.findall(r"00_index\.ipynb#([\w-]+)", p.read_text(encoding="utf-8"))} - {"glossary"}
    assert linked
    for term in sorted(linked | set(COURSE["glossary"])):
        _glossary_entry(term)


@pytest.mark.parametrize("term, heading, words", [
    ("deep-agents", "Deep Agents", "LangChain's agent library"), ("ripgrep", "ripgrep", "grep"),
    ("da", "DA", "Deep Agents")])
def test_the_glossary_names_the_comparisons_tools(term, heading, words):
    entry = _glossary_entry(term)
    assert f"### {heading}\n" in entry and words in entry, entry


@pytest.mark.parametrize("term", ["stdio", "bearer-token", "oauth-resource-server", "cjk", "gram-postings",
                                  "answer-gate", "idle-round", "middleware", "mcp", "cl100k", "ttl", "task-handle"])
def test_the_glossary_defines_the_terms_learners_met_unexplained(term):
    _glossary_entry(term)


def test_a_term_used_before_the_notebook_that_teaches_it_says_where_it_is_met_first():
    """middleware is taught in 12, but 09 already draws "the middleware and ledger" in its loop picture."""
    definition, first, *met = COURSE["glossary"]["middleware"]
    assert (first, met) == ("12", ["09"])
    uses = sorted(p.name[:2] for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb") if p.name[:2] not in ("00",)
                  and "middleware" in "".join(c.source for c in nbformat.read(p, as_version=4).cells
                                              if c.cell_type == "markdown" and c.get("id") != "nav").lower())
    assert uses[0] == "09", uses
    entry = _glossary_entry("middleware")
    assert "Met first in [09](09_agent-loop.ipynb), taught in [12](12_offload-middleware.ipynb)." in entry
