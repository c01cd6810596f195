"""Real-browser test of the static website (``make site`` into build/site/), in headless Debian Chromium.

Serves build/site/ over loopback with ``python -m http.server`` (a free port) under a project-site prefix,
``/read-evidence-on-demand/``, as GitHub Pages would: a link written as ``/page.html`` would break there and
be caught. Chromium runs with a fontconfig of its own that holds only the machine's fonts *without* Chinese
glyphs (``FONTCONFIG_FILE``, see ``fontconfig_without_cjk``), so it sees what a reader's machine without a CJK
font sees, even where fonts-noto-cjk is installed: Chinese text can only render through the site's web font.
The tests check that

* every page answers HTTP 200 and raises no JavaScript error, and every request it makes stays on the site and
  succeeds (no CDN, no hot-linked image, no missing asset); every ``<img>`` has loaded (``naturalWidth > 0``);
  every same-origin ``<a href>`` answers 200, and its ``#fragment``, if any, exists in the target page;
* the sidebar: one link to the home page; the series in order (a glob over notebooks/NN_*.ipynb), then the
  workshop's student copies, then the facilitator material (guide and solutions) in a section of its own;
* every widget cell of the live-explorers notebook is followed by the "needs a running Python kernel" note;
* the web-font subset (site/_static/fonts/) holds every CJK character of every built page, the CSS
  ``unicode-range`` covers them, and in Chromium each of them is drawn by the web font, not as a box (tofu);
* nothing in the content (``pre``, tables, outputs, images) is clipped without a scrollbar, at 1280 px and at a
  phone's 390 px;
* the built-in search finds a term and its first result opens the page with the term highlighted; for Chinese
  and English terms it lists exactly the pages whose text holds the term (site/cjk_search.py indexes CJK
  characters and bigrams), and the browser splits a query as the index was split;
* no built file names the placeholder repository (pyproject.toml's slug while ``EVIDENCE_SITE_REPOSITORY`` does
  not confirm it: scripts/build_site.py);
* at 1280 px the article is at least 900 px wide (the page's contents open from a button below 1440 px), a wrapped
  code line continues with a hanging indent (and the code still reads as the notebook's source), outputs of up
  to 120 characters fit and wider ones scroll in their own box; search snippets show the article, not the page's
  chrome, and workshop solutions rank below the learners' pages; the navigation line links its neighbours with no
  "(start)" / "(end)"; the Figures page is sharp at 2x (SVG);

and saves screenshots of the index, notebook 02 at its size table (desktop and phone), a Chinese passage of 04,
the exercises page (the facilitator guide), the whole sidebar and the live-explorers note to build/screenshots/.

The controls (the phone's two drawers, the desktop's sidebar toggle, one search box) and the phone layout are
clicked and checked in tests/browser/test_site_drawers.py, with these fixtures.

Opt-in: ``EVIDENCE_SITE_TEST=1 python -m pytest -q tests/browser/test_site.py`` after ``make site``
(``make test-site`` does both). Needs Debian's chromium and playwright (``scripts/install_browser.sh``).
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

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
WIDTHS = {"desktop": 1280, "phone": 390}
SEARCH_TERM = "manifest"
# Where fontconfig looks for fonts by default (/etc/fonts/fonts.conf on Debian), scanned for the isolated config.
FONT_DIRS = [Path("/usr/share/fonts"), Path("/usr/local/share/fonts"), Path.home() / ".fonts",
             Path.home() / ".local" / "share" / "fonts"]
FONT_SUFFIXES = {".ttf", ".otf", ".ttc", ".otc", ".pfb", ".pcf", ".gz", ".woff", ".woff2"}

pytestmark = pytest.mark.skipif(
    os.environ.get("EVIDENCE_SITE_TEST") != "1",
    reason="website test is opt-in: `make test-site` (builds build/site, then sets EVIDENCE_SITE_TEST=1; needs "
           "Debian chromium at /usr/bin/chromium and playwright: scripts/install_browser.sh)",
)


def load_script(name: str):
    """scripts/<name>.py as a module (the tests use the scripts' own rules, never a copy of them)."""
    path = ROOT / "scripts" / f"{name}.py"
    if not path.is_file():
        pytest.fail(f"{path.relative_to(ROOT)} is missing")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


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


def built_pages() -> list[str]:
    """Every page; _static/ holds the themes' assets (their *-macros.html are Jinja snippets, not pages)."""
    if not (SITE / "index.html").exists():
        pytest.fail(f"{SITE}/index.html is missing: run `make site` first (or `make test-site`)")
    return sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob("*.html") if "_static" not in p.parts)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    built_pages()
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
                    raise RuntimeError("python -m http.server did not start") from None
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


def font_files() -> list[Path]:
    seen: set[Path] = set()
    for folder in FONT_DIRS:
        if folder.is_dir():
            for path in sorted(folder.rglob("*")):
                if path.is_file() and path.suffix.lower() in FONT_SUFFIXES and path.resolve() not in seen:
                    seen.add(path.resolve())
    return sorted(seen)


def covers_any(path: Path, codepoints: set[int]) -> bool:
    """Whether a font file (any face of a collection) has a glyph for one of ``codepoints``."""
    from fontTools.ttLib import TTCollection, TTFont

    try:
        if path.suffix.lower() in (".ttc", ".otc"):
            faces = TTCollection(path, lazy=True).fonts
        elif path.suffix.lower() in (".ttf", ".otf", ".woff", ".woff2"):
            faces = [TTFont(path, lazy=True)]
        else:
            return False  # bitmap and Type 1 fonts: no CJK on a Debian machine worth counting
        return any(codepoints & set((face.getBestCmap() or {}).keys()) for face in faces)
    except Exception:  # noqa: BLE001 - a font fontTools cannot read is one fontconfig will not use for CJK either
        return False


