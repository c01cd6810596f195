#!/usr/bin/env python3
"""Build the series' static website (``make site``) from the committed, executed notebooks, without running them.

Sphinx + MyST-NB (``nb_execution_mode = "off"``) with the Sphinx Book Theme, pinned in ``site/requirements.txt``
and installed into the project's venv by ``make site``; the configuration is ``site/conf.py``. Everything is
local: no Node, no browser, no CDN; the pages use relative links, so they work under any path.

What this script does, in a staging folder (``build/site-src/``, rebuilt every time) so the committed notebooks
are never changed:

* copies the pages in the series' order, found by glob (never a hard-coded list, so new notebooks appear by
  themselves): the series as scripts/nbnav.py lists it (``notebooks/NN_*.ipynb`` and the optional deep dives
  ``NNx_*.ipynb``, sorted), then the workshop (the student copies ``workshop_part*.ipynb``),
  then the facilitator material (``notebooks/exercises/README.md``, the facilitator guide, and ``solutions/``);
* makes ``00_index.ipynb`` the home page (staged as ``index.ipynb``, the links to it rewritten), with a note on
  what these pages are and the sidebar's sections as hidden toctrees: "The series", "Workshop", "Facilitators"
  and "Figures". The site title links home; the sidebar has no second home entry;
* marks each solution as facilitator material (its title starts "Solutions ·", a note links the student copy);
* writes a ``figures.md`` page showing every figure in ``figures/``, drawn from its SVG where there is one
  (sharp on a HiDPI screen; the PNG is 100 dpi), with the PNG and the SVG to download;
* injects a note after every widget cell (an ipywidgets output: in the committed notebooks only its
  ``text/plain`` summary is stored) saying that the controls need a live kernel;
* launch links (Binder, Colab, the GitHub button) only for a configured repository: ``EVIDENCE_SITE_REPOSITORY``
  (``owner/name``, e.g. ``${{ github.repository }}`` in a Pages workflow). pyproject.toml's
  ``[tool.evidence-series] repository`` is what scripts/nbnav.py writes into the notebooks' badges; until a
  build confirms it (or names another) it counts as a placeholder: the badges are dropped from the staged
  pages, and a build whose output still names it fails. With a repository the badges point at it and their
  images are local copies, so every page is self-contained.

After Sphinx, the download button's notebooks (``_sources/*.ipynb``) are replaced by the committed notebooks (the
staged copies carry the site's own cells); then the build fails if a built file names the placeholder repository, and warns if a page shows a
CJK character the site's web font (site/_static/fonts/, ``scripts/subset_site_font.py``) lacks.

Usage: ``python scripts/build_site.py [--out build/site]``. ``BASE_URL`` (e.g. ``/read-evidence-on-demand`` for a
project site at ``https://<owner>.github.io/read-evidence-on-demand/``) sets the pages' canonical URLs
(``html_baseurl``); the links themselves are relative and need no prefix.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbnav
import subset_site_font

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
FIGURES = ROOT / "figures"
CONF_DIR = ROOT / "site"
DOCS = ROOT / "docs"
BADGES = {  # hot-linked badge image -> local copy under site/badges/
    "https://mybinder.org/badge_logo.svg": "binder-badge.svg",
    "https://colab.research.google.com/assets/colab-badge.svg": "colab-badge.svg",
}
LAUNCH_LINK = ("https://mybinder.org/v2/gh/", "https://colab.research.google.com/github/")
#: A launch badge as scripts/nbnav.py writes it: [![alt](badge image)](launch link).
BADGE_LINK = re.compile(r"[ \t]*\[!\[[^\]]*\]\((?:" + "|".join(map(re.escape, BADGES)) + r")\)\]\((?:"
                        + "|".join(map(re.escape, LAUNCH_LINK)) + r")[^)\s]*\)")
REPOSITORY_ENV = "EVIDENCE_SITE_REPOSITORY"
SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}")
INDEX = "00_index"  # the series' index notebook: the site's home page, staged as index.ipynb
INDEX_NOTEBOOK = f"{INDEX}.ipynb"
#: A relative link to the index notebook, from any folder: ](00_index.ipynb ](../00_index.ipynb#glossary ...
INDEX_LINK = re.compile(r"(\]\((?:\.\./)*)" + INDEX + r"\.ipynb(?=[#)])")
#: A page's link to a guide in docs/ (](../docs/mcp-server.md#connect-a-client): the site stages the guides it links to
#: under docs/ beside the pages, one folder up less than in the repository (STAGED_DOCS_LINK, once staged).
DOCS_LINK = re.compile(r"(\]\((?:\.\./)*)\.\./docs/([\w.-]+\.md)(?=[#)])")
STAGED_DOCS_LINK = re.compile(r"\]\((?:\.\./)*docs/([\w.-]+\.md)(?=[#)])")
#: A markdown link (not an image): [text](target).
MD_LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)")
#: A markdown link's target: ](path) or ](path#fragment).
LINK_TARGET = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)")
API_PAGE = ROOT / "site" / "api.md"
TEXT_SUFFIXES = {".html", ".js", ".txt", ".ipynb", ".md", ".json", ".css", ".xml", ".svg"}
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
#: The text/plain summary evidence_lib.course.widgets stores for a widget (see its ``__repr__``).
WIDGET_REPR = re.compile(r"^<\w+: .*; call \.set\(\.\.\.\) and \.state_text\(\)>$", re.S)
WIDGET_NOTE = """\
```{{admonition}} Live widget: this needs a running Python kernel
:class: important

The output above is only the widget's stored text summary: its sliders and buttons do not work on this static
page. To use them, open `{path}` in JupyterLab (`make lab`){binder}, and run the cells. The cells after it drive the same widget from code, so their printed numbers are the
ones you would see.
```
"""


SITE_NOTE = """\
```{{note}}
These pages are the notebooks as committed, with their stored outputs: nothing is re-run here. Everything runs
offline: to run a notebook, {sources} and `make lab`{binder}. The interactive widgets of notebook 10
need that live kernel. The workshop's solutions and facilitator guide are in the sidebar's *Facilitators*
section.
```
"""
SOLUTION_NOTE = """\
```{{admonition}} Facilitator material
:class: tip

The worked solutions of [the student copy]({student}), which learners fill in. Learners: try the exercises
there first; the facilitator guide is in the sidebar's *Facilitators* section.
```
"""


def series() -> list[Path]:
    """The series in reading order, 00_index first: scripts/nbnav.py's rule (NN_*.ipynb and the deep dives
    NNx_*.ipynb), so the sidebar and the notebooks' own navigation lines list the same pages."""
    index = NOTEBOOKS / INDEX_NOTEBOOK
    return ([index] if index.is_file() else []) + nbnav.series()


