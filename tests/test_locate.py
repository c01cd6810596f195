"""locate_evidence beyond the teaching version: paged results, NFC matching, explicit misses."""

from __future__ import annotations

import json
import unicodedata

import pytest
from conftest import refusal_code

from evidence_lib import Document, EvidenceIndex, LocateOptions, evidence_tools
from evidence_lib._locate import NO_MATCH_NOTE, locate, nfc_with_map

PAGED_DOCS = [
    Document("p0", "t0", "r", "abc abc xabc"),
    Document("p1", "t1", "r", "no match here"),
    Document("p2", "t2", "r", "abcabcabc abc"),
    Document("p3", "t3", "r", "aaaa abc"),
]


def _all_matches(docs, term):
    return [{"doc_id": d.doc_id, "offset": i} for d in docs for i in range(len(d.text)) if d.text.startswith(term, i)]


@pytest.fixture
def paged_index(tmp_path):
    return EvidenceIndex.build(PAGED_DOCS, tmp_path / "paged")


def _locate_tool(index, **opts):
    return evidence_tools(index, locate_options=LocateOptions(**opts))[1]


def test_default_options_are_the_articles_teaching_version():
    opts = LocateOptions()
    assert (opts.max_positions, opts.max_term_chars, opts.paged, opts.normalization, opts.explicit_miss) == (
        5, 64, False, "none", False)
    assert opts.structured is False


def test_paged_locate_batches_together_list_every_match_in_order(paged_index):
    tool = _locate_tool(paged_index, paged=True)
    assert list(tool.args) == ["term", "cursor"]
    expected = _all_matches(PAGED_DOCS, "abc")
    assert len(expected) == 8
    seen, cursor, batches = [], 0, 0
    while cursor is not None:
        out = json.loads(tool.invoke({"term": "abc", "cursor": cursor}))
        assert len(out["matches"]) <= 5
        assert out["total_matches"] == len(expected)
        assert "note" not in out
        seen += out["matches"]
        cursor = out["next_cursor"]
        batches += 1
    assert seen == expected
    assert batches == 2


def test_paged_locate_reports_overlapping_matches(paged_index):
    out = json.loads(_locate_tool(paged_index, paged=True).invoke({"term": "aa"}))
    assert out["matches"] == [{"doc_id": "p3", "offset": i} for i in range(3)]
    assert out["next_cursor"] is None


def test_paged_locate_over_the_article_corpus_counts_every_occurrence(index):
    tool = _locate_tool(index, paged=True, max_positions=1000)
    seen, cursor = [], 0
    while cursor is not None:
        out = json.loads(tool.invoke({"term": "批处理", "cursor": cursor}))
        seen += out["matches"]
        cursor = out["next_cursor"]
    # 240 filler sentences per document, plus "本条没有批处理上限参数。" in the 11 non-answer tails
    assert len(seen) == out["total_matches"] == 12 * 240 + 11
    assert len({(m["doc_id"], m["offset"]) for m in seen}) == len(seen)


def test_paged_locate_miss_has_a_note_and_no_cursor(paged_index):
    out = json.loads(_locate_tool(paged_index, paged=True).invoke({"term": "zzz"}))
    assert out["matches"] == [] and out["next_cursor"] is None and out["total_matches"] == 0
    assert out["note"] == NO_MATCH_NOTE


def test_paged_locate_refuses_negative_or_non_integer_cursor(paged_index):
    tool = _locate_tool(paged_index, paged=True)
    assert refusal_code(tool, {"term": "abc", "cursor": -1}) == "invalid_page_bounds"
    assert refusal_code(tool, {"term": "abc", "cursor": "5"}) == "invalid_arguments"
    assert refusal_code(tool, {"term": "abc", "cursor": True}) == "invalid_arguments"
    assert refusal_code(tool, {"term": "", "cursor": 0}) == "invalid_term"


def test_paged_locate_cursor_past_the_end_returns_no_matches(paged_index):
    out = json.loads(_locate_tool(paged_index, paged=True).invoke({"term": "abc", "cursor": 10**6}))
    assert out["matches"] == [] and out["next_cursor"] is None and out["total_matches"] == 8


def test_default_locate_has_no_cursor_argument(index):
    tool = evidence_tools(index)[1]
    assert list(tool.args) == ["term"]
    assert refusal_code(tool, {"term": "批", "cursor": 5}) == "invalid_arguments"


# -- NFC --------------------------------------------------------------------------------------

NFC_TEXT = "e\u0301e\u0301 cafe\u0301 ok"  # two decomposed é, then a decomposed café


@pytest.fixture
def nfc_index(tmp_path):
    return EvidenceIndex.build([Document("n0", "t", "r", NFC_TEXT),
                                Document("n1", "t", "r", "plain caf\u00e9 here")], tmp_path / "nfc")


def test_literal_locate_misses_a_precomposed_term_in_decomposed_text(nfc_index):
    assert json.loads(evidence_tools(nfc_index)[1].invoke({"term": "caf\u00e9"})) == [
        {"doc_id": "n1", "offset": 6}]


