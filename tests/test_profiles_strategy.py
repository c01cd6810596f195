"""Issue 24: profiles as strategy objects. A profile is one module under ``evidence_lib/profiles/``; nothing else
branches on a profile's name, every reply of both built-in profiles stays byte-identical to the replies recorded
before the change (``tests/data/profile_replies.json``), and a third profile defined here works end to end.

Regenerate the fixture (only on purpose: it pins the bytes the model sees) with
``python tests/test_profiles_strategy.py --record``.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

from langchain_core.documents import Document as LCDocument

from evidence_lib import Document, EvidenceIndex, Ledger, evidence_tools
from evidence_lib._access import Access, Principal
from evidence_lib._ledger import Budget
from evidence_lib._toolkit import run_tool_call, tool_call
from evidence_lib.course.article import article_corpus
from evidence_lib.profiles import CompactProfile
from evidence_lib.retrieval import BM25Retriever

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "profile_replies.json"
PROFILE_NAMES = ("article", "compact")
#: Every registered profile: the two above and the middleware's (``offloaded``, the compact format over stored results).
REGISTERED = (*PROFILE_NAMES, "offloaded")
ALICE = Principal("acme", "alice")

#: One fixed script per source: (tool, arguments). Every call runs through both profiles, refusals included.
ARTICLE_SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("search_evidence", {"query": "批处理上限"}),
    ("search_evidence", {"query": "批处理上限", "cursor": 1}),
    ("locate_evidence", {"term": "单批上限"}),
    ("locate_evidence", {"term": "超时"}),
    ("locate_evidence", {"term": "单批上限", "doc_id": "d03"}),
    ("locate_evidence", {"term": "没有这个词"}),
    ("locate_evidence", {"term": ""}),
    ("read_evidence", {"doc_id": "d03", "offset": 4300, "limit": 60}),
    ("read_evidence", {"doc_id": "d03", "offset": 4300, "limit": 60}),
    ("read_evidence", {"doc_id": "d03", "offset": 0, "limit": 120}),
    ("read_evidence", {"doc_id": "d03", "offset": 120, "limit": 120}),
    ("read_evidence", {"doc_id": "d03", "offset": 240, "limit": 120}),
    ("read_evidence", {"doc_id": "d05", "offset": 0, "limit": 50}),
    ("read_evidence", {"doc_id": "nope"}),
    ("read_evidence", {"doc_id": "d05", "offset": 999999}),
    ("read_evidence", {"doc_id": "d05", "limit": 0}),
    ("search_evidence", {"query": "x" * 300}),
    ("read_evidence", {"doc_id": "d07", "offset": 10, "limit": 30}),
    ("read_evidence", {"doc_id": "d08", "offset": 10, "limit": 30}),
    ("locate_evidence", {"term": "超时"}),
]
RETRIEVER_SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("search_evidence", {"query": "batch limit timeout"}),
    ("search_evidence", {"query": "batch limit timeout", "cursor": 2}),
    ("search_evidence", {"query": "batch limit timeout", "cursor": 4}),
    ("locate_evidence", {"term": "limit"}),
    ("locate_evidence", {"term": "limit", "cursor": 1}),
    ("locate_evidence", {"term": "batch limit"}),
    ("locate_evidence", {"term": "limit", "doc_id": "b"}),
    ("locate_evidence", {"term": "limit", "doc_id": "b", "cursor": 1}),
    ("locate_evidence", {"term": "limit", "doc_id": "hidden"}),
    ("read_evidence", {"doc_id": "b", "offset": 0, "limit": 80}),
    ("read_evidence", {"doc_id": "b", "offset": 80, "limit": 80}),
    ("read_evidence", {"doc_id": "listed"}),
    ("search_evidence", {"query": "other words"}),
    ("locate_evidence", {"term": "limit"}),
    ("read_evidence", {"doc_id": "a", "offset": 0, "limit": 40}),
]


def _retriever() -> BM25Retriever:
    """Six documents: one wrapped across lines, one the principal may discover but not read, one hidden."""
    texts = {
        "a": "The batch limit is 200 rows. The timeout is 30 seconds. Other words here.",
        "b": "Intro. " + "A limit applies. " * 12 + "The batch limit for payments is 500 rows; the timeout is 9 s.",
        "c": "Notes on the batch\n        limit: see the payment runbook. The timeout is set per job.",
        "d": "Limit of nothing. Batch jobs run nightly with a timeout.",
    }
    docs = [LCDocument(page_content=t, metadata={"doc_id": d, "title": f"Title {d.upper()}", "revision": "r1"})
            for d, t in texts.items()]
    docs.append(LCDocument(page_content="batch limit timeout listed only", metadata={
        "doc_id": "listed", "title": "@Listed", "revision": "r2",
        "access": Access("acme", read=frozenset({"user:bob"}), discover=frozenset({"*"}))}))
    docs.append(LCDocument(page_content="batch limit timeout secret", metadata={
        "doc_id": "hidden", "access": Access("globex")}))
    return BM25Retriever(documents=docs, k=6)


def _replies(tools: list, script: list[tuple[str, dict[str, Any]]]) -> list[dict[str, str]]:
    out = []
    for i, (name, args) in enumerate(script):
        msg = run_tool_call(tools, tool_call(name, args, f"call-{i}"))
        out.append({"tool": name, "status": msg.status, "content": msg.content})
    return out


def _described(tools: list) -> list[dict[str, Any]]:
    return [{"name": t.name, "description": t.description, "args": t.args_schema.model_json_schema()} for t in tools]


def run_script(profile: Any) -> dict[str, Any]:
    """Every reply (and every tool description) of the fixed scripts through ``profile``."""
    article = evidence_tools(EvidenceIndex.in_memory(article_corpus()), ledger=Ledger(Budget(
        max_calls=10, max_reads_per_doc=3, max_refusals=None)), profile=profile)
    retriever = evidence_tools(_retriever(), ALICE, ledger=Ledger(Budget(max_calls=None, max_refusals=None)),
                               manifest_limit=2, profile=profile)
    revised = [Document("x", "X", "v1", "the limit is 5 rows."), Document("y", "Y", "v2", "the limit is 9 rows."),
               Document("z", "Z", "v2", "no numbers here.")]
    small = evidence_tools(EvidenceIndex.in_memory(revised), profile=profile)
    return {
        "article": _replies(article, ARTICLE_SCRIPT),
        "retriever": _replies(retriever, RETRIEVER_SCRIPT),
        "revisions": _replies(small, [("search_evidence", {"query": "limit"}), ("locate_evidence", {"term": "limit"}),
                                      ("read_evidence", {"doc_id": "z"}), ("read_evidence", {"doc_id": "y"})]),
        "descriptions": {"fixed": _described(article), "retriever": _described(retriever)},
    }


def _system_prompts() -> dict[str, str]:
    from evidence_lib.profiles import profile_of

    return {name: profile_of(name).system_prompt for name in PROFILE_NAMES}


def record() -> None:
    """Write the fixture from the code as it is now."""
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    data = {"profiles": {name: run_script(name) for name in PROFILE_NAMES}, "system_prompts": _system_prompts()}
    FIXTURE.write_text(json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")


# -- byte-identical replies ----------------------------------------------------------------------------------------

def test_every_reply_of_both_profiles_is_byte_identical_to_the_recorded_one():
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))
    for name in PROFILE_NAMES:
        assert json.loads(json.dumps(run_script(name), ensure_ascii=False)) == recorded["profiles"][name], name
    assert _system_prompts() == recorded["system_prompts"]


def test_the_script_covers_cursors_refusals_already_read_and_budget_refusals():
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))["profiles"]
    for name in PROFILE_NAMES:
        replies = [r for part in ("article", "retriever", "revisions") for r in recorded[name][part]]
        text = "\n".join(r["content"] for r in replies)
        for expected in ("already_read", "budget_exhausted", "offset_exceeds_document", "unknown_doc_id", "cursor"):
            assert expected in text, (name, expected)
    assert any('"reason": "reads_per_doc"' in r["content"] for r in recorded["article"]["article"])
    assert recorded["compact"] != recorded["article"]


def test_a_profile_object_gives_the_same_replies_as_its_name():
    from evidence_lib.profiles import profile_of

    for name in PROFILE_NAMES:
        assert run_script(profile_of(name)) == run_script(name), name


def test_an_unknown_profile_name_is_refused_as_before():
    import pytest

    with pytest.raises(ValueError, match=r"profile is one of \('article', 'compact', 'offloaded'\)"):
        evidence_tools(EvidenceIndex.in_memory(article_corpus()), profile="verbose")


def test_an_excerpt_is_a_span_built_and_read_as_before():
    from evidence_lib import Excerpt
    from evidence_lib._spans import Span
    from evidence_lib.profiles import excerpts

    x = Excerpt("d03", "r", 4321, 4339, "#145412", "单批上限为200条，超时设为30秒。")
    assert isinstance(x, Span) and x.text.startswith("单批") and x.length == 18 and str(x) == "d03@r [4321, 4339)"
    assert x.citation().quote == x.text
    # a reply naming an impossible range shows no excerpt (a Span cannot hold one), where it used to make one
    assert excerpts(['locate: 1 match\nd03 #145412\n[9,3) "x"']) == []


# -- no branches on a profile's name outside evidence_lib/profiles/ --------------------------------------------------

def _name_comparisons(path: Path) -> list[str]:
    """``== "compact"``-like comparisons in ``path`` (either side; ``in`` against a literal tuple/set/list too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for op, (a, b) in zip(node.ops, zip(operands, operands[1:])):
            if not isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.In, ast.NotIn)):
                continue
            values = [v for side in (a, b) for v in _constants(side)]
            if any(v in PROFILE_NAMES for v in values):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def _constants(node: ast.AST) -> list[object]:
    if isinstance(node, ast.Constant):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant)]
    return []


