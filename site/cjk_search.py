"""The website's search, for English and Chinese (a Sphinx extension; site/conf.py loads it).

Sphinx's English search splits text into ``\\w+`` words, so a run of Chinese without spaces (``单批上限为200条``)
became one "word": a search for 批处理 found only the page where 批处理 stood alone, 上限 9 of the 23 pages holding
it (issue 34 item 5). Chinese has no spaces to split on, so this indexes every CJK character and every pair of
adjacent CJK characters (bigrams, as search engines without a dictionary do), and the browser splits the query the
same way: a query's pieces must all be on a page, so 单批上限 finds the pages holding 单批, 批上 and 上限 (and their
characters). Everything else is Sphinx's English search unchanged: the same words, stemmer and stop words.

What counts as CJK is the site font's definition (``scripts/subset_site_font.py``'s ``CJK_RANGES``), one list for
the font, its CSS and the search. ``tests/browser/test_site.py`` searches in Chromium and checks the number of
pages found against the built pages that hold each term.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from sphinx.search.en import SearchEnglish

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from subset_site_font import CJK_PATTERN, CJK_RANGES  # noqa: E402  (one definition of "CJK")

CJK_RUN = re.compile("[" + "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in CJK_RANGES) + "]+")


def cjk_pieces(run: str) -> list[str]:
    """A run of CJK characters as its characters, then its adjacent pairs: 上限值 -> 上 限 值 上限 限值."""
    return list(run) + [run[i:i + 2] for i in range(len(run) - 1)]


def split_cjk(word: str) -> list[str]:
    """One ``\\w+`` word: its non-CJK stretches as words, each CJK run as characters and bigrams."""
    out: list[str] = []
    at = 0
    for m in CJK_RUN.finditer(word):
        out += [word[at:m.start()]] if m.start() > at else []
        out += cjk_pieces(m.group())
        at = m.end()
    return out + ([word[at:]] if at < len(word) else [])


#: The browser's side: Sphinx's default splitQuery (searchtools.js), then each word split like split_cjk.
JS_SPLITTER = """
function splitQuery(query) {
  const cjk = /%s+/gu;
  const pieces = [];
  for (const word of query.split(/[^\\p{Letter}\\p{Number}_\\p{Emoji_Presentation}]+/gu)) {
    if (!word) continue;
    let at = 0;
    for (const m of word.matchAll(cjk)) {
      if (m.index > at) pieces.push(word.slice(at, m.index));
      const run = Array.from(m[0]);
      pieces.push(...run);
      for (let i = 1; i < run.length; i++) pieces.push(run[i - 1] + run[i]);
      at = m.index + m[0].length;
    }
    if (at < word.length) pieces.push(word.slice(at));
  }
  return pieces;
}
""" % CJK_PATTERN


class SearchEnglishAndChinese(SearchEnglish):
    """Sphinx's English search, with CJK indexed as characters and bigrams (see the module docstring)."""

    js_splitter_code = JS_SPLITTER

    def split(self, input: str) -> list[str]:  # noqa: A002 (Sphinx's parameter name)
        return [piece for word in super().split(input) for piece in split_cjk(word)]


def setup(app):
    """Replace the search for ``language = "en"`` (site/conf.py's) with SearchEnglishAndChinese."""
    app.add_search_language(SearchEnglishAndChinese)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