def series_settings() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8")).get("tool", {}).get(
        "evidence-series", {})


def site_repository() -> str | None:
    """The repository the launch links point at: EVIDENCE_SITE_REPOSITORY (owner/name), or None: no links."""
    value = os.environ.get(REPOSITORY_ENV, "").strip()
    if not value:
        return None
    if not SLUG.fullmatch(value):
        raise SystemExit(f"{REPOSITORY_ENV}={value!r} is not a GitHub owner/name")
    return value


def placeholder_slugs(repository: str | None) -> list[str]:
    """pyproject.toml's repository while the build does not confirm it: it must not appear in the site."""
    slug = series_settings().get("repository", "")
    return [slug] if slug and slug != repository else []


def files_naming(out: Path, slugs: list[str]) -> list[str]:
    """The built text files (pages, sources, search index) that contain one of ``slugs``, as-is or URL-encoded."""
    needles = [n for s in slugs for n in (s, s.replace("/", "%2F"), s.replace("/", "%2f"))]
    found = []
    for path in sorted(out.rglob("*")):
        if path.is_file() and path.suffix in TEXT_SUFFIXES:
            text = path.read_text(encoding="utf-8", errors="replace")
            if any(n in text for n in needles):
                found.append(path.relative_to(out).as_posix())
    return found


def launch_links(text: str, repository: str | None) -> str:
    """The Binder / Colab badges: dropped without a repository, else pointing at it with local images."""
    if repository is None:
        stripped, n = BADGE_LINK.subn("", text)
        return re.sub(r"\n[ \t]*\n(?:[ \t]*\n)+", "\n\n", stripped).strip("\n") if n else text
    for slug in placeholder_slugs(repository):
        text = BADGE_LINK.sub(lambda m, slug=slug: m.group(0).replace(f"/{slug}/", f"/{repository}/"), text)
    for url, name in BADGES.items():
        text = text.replace(url, f"/_badges/{name}")  # "/" = the staging root
    return text


