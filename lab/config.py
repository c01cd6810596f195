#!/usr/bin/env python3
"""Write the Jupyter config folder `make lab` starts JupyterLab with, so Chinese shows on a machine without a CJK font.

JupyterLab 4 draws text with the system's fonts only. Started with ``--LabApp.custom_css=True`` it links
``custom/custom.css`` of the Jupyter config folder (``JUPYTER_CONFIG_DIR``) into every page and serves the rest of
that ``custom/`` folder. This writes such a folder: ``lab/custom/custom.css`` (an ``@font-face`` for the CJK blocks,
first in the theme's font stacks), the lab's subset of Noto Sans CJK SC beside it (GB2312's 6,763 hanzi, CJK
punctuation, fullwidth forms and the corpus: what a learner types too; ``make lab-font`` regenerates it with
``scripts/subset_lab_font.py``) and its licence (``site/_static/fonts/OFL.txt``). The files are copied, not
linked: the server does not follow symbolic links under ``custom/``. The README's "Two commands" section says how
to use it.

Usage: ``python lab/config.py [FOLDER]`` (default ``build/lab-config``); prints the folder.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "build" / "lab-config"
CSS = ROOT / "lab" / "custom" / "custom.css"
#: The lab's font (scripts/subset_lab_font.py) and its licence, the same as the website's font's.
FONT = ROOT / "lab" / "custom" / "EvidenceCJKSansSCLab-Regular.woff2"
LICENCE = ROOT / "site" / "_static" / "fonts" / "OFL.txt"


def sources() -> list[Path]:
    """The files the folder's ``custom/`` holds: the CSS, the font and its licence."""
    return [CSS, FONT, LICENCE]


def prepare(folder: Path = DEFAULT) -> Path:
    """Write (or refresh) ``folder/custom/`` from :func:`sources`; returns ``folder`` as an absolute path."""
    custom = folder.resolve() / "custom"
    custom.mkdir(parents=True, exist_ok=True)
    for source in sources():
        target = custom / source.name
        if not target.exists() or target.read_bytes() != source.read_bytes():
            shutil.copyfile(source, target)
    return custom.parent


def main(argv: list[str]) -> int:
    print(prepare(Path(argv[0]) if argv else DEFAULT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
