"""evidence_lib.agent.checker: proven both ways, on the careful reader and on one careless reader per habit."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from evidence_lib.agent import CARELESS_READERS, FINDINGS, CarefulReader, check_history, finding_codes, parse_answer
from evidence_lib.agent.prompt import format_answer, insufficient_answer
from evidence_lib.agent.tasks import SETTINGS, pydoc_documents, pydoc_items, run_reader, run_setting


@pytest.mark.parametrize("habit", sorted(SETTINGS))
def test_careful_reader_has_no_findings_in_any_setting(tmp_path, habit):
    run = run_setting(CarefulReader, habit, tmp_path)
    assert run.result.stop_reason == "final_answer"
    assert check_history(run.messages) == []


@pytest.mark.parametrize("reader", CARELESS_READERS, ids=lambda r: r.__name__)
def test_each_careless_reader_is_flagged_with_exactly_its_own_finding(tmp_path, reader):
    run = run_setting(reader, reader.habit, tmp_path)
    assert finding_codes(check_history(run.messages)) == [reader.habit]


def test_every_finding_code_has_a_careless_reader():
    assert {r.habit for r in CARELESS_READERS} == set(FINDINGS) - {"citation_malformed"}


def test_checker_is_deterministic_and_never_shows_document_text(tmp_path):
    run = run_setting(CARELESS_READERS[2], CARELESS_READERS[2].habit, tmp_path)
    first, second = check_history(run.messages), check_history(list(run.messages))
    assert first == second
    assert all("单批上限为" not in f.detail for f in first)


PYDOC = ["break", "continue", "try", "for", "while", "with", "import", "lambda", "return", "pass"]


def test_careful_reader_passes_on_the_pydoc_corpus(tmp_path):
    docs = pydoc_documents(PYDOC)
    items = [i for i in pydoc_items() if i["doc_id"] in PYDOC]
    assert len(items) >= 5
    for n, item in enumerate(items):
        run = run_reader(CarefulReader([item["locate_term"]], before=240, limit=600), tmp_path / str(n), docs,
                         question=item["question"])
        assert run.result.stop_reason == "final_answer"
        assert parse_answer(run.result.answer).citations, item["id"]
        assert check_history(run.messages) == [], item["id"]


def _history(*tool_rounds, answer):
    """A hand-built history: (name, args, content) rounds, then the final answer."""
    msgs = [SystemMessage("s"), HumanMessage("q")]
    for k, (name, args, content) in enumerate(tool_rounds):
        msgs.append(AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"c{k}"}]))
        msgs.append(ToolMessage(content, tool_call_id=f"c{k}", name=name))
    return msgs + [AIMessage(content=answer)]


PAGE = '{"doc_id": "a", "revision": "r1", "sha256": "%s", "start": 0, "end": 10, "total_chars": 10, ' \
       '"next_offset": null, "text": "0123456789"}' % ("0" * 64)


def test_good_hand_built_history_has_no_findings():
    ok = _history(("read_evidence", {"doc_id": "a"}, PAGE), answer=format_answer("x [1]", [("a", "r1", 2, 5, "234")]))
    assert check_history(ok) == []
    assert check_history(_history(answer=insufficient_answer("nothing located"))) == []


@pytest.mark.parametrize("answer, code", [
    (format_answer("x [1]", [("a", "r1", 2, 5, "999")]), "citation_text_mismatch"),
    (format_answer("x [1]", [("a", "r1", 5, 15, None)]), "citation_never_read"),
    (format_answer("x [1]", [("a", "r0", 2, 5, "234")]), "citation_never_read"),
    ("x\n\nSources:\n[1] a@r1 (2, 5)", "citation_malformed"),
    ("the limit is 200", "answer_without_citation"),
])
def test_bad_hand_built_answers(answer, code):
    assert finding_codes(check_history(_history(("read_evidence", {"doc_id": "a"}, PAGE), answer=answer))) == [code]


def test_locating_after_reads_per_doc_is_not_a_breach():
    refused = '{"error": "budget_exhausted", "message": "m", "reason": "reads_per_doc"}'
    hist = _history(("read_evidence", {"doc_id": "a"}, PAGE), ("read_evidence", {"doc_id": "a", "offset": 5}, refused),
                    ("locate_evidence", {"term": "567"}, '[{"doc_id": "a", "offset": 5}]'),
                    answer=format_answer("x [1]", [("a", "r1", 2, 5, "234")]))
    assert check_history(hist) == []
    again = hist[:-1] + [AIMessage(content="", tool_calls=[{"name": "read_evidence", "args": {"doc_id": "a"}, "id": "z"}]),
                         ToolMessage(refused, tool_call_id="z"), hist[-1]]
    assert finding_codes(check_history(again)) == ["call_after_budget_exhausted"]


def test_answer_format_round_trips_awkward_quotes():
    quote = 'a "quoted"\nline [1, 2) ]'
    parsed = parse_answer(format_answer("p [1]", [("doc.x-1", "3.11.7", 7, 30, quote)]))
    (c,) = parsed.citations
    assert (c.doc_id, c.revision, c.start, c.end, c.quote) == ("doc.x-1", "3.11.7", 7, 30, quote)
    assert parsed.prose == "p [1]" and not parsed.problems
    assert parse_answer(None).prose == "" and parse_answer("INSUFFICIENT EVIDENCE: none").insufficient
