"""MCP: the protocol for any MCP client (Claude Code, Claude Desktop, VS Code, a LangGraph agent). Issue 27.

``python -m evidence_lib mcp --corpus DIR`` (or ``--store``) serves ``start_task``, ``search_evidence``,
``locate_evidence``, ``read_evidence`` and ``verify_citations`` over stdio or streamable HTTP on loopback
(:mod:`._cli`); :func:`build_server` builds the same server in code. With a store (:meth:`Source.from_store`) it
keeps no task in its memory, so several server processes serve one task (:mod:`._tasks`, issue 33);
``_launch.ServerProcess`` starts one over HTTP and waits until it answers (notebook 13 has it from
``evidence_lib.course.mcp_session``). Needs the ``mcp`` extra (from this repository's folder:
``pip install -e '.[mcp]'``, or ``make setup``): the names below load the SDK on first use (all but ``load_config``
and ``Source``), so ``--help`` works without it."""

from __future__ import annotations

from typing import Any

__all__ = ["Source", "TokenPrincipals", "build_server", "fixed_source", "load_config"]


#: Names that load without the SDK, and their modules; every other name loads the SDK (``_server``).
_NO_SDK = {"load_config": "._config", "Source": "._tasks"}


def __getattr__(name: str) -> Any:
    if name in __all__:
        from importlib import import_module

        return getattr(import_module(_NO_SDK.get(name, "._server"), __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
