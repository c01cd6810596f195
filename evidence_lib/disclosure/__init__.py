"""Progressive disclosure (notebooks 06-07): discover, load and read only what the task needs.

A permission-aware resource :class:`Catalog` with its reading tools (:func:`catalog_tools`); tool discovery (a
:class:`Toolbox` of :class:`ToolSpec` served by :func:`discovery_tools`, measured by :func:`measure_schema_loading`);
an :class:`AnswerGate` that wants the full clause before an answer (:func:`dropped_conditions`); and the reading
plan of a task (:class:`ReadSession` with its :class:`StopRules`, :func:`plan_loading` of :class:`LoadItem` objects
for the task's :class:`Need` objects). The after-sales scenario they are taught on is teaching material in
:mod:`evidence_lib.course`.
"""

from __future__ import annotations

from ._catalog import Catalog, Resource, catalog_tools
from ._gate import AnswerGate, dropped_conditions
from ._session import LoadItem, Need, ReadSession, StopRules, plan_loading
from ._toolbox import Toolbox, ToolSpec, discovery_tools, measure_schema_loading

__all__ = ["AnswerGate", "Catalog", "LoadItem", "Need", "ReadSession", "Resource",
           "StopRules", "ToolSpec", "Toolbox", "catalog_tools", "discovery_tools", "dropped_conditions",
           "measure_schema_loading", "plan_loading"]