@pytest.fixture(scope="module")
def fontconfig_without_cjk(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment whose FONTCONFIG_FILE lists only the machine's fonts that have no CJK glyph.

    The fonts are symlinked into a folder of their own; the system's conf.d is included for the usual
    aliases (sans-serif, monospace). If fc-list is there, it must list nothing outside that folder and no
    font for Chinese."""
    site_cjk = load_script("subset_site_font")
    cjk = {ord(c) for c in site_cjk.site_characters(SITE)} | set(range(0x4E00, 0x4E00 + 256))
    base = tmp_path_factory.mktemp("fontconfig")
    fonts = base / "fonts"
    fonts.mkdir()
    kept, dropped = 0, []
    for i, path in enumerate(font_files()):
        if covers_any(path, cjk):
            dropped.append(path.name)
            continue
        (fonts / f"{i:04d}-{path.name}").symlink_to(path)
        kept += 1
    conf = base / "fonts.conf"
    conf.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">\n<fontconfig>\n'
        f"  <dir>{fonts}</dir>\n  <cachedir>{base / 'cache'}</cachedir>\n"
        '  <include ignore_missing="yes">/etc/fonts/conf.d</include>\n</fontconfig>\n', encoding="utf-8")
    env = {**os.environ, "FONTCONFIG_FILE": str(conf)}
    env.pop("FONTCONFIG_PATH", None)
    try:
        listed = subprocess.run(["fc-list", "--format", "%{file}\n"], env=env, capture_output=True, text=True,
                                timeout=120, check=True).stdout.split()
        zh = subprocess.run(["fc-list", ":lang=zh", "file"], env=env, capture_output=True, text=True,
                            timeout=120, check=True).stdout.strip()
    except FileNotFoundError:
        listed, zh = [], ""
    outside = [f for f in listed if not f.startswith(str(fonts))]
    assert not outside, f"the isolated fontconfig still lists system fonts: {outside[:5]}"
    assert not zh, f"the isolated fontconfig still has a Chinese font: {zh}"
    print(f"\nfontconfig for the browser: {kept} fonts without CJK glyphs; left out: {', '.join(dropped) or 'none'}")
    return env


@pytest.fixture(scope="module")
def browser(fontconfig_without_cjk: dict[str, str]):
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} not found: run scripts/install_browser.sh (installs Debian's chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed in this environment: run scripts/install_browser.sh")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS,
                                    env=fontconfig_without_cjk)
        try:
            yield browser
        finally:
            browser.close()


def fetch(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


def series_stems() -> list[str]:
    """The series' pages in order (scripts/build_site.py's rule: NN_*.ipynb and the deep dives NNx_*.ipynb);
    notebooks/00_index.ipynb is the site's home page, index.html."""
    return [p.stem for p in load_script("build_site").series() if p.stem != "00_index"]


def workshop_stems() -> tuple[list[str], list[str]]:
    ex = ROOT / "notebooks" / "exercises"
    return ([f"exercises/{p.stem}" for p in sorted(ex.glob("workshop_part*.ipynb"))],
            [f"exercises/solutions/{p.stem}" for p in sorted((ex / "solutions").glob("workshop_part*.ipynb"))])


# Every <img>: eager, scrolled into view, decoded; those with no pixels are returned.
BROKEN_IMAGES_JS = """async () => {
  const imgs = Array.from(document.images);
  for (const img of imgs) { img.loading = 'eager'; img.scrollIntoView(); }
  await Promise.all(imgs.map(img => img.decode().catch(() => null)));
  return {count: imgs.length,
          broken: imgs.filter(img => !(img.complete && img.naturalWidth > 0)).map(img => img.currentSrc || img.src)};
}"""

# The primary sidebar: each caption with the links under it (a link before any caption has caption "").
SIDEBAR_JS = """() => {
  const nav = document.querySelector('.bd-sidebar-primary nav.bd-links');
  const sections = [];
  let current = {caption: '', links: []};
  for (const el of nav.querySelectorAll('p.caption, a.reference.internal')) {
    if (el.matches('p.caption')) { sections.push(current); current = {caption: el.textContent.trim(), links: []}; }
    else current.links.push({href: el.href, text: el.textContent.trim()});
  }
  sections.push(current);
  const all = Array.from(document.querySelectorAll('.bd-sidebar-primary a[href]')).map(a => a.href);
  return {sections: sections.filter(s => s.caption || s.links.length), all};
}"""


def test_every_page_loads_with_its_images_links_and_navigation(site: str, browser) -> None:
    pages = built_pages()
    for stem in series_stems():
        assert f"{stem}.html" in pages, f"notebooks/{stem}.ipynb has no page on the site"
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(site))
    problems: list[str] = []
    links: dict[str, str] = {}  # same-origin link (with fragment) -> first page that has it
    images = 0
    started = time.monotonic()
    page = browser.new_page(viewport={"width": WIDTHS["desktop"], "height": 1000})
    current = {"page": ""}
    page.on("pageerror", lambda e: problems.append(f"{current['page']}: JavaScript error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"{current['page']}: request failed: {r.url} ({r.failure})"))

    def on_request(r) -> None:
        if not r.url.startswith((origin + "/", "data:", "blob:", "about:")):
            problems.append(f"{current['page']}: request to another site: {r.url}")

    def on_response(r) -> None:
        if r.status >= 400:
            problems.append(f"{current['page']}: HTTP {r.status} for {r.url}")

    page.on("request", on_request)
    page.on("response", on_response)
    SHOTS.mkdir(parents=True, exist_ok=True)
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
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(SHOTS / "site-index.png"))
        if rel == "exercises/README.html":
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(SHOTS / "site-exercises.png"))
        if rel == "10_live-explorers.html":
            notes = page.locator(".admonition", has_text=WIDGET_NOTE)
            widgets = page.locator(".cell_output", has_text=re.compile(r"call \.set\(\.\.\.\) and"))
            assert widgets.count() >= 1 and notes.count() == widgets.count(), (widgets.count(), notes.count())
            notes.first.scroll_into_view_if_needed()
            page.evaluate("window.scrollBy(0, -300)")
            page.screenshot(path=str(SHOTS / "site-10-widget-note.png"))
    page.close()

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
    for name in ("site-index.png", "site-exercises.png"):
        assert (SHOTS / name).stat().st_size > 10_000, name


