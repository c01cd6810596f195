"""Issue 32, item 8: a read takes the path a locate takes. One tool call validates its arguments once (not once by
``check_args`` and again by LangChain's ``_parse_input``), one read looks its document entry up once in the tools
and once more only in the index's own guard, and a read of a store snapshot is one read transaction (SQLite's trace
callback sees every statement), on every profile.
"""

from __future__ import annotations

from typing import ClassVar

import pytest
from pydantic import model_validator

from evidence_lib import Budget, Document, EvidenceIndex, Principal, evidence_tools, run_tool_call, tool_call
from evidence_lib._tools import ReadArgs

from .storekit import round_trips

ALICE = Principal("acme", "alice")
DOCS = [Document(f"d{i:02}", f"doc {i}", "r1", f"line {i}: the batch limit is {i} rows.\n" * 200) for i in range(6)]
UNLIMITED = Budget(max_calls=None, max_chars=None, max_bytes=None, max_tokens=None, max_reads_per_doc=None,
                   max_refusals=None)


class CountingReadArgs(ReadArgs):
    """``read_evidence``'s own schema, counting every time pydantic validates it."""

    validations: ClassVar[list[object]] = []  # reset by each test

    @model_validator(mode="before")
    @classmethod
    def _count(cls, data: object) -> object:
        cls.validations.append(data)
        return data


class CountingIndex(EvidenceIndex):
    """A real in-memory index that counts its entry lookups."""

    lookups: list[str]

    def entry(self, doc_id, principal=None, action="read"):
        self.lookups.append(doc_id)
        return super().entry(doc_id, principal, action)


def _counting_read(tools: list):
    read = next(t for t in tools if t.name == "read_evidence")
    read.args_schema = CountingReadArgs
    CountingReadArgs.validations = []
    return read


@pytest.mark.parametrize("profile", ["article", "compact"])
@pytest.mark.parametrize("args, status", [({"doc_id": "d02", "offset": 40, "limit": 120}, "success"),
                                          ({"doc_id": "d02", "offset": 40}, "success"),
                                          ({"doc_id": "d02", "limit": 0}, "error")])
def test_a_tool_call_validates_its_arguments_once(profile, args, status):
    tools = evidence_tools(EvidenceIndex.in_memory(DOCS), profile=profile)
    _counting_read(tools)
    msg = run_tool_call(tools, tool_call("read_evidence", args, "c1"))
    assert msg.status == status, msg.content
    assert len(CountingReadArgs.validations) == 1


def test_a_validated_default_reaches_the_tool_as_the_schema_says():
    """The schema's default (not the function's) is what the body gets: one validation fills it in."""

    class ShortPages(CountingReadArgs):
        limit: int = 7

    tools = evidence_tools(EvidenceIndex.in_memory(DOCS))
    read = _counting_read(tools)
    read.args_schema = ShortPages
    msg = run_tool_call(tools, tool_call("read_evidence", {"doc_id": "d01"}, "c1"))
    assert '"end": 7' in msg.content and len(CountingReadArgs.validations) == 1


@pytest.mark.parametrize("profile", ["article", "compact"])
def test_a_read_looks_its_entry_up_once_besides_the_index_guard(profile):
    index = CountingIndex.in_memory(DOCS)
    index.lookups = []
    tools = evidence_tools(index, profile=profile)
    run_tool_call(tools, tool_call("search_evidence", {"query": "limit"}, "s"))  # (the compact one: handles)
    index.lookups.clear()
    msg = run_tool_call(tools, tool_call("read_evidence", {"doc_id": "d03", "offset": 10, "limit": 80}, "c1"))
    assert msg.status == "success", msg.content
    # the tools look it up once (for the page's bounds); the index's text() checks access once more, itself
    assert index.lookups == ["d03", "d03"]


@pytest.mark.parametrize("backend", ["sqlite"])
@pytest.mark.parametrize("profile", ["article", "compact"])
def test_a_read_of_a_store_snapshot_is_one_read_transaction(estore, profile):
    snap = estore.put_snapshot("acme", "s-1", "q", DOCS)
    tools = evidence_tools(snap, ALICE, profile=profile)
    run_tool_call(tools, tool_call("search_evidence", {"query": "limit"}, "s"))
    with round_trips(estore) as trips:
        msg = run_tool_call(tools, tool_call("read_evidence", {"doc_id": "d04", "offset": 100, "limit": 300}, "c1"))
    assert msg.status == "success", msg.content
    assert trips.transactions == 1, trips.groups
