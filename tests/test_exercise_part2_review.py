"""Workshop part 2, review notes: each wrong answer is refused, and told where and why.

2.1 an off-by-one next_offset is told the offset and the characters left; a read_page that delegates to the
library's page arithmetic is not pointed at a private module; 2.2 a read_all that strips each page fails on a document
with whitespace at its page edges; 2.3 names every wrong label; 2.4 enforces the rounding it asks for.
"""

from __future__ import annotations

import json

from evidence_lib import Size, _paging, utf8_bytes
from evidence_lib._measure import reduction_percent
from evidence_lib.course.exercises import part2


def _solution(exercise, *replacements: tuple[str, str]) -> dict:
    code = exercise.solution_code
    for old, new in replacements:
        assert old in code
        code = code.replace(old, new)
    namespace: dict = {"json": json, "Size": Size, "reduction_percent": reduction_percent, "utf8_bytes": utf8_bytes}
    exec(code.split("\nmessages = ")[0], namespace)
    return namespace


def test_read_page_off_by_one_next_offset_names_the_offset_and_what_remains():
    read_page = _solution(part2.q1, ("end < len(text)", "end < len(text) - 1"))["read_page"]
    result = part2.q1.check(read_page)
    assert not result.correct
    assert "next_offset was None at offset" in result.text
    assert "1 character remains" in result.text


def test_read_page_next_offset_at_the_end_names_the_offset():
    read_page = _solution(part2.q1, ("end < len(text)", "end <= len(text)"))["read_page"]
    result = part2.q1.check(read_page)
    assert not result.correct
    assert "nothing remains" in result.text and "at offset" in result.text


def test_read_page_delegating_to_paging_is_not_told_a_private_module():
    def read_page(text, offset, limit):
        p = _paging.page(len(text), offset, limit, 800)
        return {"start": p.start, "end": p.end, "next_offset": p.next_offset, "text": text[p.start:p.end]}

    result = part2.q1.check(read_page)
    assert not result.correct
    assert "page arithmetic" in result.text
    assert "_paging" not in result.text
    assert "_paging" not in part2.q1.ask


def test_read_all_that_strips_each_page_is_refused_and_told_why():
    read_all = _solution(part2.q2, ('parts.append(page["text"])', 'parts.append(page["text"].strip())'))["read_all"]
    result = part2.q2.check(read_all)
    assert not result.correct
    assert "stripping a page drops characters at its edge" in result.text


def test_read_all_solution_still_passes():
    assert part2.q2.check(_solution(part2.q2)["read_all"]).correct


def test_codes_with_several_wrong_labels_lists_each_of_them():
    answer = dict(_codes_solution())
    answer["a"], answer["c"], answer["f"] = "unknown_doc_id", "offset_exceeds_document", "invalid_page_bounds"
    result = part2.q3.check(answer)
    assert not result.correct
    assert "3 of 7 are wrong" in result.text
    for label in ("(a)", "(c)", "(f)"):
        assert label in result.text


def _codes_solution() -> dict:
    namespace: dict = {}
    exec(part2.q3.solution_code, namespace)
    return namespace["codes"]


def test_reduction_not_rounded_is_told_to_round():
    ns = _solution(part2.q4, ("reduction_percent(before, after, 1)", "100 * (1 - after / before)"))
    result = part2.q4.check(ns["reduction"])
    assert not result.correct
    assert "one decimal" in result.text


def test_reduction_solution_still_passes_and_asks_for_every_tool_result():
    assert part2.q4.check(_solution(part2.q4)["reduction"]).correct
    assert "tool result" in part2.q4.hints[0]
