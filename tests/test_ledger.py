"""The budget ledger: one budget per task, shared by the three tools; dedupe; explicit exhaustion."""

from __future__ import annotations

import json

import pytest
from conftest import body, refusal_code

from evidence_lib import Budget, EvidenceError, Ledger, error_payload, evidence_tools, to_json
from evidence_lib._ledger import ReadRecord
from evidence_lib._measure import cl100k_tokens, utf8_bytes

UNLIMITED = dict(max_calls=None, max_chars=None, max_bytes=None, max_tokens=None, max_reads_per_doc=None,
                 max_refusals=None)


def _tools(index, **budget):
    ledger = Ledger(Budget(**budget)) if budget else Ledger()
    return ledger, evidence_tools(index, ledger=ledger)


def _hundred_tiny_reads(read):
    """Read d03 one character at a time at successive offsets; return (pages, first refusal, offset)."""
    pages = []
    for offset in range(100):
        try:
            pages.append(json.loads(read.invoke({"doc_id": "d03", "offset": offset, "limit": 1})))
        except EvidenceError as e:
            return pages, e, offset
    return pages, None, None


def test_hundred_one_character_reads_are_stopped_with_budget_exhausted(index):
    ledger, (_, _, read) = _tools(index)
    pages, err, at = _hundred_tiny_reads(read)
    assert err is not None, "100 tiny reads were never stopped"
    assert err.code == "budget_exhausted" and isinstance(err, ValueError)
    assert len(pages) < 100 and at == len(pages)
    assert err.details["spent"] == ledger.totals()
    assert err.details["limits"] == ledger.limits()
    assert err.details["reason"] == "reads_per_doc"
    assert [p["text"] for p in pages] == [ch for ch in "批处理任务需保留执行批次"[: len(pages)]]


@pytest.mark.parametrize(
    "budget, reason",
    [(dict(UNLIMITED, max_calls=20), "calls"),
     (dict(UNLIMITED, max_bytes=4_000), "bytes"),
     (dict(UNLIMITED, max_chars=3_000), "chars"),
     (dict(UNLIMITED, max_tokens=1_500), "tokens")],
)
def test_hundred_tiny_reads_are_stopped_by_each_kind_of_limit(index, budget, reason):
    ledger, (_, _, read) = _tools(index, **budget)
    pages, err, _ = _hundred_tiny_reads(read)
    assert err is not None and err.code == "budget_exhausted"
    assert err.details["reason"] == reason
    spent, limits = err.details["spent"], err.details["limits"]
    assert spent == ledger.totals()
    for unit in ("calls", "chars", "bytes", "tokens"):
        if limits[unit] is not None:
            assert spent[unit] <= limits[unit]
    assert spent["calls"] == len(pages)


def test_once_exhausted_every_later_tiny_read_is_refused_and_nothing_more_is_charged(index):
    ledger, (_, _, read) = _tools(index, **dict(UNLIMITED, max_calls=10))
    pages, _, _ = _hundred_tiny_reads(read)
    spent = ledger.totals()
    for offset in range(len(pages), 100):
        assert refusal_code(read, {"doc_id": "d03", "offset": offset, "limit": 1}) == "budget_exhausted"
    assert ledger.totals() == spent and spent["calls"] == 10


def test_budget_exhaustion_through_run_tool_call_is_an_error_message_with_totals(index, call):
    ledger, tools = _tools(index)
    messages = [call(tools, "read_evidence", {"doc_id": "d03", "offset": i, "limit": 1}, f"r{i}") for i in range(100)]
    refused = [m for m in messages if m.status == "error"]
    assert refused, "100 tiny reads were never stopped"
    first = refused[0]
    assert first.tool_call_id == f"r{messages.index(first)}"
    payload = body(first)
    assert payload["error"] == "budget_exhausted"
    assert payload["spent"] == ledger.totals() and payload["limits"] == ledger.limits()
    assert "text" not in payload
    assert all(body(m)["error"] == "budget_exhausted" for m in refused)