def test_sidebar_has_one_home_entry_and_the_facilitator_material_in_its_own_section(site: str, browser) -> None:
    """Issue 18 item 7: the sidebar had two home entries ("Read evidence on demand" and "Read evidence on demand:
    the series") and listed the solutions right next to the student copies."""
    page = browser.new_page(viewport={"width": WIDTHS["desktop"], "height": 1000})
    page.goto(site + "02_three-tool-protocol.html", wait_until="load", timeout=PAGE_MS)
    nav = page.evaluate(SIDEBAR_JS)
    page.set_viewport_size({"width": WIDTHS["desktop"], "height": 2000})  # the whole sidebar, for the screenshot
    page.goto(site + "exercises/README.html", wait_until="load", timeout=PAGE_MS)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(".bd-sidebar-primary").screenshot(path=str(SHOTS / "site-sidebar.png"))
    page.close()
    rel = lambda href: urldefrag(href)[0].removeprefix(site).removesuffix(".html")  # noqa: E731
    home = [h for h in nav["all"] if rel(h) in ("index", "")]
    assert len(home) == 1, f"the sidebar links to the home page {len(home)} times: {home}"
    captions = [s["caption"] for s in nav["sections"]]
    by_caption = {s["caption"]: [rel(a["href"]) for a in s["links"]] for s in nav["sections"]}
    titles = [a["text"] for s in nav["sections"] for a in s["links"]]
    assert len(titles) == len(set(titles)), f"two sidebar entries with the same title: {titles}"
    assert "" not in by_caption, f"sidebar entries outside any section: {by_caption.get('')}"
    assert captions[:3] == ["The series", "Workshop", "Facilitators"], captions
    assert by_caption["The series"] == series_stems(), by_caption["The series"]
    students, solutions = workshop_stems()
    assert by_caption["Workshop"] == students, by_caption["Workshop"]
    assert by_caption["Facilitators"] == ["exercises/README", *solutions], by_caption["Facilitators"]


def test_site_font_covers_every_cjk_character_the_site_shows() -> None:
    """Issue 18 item 7: Chinese text showed as boxes without a system CJK font; the site ships a web-font subset
    that must hold every CJK character of every built page, inside the CSS unicode-range."""
    fonts = load_script("subset_site_font")
    chars = fonts.site_characters(SITE)
    assert len(chars) > 100, f"only {len(chars)} CJK characters found in {SITE}: is the site built?"
    assert fonts.FONT.is_file(), f"{fonts.FONT.relative_to(ROOT)} is missing: python scripts/subset_site_font.py"
    lacking = fonts.missing(fonts.FONT, chars)
    assert not lacking, (f"the site font lacks {len(lacking)} characters the pages show: {''.join(lacking)!r}; "
                         "regenerate it: make site-font")
    built = SITE / "_static" / "fonts" / fonts.FONT.name
    assert built.read_bytes() == fonts.FONT.read_bytes(), f"{built} is not the committed font: run make site"
    css = fonts.CSS.read_text(encoding="utf-8")
    face = re.search(r"@font-face\s*{[^}]*}", css)
    assert face and f'"{fonts.FAMILY}"' in face.group(0) and fonts.FONT.name in face.group(0), css[:500]
    assert "font-display" in face.group(0)
    ranges = [tuple(int(x, 16) for x in (m.group(1), m.group(2) or m.group(1)))
              for m in re.finditer(r"U\+([0-9A-Fa-f]+)(?:-([0-9A-Fa-f]+))?", face.group(0))]
    outside = [c for c in chars if not any(lo <= ord(c) <= hi for lo, hi in ranges)]
    assert not outside, f"outside the CSS unicode-range: {''.join(outside)!r}"
    for var in ("--pst-font-family-base", "--pst-font-family-heading", "--pst-font-family-monospace"):
        assert re.search(re.escape(var) + r":[^;]*\"" + re.escape(fonts.FAMILY) + '"', css), var


# For each character: drawn on a canvas with the page's own font stack (body and pre), with the same stack
# without the web font, and a private-use character (a box in any font here) as the reference tofu.
GLYPHS_JS = """async ({chars, family}) => {
  await document.fonts.ready;
  const body = getComputedStyle(document.body).fontFamily;
  const pre = document.querySelector('pre');
  const mono = pre ? getComputedStyle(pre).fontFamily : body;
  const without = stack => stack.split(',').filter(f => f.trim().replace(/["']/g, '') !== family).join(',');
  let loaded = [], error = null;
  try { loaded = await document.fonts.load(`32px ${body}`, chars.join('')); } catch (e) { error = String(e); }
  const faces = Array.from(document.fonts).filter(f => f.family.replace(/["']/g, '') === family)
                     .map(f => f.status);
  const canvas = document.createElement('canvas');
  canvas.width = 48; canvas.height = 48;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const draw = (ch, stack) => {
    ctx.clearRect(0, 0, 48, 48); ctx.font = `32px ${stack}`; ctx.fillStyle = '#000'; ctx.textBaseline = 'top';
    ctx.fillText(ch, 4, 4);
    const d = ctx.getImageData(0, 0, 48, 48).data; let s = '', ink = 0;
    for (let i = 3; i < d.length; i += 4) { s += d[i] > 127 ? '1' : '0'; ink += d[i] > 127; }
    return {s, ink};
  };
  const result = {body, mono, faces, error, loaded: loaded.length, tofu_like_system: [], tofu_with_site: [], no_ink: []};
  for (const stack of [body, mono]) {
    const tofu = draw('\\uE000', without(stack)).s;  // each stack's own box (DejaVu Sans's is not the Mono's)
    for (const ch of chars) {
      const site = draw(ch, stack), fallback = draw(ch, without(stack));
      if (fallback.s !== tofu) result.tofu_like_system.push(ch);  // a system font drew it: not isolated
      if (site.s === tofu || site.s === fallback.s) result.tofu_with_site.push(ch);
      if (site.ink < 10) result.no_ink.push(ch);
    }
  }
  return result;
}"""

# Marks the elements whose own text has CJK characters (article, sidebars, header) for the font probe.
MARK_CJK_JS = """(pattern) => {
  // Open every <details> (a prediction's answer): its text must render with the web font once a learner opens it.
  document.querySelectorAll('details').forEach((d) => { d.open = true; });
  const re = new RegExp(pattern, 'u'); let n = 0;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    const el = t.parentElement;
    if (!el || el.closest('script, style') || !re.test(t.data) || el.hasAttribute('data-cjk-probe')) continue;
    if (!el.getClientRects().length) continue;  // not rendered (a collapsed sidebar section)
    el.setAttribute('data-cjk-probe', String(n++));
  }
  return n;
}"""


def cjk_pages(fonts) -> dict[str, str]:
    """Built page -> the CJK characters it shows."""
    out = {}
    for rel in built_pages():
        chars = fonts.characters_in((SITE / rel).read_text(encoding="utf-8"))
        if chars:
            out[rel] = chars
    return out


