"""MCP: the protocol for any MCP client (Claude Code, Claude Desktop, VS Code, a LangGraph agent). Issue 27.

``python -m evidence_lib mcp --corpus DIR`` (or ``--store``) serves ``start_task``, ``search_evidence``,
``locate_evidence``, ``read_evidence`` and ``verify_citations`` over stdio or streamable HTTP on loopback
(:mod:`._cli`); :func:`build_server` builds the same server in code. Needs the ``mcp`` extra (from this repository's
folder: ``pip install -e '.[mcp]'``, or ``make setup``): the names below load the SDK on first use, so ``--help``
works without it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Source", "TokenPrincipals", "build_server", "fixed_source", "load_config"]


def __getattr__(name: str) -> Any:
    if name == "load_config":  # the tokens file (no SDK import)
        from ._config import load_config

        return load_config
    if name in __all__:
        from . import _server  # imports the mcp SDK

        return getattr(_server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
