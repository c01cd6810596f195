"""Real-browser test: JupyterLab + ipywidgets in headless Debian Chromium, driven by Playwright for Python.

Starts JupyterLab on loopback (free port, fixed token, fresh settings and workspaces) over a *copy* of
``notebooks/10_live-explorers.ipynb`` in a temporary root (so autosave can never touch the committed
notebook), runs all cells, moves the explorer's top_k slider with the keyboard, checks the displayed
numbers change, and saves ``build/screenshots/lab-live-explorers.png``.

Opt-in: ``EVIDENCE_BROWSER_TEST=1 python -m pytest -q tests/browser`` (``make test-browser``). It needs
``/usr/bin/chromium`` (Debian's ``chromium`` package) and ``playwright`` in the environment; both are
installed by ``scripts/install_browser.sh``. Playwright's own browser download is never used.
"""

from __future__ import annotations

import hashlib
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
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "10_live-explorers.ipynb"
SCREENSHOT = ROOT / "build" / "screenshots" / "lab-live-explorers.png"
CHROMIUM = Path(os.environ.get("EVIDENCE_CHROMIUM", "/usr/bin/chromium"))
TOKEN = "evidence-browser-test"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-default-apps",
    "--disable-sync", "--no-first-run", "--mute-audio",
]
#: Every wait is bounded (milliseconds for Playwright, seconds for the server).
SERVER_START_S = 60
KERNEL_READY_MS = 90_000
RUN_ALL_MS = 120_000
UPDATE_MS = 20_000

pytestmark = pytest.mark.skipif(
    os.environ.get("EVIDENCE_BROWSER_TEST") != "1",
    reason="real-browser test is opt-in: set EVIDENCE_BROWSER_TEST=1 (needs Debian chromium at /usr/bin/chromium "
           "and playwright; run scripts/install_browser.sh, or `make test-browser`)",
)

#: JupyterLab user settings for a quiet, deterministic session.
LAB_SETTINGS = {
    # no "news" pop-up (it would fetch from the internet and cover the notebook)
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false"},
    # belt and braces: we serve a copy, and it is never saved either
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    # every cell in the DOM, so the last cell's prompt can be read without scrolling
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def code_cell_count(path: Path) -> int:
    return sum(c["cell_type"] == "code" for c in json.loads(path.read_text(encoding="utf-8"))["cells"])


class LabServer:
    """A JupyterLab process over a temporary root; always stopped by :meth:`stop`."""

    def __init__(self, base: Path) -> None:
        self.root = base / "root"
        self.root.mkdir()
        shutil.copy2(NOTEBOOK, self.root / NOTEBOOK.name)
        settings, workspaces, runtime = base / "settings", base / "workspaces", base / "runtime"
        for rel, value in LAB_SETTINGS.items():
            target = settings / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(value), encoding="utf-8")
        workspaces.mkdir()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = base / "jupyterlab.log"
        env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(settings), "JUPYTERLAB_WORKSPACES_DIR": str(workspaces),
               "JUPYTER_RUNTIME_DIR": str(runtime), "PYTHONUNBUFFERED": "1"}
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
             "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
             f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={self.root}",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
            cwd=self.root, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )

    def api(self, path: str, method: str = "GET", timeout: float = 5) -> bytes:
        req = urllib.request.Request(f"{self.url}{path}", method=method,
                                     headers={"Authorization": f"token {TOKEN}"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.read()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                self.api("/api/status")
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
                self.api("/api/shutdown", method="POST")
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.proc.poll() is not None:
                break
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                continue
        self._log.close()


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[LabServer]:
    server = LabServer(tmp_path)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def test_live_explorer_reacts_to_the_keyboard_in_jupyterlab(lab: LabServer) -> None:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} not found: run scripts/install_browser.sh (installs Debian's chromium)")
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed in this environment: run scripts/install_browser.sh")

    committed = sha256(NOTEBOOK)
    last_prompt = f"[{code_cell_count(NOTEBOOK)}]:"
    started = time.monotonic()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{lab.url}/lab/tree/{NOTEBOOK.name}?token={TOKEN}&reset", timeout=KERNEL_READY_MS)

            # Known race: "Run All Cells" as soon as the kernel shows idle sometimes does nothing.
            # JupyterLab's own UI tests wait for the debugger button to become enabled first.
            page.locator('.jp-DebuggerBugButton[aria-disabled="false"]').first.wait_for(timeout=KERNEL_READY_MS)
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()

            prompts = page.locator(".jp-Notebook .jp-CodeCell .jp-InputPrompt")
            expect(prompts.last).to_have_text(last_prompt, timeout=RUN_ALL_MS)
            run_all_s = time.monotonic() - started
            assert page.locator('.jp-Notebook [data-mime-type="application/vnd.jupyter.stderr"]').count() == 0, \
                "a cell wrote to stderr or raised during Run All"

            explorer = page.locator(".evidence-context-explorer")
            baseline = explorer.locator(".evidence-context-numbers .ev-baseline-bytes")
            protocol = explorer.locator(".evidence-context-numbers .ev-protocol-bytes")
            # The notebook's last drive-from-code cell left the explorer at top_k 12, 12 reads, 8,000-byte budget.
            expect(baseline).to_have_text("156,982", timeout=UPDATE_MS)
            expect(protocol).to_have_text("6,818", timeout=UPDATE_MS)
            before = (baseline.inner_text(), protocol.inner_text())

            top_k = explorer.locator(".widget-slider").first
            expect(top_k.locator(".widget-label").first).to_have_text("top_k candidates")
            handle = top_k.locator(".noUi-handle")
            handle.scroll_into_view_if_needed()
            handle.focus()
            page.keyboard.press("ArrowLeft")
            expect(top_k.locator(".widget-readout")).to_have_text("11", timeout=UPDATE_MS)
            expect(baseline).to_have_text("143,900", timeout=UPDATE_MS)
            expect(protocol).not_to_have_text(before[1], timeout=UPDATE_MS)
            after = (baseline.inner_text(), protocol.inner_text())
            assert after != before

            explorer.scroll_into_view_if_needed()
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT))
            assert not errors, f"JavaScript errors in the page: {errors}"
        finally:
            browser.close()

    total_s = time.monotonic() - started
    print(f"\nRun All took {run_all_s:.1f} s; whole browser session {total_s:.1f} s; "
          f"numbers {before} -> {after}; screenshot {SCREENSHOT.relative_to(ROOT)}")
    assert SCREENSHOT.stat().st_size > 10_000
    assert sha256(NOTEBOOK) == committed, "the committed notebook changed"