def test_over_budget_page_is_refused_whole_never_silently_cut(index, d03_text):
    ledger, (_, _, read) = _tools(index, **dict(UNLIMITED, max_chars=1_300))
    first = json.loads(read.invoke({"doc_id": "d03", "offset": 0, "limit": 800}))
    assert first["text"] == d03_text[:800]
    before = ledger.totals()
    assert refusal_code(read, {"doc_id": "d03", "offset": 800, "limit": 800}) == "budget_exhausted"
    assert ledger.totals() == before
    # a smaller page that fits is still served in full
    small = json.loads(read.invoke({"doc_id": "d03", "offset": 800, "limit": 10}))
    assert small["text"] == d03_text[800:810] and small["next_offset"] == 810


def test_repeated_read_is_answered_already_read_without_text(index):
    ledger, (_, _, read) = _tools(index)
    first = read.invoke({"doc_id": "d03", "offset": 4321, "limit": 300})
    again = read.invoke({"doc_id": "d03", "offset": 4321, "limit": 300})
    out = json.loads(again)
    assert out["status"] == "already_read"
    assert "text" not in out
    assert (out["doc_id"], out["revision"], out["start"], out["end"]) == ("d03", "2026-10-27", 4321, 4339)
    assert out["covered_by"] == [[4321, 4339]]
    assert "单批上限" not in again
    assert utf8_bytes(again) < utf8_bytes(first)
    assert ledger.entries[-1].status == "already_read" and ledger.entries[-1].read is None


def test_read_covered_by_two_earlier_adjacent_reads_is_already_read(index):
    ledger, (_, _, read) = _tools(index)
    read.invoke({"doc_id": "d03", "offset": 0, "limit": 10})
    read.invoke({"doc_id": "d03", "offset": 10, "limit": 10})
    out = json.loads(read.invoke({"doc_id": "d03", "offset": 5, "limit": 10}))
    assert out["status"] == "already_read" and "text" not in out
    assert out["covered_by"] == [[0, 10], [10, 20]]


def test_read_with_a_gap_in_earlier_coverage_returns_text(index, d03_text):
    ledger, (_, _, read) = _tools(index)
    read.invoke({"doc_id": "d03", "offset": 0, "limit": 10})
    read.invoke({"doc_id": "d03", "offset": 11, "limit": 10})
    out = json.loads(read.invoke({"doc_id": "d03", "offset": 5, "limit": 10}))
    assert out["text"] == d03_text[5:15]


def test_same_range_of_another_document_is_not_already_read(index, corpus):
    ledger, (_, _, read) = _tools(index)
    read.invoke({"doc_id": "d03", "offset": 0, "limit": 10})
    out = json.loads(read.invoke({"doc_id": "d04", "offset": 0, "limit": 10}))
    assert out["text"] == corpus[4].text[:10]


def test_ledger_records_every_read_as_doc_revision_start_end(index):
    ledger, (_, _, read) = _tools(index)
    read.invoke({"doc_id": "d03", "offset": 4321})
    read.invoke({"doc_id": "d01", "offset": 0, "limit": 5})
    sha = {e.doc_id: e.sha256 for e in index}
    assert ledger.reads == [ReadRecord("d03", "2026-10-27", 4321, 4339, sha["d03"]),
                            ReadRecord("d01", "2026-10-27", 0, 5, sha["d01"])]


def test_ledger_charges_exactly_what_the_model_sees(index):
    ledger, (search, locate, read) = _tools(index)
    contents = [search.invoke({"query": "批处理上限"}), locate.invoke({"term": "单批上限"}),
                read.invoke({"doc_id": "d03", "offset": 4321})]
    assert ledger.totals() == {
        "calls": 3,
        "chars": sum(map(len, contents)),
        "bytes": sum(map(utf8_bytes, contents)),
        "tokens": sum(map(cl100k_tokens, contents)),
    }
    assert [e.tool for e in ledger.entries] == ["search_evidence", "locate_evidence", "read_evidence"]