def linked_files(text: str, folder: Path) -> list[Path]:
    """Files under notebooks/ that a page in ``folder`` links to and that are not pages (e.g. course.toml): the
    staging copies them, so that the links become downloads instead of missing cross-references."""
    found = []
    for m in LINK_TARGET.finditer(text):
        target = m.group(1)
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", target) or target.startswith("/") or target.endswith((".ipynb", ".md")):
            continue
        path = (folder / target).resolve()
        if path.is_file() and path.is_relative_to(NOTEBOOKS):
            found.append(path)
    return found


def workshop() -> tuple[list[Path], list[Path]]:
    ex = NOTEBOOKS / "exercises"
    return sorted(ex.glob("workshop_part*.ipynb")), sorted((ex / "solutions").glob("workshop_part*.ipynb"))


def is_widget_output(output: dict) -> bool:
    data = output.get("data", {})
    if WIDGET_MIME in data:
        return True
    text = data.get("text/plain", "")
    text = "".join(text) if isinstance(text, list) else text
    return output.get("output_type") == "execute_result" and bool(WIDGET_REPR.match(text.strip()))


def badges_written() -> bool:
    """Whether the notebooks carry launch badges: scripts/nbnav.py writes them only while pyproject.toml names a
    repository. The site re-points badges that exist; it never promises one that does not."""
    return bool(nbnav.settings()[0])


def site_note(repository: str | None, badges: bool | None = None) -> str:
    """The home page's note: where the sources are. A build without a repository names none (no made-up address):
    the reader gets them where they got the site. The Binder badge is mentioned only where the pages have one."""
    if repository:
        has_badges = badges_written() if badges is None else badges
        return SITE_NOTE.format(sources=f"clone [the repository](https://github.com/{repository})",
                                binder=", or use the Binder badge at the top of each page" if has_badges else "")
    return SITE_NOTE.format(sources="get the sources (the repository you received this site with)", binder="")


def staged_guides(src: Path, pages: list[str]) -> int:
    """Stage the guides of docs/ that ``pages`` (staged markdown) link to, and the guides those link to, as orphan
    pages under ``src``/docs/: a link to a notebook points at its staged copy, one to another guide stays, and one to
    a repository file the site does not show (the README) keeps only its text. Returns how many were staged."""
    todo = sorted({name for text in pages for name in STAGED_DOCS_LINK.findall(text)})
    done: set[str] = set()
    while todo:
        name = todo.pop()
        if name in done or not (DOCS / name).is_file():
            continue
        done.add(name)

        def link(m: re.Match) -> str:
            target, _, fragment = m.group(2).partition("#")
            if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", m.group(2)) or not target:
                return m.group(0)
            path = (DOCS / target).resolve()
            if path.suffix == ".ipynb" and path.is_relative_to(NOTEBOOKS) and path.is_file():
                staged = "index.ipynb" if path.name == INDEX_NOTEBOOK else path.relative_to(NOTEBOOKS).as_posix()
                return f"[{m.group(1)}](../{staged}{'#' + fragment if fragment else ''})"
            if path.suffix == ".md" and path.parent == DOCS and path.is_file():
                todo.append(path.name)
                return m.group(0)
            return m.group(1)

        (src / "docs").mkdir(exist_ok=True)
        text = MD_LINK.sub(link, (DOCS / name).read_text(encoding="utf-8"))
        (src / "docs" / name).write_text("---\norphan: true\n---\n\n" + text, encoding="utf-8")
    return len(done)


def binder_hint(repository: str | None) -> str:
    return " or launch it on Binder with the badge at the top of the page" if repository and badges_written() else ""


