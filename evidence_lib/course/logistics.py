"""Notebook 07's ``query_logistics``: a 5,000-line carrier trace kept outside the context, a small handle instead.

The trace is put into :class:`~evidence_lib.store.ToolResults` (the one large-result API, with HMAC-minted ids) as one
document, its sections one after the other; the model sees a handle (the result's ``doc_id``, ``revision`` and
``sha256``, the catalog source it was read from, a summary, each section's ``[start, end)``, ``expires_at``) plus the
latest delivery event, and reads any range with ``read_evidence`` (:func:`~evidence_lib.evidence_tools` on the same
results). The full trace also travels in ``ToolMessage.artifact`` (langchain-core's ``content_and_artifact``), for the
application, never for the model.

A stored result is the trace as it was when the tool ran: it keeps reading that revision of the source (pinned) until
it expires or the application expires it; a newer revision is a new call of the tool, under a new handle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.tools import BaseTool
from pydantic import Field

from .._errors import to_json
from .._paging import BOUND_CODES
from .._toolkit import EvidenceTool, StrictArgs
from ..disclosure._catalog import Catalog, TaskBudget, source_label
from ..store._offload import ToolResults
from .after_sales import CST

if TYPE_CHECKING:
    from .._ledger import Ledger

__all__ = ["LogisticsArgs", "logistics_summary", "logistics_tool", "trace_document"]


def logistics_summary(sections: dict[str, str]) -> str:
    """Navigation, not evidence: 存在签收记录 (signed for) / 买家反馈未收到 (buyer reports not received) /
    未发现质量核实记录 (no quality-verification record)."""
    everything = "\n".join(sections.values())
    parts = ["存在签收记录" if "已签收" in sections.get("delivery", "") else "未发现签收记录"]
    if "未收到" in sections.get("exceptions", ""):
        parts.append("买家反馈未收到")
    parts.append("存在质量核实记录" if "质量核实" in everything else "未发现质量核实记录")
    return "；".join(parts)


def trace_document(sections: dict[str, str]) -> tuple[str, dict[str, list[int]]]:
    """The sections as one text (each after a ``## name`` line) and each section's ``[start, end)`` in it."""
    text, ranges = "", {}
    for name, body in sections.items():
        text += f"## {name}\n"
        ranges[name] = [len(text), len(text) + len(body)]
        text += body + "\n"
    return text, ranges


class LogisticsArgs(StrictArgs):
    order_id: str = Field(description="Order number, e.g. A1042.", pattern=r"^[A-Z][0-9]{4}$")


def logistics_tool(catalog: Catalog, results: ToolResults, *, ledger: Ledger | None = None) -> BaseTool:
    """``query_logistics``: the handle in ``content``, the full trace in ``artifact``; the trace is put into
    ``results`` for its principal, who must be allowed to read the source (else ``unknown_resource``).

    ``ledger``: the task's budget, the one handed to ``evidence_tools`` (whose ``read_evidence`` reads the trace);
    the handle is charged as what enters the context. Notebook 07.
    """
    budget = TaskBudget(ledger)
    principal = results.principal

    def query_logistics(order_id: str) -> tuple[str, dict[str, Any]]:
        budget.admit("query_logistics")  # before the trace is read and stored
        resource = f"logistics:{order_id}"
        revision = catalog.current_revision(resource) if catalog.may_read(principal, resource) else "-"
        sections = catalog.read_revision(principal, resource, revision)  # raises unknown_resource uniformly
        text, ranges = trace_document(sections)
        entry = results.put(text, tool="query_logistics")
        delivery = sections.get("delivery", "").split("\n")
        handle = {"doc_id": entry.doc_id, "revision": entry.revision, "source": f"{resource}@{revision}",
                  "summary": logistics_summary(sections), "sections": ranges, "sha256": entry.sha256,
                  "expires_at": results.expiry(entry.doc_id).astimezone(CST).isoformat(),  # the shop's time zone
                  "latest_delivery_event": {"source": source_label(resource, revision, "delivery"),
                                            "line": delivery[-1] if delivery != [""] else None}}
        full = {"resource_id": resource, "revision": revision, "sections": dict(sections)}
        return budget.charge("query_logistics", to_json(handle)), full

    tool = EvidenceTool.from_function(
        budget.guarded("query_logistics", query_logistics), name="query_logistics", args_schema=LogisticsArgs,
        response_format="content_and_artifact",
        description="Query an order's carrier trace. Returns the latest delivery event and a handle (doc_id, "
                    "summary, each section's [start, end)); read any range of it with read_evidence.")
    budget.wire([tool], BOUND_CODES)
    return tool
