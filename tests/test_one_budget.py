"""One budget per task covers every reading tool: evidence pages, catalog sections and stored results.

Issue 16 defect 9. Every test builds one ``Ledger`` and hands it to ``evidence_tools`` (of the article's index and of
the stored results, issue 32's one read tool), ``catalog_tools`` and ``logistics_tool``; calls go through real
tool-call dicts and ``run_tool_call``, and the model sees real ``ToolMessage``s.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever

from evidence_lib import Budget, EvidenceIndex, Ledger, ManualClock, Principal, evidence_tools, run_tool_call, tool_call
from evidence_lib._ledger import ReadRecord
from evidence_lib.course.after_sales import CST, after_sales_catalog
from evidence_lib.course.article import article_corpus
from evidence_lib.course.logistics import logistics_tool
from evidence_lib.disclosure import Need, ReadSession, StopRules, catalog_tools
from evidence_lib.store import MemoryStore, ToolResults

AGENT = Principal("shop-a", "user-417", groups={"support"})
START = datetime(2026, 9, 11, tzinfo=CST)
UNLIMITED = dict(max_calls=None, max_chars=None, max_bytes=None, max_tokens=None, max_reads_per_doc=None,
                 max_refusals=None)


def budget(**limits) -> Budget:
    return Budget(**{**UNLIMITED, **limits})


class Task:
    """Evidence tools, catalog tools, query_logistics and the stored results' read tool of one task, on one ledger."""

    def __init__(self, tmp_path, ledger: Ledger) -> None:
        self.ledger = ledger
        self.catalog = after_sales_catalog()
        self.results = ToolResults(MemoryStore(ManualClock(START)), AGENT, "s-1", ttl=timedelta(hours=24),
                                   ids="minted", seed="one-budget")
        index = EvidenceIndex.build(article_corpus(), tmp_path / "s")
        self.tools = [*evidence_tools(index, ledger=ledger), *catalog_tools(self.catalog, AGENT, ledger=ledger),
                      logistics_tool(self.catalog, self.results, ledger=ledger)]
        self.trace_tools = evidence_tools(self.results, AGENT, ledger=ledger)  # read_evidence on the stored trace
        self.n = 0

    def call(self, name: str, tools=None, **args):
        self.n += 1
        msg = run_tool_call(tools or self.tools, tool_call(name, args, f"call-{self.n}"))
        assert msg.tool_call_id == f"call-{self.n}" and msg.name == name
        return msg

    def read_evidence(self, offset=0, limit=50):
        return self.call("read_evidence", doc_id="d01", offset=offset, limit=limit)

    def read_section(self, section="delivery", offset=0, limit=100, resource_id="order:A1042", revision="r12"):
        return self.call("read_resource_section", resource_id=resource_id, revision=revision, section=section,
                         offset=offset, limit=limit)

    def query(self):
        return self.call("query_logistics", order_id="A1042")

    def read_trace(self, handle, section="delivery", offset=0, limit=100):
        """``read_evidence`` on the stored trace, ``offset`` characters into ``section``."""
        start = handle["sections"][section][0] if isinstance(handle, dict) else 0
        doc_id = handle["doc_id"] if isinstance(handle, dict) else handle
        return self.call("read_evidence", self.trace_tools, doc_id=doc_id, offset=start + offset, limit=limit)


def refused(msg, reason="calls"):
    body = json.loads(msg.content)
    return msg.status == "error" and body["error"] == "budget_exhausted" and body["reason"] == reason


def served(msg):
    return msg.status == "success" and "error" not in json.loads(msg.content)


def test_a_budget_spent_through_read_evidence_refuses_catalog_and_stored_result_reads(tmp_path):
    """Issue 16 defect 9: three calls spent by query_logistics and read_evidence leave none for the other readers."""
    t = Task(tmp_path, Ledger(budget(max_calls=3)))
    handle = json.loads(t.query().content)
    assert served(t.read_evidence(0)) and served(t.read_evidence(50))
    assert refused(t.read_section())
    assert refused(t.read_trace(handle))
    assert refused(t.call("discover_resources"))
    assert refused(t.read_evidence(100))
    assert t.ledger.totals()["calls"] == 3
    assert [e.tool for e in t.ledger.refusals] == ["read_resource_section", "read_evidence", "discover_resources",
                                                   "read_evidence"]


