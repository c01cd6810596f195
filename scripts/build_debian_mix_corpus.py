#!/usr/bin/env python3
"""Build the ``debian_mix`` folder corpus: 20,000+ English documents from fifteen Debian bookworm packages (issue 33).

    mkdir -p build/debs && cd build/debs && apt-get download $(python ../../scripts/build_debian_mix_corpus.py --pins)
    python scripts/build_debian_mix_corpus.py build/debs       # bench/data/debian_mix.tar.xz + debian_mix_corpus.json
    python scripts/build_debian_mix_corpus.py --unpack DIR     # DIR/debian_mix/<doc_id>.txt (a folder corpus)

Sources: the packages of :data:`PACKAGES`, each pinned by name, version and the .deb's sha256 (checked before
anything is read; ``--pins`` prints ``name=version`` for ``apt-get download``; versions that leave Debian's archive
stay on snapshot.debian.org). Manuals and API references in HTML (PostgreSQL, Python, Django, SQLAlchemy, pandas,
SciPy, scikit-learn, CMake, OpenJDK, LibreOffice help, Git, Erlang/OTP) and man pages (Linux man-pages, Perl's
documentation), so no generator, subject or format dominates. The .deb is parsed in Python (``ar``, then
``data.tar.xz`` with :mod:`tarfile`), never installed.

``--set debian_holdout`` (``scripts/build_debian_holdout_corpus.py``) builds the held-out set's corpus by the same
rules from :data:`HOLDOUT_PACKAGES`, sixteen other packages (bench/data/README.md says how they were chosen); every
function takes the set's name or packages, and ``debian_mix``'s outputs are unchanged.

Rules, all deterministic:

* **Pages**: regular files of the package's folder (:attr:`Package.folder`); symlinks and hard links are aliases
  of another page and left out. HTML packages: ``*.html`` except the generators' lists and source views
  (:data:`DROP_HTML`: ``genindex``, ``py-modindex``, ``search``, ``_modules/``, ``_sources/``...; OpenJDK also
  ``class-use/``, ``index-files/``, ``package-use``, ``package-tree`` and the top-level index pages) and each
  package's own :attr:`Package.drop`. Man packages: ``man<N>/*.gz``; a page whose only request is ``.so`` is an
  alias (skipped as such).
* **HTML text**: ``scripts/build_kernel_corpora.py``'s converter (blocks, headings underlined with ``=``, ``-``,
  ``~``, ``pre`` kept, white space collapsed within a line), from each package's main element
  (:attr:`Package.content`, e.g. Sphinx ``div[role=main]``, javadoc ``main[role=main]``, DocBook
  ``body#docContent``, asciidoc ``body``) with its navigation (:attr:`Package.skip`) dropped; numpydoc's
  parameter types (``span.classifier``, which style sheets alone show as ``name : type``) are written after
  `` : ``. A package may name markup removed from its pages' source first (:attr:`Package.strip`: SQLite's menus,
  whose ``<li>`` are never closed). Pages must be UTF-8.
* **Man text**: GNU groff (:data:`GROFF_VERSION`, checked; Debian's ``groff-base``) renders each page:
  ``groff`` :data:`GROFF_ARGS` (UTF-8 input and output, ``tbl``, 78-column lines, no hyphenation, no overstrike
  or colour) on :data:`GROFF_PRELUDE` + the page: ``.na``, ``.nh`` and the requests ``ad`` and ``hy`` removed,
  so lines are never padded with spaces nor words split across lines, whatever the page asks; the environment
  is ``LC_ALL=C.UTF-8`` and ``PATH=/usr/bin:/bin`` and nothing else. Then :func:`man_text`: the running
  header and footer lines are dropped; the page's file name (``open.2`` -> ``open(2)``) becomes the title,
  underlined with ``=``; lines at column 0 (``NAME``, ``DESCRIPTION``) become headings underlined with ``-``,
  lines indented exactly 3 columns after a blank line (``.SS``) headings underlined with ``~``; other lines are
  kept as rendered (trailing white space stripped); runs of blank lines collapse to one; one final newline.
* **doc_id**: ``<prefix>__<path>`` (:attr:`Package.prefix`; ``pg__sql-select``, ``java__java.base__java__util__
  HashMap``, ``man__open.2``): the page's path under the package folder without ``.html`` / ``.gz`` and without
  the man section folder, characters outside ``[A-Za-z0-9._/-]`` written ``-``, each ``/`` written ``__``.
  Checked unique, at most 128 characters and a usable file stem (``[A-Za-z0-9_][A-Za-z0-9_.-]*``).
* **Kept**: NUL characters removed (a folder corpus refuses them; one javadoc page of ``debian_holdout`` prints
  Java's ``'\\0'`` as one, no ``debian_mix`` page has any), a document with at least :data:`MIN_CHARS` characters
  of text, in English (at most :data:`MAX_FOREIGN` of its letters outside ASCII; Perl's perlcn, perljp, perlko and perltw are not). A text
  longer than :data:`MAX_CHARS` characters is cut at its last blank line at or before that many characters (the
  cap keeps big references, e.g. ``java.lang.String``, without letting a few pages hold most of the corpus; the
  manifest lists each cut document with its full length). A text identical to one already kept (doc_ids in
  sorted order) is a duplicate and left out.

``bench/data/debian_mix_corpus.json`` (the manifest; the shape of ``kernel_corpora.json``) records each package
(version, .deb name and sha256, pages seen, documents kept, bytes, skipped counts), the renderer, the rules'
constants, and per corpus: documents, total UTF-8 bytes, ``corpus_sha256`` (the QA checker's definition),
``concat_sha256``, the archive's size and sha256, the documents per package, and the skipped pages by reason. The
archive ``bench/data/debian_mix.tar.xz`` is byte-identical across runs (``build_kernel_corpora.write_archive``:
sorted members, mtime 0, uid/gid 0, mode 0644, PAX, xz preset 9).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import re
import subprocess
import sys
import tarfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_kernel_corpora as kc  # noqa: E402

NAME = "debian_mix"
OUT_DIR = kc.OUT_DIR
MANIFEST = OUT_DIR / f"{NAME}_corpus.json"

MIN_CHARS = kc.MIN_CHARS
MAX_CHARS = 60_000
MAX_ARCHIVE_BYTES = 35 * 1024 * 1024
GROFF_VERSION = "GNU groff version 1.22.4"
GROFF_ARGS = ("-Kutf8", "-t", "-mandoc", "-Tutf8", "-rLL=78n", "-rHY=0", "-rcR=1", "-P-c", "-P-b", "-P-o", "-P-u")
GROFF_ENV = {"LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"}
GROFF_PRELUDE = ".na\n.nh\n.rm ad\n.rm hy\n"   # ragged right, no hyphenation, and pages cannot turn either back on
DROP_HTML = (r"(^|/)(genindex[^/]*|py-modindex|search|searchindex|sg_execution_times)\.html$"
             r"|(^|/)_(modules|sources|static|images)/")
MAX_FOREIGN = 0.10                    # a text whose letters are more than this share non-ASCII is not English
_STEM = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_SPHINX = ("div", "role", "main")


@dataclass(frozen=True)
class Package:
    """One pinned Debian package and how its pages become documents."""

    name: str
    version: str
    sha256: str
    prefix: str                      # doc_id prefix, before "__"
    label: str                       # what the questions call it
    folder: str                      # the pages' folder inside the .deb
    kind: str = "html"               # "html" or "man"
    content: tuple[str, str, str] = _SPHINX
    skip: dict = field(default_factory=dict)
    before: dict = field(default_factory=lambda: {"classifier": " : "})    # numpydoc's "name : type"
    drop: str = ""                   # regex of page paths (under folder) left out, besides DROP_HTML
    strip: str = ""                  # regex of page source removed before conversion (markup the parser cannot skip)

    @property
    def deb(self) -> str:
        return f"{self.name}_{self.version.replace(':', '%3a')}_all.deb"


PACKAGES = (
    Package("postgresql-doc-15", "15.20-0+deb12u1",
            "4c44bf2c599f208b3f46454a6cf7a72e25ec46ff74d37b59dd31ad76b00eebb7",
            "pg", "PostgreSQL 15 documentation", "usr/share/doc/postgresql-doc-15/html/",
            content=("body", "id", "docContent"), skip={"class": frozenset({"navheader", "navfooter"})}),
    Package("python3.11-doc", "3.11.2-6+deb12u9",
            "5b3594189d6ef9a6963ce0347fd307a1cc67620ad697e144db366070e2e146be",
            "python", "Python 3.11 documentation",
            "usr/share/doc/python3.11/html/"),
    Package("python-django-doc", "3:3.2.25-0+deb12u7",
            "87307f067916df72e17180d35b7cde5c7ea6080336cda518efd7f6e66988a7ca",
            "django", "Django 3.2 documentation",
            "usr/share/doc/python-django-doc/html/", content=("div", "id", "yui-main")),
    Package("python-sqlalchemy-doc", "1.4.46+ds1-1",
            "8805c3167ef75278ac6fd58ed9856321c2b2e3a7e441edba84b2eb955216d0fd",
            "sqlalchemy", "SQLAlchemy 1.4 documentation",
            "usr/share/doc/python-sqlalchemy-doc/html/"),
    Package("python-pandas-doc", "1.5.3+dfsg-2",
            "4998405ff6b12432f46594963e95554ade1104705795428396345fca58d853f8",
            "pandas", "pandas 1.5 documentation",
            "usr/share/doc/python-pandas-doc/html/", content=("main", "role", "main"),
            skip={"class": frozenset({"prev-next-area"})}),
    Package("python-scipy-doc", "1.10.1-2",
            "a237fdcef1675622f1a5d8a291c64feba140615130ee625554f94772d4ea3ad7",
            "scipy", "SciPy 1.10 documentation",
            "usr/share/doc/python-scipy-doc/html/", content=("main", "role", "main"),
            skip={"class": frozenset({"prev-next-area"})}),
    Package("python-sklearn-doc", "1.2.1+dfsg-1",
            "4e244556326064e87e7563e3e544c2288d44b5719db2d7b3a85c9a84ae93488d",
            "sklearn", "scikit-learn 1.2 documentation",
            "usr/share/doc/python-sklearn-doc/html/"),
    Package("cmake-doc", "3.25.1-1",
            "6e805a758ffed87cc7ea234cf0a7a1bb8ae78b93d8b5783e7fb989a6320f8133",
            "cmake", "CMake 3.25 documentation", "usr/share/doc/cmake-data/html/"),
    Package("openjdk-17-doc", "17.0.21.1+2-1~deb12u1",
            "3e04db24dbcb31d598774973998f1d8212e3424e288befbfef235077325f841d",
            "java", "OpenJDK 17 API documentation",
            "usr/share/doc/openjdk-17-jre-headless/api/", content=("main", "role", "main"),
            skip={"class": frozenset({"table-tabs"})},
            drop=r"(^|/)(class-use|index-files)/|(^|/)package-(use|tree)\.html$|^[^/]+\.html$"),
    Package("libreoffice-help-en-us", "4:7.4.7-1+deb12u14",
            "8faa840285734d6cfe1ed25537b48f07e74bd6412e3917bf8e5f8a653f7b3712",
            "libreoffice", "LibreOffice 7.4 help",
            "usr/share/libreoffice/help/en-US/text/", content=("div", "id", "DisplayArea")),
    Package("git-doc", "1:2.39.5-0+deb12u3",
            "3c89668a11053a6bafade3de1f611f4613db31e082af63f43d8c5b69ad8795ec",
            "git", "Git 2.39 documentation", "usr/share/doc/git-doc/",
            content=("body", "", ""), skip={"id": frozenset({"footer"})}),
    Package("erlang-doc", "1:25.2.3+dfsg-1+deb12u4",
            "7d172cecfdd9c2930b27c776ad226ffcc84670375cf830c79ee41c6944e8a1c8",
            "erlang", "Erlang/OTP 25 documentation",
            "usr/share/doc/erlang-doc/", content=("div", "id", "content"), skip={"class": frozenset({"footer"})}),
    Package("manpages", "6.03-2",
            "efa1ba4cd19ad7baeae959c9209a7eb74be2ebb858bcabb412597bfc9f588c91",
            "man", "Linux man-pages", "usr/share/man/", kind="man"),
    Package("manpages-dev", "6.03-2",
            "96f55cb5e26231d5567c89b692bced63825a14a2d5bd18fdf16ea2ed44eb9838",
            "mandev", "Linux man-pages (development)", "usr/share/man/", kind="man"),
    Package("perl-doc", "5.36.0-7+deb12u4",
            "f4269cff4576d6f02a6756df842988e58451c7e945b08517dd235531b24e48f8",
            "perl", "Perl 5.36 documentation", "usr/share/man/", kind="man"),
)


#: gtk-doc's pages (GLib, GTK): the whole body without the navigation tables, its API indexes and lists left out.
GTK_DOC = {"content": ("body", "", ""), "skip": {"class": frozenset({"navigation", "footer"})},
           "drop": r"(^|/)(api-index-[^/]*|annotation-glossary|ix[0-9]+|object-tree)\.html$"}

#: The held-out set's packages (issue 33: a second set no reader change was tuned on): none of them in
#: :data:`PACKAGES`; texinfo, Doxygen, gtk-doc, Sphinx (three themes), javadoc, Apache's and SQLite's own HTML,
#: Node.js's API pages, and OpenSSL's man pages.
HOLDOUT_PACKAGES = (
    Package("octave-doc", "7.3.0-2",
            "b27897cc7e3d688daa5cb8f8d1ea47077f3fbd205ce32e22522200ff0c1eadd5",
            "octave", "GNU Octave 7.3 manual", "usr/share/doc/octave/octave.html/",
            content=("body", "", ""), skip={"class": frozenset({"header"})}, drop=r"(^|/)[A-Za-z-]+-Index\.html$"),
    Package("libeigen3-doc", "3.4.0-4",
            "87fc424386cef92f58d0594936fa668d1b73d6e52232d2f99369e3e66aa5c0ff",
            "eigen", "Eigen 3.4 documentation", "usr/share/doc/libeigen3-dev/html/",
            content=("div", "id", "doc-content"),
            skip={"id": frozenset({"MSearchSelectWindow", "MSearchResultsWindow"})},
            drop=r"^unsupported/|(^|/)search/|-members\.html$|_source\.html$|_1_1doxygen_1_1|(^|/)(dir_[0-9a-f]+"
                 r"|annotated|classes|files|functions[^/]*|globals[^/]*|hierarchy|inherits|modules|namespaces"
                 r"|namespacemembers[^/]*|pages|deprecated)\.html$"),
    Package("python-dask-doc", "2022.12.1+dfsg-2",
            "81fc4cc36bfc939ed9ff28c2423d921909cfbef1af69055131b79ab69a33b615",
            "dask", "Dask 2022.12 documentation", "usr/share/doc/python-dask-doc/html/",
            content=("main", "role", "main"), skip={"class": frozenset({"topbar", "bd-toc", "prev-next-area"})}),
    Package("sqlite3-doc", "3.40.1-2+deb12u2",
            "466e30d7066e2641fa13e56bc662a2ad521b8cc9c17dde9c9dac3d4f105e32f2",
            "sqlite", "SQLite 3.40 documentation", "usr/share/doc/sqlite3/",
            content=("body", "", ""), skip={"class": frozenset({"tagline", "searchmenu", "fancy_toc"})},
            strip=r'(?s)<div class="menu [a-z]+"( id="submenu")?>.*?</ul>\s*</div>',    # its <li> are never closed
            drop=r"(^|/)(doc_[a-z]+_crossref|doclist|keyword_index|sitemap)\.html$"),
    Package("apache2-doc", "2.4.71-1~deb12u1",
            "a7b3d1131c1c63dbf9999b28e75f9a133d30f70492b419936bd51759ac77a01f",
            "apache", "Apache HTTP Server 2.4 documentation", "usr/share/doc/apache2-doc/manual/en/",
            content=("div", "id", "page-content"),
            skip={"class": frozenset({"toplang", "bottomlang"}), "id": frozenset({"quickview", "footer"})},
            drop=r"(^|/)(sitemap|quickreference|directives)\.html$"),
    Package("libglib2.0-doc", "2.74.6-2+deb12u9",
            "87a273d34af94a439764cf63fc81188f2527ae3280c29df58a907b33318eb8bc",
            "glib", "GLib 2.74 reference manual", "usr/share/gtk-doc/html/",
            **GTK_DOC),
    Package("libgtk-3-doc", "3.24.38-2~deb12u3",
            "50576efbab6f45f001295279b41aa26526c441b2f7b0365ee1e17f3a46f45f78",
            "gtk", "GTK 3.24 reference manual", "usr/share/gtk-doc/html/",
            **GTK_DOC),
    Package("python-pytest-doc", "7.2.1-2",
            "8cf17eb7826a2bbbc8207447fc888cbb75fd86680146542ebd9545e18229d3aa",
            "pytest", "pytest 7.2 documentation", "usr/share/doc/python-pytest-doc/html/"),
    Package("python-sympy-doc", "1.11.1-1",
            "2a1d50bd49738f0280308fc8d86d5fa5739dbc6391e1c754f4549bc3635e6a31",
            "sympy", "SymPy 1.11 documentation", "usr/share/doc/python-sympy-doc/html/",
            content=("article", "role", "main")),
    Package("nodejs-doc", "18.20.4+dfsg-1~deb12u3",
            "d2fbd4f3aecccea9d901a03842ef8380379e0d33010a48af5e797ed68ae874ce",
            "node", "Node.js 18 API documentation", "usr/share/doc/nodejs/api/",
            content=("div", "id", "apicontent"), skip={"class": frozenset({"mark"})}, drop=r"^(all|index)\.html$"),
    Package("libcommons-lang3-java-doc", "3.12.0-2+deb12u1",
            "d5e3456b97dbab73c7f6f39997ae108c515cc2a4182448a5c3e659ea3a5777a3",
            "lang3", "Apache Commons Lang 3.12 API documentation", "usr/share/doc/libcommons-lang3-java/api/",
            content=("main", "role", "main"), skip={"class": frozenset({"table-tabs"})},
            drop=r"(^|/)(class-use|index-files|src-html)/|(^|/)package-(use|tree)\.html$|^[^/]+\.html$"),
    Package("qtbase5-doc-html", "5.15.8+dfsg-11+deb12u3",
            "e052497a7db970f002807e3543043c11e46135641b8284b0a419086ba64f5f47",
            "qt", "Qt 5.15 documentation", "usr/share/qt5/doc/",
            content=("div", "class", "content mainContent"), skip={"class": frozenset({"sidebar", "footer"})},
            drop=r"-(members|obsolete)\.html$"),
    Package("gimp-help-en", "2.10.34-2",
            "a2deec76763aaf2fcdd197bac0736cdcb0770ba993d48d233329e1c92b0bfe36",
            "gimp", "GIMP 2.10 user manual", "usr/share/gimp/2.0/help/en/",
            content=("body", "", ""), skip={"class": frozenset({"navheader", "navfooter"})}),
    Package("postfix-doc", "3.7.11-0+deb12u1",
            "6b07bcc68991703acf747dc2500355bdd02aef0a048419b939752c39faf47d8d",
            "postfix", "Postfix 3.7 documentation", "usr/share/doc/postfix/html/", content=("body", "", "")),
    Package("libcurl4-doc", "7.88.1-10+deb12u15",
            "34fe1d613c249a9f02696777cbc06f95c50ea030413d596262f3a03aaf12eb62",
            "curl", "libcurl 7.88 manual", "usr/share/man/", kind="man"),
    Package("libssl-doc", "3.0.22-1~deb12u2",
            "b79995160eeb7673b3933bf270105e075814a13b3d499db8c65bb41735748b41",
            "openssl", "OpenSSL 3.0 manual", "usr/share/man/", kind="man"),
)


@dataclass(frozen=True)
class CorpusSet:
    """One corpus built by these rules: ``bench/data/<name>.tar.xz`` and ``<name>_corpus.json`` from ``packages``."""

    name: str
    packages: tuple[Package, ...]

    @property
    def manifest(self) -> Path:
        return OUT_DIR / f"{self.name}_corpus.json"


HOLDOUT = "debian_holdout"
#: Every corpus these rules build, by name (``--set``).
SETS = {s.name: s for s in (CorpusSet(NAME, PACKAGES), CorpusSet(HOLDOUT, HOLDOUT_PACKAGES))}


# --- pages ----------------------------------------------------------------------------------------------------


def read_pages(deb: Path, package: Package) -> tuple[dict[str, bytes], list[str]]:
    """``({path under the package folder: bytes}, [paths of links])`` for the package's pages in its .deb."""
    _, body = kc.ar_member(deb, "data.tar")
    pages, links = {}, []
    suffix = ".html" if package.kind == "html" else ".gz"
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as tar:
        for member in tar:
            path = member.name[2:] if member.name.startswith("./") else member.name
            if not path.startswith(package.folder) or not path.endswith(suffix):
                continue
            rel = path[len(package.folder):]
            if package.kind == "man" and not re.fullmatch(r"man[0-9]/[^/]+", rel):
                continue
            if package.kind == "html" and (re.search(DROP_HTML, rel) or package.drop and re.search(package.drop, rel)):
                continue
            if member.issym() or member.islnk():
                links.append(rel)
            elif member.isfile():
                pages[rel] = tar.extractfile(member).read()
    return pages, links