def test_chinese_text_renders_with_the_web_font_not_as_boxes(site: str, browser) -> None:
    """Issue 18 item 7: on Debian + Chromium without a CJK font the Chinese body text showed as empty boxes.
    Every CJK character of every page must be drawn by the site's web font, in the body and the code font,
    and every rendered element with Chinese text must use it (Chromium's own report of the fonts it used)."""
    fonts = load_script("subset_site_font")
    pages = cjk_pages(fonts)
    assert pages, "no page shows Chinese text: nothing to check"
    problems = []
    page = browser.new_page(viewport={"width": WIDTHS["desktop"], "height": 1000})
    cdp = page.context.new_cdp_session(page)
    for rel, chars in pages.items():
        page.goto(site + rel, wait_until="load", timeout=PAGE_MS)
        r = page.evaluate(GLYPHS_JS, {"chars": list(chars), "family": fonts.FAMILY})
        if not r["faces"] or "loaded" not in r["faces"]:
            problems.append(f"{rel}: the web font {fonts.FAMILY!r} is not loaded (faces: {r['faces']}; "
                            f"body font: {r['body']}; {r['error'] or 'no error'})")
        if r["tofu_like_system"]:
            problems.append(f"{rel}: a system font drew {''.join(r['tofu_like_system'][:20])!r}: the test "
                            "browser is not isolated from the machine's CJK fonts")
        if r["tofu_with_site"]:
            problems.append(f"{rel}: drawn as boxes with the site's fonts ({r['body']} / {r['mono']}): "
                            f"{''.join(sorted(set(r['tofu_with_site'])))!r}")
        if r["no_ink"]:
            problems.append(f"{rel}: drawn as nothing: {''.join(sorted(set(r['no_ink'])))!r}")
        marked = page.evaluate(MARK_CJK_JS, fonts.CJK_PATTERN)
        cdp.send("DOM.enable")
        cdp.send("CSS.enable")
        root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        nodes = cdp.send("DOM.querySelectorAll", {"nodeId": root, "selector": "[data-cjk-probe]"})["nodeIds"]
        assert len(nodes) == marked, (rel, len(nodes), marked)
        for node in nodes:
            used = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
            if not any(f["familyName"] == fonts.FAMILY and f.get("isCustomFont") for f in used):
                html = cdp.send("DOM.getOuterHTML", {"nodeId": node})["outerHTML"]
                problems.append(f"{rel}: rendered with {[f['familyName'] for f in used]}, not the web font: "
                                f"{html[:160]}")
                break
    page.goto(site + "04_failure-scenarios.html", wait_until="load", timeout=PAGE_MS)
    block = page.locator("pre", has_text=re.compile("[\u4e00-\u9fff]")).first
    block.scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, -150)")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "site-04-chinese.png"))
    page.close()
    assert not problems, "\n".join(problems[:40])


# Every pre, table, output area and image in the article: clipped if its content is wider than its box, or it
# reaches past the article, with no scroll container (overflow-x auto/scroll) between it and the article.
CLIPPED_JS = """() => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  const edge = article.getBoundingClientRect();
  const scrolls = el => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  const clipped = [];
  for (const el of article.querySelectorAll('pre, table, .output, .cell_output, img, .highlight, figure')) {
    if (!el.getClientRects().length) continue;
    const r = el.getBoundingClientRect();
    const wider = el.scrollWidth > el.clientWidth + 1 && !['IMG', 'TABLE'].includes(el.tagName);
    const past = r.right > edge.right + 1 || r.left < edge.left - 1;
    if (!wider && !past) continue;
    let ok = false;
    for (let a = el; a && a !== article; a = a.parentElement) {
      if (scrolls(a)) {
        const ar = a.getBoundingClientRect();
        ok = ar.right <= edge.right + 1 && ar.left >= edge.left - 1;
        break;
      }
    }
    if (!ok) clipped.push(`${el.tagName.toLowerCase()}.${el.className} (${Math.round(r.width)} px, content ` +
                          `${el.scrollWidth} px, article ${Math.round(edge.width)} px): ` +
                          el.textContent.trim().slice(0, 60));
  }
  const page = document.documentElement.scrollWidth > window.innerWidth + 1
    ? `the page scrolls sideways: ${document.documentElement.scrollWidth} px in a ${window.innerWidth} px window` : null;
  return {clipped, page, article: Math.round(edge.width)};
}"""


@pytest.mark.parametrize("device", list(WIDTHS))
def test_nothing_is_clipped_without_a_scrollbar(site: str, browser, device: str) -> None:
    """Issue 18 item 7: in a content column of about 680 px, code lines and wide tables were cut off (02's size
    table lost its "approx tokens" column). Wider than its box means a scroll container, at both widths."""
    width = WIDTHS[device]
    page = browser.new_page(viewport={"width": width, "height": 900})
    problems, columns = [], {}
    for rel in built_pages():
        if rel in ("search.html", "genindex.html"):
            continue
        page.goto(site + rel, wait_until="load", timeout=PAGE_MS)
        r = page.evaluate(CLIPPED_JS)
        columns[rel] = r["article"]
        problems += [f"{rel} at {width} px: {c}" for c in r["clipped"]]
        if r["page"]:
            problems.append(f"{rel} at {width} px: {r['page']}")
    page.goto(site + "02_three-tool-protocol.html", wait_until="load", timeout=PAGE_MS)
    table = page.locator("pre", has_text="approx tokens").first
    table.scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, -200)")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / ("site-02.png" if device == "desktop" else f"site-02-{device}.png")))
    if device == "desktop":  # the size table fits the column, no scrolling needed
        fits = table.evaluate("el => [el.scrollWidth, el.clientWidth]")
        assert fits[0] <= fits[1], f"02's size table needs {fits[0]} px in a {fits[1]} px box at {width} px"
    page.close()
    print(f"\n{device}: article column {min(columns.values())}-{max(columns.values())} px")
    assert not problems, "\n".join(problems[:40]) + (f"\n... {len(problems) - 40} more" if len(problems) > 40 else "")


