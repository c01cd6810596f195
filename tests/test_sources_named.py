"""The series names its two source articles (issue 18 item 1): the README and the index give both titles byte-exact,
an English rendering and what each covers, with the LangChain post article 1 cites, and no notebook, README or
guide says "the article", "article 2" or "the second source article" without saying which.

The titles are copied here as literals, byte for byte from the first line of each article; a test compares them
with ``tests/data/source_articles.json``, those first lines as committed test data (copied from the seeds, which live
outside the repository, and checked against them when committed: no test reads outside the repository).

How a mention is resolved: a text is read as a sequence of blocks (a notebook's cells, in order, sources only, not
outputs; a markdown file's sections, heading to heading). A block "names" an article when it holds the opening of
its title in Chinese quotation marks, e.g. ``《RAG 一次检索塞爆上下文？…》`` (the short form is fine once the README
and 00 give the full one). Then, walking the blocks in order:

* "article 1" / "the first article" needs article 1 named in this block or before it; "article 2" / "the other
  article" likewise article 2;
* "the second (source) article" is a description, not a name: it needs article 2's title in the same block;
* a bare "the article" (or "the source article") is only unambiguous when exactly one article has been named so
  far in this text; with both named it must say "article 1" or "article 2". "The article profile" is the name of
  a reply format (notebook 08), not a citation, and is not counted;
* "the (source) articles" needs both named.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
#: The articles' first lines (and which seed file each came from), committed: tests never read the seeds themselves.
SOURCE_ARTICLES = ROOT / "tests" / "data" / "source_articles.json"

#: The first line of each source article, byte-exact (the Chinese title as published).
ARTICLE_1 = "RAG 一次检索塞爆上下文？LangChain 按需读取实战：别把 top_k 全文直接喂给模型"
ARTICLE_2 = "需要时再加载：渐进式披露、工具发现与外部工作区"
SEED_FILES = {ARTICLE_1: "article-1-on-demand-evidence-reading.zh.txt",
              ARTICLE_2: "article-2-progressive-disclosure.zh.txt"}
#: The English renderings the README and the index give next to them.
ENGLISH_1 = ("One retrieval floods the context? On-demand reading with LangChain: don't feed top_k full texts to the "
             "model")
ENGLISH_2 = "Load it when you need it: progressive disclosure, tool discovery and an external workspace"
#: The post article 1 cites.
LANGCHAIN_POST = "Context Engineering Starts with Retrieval"
LANGCHAIN_DATE = "2026-10-23"

#: What names an article in a block: the opening of its title inside 《 (full or short form).
NAMES = {1: "《" + ARTICLE_1.split("？")[0], 2: "《" + ARTICLE_2.split("：")[0]}

# Words may wrap onto the next line (markdown, code comments): \s+ between them.
ARTICLE_ONE = re.compile(r"\barticle\s+1\b|\bfirst\s+(?:source\s+)?article\b", re.I)
ARTICLE_TWO = re.compile(r"\barticle\s+2\b|\b(?:other|second)\s+(?:source\s+)?article\b", re.I)
DESCRIBED_TWO = re.compile(r"\bsecond\s+(?:source\s+)?article\b", re.I)
BARE = re.compile(r"\b(?:the|this)\s+(?:source\s+)?article\b(?!\s+profile)", re.I)
PLURAL = re.compile(r"\b(?:the|both|two|source)\s+(?:source\s+)?articles\b", re.I)

SERIES = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
WORKSHOP = sorted((NOTEBOOKS / "exercises").glob("workshop_part*.ipynb")) + sorted(
    (NOTEBOOKS / "exercises" / "solutions").glob("workshop_part*.ipynb"))
MARKDOWN = [ROOT / "README.md", NOTEBOOKS / "exercises" / "README.md"]


def _blocks(path: Path) -> list[str]:
    """The text of ``path`` as the blocks a reader meets in order: a notebook's cell sources (its generated
    navigation line included, outputs not), a markdown file's sections (each from its heading to the next)."""
    if path.suffix == ".ipynb":
        return [c.source for c in nbformat.read(path, as_version=4).cells]
    return re.split(r"\n(?=#{1,6} )", path.read_text(encoding="utf-8"))


