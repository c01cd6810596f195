"""Workshop exercise 2.3: a call that breaks two rules gets the first rule's code (issue 34 review).

The exercise used to ask for the codes of bad calls notebook 02 had already printed, so a learner could copy them.
Now every call breaks two rules, or only seems to break one, and no call is one notebook 02 makes; the checker names
the mistake: a rule checked later, a refused call called fine, a fine call called refused, a rule the call does not
break.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from evidence_lib.course.exercises import ____, part2
from evidence_lib.course.exercises.part2 import BAD_CALLS, q3

ROOT = Path(__file__).resolve().parents[1]
SOLVED = {"a": "invalid_page_bounds", "b": "unknown_doc_id", "c": "invalid_page_bounds", "d": "invalid_arguments",
          "e": "invalid_page_bounds", "f": "ok", "g": "invalid_page_bounds"}


def _with(label: str, code: str) -> dict[str, str]:
    return {**SOLVED, label: code}


def test_the_right_codes_pass():
    result = q3.check(SOLVED)
    assert result.status == "correct", result
    assert "each with the code of the first rule the call breaks" in str(result)


def test_the_solution_is_what_the_tools_answer():
    namespace = {"____": ____}
    exec(q3.solution_code, namespace)
    assert namespace["codes"] == SOLVED == part2._expected_codes()


@pytest.mark.parametrize("label, later", [(k, code) for k, (_, _, also, _) in BAD_CALLS.items() for code in also
                                          if SOLVED[k] != "ok"])
def test_naming_a_rule_checked_later_is_told_which_comes_first(label, later):
    result = q3.check(_with(label, later))
    assert result.status == "incorrect"
    assert (f"1 of 7 is wrong. {part2.describe_call(label)}: it does break the rule of {later} too, but "
            f"{SOLVED[label]} is checked first: {BAD_CALLS[label][3]}") in str(result), result


@pytest.mark.parametrize("label", [k for k in SOLVED if SOLVED[k] != "ok"])
def test_calling_a_refused_call_fine_is_told_its_code(label):
    result = q3.check(_with(label, "ok"))
    assert f"you said ok, but it is refused with {SOLVED[label]}: {BAD_CALLS[label][3]}" in str(result), result


@pytest.mark.parametrize("code", ["offset_exceeds_document", "invalid_page_bounds"])
def test_a_page_cut_at_the_end_is_not_refused(code):
    result = q3.check(_with("f", code))
    assert f"you said {code}, but it is not refused: offset 4000 is inside d03 (4,339 characters)" in str(result)


def test_a_rule_the_call_does_not_break_is_named_as_such():
    result = q3.check(_with("c", "unknown_doc_id"))
    assert ("you said unknown_doc_id, but this call does not break that rule; it is refused with invalid_page_bounds"
            in str(result)), result


def test_several_wrong_answers_are_counted_and_the_first_explained():
    result = q3.check(_with("a", "unknown_doc_id") | {"g": "ok"})
    assert str(result).startswith("Incorrect: because 2 of 7 are wrong. (a) read_evidence(doc_id='../secret'")


def _calls_notebook_02_makes() -> list[dict]:
    """Every dict literal with a doc_id or term in notebook 02's code cells (its bad calls, its reads and locates)."""
    nb = json.loads((ROOT / "notebooks" / "02_three-tool-protocol.ipynb").read_text(encoding="utf-8"))
    found = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        for node in ast.walk(ast.parse("".join(cell["source"]))):
            if isinstance(node, ast.Dict):
                try:
                    value = ast.literal_eval(node)
                except ValueError:
                    continue
                if isinstance(value, dict) and ({"doc_id", "term", "query"} & set(value)):
                    found.append(value)
    return found


def test_no_call_is_one_notebook_02_already_made():
    """The learner cannot copy a printed answer: notebook 02 shows each rule broken alone, none of these calls."""
    shown = _calls_notebook_02_makes()
    assert any(c.get("doc_id") == "../secret" for c in shown), "notebook 02's bad calls were not found"
    for label, (_, args, _, _) in BAD_CALLS.items():
        assert args not in shown, f"({label}) is a call notebook 02 already printed: {args}"


def test_every_refused_call_breaks_two_rules_or_looks_fine():
    """Each refused call but one names another rule it breaks (the order decides); the rest only look wrong or
    only look right."""
    refused_twice = [k for k, (_, _, also, _) in BAD_CALLS.items() if SOLVED[k] != "ok" and also]
    assert len(refused_twice) >= 5, refused_twice
