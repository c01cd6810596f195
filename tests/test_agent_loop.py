"""evidence_lib.integrations.langchain._loop: the protocol in a real message loop; it survives any model output."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from evidence_lib import Budget, EvidenceIndex, Ledger, evidence_tools
from evidence_lib._answers import parse_answer
from evidence_lib.audit._checker import check_history
from evidence_lib.audit._history import steps
from evidence_lib.course.article import ANSWER, article_corpus
from evidence_lib.course.readers import CarefulReader, PolicyChatModel, ScriptedChatModel
from evidence_lib.course.tasks import ARTICLE_TERMS, moved_corpus, run_reader
from evidence_lib.integrations.langchain._loop import LoopRules, run_loop


def _tools(tmp_path, budget=None, docs=None):
    index = EvidenceIndex.build(docs or article_corpus(), tmp_path)
    return evidence_tools(index, ledger=Ledger(budget or Budget()))


def _every_call_answered_once(messages):
    ids = [s.call_id for s in steps(messages)]
    answered = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert all(ids) and len(set(ids)) == len(ids), "every call has a unique id"
    assert sorted(answered) == sorted(ids), "exactly one ToolMessage per call"


def test_careful_reader_searches_locates_reads_and_cites(tmp_path):
    run = run_reader(CarefulReader(ARTICLE_TERMS), tmp_path)
    names = [s.name for s in steps(run.messages)]
    assert names == ["search_evidence", "locate_evidence", "read_evidence"]
    assert run.result.stop_reason == "final_answer" and run.result.turns == 4
    (cite,) = parse_answer(run.result.answer).citations
    assert (cite.doc_id, cite.start, cite.end, cite.quote) == ("d03", 4321, 4339, ANSWER)
    assert run.ledger.totals()["bytes"] == 3920  # the article's number, now from a loop


def test_a_changed_corpus_changes_the_calls(tmp_path):
    moved = run_reader(CarefulReader(ARTICLE_TERMS), tmp_path / "moved", moved_corpus("d07"))
    reads = [s.args["doc_id"] for s in steps(moved.messages) if s.name == "read_evidence"]
    assert reads == ["d07"] and parse_answer(moved.result.answer).citations[0].doc_id == "d07"
    gone = [d for d in moved_corpus("d07") if d.doc_id != "d07"]
    none = run_reader(CarefulReader(ARTICLE_TERMS), tmp_path / "none", gone)
    assert [s.name for s in steps(none.messages)] == ["search_evidence", "locate_evidence"]
    assert parse_answer(none.result.answer).insufficient and check_history(none.messages) == []


BAD_OUTPUTS = [
    AIMessage(content="", tool_calls=[{"name": "delete_everything", "args": {}, "id": "u1"}]),
    AIMessage(content="", invalid_tool_calls=[{"name": "read_evidence", "args": "{not json", "id": "j1",
                                               "error": "bad json"}]),
    AIMessage(content="", invalid_tool_calls=[{"name": None, "args": None, "id": None, "error": "garbage"}]),
    AIMessage(content="", tool_calls=[{"name": "search_evidence", "args": {"query": "q"}, "id": None},
                                      {"name": "search_evidence", "args": {"query": "q"}, "id": "u1"},
                                      {"name": "search_evidence", "args": {"query": "q"}, "id": "d1"},
                                      {"name": "search_evidence", "args": {"query": "q"}, "id": "d1"}]),
    AIMessage(content="", tool_calls=[{"name": "read_evidence", "args": {"doc_id": "d03", "offset": i, "limit": 1},
                                       "id": f"h{i:03}"} for i in range(100)]),
    AIMessage(content="", tool_calls=[{"name": "read_evidence", "args": {"doc_id": "../etc/passwd", "limit": 10**40},
                                       "id": "x1"}]),
]


@pytest.mark.parametrize("ending, reason", [
    (AIMessage(content=[{"type": "image_url", "image_url": {"url": "data:,"}}]), "empty_response"),
    (AIMessage(content=""), "empty_response"),
    (AIMessage(content="done"), "final_answer"),
])
def test_loop_survives_every_bad_model_output(tmp_path, ending, reason):
    model = ScriptedChatModel(responses=[*BAD_OUTPUTS, ending])
    result = run_loop(model, _tools(tmp_path, Budget(max_refusals=None, max_calls=None)), "q",
                      rules=LoopRules(max_idle_rounds=100))
    assert result.stop_reason == reason and result.turns == len(BAD_OUTPUTS) + 1
    _every_call_answered_once(result.messages)
    by_id = {m.tool_call_id: m for m in result.tool_messages}
    assert json.loads(by_id["u1"].content)["error"] == "unknown_tool"
    assert json.loads(by_id["j1"].content)["error"] == "invalid_arguments"
    assert json.loads(by_id["x1"].content)["error"] in ("unknown_doc_id", "invalid_page_bounds")
    hundred = [by_id[f"h{i:03}"] for i in range(100)]
    assert [json.loads(m.content).get("reason") for m in hundred[16:]] == ["calls_per_message"] * 84
    assert any("duplicate id" in r for r in result.repairs) and any("missing id" in r for r in result.repairs)


def test_a_failing_model_ends_the_task_without_raising(tmp_path):
    class Broken(PolicyChatModel):
        def _generate(self, *a, **k):
            raise RuntimeError("provider down")

    result = run_loop(Broken(reader=None), _tools(tmp_path), "q")
    assert result.stop_reason == "model_error" and result.answer is None


def test_budget_exhausted_gives_one_answer_turn(tmp_path):
    run = run_reader(CarefulReader(ARTICLE_TERMS), tmp_path, budget=Budget(max_calls=2))
    assert run.result.stop_reason == "final_answer" and parse_answer(run.result.answer).insufficient
    assert check_history(run.messages) == []


def test_refusal_cap_and_idle_rounds_stop_the_loop(tmp_path):
    looping = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[
        {"name": "read_evidence", "args": {"doc_id": "nope"}, "id": f"r{t}-{i}"} for i in range(4)]) for t in range(9)])
    result = run_loop(looping, _tools(tmp_path / "a", Budget(max_refusals=6)), "q", rules=LoopRules(max_idle_rounds=99))
    assert result.stop_reason == "refusal_cap"
    _every_call_answered_once(result.messages)
    idle = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[
        {"name": "locate_evidence", "args": {"term": "不存在"}, "id": "l"}])])
    result = run_loop(idle, _tools(tmp_path / "b"), "q", rules=LoopRules(max_idle_rounds=2))
    assert result.stop_reason == "no_new_evidence" and result.turns == 3


def test_max_turns(tmp_path):
    model = ScriptedChatModel(responses=[AIMessage(content="", tool_calls=[
        {"name": "search_evidence", "args": {"query": "q"}, "id": "s"}])])
    result = run_loop(model, _tools(tmp_path), "q", rules=LoopRules(max_turns=3, max_idle_rounds=99))
    assert result.stop_reason == "max_turns" and result.turns == 3


def test_parallel_calls_give_the_same_messages_in_call_order(tmp_path):
    waited = []
    calls = [{"name": "read_evidence", "args": {"doc_id": f"d{i:02}", "offset": 4000, "limit": 50}, "id": f"p{i}"}
             for i in range(8)]

    def script():
        return ScriptedChatModel(responses=[AIMessage(content="", tool_calls=calls), AIMessage(content="ok")])

    par = run_loop(script(), _tools(tmp_path / "par"), "q", latency=lambda call: waited.append(call["id"]))
    seq = run_loop(script(), _tools(tmp_path / "seq"), "q", parallel=False)
    assert [m.tool_call_id for m in par.tool_messages] == [c["id"] for c in calls]
    assert [m.content for m in par.tool_messages] == [m.content for m in seq.tool_messages]
    assert sorted(waited) == sorted(c["id"] for c in calls)  # the latency hook saw every call


def test_core_modules_never_import_the_integrations_or_the_course():
    import ast
    from pathlib import Path

    import evidence_lib

    for path in sorted(Path(evidence_lib.__file__).parent.glob("*.py")):  # module level only: the CLI loads it lazily
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith(("agent", "integrations", "course", "evidence_lib.agent",
                                                          "evidence_lib.integrations", "evidence_lib.course")), path.name


def test_importing_the_loop_and_the_audit_does_not_load_langchain():
    import subprocess
    import sys

    code = ("import sys, evidence_lib.integrations.langchain._loop, evidence_lib.audit._report\n"
            "import evidence_lib.course.readers\nprint('langchain' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr
