"""Real corpora that ship offline. Taught in notebook 08.

* :func:`pydoc_corpus`: Python's documentation topics (``pydoc_data.topics``, in the standard
  library), one document per topic, ``doc_id`` = topic name, ``revision`` = the Python version they
  come from. Another patch release has other text, so by default the corpus is the copy of Python
  3.11.7's topics shipped in ``retrieval/data/`` (the QA set pins its spans against those bytes);
  ``pydoc_corpus("running")`` takes the running interpreter's instead.
* :func:`folder_corpus`: a team's own documents, one UTF-8 ``.txt`` file each; ``doc_id`` = the
  file name without ``.txt``, title = its first non-empty line, revision = a label you give or the
  first 12 hex digits of the file's sha256.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

from ..corpus import Document
from ..eval.qa_check import PINNED_PYDOC, PINNED_PYDOC_VERSION, pydoc_corpus as topics_of

__all__ = ["PINNED_PYDOC", "PINNED_PYDOC_VERSION", "folder_corpus", "pydoc_corpus"]

MAX_TITLE_CHARS = 120


def _title(text: str, fallback: str) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), fallback)
    return line[:MAX_TITLE_CHARS]


def pydoc_corpus(source: Literal["pinned", "running"] = "pinned") -> list[Document]:
    """Python's documentation topics, one document each, sorted by topic name.

    ``"pinned"`` (the default): the copy of Python 3.11.7's 79 topics shipped with the library, the same
    bytes on every machine. ``"running"``: this interpreter's ``pydoc_data.topics``, revision = its version.
    """
    topics, revision = topics_of(source)
    return [Document(name, _title(text, name), revision, text) for name, text in sorted(topics.items())]


def folder_corpus(folder: str | Path, revision: str | None = None) -> list[Document]:
    """Every ``*.txt`` file directly in ``folder`` (sorted by name), read as UTF-8 (strict)."""
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"not a folder: {folder}")
    docs = []
    for path in sorted(root.glob("*.txt")):
        if not path.is_file() or path.is_symlink():
            continue
        raw = path.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{path.name} is not valid UTF-8 (byte {e.start})") from None
        label = revision if revision is not None else hashlib.sha256(raw).hexdigest()[:12]
        docs.append(Document(path.name[:-4], _title(text, path.name[:-4]), label, text))
    if not docs:
        raise ValueError(f"no .txt files in {folder}")
    return docs
