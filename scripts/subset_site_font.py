#!/usr/bin/env python3
"""Write the website's CJK web font (a WOFF2 subset), or check that the shipped one covers the built pages.

The site (``make site``) must show its Chinese text on a machine with no CJK font at all, so it ships
``site/_static/fonts/EvidenceCJKSansSCWeb-Regular.woff2``: a subset of Noto Sans CJK SC Regular 2.004 (SIL OFL
1.1, ``site/_static/fonts/OFL.txt``), the same source and the same rules as the figures' subset
(``scripts/subset_cjk_font.py``, ``evidence_lib/course/fonts/README.md``), renamed "Evidence CJK Sans SC Web".
``site/_static/evidence.css`` loads it with ``@font-face`` (``font-display: swap``, a ``unicode-range`` of the
CJK blocks below, so pages without Chinese never download it) and puts it in the theme's font stacks.

It holds every CJK character of every built page (``build/site/**/*.html``), every character it already had
(so a regenerated font never loses one), and, as headroom for notebooks re-executed later, the Chinese text of
``evidence_lib/`` (the corpus the notebooks print) and of the two source articles in ``../shared/seeds/``
where that folder exists. After a page gains a Chinese character:

    make site-font        # = make site, python scripts/subset_site_font.py, make site again
    python scripts/subset_site_font.py --check     # exit 1 and list what the font lacks

The source font is Debian's ``fonts-noto-cjk`` (``NotoSansCJK-Regular.ttc``, the SC face is picked by name):
the installed file if there is one, else ``--source``, else the package is fetched with ``apt-get download``
and unpacked with ``dpkg -x`` into ``build/font-source/`` (git-ignored; nothing is installed system-wide, so
the browser test's machine stays without CJK fonts). Do not commit the source. The output is the same bytes on
every run for the same characters, source, fontTools and brotli (``head.modified`` is kept, nothing is
timestamped). Needs fontTools and brotli (``site/requirements.txt``).
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "build" / "site"
FONT_DIR = ROOT / "site" / "_static" / "fonts"
FONT = FONT_DIR / "EvidenceCJKSansSCWeb-Regular.woff2"
CSS = ROOT / "site" / "_static" / "evidence.css"
FAMILY = "Evidence CJK Sans SC Web"
PS_NAME = "EvidenceCJKSansSCWeb-Regular"
DOWNLOAD_DIR = ROOT / "build" / "font-source"
HEADROOM = [ROOT / "evidence_lib", ROOT.parent / "shared" / "seeds"]
HEADROOM_SUFFIXES = {".txt", ".json", ".py", ".md"}

#: What counts as a CJK character: the blocks the web font serves (the CSS unicode-range lists the same).
CJK_RANGES: list[tuple[int, int]] = [
    (0x2E80, 0x2FDF),    # CJK radicals, Kangxi radicals
    (0x3000, 0x303F),    # CJK symbols and punctuation: 、。「」
    (0x3040, 0x30FF),    # hiragana, katakana
    (0x3100, 0x312F),    # bopomofo
    (0x31C0, 0x31EF),    # CJK strokes
    (0x3200, 0x33FF),    # enclosed CJK letters, CJK compatibility
    (0x3400, 0x4DBF),    # CJK unified ideographs extension A
    (0x4E00, 0x9FFF),    # CJK unified ideographs
    (0xF900, 0xFAFF),    # CJK compatibility ideographs
    (0xFE10, 0xFE1F),    # vertical forms
    (0xFE30, 0xFE4F),    # CJK compatibility forms
    (0xFF00, 0xFFEF),    # half-width and full-width forms: （），：；？
    (0x20000, 0x2FFFF),  # supplementary ideographic plane
]
CJK = re.compile("[" + "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in CJK_RANGES) + "]")
#: The same class for a JavaScript RegExp with the "u" flag.
CJK_PATTERN = "[" + "".join(f"\\u{{{lo:X}}}-\\u{{{hi:X}}}" for lo, hi in CJK_RANGES) + "]"


def unicode_range() -> str:
    """The CSS ``unicode-range`` value of CJK_RANGES."""
    return ", ".join(f"U+{lo:X}-{hi:X}" for lo, hi in CJK_RANGES)


def characters_in(text: str) -> str:
    """The distinct CJK characters of a page's HTML (entities decoded), sorted."""
    return "".join(sorted(set(CJK.findall(html.unescape(text)))))


def pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)


def site_characters(site: Path = SITE) -> str:
    """Every CJK character that a built page of ``site`` shows."""
    chars: set[str] = set()
    for page in pages(site):
        chars |= set(characters_in(page.read_text(encoding="utf-8")))
    return "".join(sorted(chars))


def headroom_characters(paths: list[Path]) -> str:
    chars: set[str] = set()
    for base in paths:
        files = [base] if base.is_file() else sorted(base.rglob("*")) if base.is_dir() else []
        for f in files:
            if f.is_file() and f.suffix in HEADROOM_SUFFIXES and "__pycache__" not in f.parts:
                chars |= set(CJK.findall(f.read_text(encoding="utf-8", errors="ignore")))
    return "".join(sorted(chars))


