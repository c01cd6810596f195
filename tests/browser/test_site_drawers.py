"""Real-browser tests of the website's controls and phone layout (issue 26 item 7), in headless Debian Chromium.

The reviewer found that at 390 px neither the navigation drawer nor the contents drawer opened, that at 1280 px
the sidebar toggle did nothing, that the desktop showed two search boxes, and that the navigation named pages by
their file stems. These tests click the controls a reader clicks and check what the reader then sees: an element
"shows" when it is rendered inside the window and is the element the browser hit-tests at its centre (nothing
covers it). Same server, browser and opt-in as tests/browser/test_site.py, whose fixtures they reuse:
``EVIDENCE_SITE_TEST=1 python -m pytest -q tests/browser/test_site_drawers.py`` after building the site
(``make test-site`` runs both files). Screenshots of each drawer and of the collapsed sidebar go to
build/screenshots/.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import nbformat
import pytest
from test_site import PAGE_MS, SHOTS, WIDTHS, browser, built_pages, fontconfig_without_cjk, load_script, site  # noqa: F401  (browser, fontconfig_without_cjk, site: pytest fixtures)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator, Page

pytestmark = pytest.mark.skipif(
    os.environ.get("EVIDENCE_SITE_TEST") != "1",
    reason="website test is opt-in: `make test-site` (see tests/browser/test_site.py)",
)

PAGE = "02_three-tool-protocol.html"  # a page with a long sidebar and a table of contents
SETTLE_MS = 5_000  # how long a drawer may take to open or close (CSS transitions)

# Whether the element matching ``sel`` shows: rendered, inside the window, and hit by a click at its centre.
SHOWS_JS = """(sel) => {
  const el = document.querySelector(sel);
  if (!el) return false;
  const r = el.getBoundingClientRect(), cs = getComputedStyle(el);
  if (r.width < 1 || r.height < 1 || cs.visibility === 'hidden' || cs.display === 'none') return false;
  const x = Math.min(Math.max(r.left + r.width / 2, 0), innerWidth - 1);
  const y = Math.min(Math.max(r.top + Math.min(r.height, 40) / 2, 0), innerHeight - 1);
  if (r.right <= 0 || r.left >= innerWidth || r.bottom <= 0 || r.top >= innerHeight) return false;
  const hit = document.elementFromPoint(x, y);
  return !!hit && (el === hit || el.contains(hit));
}"""

# The controls a reader sees: every element matching ``sel`` that is rendered with a size inside the window.
VISIBLE_JS = """(sel) => Array.from(document.querySelectorAll(sel)).filter(el => {
  const r = el.getBoundingClientRect(), cs = getComputedStyle(el);
  return r.width >= 1 && r.height >= 1 && cs.visibility !== 'hidden' && cs.display !== 'none'
    && r.right > 0 && r.left < innerWidth && r.bottom > 0 && r.top < innerHeight;
}).map(el => el.outerHTML.slice(0, 120))"""

# A link of the site navigation (to notebook 03) and of the page's contents (its first section).
NAV_LINK = "a.reference.internal[href='03_evidence-and-citations.html']"
TOC_LINK = "nav.page-toc a.nav-link"
SEARCH_CONTROLS = ".search-button-field, .search-button"


def shows(page: Page, selector: str) -> bool:
    """Whether the first element matching ``selector`` shows to the reader now (SHOWS_JS)."""
    return page.evaluate(SHOWS_JS, selector)


def wait_shows(page: Page, selector: str, expected: bool) -> None:
    """Wait until ``selector`` shows (or stops showing); fail with what the reader would see."""
    try:
        page.wait_for_function(f"({SHOWS_JS})({selector!r}) === {str(expected).lower()}", timeout=SETTLE_MS)
    except Exception:  # noqa: BLE001 - playwright's TimeoutError: say what did not happen
        pytest.fail(f"{selector} {'never showed' if expected else 'still shows'} at "
                    f"{page.viewport_size['width']} px")


def the_visible(page: Page, selector: str) -> Locator:
    """The one control matching ``selector`` that a reader sees; fails if the reader sees none or two."""
    seen = page.evaluate(VISIBLE_JS, selector)
    assert len(seen) == 1, f"{len(seen)} visible {selector} at {page.viewport_size['width']} px: {seen}"
    return page.locator(selector).filter(visible=True).first


def open_page(browser: Browser, site: str, width: int, rel: str = PAGE) -> tuple[Page, list[str]]:
    """A new page at ``width`` px showing ``rel``, and the list its JavaScript errors are collected into."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(site + rel, wait_until="load", timeout=PAGE_MS)
    return page, errors


