"""The shipped evaluation QA data and its checker (evidence_lib/eval/_qa_check.py)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evidence_lib.eval._qa_check import DATA_DIR, check_items, corpus_sha256, folder_corpus, pydoc_corpus, summarize

ROOT = Path(__file__).resolve().parents[1]
PYDOC_QA = DATA_DIR / "pydoc_qa.json"
ZH_QA = DATA_DIR / "zh_qa.json"
ZH_CORPUS = DATA_DIR / "zh_corpus"
TWO_HAN = re.compile(r"[\u4e00-\u9fff]{2}")


def load(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def pydoc():
    """(docs, file data); skips when the running Python's topics are not the ones the file was written for."""
    data = load(PYDOC_QA)
    docs, version = pydoc_corpus()
    if corpus_sha256(docs) != data["corpus_sha256"]:
        pytest.skip(f"pydoc topics of Python {version} differ from Python {data['python_version']}'s; "
                    "scripts/check_qa.py lists the items that no longer match")
    return docs, data


# (a) the shipped files pass


def test_pydoc_qa_passes_check_items(pydoc):
    docs, data = pydoc
    assert data["corpus"] == "pydoc"
    assert check_items(docs, data["items"]) == []


def test_pydoc_qa_size_and_spread(pydoc):
    docs, data = pydoc
    items = data["items"]
    stats = summarize(docs, items)
    assert stats["items"] >= 44
    assert stats["docs_covered"] >= 25
    assert stats["deep_spans"] >= 10           # many spans thousands of characters in
    assert stats["ambiguous_terms"] >= 5       # terms that occur in many topics
    assert any(item["start"] < 500 for item in items)
    assert all(re.fullmatch(r"pydoc-\d{3}", item["id"]) for item in items)


def test_zh_qa_passes_check_items():
    docs = folder_corpus(ZH_CORPUS)
    items = load(ZH_QA)
    assert isinstance(items, list)
    assert check_items(docs, items) == []
    assert len(items) >= 12
    assert all(item.get("question_en") for item in items)
    assert sum(bool(TWO_HAN.fullmatch(item["locate_term"])) for item in items) >= 3


def test_zh_corpus_shape():
    docs = folder_corpus(ZH_CORPUS)
    assert 6 <= len(docs) <= 10
    for doc_id, text in docs.items():
        assert doc_id.isascii() and re.fullmatch(r"[a-z0-9-]+", doc_id)
        assert 1500 <= len(text) <= 6000, (doc_id, len(text))
        title = next(line for line in text.splitlines() if line.strip())
        assert TWO_HAN.search(title), (doc_id, title)


def test_check_script_passes(pydoc):
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_qa.py")],
                         capture_output=True, text=True, encoding="utf-8")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("pydoc_qa.json: ") and lines[-1].startswith("zh_qa.json: ")


# (b) check_items names the item and the problem

DOCS = {
    "a": "Alpha beta gamma. The limit is 200 items per batch.",
    "b": "Beta again. The timeout is 30 seconds. Beta.",
}


def good(item_id: str = "q1", **changes):
    span = "The limit is 200 items per batch."
    start = DOCS["a"].index(span)
    item = {"id": item_id, "question": "What is the batch limit?", "doc_id": "a", "answer_span": span,
            "start": start, "end": start + len(span), "locate_term": "limit"}
    item.update(changes)
    return item


def only_error(items) -> str:
    errors = check_items(DOCS, items)
    assert len(errors) == 1, errors
    return errors[0]


def test_good_items_pass_and_extra_keys_are_ignored():
    other = {"id": "q2", "question": "What is the timeout?", "doc_id": "b", "answer_span": "The timeout is 30 seconds.",
             "start": 12, "end": 38, "locate_term": "timeout", "question_en": "ignored"}
    assert DOCS["b"][12:38] == other["answer_span"]
    assert check_items(DOCS, [good(), other]) == []