def test_nfc_locate_finds_a_precomposed_term_in_decomposed_text_at_its_original_offset(nfc_index):
    out = json.loads(_locate_tool(nfc_index, normalization="NFC").invoke({"term": "caf\u00e9"}))
    assert out["matching"] == "literal after NFC"
    assert out["matches"] == [{"doc_id": "n0", "offset": 5}, {"doc_id": "n1", "offset": 6}]
    # offset 5 indexes the ORIGINAL text (the NFC text has the match at 3)
    assert unicodedata.normalize("NFC", NFC_TEXT).find("caf\u00e9") == 3
    assert NFC_TEXT[5:].startswith("cafe\u0301")


def test_nfc_locate_finds_a_decomposed_term_in_precomposed_text(nfc_index):
    out = json.loads(_locate_tool(nfc_index, normalization="NFC").invoke({"term": "cafe\u0301"}))
    assert {"doc_id": "n1", "offset": 6} in out["matches"]


def test_nfc_offsets_can_be_read_back_with_read_evidence(nfc_index):
    search, locate_tool, read = evidence_tools(nfc_index, locate_options=LocateOptions(normalization="NFC"))
    hit = json.loads(locate_tool.invoke({"term": "\u00e9 caf"}))["matches"][0]
    page = json.loads(read.invoke({**hit, "limit": 7}))
    assert unicodedata.normalize("NFC", page["text"]).startswith("\u00e9 caf")


def test_nfc_with_map_maps_each_normalized_char_to_its_original_run():
    norm, starts, ends = nfc_with_map(NFC_TEXT)
    assert norm == unicodedata.normalize("NFC", NFC_TEXT)
    assert len(starts) == len(ends) == len(norm)
    for i, ch in enumerate(norm):
        assert unicodedata.normalize("NFC", NFC_TEXT[starts[i]:ends[i]]).find(ch) >= 0


def test_nfc_with_map_is_identity_for_already_normalized_text():
    text = "批处理 abc"
    norm, starts, ends = nfc_with_map(text)
    assert norm == text and starts == list(range(len(text))) and ends == list(range(1, len(text) + 1))


def test_nfc_locate_finds_hangul_composed_from_conjoining_jamo():
    text = "xx \u1100\u1161\u11a8 yy"  # decomposed 각
    out = locate([("h", text)], "\uac01", LocateOptions(normalization="NFC"))
    assert out["matches"] == [{"doc_id": "h", "offset": 3}]


@pytest.mark.parametrize(
    "decomposed, composed",
    [("\u09c7\u09be", "\u09cb"),   # Bengali vowel sign O = E + AA (AA has canonical class 0)
     ("\u0b47\u0b3e", "\u0b4b"),   # Oriya vowel sign O
     ("\u0dd9\u0dcf", "\u0ddc")],  # Sinhala vowel sign KOMBUVA + AELA-PILLA
)
def test_nfc_locate_finds_terms_composed_from_class_zero_vowel_signs(decomposed, composed):
    text = "ab " + decomposed + " cd"
    assert composed in unicodedata.normalize("NFC", text)
    out = locate([("v", text)], composed, LocateOptions(normalization="NFC"))
    assert out["matches"] == [{"doc_id": "v", "offset": 3}]


def test_nfc_locate_finds_a_composition_reordered_past_a_tibetan_vowel_sign():
    # U+0F73 has combining class 0 but decomposes to two non-starters (U+0F71 U+0F72), so a mark
    # after it (U+0338, class 1) is reordered before them and composes with "<": NFC gives U+226E.
    text = "ab <\u0f73\u0338 cd"
    assert "\u226e" in unicodedata.normalize("NFC", text)
    out = locate([("t", text)], "\u226e", LocateOptions(normalization="NFC"))
    assert out["matches"] == [{"doc_id": "t", "offset": 3}]


# -- explicit miss ----------------------------------------------------------------------------

def test_explicit_miss_returns_a_note_instead_of_a_bare_empty_list(index):
    tool = _locate_tool(index, explicit_miss=True)
    content = tool.invoke({"term": "没有的关键词"})
    out = json.loads(content)
    assert content != "[]" and isinstance(out, dict)
    assert out["matches"] == [] and out["note"] == NO_MATCH_NOTE
    assert "not evidence that the answer is absent" in out["note"]


def test_explicit_miss_hit_is_an_object_without_a_note(index):
    out = json.loads(_locate_tool(index, explicit_miss=True).invoke({"term": "单批上限"}))
    assert out == {"term": "单批上限", "matching": "literal", "matches": [{"doc_id": "d03", "offset": 4321}]}


def test_explicit_miss_keeps_first_occurrence_and_five_position_limits(index):
    out = json.loads(_locate_tool(index, explicit_miss=True).invoke({"term": "批处理"}))
    assert out["matches"] == [{"doc_id": f"d{i:02}", "offset": 0} for i in range(5)]


def test_locate_function_default_returns_a_bare_list():
    assert locate([("a", "xyz")], "q") == []
    assert locate([("a", "xyzx"), ("b", "x")], "x") == [{"doc_id": "a", "offset": 0}, {"doc_id": "b", "offset": 0}]


def test_max_term_chars_option_bounds_the_term(index):
    tool = _locate_tool(index, max_term_chars=4)
    assert refusal_code(tool, {"term": "单批上限为"}) == "invalid_term"
    assert json.loads(tool.invoke({"term": "单批上限"})) == [{"doc_id": "d03", "offset": 4321}]
