"""Notebook 13 links the MCP server's guide (docs/mcp-server.md) where a learner connects their own client: the link
must work in the repository (GitHub, JupyterLab) and on the website, which stages the guide beside the pages
(scripts/build_site.py). No Sphinx here: tests/browser/test_site.py checks built pages."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "13_mcp-server.ipynb"
GUIDE_LINK = "../docs/mcp-server.md#connect-a-client"


def _build_site():
    spec = importlib.util.spec_from_file_location("build_site", ROOT / "scripts" / "build_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _prose(path: Path) -> str:
    return "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub and MyST (myst_heading_anchors) write it for plain ASCII words."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_notebook_13_links_the_guides_client_setup_and_the_anchor_exists():
    assert f"]({GUIDE_LINK})" in _prose(NOTEBOOK)
    guide = (ROOT / "docs" / "mcp-server.md").read_text(encoding="utf-8")
    anchors = {_slug(h) for h in re.findall(r"^#{1,3} (.+)$", guide, re.M)}
    assert "connect-a-client" in anchors
    section = guide.split("## Connect a client", 1)[1].split("\n## ", 1)[0]
    assert "claude_desktop_config.json" in section and "claude mcp add" in section


def test_site_stages_the_linked_guide_and_points_the_notebooks_link_at_it(tmp_path):
    """Before: the site kept ../docs/mcp-server.md, a page outside the site (a missing cross-reference that fails the
    -W build). Now the guide is staged as an orphan page under docs/, the notebook's link points at it, the guide's
    link to the notebook points at the staged notebook, and its link to the README (not on the site) keeps its text."""
    build = _build_site()
    counts = build.stage(tmp_path / "src")
    src = tmp_path / "src"
    linked = {m for nb in (ROOT / "notebooks").rglob("*.ipynb")
              for m in re.findall(r"\]\((?:\.\./)+docs/([\w.-]+\.md)", nb.read_text(encoding="utf-8"))}
    assert "mcp-server.md" in linked and counts["guides"] == len(linked)  # each guide a notebook links, once
    assert "](docs/mcp-server.md#connect-a-client)" in _prose(src / "13_mcp-server.ipynb")
    staged = (src / "docs" / "mcp-server.md").read_text(encoding="utf-8")
    assert staged.startswith("---\norphan: true\n---\n")
    assert "## Connect a client" in staged
    assert "[13](../13_mcp-server.ipynb)" in staged
    assert "README.md" not in staged and "back to the README" in staged
