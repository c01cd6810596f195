"""Progressive disclosure (notebooks 06-07): discover, load and read only what the task needs.

One module per job: :mod:`.catalog` (permission-aware resources), :mod:`.toolbox` (tool discovery),
:mod:`.artifacts` (large results kept outside the context), :mod:`.gate` (an answer needs the full
clause), :mod:`.session` (stop rules, prefetch), :mod:`.scripted` (a deterministic control reader)
and :mod:`.datasets` (the after-sales scenario they are taught on).
"""

from .artifacts import Artifact, ArtifactStore, logistics_tools
from .catalog import AuditRecord, Catalog, Resource, catalog_tools, source_label
from .datasets import after_sales_catalog, after_sales_toolbox
from .gate import CONDITIONS, AnswerGate, dropped_conditions
from .obedient import ObedientReader
from .scripted import ScriptedReturnShippingPolicy, ScriptRun, run_script
from .session import (MAX_PREFETCH_BYTES, PREFETCH_RATE, LatencyIllustration, LoadItem, Need, ReadSession,
                      StopRules, plan_loading)
from .toolbox import SchemaLoading, Toolbox, ToolSpec, discovery_tools, measure_schema_loading

__all__ = [
    "CONDITIONS", "MAX_PREFETCH_BYTES", "PREFETCH_RATE", "AnswerGate", "Artifact", "ArtifactStore", "AuditRecord",
    "Catalog", "LatencyIllustration", "ObedientReader", "LoadItem", "Need", "ReadSession", "Resource", "SchemaLoading",
    "ScriptRun", "ScriptedReturnShippingPolicy", "StopRules", "ToolSpec", "Toolbox", "after_sales_catalog",
    "after_sales_toolbox", "catalog_tools", "discovery_tools", "dropped_conditions", "logistics_tools",
    "measure_schema_loading", "plan_loading", "run_script", "source_label",
]
