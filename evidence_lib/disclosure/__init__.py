"""Progressive disclosure (notebooks 06-07): discover, load and read only what the task needs.

One module per job: :mod:`.catalog` (permission-aware resources), :mod:`.toolbox` (tool discovery),
:mod:`.artifacts` (large results kept outside the context), :mod:`.gate` (an answer needs the full
clause), :mod:`.session` (stop rules, prefetch). The after-sales scenario they are taught on and the scripted and
obedient control readers are teaching material in :mod:`evidence_lib.course` (``after_sales``, ``scripted``,
``obedient``); their names stay importable from here for code written before the move, loaded on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .artifacts import Artifact, ArtifactStore, logistics_tools
from .catalog import AuditRecord, Catalog, Resource, catalog_tools, source_label
from .gate import CONDITIONS, AnswerGate, dropped_conditions
from .session import (MAX_PREFETCH_BYTES, PREFETCH_RATE, LatencyIllustration, LoadItem, Need, ReadSession,
                      StopRules, plan_loading)
from .toolbox import SchemaLoading, Toolbox, ToolSpec, discovery_tools, measure_schema_loading

#: Compatibility: names that moved to the course (issue 24) -> their module, loaded on first use.
_MOVED = {
    **dict.fromkeys(["after_sales_catalog", "after_sales_toolbox"], "evidence_lib.course.after_sales"),
    "ObedientReader": "evidence_lib.course.obedient",
    **dict.fromkeys(["ScriptRun", "ScriptedReturnShippingPolicy", "run_script"], "evidence_lib.course.scripted"),
}


def __getattr__(name: str) -> Any:
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)


__all__ = [
    "CONDITIONS", "MAX_PREFETCH_BYTES", "PREFETCH_RATE", "AnswerGate", "Artifact", "ArtifactStore", "AuditRecord",
    "Catalog", "LatencyIllustration", "ObedientReader", "LoadItem", "Need", "ReadSession", "Resource", "SchemaLoading",
    "ScriptRun", "ScriptedReturnShippingPolicy", "StopRules", "ToolSpec", "Toolbox", "after_sales_catalog",
    "after_sales_toolbox", "catalog_tools", "discovery_tools", "dropped_conditions", "logistics_tools",
    "measure_schema_loading", "plan_loading", "run_script", "source_label",
]
