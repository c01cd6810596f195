"""Property tests (hypothesis): paging is exact for any text; any doc_id is refused cleanly, never a path."""

from __future__ import annotations

import json
import unicodedata

from conftest import files_opened
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from evidence_lib import Document, EvidenceError, EvidenceIndex, evidence_tools
from evidence_lib._locate import nfc_with_map
from evidence_lib._tools import run_tool_call, tool_call

SPECIALS = [
    "\r\n", "\r", "\n", "\u200b", "\u200c", "\u200d", "\ufeff", "\u2028",
    "e\u0301", "\u0301", "\u0303\u0323", "\u1100\u1161\u11a8",
    "👍", "👍🏽", "👨‍👩‍👧", "🇨🇳", "\U0010fffd", "\x00",
    "\u09c7\u09be", "\u0f73", "\u0f75", "\u0338", "\u3099", "<",
    "批处理", "单批上限为200条，超时设为30秒。",
]

texts = st.lists(st.one_of(st.text(max_size=40), st.sampled_from(SPECIALS)), max_size=60).map("".join)

PROPERTY_SETTINGS = settings(max_examples=80, deadline=None,
                             suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _build(tmp_path_factory, text: str, doc_id: str = "doc") -> EvidenceIndex:
    root = tmp_path_factory.mktemp("prop")
    return EvidenceIndex.build([Document(doc_id, "t", "r", text)], root)


@PROPERTY_SETTINGS
@given(text=texts, limit=st.integers(min_value=1, max_value=800))
@example(text="", limit=1)
@example(text="a\r\nb", limit=1)
@example(text="👨‍👩‍👧" * 300, limit=800)
def test_following_next_offset_reassembles_any_document(tmp_path_factory, text, limit):
    index = _build(tmp_path_factory, text)
    read = evidence_tools(index)[2]
    pieces, offset, seen_offsets = [], 0, []
    while offset is not None:
        page = json.loads(read.invoke({"doc_id": "doc", "offset": offset, "limit": limit}))
        assert page["start"] == offset
        assert len(page["text"]) == page["end"] - page["start"] <= limit
        assert page["text"] == text[page["start"]:page["end"]]  # offsets index Python code points
        assert page["total_chars"] == len(text)
        assert page["next_offset"] in (None, page["end"])
        assert page["next_offset"] is not None or page["end"] == len(text)
        seen_offsets.append(offset)
        pieces.append(page["text"])
        offset = page["next_offset"]
    assert "".join(pieces) == text
    assert len(seen_offsets) == max(1, -(-len(text) // limit))


@PROPERTY_SETTINGS
@given(text=texts, offset=st.integers(min_value=0), limit=st.integers(min_value=1, max_value=800))
def test_any_in_range_page_is_the_exact_slice_and_beyond_is_refused(tmp_path_factory, text, offset, limit):
    index = _build(tmp_path_factory, text)
    read = evidence_tools(index)[2]
    if offset > len(text):
        try:
            read.invoke({"doc_id": "doc", "offset": offset, "limit": limit})
        except EvidenceError as e:
            assert e.code == "offset_exceeds_document"
        else:
            raise AssertionError("offset beyond the end was accepted")
    else:
        page = json.loads(read.invoke({"doc_id": "doc", "offset": offset, "limit": limit}))
        assert page["text"] == text[offset:offset + limit]


@PROPERTY_SETTINGS
@given(doc_id=st.one_of(
    st.text(),
    st.sampled_from(["../doc", "../secret", "/etc/passwd", "doc.txt", "doc\x00", "%2e%2e%2fdoc", "./doc",
                     "doc/", "DOC", "", " doc", "doc ", "..", "."]),
))
def test_any_doc_id_is_refused_cleanly_and_never_opens_a_file(tmp_path_factory, doc_id):
    index = _build(tmp_path_factory, "the real document", doc_id="doc")
    (index.root.parent / "secret.txt").write_text("OUTSIDE", encoding="utf-8")
    read = evidence_tools(index)[2]
    with files_opened() as opened:
        try:
            content = read.invoke({"doc_id": doc_id})
        except EvidenceError as e:
            assert e.code in {"unknown_doc_id", "invalid_arguments"}
            assert doc_id != "doc"
            msg = run_tool_call([read], tool_call("read_evidence", {"doc_id": doc_id}, "p"))
            assert msg.status == "error" and json.loads(msg.content)["error"] == e.code
            assert "OUTSIDE" not in msg.content and str(index.root) not in msg.content
        else:
            assert doc_id == "doc"
            assert json.loads(content)["text"] == "the real document"
    assert all(p == index.stored_file("doc") for p in opened)
    if doc_id != "doc":
        assert opened == []


@PROPERTY_SETTINGS
@given(doc_id=st.text(max_size=80))
def test_build_either_refuses_a_doc_id_or_writes_exactly_one_file_inside_the_root(tmp_path_factory, doc_id):
    base = tmp_path_factory.mktemp("build")
    root = base / "store"
    try:
        index = EvidenceIndex.build([Document(doc_id, "t", "r", "x")], root)
    except ValueError:
        assert not root.exists() or list(root.iterdir()) == []
    else:
        files = list(root.iterdir())
        assert files == [root / f"{doc_id}.txt"]
        assert files[0].resolve().parent == root.resolve()
        assert index.stored_file(doc_id) == files[0]
    assert sorted(p.name for p in base.iterdir()) in ([], ["store"])


@PROPERTY_SETTINGS
@given(offset=st.one_of(st.booleans(), st.floats(allow_nan=True), st.text(max_size=5), st.none(),
                        st.lists(st.integers(), max_size=2)))
def test_non_integer_offsets_are_always_invalid_arguments(tmp_path_factory, offset):
    index = _build(tmp_path_factory, "abc")
    read = evidence_tools(index)[2]
    try:
        read.invoke({"doc_id": "doc", "offset": offset})
    except EvidenceError as e:
        assert e.code == "invalid_arguments"
    else:
        raise AssertionError(f"offset {offset!r} was accepted")


@PROPERTY_SETTINGS
@given(text=texts)
def test_nfc_map_points_every_normalized_char_into_the_original_text(text):
    norm, starts, ends = nfc_with_map(text)
    assert len(starts) == len(ends) == len(norm)
    assert all(0 <= s < e <= len(text) for s, e in zip(starts, ends))
    assert starts == sorted(starts)
    assert unicodedata.is_normalized("NFC", norm)


@PROPERTY_SETTINGS
@given(text=texts)
@example(text="\u09c7\u09be")  # Bengali vowel sign O from two class-0 parts
@example(text="<\u0f73\u0338")  # mark reordered past a class-0 Tibetan vowel sign composes with "<"
@example(text="\ufb1e\u0f75\u3099")  # non-starters reordered across U+0F75
def test_nfc_map_normalizes_exactly_like_unicodedata(text):
    norm, _, _ = nfc_with_map(text)
    assert norm == unicodedata.normalize("NFC", text)
