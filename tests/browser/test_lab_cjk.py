"""JupyterLab draws the series' Chinese with the project's own font on a machine without a CJK font (issue 26 item 8),
and what a learner types too (issue 34 item 6).

Without a system CJK font JupyterLab showed every Chinese character of the corpus as an empty box. ``make lab`` now
starts JupyterLab with ``--LabApp.custom_css=True`` and a Jupyter config folder written by ``lab/config.py``, whose
``custom/`` holds ``lab/custom/custom.css`` (an ``@font-face`` for the CJK blocks, first in the theme's font stacks)
and the lab's WOFF2 subset of Noto Sans CJK SC (``scripts/subset_lab_font.py``). It was the website's subset, the
corpus's ~900 characters only: a learner's own query (猫, 世, 今, 散, 吧) showed as boxes. It now holds GB2312's
6,763 hanzi, CJK punctuation, fullwidth forms and the corpus.

The browser test starts JupyterLab that way on loopback over a *copy* of notebook 03 (markdown, code cells and
outputs with Chinese), opens it in Debian's Chromium driven by Playwright, with a fontconfig that leaves out every
font that has Chinese glyphs (so it sees what a machine without a CJK font sees, even where fonts-noto-cjk is
installed), and checks: the font face loaded, the computed font stacks start with it, Chromium's own report of the
fonts it used for each element with Chinese text names it (markdown, code editor, outputs), and no character is
drawn as the fallback's box. Screenshot: ``build/screenshots/lab-cjk.png``. A second test types Chinese into a new
notebook's code cell and runs it: the editor and the output draw it with the project's font, and so would they
every GB2312 hanzi (``build/screenshots/lab-cjk-typed.png``).

Opt-in like test_lab_widgets.py: ``EVIDENCE_BROWSER_TEST=1`` (``make test-browser``). The static checks (the
Makefile starts the lab this way; the CSS serves the lab font's family for the site's CJK ranges; the lab font holds GB2312) always run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "03_evidence-and-citations.ipynb"
SCREENSHOT = ROOT / "build" / "screenshots" / "lab-cjk.png"
TYPED_SCREENSHOT = ROOT / "build" / "screenshots" / "lab-cjk-typed.png"
SCRATCH = "typed.ipynb"
CHROMIUM = Path(os.environ.get("EVIDENCE_CHROMIUM", "/usr/bin/chromium"))
TOKEN = "evidence-browser-test"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--no-first-run", "--mute-audio"]
SERVER_START_S = 60
PAGE_MS = 90_000
#: Where fontconfig looks for fonts on Debian; every font there with a Chinese glyph is left out for the browser.
FONT_DIRS = [Path("/usr/share/fonts"), Path("/usr/local/share/fonts"), Path.home() / ".fonts",
             Path.home() / ".local" / "share" / "fonts"]
FONT_SUFFIXES = {".ttf", ".otf", ".ttc", ".otc", ".woff", ".woff2"}
#: A quiet session: no news pop-up, never saved, every cell in the DOM.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}
#: Where Chinese shows in a notebook, as CSS selectors: each must have some, drawn by the project's font.
REGIONS = {"markdown": ".jp-MarkdownOutput", "code": ".jp-InputArea-editor .cm-content",
           "output": ".jp-OutputArea-output"}

browser_test = pytest.mark.skipif(
    os.environ.get("EVIDENCE_BROWSER_TEST") != "1",
    reason="real-browser test is opt-in: set EVIDENCE_BROWSER_TEST=1 (needs Debian chromium at /usr/bin/chromium "
           "and playwright; run scripts/install_browser.sh, or `make test-browser`)",
)


def load(path: Path) -> ModuleType:
    """A project script as a module (the test uses its rules and paths, never a copy of them)."""
    spec = importlib.util.spec_from_file_location(f"_lab_cjk_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LAB_CONFIG = load(ROOT / "lab" / "config.py")
SITE_FONT = load(ROOT / "scripts" / "subset_site_font.py")
sys.path.insert(0, str(ROOT / "scripts"))  # subset_lab_font imports subset_site_font by name
LAB_FONT = load(ROOT / "scripts" / "subset_lab_font.py")
FAMILY = LAB_FONT.FAMILY
#: Characters a learner typed in the review, none of them in the corpus (the website's font lacked them).
LEARNER_TYPED = "猫世今散吧"


def notebook_cjk() -> set[str]:
    """Every CJK character notebook 03 shows (sources and outputs)."""
    return set(SITE_FONT.CJK.findall(NOTEBOOK.read_text(encoding="utf-8")))


# -- what `make lab` does, checked without a browser ---------------------------------------------------------------

def lab_recipe() -> str:
    """The Makefile's ``lab:`` recipe (its command lines)."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    match = re.search(r"^lab:.*\n((?:\t.*\n)+)", text, re.M)
    assert match, "the Makefile has no lab target"
    return match.group(1)