@pytest.mark.parametrize(
    "tool_index, args, code",
    [(2, {"doc_id": "d03", "limit": 801}, "invalid_page_bounds"),
     (2, {"doc_id": "d03", "offset": -1}, "invalid_page_bounds"),
     (2, {"doc_id": "../secret"}, "unknown_doc_id"),
     (2, {"doc_id": "d03", "offset": 10**6}, "offset_exceeds_document"),
     (1, {"term": ""}, "invalid_term"),
     (0, {"query": ""}, "invalid_query")],
)
def test_refused_calls_are_not_charged_but_their_message_is_counted_as_context(index, tool_index, args, code):
    ledger, tools = _tools(index)
    tools[2].invoke({"doc_id": "d03", "offset": 0, "limit": 5})
    before, n, seen = ledger.totals(), len(ledger.entries), ledger.context()
    with pytest.raises(EvidenceError) as info:
        tools[tool_index].invoke(args)
    assert info.value.code == code
    assert ledger.totals() == before
    assert len(ledger.entries) == n + 1
    last = ledger.entries[-1]
    message = to_json(error_payload(info.value))  # exactly what the model's ToolMessage carries
    assert (last.status, last.charged, last.read) == (code, False, None)
    assert (last.chars, last.bytes) == (len(message), utf8_bytes(message))
    assert ledger.context()["bytes"] == seen["bytes"] + utf8_bytes(message)
    assert ledger.context()["refused"] == seen["refused"] + 1


def test_changed_evidence_refusal_is_not_charged(index):
    ledger, (_, _, read) = _tools(index)
    index.stored_file("d03").write_text("modified", encoding="utf-8")
    assert refusal_code(read, {"doc_id": "d03"}) == "evidence_changed"
    assert ledger.totals() == {"calls": 0, "chars": 0, "bytes": 0, "tokens": 0}


def test_schema_violations_are_recorded_but_not_charged(index):
    ledger, (_, _, read) = _tools(index)
    for bad in (True, "10", 2.5):
        assert refusal_code(read, {"doc_id": "d03", "offset": bad}) == "invalid_arguments"
    assert refusal_code(read, {"doc_id": "d03", "principal": "x"}) == "invalid_arguments"
    assert ledger.totals() == {"calls": 0, "chars": 0, "bytes": 0, "tokens": 0}
    assert [(e.tool, e.status, e.charged) for e in ledger.entries] == [
        ("read_evidence", "invalid_arguments", False)] * 4


def test_refused_calls_do_not_use_up_the_call_budget(index):
    ledger, (_, _, read) = _tools(index, **dict(UNLIMITED, max_calls=2))
    for _ in range(4):
        refusal_code(read, {"doc_id": "d03", "limit": 0})
    assert json.loads(read.invoke({"doc_id": "d03", "limit": 1}))["text"] == "批"
    assert json.loads(read.invoke({"doc_id": "d03", "offset": 1, "limit": 1}))["text"] == "处"
    assert refusal_code(read, {"doc_id": "d03", "offset": 2, "limit": 1}) == "budget_exhausted"


def test_reads_per_doc_limit_stops_a_document_but_not_others(index, corpus):
    ledger, (_, _, read) = _tools(index, **dict(UNLIMITED, max_reads_per_doc=2))
    read.invoke({"doc_id": "d03", "offset": 0, "limit": 5})
    read.invoke({"doc_id": "d03", "offset": 5, "limit": 5})
    with pytest.raises(EvidenceError) as info:
        read.invoke({"doc_id": "d03", "offset": 10, "limit": 5})
    assert info.value.code == "budget_exhausted" and info.value.details["reason"] == "reads_per_doc"
    assert json.loads(read.invoke({"doc_id": "d04", "limit": 5}))["text"] == corpus[4].text[:5]


