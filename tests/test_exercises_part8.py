"""Workshop part 8 (evidence_lib.course.exercises.part8): the checkers' own inputs have the properties the exercises claim.

tests/test_exercises.py proves both checkers both ways (the solution passes, the typical wrong answers fail with
their diagnosis, copied numbers fail); this file checks what those verdicts rest on: 8.1's texts are ones where
characters, UTF-8 bytes and cl100k tokens really differ and sit exactly at the threshold, every wrong rule decides
some text wrongly; 8.2's sections are longer than a page, exactly two pages, behind a key another key starts with,
listed in the handle the model sees, and readable within the middleware's default budget. Issue 19 item 4.
"""

from __future__ import annotations

import re

import pytest

from evidence_lib._measure import cl100k_tokens
from evidence_lib._paging import MAX_PAGE_CHARS
from evidence_lib.course.exercises import exercise
from evidence_lib.course.exercises.part8 import _RULES, decision_cases, offloaded_handle, section_cases
from evidence_lib.store._offload import HANDLE_MAX_TOKENS, count_tokens_over, handle_sections, json_sections

# -- 8.1 ------------------------------------------------------------------------------------------------------------

def test_decision_cases_are_counted_with_the_real_tokenizer_and_agree_with_the_library():
    for case in decision_cases():
        assert case.tokens == cl100k_tokens(case.text), case.label
        assert case.over == (count_tokens_over(case.text, case.threshold) is None), case.label


def test_decision_cases_cover_the_edges_the_exercise_names():
    cases = decision_cases()
    assert any(c.text == "" for c in cases)
    assert any(c.tokens == c.threshold for c in cases) and any(c.tokens == c.threshold + 1 for c in cases)
    assert any(c.bytes == c.threshold for c in cases) and any(c.bytes == c.threshold + 1 for c in cases)
    cjk = [c for c in cases if re.search(r"[\u4e00-\u9fff]", c.text)]
    assert cjk and all(len({c.chars, c.bytes, c.tokens}) == 3 for c in cjk)
    assert any(c.chars <= c.threshold < c.tokens for c in cases), "characters must not bound tokens"
    assert any(c.chars > c.threshold >= c.tokens for c in cases) and any(c.bytes > c.threshold >= c.tokens
                                                                       for c in cases)
    assert {c.over for c in cases} == {True, False}
    assert max(c.bytes for c in cases) >= 200_000


@pytest.mark.parametrize("rule", list(_RULES))
def test_every_wrong_rule_decides_some_case_wrongly(rule):
    decide = _RULES[rule][0]
    assert any(decide(c) != c.over for c in decision_cases())


def test_no_two_wrong_rules_decide_every_case_alike_unless_they_say_the_same():
    cases = decision_cases()
    seen: dict[tuple[bool, ...], str] = {}
    for name, (decide, because) in _RULES.items():
        answers = tuple(decide(c) for c in cases)
        if answers in seen:  # the chars/4 variants: one diagnosis
            assert "chars/4" in because and "chars/4" in _RULES[seen[answers]][1], (name, seen[answers])
        seen.setdefault(answers, name)


def test_a_tokenizer_run_hidden_in_a_helper_is_seen():
    from evidence_lib import Size

    def helper(text):
        return Size.of(text).cl100k_tokens

    def should_offload(text, threshold_tokens):
        return helper(text) > threshold_tokens

    result = exercise("8.1").check(should_offload)
    assert result.status == "incorrect" and "you ran the tokenizer on the empty string" in result.message


# -- 8.2 ------------------------------------------------------------------------------------------------------------

def _listed(handle: str) -> dict[str, tuple[int, int]]:
    return {p: (int(s), int(e)) for p, s, e in re.findall(r"^- (\S+) .*\[(\d+), (\d+)\)$", handle, re.MULTILINE)}


def test_every_asked_section_is_listed_in_the_handle_the_model_sees():
    for case in section_cases():
        mw, handle = offloaded_handle(case.text, case.tool)
        assert cl100k_tokens(handle) <= HANDLE_MAX_TOKENS
        sections = {s.path: (s.start, s.end) for s in handle_sections(case.text)}
        assert _listed(handle) == sections
        assert case.path in sections and mw.shelf.text(mw.shelf.handles[0], mw.principal) == case.text


def test_section_cases_cover_what_the_exercise_names():
    lengths = {}
    for case in section_cases():
        s = next(s for s in json_sections(case.text) if s.path == case.path)
        lengths[case.path] = s.end - s.start
    assert any(n > 2 * MAX_PAGE_CHARS for n in lengths.values())
    assert any(n == 2 * MAX_PAGE_CHARS for n in lengths.values())
    assert any(n < MAX_PAGE_CHARS for n in lengths.values())
    assert any(re.search(r"[\u4e00-\u9fff]", c.text) for c in section_cases())
    # A key another key starts with, listed after it: a substring search finds the wrong line first.
    trap = next(c for c in section_cases() if c.path == "$.event")
    paths = [s.path for s in json_sections(trap.text)]
    assert paths.index("$.events") < paths.index("$.event")


def test_the_solution_reads_each_section_in_the_fewest_pages_within_the_default_budget():
    import json as json_module

    ns = {"re": re, "json": json_module, "MAX_PAGE_CHARS": MAX_PAGE_CHARS}
    exec(exercise("8.2").solution_code, ns)
    for case in section_cases():
        mw, handle = offloaded_handle(case.text, case.tool)
        s = next(s for s in json_sections(case.text) if s.path == case.path)
        assert ns["read_section"](list(mw.tools), handle, case.path) == case.text[s.start:s.end]
        pages = [(e.read.start, e.read.end) for e in mw.ledger.charged]
        assert pages[0][0] == s.start and pages[-1][1] == s.end
        assert all(b - a <= MAX_PAGE_CHARS for a, b in pages)
        assert len(pages) == -(-(s.end - s.start) // MAX_PAGE_CHARS) and not mw.ledger.refusals


def test_a_reader_that_never_advances_is_stopped_not_hung():
    def read_section(tools, handle, path):
        from evidence_lib._toolkit import run_tool_call, tool_call

        doc_id = re.search(r"stored as (res-[0-9a-f]+)", handle)[1]
        while True:  # ignores every reply, refusals included
            run_tool_call(tools, tool_call("read_evidence", {"doc_id": doc_id, "offset": 0, "limit": 10}, "c"))

    result = exercise("8.2").check(read_section)
    assert result.status == "incorrect" and "tool calls" in result.message and "stop at end" in result.message


def test_a_reader_that_catches_every_exception_is_still_stopped():
    def read_section(tools, handle, path):
        read = next(t for t in tools if t.name == "read_evidence")
        doc_id = re.search(r"stored as (res-[0-9a-f]+)", handle)[1]
        while True:
            try:
                read.invoke({"doc_id": doc_id, "offset": 0, "limit": 900})
            except Exception:  # noqa: BLE001 - the learner's mistake under test
                pass

    result = exercise("8.2").check(read_section)
    assert result.status == "incorrect" and "tool calls" in result.message