def test_search_finds_a_term_and_opens_a_result(site: str, browser) -> None:
    """Issue 18 item 7: the built-in search must work: search from the sidebar's search field, get results,
    follow the first one to a page that has the term."""
    page = browser.new_page(viewport={"width": WIDTHS["desktop"], "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(site + "index.html", wait_until="load", timeout=PAGE_MS)
    page.locator(".bd-sidebar-primary .search-button-field").first.click()
    field = page.locator("#pst-search-dialog input[name=q]")
    field.wait_for(state="visible", timeout=PAGE_MS)
    field.fill(SEARCH_TERM)
    with page.expect_navigation(wait_until="load", timeout=PAGE_MS):
        field.press("Enter")
    assert "search.html" in page.url and f"q={SEARCH_TERM}" in page.url, page.url
    results = page.locator("#search-results ul.search li a")
    results.first.wait_for(state="visible", timeout=PAGE_MS)
    page.locator("#search-results", has_text=re.compile(r"found \d+ page")).wait_for(timeout=PAGE_MS)
    count = results.count()
    assert count >= 3, f"only {count} results for {SEARCH_TERM!r}"
    first_title = results.first.inner_text()
    with page.expect_navigation(wait_until="load", timeout=PAGE_MS):
        results.first.click()
    status, _ = fetch(page.url.split("?")[0])
    assert status == 200, page.url
    assert SEARCH_TERM in page.locator("article.bd-article").inner_text().lower(), page.url
    highlighted = page.locator("article.bd-article span.highlighted")
    highlighted.first.wait_for(timeout=PAGE_MS)
    assert highlighted.count() >= 1
    page.close()
    assert not errors, errors
    print(f"\nsearch {SEARCH_TERM!r}: {count} results, the first ({first_title!r}) opened {page.url}")


#: Issue 34 item 5: Chinese terms the corpus uses everywhere (批处理 "batch processing", 上限 "upper limit",
#: 单批上限 "per-batch limit", the answer's phrase in notebook 01) and two English ones.
SEARCH_TERMS = ["批处理", "上限", "单批上限", "manifest", "ledger"]


class ArticleText(HTMLParser):
    """The text of a page's ``<article class="bd-article">``: the page's own content, which Sphinx indexes (the
    sidebar, header and the previous / next links around it hold other pages' titles), without scripts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0  # open elements inside the article (0: outside it)
        self.skip = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth:
            self.depth += tag not in VOID_ELEMENTS
            self.skip += tag in ("script", "style")
            if tag == "img" and not self.skip:  # Sphinx indexes an image's alt text too (the Figures page's)
                self.parts.append(" " + (dict(attrs).get("alt") or "") + " ")
        elif tag == "article" and "bd-article" in (dict(attrs).get("class") or "").split():
            self.depth = 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)  # <img ... />: opens nothing, so it closes nothing either
        if tag not in VOID_ELEMENTS:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            if tag in ("script", "style") and self.skip:
                self.skip -= 1
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth and not self.skip:
            self.parts.append(data)


VOID_ELEMENTS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


def article_texts() -> dict[str, str]:
    """Every page the search index lists (built_pages() but search.html and genindex.html), to its article text."""
    texts = {}
    for rel in built_pages():
        if rel in ("search.html", "genindex.html"):
            continue
        parser = ArticleText()
        parser.feed((SITE / rel).read_text(encoding="utf-8"))
        texts[rel] = "".join(parser.parts)
    return texts


def pages_holding(term: str, texts: dict[str, str]) -> set[str]:
    """The pages whose text holds ``term``: Chinese anywhere (no spaces between words); an English word as a word,
    any case, also with a suffix as Sphinx's English stemmer reads it (manifest, manifests, Manifest's)."""
    if re.search(r"[a-z]", term, re.I):
        pattern = re.compile(rf"(?<![\w]){re.escape(term)}(?:s|es|'s|ed|ing)?(?![\w])", re.I)
        return {rel for rel, text in texts.items() if pattern.search(text)}
    return {rel for rel, text in texts.items() if term in text}


# The search page's results once Sphinx's searchtools.js has listed them all: the pages (without #anchors).
RESULT_PAGES_JS = """() => {
  const status = document.querySelector('#search-results .search-summary');
  if (!status || !/found|did not match/.test(status.textContent)) return null;
  return Array.from(document.querySelectorAll('#search-results ul.search li > a'))
    .map(a => new URL(a.href).pathname);
}"""


@pytest.mark.parametrize("term", SEARCH_TERMS)
def test_search_finds_every_page_that_holds_the_term(site: str, browser, term: str) -> None:
    """Issue 34 item 5: 批处理, on almost every page, found 1 page; 上限 9 of the 23 pages holding it; 单批上限 missed
    notebook 01 (Sphinx's English search took a run of Chinese for one word). The search page, as the search box
    opens it, must list exactly the pages whose text holds the term: Chinese and English alike."""
    expected = pages_holding(term, article_texts())
    assert expected, f"no built page holds {term!r}: choose another term"
    page = browser.new_page(viewport={"width": WIDTHS["desktop"], "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(site + "search.html?q=" + urllib.parse.quote(term), wait_until="load", timeout=PAGE_MS)
    handle = page.wait_for_function(RESULT_PAGES_JS, timeout=PAGE_MS, polling=200)
    prefix = urlsplit(site).path
    found = {path[len(prefix):] for path in handle.json_value()}
    page.close()
    assert not errors, errors
    print(f"\nsearch {term!r}: {len(found)} pages found, {len(expected)} pages hold it")
    assert found == expected, (f"{term!r}: {len(found)} pages found, {len(expected)} hold it; missed "
                               f"{sorted(expected - found)}, extra {sorted(found - expected)}")


def test_search_splits_a_query_in_the_browser_as_the_index_was_split(site: str, browser) -> None:
    """The index (site/cjk_search.py's Python split) and the query (its splitQuery in the browser) cut text the
    same way, or a term the index holds could not be found."""
    spec = importlib.util.spec_from_file_location("cjk_search", ROOT / "site" / "cjk_search.py")
    cjk_search = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cjk_search)
    split = cjk_search.SearchEnglishAndChinese({}).split
    samples = [*SEARCH_TERMS, "单批上限为200条，超时设为30秒。", "read_evidence 读取 Manifest's ledger", "猫", "ＡＢ２０ カタカナ 𠀀𠀁"]
    page = browser.new_page()
    page.goto(site + "search.html", wait_until="load", timeout=PAGE_MS)
    in_browser = page.evaluate("samples => samples.map(s => splitQuery(s))", samples)
    page.close()
    assert in_browser == [split(s) for s in samples]
    assert split("单批上限为200条") == ["单", "批", "上", "限", "为", "单批", "批上", "上限", "限为", "200", "条"]


def test_no_placeholder_repository_slug_in_the_built_site() -> None:
    """Issue 18 item 7: the Binder, Colab and GitHub links pointed at a placeholder repository; links are built
    only for a configured repository (EVIDENCE_SITE_REPOSITORY) and no built file may name the placeholder."""
    build_site = load_script("build_site")
    slugs = build_site.placeholder_slugs(build_site.site_repository())  # [] while pyproject names none
    found = build_site.files_naming(SITE, slugs) if slugs else []
    assert not found, f"the placeholder repository {slugs} appears in: {found[:10]}"
    if build_site.site_repository() is None:
        for rel in built_pages():
            text = (SITE / rel).read_text(encoding="utf-8")
            for host in ("mybinder.org/v2/gh/", "colab.research.google.com/github/"):
                assert host not in text, f"{rel}: a link to {host} without a configured repository"


def test_every_prediction_answer_is_folded_until_its_toggle_is_opened(site: str, browser) -> None:
    """Issue 34 item 2: under every prediction (scripts/predictions.py's rule) the answer's output is drawn in a
    closed "Show the answer" toggle: not visible until clicked, visible after. Notebooks whose committed answers are
    not folded yet fail here and in tests/test_predictions.py (fix: python scripts/predictions.py)."""
    import nbformat

    predictions = load_script("predictions")
    checked = 0
    for stem in series_stems():
        nb = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
        expected = len(predictions.predictions(nb))
        if not expected:
            continue
        page = browser.new_page(viewport={"width": WIDTHS["desktop"], "height": 900})
        page.goto(site + f"{stem}.html", wait_until="load", timeout=PAGE_MS)
        toggles = page.locator("details.hide.below-input")
        assert toggles.count() == expected, f"{stem}: {toggles.count()} folded outputs for {expected} predictions"
        for i in range(expected):
            toggle = toggles.nth(i)
            output = toggle.locator(".cell_output")
            assert toggle.get_attribute("open") is None and not output.is_visible(), f"{stem}: answer {i} shows"
            assert toggle.locator("summary").inner_text().strip().startswith("Show the answer")
            toggle.locator("summary").click()
            assert output.is_visible(), f"{stem}: answer {i} stays hidden after its toggle is opened"
            checked += 1
        page.close()
    assert checked >= 7, f"only {checked} predictions checked"


# Every code cell's <pre> (the input, not its output) of a page: [cells, those whose content is wider than the box].
CODE_OVERFLOW_JS = """() => {
  const pres = Array.from(document.querySelectorAll('article.bd-article div.cell_input pre'));
  return [pres.length, pres.filter(p => p.scrollWidth > p.clientWidth + 1).map(p => p.textContent.slice(0, 60))];
}"""


def test_notebook_code_fits_the_column_at_a_desktop_width(site: str, browser) -> None:
    """A fresh-eyes review: at 1280 px, 69 of the 85 code cells of 01, 02, 06, 08 and 13 needed sideways scrolling
    (the column holds about 95 characters of code). Code lines wrap inside the column: none overflows."""
    page = browser.new_page(viewport={"width": WIDTHS["desktop"], "height": 900})
    wide, total = [], 0
    for prefix in ("01_", "02_", "06_", "08_", "13_"):
        for path in (ROOT / "notebooks").glob(f"{prefix}*.ipynb"):
            page.goto(site + path.stem + ".html", wait_until="load", timeout=PAGE_MS)
            cells, over = page.evaluate(CODE_OVERFLOW_JS)
            total += cells
            wide += [f"{path.stem}: {text!r}" for text in over]
    page.locator("div.cell_input pre").first.scroll_into_view_if_needed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "site-13-code.png"))
    page.close()
    assert total > 50, f"only {total} code cells found in the five notebooks"
    assert not wide, f"{len(wide)} of {total} code cells overflow at 1280 px:\n" + "\n".join(wide[:20])


# A fresh-eyes review (issue 34, the site at B+): code wrapped inside a 752 px column with no continuation indent,
# 08x's wide outputs scrolled sideways at 1280 px, search snippets began with page chrome and ranked the workshop's
# solutions above the learners' pages, figures were blurred on a HiDPI screen, and the navigation line showed
# "← (start)" / "(end) →" as text.

# The article's content box (its width without padding) and whether the right-hand Contents column shows.
COLUMN_JS = """() => {
  const a = document.querySelector('article.bd-article'), cs = getComputedStyle(a);
  const toc = document.querySelector('#pst-secondary-sidebar');
  const r = toc.getBoundingClientRect();
  return {content: a.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight),
          tocColumn: getComputedStyle(toc).visibility !== 'hidden' && r.width > 0 && r.left < innerWidth};
}"""


def test_the_content_column_is_wide_at_1280_px_and_the_contents_open_from_a_button(site: str, browser) -> None:
    """At 1280 px the article was 752 px wide beside a 13rem Contents column. Below 1440 px the Contents are the
    drawer the header's Contents button opens (as on a tablet), and the article gets the width: at least 900 px.
    From 1440 px the Contents column is back, and at 1600 px the article is no narrower than at 1280 px."""
    page = browser.new_page(viewport={"width": WIDTHS["desktop"], "height": 800})
    page.goto(site + "02_three-tool-protocol.html", wait_until="load", timeout=PAGE_MS)
    at_1280 = page.evaluate(COLUMN_JS)
    toc_link = page.locator("nav.page-toc a.nav-link").first
    assert not at_1280["tocColumn"] and not toc_link.is_visible()
    assert at_1280["content"] >= 900, f"the article's content is {at_1280['content']} px wide at 1280 px"
    page.locator(".secondary-toggle").filter(visible=True).first.click()
    toc_link.wait_for(state="visible", timeout=PAGE_MS)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "site-contents-drawer-1280.png"))
    page.keyboard.press("Escape")
    toc_link.wait_for(state="hidden", timeout=PAGE_MS)
    page.set_viewport_size({"width": 1600, "height": 800})
    at_1600 = page.evaluate(COLUMN_JS)
    toc_shows = toc_link.is_visible()
    page.close()
    assert at_1600["tocColumn"] and toc_shows, at_1600
    assert at_1600["content"] >= at_1280["content"], f"a 1600 px screen gets a narrower article: {at_1600}"
    print(f"\narticle content: {at_1280['content']:.0f} px at 1280 px, {at_1600['content']:.0f} px at 1600 px")


# Every code-cell line that wraps: its indentation (characters), where its text starts and where its continuation
# rows start (px from the pre's content edge), in characters of the pre's font.
WRAPPED_LINES_JS = """() => {
  const out = [];
  for (const pre of document.querySelectorAll('article.bd-article div.cell_input pre')) {
    const probe = document.createElement('span'); probe.textContent = '0'.repeat(20);
    pre.appendChild(probe); const ch = probe.getBoundingClientRect().width / 20; probe.remove();
    const left = pre.getBoundingClientRect().left + parseFloat(getComputedStyle(pre).paddingLeft);
    for (const line of pre.querySelectorAll('span.code-line')) {
      const text = line.textContent, indent = text.length - text.trimStart().length;
      const range = document.createRange(); range.selectNodeContents(line);
      const rows = new Map();
      for (const r of range.getClientRects()) {
        if (r.width < 1) continue;
        const top = Math.round(r.top);
        rows.set(top, Math.min(rows.has(top) ? rows.get(top) : Infinity, r.left));
      }
      if (rows.size < 2) continue;
      const starts = [...rows.entries()].sort((a, b) => a[0] - b[0]).map(e => (e[1] - left) / ch);
      out.push({text: text.slice(0, 60), indent, first: starts[0], continuations: starts.slice(1)});
    }
  }
  return out;
}"""


@pytest.mark.parametrize("device", list(WIDTHS))
def test_a_wrapped_code_line_continues_with_a_hanging_indent(site: str, browser, device: str) -> None:
    """A wrapped code line's continuation started at the left edge, like the next statement. Every continuation
    row of a wrapped line starts at least 3 characters right of where that line's own text starts (its
    indentation), at both widths; notebook 13 has such lines at both."""
    page = browser.new_page(viewport={"width": WIDTHS[device], "height": 900})
    wrapped = []
    for stem in ("13_mcp-server", "02_three-tool-protocol", "08_real-documents"):
        if (ROOT / "notebooks" / f"{stem}.ipynb").exists():
            page.goto(site + f"{stem}.html", wait_until="load", timeout=PAGE_MS)
            wrapped += page.evaluate(WRAPPED_LINES_JS)
    page.goto(site + "13_mcp-server.html", wait_until="load", timeout=PAGE_MS)
    page.locator("span.code-line", has_text="batch limit").first.scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, -200)")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"site-hanging-indent-{device}.png"))
    page.close()
    assert wrapped, f"no code line wraps at {WIDTHS[device]} px: nothing to check"
    flat = [w for w in wrapped if min(w["continuations"]) < w["indent"] + 3 - 0.25]
    print(f"\n{device}: {len(wrapped)} wrapped code lines, each continuation indented")
    assert not flat, f"{len(flat)} of {len(wrapped)} wrapped lines continue without a hanging indent: {flat[:5]}"


CODE_TEXT_JS = "() => Array.from(document.querySelectorAll('article.bd-article div.cell_input pre')).map(p => p.innerText)"


def test_code_cells_keep_their_exact_text_when_their_lines_are_indented(site: str, browser) -> None:
    """The hanging indent cuts each code block into one element per line (site/_static/evidence.js): what a reader
    selects and copies (innerText) is still the cell's source, line for line, in every notebook."""
    import nbformat

    page = browser.new_page(viewport={"width": WIDTHS["desktop"], "height": 900})
    problems, checked = [], 0
    for stem in series_stems():
        nb = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
        sources = [c.source.strip("\n") for c in nb.cells if c.cell_type == "code" and c.source.strip()]
        page.goto(site + f"{stem}.html", wait_until="load", timeout=PAGE_MS)
        shown = [t.strip("\n") for t in page.evaluate(CODE_TEXT_JS)]
        checked += len(shown)
        if shown != sources:
            diff = next(((a, b) for a, b in zip(shown, sources) if a != b), (len(shown), len(sources)))
            problems.append(f"{stem}: the page's code differs from the notebook's: {diff!r}"[:400])
    page.close()
    assert checked > 100 and not problems, "\n".join(problems[:10])


# Every output <pre>: its longest line in character cells (CJK and fullwidth count 2), and whether it overflows
# its box, which must then be its own scroll container inside the article.
OUTPUTS_JS = """() => {
  const wide = /[\\u1100-\\u115F\\u2E80-\\uA4CF\\uAC00-\\uD7A3\\uF900-\\uFAFF\\uFE30-\\uFE4F\\uFF00-\\uFF60\\uFFE0-\\uFFE6]/u;
  const cells = s => Array.from(s).reduce((n, c) => n + (wide.test(c) ? 2 : 1), 0);
  const article = document.querySelector('article.bd-article').getBoundingClientRect();
  return Array.from(document.querySelectorAll('article.bd-article div.cell_output pre')).map(p => {
    const r = p.getBoundingClientRect();
    return {longest: Math.max(...p.textContent.split('\\n').map(cells)), over: p.scrollWidth > p.clientWidth + 1,
            scrolls: ['auto', 'scroll'].includes(getComputedStyle(p).overflowX),
            inside: r.left >= article.left - 1 && r.right <= article.right + 1,
            font: parseFloat(getComputedStyle(p).fontSize), text: p.textContent.trim().slice(0, 50)};
  });
}"""
FITS_AT_1280 = 120  # characters of an output line that fit the column at 1280 px without scrolling


def test_wide_outputs_fit_at_1280_px_or_scroll_inside_their_own_box(site: str, browser) -> None:
    """08x's tables scrolled sideways at 1280 px. Outputs use a smaller monospace than code; at 1280 px every
    output whose lines are at most 120 characters fits its box, and a wider one scrolls inside its own box, within
    the article (the page never scrolls sideways: test_nothing_is_clipped_without_a_scrollbar)."""
    page = browser.new_page(viewport={"width": WIDTHS["desktop"], "height": 900})
    problems, outputs, fitting, scrolling = [], 0, 0, 0
    for stem in series_stems():
        page.goto(site + f"{stem}.html", wait_until="load", timeout=PAGE_MS)
        for o in page.evaluate(OUTPUTS_JS):
            outputs += 1
            if o["longest"] <= FITS_AT_1280 and o["over"]:
                problems.append(f"{stem}: a {o['longest']}-character output does not fit: {o['text']!r}")
            if o["over"] and not (o["scrolls"] and o["inside"]):
                problems.append(f"{stem}: a wide output is not its own scroll box inside the article: {o['text']!r}")
            fitting += not o["over"]
            scrolling += o["over"]
    code_font = page.evaluate("parseFloat(getComputedStyle(document.querySelector('div.cell_input pre')).fontSize)")
    output_font = page.evaluate("parseFloat(getComputedStyle(document.querySelector('div.cell_output pre')).fontSize)")
    page.goto(site + "08x_evaluation-grid.html", wait_until="load", timeout=PAGE_MS)
    page.locator("div.cell_output pre", has_text="median B").first.scroll_into_view_if_needed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "site-08x-outputs-1280.png"))
    page.close()
    print(f"\n{outputs} outputs at 1280 px: {fitting} fit, {scrolling} scroll in their own box "
          f"(outputs {output_font:g} px, code {code_font:g} px)")
    assert output_font < code_font, (output_font, code_font)
    assert not problems, "\n".join(problems[:20])


