"""Real corpora that ship offline. Taught in notebook 08.

* :func:`pydoc_corpus`: Python's documentation topics (``pydoc_data.topics``, in the standard
  library), one document per topic, ``doc_id`` = topic name, ``revision`` = the Python version they
  come from. Another patch release has other text, so by default the corpus is the copy of Python
  3.11.7's topics shipped in ``retrieval/data/`` (the QA set pins its spans against those bytes);
  ``pydoc_corpus("running")`` takes the running interpreter's instead.
* :func:`folder_corpus`: a team's own documents, one UTF-8 ``.txt`` file each; ``doc_id`` = the
  file name without ``.txt``, title = its first non-empty line, revision = a label you give or the
  first 12 hex digits of the file's sha256. Names starting with a dot are skipped, as a shell's ``*.txt`` does.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal

from .._documents import Document
from .._ids import MAX_DOC_ID_CHARS, RESERVED, is_doc_id
from .._index import MAX_STORED_BYTES, sha256_hex
from .._lines import token
from .._tools import MAX_TITLE_CHARS
from ._pinned import PINNED_PYDOC, PINNED_PYDOC_VERSION
from ._pinned import pydoc_topics as topics_of

__all__ = ["PINNED_PYDOC", "PINNED_PYDOC_VERSION", "file_document", "folder_corpus", "folder_files", "pydoc_corpus"]

_TEXT_RULE = "a document is UTF-8 text without NUL bytes"


def first_line(text: str) -> str:
    """A text's first non-empty line, stripped and cut to :data:`MAX_TITLE_CHARS`: the title computed from a text."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:MAX_TITLE_CHARS]


def _title(text: str, fallback: str) -> str:
    return first_line(text) or fallback[:MAX_TITLE_CHARS]


def pydoc_corpus(source: Literal["pinned", "running"] = "pinned") -> list[Document]:
    """Python's documentation topics, one document each, sorted by topic name.

    ``"pinned"`` (the default): the copy of Python 3.11.7's 79 topics shipped with the library, the same
    bytes on every machine. ``"running"``: this interpreter's ``pydoc_data.topics``, revision = its version.
    """
    topics, revision = topics_of(source)
    return [Document(name, _title(text, name), revision, text) for name, text in sorted(topics.items())]


def _name_problem(name: str) -> str | None:
    """Why the file ``name`` (``<doc_id>.txt``) cannot be a document, or ``None``. The index judges the doc_id."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid UTF-8"
    doc_id = name[:-4]
    if is_doc_id(doc_id):  # the one grammar every issuer checks (the index judges a doc_id by it)
        return None
    if not doc_id:
        return "leaves an empty doc_id"
    if len(doc_id) > MAX_DOC_ID_CHARS:
        return f"leaves a doc_id of {len(doc_id):,} characters (at most {MAX_DOC_ID_CHARS})"
    if any(c.isspace() for c in doc_id):
        return "holds white space"
    if "\\" in doc_id:
        return "holds a backslash"
    if not doc_id.isprintable():
        return "holds a control character"
    return f"holds one of {RESERVED[:-1]}, which mark the parts of a citation"


def _read_capped(path: Path) -> bytes:
    """The bytes of one regular file (never through a symlink), refused by its size before it is read."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{token(path.name)} is not a regular file")
        if st.st_size > MAX_STORED_BYTES:
            raise ValueError(f"{token(path.name)} is {st.st_size:,} bytes, over the {MAX_STORED_BYTES:,}-byte "
                             "limit of one document")
        with os.fdopen(fd, "rb", closefd=False) as f:
            raw = f.read(MAX_STORED_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_STORED_BYTES:
        raise ValueError(f"{token(path.name)} grew past the {MAX_STORED_BYTES:,}-byte limit of one document "
                         "while it was read")
    return raw


def folder_files(folder: str | Path) -> list[os.DirEntry]:
    """The files a folder corpus is made of, sorted by name: every ``*.txt`` directly in ``folder`` that is a regular
    file (symlinks, FIFOs and folders are skipped) and whose name does not start with a dot, as a shell's ``*.txt``
    skips it (``.hidden.txt``, and the ``._notes.txt`` macOS writes beside a file, are not documents)."""
    with os.scandir(folder) as found:
        files = [e for e in found if e.name.endswith(".txt") and not e.name.startswith(".")
                 and e.is_file(follow_symlinks=False)]
    return sorted(files, key=lambda e: e.name)


def file_document(path: str | Path, revision: str | None = None) -> Document:
    """The document one file of a folder corpus holds: ``doc_id`` = the name without ``.txt``, title = its first
    non-empty line, revision = ``revision`` or the first 12 hex digits of the file's sha256.

    One rule for a file that cannot be a document, a ``ValueError`` naming it (by its name only, escaped with
    :func:`~evidence_lib._lines.token`): a name the index refuses as a doc_id (1-128 characters, no white space,
    control character, backslash or ``@#[]"'``, see :mod:`evidence_lib._ids`; a name that is not UTF-8), more than
    :data:`~evidence_lib._index.MAX_STORED_BYTES`, a symlink or anything but a regular file, and bytes that are not
    UTF-8 text: invalid UTF-8 or a NUL byte (either way, the byte's offset is given).
    """
    path = Path(path)
    why = _name_problem(path.name)
    if why:
        raise ValueError(f"file name {token(path.name)} {why}: rename it (the name without .txt is its doc_id)")
    raw = _read_capped(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{token(path.name)} is not valid UTF-8 (byte {e.start}): {_TEXT_RULE}") from None
    nul = raw.find(b"\0")
    if nul >= 0:
        raise ValueError(f"{token(path.name)} holds a NUL byte (byte {nul}): {_TEXT_RULE}")
    label = revision if revision is not None else sha256_hex(raw)[:12]
    return Document(path.name[:-4], _title(text, path.name[:-4]), label, text)


def folder_corpus(folder: str | Path, revision: str | None = None) -> list[Document]:
    """Every file of :func:`folder_files` (``*.txt`` directly in ``folder``, no dotfiles, regular files only) as a
    document (:func:`file_document`), sorted by name.

    A file that cannot be a document (:func:`file_document`'s rule: its name, its size, bytes that are not UTF-8
    text, invalid UTF-8 and a NUL byte alike) is refused with a ``ValueError`` naming it, before anything is
    indexed. An MCP server that watches the folder (:class:`~evidence_lib.retrieval._folder.FolderSource`) leaves such
    a file out instead, and says so.
    """
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"not a folder: {token(root.name or str(folder))}")
    if revision is not None and not (isinstance(revision, str) and revision):
        raise ValueError("revision: a label is a non-empty string (None: each file's own sha256 prefix)")
    docs = [file_document(root / e.name, revision) for e in folder_files(root)]
    if not docs:
        raise ValueError(f"no .txt files in {token(root.name or str(folder))}")
    return docs