def test_a_budget_spent_through_catalog_reads_refuses_read_evidence_and_query_logistics(tmp_path):
    """Issue 16 defect 9: catalog section reads are charged to the task's calls, so read_evidence is refused after."""
    t = Task(tmp_path, Ledger(budget(max_calls=3)))
    assert served(t.call("discover_resources"))
    assert served(t.read_section("header")) and served(t.read_section("delivery"))
    assert refused(t.read_section("remarks"))
    assert refused(t.read_evidence())
    assert refused(t.query())
    assert [e.tool for e in t.ledger.charged] == ["discover_resources", "read_resource_section",
                                                  "read_resource_section"]


def test_a_budget_spent_through_stored_result_reads_refuses_catalog_and_evidence_reads(tmp_path):
    """Issue 16 defect 9: reads of a stored result are charged too; a task cannot read on without limit through them."""
    t = Task(tmp_path, Ledger(budget(max_calls=3)))
    aid = json.loads(t.query().content)
    assert served(t.read_trace(aid, "transit", 0)) and served(t.read_trace(aid, "transit", 100))
    assert refused(t.read_trace(aid, "transit", 200))
    assert refused(t.read_section())
    assert refused(t.read_evidence())


def test_catalog_and_stored_result_text_is_charged_against_the_same_chars_budget(tmp_path):
    """Issue 16 defect 9: characters returned by a section or a stored result's page count against the task's chars."""
    t = Task(tmp_path, Ledger(budget(max_chars=1_000)))
    page = t.read_section(limit=800)
    assert served(page)
    assert t.ledger.totals()["chars"] == len(page.content)
    aid = json.loads(t.query().content)
    assert refused(t.read_trace(aid, "transit", 0, 800), "chars")  # would pass 1,000: refused whole
    assert refused(t.read_evidence(0, 800), "chars")
    assert t.ledger.totals()["chars"] <= 1_000


def test_a_re_read_of_covered_section_bytes_is_already_read_without_text(tmp_path):
    """Issue 16 defect 9: like read_evidence, a catalog page or stored result already covered is answered already_read."""
    t = Task(tmp_path, Ledger(budget()))
    first = json.loads(t.read_section("delivery", 0, 100).content)
    again = t.read_section("delivery", 10, 50)
    body = json.loads(again.content)
    assert again.status == "success" and body["status"] == "already_read" and "text" not in body
    assert body["covered_by"] == [[first["start"], first["end"]]]
    text = t.catalog.read_section(AGENT, "order:A1042", "r12", "delivery", 0, 800)["text"]
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert t.ledger.reads == [ReadRecord("order:A1042#delivery", "r12", first["start"], first["end"], sha)]
    assert [e.status for e in t.ledger.entries] == ["ok", "already_read"]
    # Another revision is other bytes: served again, not already_read.
    assert "text" in json.loads(t.read_section("delivery", 0, 100, revision="r11").content)

    aid = json.loads(t.query().content)
    start = aid["sections"]["transit"][0]
    page = json.loads(t.read_trace(aid, "transit", 0, 200).content)
    assert page["text"] and page["start"] == start and page["end"] == start + 200
    repeat = json.loads(t.read_trace(aid, "transit", 100, 100).content)
    assert repeat["status"] == "already_read" and "text" not in repeat and repeat["covered_by"] == [[start,
                                                                                                     start + 200]]


def test_reads_per_document_count_catalog_sections(tmp_path):
    """Issue 16 defect 9: max_reads_per_doc holds for a catalog section as for an evidence document."""
    t = Task(tmp_path, Ledger(budget(max_reads_per_doc=1)))
    assert served(t.read_section("delivery", 0, 10))
    assert refused(t.read_section("delivery", 10, 10), "reads_per_doc")
    assert served(t.read_section("header", 0, 10))  # another section is another document


def test_catalog_and_stored_result_refusals_are_recorded_and_count_toward_the_refusal_cap(tmp_path):
    """Issue 16 defect 9: refused catalog and stored-result calls enter the ledger; at the cap every tool is refused."""
    t = Task(tmp_path, Ledger(budget(max_refusals=3)))
    assert json.loads(t.read_section(resource_id="order:Z9999").content)["error"] == "unknown_resource"
    assert json.loads(t.read_section(offset=-1).content)["error"] == "invalid_page_bounds"  # the schema's bound
    assert json.loads(t.read_trace("art-0000000000000000").content)["error"] == "unknown_doc_id"
    assert [(e.tool, e.status) for e in t.ledger.refusals] == [
        ("read_resource_section", "unknown_resource"), ("read_resource_section", "invalid_page_bounds"),
        ("read_evidence", "unknown_doc_id")]
    assert t.ledger.totals()["calls"] == 0
    assert refused(t.call("discover_resources"), "refusals")
    assert refused(t.read_evidence(), "refusals")


