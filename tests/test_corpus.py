"""The article's corpus is byte-exact: the article's numbers depend on every character."""

from __future__ import annotations

import hashlib
import json

from evidence_lib import Document, baseline_dump
from evidence_lib.course.article import ANSWER, FILLER, NO_ANSWER, QUESTION, REVISION, article_corpus

ARTICLE_FILLER = "批处理任务需保留执行批次和日志编号。"
ARTICLE_ANSWER = "单批上限为200条，超时设为30秒。"
ARTICLE_NO_ANSWER = "本条没有批处理上限参数。"


def test_corpus_has_twelve_documents_d00_to_d11_in_order(corpus):
    assert len(corpus) == 12
    assert [d.doc_id for d in corpus] == [f"d{i:02}" for i in range(12)]
    assert all(isinstance(d, Document) for d in corpus)


def test_titles_and_revision_match_the_article(corpus):
    assert [d.title for d in corpus] == [f"批处理说明 {i}" for i in range(12)]
    assert {d.revision for d in corpus} == {"2026-10-27"} == {REVISION}


def test_text_is_filler_240_times_then_newline_then_tail(corpus):
    assert FILLER == ARTICLE_FILLER and ANSWER == ARTICLE_ANSWER and NO_ANSWER == ARTICLE_NO_ANSWER
    for d in corpus:
        tail = ARTICLE_ANSWER if d.doc_id == "d03" else ARTICLE_NO_ANSWER
        assert d.text == ARTICLE_FILLER * 240 + "\n" + tail


def test_only_d03_contains_the_answer(corpus):
    holders = [d.doc_id for d in corpus if ARTICLE_ANSWER in d.text]
    assert holders == ["d03"]
    assert [d.doc_id for d in corpus if "单批上限" in d.text] == ["d03"]


def test_answer_sits_at_characters_4321_to_4339_of_d03(d03_text):
    start = d03_text.find(ARTICLE_ANSWER)
    assert (start, start + len(ARTICLE_ANSWER)) == (4321, 4339)
    assert len(d03_text) == 4339


def test_baseline_dump_is_156982_utf8_bytes(corpus):
    dump = baseline_dump(corpus)
    assert len(dump.encode("utf-8")) == 156982


def test_baseline_dump_matches_the_article_json_layout(corpus):
    dump = baseline_dump(corpus)
    article = json.dumps(
        [{"id": d.doc_id, "title": d.title, "revision": d.revision, "text": d.text} for d in corpus],
        ensure_ascii=False,
    )
    assert dump == article
    assert "\\u" not in dump and "批处理说明 3" in dump


def test_article_corpus_is_deterministic(corpus):
    again = article_corpus()
    assert again == corpus
    digest = lambda docs: hashlib.sha256(baseline_dump(docs).encode("utf-8")).hexdigest()  # noqa: E731
    assert digest(again) == digest(corpus)


def test_article_documents_are_open_teaching_material(corpus):
    assert all(d.access is None for d in corpus)


def test_question_is_the_articles_question():
    assert QUESTION == "批处理每批最多多少条，超时设多少秒？"