def font_characters(path: Path) -> str:
    """The CJK characters a font has glyphs for (WOFF2 needs brotli to be read)."""
    from fontTools.ttLib import TTFont

    cmap = TTFont(path, lazy=True).getBestCmap()
    return "".join(sorted(chr(c) for c in cmap if CJK.match(chr(c))))


def missing(path: Path, chars: str) -> list[str]:
    have = set(font_characters(path))
    return [c for c in chars if c not in have]


def download_source() -> Path | None:
    """Debian's fonts-noto-cjk unpacked into build/font-source/ (apt-get download + dpkg -x), or None."""
    ttc = DOWNLOAD_DIR / "usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"
    if ttc.is_file():
        return ttc
    if not (shutil.which("apt-get") and shutil.which("dpkg")):
        return None
    DOWNLOAD_DIR.mkdir(parents=True, exist_ok=True)
    print(f"source: fetching Debian's fonts-noto-cjk into {DOWNLOAD_DIR.relative_to(ROOT)}/ (apt-get download)")
    for old in DOWNLOAD_DIR.glob("fonts-noto-cjk_*.deb"):
        old.unlink()
    got = subprocess.run(["apt-get", "download", "fonts-noto-cjk"], cwd=DOWNLOAD_DIR)
    debs = sorted(DOWNLOAD_DIR.glob("fonts-noto-cjk_*.deb"))
    if got.returncode != 0 or not debs:
        print("source: apt-get download failed (run apt-get update first?)", file=sys.stderr)
        return None
    subprocess.run(["dpkg", "-x", str(debs[-1]), str(DOWNLOAD_DIR)], check=True)
    return ttc if ttc.is_file() else None


def find_source(given: str | None) -> Path:
    from subset_cjk_font import SOURCE_CANDIDATES

    if given:
        if not Path(given).is_file():
            sys.exit(f"--source {given}: no such file")
        return Path(given)
    for candidate in SOURCE_CANDIDATES:
        if Path(candidate).is_file():
            return Path(candidate)
    found = download_source()
    if found is None:
        sys.exit("No source font: install Debian's fonts-noto-cjk, or pass --source "
                 ".../NotoSansCJK-Regular.ttc (apt-get download fonts-noto-cjk && dpkg -x fonts-noto-cjk_*.deb DIR)")
    return found


def write_font(source: Path, out: Path, chars: str, *, family: str = FAMILY, ps_name: str = PS_NAME,
               purpose: str = "website"):
    """A WOFF2 subset of ``source`` holding ``chars``, renamed ``family`` (scripts/subset_lab_font.py's too)."""
    from fontTools import subset
    from subset_cjk_font import open_source, options, rename

    font = open_source(source)
    source_family = font["name"].getDebugName(1)
    version = f"{font['head'].fontRevision:.3f}"
    opts = options()  # the figures' rules: no vertical or locl forms, licence records kept, .notdef a box
    opts.flavor = "woff2"
    subsetter = subset.Subsetter(opts)
    subsetter.populate(unicodes=sorted(ord(c) for c in chars))
    subsetter.subset(font)
    rename(font, source_family, version, family=family, ps_name=ps_name, purpose=purpose)
    font.flavor = "woff2"
    out.parent.mkdir(parents=True, exist_ok=True)
    font.save(out, reorderTables=True)
    return font, source_family, version


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", type=Path, default=SITE, help="the built site (default: build/site)")
    parser.add_argument("--source", help="Noto Sans CJK SC font (.ttc or .otf); default: found or downloaded")
    parser.add_argument("--out", type=Path, default=FONT, help=f"default: {FONT.relative_to(ROOT)}")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the font lacks a CJK character of a built page")
    parser.add_argument("--fresh", action="store_true",
                        help="do not keep the characters of the existing font (only the pages and headroom)")
    parser.add_argument("--no-headroom", action="store_true", help="only the built pages' characters")
    args = parser.parse_args(argv)
    if not (args.site / "index.html").is_file():
        print(f"{args.site} has no index.html: build the site first (make site)", file=sys.stderr)
        return 1
    shown = site_characters(args.site)
    if args.check:
        if not args.out.is_file():
            print(f"{args.out} is missing: regenerate it (make site-font)", file=sys.stderr)
            return 1
        lacking = missing(args.out, shown)
        print(f"{args.out.name}: {len(font_characters(args.out))} CJK characters, {args.out.stat().st_size:,} bytes;"
              f" the pages show {len(shown)}")
        if lacking:
            print(f"missing {len(lacking)}: {''.join(lacking)!r}: regenerate it (make site-font)", file=sys.stderr)
            return 1
        print("every CJK character of the built pages is in the site font")
        return 0
    chars = set(shown)
    if not args.no_headroom:
        chars |= set(headroom_characters(HEADROOM))
    if args.out.is_file() and not args.fresh:
        chars |= set(font_characters(args.out))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    source = find_source(args.source)
    font, family, version = write_font(source, args.out, "".join(sorted(chars)))
    lacking = missing(args.out, shown)
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out} "
          f"({args.out.stat().st_size:,} bytes, {font['maxp'].numGlyphs} glyphs, {len(chars)} CJK characters, "
          f"{len(shown)} of them on the pages) from {family} {version} in {source}")
    if lacking:
        print(f"the source font lacks {''.join(lacking)!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
