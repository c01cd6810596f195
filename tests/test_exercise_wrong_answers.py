"""Issue 34 (session 4 review): wrong answers the checkers accepted or diagnosed confusingly.

Each test feeds a typical wrong answer to the exercise's own check and asserts the named diagnosis; the exercise's
solution still passes. 4.3 accepted an ``is_covered`` that adds overlap lengths; 7.2 accepted ``except Exception:``;
3.2 named one of several wrong labels; 9.1's diagnoses spliced the case's name into a sentence about the learner's
line, and did not say when the learner cited a whole excerpt instead of the quote.
"""

from __future__ import annotations

import pytest

from evidence_lib import EvidenceError
from evidence_lib.course.exercises import part3, part4, part7


def _solution(exercise, **names):
    namespace: dict = dict(names)
    exec(exercise.solution_code, namespace)
    return namespace[exercise.answer_name]


def test_is_covered_that_adds_overlap_lengths_is_told_overlaps_count_once():
    def is_covered(earlier, start, end):  # the sum of overlaps: [0, 100) and [50, 150) "cover" 200 characters
        return sum(max(0, min(e, end) - max(s, start)) for s, e in earlier) >= end - start

    result = part4.q3.check(is_covered)
    assert result.status == "incorrect", result.text
    assert "is_covered([(0, 100), (50, 150)], 0, 200) should be False" in result.text
    assert "character 150 was never sent" in result.text and "counts the characters they share twice" in result.text


@pytest.mark.parametrize("earlier, start, end", [([(0, 100), (50, 150)], 0, 200), ([(0, 10), (0, 10)], 0, 15)])
def test_overlapping_reads_that_leave_a_gap_are_coverage_cases(earlier, start, end):
    assert (earlier, start, end) in part4.COVERAGE_CASES
    assert not part4._library_covered(earlier, start, end)


def test_is_covered_solution_still_passes():
    assert part4.q3.check(_solution(part4.q3)).correct


def _snapshot_for(catch: str):
    code = part7.q2.solution_code.replace(
        'except EvidenceError as error:\n        if error.code != "snapshot_expired":\n            raise',
        catch)
    assert code != part7.q2.solution_code
    namespace: dict = {"EvidenceError": EvidenceError}
    exec(code, namespace)
    return namespace["snapshot_for"]


@pytest.mark.parametrize("catch", ["except Exception:\n        pass", "except EvidenceError:\n        pass"])
def test_snapshot_for_that_catches_every_error_is_told_to_catch_snapshot_expired_only(catch):
    result = part7.q2.check(_snapshot_for(catch))
    assert result.status == "incorrect", result.text
    assert "internal_error" in result.text and "catch only the EvidenceError whose code is snapshot_expired" \
        in result.text


def test_snapshot_for_solution_still_passes():
    assert part7.q2.check(_solution(part7.q2, EvidenceError=EvidenceError)).correct


def test_several_wrong_citation_reasons_are_all_named():
    answer = {"a": "ok", "b": "text_mismatch", "c": "text_mismatch", "d": "out_of_bounds", "e": "out_of_bounds",
              "f": "unknown_doc_id", "g": "ok"}
    result = part3.q2.check(answer)
    assert result.status == "incorrect", result.text
    assert "3 of 7 are wrong" in result.text
    for label, said, says in (("b", "text_mismatch", "never_read"), ("d", "out_of_bounds", "document_changed"),
                              ("g", "ok", "never_read")):
        assert f"({label})" in result.text and f"you said {said}, but verify_citation says {says}" in result.text


def test_fix_answer_citing_the_whole_excerpt_is_told_the_excerpt_is_wider_than_the_quote():
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from evidence_lib._answers import format_answer, parse_answer
    from evidence_lib.course.exercises import part9
    from evidence_lib.profiles import excerpts

    namespace = {"parse_answer": parse_answer, "format_answer": format_answer, "excerpts": excerpts}
    exec(part9.q1.solution_code.replace(
        "lines[bad[\"line\"] - 1] = (x.doc_id, revision, start, start + len(line.quote), line.quote)",
        "lines[bad[\"line\"] - 1] = (x.doc_id, revision, x.start, x.start + len(x.text), line.quote)"), namespace)
    result = part9.q1.check(namespace["fix_answer"])
    assert result.status == "incorrect", result.text
    assert 'In case "a range the task never read", verify_citations still refuses line 1 of your fixed answer: ' \
           'text_mismatch' in result.text
    assert "the excerpt is wider than the quote" in result.text


def test_fix_answer_diagnoses_name_the_case_apart_from_the_cause():
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from evidence_lib.course.exercises import part9

    result = part9.q1.check(lambda server, task, answer: answer)
    assert 'In case "a range the task never read", verify_citations still refuses line 1 of your fixed answer: ' \
           'never_read' in result.text
    assert "refuses line 1 with a range" not in result.text
