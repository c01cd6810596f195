"""Issue 17 item 4: locate across wrapped lines (CJK runs, hyphenated Latin), offsets into the original text.

The property tests compare :func:`evidence_lib._locate.find_spans` / ``find_all`` with a brute-force reference
written here in plain Python: for every start offset it tries every way to consume the term character by
character, allowing a wrap at the positions the rule allows, and collects every end it can reach. The
reference classifies characters by its own small alphabet, not by the library's ranges (tested separately).
"""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from evidence_lib import Document, EvidenceIndex, LocateOptions, evidence_tools
from evidence_lib._locate import find, find_all, find_spans, is_cjk, is_latin_letter, locate, match_end, nfc_with_map

WRAPPED = LocateOptions(wrapped=True)
WRAPPED_NFC = LocateOptions(wrapped=True, normalization="NFC")

# -- the reference ------------------------------------------------------------------------------

REF_CJK = "中文批处理あア한，。ｅ"  # Han, kana, hangul, fullwidth comma U+FF0C, U+3002, fullwidth e U+FF45
REF_LATIN = "abeéßxmplcfrti"  # é precomposed (U+00E9); covers the tokens "exam", "ple" and the examples
REF_HYPHENS = "-\u00ad\u2010"
REF_SPACE = " \t\u3000"  # U+3000 is indentation, not a CJK term character
REF_BREAKS = ("\r\n", "\r", "\n")
OTHER = "1."
# The NFC texts below also hold a stray U+0301 and the jamo of 각, which NFC composes with what precedes them: the
# normalized text (and term) then holds letters outside the alphabets above, classified as the rule says (a Latin
# letter, a Hangul syllable), not as "other" (test_the_reference_classes_cover_what_nfc_composes_from_the_alphabet).
REF_CJK_NFC = REF_CJK + "\uac01"  # 각 = NFC of U+1100 U+1161 U+11A8
REF_LATIN_NFC = REF_LATIN + "\u00e1\u00ed\u0107\u013a\u0155\u1e3f\u1e55"  # á í ć ĺ ŕ ḿ ṕ (letter + U+0301)


def ref_wraps(text: str, p: int) -> set[int]:
    """Every q such that text[p:q] is a wrap: white space, exactly one line break, white space."""
    out = set()
    a = p
    while True:
        for lb in REF_BREAKS:
            if text.startswith(lb, a):
                b = a + len(lb)
                out.add(b)
                while b < len(text) and text[b] in REF_SPACE:
                    b += 1
                    out.add(b)
        if a < len(text) and text[a] in REF_SPACE:
            a += 1
        else:
            return out


def ref_kind(term: str, i: int) -> str | None:
    """What may stand in the text between term[i - 1] and term[i]."""
    a, b = term[i - 1], term[i]
    if a in REF_CJK_NFC and b in REF_CJK_NFC:
        return "wrap"
    if a in REF_LATIN_NFC and b in REF_LATIN_NFC:
        return "hyphen+wrap"
    if a in REF_HYPHENS and i >= 2 and term[i - 2] in REF_LATIN_NFC and b in REF_LATIN_NFC:
        return "wrap"
    return None


def ref_ends(text: str, start: int, term: str) -> set[int]:
    positions = {start}
    for i, ch in enumerate(term):
        reach = set(positions)
        kind = ref_kind(term, i) if i else None
        for p in positions:
            if kind == "wrap":
                reach |= ref_wraps(text, p)
            elif kind == "hyphen+wrap" and p < len(text) and text[p] in REF_HYPHENS:
                reach |= ref_wraps(text, p + 1)
        positions = {p + 1 for p in reach if text.startswith(ch, p)}
    return positions


def ref_spans(text: str, term: str) -> list[tuple[int, int]]:
    out = []
    for s in range(len(text)):
        ends = ref_ends(text, s, term)
        assert len(ends) <= 1, (text, term, s, ends)  # the rule is unambiguous: one end per start
        out.extend((s, e) for e in ends)
    return out


# -- strategies ---------------------------------------------------------------------------------