# The search page's results once listed: each result's page (path) and its snippet (p.context) as shown.
SEARCH_RESULTS_JS = """() => {
  const status = document.querySelector('#search-results .search-summary');
  if (!status || !/found|did not match/.test(status.textContent)) return null;
  const items = Array.from(document.querySelectorAll('#search-results ul.search > li'));
  if (items.some(li => !li.querySelector('p.context'))) return null;  // snippets still being fetched
  return items.map(li => ({page: new URL(li.querySelector('a').href).pathname,
                           snippet: li.querySelector('p.context').textContent}));
}"""
CHROME_WORDS = ("Settings", "Light Dark", "Toggle secondary sidebar", "Download this page", "(start)", "(end)")


@pytest.mark.parametrize("term", ["ledger", "budget", "citation"])
def test_search_snippets_show_page_content_and_learner_pages_rank_above_solutions(site: str, browser,
                                                                                  term: str) -> None:
    """Each snippet began with the page's chrome ("Settings Light Dark ..."); a workshop solution ranked above
    its student copy and the series for the same words. Each snippet is the article's text (none of the header's
    button labels or the navigation line), and every solution ranks below every learner's page (series, workshop
    copies) that holds the term (site/search_scorer.js)."""
    page = browser.new_page(viewport={"width": WIDTHS["desktop"], "height": 900})
    page.goto(site + "search.html?q=" + urllib.parse.quote(term), wait_until="load", timeout=PAGE_MS)
    results = page.wait_for_function(SEARCH_RESULTS_JS, timeout=PAGE_MS, polling=200).json_value()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"site-search-{term}.png"))
    page.close()
    prefix = urlsplit(site).path
    ranked = [r["page"][len(prefix):].removesuffix(".html") for r in results]
    chrome = [f"{p}: {r['snippet'][:80]!r}" for p, r in zip(ranked, results)
              if any(w in r["snippet"] for w in CHROME_WORDS)]
    assert not chrome, f"{term!r}: snippets with page chrome: {chrome[:5]}"
    solutions = [i for i, p in enumerate(ranked) if p.startswith("exercises/solutions/")]
    learners = [i for i, p in enumerate(ranked) if re.match(r"(\d\dx?_|exercises/workshop_part)", p)]
    assert solutions and learners, f"{term!r} finds no solution or no learner page: {ranked}"
    assert max(learners) < min(solutions), f"{term!r}: a solution ranks above a learner's page: {ranked}"
    print(f"\nsearch {term!r}: {len(ranked)} results; first {ranked[:3]}; solutions from rank {min(solutions) + 1}")