def test_make_lab_starts_jupyterlab_with_the_projects_font_css():
    """`make lab` writes the config folder with lab/config.py and starts JupyterLab on it with custom CSS on."""
    recipe = lab_recipe()
    assert "lab/config.py $(LAB_CONFIG)" in recipe
    assert 'JUPYTER_CONFIG_DIR="$(abspath $(LAB_CONFIG))"' in recipe
    assert "--LabApp.custom_css=True" in recipe


def test_lab_css_serves_the_lab_font_for_every_cjk_block(tmp_path):
    """The lab's @font-face serves the lab font (its family, the site's CJK ranges), first in the code, content and
    UI stacks, and lab/config.py puts the CSS, the font and its licence side by side in custom/."""
    css = LAB_CONFIG.CSS.read_text(encoding="utf-8")
    face = re.search(r"@font-face\s*{(.*?)}", css, re.S).group(1)
    assert f'font-family: "{FAMILY}"' in face
    assert " ".join(re.search(r"unicode-range:([^;]*);", face).group(1).split()) == SITE_FONT.unicode_range()
    assert f'url("{LAB_FONT.FONT.name}")' in face and LAB_CONFIG.FONT == LAB_FONT.FONT
    for variable in ("--jp-code-font-family", "--jp-content-font-family", "--jp-ui-font-family"):
        assert re.search(rf'{variable}:\s*"{FAMILY}",', css), variable
    custom = LAB_CONFIG.prepare(tmp_path / "config") / "custom"
    assert sorted(p.name for p in custom.iterdir()) == sorted(p.name for p in LAB_CONFIG.sources())
    assert (custom / LAB_FONT.FONT.name).read_bytes() == LAB_FONT.FONT.read_bytes()
    assert (custom / "OFL.txt").read_bytes() == (SITE_FONT.FONT_DIR / "OFL.txt").read_bytes()


def test_lab_font_holds_gb2312_and_the_corpus_in_a_small_file():
    """Issue 34 item 6: the lab's font held the corpus's ~900 characters. Now every GB2312 hanzi (what a learner
    types: 猫 世 今 散 吧), the CJK punctuation and fullwidth forms, and every character of the website's font, in a
    WOFF2 small enough to commit; its name records are the lab font's own (the OFL asks for a new name)."""
    from fontTools.ttLib import TTFont

    have = set(SITE_FONT.font_characters(LAB_FONT.FONT))
    hanzi = LAB_FONT.gb2312_hanzi()
    assert len(hanzi) == 6763 and set(LEARNER_TYPED) <= set(hanzi)
    assert not set(hanzi) - have, "".join(sorted(set(hanzi) - have))[:40]
    assert not set(SITE_FONT.font_characters(SITE_FONT.FONT)) - have, "make lab-font: the site font gained characters"
    assert set("，。、：；？！（）「」《》【】　") <= have
    assert LAB_FONT.FONT.stat().st_size < LAB_FONT.MAX_BYTES
    name = TTFont(LAB_FONT.FONT, lazy=True)["name"]
    assert (name.getDebugName(1), name.getDebugName(6)) == (FAMILY, LAB_FONT.PS_NAME)