TOKENS = list(REF_CJK + REF_LATIN + REF_HYPHENS + REF_SPACE + OTHER) + [
    "\n", "\r", "\r\n", "\n    ", "\r\n\t", "  \n  ", "-\n", "-\n  ", "\u00ad\n", "- \r\n ", "\n\n", "\n\r",
    "\u3000\n\u3000", "中文", "批处理", "exam", "ple",
]
WRAPS = ["\n", "\r\n", "\r", "  \n    ", "\t\n\t", "\u3000\n\u3000", " \r\n"]
glued = st.one_of(  # characters the rule joins, with a wrap (and a hyphen) between them
    st.tuples(st.sampled_from(REF_CJK), st.sampled_from(WRAPS), st.sampled_from(REF_CJK)),
    st.tuples(st.sampled_from(REF_LATIN), st.sampled_from(REF_HYPHENS), st.sampled_from(WRAPS),
              st.sampled_from(REF_LATIN)),
).map("".join)
tokens = st.one_of(st.sampled_from(TOKENS), glued, glued)
texts = st.lists(tokens, max_size=24).map("".join)
TERM_CHARS = REF_CJK + REF_LATIN + REF_HYPHENS + REF_SPACE + OTHER

PROPERTY_SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


GAPS = WRAPS + ["-" + w for w in WRAPS] + ["\u00ad\n", "\u2010\r\n ", " ", "\t", "\n\n", "\r\n\r\n", "-", " -\n",
                                           "\n-", "-\n\n"]


@st.composite
def rendered(draw, text_strategy):
    """A term drawn first, written into the text with gaps (wraps, hyphens, or neither) between its characters."""
    term = draw(st.text(st.sampled_from(REF_CJK + REF_LATIN + "-"), min_size=1, max_size=6))
    out = [term[0]]
    for i in range(1, len(term)):
        kind = ref_kind(term, i)
        if kind and draw(st.booleans()):  # a gap the rule allows here
            out.append(draw(st.sampled_from(WRAPS if kind == "wrap" else [h + w for h in REF_HYPHENS for w in WRAPS])))
        elif draw(st.booleans()):  # any gap, mostly one that breaks the match
            out.append(draw(st.sampled_from(GAPS)))
        out.append(term[i])
    return draw(text_strategy) + "".join(out) + draw(text_strategy), term


@st.composite
def text_and_term(draw, text_strategy=texts):
    if draw(st.booleans()):
        return draw(rendered(text_strategy))
    text = draw(text_strategy)
    if text and draw(st.integers(0, 3)):  # mostly a term taken from the text with its wraps (maybe hyphens) removed
        i = draw(st.integers(0, len(text) - 1))
        j = draw(st.integers(i + 1, min(len(text), i + 12)))
        drop = draw(st.sampled_from([REF_SPACE + "\r\n", REF_SPACE + "\r\n" + REF_HYPHENS, "\r\n"]))
        term = "".join(c for c in text[i:j] if c not in drop)
        if term:
            return text, term
    return text, draw(st.text(st.sampled_from(TERM_CHARS), min_size=1, max_size=5))


@PROPERTY_SETTINGS
@given(tt=text_and_term())
@example(tt=("exam-\n  ple", "example"))
@example(tt=("exam-\n  ple", "exam-ple"))
@example(tt=("批\r\n    处理", "批处理"))
@example(tt=("aaa", "aa"))
@example(tt=("中\n\n文", "中文"))
@example(tt=("中\n中中\n中中\n中中\n中a-\ná", "中中中中中a-á"))  # the term's own hyphen, then a wrap, then á
@example(tt=("e-\nee-\nee-\nee-\nea-\ná", "eeeeea-á"))
@example(tt=("e\nee\nee\nee\nea-\ná", "eeeeea-á"))  # Latin letters broken without a hyphen: no match
def test_wrapped_spans_equal_the_brute_force_reference(tt):
    """Issue 17 item 4: every (start, end) find_spans yields is the reference's, in order, overlaps included."""
    text, term = tt
    expected = ref_spans(text, term)
    assert list(find_spans(text, term, WRAPPED)) == expected
    assert list(find_all(text, term, WRAPPED)) == [s for s, _ in expected]
    assert list(find_spans(text, term, WRAPPED, first_only=True)) == expected[:1]
    assert list(find([("d", text)], term, WRAPPED)) == [("d", s) for s, _ in expected]


