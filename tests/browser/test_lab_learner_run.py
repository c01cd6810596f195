"""A learner's normal use of the lab does not fail `make test` (issue 34 item 7), shown in JupyterLab itself.

The review's steps: in a fresh kernel, run cell 1, then cell 2, then cell 2 again, and let JupyterLab save the
notebook. `make test` then failed in the library tests after minutes (``assert [1, 3, 3, 4, ...] == [1, 2, 3,
...]``, the hygiene check of execution counts), named no fix, and never reached the notebook tests.

Here JupyterLab (started as `make lab` starts it, tests/browser/test_lab_cjk.py's ``Lab``) serves a learner's clone
(a new git repository holding this checkout's files: the repository's own notebooks are never touched); Chromium
runs notebook 01's first code cell, then its second twice, and saves with JupyterLab's own Save (Ctrl+S, the
contents API). The file on disk then has the counts the review saw, and

* the hygiene part of the learner's `make test` (its pytest options, tests/test_notebooks.py) passes: it checks
  the committed versions;
* `make check-notebooks`' run of it (the files on disk, as CI and a committer check them) fails on that file and
  names both fixes, ``make execute NB=notebooks/01_baseline-dump.ipynb`` and ``git checkout -- ...``.

Opt-in like the other lab tests: ``EVIDENCE_BROWSER_TEST=1`` (``make test-browser``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
from test_lab_cjk import PAGE_MS, TOKEN, Lab, browser_test, check_browser, chromium  # noqa: E402
from test_newcomer_path import LEARNER_NOTEBOOK, git_copy, hygiene  # noqa: E402


def code_counts(path: Path) -> list:
    return [c["execution_count"] for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
            if c["cell_type"] == "code"]


def run_in_lab(lab: Lab, name: str, steps: list[tuple[int, str]]) -> None:
    """Open ``name`` in Chromium, run the code cells ``steps`` names (index, prompt it must then show) one by one
    with Ctrl+Enter, then save with Ctrl+S."""
    from playwright.sync_api import expect

    with chromium(dict(os.environ)) as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{lab.url}/lab/tree/{name}?token={TOKEN}&reset", timeout=PAGE_MS)
        # the kernel ready first: a cell run as the kernel shows idle sometimes does nothing (JupyterLab's own UI
        # tests wait for the debugger button)
        page.locator('.jp-DebuggerBugButton[aria-disabled="false"]').first.wait_for(timeout=PAGE_MS)
        cells = page.locator(".jp-Notebook .jp-CodeCell")
        for index, prompt in steps:
            cells.nth(index).locator(".cm-content").click()
            page.keyboard.press("Control+Enter")
            expect(cells.nth(index).locator(".jp-InputPrompt")).to_have_text(prompt, timeout=PAGE_MS)
        page.keyboard.press("Control+s")
        expect(page.locator(".jp-mod-current.jp-mod-dirty")).to_have_count(0, timeout=PAGE_MS)


@browser_test
def test_a_cell_run_twice_and_saved_in_jupyterlab_passes_make_test_and_the_commit_check_names_the_fix(tmp_path):
    check_browser()
    repo = git_copy(tmp_path)
    notebook = repo / LEARNER_NOTEBOOK
    lab = Lab(tmp_path / "lab", root=notebook.parent)
    try:
        lab.wait_ready()
        run_in_lab(lab, notebook.name, [(0, "[1]:"), (1, "[2]:"), (1, "[3]:")])
        deadline = time.monotonic() + 30  # the save has returned; the file is written by then, allow a slow disk
        while code_counts(notebook)[:2] != [1, 3] and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        lab.stop()
    counts = code_counts(notebook)
    assert counts[:4] == [1, 3, 3, 4], f"JupyterLab saved {counts}"

    passed, out = hygiene(repo)
    assert passed, out[-3000:]
    passed, out = hygiene(repo, worktree=True)
    assert not passed and "execution counts [1, 3, 3, 4," in out, out[-3000:]
    assert f"`make execute NB={LEARNER_NOTEBOOK}`" in out and f"`git checkout -- {LEARNER_NOTEBOOK}`" in out, out
    print(f"\nsaved by JupyterLab: {counts[:6]}...; make test's hygiene checks pass, make check-notebooks names the fix")
