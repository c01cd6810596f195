#!/usr/bin/env python3
"""Build two folder corpora from the Linux kernel's documentation as Debian ships it (issue 25, step 1).

    python scripts/build_kernel_corpora.py /path/to/linux-doc-6.1_6.1.192-3_all.deb   # writes bench/data/
    python scripts/build_kernel_corpora.py --unpack DIR        # DIR/kernel_en/*.txt and DIR/kernel_zh/*.txt
    apt-get download linux-doc-6.1                             # fetches the .deb again (Debian's archive)

Source: Debian's ``linux-doc-6.1`` package, version :data:`DEB_VERSION`, checked against :data:`DEB_SHA256`
before anything is read. The .deb is parsed in Python (``ar`` members, then ``data.tar.xz`` with
:mod:`tarfile`); the HTML pages are under ``usr/share/doc/linux-doc-6.1/html/`` (3,185 pages).

Corpora (written as ``bench/data/<name>.tar.xz``, one ``<name>/<doc_id>.txt`` member per document):

* ``kernel_en``: every page outside ``translations/`` (English).
* ``kernel_zh``: every page under ``translations/zh_CN/`` (Simplified Chinese; the package ships 230 such
  pages, not 530: the other translations are it_IT, zh_TW, ja_JP and ko_KR, left out).

Rules, all deterministic:

* **Text** (standard library only, :mod:`html.parser`): only the content of the Sphinx ``div[role=main]``;
  ``script``, ``style``, ``nav``, ``footer`` and the ``¶`` permalinks (``a.headerlink``) are dropped. Block
  elements (paragraphs, list items, table cells, definition terms, headings, ...) are separated by one blank
  line. Inside a block the source's line breaks are kept, each line is stripped and runs of white space within
  it collapse to one space. ``pre`` blocks keep their lines and indentation (trailing white space stripped).
  A heading is its own block, underlined on the next line with ``=`` (h1), ``-`` (h2) or ``~`` (h3-h6) as long
  as the heading, so the first line of a document is its title and sections can be found in plain text.
  Runs of blank lines collapse to one; the text ends with one newline.
* **doc_id**: the page's path under the html root without ``.html``; characters outside ``[A-Za-z0-9._/-]``
  become ``-``; then each ``/`` becomes ``__`` (two underscores), because a folder corpus reads only ``*.txt``
  directly in its folder (``folder_corpus`` accepts no subfolders) and the Deep Agents flow accepts only
  ``[A-Za-z0-9_][A-Za-z0-9_.-]*`` as a file stem. No page path holds ``__``, ``/_`` or ``_/``, which the
  script checks, so the mapping is reversible; doc_ids are checked unique and at most 128 characters.
* **Skipped**: pages whose text is under :data:`MIN_CHARS` characters (indexes, genindex, search) and pages over
  the folder corpus's 64 MiB per-document limit (none).

``bench/data/kernel_corpora.json`` (the manifest) records per corpus: documents, total UTF-8 bytes,
``corpus_sha256`` (the QA checker's definition: sha256 of ``json.dumps(sorted(docs.items()),
ensure_ascii=False, separators=(",", ":"))``), ``concat_sha256`` (sha256 of the documents' UTF-8 bytes
concatenated in sorted doc_id order), the archive's size and sha256, skipped pages; and the .deb's name,
version and sha256. Archives are byte-identical across runs (sorted members, mtime 0, uid/gid 0, mode 0644,
PAX format, xz preset 9).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import lzma
import re
import sys
import tarfile
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / "bench" / "data"
MANIFEST = OUT_DIR / "kernel_corpora.json"

DEB_NAME = "linux-doc-6.1_6.1.192-3_all.deb"
DEB_VERSION = "6.1.192-3"
DEB_SHA256 = "f18dfe28dcab7bdbf9185be16b9521f5841277a6a96c374a6683a648d5d5fa4f"
HTML_ROOT = "usr/share/doc/linux-doc-6.1/html/"

MIN_CHARS = 200                       # shorter pages are indexes, genindex, search
MAX_DOC_BYTES = 64 * 1024 * 1024      # evidence_lib._index.MAX_STORED_BYTES (folder_corpus refuses bigger files)
MAX_DOC_ID_CHARS = 128                # evidence_lib._ids.MAX_DOC_ID_CHARS
MAX_ARCHIVE_BYTES = 15 * 1024 * 1024
SEPARATOR = "__"
CORPORA = ("kernel_en", "kernel_zh")

_BLOCK = {"p", "div", "section", "article", "aside", "blockquote", "li", "ul", "ol", "dl", "dt", "dd",
          "table", "thead", "tbody", "tr", "td", "th", "caption", "figure", "figcaption", "hr", "br",
          "h1", "h2", "h3", "h4", "h5", "h6", "pre", "details", "summary"}
_SKIP = {"script", "style", "nav", "footer", "noscript", "template"}
_VOID = {"br", "hr", "img", "input", "meta", "link", "col", "area", "base", "wbr", "source", "embed"}
_UNDERLINE = {"h1": "=", "h2": "-"}
_SPACE_RUN = re.compile(r"[^\S\n]+")


class MainText(HTMLParser):
    """Plain text of a page's main element (see the module docstring for the rules).

    ``root`` is ``(tag, attribute, value)`` of the element whose content is kept (the kernel's Sphinx pages:
    ``div[role=main]``; an empty attribute takes the first element of that tag); ``skip`` names further elements
    dropped with their content, by class or id (``{"class": {"navheader"}, "id": {"toc"}}``), besides
    :data:`_SKIP` and ``a.headerlink``; ``before`` maps a class to the text written before such an element
    (numpydoc's ``span.classifier`` is shown as ``name : type`` by style sheets alone). Other generators' pages
    (javadoc, DocBook, asciidoc) differ only in these; ``scripts/build_debian_mix_corpus.py`` names them.
    """

    def __init__(self, root: tuple[str, str, str] = ("div", "role", "main"),
                 skip: dict[str, frozenset[str]] | None = None, before: dict[str, str] | None = None) -> None:
        super().__init__(convert_charrefs=True)
        self.root = root
        self.skip = skip or {}
        self.before = before or {}
        self.blocks: list[tuple[str, str]] = []   # (kind, raw text): kind "text", "pre" or "h1".."h6"
        self.buf: list[str] = []
        self.main_depth = 0        # open root-tag elements inside (and including) the root; 0 = outside
        self.skip_stack: list[str] = []
        self.pre = 0
        self.heading: str | None = None

    def _skipped(self, tag: str, a: dict) -> bool:
        classes = (a.get("class") or "").split()
        if tag in _SKIP or (tag == "a" and "headerlink" in classes):
            return True
        return bool(self.skip.get("class", frozenset()).intersection(classes)) or a.get("id") in self.skip.get("id", ())

    def _flush(self) -> None:
        text = "".join(self.buf)
        self.buf = []
        kind = self.heading or ("pre" if self.pre else "text")
        if text.strip():
            self.blocks.append((kind, text))

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        root_tag, attribute, value = self.root
        if self.main_depth == 0:
            if tag == root_tag and (not attribute or a.get(attribute) == value):
                self.main_depth = 1
            return
        if tag == root_tag:
            self.main_depth += 1
        if self.skip_stack:
            if tag not in _VOID:
                self.skip_stack.append(tag)
            return
        if self._skipped(tag, a):
            if tag not in _VOID:
                self.skip_stack.append(tag)
            return
        for name in (a.get("class") or "").split():
            if name in self.before:
                self.buf.append(self.before[name])
        if tag in _BLOCK:
            self._flush()
            if tag == "pre":
                self.pre += 1
            elif tag in {"h1", "h2", "h3", "h4", "h5", "h6"}:
                self.heading = tag

    def handle_endtag(self, tag):
        if self.main_depth == 0:
            return
        if tag == self.root[0]:
            self.main_depth -= 1
        if self.skip_stack:
            if self.skip_stack[-1] == tag:
                self.skip_stack.pop()
            return
        if tag in _BLOCK:
            self._flush()
            if tag == "pre":
                self.pre = max(0, self.pre - 1)
            elif tag == self.heading:
                self.heading = None

    def handle_data(self, data):
        if self.main_depth and not self.skip_stack:
            self.buf.append(data)

    def text(self) -> str:
        self._flush()
        out = []
        for kind, raw in self.blocks:
            if kind == "pre":
                lines = [line.rstrip() for line in raw.expandtabs(8).split("\n")]
                while lines and not lines[0]:
                    lines.pop(0)
                while lines and not lines[-1]:
                    lines.pop()
                out.append("\n".join(lines))
                continue
            lines = [_SPACE_RUN.sub(" ", line).strip() for line in raw.split("\n")]
            lines = [line for line in lines if line]
            if kind.startswith("h"):
                title = " ".join(lines)
                out.append(title + "\n" + _UNDERLINE.get(kind, "~") * len(title))
            else:
                out.append("\n".join(lines))
        return "\n\n".join(block for block in out if block) + "\n"


def html_to_text(html: str, root: tuple[str, str, str] = ("div", "role", "main"),
                 skip: dict[str, frozenset[str]] | None = None, before: dict[str, str] | None = None) -> str:
    """The main content of one page as plain text (a Sphinx page's ``div[role=main]`` unless ``root`` says else)."""
    parser = MainText(root, skip, before)
    parser.feed(html)
    parser.close()
    return parser.text()


def doc_id_of(page: str) -> str:
    """``admin-guide/mm/index.html`` -> ``admin-guide__mm__index``."""
    path = re.sub(r"[^A-Za-z0-9._/-]", "-", page[: -len(".html")])
    if SEPARATOR in path or "/_" in path or "_/" in path:
        raise SystemExit(f"page path {page!r} would make the {SEPARATOR!r} mapping ambiguous")
    return path.replace("/", SEPARATOR)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def ar_member(deb: Path, prefix: str) -> tuple[str, bytes]:
    """(name, bytes) of the first ``ar`` member of ``deb`` whose name starts with ``prefix``."""
    data = deb.read_bytes()
    if data[:8] != b"!<arch>\n":
        raise SystemExit(f"{deb.name}: not an ar archive")
    pos = 8
    while pos + 60 <= len(data):
        header = data[pos:pos + 60]
        name = header[:16].decode("ascii").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        body = data[pos + 60:pos + 60 + size]
        if name.startswith(prefix):
            return name, body
        pos += 60 + size + (size & 1)
    raise SystemExit(f"{deb.name}: no {prefix}* member")


def read_pages(deb: Path) -> dict[str, str]:
    """``{page path under the html root: html}`` for every ``.html`` page in the .deb's data tarball."""
    name, body = ar_member(deb, "data.tar")
    pages = {}
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as tar:
        for member in tar:
            path = member.name[2:] if member.name.startswith("./") else member.name
            if member.isfile() and path.startswith(HTML_ROOT) and path.endswith(".html"):
                pages[path[len(HTML_ROOT):]] = tar.extractfile(member).read().decode("utf-8")
    return pages


def corpus_of(page: str) -> str | None:
    if not page.startswith("translations/"):
        return "kernel_en"
    if page.startswith("translations/zh_CN/"):
        return "kernel_zh"
    return None


def build(pages: dict[str, str]) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, list[str]]]]:
    """``({corpus: {doc_id: text}}, {corpus: {"short": [...], "too_big": [...]}})``."""
    corpora: dict[str, dict[str, str]] = {c: {} for c in CORPORA}
    skipped: dict[str, dict[str, list[str]]] = {c: {"short": [], "too_big": []} for c in CORPORA}
    for page in sorted(pages):
        corpus = corpus_of(page)
        if corpus is None:
            continue
        text = html_to_text(pages[page])
        doc_id = doc_id_of(page)
        if len(text.strip()) < MIN_CHARS:
            skipped[corpus]["short"].append(doc_id)
            continue
        if len(text.encode("utf-8")) > MAX_DOC_BYTES:
            skipped[corpus]["too_big"].append(doc_id)
            continue
        if not 1 <= len(doc_id) <= MAX_DOC_ID_CHARS or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", doc_id) \
                or ".." in doc_id:
            raise SystemExit(f"doc_id {doc_id!r} is not a usable file stem")
        if doc_id in corpora[corpus]:
            raise SystemExit(f"duplicate doc_id {doc_id!r}")
        corpora[corpus][doc_id] = text
    return corpora, skipped


