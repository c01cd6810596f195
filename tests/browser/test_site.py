"""Real-browser test of the static website (``make site`` into build/site/), in headless Debian Chromium.

Serves build/site/ over loopback with ``python -m http.server`` (a free port) under a project-site prefix,
``/read-evidence-on-demand/``, as GitHub Pages would: a link written as ``/page.html`` would break there and
be caught. Then opens every HTML page in Chromium (Playwright, ``/usr/bin/chromium``) and checks that

* every page answers HTTP 200 and raises no JavaScript error, and every request it makes stays on the site and
  succeeds (no CDN, no hot-linked image, no missing asset);
* every ``<img>`` has loaded (``naturalWidth > 0``);
* every same-origin ``<a href>`` answers 200, and its ``#fragment``, if any, exists in the target page;
* the navigation lists the series in order (a glob over notebooks/NN_*.ipynb), then the workshop;
* every widget cell of the live-explorers notebook is followed by the "needs a running Python kernel" note;

and saves screenshots of the index and notebook 02 (at its first figure) to build/screenshots/.

Opt-in: ``EVIDENCE_SITE_TEST=1 python -m pytest -q tests/browser/test_site.py`` after ``make site``
(``make test-site`` does both). Needs Debian's chromium and playwright (``scripts/install_browser.sh``).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "site"
SHOTS = ROOT / "build" / "screenshots"
CHROMIUM = Path(os.environ.get("EVIDENCE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-default-apps",
    "--disable-sync", "--no-first-run", "--mute-audio",
]
PREFIX = "read-evidence-on-demand"
SERVER_START_S = 20
PAGE_MS = 30_000
WIDGET_NOTE = "this needs a running Python kernel"

pytestmark = pytest.mark.skipif(
    os.environ.get("EVIDENCE_SITE_TEST") != "1",
    reason="website test is opt-in: `make test-site` (builds build/site, then sets EVIDENCE_SITE_TEST=1; needs "
           "Debian chromium at /usr/bin/chromium and playwright: scripts/install_browser.sh)",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Ids(HTMLParser):
    """Every id (and legacy <a name>) in a page: the valid #fragments."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for k, v in attrs:
            if v and (k == "id" or (tag == "a" and k == "name")):
                self.ids.add(v)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not (SITE / "index.html").exists():
        pytest.fail(f"{SITE}/index.html is missing: run `make site` first (or `make test-site`)")
    docroot = tmp_path_factory.mktemp("site-root")
    (docroot / PREFIX).symlink_to(SITE, target_is_directory=True)
    port = free_port()
    log = (docroot.parent / "http.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                             "--directory", str(docroot)], stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/{PREFIX}/"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            try:
                with urllib.request.urlopen(base, timeout=2):
                    break
            except (urllib.error.URLError, ConnectionError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("python -m http.server did not start")
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def fetch(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


def series_stems() -> list[str]:
    return [p.stem for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))]


# Every <img>: eager, scrolled into view, decoded; those with no pixels are returned.
BROKEN_IMAGES_JS = """async () => {
  const imgs = Array.from(document.images);
  for (const img of imgs) { img.loading = 'eager'; img.scrollIntoView(); }
  await Promise.all(imgs.map(img => img.decode().catch(() => null)));
  return {count: imgs.length,
          broken: imgs.filter(img => !(img.complete && img.naturalWidth > 0)).map(img => img.currentSrc || img.src)};
}"""


def test_every_page_loads_with_its_images_links_and_navigation(site: str) -> None:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} not found: run scripts/install_browser.sh (installs Debian's chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed in this environment: run scripts/install_browser.sh")

    # every page; _static/ holds the themes' assets (their *-macros.html are Jinja snippets, not pages)
    pages = sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob("*.html") if "_static" not in p.parts)
    for stem in series_stems():
        assert f"{stem}.html" in pages, f"notebooks/{stem}.ipynb has no page on the site"
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(site))
    problems: list[str] = []
    links: dict[str, str] = {}  # same-origin link (with fragment) -> first page that has it
    images = 0
    started = time.monotonic()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            current = {"page": ""}
            page.on("pageerror", lambda e: problems.append(f"{current['page']}: JavaScript error: {e}"))
            page.on("requestfailed", lambda r: problems.append(
                f"{current['page']}: request failed: {r.url} ({r.failure})"))

            def on_request(r) -> None:
                if not r.url.startswith((origin + "/", "data:", "blob:", "about:")):
                    problems.append(f"{current['page']}: request to another site: {r.url}")

            def on_response(r) -> None:
                if r.status >= 400:
                    problems.append(f"{current['page']}: HTTP {r.status} for {r.url}")

            page.on("request", on_request)
            page.on("response", on_response)
            for rel in pages:
                current["page"] = rel
                response = page.goto(site + rel, wait_until="load", timeout=PAGE_MS)
                assert response is not None and response.status == 200, f"{rel}: HTTP {response and response.status}"
                result = page.evaluate(BROKEN_IMAGES_JS)
                images += result["count"]
                problems += [f"{rel}: image did not load: {src}" for src in result["broken"]]
                for href in page.eval_on_selector_all("a[href]", "as => as.map(a => a.href)"):
                    if href.startswith(origin + "/"):
                        links.setdefault(href, rel)
                if rel == "index.html":
                    nav = page.eval_on_selector_all(
                        "nav.bd-links a.reference.internal", "as => as.map(a => a.getAttribute('href'))")
                    order = [h.split("#")[0].removesuffix(".html") for h in nav]
                    assert [h for h in order if re.fullmatch(r"\d\d_.+", h)] == series_stems(), order
                    assert order.index("exercises/README") > order.index(series_stems()[-1])
                    assert [h for h in order if h.startswith("exercises/workshop_part")], order
                    SHOTS.mkdir(parents=True, exist_ok=True)
                    page.evaluate("window.scrollTo(0, 0)")
                    page.screenshot(path=str(SHOTS / "site-index.png"))
                if rel == "02_three-tool-protocol.html":
                    figure = page.locator(".cell_output img").first
                    figure.scroll_into_view_if_needed()
                    page.evaluate("window.scrollBy(0, -250)")
                    page.screenshot(path=str(SHOTS / "site-02.png"))
                if rel == "10_live-explorers.html":
                    notes = page.locator(".admonition", has_text=WIDGET_NOTE)
                    widgets = page.locator(".cell_output", has_text=re.compile(r"call \.set\(\.\.\.\) and"))
                    assert widgets.count() >= 1 and notes.count() == widgets.count(), \
                        (widgets.count(), notes.count())
                    notes.first.scroll_into_view_if_needed()
                    page.evaluate("window.scrollBy(0, -300)")
                    page.screenshot(path=str(SHOTS / "site-10-widget-note.png"))
        finally:
            browser.close()

    ids: dict[str, set[str]] = {}
    for href, where in sorted(links.items()):
        url, fragment = urldefrag(href)
        if url not in ids:
            status, body = fetch(url)
            if status != 200:
                problems.append(f"{where}: broken link {href} (HTTP {status})")
                ids[url] = set()
                continue
            parser = Ids()
            if url.endswith((".html", "/")):
                parser.feed(body.decode("utf-8", errors="replace"))
            ids[url] = parser.ids
        if fragment and url.endswith((".html", "/")) and fragment not in ids[url]:
            problems.append(f"{where}: link {href}: no id {fragment!r} in the target page")

    print(f"\n{len(pages)} pages, {images} images, {len(links)} same-origin links "
          f"({len(ids)} distinct targets) checked in {time.monotonic() - started:.1f} s; "
          f"screenshots in {SHOTS.relative_to(ROOT)}/")
    assert not problems, "\n".join(problems[:50]) + (f"\n... and {len(problems) - 50} more" if len(problems) > 50 else "")
    for name in ("site-index.png", "site-02.png"):
        assert (SHOTS / name).stat().st_size > 10_000, name