def transform(nb: nbformat.NotebookNode, rel: str, repository: str | None) -> tuple[nbformat.NotebookNode, int]:
    """The staged copy: launch badges (or none), links to the index as the home page, a live-kernel note after
    each widget cell; a solution is marked as facilitator material. Returns (nb, widgets)."""
    cells, widgets, section = [], 0, title_text(nb)
    solution = rel.startswith("exercises/solutions/")
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            headings = re.findall(r"^#{1,3} (.+)$", cell.source, re.M)
            section = headings[-1].strip() if headings else section
            cell.source = INDEX_LINK.sub(r"\1index.ipynb", launch_links(cell.source, repository))
            cell.source = DOCS_LINK.sub(r"\1docs/\2", cell.source)
            if cell.get("id") == nbnav.NAV_ID:  # in a box of its own, which search snippets leave out (evidence.js)
                cell.source = "```{container} site-nav\n" + nav_labels(cell.source, solution) + "\n```"
            if solution and re.search(r"^# ", cell.source, re.M) and not any(
                    c.get("id") == "site-solution-note" for c in cells):
                # The note right under the title, before anything else of the title's cell: the first thing read.
                source = re.sub(r"^# ", "# Solutions · ", cell.source, count=1, flags=re.M)
                end = re.search(r"^# .*$", source, re.M).end()
                cell.source, rest = source[:end], source[end:]
                cells.append(cell)
                cells.append(nbformat.v4.new_markdown_cell(
                    SOLUTION_NOTE.format(student=f"../{Path(rel).name}"), id="site-solution-note"))
                if rest.strip():
                    cells.append(nbformat.v4.new_markdown_cell(rest.strip("\n"), id="site-solution-intro"))
                continue
        cells.append(cell)
        if cell.cell_type == "code" and any("image/png" in o.get("data", {}) for o in cell.get("outputs", [])):
            # Alt text for the chart (myst-nb's cell option), not the image's hash file name.
            cell.metadata.setdefault("mystnb", {}).setdefault("image", {}).setdefault(
                "alt", f"Chart drawn by the code above, in “{section}”")
        if cell.cell_type == "code" and any(is_widget_output(o) for o in cell.get("outputs", [])):
            widgets += 1
            cells.append(nbformat.v4.new_markdown_cell(
                WIDGET_NOTE.format(path=f"notebooks/{rel}", binder=binder_hint(repository)),
                id=f"site-widget-note-{widgets}"))
    nb.cells = cells
    return nb, widgets


def nav_labels(source: str, solution: bool) -> str:
    """The navigation line as the site names it: the home page by what it is (the series' index, titled "Read
    evidence on demand: the series"), not "index"; on a solution page its neighbours as solutions, since the links
    lead to the solutions, not to the workshop parts the titles name."""
    source = re.sub(r"\[index\]\(((?:\.\./)*index\.ipynb)\)", r"[Series index](\1)", source)
    return re.sub(r"\[(← )?(?=Workshop part)", r"[\1Solutions · ", source) if solution else source


def committed_downloads(out: Path, repository: str | None) -> int:
    """The download button's .ipynb (``_sources/``) replaced by the committed notebook: the staged copy carries the
    site's own cells (the navigation line's box, notes, links to index.ipynb), which are not the repository's file.
    Byte for byte, but for launch badges the build must drop or point elsewhere (a placeholder repository)."""
    slugs = placeholder_slugs(repository)
    done = 0
    for path in [*series(), *(p for group in workshop() for p in group)]:
        rel = "index.ipynb" if path.name == INDEX_NOTEBOOK else path.relative_to(NOTEBOOKS).as_posix()
        target = out / "_sources" / rel
        if not target.is_file():
            continue
        data = path.read_bytes()
        if slugs and any(slug.encode() in data for slug in slugs):
            text = data.decode("utf-8")
            text = BADGE_LINK.sub("", text) if repository is None else text.replace(f"/{slugs[0]}/", f"/{repository}/")
            data = text.encode("utf-8")
        target.write_bytes(data)
        done += 1
    return done


def title_text(nb: nbformat.NotebookNode) -> str:
    """A notebook's first level-1 heading, without markup (empty if it has none)."""
    for cell in nb.cells:
        m = re.search(r"^# (.+)$", cell.source, re.M) if cell.cell_type == "markdown" else None
        if m:
            return m.group(1).strip()
    return ""