def corpus_sha256(docs: dict[str, str]) -> str:
    """The QA checker's definition (evidence_lib/eval/_qa_check.py ``corpus_sha256``)."""
    payload = json.dumps(sorted(docs.items()), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def concat_sha256(docs: dict[str, str]) -> str:
    h = hashlib.sha256()
    for doc_id in sorted(docs):
        h.update(docs[doc_id].encode("utf-8"))
    return h.hexdigest()


def write_archive(name: str, docs: dict[str, str], path: Path) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for doc_id in sorted(docs):
            data = docs[doc_id].encode("utf-8")
            info = tarfile.TarInfo(f"{name}/{doc_id}.txt")
            info.size, info.mtime, info.mode, info.uid, info.gid = len(data), 0, 0o644, 0, 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(lzma.compress(raw.getvalue(), format=lzma.FORMAT_XZ, preset=9))


def read_archive(path: Path) -> dict[str, str]:
    """``{doc_id: text}`` from one ``bench/data/<name>.tar.xz`` (members checked: ``<name>/<stem>.txt``)."""
    name = path.name[: -len(".tar.xz")]
    docs = {}
    with tarfile.open(path, mode="r:xz") as tar:
        for member in tar:
            match = re.fullmatch(rf"{re.escape(name)}/([A-Za-z0-9_][A-Za-z0-9_.-]*)\.txt", member.name)
            if not member.isfile() or not match or ".." in match.group(1):
                raise SystemExit(f"{path.name}: unexpected member {member.name!r}")
            docs[match.group(1)] = tar.extractfile(member).read().decode("utf-8")
    return docs


def load_corpus(name: str, data_dir: Path = OUT_DIR, manifest: str = MANIFEST.name) -> dict[str, str]:
    """One corpus as ``{doc_id: text}``, read from its archive and checked against the manifest's sha256."""
    docs = read_archive(data_dir / f"{name}.tar.xz")
    expected = json.loads((data_dir / manifest).read_text(encoding="utf-8"))["corpora"][name]["corpus_sha256"]
    if corpus_sha256(docs) != expected:
        raise SystemExit(f"{name}: the archive does not match the manifest's corpus_sha256")
    return docs


def unpack(dest: Path, data_dir: Path = OUT_DIR, names: tuple[str, ...] = CORPORA,
           manifest: str = MANIFEST.name) -> list[Path]:
    """Write ``dest/<name>/<doc_id>.txt`` for every corpus (the folder the eval CLI's ``--corpus`` reads)."""
    folders = []
    for name in names:
        docs = load_corpus(name, data_dir, manifest)
        folder = dest / name
        folder.mkdir(parents=True, exist_ok=True)
        stale = [p for p in folder.glob("*.txt") if p.stem not in docs]
        if stale:
            raise SystemExit(f"{folder}: holds {len(stale)} .txt files that are not in {name}; use an empty folder")
        for doc_id, text in docs.items():
            (folder / f"{doc_id}.txt").write_bytes(text.encode("utf-8"))
        folders.append(folder)
        print(f"{name}: {len(docs):,} documents in {folder}")
    return folders


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("deb", nargs="?", type=Path, help=f"path to {DEB_NAME} (apt-get download linux-doc-6.1)")
    parser.add_argument("--unpack", type=Path, metavar="DIR", help="unpack the built archives into DIR/<corpus>/")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="where the archives and manifest go")
    args = parser.parse_args(argv)
    if args.unpack:
        unpack(args.unpack, args.out)
        return 0
    if args.deb is None:
        parser.error("give the .deb path, or --unpack DIR")
    digest = sha256_file(args.deb)
    if digest != DEB_SHA256:
        raise SystemExit(f"{args.deb.name}: sha256 {digest}, expected {DEB_SHA256} ({DEB_NAME})")
    pages = read_pages(args.deb)
    corpora, skipped = build(pages)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = {"source": {"package": "linux-doc-6.1", "deb": DEB_NAME, "version": DEB_VERSION,
                           "sha256": DEB_SHA256, "html_pages": len(pages)},
                "rules": "scripts/build_kernel_corpora.py (module docstring)", "min_chars": MIN_CHARS,
                "doc_id_separator": SEPARATOR, "corpora": {}}
    for name in CORPORA:
        docs = corpora[name]
        archive = args.out / f"{name}.tar.xz"
        write_archive(name, docs, archive)
        size = archive.stat().st_size
        manifest["corpora"][name] = {
            "documents": len(docs), "total_bytes": sum(len(t.encode("utf-8")) for t in docs.values()),
            "corpus_sha256": corpus_sha256(docs), "concat_sha256": concat_sha256(docs),
            "archive": archive.name, "archive_bytes": size, "archive_sha256": sha256_file(archive),
            "skipped_short": skipped[name]["short"], "skipped_too_big": skipped[name]["too_big"]}
        print(f"{name}: {len(docs):,} documents, {manifest['corpora'][name]['total_bytes']:,} bytes of text, "
              f"archive {size:,} bytes; skipped {len(skipped[name]['short'])} short, "
              f"{len(skipped[name]['too_big'])} too big")
        if size > MAX_ARCHIVE_BYTES:
            print(f"warning: {archive.name} is over {MAX_ARCHIVE_BYTES:,} bytes", file=sys.stderr)
    (args.out / MANIFEST.name).write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n",
                                          encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