def test_one_ledger_is_shared_by_all_three_tools(index):
    ledger, (search, locate, read) = _tools(index, **dict(UNLIMITED, max_calls=2))
    search.invoke({"query": "q"})
    locate.invoke({"term": "单批上限"})
    assert refusal_code(read, {"doc_id": "d03"}) == "budget_exhausted"
    assert refusal_code(search, {"query": "q"}) == "budget_exhausted"


def test_summary_shows_every_call_and_the_totals(index):
    ledger, (search, _, read) = _tools(index)
    search.invoke({"query": "q"})
    read.invoke({"doc_id": "d03", "offset": 4321})
    refusal_code(read, {"doc_id": "d03", "limit": 0})
    text = ledger.summary()
    lines = text.splitlines()
    assert len(lines) == 1 + 3 + 2
    t, c = ledger.totals(), ledger.context()
    assert lines[-2] == (f"charged: calls {t['calls']:,}/20, chars {t['chars']:,}/6,000, "
                         f"bytes {t['bytes']:,}/16,000, tokens {t['tokens']:,}/6,000")
    assert lines[-1] == (f"context: calls 3 (1/10 refused), chars {c['chars']:,}, bytes {c['bytes']:,}, "
                         f"tokens {c['tokens']:,}")
    assert "d03 [4321, 4339)" in text and "invalid_page_bounds" in text


def test_summary_omits_limits_that_are_unlimited():
    ledger = Ledger(Budget(**UNLIMITED))
    assert ledger.summary().splitlines()[-2] == "charged: calls 0, chars 0, bytes 0, tokens 0"
    assert ledger.summary().splitlines()[-1] == "context: calls 0 (0 refused), chars 0, bytes 0, tokens 0"


def test_as_rows_lists_every_entry(index):
    ledger, (_, _, read) = _tools(index)
    read.invoke({"doc_id": "d03", "limit": 3})
    refusal_code(read, {"doc_id": "nope"})
    rows = ledger.as_rows()
    assert [r["status"] for r in rows] == ["ok", "unknown_doc_id"]
    assert rows[0]["read"] == {"doc_id": "d03", "revision": "2026-10-27", "start": 0, "end": 3,
                               "sha256": index.entry("d03").sha256}


def test_plot_draws_cumulative_spend_and_the_budget_line(index):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ledger, (_, _, read) = _tools(index)
    _hundred_tiny_reads(read)
    from evidence_lib.course.figures import plot_ledger

    ax = plot_ledger(ledger)
    try:
        ys = ax.lines[0].get_ydata()
        assert ys[-1] == ledger.totals()["bytes"]
        assert any(list(line.get_ydata()) == [16_000, 16_000] for line in ax.lines[1:])
    finally:
        plt.close(ax.figure)


def test_reads_per_doc_refusal_says_the_document_is_spent_not_the_task(index):
    """Session 4 review: a reads_per_doc refusal said "the budget for this task is spent" while calls and
    characters remained; its message names the document now. Code and reason are unchanged."""
    ledger, (_, _, read) = _tools(index, **dict(UNLIMITED, max_reads_per_doc=1, max_calls=3))
    read.invoke({"doc_id": "d03", "offset": 0, "limit": 5})
    with pytest.raises(EvidenceError) as per_doc:
        read.invoke({"doc_id": "d03", "offset": 5, "limit": 5})
    payload = error_payload(per_doc.value)
    assert payload["error"] == "budget_exhausted" and payload["reason"] == "reads_per_doc"
    assert "this task is spent" not in payload["message"]
    assert "this document" in payload["message"] and "other documents" in payload["message"]
    read.invoke({"doc_id": "d04", "limit": 5})
    read.invoke({"doc_id": "d05", "limit": 5})
    with pytest.raises(EvidenceError) as calls:
        read.invoke({"doc_id": "d06", "limit": 5})
    assert calls.value.details["reason"] == "calls" and "the budget for this task is spent" in calls.value.message