def unresolved(blocks: list[str]) -> list[str]:
    """Every mention of a source article in ``blocks`` that does not say which article it is, as
    ``block N: "...context..." (why)``; empty when every mention is resolved (the rules are in the module's
    docstring)."""
    named: set[int] = set()
    problems = []
    for i, block in enumerate(blocks):
        named |= {n for n, opening in NAMES.items() if opening in block}

        def report(m: re.Match, why: str, block: str = block, i: int = i) -> None:
            context = " ".join(block[max(0, m.start() - 40):m.end() + 40].split())
            problems.append(f'block {i}: "...{context}..." ({why})')

        for m in ARTICLE_ONE.finditer(block):
            if 1 not in named:
                report(m, "article 1 is not named by its title here or before")
        for m in ARTICLE_TWO.finditer(block):
            if 2 not in named:
                report(m, "article 2 is not named by its title here or before")
        for m in DESCRIBED_TWO.finditer(block):
            if NAMES[2] not in block:
                report(m, f"'the second article' needs article 2's title in the same place ({NAMES[2]}…》)")
        for m in BARE.finditer(block):
            if len(named) != 1:
                report(m, "which article? " + ("none is named yet" if not named else
                                               "both are named: say article 1 or article 2"))
        for m in PLURAL.finditer(block):
            if named != {1, 2}:
                report(m, "the articles are not both named by their titles here or before")
    return problems


def _ids(paths: list[Path]) -> list[str]:
    return [p.relative_to(ROOT).as_posix() for p in paths]


# -- the rules themselves ------------------------------------------------------------------------------------------

def test_the_rules_accept_named_mentions_and_refuse_unnamed_ones():
    """The resolver on small texts: what passes and what is reported."""
    short_1, short_2 = f"{NAMES[1]}？…》", f"{NAMES[2]}：…》"
    assert unresolved([f"Article 1 ({short_1}) asks.", "The article's table.", "Article 1's Figure 3."]) == []
    assert unresolved(["Nothing yet.", f"The second source article of this series ({short_2}) asks."]) == []
    assert unresolved([f"Article 2 ({short_2}).", "The article's catalog, the article profile."]) == []
    assert unresolved([f"{short_1} and {short_2}: the two articles.", "The article profile is compact's twin."]) == []
    assert len(unresolved(["The article's experiment asks."])) == 1                     # nothing named
    assert len(unresolved([f"{short_2} is article 2.", "The second source article calls it r8."])) == 1
    assert len(unresolved([f"{short_1}, {short_2}.", "The article's table."])) == 1      # which one?
    assert len(unresolved([f"{short_1}.", "Article 2 says."])) == 1
    assert len(unresolved([f"{short_1}.", "The source articles' figures."])) == 1
    assert unresolved(["`run_article()`, `article_corpus()`, the `article` profile."]) == []
    assert len(unresolved(["the experiment of the\n    article, wrapped"])) == 1


def test_the_titles_are_the_seeds_first_lines():
    """The literals above are the articles' first lines, byte for byte, as committed in tests/data (issue 26 item 8:
    this test used to look for the seeds in ../shared/seeds, outside the repository)."""
    articles = json.loads(SOURCE_ARTICLES.read_text(encoding="utf-8"))["articles"]
    assert sorted(articles) == sorted(SEED_FILES.values())
    for title, name in SEED_FILES.items():
        assert articles[name]["first_line"].encode("utf-8") == title.encode("utf-8"), name


# -- the README and the index --------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", [ROOT / "README.md", NOTEBOOKS / "00_index.ipynb"], ids=["README", "00_index"])
def test_readme_and_index_name_both_sources_byte_exact(path):
    """Issue 18 item 1: both titles in 《》 byte-exact, an English rendering of each, and the LangChain post with its
    date, in the README and in 00's first cell (the one learners open first)."""
    text = path.read_text(encoding="utf-8") if path.suffix == ".md" else \
        nbformat.read(path, as_version=4).cells[0].source
    for title in (ARTICLE_1, ARTICLE_2):
        assert f"《{title}》" in text, f"{path.name} does not give the title {title!r} byte-exact"
    flat = " ".join(text.split())  # English may wrap across lines
    for needed in (ENGLISH_1, ENGLISH_2, f"{LANGCHAIN_POST}", LANGCHAIN_DATE):
        assert needed in flat, f"{path.name} does not say {needed!r}"


# -- every text that cites them ------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", SERIES + WORKSHOP + MARKDOWN, ids=_ids(SERIES + WORKSHOP + MARKDOWN))
def test_every_mention_of_a_source_article_says_which(path):
    """Issue 18 item 1: "the article's table", "the second source article" and the like name their article (by
    title where first cited; "article 1" / "article 2" after that)."""
    problems = unresolved(_blocks(path))
    assert not problems, f"{path.relative_to(ROOT)}:\n" + "\n".join(problems)