# -- a browser without CJK fonts -----------------------------------------------------------------------------------

def font_files() -> list[Path]:
    seen: set[Path] = set()
    for folder in FONT_DIRS:
        if folder.is_dir():
            seen |= {p.resolve() for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in FONT_SUFFIXES}
    return sorted(seen)


def covers_any(path: Path, codepoints: set[int]) -> bool:
    """Whether a font file (any face of a collection) has a glyph for one of ``codepoints``."""
    from fontTools.ttLib import TTCollection, TTFont

    try:
        faces = TTCollection(path, lazy=True).fonts if path.suffix.lower() in (".ttc", ".otc") else \
            [TTFont(path, lazy=True)]
        return any(codepoints & set((face.getBestCmap() or {}).keys()) for face in faces)
    except Exception:  # noqa: BLE001 - a font fontTools cannot read is one fontconfig will not use for CJK either
        return False


@pytest.fixture(scope="module")
def no_cjk_fonts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment whose FONTCONFIG_FILE lists only the machine's fonts without Chinese glyphs (fc-list agrees)."""
    cjk = {ord(c) for c in notebook_cjk()} | set(range(0x4E00, 0x4E00 + 256))
    base = tmp_path_factory.mktemp("fontconfig")
    fonts = base / "fonts"
    fonts.mkdir()
    for i, path in enumerate(font_files()):
        if not covers_any(path, cjk):
            (fonts / f"{i:04d}-{path.name}").symlink_to(path)
    conf = base / "fonts.conf"
    conf.write_text('<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">\n<fontconfig>\n'
                    f"  <dir>{fonts}</dir>\n  <cachedir>{base / 'cache'}</cachedir>\n"
                    '  <include ignore_missing="yes">/etc/fonts/conf.d</include>\n</fontconfig>\n', encoding="utf-8")
    env = {**os.environ, "FONTCONFIG_FILE": str(conf)}
    env.pop("FONTCONFIG_PATH", None)
    if shutil.which("fc-list"):
        zh = subprocess.run(["fc-list", ":lang=zh", "file"], env=env, capture_output=True, text=True, timeout=120,
                            check=True).stdout.strip()
        assert not zh, f"the isolated fontconfig still has a Chinese font: {zh}"
    return env