@PROPERTY_SETTINGS
@given(tt=text_and_term())
def test_every_literal_match_is_a_wrapped_match_of_the_term_length(tt):
    """Issue 17 item 4: the option only adds matches; a literal match keeps its offset and ends at start + len(term)."""
    text, term = tt
    literal = list(find_all(text, term))
    assert literal == [i for i in range(len(text)) if text.startswith(term, i)]
    spans = dict(find_spans(text, term, WRAPPED))
    for s in literal:
        assert spans[s] == s + len(term)
    assert list(find_spans(text, term)) == [(s, s + len(term)) for s in literal]


@PROPERTY_SETTINGS
@given(tt=text_and_term())
def test_match_end_gives_the_end_of_the_span_found_at_that_start(tt):
    """Issue 17 item 4: match_end(text, start) is the span's end, also on a slice that starts at the match."""
    text, term = tt
    spans = list(find_spans(text, term, WRAPPED))
    for s, e in spans:
        assert match_end(text, s, term, WRAPPED) == e
        assert match_end(text[s:e], 0, term, WRAPPED) == e - s
    starts = {s for s, _ in spans}
    for s in range(len(text) + 1):
        if s not in starts:
            with pytest.raises(ValueError):
                match_end(text, s, term, WRAPPED)


# NFC: the same reference on the normalized text, mapped back through nfc_with_map
nfc_texts = st.lists(st.one_of(tokens, st.sampled_from(["e\u0301", "e\u0301-\n", "\u1100\u1161\u11a8", "\u0301"])),
                     max_size=24).map("".join)


@PROPERTY_SETTINGS
@given(tt=text_and_term(nfc_texts), decompose=st.booleans())
@example(tt=("caf" + "e\u0301" + "-\n  teria", "caf\u00e9teria"), decompose=False)
@example(tt=("a-\nae\u0301\u4e2d\u0301", "\u0301"), decompose=False)  # runs: 中 and its mark map to one run
@example(tt=("e\u0301\u4e2d\u0301\n\u6587", "\u4e2d\u6587"), decompose=False)
@example(tt=("\u4e2d\u0301", "\u4e2d"), decompose=False)  # already NFC: character by character
@example(tt=("e\u0301a\r\n\u0301", "\u0301"), decompose=False)  # a mark joins the run of a line break
@example(tt=("中\n中中\n中中\n中中\n中a-\ná", "中中中中中a-á"), decompose=False)  # á: a letter NFC composed
@example(tt=("中\n中中\n中中\n中中\n中a-\na\u0301", "中中中中中a-á"), decompose=True)
@example(tt=("\u1100\u1161\u11a8\n\u4e2d", "\u1100\u1161\u11a8\u4e2d"), decompose=False)  # 각 is CJK
def test_wrapped_nfc_spans_are_the_reference_on_the_nfc_text_mapped_back(tt, decompose):
    """Issue 17 item 4: with NFC, wraps are found in the normalized text; offsets index the original text."""
    text, term = tt
    term = unicodedata.normalize("NFD" if decompose else "NFC", term)
    norm, starts, ends = nfc_with_map(text)
    nterm = unicodedata.normalize("NFC", term)
    expected = [(starts[s], ends[e - 1]) for s, e in ref_spans(norm, nterm)]
    assert list(find_spans(text, term, WRAPPED_NFC)) == expected
    assert list(find_all(text, term, WRAPPED_NFC)) == [s for s, _ in expected]
    for s, e in expected:
        assert 0 <= s < e <= len(text)
        assert match_end(text, s, term, WRAPPED_NFC) == e


# -- unit tests ---------------------------------------------------------------------------------

