"""Command line: ``python -m evidence_lib article`` prints the article's result table as JSON."""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evidence_lib", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("article", help="run the article's experiment in a temporary directory and print the table")
    fig = sub.add_parser("figures", help="write the article's figures (PNG and SVG)")
    fig.add_argument("--out", default="figures", help="output directory (default: figures)")
    args = parser.parse_args(argv)
    if args.command == "article":
        from .experiment import run_article

        json.dump(run_article(), sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    elif args.command == "figures":
        from .figures import write_figures

        for path in write_figures(args.out):
            print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
