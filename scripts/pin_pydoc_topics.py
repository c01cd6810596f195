#!/usr/bin/env python3
"""Write the running Python's documentation topics as the pinned copy ``pydoc_corpus()`` loads (notebook 08).

``pydoc_data.topics`` differs between patch releases, and the pydoc QA set (``eval/data/pydoc_qa.json``) pins
its spans by offset and the corpus by sha256. So the series ships one copy, Python 3.11.7's, and every machine
reads the same bytes whatever Python runs it. Regenerate only together with the QA set:

    .venv/bin/python scripts/pin_pydoc_topics.py [--check]

The file is gzip with a zero timestamp, so the same topics always give the same bytes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import sys
from pathlib import Path

from evidence_lib.retrieval._corpora import PINNED_PYDOC, PINNED_PYDOC_VERSION


def payload() -> bytes:
    from pydoc_data.topics import topics

    body = {"python": platform.python_version(), "source": "pydoc_data/topics.py of CPython (PSF License)",
            "topics": dict(sorted(topics.items()))}
    return gzip.compress(json.dumps(body, ensure_ascii=False, indent=0).encode("utf-8"), compresslevel=9, mtime=0)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the pinned file differs from this Python's topics")
    args = ap.parse_args(argv)
    if platform.python_version() != PINNED_PYDOC_VERSION:
        print(f"this is Python {platform.python_version()}; the pinned copy is {PINNED_PYDOC_VERSION}'s "
              "(change both, and the QA set, together)", file=sys.stderr)
        return 1
    data = payload()
    if args.check:
        same = PINNED_PYDOC.read_bytes() == data
        print("pinned pydoc topics:", "up to date" if same else "DIFFERENT")
        return 0 if same else 1
    PINNED_PYDOC.write_bytes(data)
    print(f"wrote {PINNED_PYDOC.relative_to(Path.cwd()) if PINNED_PYDOC.is_relative_to(Path.cwd()) else PINNED_PYDOC}"
          f" ({len(data):,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