@pytest.mark.parametrize(("toggle", "link", "shot"), [
    (".primary-toggle", NAV_LINK, "site-phone-navigation.png"),
    (".secondary-toggle", TOC_LINK, "site-phone-contents.png"),
])
def test_phone_drawers_open_and_close(site: str, browser, toggle: str, link: str, shot: str) -> None:
    """Issue 26 item 7: at 390 px the navigation and contents buttons did nothing (the themes bound a hidden
    button). Each opens its drawer, whose links then show; Escape closes it, and so does a tap beside it."""
    page, errors = open_page(browser, site, WIDTHS["phone"])
    assert not shows(page, link), f"{link} shows before its drawer is opened"
    button = the_visible(page, toggle)
    button.click()
    wait_shows(page, link, True)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / shot))
    page.keyboard.press("Escape")
    wait_shows(page, link, False)
    button.click()
    wait_shows(page, link, True)
    drawer = page.evaluate(f"document.querySelector({link!r}).closest('dialog, .bd-sidebar-primary, "
                           ".bd-sidebar-secondary').getBoundingClientRect().toJSON()")
    beside = drawer["right"] + 20 if drawer["right"] + 20 < WIDTHS["phone"] else drawer["left"] - 20
    page.mouse.click(beside, 450)
    wait_shows(page, link, False)
    page.close()
    assert not errors, errors


def test_desktop_sidebar_toggle_hides_and_shows_the_sidebar(site: str, browser) -> None:
    """Issue 26 item 7: at 1280 px the sidebar toggle did nothing. One click hides the navigation sidebar (its
    links no longer show and the article gets wider), the next shows it again."""
    page, errors = open_page(browser, site, WIDTHS["desktop"])
    article = "article.bd-article"
    width = lambda: page.evaluate(f"document.querySelector({article!r}).getBoundingClientRect().width")  # noqa: E731
    wait_shows(page, NAV_LINK, True)
    before = width()
    button = the_visible(page, ".primary-toggle")
    button.click()
    wait_shows(page, NAV_LINK, False)
    page.wait_for_function(f"document.querySelector({article!r}).getBoundingClientRect().width > {before + 100}",
                           timeout=SETTLE_MS)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "site-sidebar-hidden.png"))
    button.click()
    wait_shows(page, NAV_LINK, True)
    page.close()
    assert not errors, errors


@pytest.mark.parametrize("device", list(WIDTHS))
def test_one_search_control_on_every_page(site: str, browser, device: str) -> None:
    """Issue 26 item 7: the desktop showed two search boxes (the sidebar's and a header's). Every page shows one
    search control at each width (the field in the sidebar, or the phone's magnifier), and it opens the search."""
    width = WIDTHS[device]
    page = browser.new_page(viewport={"width": width, "height": 900})
    problems = []
    for rel in built_pages():
        page.goto(site + rel, wait_until="load", timeout=PAGE_MS)
        seen = page.evaluate(VISIBLE_JS, SEARCH_CONTROLS)
        if len(seen) != 1:
            problems.append(f"{rel} at {width} px: {len(seen)} search controls: {seen}")
    page.goto(site + "index.html", wait_until="load", timeout=PAGE_MS)
    the_visible(page, SEARCH_CONTROLS).click()
    page.locator("#pst-search-dialog input[name=q]").wait_for(state="visible", timeout=SETTLE_MS)
    page.close()
    assert not problems, "\n".join(problems[:20])


# The widest table (or code block) of the article, and whether the page itself scrolls sideways; the box that
# scrolls the widest table is scrolled by 100 px to prove that it scrolls.
WIDEST_JS = """() => {
  const els = Array.from(document.querySelectorAll('article.bd-article table'));
  let widest = null;
  for (const el of els) if (!widest || el.scrollWidth > widest.scrollWidth) widest = el;
  const page = document.scrollingElement.scrollWidth;
  if (!widest) return {page, table: 0};
  let box = widest;
  while (box && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
  const r = box ? box.getBoundingClientRect() : null;
  const start = box ? box.scrollLeft : 0;
  if (box) box.scrollLeft = start + 100;
  return {page, table: widest.scrollWidth, box: !!box, left: r && r.left, right: r && r.right,
          scrolled: box ? box.scrollLeft - start : 0, text: widest.textContent.trim().slice(0, 60)};
}"""


SHOW_WIDEST_JS = """() => {
  let widest = null;
  for (const el of document.querySelectorAll('article.bd-article table'))
    if (!widest || el.scrollWidth > widest.scrollWidth) widest = el;
  widest.scrollIntoView(); window.scrollBy(0, -120);
}"""


