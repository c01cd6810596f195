"""Python's documentation topics, pinned: the real corpus of notebook 08, the eval and their tests.

Standard library only (``scripts/check_qa.py`` loads :mod:`evidence_lib.eval._qa_check`, which uses this, without
the package). The series ships Python 3.11.7's ``pydoc_data.topics`` (PSF License, written by
``scripts/pin_pydoc_topics.py``), so every Python reads the same bytes; ``"running"`` takes the interpreter's own.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

__all__ = ["PINNED_PYDOC", "PINNED_PYDOC_VERSION", "pydoc_topics"]

PINNED_PYDOC_VERSION = "3.11.7"
#: Python 3.11.7's ``pydoc_data.topics`` as gzipped JSON ``{"python": version, "topics": {name: text}}``.
PINNED_PYDOC = Path(__file__).resolve().parent / "data" / f"pydoc_topics-{PINNED_PYDOC_VERSION}.json.gz"


def pydoc_topics(source: str = "pinned") -> tuple[dict[str, str], str]:
    """Python's documentation topics as ``(docs, revision)``: the one loader of both sources.

    ``"pinned"``: :data:`PINNED_PYDOC` (the same bytes on any Python). ``"running"``: this interpreter's
    ``pydoc_data.topics``, revision = its version.
    """
    if source == "pinned":
        data = json.loads(gzip.decompress(PINNED_PYDOC.read_bytes()).decode("utf-8"))
        return dict(sorted(data["topics"].items())), data["python"]
    if source == "running":
        import platform
        from pydoc_data.topics import topics

        return dict(sorted(topics.items())), platform.python_version()
    raise ValueError(f"source must be 'pinned' or 'running', not {source!r}")
