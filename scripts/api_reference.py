#!/usr/bin/env python3
"""Write the API reference page, ``site/api.md``: every name the public packages export, with its docstring.

The public API is what ``evidence_lib`` and its documented subpackages re-export (``__all__``); every other module
is private (``_name.py``). This page lists each name once per package that exports it, through Sphinx's autodoc, so
the website shows the docstrings (``make site``). ``tests/test_layers.py`` checks that the page names every exported
name and nothing else; ``--check`` says whether the committed page is up to date.

Usage: ``python scripts/api_reference.py [--check]``
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "site" / "api.md"
#: The public packages, in the order the README's architecture map names the layers.
PACKAGES = {
    "evidence_lib": "The core: documents, the index, the three tools, citations, the answer format, the ledger",
    "evidence_lib.profiles": "The tools' reply formats",
    "evidence_lib.retrieval": "Your retriever behind the tools; the shipped corpora",
    "evidence_lib.disclosure": "Progressive disclosure: catalogs, tool discovery, reading plans",
    "evidence_lib.store": "The production store and large results kept outside the context",
    "evidence_lib.integrations.langchain": "LangChain: the middleware and the message loop",
    "evidence_lib.integrations.mcp": "MCP: the server",
    "evidence_lib.audit": "The audit of a message history",
    "evidence_lib.eval": "The evaluation flows",
}


def directive(package: str, name: str, obj: object) -> str:
    if inspect.isclass(obj):
        return f".. autoclass:: {package}.{name}\n   :members:\n"
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return f".. autofunction:: {package}.{name}\n"
    return f".. autodata:: {package}.{name}\n   :no-value:\n"


def page() -> str:
    sys.path.insert(0, str(ROOT))
    lines = ["# API reference", "",
             "Everything `evidence_lib` offers: the names its packages export. Every other module is private "
             "(`_name.py`) and may change without notice. The teaching helpers of the notebooks live in "
             "`evidence_lib.course` and are not part of this API. Written by `scripts/api_reference.py`.", ""]
    for package, title in PACKAGES.items():
        module = importlib.import_module(package)
        lines += [f"## `{package}`", "", title + ".", "", "```{eval-rst}", f".. automodule:: {package}",
                  "   :no-members:", ""]
        for name in sorted(module.__all__, key=str.lower):
            lines.append(directive(package, name, getattr(module, name)))
        lines += ["```", ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only say whether site/api.md is up to date")
    args = parser.parse_args(argv)
    text = page()
    if args.check:
        if PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run python scripts/api_reference.py")
            return 1
        print(f"{PAGE.relative_to(ROOT)} is up to date")
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