def test_the_reference_classes_cover_what_nfc_composes_from_the_alphabet():
    """The reference's own classes hold every letter the NFC texts compose (a letter and U+0301, the jamo of 각)."""
    composed = {unicodedata.normalize("NFC", c + "\u0301") for c in REF_LATIN} | {
        unicodedata.normalize("NFC", c + "\u0301") for c in REF_CJK}
    assert {c for c in composed if len(c) == 1} == set(REF_LATIN_NFC) - set(REF_LATIN) | {"\u00e9"}
    assert unicodedata.normalize("NFC", "\u1100\u1161\u11a8") in REF_CJK_NFC
    assert all(is_latin_letter(c) for c in REF_LATIN_NFC) and all(is_cjk(c) for c in REF_CJK_NFC)


def test_a_chinese_term_split_by_a_line_break_and_indentation_is_found_with_its_whole_span():
    """Issue 17 item 4: "批处\\n    理" matches 批处理 at its start; the span ends after 理 in the original text."""
    text = "配置说明：单次批处\n    理上限为200条。"
    start = text.index("批")
    assert list(find_all(text, "批处理")) == []  # grep finds nothing
    assert list(find_spans(text, "批处理", WRAPPED)) == [(start, start + 8)]
    assert text[start:start + 8] == "批处\n    理"
    assert match_end(text, start, "批处理", WRAPPED) == start + 8


def test_a_wrap_may_carry_trailing_white_space_a_crlf_and_ideographic_indentation():
    """Issue 17 item 4: white space before the break, \\r\\n or \\r, and U+3000 indentation all make one wrap."""
    for wrap in ("\n", "\r\n", "\r", "  \n", "\t\r\n\t", "\n\u3000\u3000"):
        text = "甲中" + wrap + "文乙"
        assert list(find_spans(text, "中文", WRAPPED)) == [(1, 3 + len(wrap))], repr(wrap)


def test_kana_hangul_and_fullwidth_punctuation_wrap_but_a_blank_line_does_not():
    """Issue 17 item 4: a wrap is one line break; two breaks are a paragraph end and do not match."""
    assert list(find_all("カタ\n  カナ", "カタカナ", WRAPPED)) == [0]
    assert list(find_all("한국\n   어", "한국어", WRAPPED)) == [0]
    assert list(find_all("条，\n  超时", "条，超时", WRAPPED)) == [0]
    assert list(find_all("中\n\n文", "中文", WRAPPED)) == []
    assert list(find_all("中\r\n\r\n文", "中文", WRAPPED)) == []
    assert list(find_all("中 文", "中文", WRAPPED)) == []  # white space without a break is not a wrap


def test_a_hyphenated_english_word_matches_across_the_line_break():
    """Issue 17 item 4: exam-\\n  ple matches example; the span covers the hyphen, the break and the indentation."""
    text = "for exam-\n   ple, this"
    assert list(find_all(text, "example")) == []
    assert list(find_spans(text, "example", WRAPPED)) == [(4, 16)]
    for hyphen in ("\u00ad", "\u2010"):
        assert list(find_spans(text.replace("-", hyphen), "example", WRAPPED)) == [(4, 16)]
    assert list(find_spans("exam- \r\n ple", "example", WRAPPED)) == [(0, 12)]


def test_a_latin_word_broken_without_a_hyphen_is_two_words():
    """Issue 17 item 4: exam\\nple is not example, and neither is a dash after a space (exam -\\nple)."""
    assert list(find_all("exam\nple", "example", WRAPPED)) == []
    assert list(find_all("exam\n  ple", "example", WRAPPED)) == []
    assert list(find_all("exam -\nple", "example", WRAPPED)) == []
    assert list(find_all("exam-ple", "example", WRAPPED)) == []  # a hyphen needs the line break too


def test_a_term_with_its_own_hyphen_matches_when_the_line_breaks_after_that_hyphen():
    """Issue 17 item 4: command-line matches command-\\n  line (the hyphen is the term's, kept at the line end)."""
    text = "the command-\n    line options"
    assert list(find_spans(text, "command-line", WRAPPED)) == [(4, 21)]
    assert list(find_spans(text, "commandline", WRAPPED)) == [(4, 21)]  # also a hyphenated "commandline"
    assert list(find_all("command-\nline", "command--line", WRAPPED)) == []
    assert list(find_all("x -\nline", "x-line", WRAPPED)) == []  # no letter before the hyphen: literal only


