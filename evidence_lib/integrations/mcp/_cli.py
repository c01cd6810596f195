"""``python -m evidence_lib mcp``: serve a folder of documents (or a store snapshot) to any MCP client. Issue 27.

The arguments are declared here without importing the ``mcp`` SDK, so ``--help`` works without the extra.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from ..._access import Access
from ...profiles._registry import PROFILES
from ._config import LOCAL_PRINCIPAL, check_loopback, load_config

__all__ = ["add_parser", "main"]

#: Said when the ``mcp`` SDK is missing: this checkout's own install, never a package index (no ``evidence-lib``
#: package is published; a stranger could register that name).
MISSING_EXTRA = ("the MCP server needs the mcp extra: from this repository's folder run `pip install -e '.[mcp]'` "
                 "(or `make setup`)")
MCP_HELP = "serve search/locate/read_evidence and verify_citations to MCP clients (stdio, or HTTP on loopback)"
EPILOG = """\
examples:
  python -m evidence_lib mcp --corpus notes/                      # stdio, for Claude Code / Desktop / VS Code
  python -m evidence_lib mcp --corpus notes/ --transport http --port 8765 --tokens tokens.toml
  python -m evidence_lib mcp --store evidence.db --session s-1 --query "batch limit" --tokens tokens.toml \\
      --transport http
Tools: start_task() -> {"task": handle}; search_evidence, locate_evidence, read_evidence and
verify_citations(task, answer) each take that handle (one budget per task; 16 live tasks per principal).
Prompt: reading_contract. Resources: evidence://catalog (what you may discover) and
evidence://page/{task}/{doc_id}/{offset}/{limit} (read_evidence of that task, charged to its budget).
Tokens file (JSON or .toml): {"tokens": {"<16+ chars>": {"tenant", "user", "groups"}},
"documents": {"<doc_id>": {"tenant", "read", "discover"}}} (documents not listed are open to every principal)."""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """The ``mcp`` subcommand's arguments on the main parser's subparsers."""
    p = sub.add_parser("mcp", help=MCP_HELP, description=MCP_HELP + ".", epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--corpus", help="a folder of UTF-8 .txt files, or 'pydoc'. The name without .txt is the "
                                        "doc_id; names starting with a dot are skipped (as a shell's *.txt), so are "
                                        "symlinks and FIFOs; a file that is not UTF-8 text (or holds a NUL byte) or "
                                        "is over 64 MiB stops the start, naming it. Every call sees the folder as it "
                                        "is now (a stat per file): edited files get a new revision, deleted ones "
                                        "are gone, a file that turns bad is left out and named on stderr")
    where.add_argument("--store", help="a store: an SQLite file, a postgresql:// DSN (serves the snapshot "
                                       "--session/--query of each principal's tenant; tasks live in the store, so "
                                       "several servers on one store serve one task, and a restart loses none)")
    p.add_argument("--session", default="mcp", help="with --store: the snapshot's session (default: mcp)")
    p.add_argument("--query", default="mcp", help="with --store: the snapshot's query (default: mcp)")
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                   help="stdio (default: one local principal) or streamable HTTP at http://HOST:PORT/mcp")
    p.add_argument("--host", default="127.0.0.1", help="HTTP: a loopback address only (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="HTTP port (default: 8765)")
    p.add_argument("--tokens", help="HTTP (required): JSON or TOML file mapping bearer tokens to principals; "
                                    "with --corpus it may also give documents grants")
    p.add_argument("--profile", choices=tuple(PROFILES), default="compact",
                   help="reply format of the tools, a registered profile (default: compact)")
    return p


def _check_grants(doc_ids: list[str], grants: Mapping[str, Access | None]) -> None:
    """A grant naming no document is an error (a typo would leave that document open)."""
    unknown = sorted(set(grants) - set(doc_ids))
    if unknown:
        raise ValueError(f"tokens file: 'documents' names {len(unknown)} doc_id(s) not in the corpus")


def _source(args: argparse.Namespace, grants: Mapping[str, Access | None]) -> Any:
    from ._server import Source, fixed_source

    if args.corpus == "pydoc":
        from dataclasses import replace

        from ...retrieval import pydoc_corpus
        from ...retrieval._folder import bm25_source

        docs = pydoc_corpus()
        _check_grants([d.doc_id for d in docs], grants)
        return fixed_source(bm25_source([replace(d, access=grants.get(d.doc_id)) for d in docs]))
    if args.corpus is not None:
        from ...retrieval._folder import FolderSource

        # The eval's source (a BM25 retriever over the folder: search ranks by the question, locate covers every
        # readable document), following the folder: each call sees the files as they are now (issue 31).
        folder = FolderSource(args.corpus, grants)
        _check_grants(folder.doc_ids(), grants)
        return fixed_source(folder)
    if grants:  # the snapshot's documents carry their own grants: these would be ignored, the documents open
        raise ValueError("tokens file: 'documents' grants apply to --corpus only; with --store each document's "
                         "grants are those of the stored snapshot (StoreDocument.access)")
    from ...store import open_store, system_clock

    # Every task in the store (handles, budgets, reads): no task state in this process, so several servers on
    # one store serve one task, and a restarted server loses none (issue 33).
    return Source.from_store(open_store(args.store, system_clock), args.session, args.query)


def main(args: argparse.Namespace) -> int:
    """Build the server from ``args`` and run it until the client (stdio) or a signal (HTTP) ends it."""
    try:
        from ._server import build_server
    except ImportError:
        print(MISSING_EXTRA, file=sys.stderr)
        return 2
    try:
        check_loopback(args.host)
        config = load_config(args.tokens)
        source = _source(args, config.documents)
        if args.transport == "http":
            server = build_server(source, tokens=config.tokens, profile=args.profile, host=args.host,
                                  port=args.port)
        else:
            server = build_server(source, local=LOCAL_PRINCIPAL, profile=args.profile)
    except ValueError as e:
        print(f"evidence_lib mcp: {e}", file=sys.stderr)
        return 2
    _one_line_log()
    server.run("streamable-http" if args.transport == "http" else "stdio")
    return 0


def _one_line_log() -> None:
    """The server's own messages (a refused request body, ...) on stderr, one plain line each."""
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("evidence_lib mcp: %(message)s"))
    log = logging.getLogger("evidence_lib.mcp")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