def test_without_a_ledger_catalog_and_stored_result_tools_reply_as_before(tmp_path):
    """Issue 16 defect 9: no ledger, no budget: replies are the store's and catalog's own pages, byte for byte."""
    catalog = after_sales_catalog()
    results = ToolResults(MemoryStore(ManualClock(START)), AGENT, "s-1", ids="minted", seed="one-budget")
    tools = [*catalog_tools(catalog, AGENT), logistics_tool(catalog, results), *evidence_tools(results, AGENT)]
    args = {"resource_id": "order:A1042", "revision": "r12", "section": "delivery"}
    for n in range(3):  # the same read again: served again (nothing remembers it without a ledger)
        msg = run_tool_call(tools, tool_call("read_resource_section", args, f"c{n}"))
        assert json.loads(msg.content) == catalog.read_section(AGENT, "order:A1042", "r12", "delivery")
    aid = json.loads(run_tool_call(tools, tool_call("query_logistics", {"order_id": "A1042"}, "q")).content)
    transit = aid["sections"]["transit"][0]
    page = run_tool_call(tools, tool_call("read_evidence", {"doc_id": aid["doc_id"], "offset": transit}, "a"))
    assert json.loads(page.content) == results.read(aid["doc_id"], transit)


def test_a_read_session_on_the_task_ledger_stops_when_the_budget_is_spent(tmp_path):
    """Issue 16 defect 9: a ReadSession's section reads are charged to the same ledger and stop at its limit."""
    t = Task(tmp_path, Ledger(budget(max_calls=2)))
    assert served(t.read_evidence())
    needs = (Need("signed", "已签收"), Need("never", "no such marker anywhere"))
    session = ReadSession(t.catalog, AGENT, needs, StopRules(max_supplementary_reads=5), ledger=t.ledger)
    assert session.read("order:A1042", "r12", "delivery")["status"] == "read"
    row = session.read("order:A1042", "r12", "header")
    assert row["status"] == "budget_exhausted"
    assert session.report()["reason"] == "budget_exhausted" and session.stop_reason == "budget_exhausted"
    assert session.read("policy:returns", "r5", "quality")["status"] == "stopped"
    assert t.ledger.totals()["calls"] == 2
    assert refused(t.read_section("remarks"))


@pytest.mark.parametrize("where", [":memory:", "sqlite"])
def test_a_store_ledger_is_one_budget_for_catalog_stored_result_and_evidence_reads(tmp_path, where):
    """Issue 16 defect 9: the store's ledger (shared by workers) charges catalog and stored-result reads the same way."""
    from evidence_lib.store import open_store

    store = open_store(where if where == ":memory:" else str(tmp_path / "e.db"), ManualClock(START))
    t = Task(tmp_path, store.ledger("shop-a", "s-1", "task-1", budget(max_calls=3)))
    first = json.loads(t.read_section("delivery", 0, 100).content)
    assert json.loads(t.read_section("delivery", 0, 50).content)["status"] == "already_read"
    aid = json.loads(t.query().content)
    assert refused(t.read_trace(aid, "transit"))
    assert refused(t.read_evidence())
    assert [(r.doc_id, r.start, r.end) for r in t.ledger.reads] == [("order:A1042#delivery", 0, first["end"])]
    assert [e.status for e in t.ledger.refusals] == ["budget_exhausted", "budget_exhausted"]


# -- issue 31 item 13: a refused locate(query=...) costs the retriever nothing ---------------------------------------
class _CountingRetriever(BaseRetriever):
    """A real retriever over two documents that counts the queries it was asked."""

    asked: list = []

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list:
        self.asked.append(query)
        return [LCDocument(page_content="The batch limit is 200 rows.", metadata={"doc_id": "a", "revision": "r1"}),
                LCDocument(page_content="Timeouts are 30 seconds.", metadata={"doc_id": "b", "revision": "r1"})]


@pytest.mark.parametrize("max_refusals", [2, None])
def test_a_locate_with_a_query_refused_by_the_budget_never_queries_the_retriever(max_refusals):
    retriever = _CountingRetriever(asked=[])
    tools = evidence_tools(retriever, ledger=Ledger(budget(max_calls=1, max_refusals=max_refusals)),
                           profile="compact")
    ok = run_tool_call(tools, tool_call("locate_evidence", {"term": "limit", "query": "batch limit"}, "c0"))
    assert ok.status == "success" and retriever.asked == ["batch limit"]
    for n in range(12):  # every later call is over the budget: the retriever is not asked again
        msg = run_tool_call(tools, tool_call("locate_evidence", {"term": "limit", "query": f"other words {n}"}, f"c{n}"))
        assert msg.status == "error" and json.loads(msg.content)["error"] == "budget_exhausted"
    assert retriever.asked == ["batch limit"]