def doc_id_of(package: Package, rel: str) -> str:
    """``<prefix>__<path>``: ``java.base/java/util/HashMap.html`` -> ``java__java.base__java__util__HashMap``."""
    stem = rel.split("/", 1)[1][: -len(".gz")] if package.kind == "man" else rel[: -len(".html")]
    return f"{package.prefix}{kc.SEPARATOR}" + re.sub(r"[^A-Za-z0-9._/-]", "-", stem).replace("/", kc.SEPARATOR)


# --- man pages ------------------------------------------------------------------------------------------------


def is_alias(source: str) -> bool:
    """A man page whose only request is ``.so other`` (comments and blank lines aside)."""
    lines = [line for line in source.splitlines() if line.strip() and not re.match(r'\.\s*\\"|\'\\"', line)]
    return len(lines) == 1 and lines[0].startswith(".so ")


def render_man(source: str) -> str | None:
    """groff's plain-text rendering of one man page (the module docstring's command), or None when groff fails."""
    run = subprocess.run(["groff", *GROFF_ARGS], input=(GROFF_PRELUDE + source).encode("utf-8"), capture_output=True,
                         env=GROFF_ENV, check=False)
    return run.stdout.decode("utf-8") if run.returncode == 0 else None


def man_text(rendered: str, title: str) -> str:
    """Rendered man page -> corpus text: ``title`` (``open(2)``) and headings underlined, header and footer dropped."""
    lines = [line.rstrip() for line in rendered.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    body = lines[1:-1]                 # the running header (name, manual, name) and footer (source, date, name)
    out = [title, "=" * len(title), ""]
    for i, line in enumerate(body):
        if line and not line[0].isspace():
            out += ["", line, "-" * len(line), ""]
        elif re.match(r"   \S", line) and (i == 0 or not body[i - 1]):
            out += ["", line.strip(), "~" * len(line.strip()), ""]
        else:
            out.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n") + "\n"


def man_title(rel: str) -> str:
    """``man2/open.2.gz`` -> ``open(2)``; ``man3/App::Cpan.3perl.gz`` -> ``App::Cpan(3perl)``."""
    name, section = rel.split("/", 1)[1][: -len(".gz")].rsplit(".", 1)
    return f"{name}({section})"


def groff_version() -> str:
    run = subprocess.run(["groff", "--version"], capture_output=True, text=True, env=GROFF_ENV, check=False)
    return run.stdout.splitlines()[0].strip() if run.returncode == 0 and run.stdout else ""


# --- documents ------------------------------------------------------------------------------------------------


def is_english(text: str) -> bool:
    """At most MAX_FOREIGN of the text's letters are outside ASCII (Perl's perlcn, perljp, perlko, perltw are not)."""
    letters = [c for c in text if c.isalpha()]
    return sum(not c.isascii() for c in letters) <= MAX_FOREIGN * len(letters)


def page_text(job: tuple[Package, str, bytes]) -> tuple[str, str]:
    """``(outcome, text)`` of one page: outcome ``ok``, ``alias``, ``not_utf8`` or ``groff_failed``."""
    package, rel, raw = job
    if package.kind == "man":
        raw = gzip.decompress(raw)
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "not_utf8", ""
    if package.kind == "html":
        source = re.sub(package.strip, "", source) if package.strip else source
        return "ok", kc.html_to_text(source, package.content, package.skip, package.before)
    if is_alias(source):
        return "alias", ""
    rendered = render_man(source)
    return ("ok", man_text(rendered, man_title(rel))) if rendered is not None else ("groff_failed", "")


def capped(text: str) -> str:
    """``text`` cut at its last blank line at or before MAX_CHARS characters (whole when shorter)."""
    if len(text) <= MAX_CHARS:
        return text
    cut = text.rfind("\n\n", 0, MAX_CHARS + 1)
    return text[:cut if cut > 0 else MAX_CHARS].rstrip("\n") + "\n"


def build(debs: dict[str, Path], workers: int = 2,
          packages: tuple[Package, ...] = PACKAGES) -> tuple[dict[str, str], dict]:
    """``({doc_id: text}, report)``: every package's documents by the module docstring's rules."""
    jobs, links, seen = [], {}, {}
    for package in packages:
        pages, links[package.name] = read_pages(debs[package.name], package)
        seen[package.name] = len(pages)
        jobs += [(package, rel, pages[rel]) for rel in sorted(pages)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        outcomes = list(pool.map(page_text, jobs, chunksize=64))
    docs: dict[str, str] = {}
    owner: dict[str, str] = {}
    skipped = {p.name: {"link": sorted(doc_id_of(p, r) for r in links[p.name]), "alias": [], "not_utf8": [],
                        "groff_failed": [], "short": [], "not_english": [],
                        "duplicate": {}} for p in packages}
    cut: dict[str, int] = {}
    texts: dict[str, str] = {}
    for (package, rel, _), (outcome, text) in zip(jobs, outcomes):
        doc_id = doc_id_of(package, rel)
        text = text.replace("\0", "")          # a folder corpus refuses NUL (javadoc shows Java's '\0' as one)
        if not 1 <= len(doc_id) <= kc.MAX_DOC_ID_CHARS or not _STEM.fullmatch(doc_id) or ".." in doc_id:
            raise SystemExit(f"doc_id {doc_id!r} is not a usable file stem")
        if doc_id in owner:
            raise SystemExit(f"duplicate doc_id {doc_id!r}")
        owner[doc_id] = package.name
        if outcome != "ok":
            skipped[package.name][outcome].append(doc_id)
        elif len(text.strip()) < MIN_CHARS:
            skipped[package.name]["short"].append(doc_id)
        elif not is_english(text):
            skipped[package.name]["not_english"].append(doc_id)
        else:
            texts[doc_id] = text
    first: dict[str, str] = {}
    for doc_id in sorted(texts):
        text = capped(texts[doc_id])
        if text in first:
            skipped[owner[doc_id]]["duplicate"][doc_id] = first[text]
            continue
        first[text] = doc_id
        if text != texts[doc_id]:
            cut[doc_id] = len(texts[doc_id])
        docs[doc_id] = text
    report = {"pages_seen": seen, "skipped": skipped, "capped": cut}
    return docs, report


def package_of(doc_id: str) -> str:
    """The doc_id's prefix (``pg`` for ``pg__sql-select``)."""
    return doc_id.split(kc.SEPARATOR, 1)[0]


def load_corpus(data_dir: Path = OUT_DIR, name: str = NAME) -> dict[str, str]:
    """The corpus as ``{doc_id: text}``, read from its archive and checked against the manifest's sha256."""
    return kc.load_corpus(name, data_dir, SETS[name].manifest.name)


def unpack(dest: Path, data_dir: Path = OUT_DIR, name: str = NAME) -> Path:
    """Write ``dest/<name>/<doc_id>.txt`` (the folder the eval CLI's ``--corpus`` reads)."""
    return kc.unpack(dest, data_dir, (name,), SETS[name].manifest.name)[0]


# --- main -----------------------------------------------------------------------------------------------------


def find_debs(folder: Path, packages: tuple[Package, ...] = PACKAGES) -> dict[str, Path]:
    """Each package's .deb in ``folder``, checked against its pinned sha256."""
    debs = {}
    for package in packages:
        path = folder / package.deb
        if not path.is_file():
            raise SystemExit(f"{path.name} is missing: apt-get download {package.name}={package.version}")
        digest = kc.sha256_file(path)
        if digest != package.sha256:
            raise SystemExit(f"{path.name}: sha256 {digest}, expected {package.sha256}")
        debs[package.name] = path
    return debs


def manifest_of(docs: dict[str, str], report: dict, archive: Path, name: str = NAME) -> dict:
    packages = SETS[name].packages
    per_package = {p.name: sum(package_of(d) == p.prefix for d in docs) for p in packages}
    sources = []
    for p in packages:
        mine = [d for d in docs if package_of(d) == p.prefix]
        skipped = report["skipped"][p.name]
        sources.append({"package": p.name, "version": p.version, "deb": p.deb, "sha256": p.sha256,
                        "prefix": p.prefix, "label": p.label, "kind": p.kind, "folder": p.folder,
                        "pages_seen": report["pages_seen"][p.name], "documents": len(mine),
                        "total_bytes": sum(len(docs[d].encode("utf-8")) for d in mine),
                        "capped": sum(d in report["capped"] for d in mine),
                        "skipped": {k: len(v) for k, v in skipped.items()}})
    skipped_all = {k: {p.name: report["skipped"][p.name][k] for p in packages if report["skipped"][p.name][k]}
                   for k in ("short", "not_english", "alias", "link", "not_utf8", "groff_failed", "duplicate")}
    return {
        "name": name, "sources": sources,
        "renderer": {"man": {"groff": GROFF_VERSION, "args": list(GROFF_ARGS), "env": GROFF_ENV,
                             "prepended": GROFF_PRELUDE}, "html": "scripts/build_kernel_corpora.py html_to_text"},
        "rules": "scripts/build_debian_mix_corpus.py (module docstring) and bench/data/README.md",
        "min_chars": MIN_CHARS, "max_chars": MAX_CHARS, "doc_id_separator": kc.SEPARATOR,
        "corpora": {name: {
            "documents": len(docs), "total_bytes": sum(len(t.encode("utf-8")) for t in docs.values()),
            "corpus_sha256": kc.corpus_sha256(docs), "concat_sha256": kc.concat_sha256(docs),
            "archive": archive.name, "archive_bytes": archive.stat().st_size,
            "archive_sha256": kc.sha256_file(archive), "documents_per_package": per_package,
            "capped": dict(sorted(report["capped"].items())), "skipped": skipped_all}},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("debs", nargs="?", type=Path, help="folder holding the pinned .debs")
    parser.add_argument("--set", default=NAME, choices=sorted(SETS), help="which corpus (default %(default)s)")
    parser.add_argument("--unpack", type=Path, metavar="DIR", help="unpack the built archive into DIR/<set>/")
    parser.add_argument("--pins", action="store_true", help="print name=version of every package (apt-get download)")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="where the archive and manifest go")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="processes converting pages")
    args = parser.parse_args(argv)
    name, packages = args.set, SETS[args.set].packages
    if args.pins:
        print(" ".join(f"{p.name}={p.version}" for p in packages))
        return 0
    if args.unpack:
        unpack(args.unpack, args.out, name)
        return 0
    if args.debs is None:
        parser.error("give the folder of .debs, --unpack DIR or --pins")
    if any(p.kind == "man" for p in packages) and groff_version() != GROFF_VERSION:
        raise SystemExit(f"groff is {groff_version()!r}, the man pages were rendered with {GROFF_VERSION!r}")
    docs, report = build(find_debs(args.debs, packages), args.workers, packages)
    args.out.mkdir(parents=True, exist_ok=True)
    archive = args.out / f"{name}.tar.xz"
    kc.write_archive(name, docs, archive)
    manifest = manifest_of(docs, report, archive, name)
    (args.out / SETS[name].manifest.name).write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n",
                                                     encoding="utf-8")
    corpus = manifest["corpora"][name]
    for source in manifest["sources"]:
        print(f"{source['package']:>26} {source['version']:<24} {source['documents']:>6,} documents "
              f"{source['total_bytes']:>12,} bytes; skipped {source['skipped']}")
    print(f"{name}: {corpus['documents']:,} documents, {corpus['total_bytes']:,} bytes of text, "
          f"archive {corpus['archive_bytes']:,} bytes, {len(corpus['capped'])} capped at {MAX_CHARS:,} characters")
    if corpus["archive_bytes"] > MAX_ARCHIVE_BYTES:
        print(f"warning: {archive.name} is over {MAX_ARCHIVE_BYTES:,} bytes", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
