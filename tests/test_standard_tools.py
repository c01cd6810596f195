"""LangChain's own standard tool tests (langchain-tests) for every model-facing tool in the series."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta, timezone

import pytest

langchain_tests = pytest.importorskip("langchain_tests", reason="pip install langchain-tests (in the test extra)")
from langchain_tests.integration_tests import ToolsIntegrationTests  # noqa: E402
from langchain_tests.unit_tests import ToolsUnitTests  # noqa: E402

from evidence_lib import EvidenceIndex, ManualClock, Principal, evidence_tools  # noqa: E402
from evidence_lib.course.after_sales import after_sales_catalog, after_sales_toolbox  # noqa: E402
from evidence_lib.course.article import article_corpus  # noqa: E402
from evidence_lib.course.logistics import logistics_tool  # noqa: E402
from evidence_lib.disclosure import catalog_tools, discovery_tools  # noqa: E402
from evidence_lib.retrieval import BM25Retriever, pydoc_corpus  # noqa: E402
from evidence_lib.store import MemoryStore  # noqa: E402
from evidence_lib.store._offload import ToolResults  # noqa: E402

AGENT = Principal("shop-a", "user-417", groups={"support"})
_ROOT = tempfile.mkdtemp(prefix="evidence-standard-tests-")
_INDEX = EvidenceIndex.build(article_corpus(), _ROOT)
_ARTICLE = {t.name: t for t in evidence_tools(_INDEX)}
_RETRIEVER = BM25Retriever.from_texts({d.doc_id: d.text for d in pydoc_corpus()}, k=5)
_COMPACT = {t.name: t for t in evidence_tools(_RETRIEVER, profile="compact")}
_CATALOG = {t.name: t for t in catalog_tools(after_sales_catalog(), AGENT)}
# Notebook 07's query_logistics: the trace kept in the store (ToolResults, minted ids), read with read_evidence.
_TRACES = ToolResults(MemoryStore(ManualClock(datetime(2026, 9, 11, tzinfo=timezone(timedelta(hours=8))))), AGENT,
                      "standard-tests", ids="minted", seed="standard-tests")
_LOGISTICS = logistics_tool(after_sales_catalog(), _TRACES)
_DISCOVERY = {t.name: t for t in discovery_tools(after_sales_toolbox())}
# Notebook 12's middleware tools: locate and read over an offloaded result in the store.
_SHELF = ToolResults(MemoryStore(ManualClock(datetime(2026, 12, 1, tzinfo=UTC))), AGENT, "standard-tests")
_OFFLOADED = _SHELF.put("2026-11-30T12:41:40Z ERROR payment-7 timeout\n" * 400, tool="get_logs", call_id="c1")
_OFFLOAD = {t.name: t for t in evidence_tools(_SHELF, AGENT, profile="compact")}

CASES = {
    "article_search": (_ARTICLE["search_evidence"], {"query": "批处理上限"}),
    "article_locate": (_ARTICLE["locate_evidence"], {"term": "单批上限"}),
    "article_read": (_ARTICLE["read_evidence"], {"doc_id": "d03", "offset": 4321, "limit": 18}),
    "compact_search": (_COMPACT["search_evidence"], {"query": "break in finally"}),
    "compact_locate": (_COMPACT["locate_evidence"], {"term": "finally"}),
    "compact_read": (_COMPACT["read_evidence"], {"doc_id": "break", "offset": 0, "limit": 200}),
    "discover_resources": (_CATALOG["discover_resources"], {}),
    "read_resource_section": (_CATALOG["read_resource_section"],
                              {"resource_id": "order:A1042", "revision": "r12", "section": "delivery"}),
    "query_logistics": (_LOGISTICS, {"order_id": "A1042"}),
    "find_tools": (_DISCOVERY["find_tools"], {"query": "refund status"}),
    "load_tools": (_DISCOVERY["load_tools"], {"names": ["query_refund_status"]}),
    "offload_locate": (_OFFLOAD["locate_evidence"], {"term": "ERROR", "doc_id": _OFFLOADED.doc_id}),
    "offload_read": (_OFFLOAD["read_evidence"], {"doc_id": _OFFLOADED.doc_id, "offset": 0, "limit": 200}),
}


def _classes(name, tool, example):
    unit = type(f"TestUnit_{name}", (ToolsUnitTests,), {
        "tool_constructor": property(lambda self: tool),
        "tool_invoke_params_example": property(lambda self: dict(example)),
    })
    integration = type(f"TestIntegration_{name}", (ToolsIntegrationTests,), {
        "tool_constructor": property(lambda self: tool),
        "tool_invoke_params_example": property(lambda self: dict(example)),
    })
    return unit, integration


for _name, (_tool, _example) in CASES.items():
    _unit, _integration = _classes(_name, _tool, _example)
    globals()[_unit.__name__] = _unit
    globals()[_integration.__name__] = _integration


# Issue 33: the middleware's own locate and read (their schemas and descriptions, cut to what the tools need).
def _middleware_cases():
    try:
        from evidence_lib.integrations.langchain._middleware import EvidenceMiddleware
    except ImportError:  # the agents extra: without it there is no middleware to test
        return {}
    from evidence_lib import Budget

    unbounded = Budget(max_calls=None, max_chars=None, max_bytes=None, max_tokens=None, max_reads_per_doc=None,
                       max_refusals=None)  # the standard tests call each tool many times
    mw = EvidenceMiddleware(MemoryStore(ManualClock(datetime(2026, 12, 1, tzinfo=UTC))), AGENT,
                            session="standard-tests", threshold_tokens=100, budget=unbounded)
    entry = mw.shelf.put("2026-11-30T12:41:40Z ERROR payment-7 timeout\n" * 400, tool="get_logs", call_id="c1")
    tools = {t.name: t for t in mw.tools}
    return {"middleware_locate": (tools["locate_evidence"], {"term": "ERROR", "doc_id": entry.doc_id}),
            "middleware_read": (tools["read_evidence"], {"doc_id": entry.doc_id, "offset": 0, "limit": 200})}


for _name, (_tool, _example) in _middleware_cases().items():
    _unit, _integration = _classes(_name, _tool, _example)
    globals()[_unit.__name__] = _unit
    globals()[_integration.__name__] = _integration