# The navigation line (the notebooks' first cell, scripts/nbnav.py), as the site shows it: its text and links.
NAV_JS = """() => {
  const nav = document.querySelector('article.bd-article .site-nav');
  return nav ? {text: nav.innerText.trim(), links: Array.from(nav.querySelectorAll('a')).map(a => a.textContent.trim())}
             : null;
}"""


def test_the_navigation_line_links_previous_and_next_with_no_placeholders(site: str, browser) -> None:
    """The navigation line showed "← (start)" and "(end) →" as text. On the site the first page of a group has no
    previous link, the last no next one; every other page has both, and every arrow is part of a link."""
    build_site = load_script("build_site")
    students, solutions = build_site.workshop()
    groups = [build_site.series()[1:], students, solutions]
    page = browser.new_page(viewport={"width": WIDTHS["desktop"], "height": 900})
    problems, checked = [], 0
    for group in groups:
        for i, path in enumerate(group):
            rel = path.relative_to(build_site.NOTEBOOKS).with_suffix(".html").as_posix()
            page.goto(site + rel, wait_until="load", timeout=PAGE_MS)
            nav = page.evaluate(NAV_JS)
            if nav is None:
                problems.append(f"{rel}: no navigation line")
                continue
            checked += 1
            prev = [t for t in nav["links"] if t.startswith("←")]
            nxt = [t for t in nav["links"] if t.endswith("→")]
            arrows = nav["text"].count("←") + nav["text"].count("→")
            if "(start)" in nav["text"] or "(end)" in nav["text"]:
                problems.append(f"{rel}: {nav['text']!r}")
            if len(prev) != (i > 0) or len(nxt) != (i + 1 < len(group)) or arrows != len(prev) + len(nxt):
                problems.append(f"{rel} ({i + 1} of {len(group)}): {nav['text']!r}, links {nav['links']}")
    page.goto(site + "01_baseline-dump.html", wait_until="load", timeout=PAGE_MS)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "site-01-navigation.png"), clip={"x": 0, "y": 0, "width": 1280, "height": 200})
    page.close()
    assert checked > 20 and not problems, "\n".join(problems[:20])