#: Comparisons with the same words that are not about a profile: the CLI's ``article`` subcommand.
NOT_A_PROFILE = {"evidence_lib/__main__.py": 'args.command == "article"'}


def test_nothing_outside_the_profiles_package_compares_with_a_profile_name():
    package = ROOT / "evidence_lib"
    outside = [p for p in sorted(package.rglob("*.py")) if "profiles" not in p.relative_to(package).parts]
    hits = [hit for p in outside for hit in _name_comparisons(p)]
    allowed = [h for h in hits if NOT_A_PROFILE.get(h.split(":")[0], "\0") in _line(h)]
    assert outside and [h for h in hits if h not in allowed] == []
    assert len(allowed) == len(NOT_A_PROFILE)  # each exception still exists, once


def _line(hit: str) -> str:
    path, number = hit.split(":")
    return (ROOT / path).read_text(encoding="utf-8").splitlines()[int(number) - 1]


def test_the_name_comparison_check_finds_one_when_there_is_one(tmp_path):
    sample = ROOT / "tests" / "data" / "_branch_sample.py"
    sample.write_text('def f(profile):\n    return profile == "compact"\n', encoding="utf-8")
    try:
        assert _name_comparisons(sample) == ["tests/data/_branch_sample.py:2"]
    finally:
        sample.unlink()


