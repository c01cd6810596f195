"""Command line: ``python -m evidence_lib article`` prints the article's result table as JSON."""

from __future__ import annotations

import argparse
import json
import os
import sys

from .profiles._registry import PROFILES

#: The packages of the ``course`` extra (pyproject.toml) that ``figures`` needs.
COURSE_EXTRA = ("matplotlib", "ipywidgets")


def _prog() -> str:
    """How we were invoked: ``python -m evidence_lib``, or the console script's name (``evidence-lib``)."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if name in ("", "-c", "__main__.py"):
        return "python -m evidence_lib"
    return name.removesuffix(".exe")


def main(argv: list[str] | None = None) -> int:
    from .integrations.mcp import _cli as mcp_cli  # the subcommand's options; the SDK loads only when it runs

    parser = argparse.ArgumentParser(prog=_prog(), description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    art = sub.add_parser("article", help="run the article's experiment in a temporary directory and print the table")
    art.add_argument("--profile", choices=tuple(PROFILES), default="article",
                     help="reply format of the tools (default: article, the article's byte-exact JSON)")
    ev = sub.add_parser("eval", help="run the reading flows side by side on a corpus and a QA file")
    ev.add_argument("--corpus", required=True, help="'pydoc' (Python's documentation topics) or a folder of .txt files")
    ev.add_argument("--qa", required=True, help="QA.json: a list of items, or {corpus_sha256, items}")
    ev.add_argument("--out", required=True, help="where to write the results (JSON)")
    ev.add_argument("--revision", default=None, help="revision label for a folder corpus (default: sha256[:12] per file)")
    ev.add_argument("--flows", default=None,
                    help="comma-separated subset of dump_top5,article,compact,no_help,deepagents,deepagents_default "
                         "(default: all)")
    ev.add_argument("--chooser", choices=("oracle", "overlap"), default="oracle",
                    help="how a flow picks the document to read: oracle (handed the answer's doc_id among the shown "
                         "candidates, the default) or overlap (by the question words of what it was shown)")
    fig = sub.add_parser("figures", help="write the article's figures (PNG and SVG)")
    fig.add_argument("--out", default="figures", help="output directory (default: figures)")
    aud = sub.add_parser("audit", help="audit an exported conversation (LangChain or OpenAI messages, JSON)")
    aud.add_argument("history", help="HISTORY.json; exit 0: no findings, 1: findings, 2: unreadable file")
    aud.add_argument("--json", action="store_true", help="print the report as JSON")
    mcp_cli.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "article":
        from .course.experiment import run_article

        json.dump(run_article(profile=args.profile), sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    elif args.command == "eval":
        from .eval._cli import main as eval_main

        return eval_main(args)
    elif args.command == "figures":
        try:
            from .course.figures import write_figures
        except ImportError as e:  # the course extra is missing: say which, not a traceback
            missing = (e.name or "").partition(".")[0]
            if missing not in COURSE_EXTRA:
                raise
            print(f"figures needs the course extra ({missing} is missing): from this repository's "
                  "folder run `pip install -e '.[course]'` (or `make setup`)", file=sys.stderr)
            return 2
        for path in write_figures(args.out):
            print(path)
    elif args.command == "audit":
        from .audit._report import main as audit_main

        return audit_main(args.history, as_json=args.json)
    elif args.command == "mcp":
        return mcp_cli.main(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