def figure_title(png: Path) -> tuple[str, str]:
    """A figure's heading and alt text: the title it is drawn with and what its drawing function says it shows
    (evidence_lib.course.figures), not its file name."""
    from evidence_lib.course import figures  # matplotlib: only when the site has figures

    key, _, lang = png.stem.rpartition(".")
    number = re.match(r"figure(\d+)", key)
    # The English title for both languages: the site's web font holds only the CJK characters the pages show.
    title = figures.LABELS["en"].get(f"f{number.group(1)}_title", key) if number else key
    title = re.sub(r"\s*\|\s*", " · ", title, count=1)
    what = (figures.FIGURES[key].__doc__ or "").split("\n\n")[0].replace("\n", " ").strip() if key in figures.FIGURES else ""
    language = {"en": "English", "zh": "Chinese"}.get(lang, lang)
    return f"{title} ({language})", f"{title}, {language} labels: {what}".rstrip(": ")


def title_of(path: Path) -> str:
    """The first level-1 heading of a notebook or markdown page (for the figures page and log lines)."""
    if path.suffix == ".ipynb":
        text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    else:
        text = path.read_text(encoding="utf-8")
    m = re.search(r"^# (.+)$", text, re.M)
    return m.group(1).strip() if m else path.stem


def toctree(caption: str, entries: list[str]) -> str:
    """A sidebar section: a hidden toctree (the home page lists the notebooks itself, with times)."""
    return "```{toctree}\n:caption: " + caption + "\n:maxdepth: 1\n:hidden:\n\n" + "\n".join(entries) + "\n```\n"