# -- a third profile, defined here, end to end -----------------------------------------------------------------------

class BracketProfile(CompactProfile):
    """The compact replies with a different locate header and page header: one class, no other module touched."""

    name = "bracket"

    def render_locate(self, found: Any) -> str:
        return "[locate] " + super().render_locate(found)

    def page(self, session: Any, entry: Any, body: Any) -> str:
        return "[page] " + super().page(session, entry, body)

    def search_description(self, fixed: bool) -> str:
        return "List the candidates (bracket profile)."


def test_a_third_profile_defined_in_a_test_module_works_end_to_end_through_evidence_tools():
    index = EvidenceIndex.in_memory(article_corpus())
    ledger = Ledger()
    bracket = BracketProfile()
    tools = evidence_tools(index, ledger=ledger, profile=bracket)
    assert tools[0].description == "List the candidates (bracket profile)."
    compact = run_script("compact")["article"]
    ours = _replies(evidence_tools(index, ledger=Ledger(Budget(max_calls=10, max_reads_per_doc=3, max_refusals=None)),
                                   profile=bracket), ARTICLE_SCRIPT)
    assert len(ours) == len(compact)
    for theirs, mine in zip(compact, ours):
        if theirs["status"] == "error":  # the same refusal (what was spent differs by the headers' bytes)
            assert json.loads(mine["content"])["error"] == json.loads(theirs["content"])["error"]
            continue
        head = mine["content"].split(" ", 1)[0]
        expected = {"[locate]": "[locate] ", "[page]": "[page] "}.get(head, "")
        assert mine["content"] == expected + theirs["content"], (theirs, mine)
    assert any(m["content"].startswith("[locate] locate: 1 match") for m in ours)
    assert any(m["content"].startswith("[page] d03 #145412 [4300,4339)") for m in ours)
    replies = [run_tool_call(tools, tool_call("search_evidence", {"query": "批处理上限"}, "s")),
               run_tool_call(tools, tool_call("read_evidence", {"doc_id": "d03", "offset": 4321, "limit": 18}, "r"))]
    assert ledger.totals()["calls"] == 2 and "[page]" in replies[1].content


def test_a_registered_profile_is_known_by_its_name():
    from evidence_lib.profiles import PROFILES, profile_of, register

    bracket = BracketProfile()
    register(bracket)
    try:
        assert profile_of("bracket") is bracket
        tools = evidence_tools(EvidenceIndex.in_memory(article_corpus()), profile="bracket")
        reply = run_tool_call(tools, tool_call("locate_evidence", {"term": "单批上限"}, "l"))
        assert reply.content.startswith("[locate] locate: 1 match")
    finally:
        del PROFILES["bracket"]
    assert tuple(PROFILES) == REGISTERED


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:
    record()
