"""EvidenceIndex: the article's on-disk layout, hashes, and doc_ids that are never paths."""

from __future__ import annotations

import hashlib

import pytest
from conftest import files_opened, refusal_code

from evidence_lib import Document, EvidenceError, EvidenceIndex, evidence_tools


def test_build_writes_each_document_to_root_doc_id_txt_with_exact_utf8_bytes(corpus, index, store):
    assert sorted(p.name for p in store.iterdir()) == [f"d{i:02}.txt" for i in range(12)]
    for d in corpus:
        path = store / f"{d.doc_id}.txt"
        assert path.read_bytes() == d.text.encode("utf-8")
        assert index.stored_file(d.doc_id) == path


def test_build_records_sha256_chars_and_preview_of_each_document(corpus, index):
    entries = {e.doc_id: e for e in index}
    assert list(entries) == [d.doc_id for d in corpus]
    for d in corpus:
        e = entries[d.doc_id]
        assert e.sha256 == hashlib.sha256(d.text.encode("utf-8")).hexdigest()
        assert e.chars == len(d.text)
        assert e.preview == d.text[:40]
        assert (e.title, e.revision) == (d.title, d.revision)


def test_build_creates_missing_root_directories(tmp_path, corpus):
    root = tmp_path / "a" / "b" / "c"
    index = EvidenceIndex.build(corpus[:1], root)
    assert (root / "d00.txt").is_file() and len(index) == 1


def test_build_preserves_crlf_and_non_bmp_text_byte_for_byte(tmp_path):
    text = "line one\r\nline two\r\n👨‍👩‍👧 e\u0301 \u200b end"
    index = EvidenceIndex.build([Document("x1", "t", "r", text)], tmp_path / "s")
    assert (tmp_path / "s" / "x1.txt").read_bytes() == text.encode("utf-8")
    assert index.snapshot("x1").text == text


@pytest.mark.parametrize(
    "bad_id",
    ["../secret", "..", ".", "/etc/passwd", "a/b", "a\\b", "", ".hidden", "d03\x00", "d03\n",
     "%2e%2e%2fsecret", "-rf", "x" * 65, "d 03", "文档"],
)
def test_build_refuses_unsafe_doc_ids(tmp_path, bad_id):
    root = tmp_path / "store"
    with pytest.raises(ValueError):
        EvidenceIndex.build([Document(bad_id, "t", "r", "text")], root)
    # nothing was written inside or next to the root
    assert list(root.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]


def test_build_refuses_duplicate_doc_ids(tmp_path):
    with pytest.raises(ValueError):
        EvidenceIndex.build([Document("a", "t", "r", "1"), Document("a", "t", "r", "2")], tmp_path / "s")


def test_snapshot_returns_text_decoded_from_the_hashed_bytes(index, d03_text):
    snap = index.snapshot("d03")
    assert snap.text == d03_text
    assert snap.entry.doc_id == "d03"


def test_snapshot_of_a_changed_file_is_refused_as_evidence_changed(index):
    index.stored_file("d03").write_text("modified", encoding="utf-8")
    with pytest.raises(EvidenceError) as info:
        index.snapshot("d03")
    assert info.value.code == "evidence_changed"


def test_unknown_doc_id_lookup_raises_unknown_doc_id(index):
    with pytest.raises(EvidenceError) as info:
        index.entry("../secret")
    assert info.value.code == "unknown_doc_id"


def test_doc_id_lookup_never_reads_files_planted_next_to_the_root(tmp_path, corpus, monkeypatch):
    root = tmp_path / "store"
    index = EvidenceIndex.build(corpus, root)
    # files a path-joining implementation would find for "../secret" and "secret"
    (tmp_path / "secret.txt").write_text("PLANTED-OUTSIDE", encoding="utf-8")
    (root / "secret.txt").write_text("PLANTED-INSIDE", encoding="utf-8")
    (root / "d03.txt.txt").write_text("PLANTED-DOUBLE", encoding="utf-8")

    read = evidence_tools(index)[2]
    with files_opened() as opened:
        for doc_id in ["../secret", "secret", "../store/secret", str(tmp_path / "secret"), "d03.txt",
                       "./d03", "d03/", "D03"]:
            assert refusal_code(read, {"doc_id": doc_id}) == "unknown_doc_id"
    assert opened == []


def test_read_of_a_known_doc_id_opens_only_its_own_stored_file(index):
    with files_opened() as opened:
        evidence_tools(index)[2].invoke({"doc_id": "d05"})
    assert set(opened) == {index.stored_file("d05")}  # read_bytes opens via Path.open: both are recorded


def test_set_access_changes_visibility_without_touching_files(index, store):
    from evidence_lib import Access, Principal

    before = {p.name: p.read_bytes() for p in store.iterdir()}
    index.set_access("d00", Access("t", read={"user:nobody"}))
    assert "d00" not in [e.doc_id for e in index.visible(Principal("t", "u"))]
    assert "d01" in [e.doc_id for e in index.visible(Principal("t", "u"))]
    assert {p.name: p.read_bytes() for p in store.iterdir()} == before