def test_no_wrap_between_a_cjk_and_a_latin_character_or_around_digits():
    """Issue 17 item 4: the rule applies inside a CJK run and between Latin letters only."""
    assert list(find_all("使用\nls命令", "使用ls命令", WRAPPED)) == []
    assert list(find_all("200\n条", "200条", WRAPPED)) == []
    assert list(find_all("20-\n0", "200", WRAPPED)) == []


def test_overlapping_wrapped_matches_are_every_start():
    """Issue 17 item 4: as find_all, every start offset where a match begins."""
    assert list(find_spans("中中\n中中", "中中", WRAPPED)) == [(0, 2), (1, 4), (3, 5)]


def test_the_character_classes_cover_the_documented_ranges():
    """Issue 17 item 4: CJK = Han, kana, hangul, bopomofo, CJK punctuation and fullwidth forms; Latin letters."""
    for ch in "中㐀\U00020000\U00030000豈あアｱ한ᄀㄱㄅ、。「」〜，：（ｅ\u2e80\u31c0\ufe30":
        assert is_cjk(ch), hex(ord(ch))
    for ch in " \t\u3000\n-a1.\u00d7😀":
        assert not is_cjk(ch), hex(ord(ch))
    for ch in "azAZéÀßøÿĀžǿȳḀỹ":
        assert is_latin_letter(ch), hex(ord(ch))
    for ch in "1-\u00ad\u00d7\u00f7\u0301ｅ中αд _":
        assert not is_latin_letter(ch), hex(ord(ch))


def test_a_pathological_text_does_not_backtrack_catastrophically():
    """Issue 17 item 4: long runs of white space and near misses stay linear (this would hang otherwise)."""
    text = ("中" + " " * 5000 + "\n" + " " * 5000) * 20 + "中文"
    term = "中" * 30 + "文"
    assert list(find_all(text, term, WRAPPED)) == []
    text = ("a-" + " " * 3000 + "\n" + "\t" * 3000) * 30
    assert list(find_all(text, "a" * 40, WRAPPED)) == [] and len(list(find_all(text, "aa", WRAPPED))) == 29


def test_the_option_is_off_by_default_and_turns_the_reply_structured():
    """Issue 17 item 4: literal by default; wrapped says how it matched, like NFC does."""
    assert LocateOptions().wrapped is False and LocateOptions().structured is False
    assert WRAPPED.structured is True
    text = "批处\n  理"
    assert locate([("d", text)], "批处理") == []
    assert locate([("d", text)], "批处理", WRAPPED) == {
        "term": "批处理", "matching": "literal across line wraps", "matches": [{"doc_id": "d", "offset": 0}]}
    out = locate([("d", text)], "批处理", WRAPPED_NFC)
    assert out["matching"] == "literal across line wraps after NFC" and out["matches"] == [{"doc_id": "d", "offset": 0}]
    with pytest.raises(TypeError):
        list(find_all(text, "批处理", True))  # first_only is keyword-only: a bool is not options


def test_the_wrapped_option_rejects_a_non_boolean():
    """Issue 17 item 4: LocateOptions(wrapped=...) is a bool."""
    with pytest.raises(ValueError):
        LocateOptions(wrapped="yes")


def test_locate_tool_with_the_wrapped_option_finds_a_wrapped_term(tmp_path):
    """Issue 17 item 4: through the tools over an index, offsets index the original text."""
    docs = [Document("m1", "man", "r", "NAME\n  ls - 列出目录\n       内容\n"), Document("m2", "t", "r", "列出目录内容")]
    index = EvidenceIndex.build(docs, tmp_path / "w")
    tool = evidence_tools(index, locate_options=LocateOptions(wrapped=True, paged=True))[1]
    out = json.loads(tool.invoke({"term": "目录内容"}))
    assert out["matches"] == [{"doc_id": "m1", "offset": docs[0].text.index("目录")}, {"doc_id": "m2", "offset": 2}]
    plain = evidence_tools(index, locate_options=LocateOptions(paged=True))[1]
    assert json.loads(plain.invoke({"term": "目录内容"}))["matches"] == [{"doc_id": "m2", "offset": 2}]
