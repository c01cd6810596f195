#!/usr/bin/env python3
"""Write the API reference page, ``site/api.md``: every name the public packages export, with its signature and docstring.

The public API is what ``evidence_lib`` and its documented subpackages re-export (``__all__``); every other module
is private (``_name.py``). This page lists each name once per package that exports it, as plain Markdown (signature,
docstring, public methods), so the website shows it without importing the library (``make site``). ``tests/test_layers.py`` checks that the page names every exported
name and nothing else; ``--check`` says whether the committed page is up to date.

Usage: ``python scripts/api_reference.py [--check]``
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import re
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


#: Longer signatures (LangChain's BaseTool fields) are shown as ``name(...)``: the docstring says what to pass.
MAX_SIGNATURE = 400


class Annotation(str):
    """A type hint as the source spells it (``tuple[Citation, ...]``), shown without the quotes ``repr`` adds to
    the strings ``from __future__ import annotations`` leaves: evaluated, it would name private modules."""

    def __repr__(self) -> str:
        return str(self)


def unquoted(sig: inspect.Signature) -> inspect.Signature:
    hint = lambda a: Annotation(a) if isinstance(a, str) else a  # noqa: E731
    params = [p.replace(annotation=hint(p.annotation)) for p in sig.parameters.values()]
    return sig.replace(parameters=params, return_annotation=hint(sig.return_annotation))


def signature(name: str, obj: object) -> str:
    """The line a reader calls: ``name(params)`` for classes and functions, ``name: type`` for data."""
    if inspect.isclass(obj) or callable(obj):
        try:
            text = f"{name}{unquoted(inspect.signature(obj))}"
        except (TypeError, ValueError):  # builtins and some C types have no signature
            return f"{name}(...)"
        text = re.sub(r"<function ([\w.<>]+) at 0x[0-9a-f]+>", r"\1", text)  # no addresses: the page is stable
        return text if len(text) <= MAX_SIGNATURE else f"{name}(...)  # many fields: the docstring names the ones to pass"
    value = repr(obj)
    return f"{name}: {type(obj).__name__}" + (f" = {value}" if len(value) <= 80 else "")


def markdown(doc: str) -> str:
    """A docstring as Markdown: reST's ``literal`` becomes `literal`; indented lines stay a quoted block."""
    text = re.sub(r"``([^`]+)``", r"`\1`", doc)
    text = re.sub(r":(?:class|func|meth|attr|data|mod):`~?([^`]+)`", r"`\1`", text)
    return text.replace("\n    ", "\n> ")


def members(cls: type) -> list[tuple[str, object]]:
    """A class's public methods and properties, defined in the class itself, as the page lists them (sorted). A
    dataclass field whose default is a function (``Source.ledger_for``) is a field, not a method: the class's
    docstring describes its fields. tests/test_site_api.py requires a docstring on each."""
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    return [(member, value) for member, value in sorted(vars(cls).items())
            if not member.startswith("_") and member not in fields
            and (inspect.isfunction(value) or isinstance(value, property))]


def entry(package: str, name: str, obj: object) -> list[str]:
    kind = "class" if inspect.isclass(obj) else "function" if callable(obj) else "data"
    doc = inspect.getdoc(obj) if kind != "data" else None
    if doc and inspect.isclass(obj) and doc.startswith(f"{name}("):  # a dataclass's generated docstring
        doc = None
    # A short heading (the page's Contents has room for it), the full name under it.
    lines = [f"### `{name}`", "", f"*{kind}* `{package}.{name}`", "", "```python", signature(name, obj), "```", ""]
    if doc:
        lines += [markdown(doc), ""]
    if inspect.isclass(obj):
        for member, value in members(obj):
            first = (inspect.getdoc(value) or "").split("\n\n")[0].replace("\n", " ")
            lines.append(f"- `{member}`" + (f": {markdown(first)}" if first else ""))
        lines.append("")
    return lines


def page() -> str:
    sys.path.insert(0, str(ROOT))
    lines = ["# API reference", "",
             "Everything `evidence_lib` offers: the names its packages export. Every other module is private "
             "(`_name.py`) and may change without notice. The teaching helpers of the notebooks live in "
             "`evidence_lib.course` and are not part of this API. Written by `scripts/api_reference.py` from the "
             "docstrings; `tests/test_layers.py` checks that it is complete and current.", ""]
    for package, title in PACKAGES.items():
        module = importlib.import_module(package)
        lines += [f"## `{package}`", "", title + ".", ""]
        for name in sorted(module.__all__, key=str.lower):
            lines += entry(package, name, getattr(module, name))
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
