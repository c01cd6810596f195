"""LangChain: the evidence middleware for any ``create_agent`` agent, and the message loop. Notebooks 09 and 12.

:class:`EvidenceMiddleware` (notebook 12) offloads a tool's large results into the store and adds locate and read
over them; :func:`run_loop` (notebook 09) runs the three tools in a message loop with stop rules (:class:`LoopRules`,
:func:`stop_rule`, :class:`LoopResult`) and overlapping reads; :func:`run_create_agent` and
:func:`evidence_middleware` run the same tools inside LangChain's own ``create_agent``. ``create_agent`` is the
optional ``agents`` extra: the names that need it load it on first use, so the loop works with langchain-core alone.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._loop import LoopResult, LoopRules, run_loop, stop_rule

if TYPE_CHECKING:
    from ._harness import evidence_middleware, run_create_agent
    from ._middleware import EvidenceMiddleware

__all__ = ["EvidenceMiddleware", "LoopResult", "LoopRules", "evidence_middleware", "run_create_agent", "run_loop",
           "stop_rule"]

#: Names whose module imports ``langchain`` (the ``agents`` extra): loaded on first use.
_NEEDS_LANGCHAIN = {"EvidenceMiddleware": "._middleware", "evidence_middleware": "._harness",
                    "run_create_agent": "._harness"}


def __getattr__(name: str) -> Any:
    module = _NEEDS_LANGCHAIN.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module, __name__), name)
