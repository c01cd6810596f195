"""Workshop part 9 (notebook 13's MCP server): the checker proven both ways, learntools style.

The right fix passes; each typical wrong fix gets "Incorrect" with a diagnosis naming its cause; nothing raises.
"""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'evidence-lib[mcp]')")

from evidence_lib._answers import format_answer, parse_answer
from evidence_lib.course.exercises import (
    ____,
    all_exercises,
    part9,
)
from evidence_lib.profiles import excerpts


def solution():
    ns = {"parse_answer": parse_answer, "format_answer": format_answer, "excerpts": excerpts}
    exec(part9.q1.solution_code, ns)
    return ns["fix_answer"]


def refused(server, task, answer):
    report = server.call_json("verify_citations", {"task": task, "answer": answer})
    return next(row for row in report["checks"] if row["reason"] != "ok")


def test_each_case_has_exactly_one_refused_line_on_the_line_it_names() -> None:
    reasons = {"a range the task never read": "never_read", "a quote that is not the text at its range": "text_mismatch",
               "a range past the document's end": "out_of_bounds", "a doc_id the server does not know": "unknown_doc_id"}
    for case in part9._cases():
        report = case.server.call_json("verify_citations", {"task": case.task, "answer": case.answer})
        bad = [row for row in report["checks"] if row["reason"] != "ok"]
        assert [(row["line"], row["reason"]) for row in bad] == [(case.bad_line, reasons[case.name])]


def test_the_solution_passes() -> None:
    result = part9.q1.check(solution())
    assert result.correct, result.text


def test_part9_is_registered_in_the_workshop() -> None:
    assert all_exercises()["9.1"] is part9.q1


def test_not_attempted_for_the_blank_and_the_stub() -> None:
    assert part9.q1.check(____).status == "not_attempted"
    assert part9.q1.check(lambda server, task, answer: ____).status == "not_attempted"


def dropped(server, task, answer):
    bad = refused(server, task, answer)
    parsed = parse_answer(answer)
    keep = [(c.doc_id, c.revision, c.start, c.end, c.quote) for n, c in enumerate(parsed.lines, 1) if n != bad["line"]]
    return format_answer(parsed.prose, keep)


def bent_quote(server, task, answer):
    """Keeps the refused range and writes whatever quote it likes there."""
    bad = refused(server, task, answer)
    parsed = parse_answer(answer)
    lines = [(c.doc_id, c.revision, c.start, c.end, c.quote) for c in parsed.lines]
    lines[bad["line"] - 1] = (*lines[bad["line"] - 1][:4], "something else")
    return format_answer(parsed.prose, lines)


def own_task(server, task, answer):
    """The right steps, in a task of its own: its reads do not count for the answer's task."""
    return solution()(server, server.call_json("start_task")["task"], answer)


def no_revision_fallback(server, task, answer):
    """Takes the revision from the excerpt only (a compact reply shows it once per task)."""
    code = part9.q1.solution_code.replace("x.revision or line.revision", "x.revision")
    ns = {"parse_answer": parse_answer, "format_answer": format_answer, "excerpts": excerpts}
    exec(code, ns)
    return ns["fix_answer"](server, task, answer)


def first_line_always(server, task, answer):
    """Re-locates line 1 whatever the report says."""
    parsed = parse_answer(answer)
    line = parsed.lines[0]
    reply, _ = server.call("locate_evidence", {"task": task, "term": line.quote, "doc_id": line.doc_id})
    x = next(x for x in excerpts([reply]) if line.quote in x.text)
    start = x.start + x.text.index(line.quote)
    lines = [(c.doc_id, c.revision, c.start, c.end, c.quote) for c in parsed.lines]
    lines[0] = (x.doc_id, line.revision, start, start + len(line.quote), line.quote)
    return format_answer(parsed.prose, lines)


def raises(server, task, answer):
    raise KeyError("checks")


@pytest.mark.parametrize(("wrong", "says"), [
    (lambda server, task, answer: answer, ['In case "a range the task never read"', "still refuses line 1", "never_read"]),
    (dropped, ["2 Sources lines, the original 3", "do not drop"]),
    (bent_quote, ["quote in your answer is 'something else'", "keep it and move the range"]),
    (own_task, ["never_read", "started a task of its own"]),
    (no_revision_fallback, ["does not follow the citation format", "keep the line's"]),
    (first_line_always, ["still refuses line 2", "text_mismatch", "move the range to the text"]),
    (lambda server, task, answer: None, ["should return the answer text", "None"]),
    (raises, ["your code raised KeyError"]),
], ids=["unchanged", "dropped", "bent_quote", "own_task", "no_revision_fallback", "first_line_always", "none",
        "raises"])
def test_wrong_fixes_get_a_diagnosis_naming_the_cause(wrong, says) -> None:
    result = part9.q1.check(wrong)
    assert result.status == "incorrect", result.text
    for words in says:
        assert words in result.text, result.text


def test_hints_never_give_the_code_before_the_last_rung() -> None:
    assert len(part9.q1.hints) >= 2
    assert all("def fix_answer" not in h for h in part9.q1.hints)
    assert "def fix_answer" in part9.q1.solution().code
