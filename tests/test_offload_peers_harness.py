"""Issue 25 item 4: Pydantic AI's harness and Haystack as offload peers, messages-only tokens, and the middleware's
cuts that serve the offload target (a shorter handle, the match's own line from locate, tool descriptions for
offloaded results).

The peers need the benchmark-only extras (``.venv-bench``: ``pydantic-ai`` and ``haystack``); their tests are
skipped without them: ``.venv-bench/bin/python -m pytest -q tests/test_offload_peers_harness.py``.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from evidence_lib import ManualClock, Principal
from evidence_lib._citations import Citation, verify_citation
from evidence_lib._measure import cl100k_tokens
from evidence_lib._toolkit import run_tool_call, tool_call
from evidence_lib.course.large_results import large_result_tasks
from evidence_lib.profiles import COMPACT
from evidence_lib.store import MemoryStore
from evidence_lib.store._offload import ToolResults, offload

pytest.importorskip("langchain.agents", reason="the agents extra (make setup installs it)")
from evidence_lib.integrations.langchain._middleware import EvidenceMiddleware

ROOT = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 12, 1, 9, tzinfo=UTC)
ALICE = Principal("acme", "alice")
TASKS = {t.name: t for t in large_result_tasks()}


def _bench(name: str):
    """A bench/ module by name (bench/ is a folder of scripts, not a package)."""
    sys.path.insert(0, str(ROOT / "bench"))
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _shelf() -> ToolResults:
    return ToolResults(MemoryStore(ManualClock(T0)), ALICE, "s1")


# -- the two new peers, each task offline ----------------------------------------------------------------------------
PEERS = {"pydantic_ai": ("pydantic_ai_harness", "run_pydantic_ai"), "haystack": ("haystack", "run_haystack")}


@pytest.mark.parametrize("task", sorted(TASKS))
@pytest.mark.parametrize("peer", sorted(PEERS))
def test_each_new_peer_offloads_searches_and_answers_each_task_offline(peer, task):
    package, runner = PEERS[peer]
    pytest.importorskip(package, reason=f"{package} is a benchmark-only extra (.venv-bench)")
    t = TASKS[task]
    got = getattr(_bench("offload_peers_harness"), runner)(
        t.tool_name, t.text, t.term, lambda text: t.answer in text, question=t.question)
    assert got["offloaded"] and got["handle"] and got["answered"] and t.answer in got["answer"]
    assert [c["returned"] for c in got["calls"]] == [t.tool_name, {"pydantic_ai": "read_tool_result",
                                                                   "haystack": "read_offloaded"}[peer], "final answer"]
    for c in got["calls"]:  # the result never entered the context; every part is counted
        assert c["prompt"]["cl100k_tokens"] == c["messages"]["cl100k_tokens"] + c["schemas"]["cl100k_tokens"]
        assert c["prompt"]["cl100k_tokens"] < cl100k_tokens(t.text) // 20
    assert all(":" in p["source"] and "not found" not in p["source"] for p in got["properties"].values())


def test_haystack_reader_numbers_matching_lines_and_is_bounded(tmp_path):
    pytest.importorskip("haystack", reason="haystack-ai is a benchmark-only extra (.venv-bench)")
    from haystack.hooks.tool_result_offloading import FileSystemToolResultStore

    store = FileSystemToolResultStore(root=tmp_path)
    ref = store.write(key="r.txt", content="\n".join(f"row {i} ok" for i in range(5000)) + "\nrow x ERROR")
    read = _bench("offload_peers_harness").haystack_reader(store)
    assert read(ref, pattern="ERROR") == "1 line(s)\n5001: row x ERROR"
    page = read(ref, offset=10, limit=10_000)
    assert page.startswith("4,991 line(s)\n11: row 10 ok") and len(page.split("\n")) == 51
    assert read(str(tmp_path / "nope.txt")).startswith("no offloaded result")


def test_the_json_reports_messages_only_and_total_tokens_per_peer_and_task(tmp_path):
    for package in ("pydantic_ai_harness", "haystack"):
        pytest.importorskip(package, reason=f"{package} is a benchmark-only extra (.venv-bench)")
    out = tmp_path / "offload.json"
    assert _bench("bench_offload").main(["--out", str(out), "--setups", "pydantic_ai,haystack,evidence"]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    for name, row in doc["tasks"].items():
        for setup in ("pydantic_ai", "haystack", "evidence"):
            r = row[setup]
            assert r["messages_only"]["cl100k_tokens"] <= r["total_context"]["cl100k_tokens"], (name, setup)
            assert r["messages_only"]["cl100k_tokens"] == r["messages_only_tokens"] > 0
        t = doc["targets"][name]
        assert t["messages_only_vs_best_peer"]["peer"] in ("pydantic_ai", "haystack")
        assert t["total_vs_best_peer"]["measured"] == round(
            row["evidence"]["total_context"]["cl100k_tokens"] / min(
                row[p]["total_context"]["cl100k_tokens"] for p in ("pydantic_ai", "haystack")), 3)
    assert "haystack/hooks/tool_result_offloading" in json.dumps(doc["tasks"]["log"]["haystack"]["properties"])


# -- the middleware's cuts -----------------------------------------------------------------------------------------
LOG = "\n".join(f"2026-11-30T11:{i // 60 % 60:02}:{i % 60:02}Z INFO worker-{i % 12} heartbeat ok seq={i}"
                for i in range(3000))
ANSWER = "2026-11-30T12:41:40Z ERROR payment-7 upstream timeout after 30000 ms"
LOG = LOG.replace(LOG.split("\n")[1700], ANSWER)


def test_the_handle_keeps_what_a_citation_needs_and_drops_the_prose():
    shown, entry = offload(_shelf(), LOG, tool="get_logs", call_id="c1", threshold_tokens=100)
    first = shown.split("\n")[0]
    assert f"stored as {entry.doc_id}." in first and "doc_id@revision [start, end)" in first
    assert "too large for the context" not in shown and "its sha256 starts so" not in shown
    # named once; the revision comes with the first locate or read (issue 33); the tools are in their schemas
    assert shown.count(entry.doc_id) == 1 and entry.revision not in shown and "offset, limit" not in shown


def test_a_preview_shows_the_first_line_only():
    shown, _ = offload(_shelf(), LOG, tool="get_logs", call_id="c1", threshold_tokens=100)
    preview = [line for line in shown.split("\n") if line.startswith("|")]
    assert preview == ["| " + LOG.split("\n")[0]]


def test_a_json_handle_lists_its_sections_instead_of_a_preview_of_the_same_bytes():
    shown, _ = offload(_shelf(), TASKS["json"].text, tool="list_orders", call_id="c1", threshold_tokens=100)
    assert not [line for line in shown.split("\n") if line.startswith("|")]
    assert "- $.orders 2,800 items [" in shown and "- $.orders[2799] [" in shown
    text_handle, _ = offload(_shelf(), "[oops " + LOG, tool="t", call_id="c2", threshold_tokens=100)
    assert "| [oops 2026-11-30T11:00:00Z" in text_handle  # not JSON: no sections, so the preview stays


def _middleware() -> EvidenceMiddleware:
    return EvidenceMiddleware(MemoryStore(ManualClock(T0)), ALICE, session="s1", threshold_tokens=100)


def test_locate_in_an_offloaded_result_shows_the_line_of_the_match_and_charges_only_that():
    mw = _middleware()
    entry = mw.shelf.put(LOG, tool="get_logs", call_id="c1")
    reply = run_tool_call(mw.tools, tool_call("locate_evidence", {"term": "payment-7", "doc_id": entry.doc_id}, "l1"))
    span = re.search(r"^\[(\d+),(\d+)\) (\".*\")$", reply.content, re.M)
    start, end = int(span[1]), int(span[2])
    assert LOG[start:end] == ANSWER and json.loads(span[3]) == ANSWER
    nxt = LOG.split("\n")[1701]
    after = LOG.index(nxt)
    never = verify_citation(mw.shelf, Citation(entry.doc_id, entry.revision, after, after + len(nxt), entry.sha256,
                                               nxt), mw.ledger.reads, ALICE)
    assert never.reason == "never_read"  # the next record was not shown, so it is not charged as read either
    ok = verify_citation(mw.shelf, Citation(entry.doc_id, entry.revision, start, end, entry.sha256, ANSWER),
                         mw.ledger.reads, ALICE)
    assert ok.ok


def test_the_middleware_tools_describe_offloaded_results_not_a_search_they_do_not_offer():
    mw = _middleware()
    described = {t.name: t.description for t in mw.tools}
    for name, text in described.items():
        assert "manifest" not in text and "last search" not in text and "search_evidence" not in text, name
    compact = {"locate_evidence": COMPACT.locate_description(COMPACT.default_locate_options(), True),
               "read_evidence": COMPACT.read_description()}
    assert cl100k_tokens(described["locate_evidence"]) < cl100k_tokens(compact["locate_evidence"]) / 2
    assert cl100k_tokens(described["read_evidence"]) < cl100k_tokens(compact["read_evidence"])
    assert "[start,end)" in described["locate_evidence"] and "[offset, offset+limit)" in described["read_evidence"]


def test_the_middleware_tool_schemas_name_only_what_applies_to_offloaded_results():
    from langchain_core.utils.function_calling import convert_to_openai_tool

    mw = _middleware()
    schemas = {t.name: convert_to_openai_tool(t)["function"]["parameters"] for t in mw.tools}
    assert sorted(schemas["locate_evidence"]["properties"]) == ["cursor", "doc_id", "term"]
    assert sorted(schemas["read_evidence"]["properties"]) == ["doc_id", "limit", "offset"]
    text = json.dumps(schemas)
    assert "manifest" not in text and "search_evidence" not in text
    entry = mw.shelf.put(LOG, tool="get_logs", call_id="c1")
    located = run_tool_call(mw.tools, tool_call("locate_evidence", {"term": "payment-7", "doc_id": entry.doc_id}, "l"))
    page = run_tool_call(mw.tools, tool_call("read_evidence", {"doc_id": entry.doc_id, "offset": 5, "limit": 20}, "r"))
    assert ANSWER in located.content and page.content.endswith(LOG[5:25]) and page.status == "success"
    bad = run_tool_call(mw.tools, tool_call("read_evidence", {"doc_id": entry.doc_id, "limit": 5000}, "r2"))
    assert bad.status == "error"
