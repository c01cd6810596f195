#!/usr/bin/env python3
"""Write the CJK font subset the Chinese figures use, or check that the shipped one still covers them.

The figures never use a system font for Chinese: ``evidence_lib/course/fonts/EvidenceCJKSansSC-Regular.otf``
is a subset of Noto Sans CJK SC Regular 2.004 (SIL OFL 1.1, licence in ``evidence_lib/course/fonts/OFL.txt``)
holding exactly the characters ``evidence_lib.course.figures.drawn_characters("zh")`` lists: every character
of the Chinese labels, printable ASCII and the bullet. Run it again after changing a Chinese label:

    python scripts/subset_cjk_font.py --check      # exit 1 and list what is missing
    apt-get download fonts-noto-cjk && dpkg -x fonts-noto-cjk_*.deb /tmp/noto-cjk
    python scripts/subset_cjk_font.py --source /tmp/noto-cjk/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc

The source may be Debian's ``NotoSansCJK-Regular.ttc`` (the SC face is picked by name), or a single
``NotoSansCJKsc-Regular.otf`` / ``SourceHanSansSC-Regular.otf``. Do not commit the source font. The
output is byte-identical on every run for the same source and fontTools (``head.modified`` is kept
from the source, nothing is timestamped). The subset is renamed "Evidence CJK Sans SC" so matplotlib
can never mix it up with a full Noto Sans CJK SC installed on the machine (and because the OFL asks
modified versions not to use reserved names); the copyright, licence and designer records are kept.
Needs fontTools: ``pip install -e '.[fonts]'`` (matplotlib already depends on it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTCollection, TTFont

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evidence_lib.course.figures import CJK_FONT_FILE, drawn_characters  # noqa: E402

OUT = ROOT / "evidence_lib" / "course" / "fonts" / CJK_FONT_FILE
SOURCE_FAMILIES = ("Noto Sans CJK SC", "Source Han Sans SC")
SOURCE_CANDIDATES = (
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",  # Debian/Ubuntu fonts-noto-cjk
    "/usr/share/fonts/opentype/noto/NotoSansCJKsc-Regular.otf",
    "/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc",  # Arch, Fedora
)
FAMILY = "Evidence CJK Sans SC"
PS_NAME = "EvidenceCJKSansSC-Regular"
# matplotlib lays text out horizontally only, so vertical-writing features and tables are dead weight;
# "locl" maps the Simplified Chinese glyphs to their Japanese, Korean and Traditional forms (a third of
# the glyphs otherwise), which Simplified Chinese labels never use.
DROPPED_FEATURES = {"locl", "valt", "vchw", "vert", "vhal", "vjmo", "vkrn", "vpal", "vrt2"}
DROPPED_TABLES = ["vhea", "vmtx", "VORG"]


def find_source(given: str | None) -> Path:
    candidates = [given] if given else list(SOURCE_CANDIDATES)
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    sys.exit("No source font found. Get Debian's fonts-noto-cjk (apt-get download fonts-noto-cjk && "
             "dpkg -x fonts-noto-cjk_*.deb /tmp/noto-cjk) and pass --source "
             "/tmp/noto-cjk/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")


def open_source(path: Path) -> TTFont:
    """The Simplified Chinese regular face of *path* (a .ttc collection or a single .otf/.ttf)."""
    if path.suffix.lower() in (".ttc", ".otc"):
        names = [f["name"].getDebugName(1) for f in TTCollection(path, lazy=True).fonts]
        for family in SOURCE_FAMILIES:
            if family in names:
                return TTFont(path, fontNumber=names.index(family), recalcTimestamp=False)
        sys.exit(f"{path} has no face named {' or '.join(SOURCE_FAMILIES)} (faces: {', '.join(names)})")
    font = TTFont(path, recalcTimestamp=False)
    if font["name"].getDebugName(1) not in SOURCE_FAMILIES:
        sys.exit(f"{path} is {font['name'].getDebugName(1)!r}, not {' or '.join(SOURCE_FAMILIES)}")
    return font


def options() -> subset.Options:
    opts = subset.Options()
    opts.recalc_timestamp = False  # keep head.modified from the source: same bytes on every run
    opts.name_IDs = ["*"]  # keep copyright, trademark, designer and licence records (OFL)
    opts.name_languages = [0x0409]
    opts.notdef_outline = True  # a missing character shows as a visible box, never as nothing
    opts.glyph_names = False
    opts.layout_features = [f for f in opts.layout_features if f not in DROPPED_FEATURES]
    opts.drop_tables = [*opts.drop_tables, *DROPPED_TABLES]
    return opts


def rename(font: TTFont, source_family: str, version: str, *, family: str = FAMILY, ps_name: str = PS_NAME,
           purpose: str = "figures") -> None:
    """Give the subset its own family name (the OFL asks modified versions not to use the original's); say in the
    version string what it was made from. scripts/subset_site_font.py names the website's subset the same way."""
    name = font["name"]
    name.names = [r for r in name.names if r.nameID not in (1, 2, 3, 4, 5, 6, 16, 17, 21, 22)]
    records = {
        1: family,
        2: "Regular",
        3: f"{version};evidence-lib;{ps_name}",
        4: family,
        5: f"Version {version}; subset of {source_family} {version} for the evidence-lib {purpose}",
        6: ps_name,
    }
    for name_id, text in records.items():
        name.setName(text, name_id, 3, 1, 0x0409)
        name.setName(text, name_id, 1, 0, 0)
    if "CFF " in font:
        cff = font["CFF "].cff
        cff.fontNames = [ps_name]
        top = cff.topDictIndex[0]
        top.FamilyName, top.FullName = family, f"{family} Regular"


def write_subset(source: Path, out: Path, chars: str) -> TTFont:
    font = open_source(source)
    source_family = font["name"].getDebugName(1)
    version = f"{font['head'].fontRevision:.3f}"
    subsetter = subset.Subsetter(options())
    subsetter.populate(unicodes=sorted(ord(c) for c in chars))
    subsetter.subset(font)
    rename(font, source_family, version)
    out.parent.mkdir(parents=True, exist_ok=True)
    font.save(out, reorderTables=True)
    return font


def missing(path: Path, chars: str) -> list[str]:
    cmap = TTFont(path, lazy=True).getBestCmap()
    return [c for c in chars if ord(c) not in cmap]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", help="Noto Sans CJK SC / Source Han Sans SC font (.ttc, .otf)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"default: {OUT.relative_to(ROOT)}")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the shipped subset lacks a character the figures draw")
    args = parser.parse_args(argv)
    chars = drawn_characters("zh")
    if args.check:
        if not args.out.is_file():
            print(f"{args.out} is missing: regenerate it (see --help)", file=sys.stderr)
            return 1
        lacking = missing(args.out, chars)
        font = TTFont(args.out, lazy=True)
        print(f"{args.out.name}: {font['name'].getDebugName(4)}, {font['maxp'].numGlyphs} glyphs, "
              f"{args.out.stat().st_size:,} bytes; figures draw {len(chars)} distinct characters")
        if lacking:
            print(f"missing {len(lacking)}: {''.join(lacking)!r}: regenerate the subset (see --help)",
                  file=sys.stderr)
            return 1
        print("every character the Chinese figures draw is in the subset")
        return 0
    source = find_source(args.source)
    font = write_subset(source, args.out, chars)
    lacking = missing(args.out, chars)
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes, {font['maxp'].numGlyphs} glyphs) "
          f"from {source}")
    if lacking:
        print(f"the source font lacks {''.join(lacking)!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
