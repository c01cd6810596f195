"""Sphinx configuration for the series' website; used by scripts/build_site.py (``make site``), not on its own.

The source folder is the staging folder the script writes (build/site-src/); notebooks are rendered from their
stored outputs and never executed. The GitHub button appears only for a configured repository: the script passes
``EVIDENCE_SITE_REPOSITORY`` (owner/name) through, empty when none is configured (see scripts/build_site.py).
``_static/`` holds the site's own CSS (web font for Chinese text, a wider content column with the page's contents
in a drawer below 1600 px, scroll containers, hanging indents for wrapped code, smaller outputs that wrap unless they are tables, answers set
apart, short table cells kept whole) and JavaScript (search-term highlighting, search snippets from the article, code
lines that know their indentation, output lines that are not tables, short cells), a favicon, and the
web-font subset in ``_static/fonts/``. ``cjk_search.py`` (beside this file) makes the search find Chinese terms:
every CJK character and adjacent pair is indexed; ``search_scorer.js`` ranks workshop solutions below the pages
learners read.
"""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # cjk_search.py, this folder's Sphinx extension
_series = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8")).get("tool", {}).get("evidence-series", {})
_repo = os.environ.get("EVIDENCE_SITE_REPOSITORY", "").strip()  # never pyproject's slug unconfirmed: a placeholder

project = "Read evidence on demand"
author = "the evidence-series authors"
copyright = "the evidence-series authors (MIT)"
language = "en"
root_doc = "index"

extensions = ["myst_nb", "cjk_search", "sphinx_copybutton"]
html_search_language = "en"        # cjk_search replaces it: Sphinx's English search plus CJK characters and bigrams
html_search_scorer = str(Path(__file__).resolve().parent / "search_scorer.js")  # solutions below learner pages
nb_execution_mode = "off"          # the committed outputs are the content: never run a notebook
nb_merge_streams = True
myst_enable_extensions: list[str] = []  # no dollarmath: "$" in the prose stays a dollar sign
myst_heading_anchors = 3
exclude_patterns = ["**/.ipynb_checkpoints", "**/workspace"]
suppress_warnings = ["mystnb.unknown_mime_type"]
pygments_style = "sphinx"

html_theme = "sphinx_book_theme"
html_title = project
html_baseurl = os.environ.get("BASE_URL", "").rstrip("/") + "/" if os.environ.get("BASE_URL") else ""
html_static_path = ["_static"]
html_css_files = ["evidence.css"]
html_js_files = ["evidence.js"]
html_copy_source = True            # the download button offers the .ipynb: the committed notebook (build_site.py)
html_favicon = "_static/favicon.svg"
# The theme's light/dark switch: without a default, pydata-sphinx-theme logs "Got invalid theme mode" on every page.
html_context = {"default_mode": "auto"}
html_show_sourcelink = False
html_last_updated_fmt = None

# A copy button on code (code cells and the pages' code blocks), never on an output; shell and Python prompts
# (">>> ", "... ", "$ ") are left out of what is copied.
copybutton_selector = "div.highlight:not(div.cell_output div.highlight) > pre"
copybutton_exclude = ".linenos, .gp, .go"
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
html_theme_options = {
    "home_page_in_toc": False,     # the site title links home: one home entry, not two
    "show_toc_level": 2,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "use_repository_button": bool(_repo),
    "repository_url": f"https://github.com/{_repo}" if _repo else "",
    "repository_branch": _series.get("branch", "main"),
    "path_to_docs": "notebooks",
    "navigation_with_keys": False,
    # No pydata-sphinx-theme header: the Book Theme has its own (the article header's buttons), but
    # pydata-sphinx-theme 0.20 gives the header a search field unless navbar_persistent is set, and with it draws
    # the header and its two hidden drawer buttons first on the page. Both themes' scripts bind the first
    # .primary-toggle / .secondary-toggle, so the visible buttons did nothing (issue 26 item 7) and the desktop
    # showed two search fields. Empty, the header is not drawn: the visible buttons are the first, and the
    # sidebar's search field is the one search box. tests/browser/test_site_drawers.py clicks them.
    "navbar_persistent": [],
    # One line of credits (author.html repeated the copyright's names), and the sources on every page when the
    # build names a repository.
    "footer_content_items": ["copyright.html", "extra-footer.html"],
    "extra_footer": (f'<p>Sources: <a href="https://github.com/{_repo}">github.com/{_repo}</a></p>' if _repo else ""),
}


# The footer's previous / next links follow the sidebar, which would walk a learner from the workshop's last part
# into the facilitator guide and the solutions. Two chains instead: the learner's pages (series, workshop, figures,
# API) and the facilitator material (the guide, then the solutions), each in the sidebar's order.
FACILITATOR_PAGES = ("exercises/README", "exercises/solutions/")


def _is_facilitator(docname: str) -> bool:
    return docname == FACILITATOR_PAGES[0] or docname.startswith(FACILITATOR_PAGES[1])


def _chains(env) -> dict[str, tuple[str | None, str | None]]:
    """Each page's (previous, next) within its own chain, from Sphinx's order of the pages."""
    relations = env.collect_relations()
    order, doc = [root_doc], relations.get(root_doc, [None, None, None])[2]
    while doc and doc not in order:
        order.append(doc)
        doc = relations.get(doc, [None, None, None])[2]
    links: dict[str, tuple[str | None, str | None]] = {}
    for chain in ([d for d in order if not _is_facilitator(d)], [d for d in order if _is_facilitator(d)]):
        for i, d in enumerate(chain):
            links[d] = (chain[i - 1] if i else None, chain[i + 1] if i + 1 < len(chain) else None)
    return links


def _relink(app, pagename, templatename, context, doctree) -> None:
    if "prev" not in context and "next" not in context:
        return
    chains = app.env.__dict__.setdefault("_evidence_chains", _chains(app.env))
    if pagename not in chains:
        return
    for key, doc in zip(("prev", "next"), chains[pagename]):
        context[key] = None if doc is None else {
            "link": app.builder.get_relative_uri(pagename, doc),
            "title": app.builder.render_partial(app.env.titles[doc])["title"]}


def setup(app) -> None:
    app.connect("html-page-context", _relink)
