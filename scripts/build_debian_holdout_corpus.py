#!/usr/bin/env python3
"""Build the ``debian_holdout`` folder corpus: the held-out set's documents from sixteen Debian bookworm packages that
``debian_mix`` does not use (issue 33).

    mkdir -p build/debs && cd build/debs
    apt-get download $(python3 ../../scripts/build_debian_holdout_corpus.py --pins) && cd ../..
    python scripts/build_debian_holdout_corpus.py build/debs     # bench/data/debian_holdout.tar.xz + _corpus.json
    python scripts/build_debian_holdout_corpus.py --unpack DIR   # DIR/debian_holdout/<doc_id>.txt (a folder corpus)

The rules are ``scripts/build_debian_mix_corpus.py``'s (its module docstring; this is its ``--set debian_holdout``),
applied to :data:`build_debian_mix_corpus.HOLDOUT_PACKAGES`: each package pinned by name, version and the .deb's
sha256, its pages' folder, main element, navigation dropped and generator lists left out (indexes, member lists,
source views, search pages), named there. The packages were chosen, before any question was written or any flow run,
as the Debian bookworm documentation packages in ``main`` that hold English HTML or man pages, are not in
``debian_mix``, and together give 5,000 to 12,000 documents in many generators' formats with no package most of them.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_debian_mix_corpus as mix


def main(argv: list[str] | None = None) -> int:
    return mix.main(["--set", mix.HOLDOUT, *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