def test_mismatched_span():
    item = good("shifted")
    item["start"] -= 1
    item["end"] -= 1
    error = only_error([good(), item])
    assert error.startswith("shifted: ")
    assert f"span mismatch at [{item['start']},{item['end']})" in error
    assert f"occurs in 'a' at [{item['start'] + 1},{item['end'] + 1})" in error


def test_non_unique_span():
    # "Beta" (capital B) occurs twice in b and nowhere in a: start/end are right, the span is not unique.
    error = only_error([good("dup-span", doc_id="b", answer_span="Beta", start=0, end=4, locate_term="Beta")])
    assert error.startswith("dup-span: ")
    assert "span mismatch" not in error
    second = DOCS["b"].rindex("Beta")
    assert f"answer_span is not unique: 2 occurrences in the corpus (b@0, b@{second})" in error


def test_span_repeated_in_another_document_is_not_unique():
    docs = {"x": "shared sentence.", "y": "a shared sentence."}
    item = {"id": "cross", "question": "?", "doc_id": "x", "answer_span": "shared sentence.", "start": 0,
            "end": 16, "locate_term": "shared"}
    (error,) = check_items(docs, [item])
    assert error.startswith("cross: ") and "not unique" in error and "y@2" in error


def test_missing_locate_term():
    error = only_error([good("no-term", locate_term="timeout")])
    assert error.startswith("no-term: ")
    assert "locate_term 'timeout' does not occur in 'a'" in error


def test_bool_start_is_not_an_int():
    error = only_error([good("bool-start", start=True)])
    assert error.startswith("bool-start: ")
    assert "start must be int, got bool" in error


@pytest.mark.parametrize("changes, expected", [
    ({"doc_id": "zz"}, "unknown doc_id 'zz'"),
    ({"end": "51"}, "end must be int, got str"),
    ({"locate_term": 7}, "locate_term must be str, got int"),
    ({"locate_term": "x" * 65}, "locate_term must be 1-64 characters"),
    ({"start": 40, "end": 999}, "is not a non-empty range"),
])
def test_other_problems_name_the_item(changes, expected):
    error = only_error([good("bad", **changes)])
    assert error.startswith("bad: ") and expected in error


def test_missing_keys_and_unnamed_items():
    item = good("partial")
    del item["start"], item["locate_term"]
    errors = check_items(DOCS, [item, "not an object", {"question": "no id"}])
    assert errors[0] == "partial: missing keys: start, locate_term"
    assert errors[1].startswith("item #1: must be an object")
    assert errors[2].startswith("item #2: missing keys: id, doc_id")


def test_duplicate_id_and_several_problems_in_one_message():
    errors = check_items(DOCS, [good("same"), good("same", locate_term="timeout")])
    assert len(errors) == 1
    assert errors[0].startswith("same: duplicate id (first used by item #0); locate_term")


# (c) corpus_sha256


def test_corpus_sha256_is_the_documented_serialization():
    docs = {"b": "第二", "a": "one\n"}
    expected = hashlib.sha256(json.dumps([["a", "one\n"], ["b", "第二"]], ensure_ascii=False,
                                         separators=(",", ":")).encode("utf-8")).hexdigest()
    assert corpus_sha256(docs) == expected


def test_corpus_sha256_is_order_independent_and_sensitive_to_one_character():
    docs = {"x": "alpha", "y": "beta", "z": "上限为200条"}
    reordered = dict(reversed(list(docs.items())))
    assert list(reordered) != list(docs)
    assert corpus_sha256(reordered) == corpus_sha256(docs)
    changed = {**docs, "z": "上限为201条"}
    assert corpus_sha256(changed) != corpus_sha256(docs)
    renamed = {"x": "alpha", "y": "beta", "w": "上限为200条"}
    assert corpus_sha256(renamed) != corpus_sha256(docs)


def test_folder_corpus_keeps_line_ends(tmp_path):
    (tmp_path / "crlf.txt").write_bytes("标题\r\n正文\r\n".encode())
    (tmp_path / "notes.md").write_text("ignored", encoding="utf-8")
    assert folder_corpus(tmp_path) == {"crlf": "标题\r\n正文\r\n"}