def test_wide_tables_scroll_inside_their_box_on_a_phone(site: str, browser) -> None:
    """Issue 26 item 7: wide tables pushed the page sideways on a phone. At 390 px no page scrolls sideways
    (document.scrollingElement.scrollWidth <= the window), and the widest table of the site, wider than the
    window, scrolls inside its own box, which stays within the window."""
    width = WIDTHS["phone"]  # a phone: its meta viewport honoured, so a too-wide page would widen the layout
    page = browser.new_page(viewport={"width": width, "height": 844}, is_mobile=True, has_touch=True,
                            device_scale_factor=2)
    problems, widest = [], ("", {"table": 0})
    for rel in built_pages():
        page.goto(site + rel, wait_until="load", timeout=PAGE_MS)
        r = page.evaluate(WIDEST_JS)
        if r["page"] > width:
            problems.append(f"{rel}: the page is {r['page']} px wide in a {width} px window")
        if r["table"] > widest[1]["table"]:
            widest = (rel, r)
    rel, r = widest
    print(f"\nwidest table at {width} px: {rel}, {r['table']} px ({r.get('text')!r})")
    assert r["table"] > width, f"no table wider than {width} px: nothing to check ({widest})"
    assert r["box"], f"{rel}: its widest table has no scrolling box"
    assert r["left"] >= 0 and r["right"] <= width, f"{rel}: the table's box reaches outside the window: {r}"
    assert r["scrolled"] > 0, f"{rel}: the table's box does not scroll: {r}"
    page.goto(site + rel, wait_until="load", timeout=PAGE_MS)
    page.evaluate(SHOW_WIDEST_JS)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "site-phone-wide-table.png"))
    page.close()
    assert not problems, "\n".join(problems[:20])


SIDEBAR_LINKS_JS = """() => Array.from(document.querySelectorAll('.bd-sidebar-primary nav.bd-links a.reference.internal'))
  .map(a => ({href: a.getAttribute('href'), text: a.textContent.trim()}))"""
# A page's title: its first heading without the permalink sign.
HEADING_JS = """() => { const h = document.querySelector('article.bd-article h1').cloneNode(true);
  h.querySelectorAll('.headerlink').forEach(a => a.remove()); return h.textContent.trim(); }"""


def test_sidebar_names_the_notebooks_by_their_titles(site: str, browser) -> None:
    """Issue 26 item 7: navigation named pages by their file stems. The sidebar's link to each series notebook
    reads that page's own title (its heading), never its file name (read on the home page, where no entry is
    the current page)."""
    page, errors = open_page(browser, site, WIDTHS["desktop"], "index.html")
    links = {a["href"].removesuffix(".html"): a["text"] for a in page.evaluate(SIDEBAR_LINKS_JS)}
    problems = []
    for path in load_script("build_site").series()[1:]:
        page.goto(site + f"{path.stem}.html", wait_until="load", timeout=PAGE_MS)
        title = page.evaluate(HEADING_JS)
        if links.get(path.stem) != title or title == path.stem:
            problems.append(f"{path.stem}: the sidebar says {links.get(path.stem)!r}, the page's title is {title!r}")
    page.close()
    assert not problems, "\n".join(problems)
    assert not errors, errors


# Links of a page's navigation line (its first paragraph: "← previous · index · next →", scripts/nbnav.py).
NAV_LINE_JS = """() => {
  const first = document.querySelector('article.bd-article p');
  return first ? Array.from(first.querySelectorAll('a')).map(a => a.textContent.trim()) : [];
}"""


def test_navigation_lines_name_pages_by_title_not_file_name(site: str, browser) -> None:
    """Issue 26 item 7: the navigation line at the top of each notebook ("← 01_baseline-dump · index · ...")
    named its neighbours by file stem. The line is scripts/nbnav.py's (the notebooks' first cell); on the site no
    link of it reads like a file name."""
    build_site = load_script("build_site")
    students, solutions = build_site.workshop()
    notebooks = build_site.series()[1:] + students + solutions
    stems = {p.stem for p in notebooks}
    page, errors = open_page(browser, site, WIDTHS["desktop"])
    problems = []
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        if not nb.cells or nb.cells[0].get("id") != "nav":
            continue
        rel = path.relative_to(build_site.NOTEBOOKS).with_suffix(".html").as_posix()
        page.goto(site + rel, wait_until="load", timeout=PAGE_MS)
        named = [t for t in (t.strip("←→ ") for t in page.evaluate(NAV_LINE_JS)) if t in stems]
        if named:
            problems.append(f"{rel}: its navigation line names {named}")
    page.close()
    assert not problems, "\n".join(problems)
    assert not errors, errors
