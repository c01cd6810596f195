#!/usr/bin/env python3
"""Write JupyterLab's Chinese font for ``make lab`` (a WOFF2 subset covering common Chinese), or check it.

The lab used the website's subset, which holds only the characters the pages show (about 900): a learner's own
query or document (猫, 世, 今, 散, 吧) showed as boxes on a machine without a CJK font (issue 34 item 6). This
subset holds every character of GB2312 (the 6,763 hanzi of China's basic national character set, with its
punctuation, kana and fullwidth forms), the whole CJK symbols and punctuation block and the halfwidth and fullwidth
forms block, and every character of the website's font (the corpus, some of it outside GB2312): about 7,600
characters. ``lab/custom/custom.css`` serves it for the CJK blocks only (``unicode-range``), first in JupyterLab's
font stacks; ``lab/config.py`` copies both into the config folder ``make lab`` starts JupyterLab with.

Source: Noto Sans CJK SC Regular 2.004 (SIL OFL 1.1) from Debian's ``fonts-noto-cjk``, found or fetched as
``scripts/subset_site_font.py`` does (``build/font-source/``, never installed system-wide, never committed), with
the same subsetting rules (``scripts/subset_cjk_font.py``), renamed "Evidence CJK Sans SC Lab". The same bytes on
every run for the same source, fontTools and brotli (the ``fonts`` extra: ``pip install -e '.[fonts]'``)::

    make lab-font                                  # = python scripts/subset_lab_font.py
    python scripts/subset_lab_font.py --check      # exit 1 and say what the committed font lacks
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import subset_site_font as site

ROOT = Path(__file__).resolve().parents[1]
FONT = ROOT / "lab" / "custom" / "EvidenceCJKSansSCLab-Regular.woff2"
FAMILY = "Evidence CJK Sans SC Lab"
PS_NAME = "EvidenceCJKSansSCLab-Regular"
#: Commit the font only while it stays this small (a clone downloads it); it is about 1.4 MB.
MAX_BYTES = 3_000_000
#: Whole blocks besides GB2312: CJK symbols and punctuation, halfwidth and fullwidth forms.
BLOCKS = [(0x3000, 0x303F), (0xFF00, 0xFFEF)]


def gb2312() -> str:
    """Every character GB2312 encodes (rows 0xA1-0xF7 of EUC-CN), decoded by Python's own codec."""
    chars = []
    for row in range(0xA1, 0xF8):
        for cell in range(0xA1, 0xFF):
            try:
                chars.append(bytes((row, cell)).decode("gb2312"))
            except UnicodeDecodeError:
                continue
    return "".join(chars)


def gb2312_hanzi() -> str:
    """GB2312's 6,763 hanzi (rows 0xB0-0xF7: level 1 and level 2)."""
    return "".join(c for c in gb2312() if c.encode("gb2312")[0] >= 0xB0)


def wanted(site_font: Path = site.FONT) -> str:
    """The characters the lab font holds: GB2312's within the CJK blocks the CSS serves, BLOCKS, the site font's."""
    chars = {c for c in gb2312() if site.CJK.match(c)}
    chars |= {chr(c) for lo, hi in BLOCKS for c in range(lo, hi + 1)}
    chars |= set(site.font_characters(site_font))
    return "".join(sorted(chars))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", help="Noto Sans CJK SC font (.ttc or .otf); default: found or downloaded")
    parser.add_argument("--out", type=Path, default=FONT, help=f"default: {FONT.relative_to(ROOT)}")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the font lacks a character")
    args = parser.parse_args(argv)
    if args.check:
        if not args.out.is_file():
            print(f"{args.out} is missing: make lab-font", file=sys.stderr)
            return 1
        have = set(site.font_characters(args.out))
        lacking = [c for c in gb2312_hanzi() + site.font_characters(site.FONT) if c not in have]
        print(f"{args.out.name}: {len(have):,} CJK characters, {args.out.stat().st_size:,} bytes")
        if lacking:
            print(f"missing {len(lacking)}: {''.join(lacking[:40])!r}: make lab-font", file=sys.stderr)
            return 1
        print("it holds GB2312's 6,763 hanzi and every CJK character of the website's font")
        return 0
    source = site.find_source(args.source)
    chars = wanted()
    font, family, version = site.write_font(source, args.out, chars, family=FAMILY, ps_name=PS_NAME,
                                            purpose="JupyterLab")
    size = args.out.stat().st_size
    held = site.font_characters(args.out)
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out} ({size:,} bytes, "
          f"{font['maxp'].numGlyphs:,} glyphs, {len(held):,} CJK characters of {len(chars):,} asked) from {family} "
          f"{version} in {source}")
    lacking = [c for c in gb2312_hanzi() if c not in set(held)]
    if lacking:
        print(f"the source font lacks {len(lacking)} GB2312 hanzi: {''.join(lacking[:40])!r}", file=sys.stderr)
        return 1
    if size > MAX_BYTES:
        print(f"{size:,} bytes is over {MAX_BYTES:,}: do not commit it", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
