"""evidence_lib.audit._checker: proven both ways, on the careful reader and on one careless reader per habit."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from evidence_lib._answers import format_answer, insufficient_answer, parse_answer
from evidence_lib.audit._checker import FINDINGS, check_history, finding_codes
from evidence_lib.audit._history import steps
from evidence_lib.course.article import ANSWER
from evidence_lib.course.readers import CARELESS_READERS, CarefulReader
from evidence_lib.course.tasks import TASK_SETTINGS, pydoc_documents, pydoc_items, run_reader, run_setting


@pytest.mark.parametrize("habit", sorted(TASK_SETTINGS))
def test_careful_reader_has_no_findings_in_any_setting(tmp_path, habit):
    run = run_setting(CarefulReader, habit, tmp_path)
    assert run.result.stop_reason == "final_answer"
    assert check_history(run.messages) == []


@pytest.mark.parametrize("reader", CARELESS_READERS, ids=lambda r: r.__name__)
def test_each_careless_reader_is_flagged_with_exactly_its_own_finding(tmp_path, reader):
    run = run_setting(reader, reader.habit, tmp_path)
    assert finding_codes(check_history(run.messages)) == [reader.habit]


def test_every_finding_code_has_a_careless_reader():
    # the two findings about the Sources line's form itself are proven by hand-built histories below
    assert {r.habit for r in CARELESS_READERS} == set(FINDINGS) - {"citation_malformed", "citation_empty_range"}


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
    (format_answer("x [1]", [("a", "r1", 3, 3, "")]), "citation_empty_range"),
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


# -- the compact profile: the same checker over compact replies -------------------------------------------------
#: Habits the compact profile leaves no occasion for, and why (a locate excerpt is cited text the model was shown).
NO_OCCASION_IN_COMPACT = {
    "citation_never_read": "the located position it cites lies inside the locate excerpt, which counts as read",
    "duplicate_read": "the excerpt already covers the hit, so there is no read to repeat",
    "preview_as_evidence": "the compact manifest has no preview",
    "instruction_from_evidence": "the excerpt ends with the answer sentence, before the planted note",
    "call_after_budget_exhausted": "search and locate suffice, so two calls never run out",
}
# (citation_stale has an occasion since compact profile v2, issue 17: the manifest shows each revision again, so a
# citation of the earlier revision is stale from the history alone.)


@pytest.mark.parametrize("reader", [CarefulReader, *CARELESS_READERS], ids=lambda r: r.__name__)
def test_compact_histories_earn_exactly_their_own_finding_where_the_habit_can_show(tmp_path, reader):
    if reader is CarefulReader:
        for habit in sorted(TASK_SETTINGS):
            run = run_setting(CarefulReader, habit, tmp_path / habit, profile="compact")
            assert run.result.stop_reason == "final_answer" and check_history(run.messages) == [], habit
        return
    run = run_setting(reader, reader.habit, tmp_path, profile="compact")
    expected = [] if reader.habit in NO_OCCASION_IN_COMPACT else [reader.habit]
    assert finding_codes(check_history(run.messages)) == expected


def _compact_history(tmp_path, calls, answer):
    """Real compact replies for ``calls`` (name, args), in one session, then ``answer``."""
    from evidence_lib import EvidenceIndex, Ledger, evidence_tools, run_tool_call
    from evidence_lib.course.article import article_corpus

    tools = evidence_tools(EvidenceIndex.build(article_corpus(), tmp_path), ledger=Ledger(), profile="compact")
    rounds = []
    for k, (name, args) in enumerate(calls):
        rounds.append((name, args, run_tool_call(tools, {"name": name, "args": args, "id": f"c{k}"}).content))
    return _history(*rounds, answer=answer), rounds


SENTENCE = ("d03", "2026-10-27", 4321, 4339, ANSWER)


def test_compact_excerpts_are_read_text_and_carry_the_revision_of_the_manifest(tmp_path):
    calls = [("search_evidence", {"query": "q"}), ("locate_evidence", {"term": "单批上限"}),
             ("read_evidence", {"doc_id": "d03", "offset": 4200, "limit": 139})]
    hist, rounds = _compact_history(tmp_path, calls, format_answer(f"{ANSWER} [1]", [SENTENCE]))
    assert rounds[2][2].splitlines()[0].startswith("d03 #"), "the read shows d03's content handle, not its hash"
    assert "revision 2026-10-27" in rounds[0][2].splitlines()[0]  # the revision comes once, with the manifest
    # the excerpt is cited; the later read (same handle) must not look like another snapshot (citation_stale)
    assert check_history(hist) == []
    page = [s for s in steps(hist) if s.kind == "page"][0].body
    loc = [s for s in steps(hist) if s.kind == "locate"][0]
    assert page["sha256"] == loc.pages()[0]["sha256"] and page["sha256"].startswith("#")
    assert page["revision"] == loc.pages()[0]["revision"] == "2026-10-27"
    handle = page["sha256"]
    with_handle = ("d03", "2026-10-27", 4321, 4339, ANSWER, handle)  # the model may add the handle
    assert check_history(hist[:-1] + [AIMessage(content=format_answer(f"{ANSWER} [1]", [with_handle]))]) == []
    wrong = ("d03", "2026-10-27", 4321, 4339, ANSWER, "#000000")
    assert finding_codes(check_history(hist[:-1] + [AIMessage(content=format_answer("x [1]", [wrong]))])) \
        == ["citation_never_read"]
    assert loc.hits() == [{"doc_id": "d03", "offset": 4321}]
    bad = {"citation_text_mismatch": ("d03", "2026-10-27", 4321, 4339, ANSWER.replace("200", "201")),
           "citation_never_read": ("d03", "2026-10-27", 100, 120, None)}
    for code, cite in bad.items():
        assert finding_codes(check_history(hist[:-1] + [AIMessage(content=format_answer("x [1]", [cite]))])) == [code]


def test_a_compact_read_inside_an_excerpt_is_a_duplicate_read(tmp_path):
    calls = [("search_evidence", {"query": "q"}), ("locate_evidence", {"term": "单批上限"}),
             ("read_evidence", {"doc_id": "d03", "offset": 4321, "limit": 18})]
    hist, rounds = _compact_history(tmp_path, calls, format_answer(f"{ANSWER} [1]", [SENTENCE]))
    assert '"already_read"' in rounds[2][2]  # the ledger counts the excerpt as read, and so does the checker
    assert finding_codes(check_history(hist)) == ["duplicate_read"]
