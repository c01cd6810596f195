"""evidence_lib.course.accounting: the whole context per model call; break-even; the create_agent harness."""

from __future__ import annotations

import pytest

from evidence_lib import Size, evidence_tools
from evidence_lib._answers import parse_answer
from evidence_lib.audit._checker import check_history
from evidence_lib.audit._history import steps
from evidence_lib.course.accounting import CONTEXT_PARTS, account, break_even, padded_totals, run_dump, snippet_corpus
from evidence_lib.course.article import ANSWER, QUESTION, article_corpus
from evidence_lib.course.readers import CarefulReader, PolicyChatModel
from evidence_lib.course.tasks import ARTICLE_TERMS, run_reader


@pytest.fixture(scope="module")
def dump():
    return run_dump(article_corpus(), ARTICLE_TERMS, QUESTION)[1]


def test_dump_conversation_carries_the_156982_byte_dump(dump):
    assert [c.returned for c in dump.calls] == ["1 tool call", "final answer"]
    assert dump.parts()["tool_outputs"].utf8_bytes == 156_982


def test_parts_add_up_to_the_cumulative_total(tmp_path, dump):
    run = run_reader(CarefulReader(ARTICLE_TERMS), tmp_path)
    acc = account(run.messages, run.tools, "protocol")
    assert len(acc.calls) == 4 and set(acc.parts()) == set(CONTEXT_PARTS)
    total = Size(0, 0, 0, 0)
    for part in acc.parts().values():
        total += part
    assert total == acc.total  # every byte and token is in exactly one part
    assert acc.parts()["schemas"].utf8_bytes == 4 * acc.calls[0].parts["schemas"].utf8_bytes  # sent on every call
    assert acc.total.utf8_bytes < dump.total.utf8_bytes and acc.total.cl100k_tokens < dump.total.cl100k_tokens


def test_extra_turns_reach_a_break_even(tmp_path, dump):
    totals = padded_totals(tmp_path, "turns", range(0, 12))
    n = break_even(dump.total, totals, "utf8_bytes")
    assert n is not None and 0 < n < 12
    assert [t.utf8_bytes for _, t in totals] == sorted(t.utf8_bytes for _, t in totals)


def test_three_short_snippets_are_cheaper_returned_directly(tmp_path):
    docs = snippet_corpus()
    direct = run_dump(docs, ARTICLE_TERMS, QUESTION)[1]
    run = run_reader(CarefulReader(ARTICLE_TERMS), tmp_path, docs)
    assert parse_answer(run.result.answer).citations and check_history(run.messages) == []
    assert account(run.messages, run.tools).total.utf8_bytes > direct.total.utf8_bytes


def test_compact_profile_full_context_accounting(tmp_path):
    """The careful reader through compact tools cites the locate excerpt (no read); the whole context costs less."""
    run = run_reader(CarefulReader(ARTICLE_TERMS), tmp_path, profile="compact")
    article = run_reader(CarefulReader(ARTICLE_TERMS), tmp_path / "article")
    assert check_history(run.messages) == []
    assert [s.name for s in steps(run.messages)] == ["search_evidence", "locate_evidence"]
    (cite,) = parse_answer(run.result.answer).citations
    assert (cite.doc_id, cite.revision, cite.start, cite.end, cite.quote) == ("d03", "2026-10-27", 4321, 4339, ANSWER)
    assert parse_answer(run.result.answer) == parse_answer(article.result.answer)  # the one answer format
    compact, full = account(run.messages, run.tools), account(article.messages, article.tools)
    assert compact.total.cl100k_tokens < full.total.cl100k_tokens and compact.total.utf8_bytes < full.total.utf8_bytes
    assert compact.parts()["tool_outputs"].cl100k_tokens < full.parts()["tool_outputs"].cl100k_tokens


def test_compact_break_even_comes_later_than_the_article_profile(tmp_path, dump):
    article = break_even(dump.total, padded_totals(tmp_path, "turns", range(0, 12)), "cl100k_tokens")
    compact = break_even(dump.total, padded_totals(tmp_path, "turns", range(0, 16), profile="compact"), "cl100k_tokens")
    assert article is not None and compact is not None and compact > article


def test_create_agent_runs_the_same_tools_with_the_same_outcome(tmp_path):
    pytest.importorskip("langchain.agents")
    from evidence_lib import EvidenceIndex, Ledger
    from evidence_lib.integrations.langchain._harness import run_create_agent

    index = EvidenceIndex.build(article_corpus(), tmp_path)
    ledger = Ledger()
    messages = run_create_agent(PolicyChatModel(reader=CarefulReader(ARTICLE_TERMS)),
                                evidence_tools(index, ledger=ledger), QUESTION)
    loop = run_reader(CarefulReader(ARTICLE_TERMS), tmp_path / "loop")
    assert messages[-1].content == loop.result.answer and check_history(messages) == []
    assert ledger.totals() == loop.ledger.totals()