def stage(src: Path, repository: str | None = None) -> dict[str, int]:
    if src.exists():
        shutil.rmtree(src)
    (src / "_badges").mkdir(parents=True)
    for name in BADGES.values():
        shutil.copy2(CONF_DIR / "badges" / name, src / "_badges" / name)

    students, solutions = workshop()
    pages = series() + students + solutions
    counts = {"notebooks": len(pages), "widget cells": 0, "figures": 0}
    staged = {}
    for path in pages:
        rel = path.relative_to(NOTEBOOKS).as_posix()
        nb, widgets = transform(nbformat.read(path, as_version=4), rel, repository)
        counts["widget cells"] += widgets
        staged[rel] = nb
    readme = NOTEBOOKS / "exercises" / "README.md"
    if readme.exists():
        (src / "exercises").mkdir(parents=True, exist_ok=True)
        text = INDEX_LINK.sub(r"\1index.ipynb", launch_links(readme.read_text(encoding="utf-8"), repository))
        (src / "exercises" / "README.md").write_text(text, encoding="utf-8")
        linked = set(linked_files(text, readme.parent))
    else:
        linked = set()
    for rel, nb in staged.items():
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                linked |= set(linked_files(cell.source, (NOTEBOOKS / rel).parent))
    counts["guides"] = staged_guides(src, [c.source for nb in staged.values() for c in nb.cells
                                           if c.cell_type == "markdown"])
    for path in sorted(linked):
        (src / path.relative_to(NOTEBOOKS)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, src / path.relative_to(NOTEBOOKS))

    figures = sorted(FIGURES.glob("*.png"))
    counts["figures"] = len(figures)
    if figures:
        shutil.copytree(FIGURES, src / "figures", ignore=shutil.ignore_patterns("*.tmp"))
        lines = ["# Figures", "",
                 "The article's three figures, each in English and in Chinese, drawn from their SVG (sharp at any size), "
                 "with the PNG and the SVG to download. "
                 "`make figures` draws them again into `figures/`, byte for byte the same.", ""]
        for png in figures:
            svg = png.with_suffix(".svg")
            heading, alt = figure_title(png)
            # The SVG where there is one: sharp on any screen (the PNG is 100 dpi, blurred at 2x); the PNG to download.
            shown = svg if svg.exists() else png
            lines += [f"## {heading}", "", f"```{{figure}} figures/{shown.name}", f":alt: {alt}", ":width: 100%", "",
                      f"`figures/{png.name}`" + (f" ({{download}}`PNG <figures/{png.name}>`, "
                                                  f"{{download}}`SVG <figures/{svg.name}>`)" if svg.exists() else ""),
                      "```", ""]
        (src / "figures.md").write_text("\n".join(lines), encoding="utf-8")

    stem = lambda p: p.relative_to(NOTEBOOKS).with_suffix("").as_posix()  # noqa: E731
    home = INDEX_NOTEBOOK
    if home not in staged:
        raise SystemExit(f"notebooks/{home} is missing: the site's home page is the series index")
    sections = [toctree("The series", [stem(p) for p in series() if p.name != home])]
    if students:
        sections.append(toctree("Workshop", [stem(p) for p in students]))
    facilitators = (["exercises/README"] if readme.exists() else []) + [stem(p) for p in solutions]
    if facilitators:
        sections.append(toctree("Facilitators", facilitators))
    if figures:
        sections.append(toctree("Figures", ["figures"]))
    if API_PAGE.exists():  # the library's public API (scripts/api_reference.py writes it; autodoc renders it)
        shutil.copy2(API_PAGE, src / "api.md")
        counts["API page"] = 1
        sections.append(toctree("Library", ["api"]))
    nb = staged.pop(home)
    note = site_note(repository)
    title = next((c for c in nb.cells if c.cell_type == "markdown" and re.search(r"^# ", c.source, re.M)), None)
    if title is None:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(note, id="site-note"))
    else:  # after the title and its first paragraph
        m = re.search(r"^# .*\n+(?:.+\n)*?(?:\n|$)", title.source + "\n", re.M)
        title.source = title.source[:m.end()].rstrip("\n") + "\n\n" + note + "\n" + title.source[m.end():].lstrip("\n")
    nb.cells.append(nbformat.v4.new_markdown_cell("\n".join(sections), id="site-toctree"))
    staged["index.ipynb"] = nb
    for rel, nb in staged.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, src / rel)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "site", help="output folder (default: build/site)")
    parser.add_argument("--src", type=Path, default=ROOT / "build" / "site-src", help="staging folder")
    args = parser.parse_args(argv)
    started = time.monotonic()
    repository = site_repository()
    if repository is None:
        print(f"site: warning: {REPOSITORY_ENV} is not set: the pages link to no repository (no GitHub button, no "
              "launch badges) and tell readers to get the sources where they got the site; set it to owner/name "
              "for a published site", file=sys.stderr)
    counts = stage(args.src, repository)
    print("site 1/2: staged " + ", ".join(f"{n} {k}" for k, n in counts.items()) + f" in {args.src}")
    if args.out.exists():
        shutil.rmtree(args.out)
    doctrees = args.src.parent / "site-doctrees"
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-E", "-W", "--keep-going", "-j", "auto",
           "-c", str(CONF_DIR), "-d", str(doctrees), str(args.src), str(args.out)]
    base = os.environ.get("BASE_URL", "")
    print(f"site 2/2: sphinx-build into {args.out}" + (f" (BASE_URL={base})" if base else "")
          + (f"; launch links to {repository}" if repository else f"; no launch links ({REPOSITORY_ENV} is not set)"))
    env = {**os.environ, REPOSITORY_ENV: repository or ""}
    result = subprocess.run(cmd, cwd=ROOT, env=env)
    if result.returncode != 0:
        print("site: sphinx-build failed (warnings count as errors, see above)", file=sys.stderr)
        return result.returncode
    committed_downloads(args.out, repository)
    (args.out / ".nojekyll").touch()  # GitHub Pages: serve the _static/ and _images/ folders as they are
    slugs = placeholder_slugs(repository)
    named = files_naming(args.out, slugs)
    if named:
        print(f"site: the placeholder repository {', '.join(slugs)} appears in {len(named)} built files "
              f"({', '.join(named[:5])}{', ...' if len(named) > 5 else ''}): link to the repository only through "
              f"the launch badges, which {REPOSITORY_ENV}=owner/name turns on", file=sys.stderr)
        return 1
    shown = subset_site_font.site_characters(args.out)
    lacking = subset_site_font.missing(subset_site_font.FONT, shown) if subset_site_font.FONT.is_file() else shown
    if lacking:
        print(f"site: warning: the web font lacks {len(lacking)} CJK characters the pages show "
              f"({''.join(lacking[:20])}{'...' if len(lacking) > 20 else ''}): they fall back to the reader's "
              "fonts (boxes where there is none); `make site-font` regenerates it", file=sys.stderr)
    pages = sum(1 for _ in args.out.rglob("*.html"))
    print(f"site: {pages} pages in {args.out} ({time.monotonic() - started:.1f} s); "
          f"open {args.out / 'index.html'} or serve it: python -m http.server -d {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