# -- JupyterLab as `make lab` starts it ----------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """JupyterLab with the config folder `make lab` uses, over ``root`` (default: a copy of notebook 03 and an empty
    notebook, ``SCRATCH``); always stopped by stop()."""

    def __init__(self, base: Path, root: Path | None = None) -> None:
        if root is None:
            root = self.scratch_root(base / "root")
        settings = base / "settings"
        for rel, value in LAB_SETTINGS.items():
            (settings / rel).parent.mkdir(parents=True, exist_ok=True)
            (settings / rel).write_text(json.dumps(value), encoding="utf-8")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "JUPYTER_CONFIG_DIR": str(LAB_CONFIG.prepare(base / "config")),
               "JUPYTERLAB_SETTINGS_DIR": str(settings), "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
               "JUPYTER_RUNTIME_DIR": str(base / "runtime"), "PYTHONUNBUFFERED": "1"}
        self.log_path = base / "jupyterlab.log"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--LabApp.custom_css=True",
             "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
             f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
            cwd=root, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)

    @staticmethod
    def scratch_root(root: Path) -> Path:
        root.mkdir(parents=True)
        shutil.copy2(NOTEBOOK, root / NOTEBOOK.name)
        nb = {"cells": [{"cell_type": "code", "execution_count": None, "id": "typed", "metadata": {}, "outputs": [],
                         "source": ""}],
              "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                                          "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
        (root / SCRATCH).write_text(json.dumps(nb), encoding="utf-8")
        return root

    def get(self, path: str, method: str = "GET") -> bytes:
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         headers={"Authorization": f"token {TOKEN}"})
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.read()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                self.get("/api/status")
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.25)
        raise TimeoutError(f"JupyterLab did not answer within {SERVER_START_S} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        self._log.flush()
        return "\n".join(self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """Ask the server to shut down (it stops its kernels), then make sure its process group is gone."""
        if self.proc.poll() is None:
            try:
                self.get("/api/shutdown", method="POST")
                self.proc.wait(timeout=15)
            except (urllib.error.URLError, ConnectionError, TimeoutError, subprocess.TimeoutExpired):
                pass
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.proc.poll() is not None:
                break
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(timeout=10)
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        self._log.close()


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    server = Lab(tmp_path)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


# Scrolls every cell into view (a reader scrolling down); true once ``n`` rendered markdown cells show Chinese.
RENDERED_JS = """({pattern, n}) => {
  document.querySelectorAll('.jp-Notebook .jp-Cell').forEach((cell) => cell.scrollIntoView());
  const re = new RegExp(pattern, 'u');
  return Array.from(document.querySelectorAll('.jp-Notebook .jp-MarkdownOutput'))
    .filter((md) => re.test(md.textContent)).length >= n;
}"""

# Marks the elements inside the notebook whose own text has Chinese, by region; returns the counts per region.
MARK_JS = """({pattern, regions}) => {
  // Open every <details> (a prediction's outcome): its text must render with the font once a learner opens it.
  document.querySelectorAll('.jp-Notebook details').forEach((d) => { d.open = true; });
  const re = new RegExp(pattern, 'u'); const counts = {}; let n = 0;
  for (const [region, selector] of Object.entries(regions)) {
    counts[region] = 0;
    for (const box of document.querySelectorAll(`.jp-Notebook ${selector}`)) {
      const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
      for (let t = walker.nextNode(); t; t = walker.nextNode()) {
        const el = t.parentElement;
        if (!el || !re.test(t.data) || el.hasAttribute('data-cjk-probe') || !el.getClientRects().length) continue;
        el.setAttribute('data-cjk-probe', region); el.setAttribute('data-cjk-n', String(n++)); counts[region]++;
      }
    }
  }
  return counts;
}"""

# The font face's status, each region's computed stack, and a canvas probe: every character drawn with each stack
# must differ from the same stack without the project's font (which can only draw the fallback's box) and from the
# stack's drawing of a character no font has.
GLYPHS_JS = """async ({chars, family, regions}) => {
  await document.fonts.ready;
  const faces = Array.from(document.fonts).filter(f => f.family.replace(/["']/g, '') === family).map(f => f.status);
  const stacks = {};
  for (const [region, selector] of Object.entries(regions)) {
    const el = document.querySelector(`.jp-Notebook ${selector}`);
    stacks[region] = el ? getComputedStyle(el).fontFamily : '';
  }
  let error = null;
  const first = Object.values(stacks).find(stack => stack);
  try { await document.fonts.load(`32px ${first}`, chars.join('')); } catch (e) { error = String(e); }
  const without = stack => stack.split(',').filter(f => f.trim().replace(/["']/g, '') !== family).join(',');
  const canvas = document.createElement('canvas'); canvas.width = 48; canvas.height = 48;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const draw = (ch, stack) => {
    ctx.clearRect(0, 0, 48, 48); ctx.font = `32px ${stack}`; ctx.fillStyle = '#000'; ctx.textBaseline = 'top';
    ctx.fillText(ch, 4, 4);
    const d = ctx.getImageData(0, 0, 48, 48).data; let s = '';
    for (let i = 3; i < d.length; i += 4) s += d[i] > 127 ? '1' : '0';
    return s;
  };
  const boxes = [], system = [];
  for (const stack of new Set(Object.values(stacks).filter(stack => stack))) {
    const box = draw('\\uE000', without(stack));
    // U+2FDE lies in the CJK blocks the font serves and no font has it: the stack's own box for a missing character
    // (a web font's .notdef, unlike the fallback's box above)
    const missing = draw('\\u2FDE', stack);
    for (const ch of chars) {
      if (draw(ch, without(stack)) !== box) system.push(ch);  // a system font drew it: the browser is not isolated
      const drawn = draw(ch, stack);
      if (drawn === box || drawn === missing) boxes.push(ch);
    }
  }
  return {faces, stacks, error, boxes, system, checked: document.fonts.check(`16px "${family}"`, chars.join(''))};
}"""


def check_browser() -> None:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} not found: run scripts/install_browser.sh (installs Debian's chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.fail("playwright is not installed in this environment: run scripts/install_browser.sh")


@contextmanager
def chromium(env: dict[str, str]) -> Iterator:
    """Debian's Chromium driven by Playwright, with ``env`` (its fontconfig); closed on the way out."""
    check_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS, env=env)
        try:
            yield browser
        finally:
            browser.close()


@browser_test
def test_jupyterlab_draws_chinese_with_the_projects_font_without_system_cjk_fonts(lab: Lab, no_cjk_fonts) -> None:
    assert lab.get(f"/custom/{LAB_FONT.FONT.name}") == LAB_FONT.FONT.read_bytes(), "the server does not serve it"
    family, chars = FAMILY, sorted(notebook_cjk())
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    chinese_markdown = sum(c["cell_type"] == "markdown" and bool(SITE_FONT.CJK.search("".join(c["source"])))
                           for c in cells)
    with chromium(no_cjk_fonts) as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{lab.url}/lab/tree/{NOTEBOOK.name}?token={TOKEN}&reset", timeout=PAGE_MS)
        page.locator(".jp-Notebook .jp-Cell").nth(len(cells) - 1).wait_for(state="attached", timeout=PAGE_MS)
        # every markdown cell with Chinese rendered: JupyterLab renders a markdown cell when it comes into view,
        # so scroll through the notebook as a reader would until they all show their text
        page.wait_for_function(RENDERED_JS, arg={"pattern": SITE_FONT.CJK_PATTERN, "n": chinese_markdown},
                               timeout=PAGE_MS, polling=500)
        glyphs = page.evaluate(GLYPHS_JS, {"chars": chars, "family": family, "regions": REGIONS})
        counts = page.evaluate(MARK_JS, {"pattern": SITE_FONT.CJK_PATTERN, "regions": REGIONS})
        used = fonts_used_for_marked(page)
        page.locator(".jp-Notebook .jp-MarkdownOutput", has_text=re.compile("[\u4e00-\u9fff]")).first \
            .scroll_into_view_if_needed()
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT))

    assert not glyphs["system"], f"a system font drew {''.join(glyphs['system'][:20])!r}: the browser is not isolated"
    assert "loaded" in glyphs["faces"] and glyphs["checked"], f"the font face did not load: {glyphs}"
    for region, stack in glyphs["stacks"].items():
        assert stack.startswith(f'"{family}"'), f"{region}: computed font-family {stack!r}"
    assert not glyphs["boxes"], f"drawn as boxes: {''.join(sorted(set(glyphs['boxes'])))!r}"
    assert all(counts.values()), f"no Chinese found in some region: {counts}"
    wrong = [f"{region}: {fonts} for {text!r}" for region, text, fonts in used if family not in fonts]
    assert not wrong, "Chinese drawn without the project's font:\n" + "\n".join(wrong[:20])
    print(f"\n{len(chars)} CJK characters; elements with Chinese per region {counts}, all drawn by {family!r}; "
          f"screenshot {SCREENSHOT.relative_to(ROOT)}")


def fonts_used_for_marked(page) -> list[tuple[str, str, list[str]]]:
    """Chromium's report (DevTools' CSS.getPlatformFontsForNode) of the custom fonts that drew each marked element,
    each scrolled into view first as a learner would (JupyterLab lays out far off-screen cells lazily):
    ``(region, text, [family, ...])``. The marks are read before any scrolling (CodeMirror resets its lines'
    attributes when it redraws them)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
    marked = []
    for node in cdp.send("DOM.querySelectorAll", {"nodeId": root, "selector": "[data-cjk-probe]"})["nodeIds"]:
        attrs = cdp.send("DOM.getAttributes", {"nodeId": node})["attributes"]
        html = cdp.send("DOM.getOuterHTML", {"nodeId": node})["outerHTML"]
        marked.append((node, dict(zip(attrs[::2], attrs[1::2]))["data-cjk-probe"], html[:120]))
    out = []
    for node, region, html in marked:
        cdp.send("DOM.scrollIntoViewIfNeeded", {"nodeId": node})
        fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
        out.append((region, html, [f["familyName"] + ("" if f.get("isCustomFont") else " (system)") for f in fonts]))
    return out


@browser_test
def test_chinese_a_learner_types_is_drawn_with_the_projects_font(lab: Lab, no_cjk_fonts) -> None:
    """Issue 34 item 6: characters outside the corpus (猫 世 今 散 吧), typed into a code cell and printed, showed as
    boxes. In a new notebook the learner types ``print("猫世今散吧")`` and runs it: Chromium draws the editor's line
    and the output with the lab's font, and the same stacks draw every GB2312 hanzi (none as the fallback's box)."""
    typed = f'print("{LEARNER_TYPED}")'
    regions = {"code": REGIONS["code"], "output": REGIONS["output"]}
    with chromium(no_cjk_fonts) as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(f"{lab.url}/lab/tree/{SCRATCH}?token={TOKEN}&reset", timeout=PAGE_MS)
        # the kernel ready first (JupyterLab's own UI tests wait for the debugger button: a cell run as the
        # kernel shows idle sometimes does nothing)
        page.locator('.jp-DebuggerBugButton[aria-disabled="false"]').first.wait_for(timeout=PAGE_MS)
        editor = page.locator(".jp-Notebook .jp-Cell .cm-content").first
        editor.click()
        page.keyboard.type('print("')
        page.keyboard.insert_text(LEARNER_TYPED)  # what an input method hands the page
        page.keyboard.type('")')
        page.keyboard.press("Shift+Enter")
        try:
            page.locator(".jp-Notebook .jp-OutputArea-output", has_text=LEARNER_TYPED).wait_for(timeout=PAGE_MS)
        except Exception as e:
            TYPED_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(TYPED_SCREENSHOT))
            raise AssertionError(f"no output after running the cell: {TYPED_SCREENSHOT}\n{lab.log_tail()}") from e
        source = page.locator(".jp-Notebook .jp-Cell .cm-content").first.inner_text()
        glyphs = page.evaluate(GLYPHS_JS, {"chars": sorted(set(LEARNER_TYPED + LAB_FONT.gb2312_hanzi())),
                                           "family": FAMILY, "regions": regions})
        counts = page.evaluate(MARK_JS, {"pattern": SITE_FONT.CJK_PATTERN, "regions": regions})
        used = fonts_used_for_marked(page)
        TYPED_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(TYPED_SCREENSHOT))

    assert source.strip() == typed, source
    boxes = sorted(set(glyphs["boxes"]))
    assert not boxes, f"drawn as boxes ({len(boxes)}): {''.join(boxes[:60])!r}"
    assert not glyphs["system"], f"a system font drew {''.join(glyphs['system'][:20])!r}: the browser is not isolated"
    assert "loaded" in glyphs["faces"] and glyphs["checked"], f"the font face did not load: {glyphs}"
    assert counts["code"] >= 1 and counts["output"] >= 1, counts
    wrong = [f"{region}: {fonts} for {text!r}" for region, text, fonts in used if FAMILY not in fonts]
    assert not wrong, "typed Chinese drawn without the project's font:\n" + "\n".join(wrong)
    print(f"\ntyped {typed!r}: editor and output drawn by {FAMILY!r}; {len(LAB_FONT.gb2312_hanzi()):,} GB2312 hanzi "
          f"drawn, none as a box; screenshot {TYPED_SCREENSHOT.relative_to(ROOT)}")