def test_the_figures_page_draws_each_figure_sharp_at_2x(site: str, browser) -> None:
    """The figures were 100 dpi PNGs, blurred on a HiDPI screen. The Figures page draws each from its SVG (or, for
    a raster, from at least twice its shown width in pixels), and still offers the PNG and the SVG to download."""
    page = browser.new_page(viewport={"width": WIDTHS["desktop"], "height": 900}, device_scale_factor=2)
    page.goto(site + "figures.html", wait_until="load", timeout=PAGE_MS)
    images = page.evaluate(BROKEN_IMAGES_JS)
    shown = page.evaluate("""() => Array.from(document.querySelectorAll('article.bd-article img')).map(i =>
        ({src: i.currentSrc, natural: i.naturalWidth, shown: i.getBoundingClientRect().width}))""")
    downloads = page.evaluate("() => Array.from(document.querySelectorAll('a.download')).map(a => a.href)")
    page.locator("article.bd-article img").first.scroll_into_view_if_needed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "site-figures-2x.png"))
    page.close()
    pngs = sorted((ROOT / "figures").glob("*.png"))
    assert len(shown) == len(pngs) and not images["broken"], (shown, images)
    blurred = [i for i in shown if not i["src"].endswith(".svg") and i["natural"] < 2 * i["shown"]]
    assert not blurred, f"figures drawn from fewer than 2 pixels per CSS pixel: {blurred}"
    for png in pngs:
        assert any(d.endswith(png.name) for d in downloads), f"no PNG download for {png.name}"
