"""Regression tests for the defects found by adversarial and code review (issue 8, items 1-10, 13).

Each test names the defect it pins. They go through the public API (real tool-call dicts and
``ToolMessage``s where a model would be involved).
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from langchain_core.tools import StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

from evidence_lib import (
    Access,
    Budget,
    Citation,
    Document,
    EvidenceError,
    EvidenceIndex,
    Ledger,
    LocateOptions,
    ManualClock,
    Principal,
    evidence_tools,
    run_tool_call,
    tool_call,
    verify_citation,
)
from evidence_lib._lines import TRUNCATED
from evidence_lib._tools import MAX_MANIFEST_BYTES, MAX_MANIFEST_LIMIT, MAX_TITLE_CHARS
from evidence_lib.course.after_sales import after_sales_catalog, after_sales_toolbox
from evidence_lib.course.article import article_corpus
from evidence_lib.course.logistics import logistics_tool
from evidence_lib.disclosure import catalog_tools, discovery_tools
from evidence_lib.store import MemoryStore, ToolResults

AGENT = Principal("shop-a", "user-417", groups={"support"})
START = datetime(2026, 9, 11, tzinfo=timezone(timedelta(hours=8)))


def _page(tools, doc_id, offset, limit, cid="r"):
    return json.loads(run_tool_call(tools, tool_call("read_evidence", {"doc_id": doc_id, "offset": offset,
                                                                        "limit": limit}, cid)).content)


# -- 1. citation coverage ---------------------------------------------------------------------------------

def test_zero_length_citation_of_an_unread_document_cites_nothing(tmp_path):
    index = EvidenceIndex.build(article_corpus(), tmp_path)
    ledger = Ledger(Budget())
    tools = evidence_tools(index, ledger=ledger)
    _page(tools, "d01", 0, 10)  # some *other* document was read
    d05 = index.entry("d05")
    check = verify_citation(index, Citation("d05", d05.revision, 0, 0, d05.sha256), ledger)
    assert check.reason == "empty_range"


def test_zero_length_citation_inside_a_read_range_cites_nothing(tmp_path):
    # issue 31 (item 4): [s, s) inside a page that was read used to verify; it cites no text, so it never does
    index = EvidenceIndex.build(article_corpus(), tmp_path)
    ledger = Ledger(Budget())
    page = _page(evidence_tools(index, ledger=ledger), "d03", 4321, 18)
    check = verify_citation(index, Citation("d03", page["revision"], 4330, 4330, page["sha256"]), ledger)
    assert check.reason == "empty_range" and not check.ok


# -- 2. reads bound to bytes, not labels --------------------------------------------------------------------

def test_reads_of_old_bytes_do_not_cover_new_text_indexed_under_the_same_revision(tmp_path):
    docs = article_corpus()
    old = EvidenceIndex.build(docs, tmp_path / "store")
    ledger = Ledger(Budget(max_reads_per_doc=None))
    old_page = _page(evidence_tools(old, ledger=ledger), "d03", 4321, 18)
    changed = [Document(d.doc_id, d.title, d.revision, d.text.replace("200", "500")) for d in docs]
    new = EvidenceIndex.build(changed, tmp_path / "store")  # same doc_id, same revision label, new bytes
    assert new.entry("d03").revision == old_page["revision"] and new.entry("d03").sha256 != old_page["sha256"]
    again = _page(evidence_tools(new, ledger=ledger), "d03", 4321, 18, "r2")
    assert again.get("status") != "already_read" and "500" in again["text"]
    stale_reads = [old_page]
    fresh = new.entry("d03")
    check = verify_citation(new, Citation("d03", fresh.revision, 4321, 4339, fresh.sha256), stale_reads)
    assert check.reason == "never_read"


# -- 3. every tool refuses unknown argument names, including tools that take none ---------------------------

@pytest.mark.parametrize("smuggled", ["principal", "tenant", "user"])
def test_a_tool_without_arguments_refuses_a_smuggled_identity(smuggled):
    tools = catalog_tools(after_sales_catalog(), AGENT)
    msg = run_tool_call(tools, tool_call("discover_resources", {smuggled: "shop-b"}, "c1"))
    assert msg.status == "error" and json.loads(msg.content)["error"] == "invalid_arguments"
    assert run_tool_call(tools, tool_call("discover_resources", {}, "c2")).status == "success"


def _all_model_facing_tools(tmp_path):
    index = EvidenceIndex.build(article_corpus(), tmp_path / "s")
    catalog = after_sales_catalog()
    traces = ToolResults(MemoryStore(ManualClock(START)), AGENT, "s", ids="minted", seed="t")
    return [*evidence_tools(index, ledger=Ledger(Budget(max_refusals=None))),
            *evidence_tools(index, locate_options=LocateOptions(paged=True)),
            *catalog_tools(catalog, AGENT), logistics_tool(catalog, traces), *evidence_tools(traces, AGENT),
            *discovery_tools(after_sales_toolbox())]


def test_every_model_facing_tool_refuses_unknown_argument_names(tmp_path):
    for tool in _all_model_facing_tools(tmp_path):
        msg = run_tool_call(tool, tool_call(tool.name, {"principal": "admin"}, "c"))
        assert msg.status == "error" and json.loads(msg.content)["error"] == "invalid_arguments", tool.name


# -- 5. any value a model can send gets a stable code, never internal_error ---------------------------------

def _deep(n):
    return 1 if n == 0 else {"k": _deep(n - 1)}


HOSTILE = [10**5000, -(10**5000), 2**64, "\ud800", "a\udfffb", "nul\x00byte", [1] * 5000, _deep(12)]


def test_hostile_values_in_every_argument_of_every_tool_get_a_stable_code(tmp_path):
    for tool in _all_model_facing_tools(tmp_path):
        schema = convert_to_openai_tool(tool)["function"]["parameters"]
        names = list(schema.get("properties", {})) or ["anything"]
        for name in names:
            for value in HOSTILE:
                msg = run_tool_call(tool, tool_call(tool.name, {name: value}, "c"))
                body = json.loads(msg.content)
                assert msg.status == "error", (tool.name, name)
                assert body["error"] != "internal_error", (tool.name, name, body)
                msg.content.encode("utf-8")  # never echoes what cannot be encoded


def test_a_five_thousand_digit_offset_is_beyond_the_end(tmp_path):
    tools = evidence_tools(EvidenceIndex.build(article_corpus(), tmp_path))
    body = json.loads(run_tool_call(tools, tool_call("read_evidence", {"doc_id": "d03", "offset": 10**5000},
                                                     "c")).content)
    assert body["error"] == "offset_exceeds_document"


def test_lone_surrogates_in_tool_call_ids_and_names_do_not_crash_the_runner(tmp_path):
    tools = evidence_tools(EvidenceIndex.build(article_corpus(), tmp_path))
    for call in ({"name": "read_evidence", "args": {"doc_id": "d03"}, "id": "\ud800", "type": "tool_call"},
                 {"name": "read\ud800", "args": {}, "id": "x", "type": "tool_call"}, None, 42, "text"):
        msg = run_tool_call(tools, call)
        assert msg.status == "error" and json.loads(msg.content)["error"] in {"invalid_arguments", "unknown_tool"}
        msg.content.encode("utf-8")
        msg.tool_call_id.encode("utf-8")


# -- 6. the manifest is bounded in bytes, not only in rows --------------------------------------------------

def test_thirty_long_titles_make_a_bounded_manifest_that_counts_what_it_left_out(tmp_path):
    docs = [Document(f"t{i:02}", "标题" * 40_000, "rev-" + "9" * 500, "正文。" * 10) for i in range(30)]
    tools = evidence_tools(EvidenceIndex.build(docs, tmp_path), manifest_limit=MAX_MANIFEST_LIMIT)
    content = run_tool_call(tools, tool_call("search_evidence", {"query": "标题"}, "c")).content
    assert len(content.encode("utf-8")) <= MAX_MANIFEST_BYTES
    manifest = json.loads(content)
    rows = manifest["candidates"]
    assert manifest["omitted"] == 30 - len(rows) > 0
    assert all(len(r["title"]) == MAX_TITLE_CHARS and r["title"].endswith(TRUNCATED) for r in rows)
    assert all(r["revision"].endswith(TRUNCATED) for r in rows)


def test_omitted_never_counts_what_the_principal_may_not_discover(tmp_path):
    bob = Principal("acme", "bob")
    docs = [Document(f"h{i}", "hidden", "r", "x", access=Access("globex")) for i in range(40)]
    docs += [Document(f"v{i}", "visible", "r", "y", access=Access("acme")) for i in range(3)]
    tools = evidence_tools(EvidenceIndex.build(docs, tmp_path), bob, manifest_limit=2)
    manifest = json.loads(tools[0].invoke({"query": "q"}))
    assert manifest["omitted"] == 1 and "hidden" not in json.dumps(manifest)


@pytest.mark.parametrize("limit", [0, MAX_MANIFEST_LIMIT + 1, True, 10**6])
def test_manifest_limit_has_a_hard_ceiling(tmp_path, limit):
    with pytest.raises(ValueError):
        evidence_tools(EvidenceIndex.build(article_corpus(2), tmp_path), manifest_limit=limit)


# -- 7. storage reads ----------------------------------------------------------------------------------------

def _read_code(index, doc_id="d03"):
    with pytest.raises(EvidenceError) as info:
        index.snapshot(doc_id)
    return info.value.code


def test_a_symlink_out_of_the_root_is_never_followed(tmp_path):
    index = EvidenceIndex.build(article_corpus(), tmp_path / "store")
    secret = tmp_path / "secret.txt"
    secret.write_bytes((tmp_path / "store" / "d03.txt").read_bytes())  # same bytes, same hash
    (tmp_path / "store" / "d03.txt").unlink()
    os.symlink(secret, tmp_path / "store" / "d03.txt")
    assert _read_code(index) == "evidence_changed"


def test_a_fifo_is_never_opened_for_reading(tmp_path):
    index = EvidenceIndex.build(article_corpus(), tmp_path / "store")
    (tmp_path / "store" / "d03.txt").unlink()
    os.mkfifo(tmp_path / "store" / "d03.txt")
    assert _read_code(index) == "evidence_changed"  # returns at once: no writer is waited for


def test_an_oversized_stored_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    index = EvidenceIndex.build(article_corpus(), tmp_path / "store")
    with open(tmp_path / "store" / "d03.txt", "r+b") as f:
        f.truncate(1 << 30)  # a sparse 1 GiB file
    reads = []
    real_read, real_read_bytes = os.read, Path.read_bytes
    monkeypatch.setattr(os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self) or real_read_bytes(self))
    assert _read_code(index) == "evidence_changed" and reads == [], "refused from its size, before any byte is read"


# -- 8. library entry points validate as strictly as the tools ------------------------------------------------

@pytest.mark.parametrize("bad", [True, False, 1.0, "1", None])
def test_catalog_and_stored_result_entry_points_refuse_non_integer_offsets(bad):
    catalog = after_sales_catalog()
    with pytest.raises(EvidenceError) as info:
        catalog.read_section(AGENT, "order:A1042", "r12", "delivery", offset=bad)
    assert info.value.code == "invalid_page_bounds"
    traces = ToolResults(MemoryStore(ManualClock(START)), AGENT, "s", ids="minted", seed="t")
    handle = traces.put("a stored trace", tool="query_logistics").doc_id
    with pytest.raises(EvidenceError) as info:
        traces.read(handle, offset=bad)
    assert info.value.code == "invalid_page_bounds"
    with pytest.raises(EvidenceError):
        after_sales_toolbox().find_tools("order", limit=bad)
    with pytest.raises(EvidenceError):
        catalog.discover(AGENT, limit=bad)


# -- 9. refusals are context too ------------------------------------------------------------------------------

def test_two_hundred_bad_calls_are_counted_as_context_and_stopped_by_the_refusal_cap(tmp_path):
    ledger = Ledger(Budget())
    tools = evidence_tools(EvidenceIndex.build(article_corpus(), tmp_path), ledger=ledger)
    messages = [run_tool_call(tools, tool_call("read_evidence", {"doc_id": "d03", "limit": 0}, f"c{i}"))
                for i in range(200)]
    seen = sum(len(m.content.encode("utf-8")) for m in messages)
    assert ledger.context()["bytes"] == seen and ledger.totals()["bytes"] == 0
    codes = [json.loads(m.content)["error"] for m in messages]
    cap = Budget().max_refusals
    assert codes[:cap] == ["invalid_page_bounds"] * cap
    assert set(codes[cap:]) == {"budget_exhausted"}
    assert {json.loads(m.content)["reason"] for m in messages[cap:]} == {"refusals"}
    ok = run_tool_call(tools, tool_call("read_evidence", {"doc_id": "d03"}, "after"))
    assert json.loads(ok.content)["error"] == "budget_exhausted"  # a looping caller stays stopped


# -- 10. the schema is the single source of truth -------------------------------------------------------------

def test_the_wire_schema_carries_the_page_bounds(tmp_path):
    read = evidence_tools(EvidenceIndex.build(article_corpus(2), tmp_path))[2]
    props = convert_to_openai_tool(read)["function"]["parameters"]["properties"]
    assert props["offset"]["minimum"] == 0
    assert (props["limit"]["minimum"], props["limit"]["maximum"]) == (1, 800)


def test_locate_description_and_schema_follow_the_options_in_force(tmp_path):
    opts = LocateOptions(max_term_chars=4, max_positions=2)
    locate = evidence_tools(EvidenceIndex.build(article_corpus(2), tmp_path), locate_options=opts)[1]
    assert "1-4 characters" in locate.description and "at most 2 positions" in locate.description
    assert "64" not in locate.description and "5 positions" not in locate.description
    term = convert_to_openai_tool(locate)["function"]["parameters"]["properties"]["term"]
    assert (term["minLength"], term["maxLength"]) == (1, 4)
    with pytest.raises(EvidenceError) as info:
        locate.invoke({"term": "单批上限x"})
    assert info.value.code == "invalid_term"


def test_one_query_bound_for_every_query_tool(tmp_path):
    from evidence_lib._toolkit import MAX_QUERY_CHARS

    search = evidence_tools(EvidenceIndex.build(article_corpus(2), tmp_path))[0]
    find = discovery_tools(after_sales_toolbox())[0]
    for tool in (search, find):
        q = convert_to_openai_tool(tool)["function"]["parameters"]["properties"]["query"]
        assert q["maxLength"] == MAX_QUERY_CHARS


# -- 13. why the tools validate before langchain-core: pinned against the installed version ---------------------

class _Empty(BaseModel):
    pass


def test_langchain_core_ignores_extra_arguments_of_a_tool_without_fields():
    """If this starts failing, langchain-core validates empty schemas itself and our pre-check is redundant."""
    tool = StructuredTool.from_function(lambda: "ran", name="noargs", description="d", args_schema=_Empty)
    assert tool.invoke({"principal": "x"}) == "ran"


def test_langchain_core_formats_raw_input_for_callbacks_before_validating_it():
    """BaseTool.run calls str() on the raw input; a 5,000-digit int cannot be formatted (int max str digits)."""

    class _N(BaseModel):
        n: int

    tool = StructuredTool.from_function(lambda n: n, name="n", description="d", args_schema=_N)
    with pytest.raises(ValueError, match="digits"):
        tool.invoke({"n": 10**5000})
