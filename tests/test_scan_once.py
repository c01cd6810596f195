"""In-memory evidence is hashed and decoded once, when its index is built (issue 33, item 3): a locate over 3,000
documents re-hashed and re-decoded every one of them on every call. A ``bytes`` object never changes, so the object the
builder hashed still holds what was hashed: a read serves the builder's text, checked by the sha256 computed then.
Bytes replaced behind an index's back are another object and are hashed again. What an index keeps for this is one
entry per document it holds (bounded by the index itself), written once when it is built and only read after (safe
under threads), and never serves a text for an entry whose revision (sha256) is not that text's."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.documents import Document as LCDocument

from evidence_lib._documents import Document
from evidence_lib._errors import EvidenceError
from evidence_lib._index import EvidenceIndex, IndexEntry, sha256_hex
from evidence_lib.retrieval import BM25Retriever, RetrieverSource
from evidence_lib.retrieval._bm25 import _WORD, tokenize

TEXT = "The batch limit is 200 rows per call.\n"


def _memory(text: str = TEXT) -> tuple[EvidenceIndex, Document]:
    doc = Document("d1", "Limits", "r1", text)
    return EvidenceIndex.in_memory([doc]), doc


def test_an_in_memory_index_serves_the_text_it_was_built_from_without_decoding_it_again():
    index, doc = _memory()
    assert index.snapshot("d1").text is doc.text
    assert index.text("d1", None, 4, 9) == "batch"


def test_every_snapshot_and_the_whole_index_of_a_source_serve_the_retrievers_own_texts():
    docs = [LCDocument(page_content=TEXT, metadata={"doc_id": "big"})]
    source = RetrieverSource(BM25Retriever(documents=docs, k=5))
    served = [index.snapshot("big").text for index in (source.snapshot("batch", None), source.snapshot("rows", None),
                                                        source.whole(None))]
    assert all(t is docs[0].page_content for t in served)  # never a decoded copy


def test_bytes_replaced_by_an_equal_copy_are_hashed_again_and_served():
    index, doc = _memory()
    index._blobs["d1"] = bytes(bytearray(TEXT.encode()))  # another object, the same content
    text = index.snapshot("d1").text
    assert text == TEXT and text is not doc.text  # decoded from the new object after its hash matched


def test_bytes_changed_behind_the_index_are_refused_on_every_read():
    index, _ = _memory()
    index._blobs["d1"] = b"\xff\xfe not even utf-8"
    for _ in range(2):
        with pytest.raises(EvidenceError) as err:
            index.snapshot("d1")
        assert err.value.code == "evidence_changed"


def test_an_entry_of_a_new_revision_is_not_served_the_old_revisions_text():
    index, doc = _memory("The limit is 100.")
    raw = index._blobs["d1"]
    new_text = "The limit is 200."
    entry = IndexEntry("d1", "Limits", "r2", len(new_text), sha256_hex(new_text), new_text[:40], bytes=len(raw))
    revised = EvidenceIndex(None, [entry], {"d1": raw}, index._decoded)  # the new revision's entry, the old bytes
    with pytest.raises(EvidenceError) as err:
        revised.snapshot("d1")
    assert err.value.code == "evidence_changed"
    fresh = EvidenceIndex(None, [entry], {"d1": new_text.encode()}, index._decoded)  # the new bytes: hashed, served
    assert fresh.snapshot("d1").text == new_text


def test_a_retriever_documents_claimed_sha256_that_is_not_its_texts_is_refused_on_every_read():
    docs = [LCDocument(page_content="alpha limit", metadata={"doc_id": "a", "sha256": "0" * 64}),
            LCDocument(page_content="beta limit", metadata={"doc_id": "b"})]
    whole = RetrieverSource(BM25Retriever(documents=docs, k=2)).whole(None)
    assert whole.snapshot("b").text == "beta limit"
    for _ in range(2):
        with pytest.raises(EvidenceError):
            whole.snapshot("a")


def test_an_index_keeps_one_record_per_document_and_threads_read_it_at_once():
    docs = [Document(f"d{n}", "t", "r1", f"document {n} " * (20 + n)) for n in range(30)]
    index = EvidenceIndex.in_memory(docs)
    assert set(index._decoded) == {d.doc_id for d in docs}  # bounded by the index: one per document, built once
    wrong: list[str] = []

    def read(k: int) -> None:
        for n in range(30):
            d = docs[(n + k) % 30]
            if index.snapshot(d.doc_id).text is not d.text:
                wrong.append(d.doc_id)

    threads = [threading.Thread(target=read, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


@given(st.text(max_size=80))
def test_tokenize_finds_the_same_words_as_the_word_pattern_on_any_text(text):
    words = [t for t in tokenize(text) if t.isascii()]
    assert words == _WORD.findall(text.lower())


# -- a whole-corpus scan searches only the documents that may hold the term (WholeIndex) ---------------------------

from evidence_lib._locate import LocateOptions, find  # noqa: E402
from evidence_lib.retrieval._snapshot import WholeIndex  # noqa: E402

WRAP_TEXTS = ["The GPIO line is\ndriven low.", "a gpio_pin and gpio2", "inter-\n   rupt handler, no literal match",
              "interrupt here", "Ünïcode cafe\u0301 – em dash", "RST title\n-----\nBody text", "批处\n  理 上限",
              "comm-\nand-\n line", "K\u212a kelvin", "", "x"]


def _whole(texts):
    docs = [LCDocument(page_content=t, metadata={"doc_id": f"d{i}"}) for i, t in enumerate(texts)]
    source = RetrieverSource(BM25Retriever(documents=docs, k=3))
    whole = source.whole(None)
    assert isinstance(whole, WholeIndex)
    return whole


_OPTIONS = [LocateOptions(), LocateOptions(wrapped=True), LocateOptions(normalization="NFC"),
            LocateOptions(wrapped=True, normalization="NFC")]


@pytest.mark.parametrize("opts", _OPTIONS)
@pytest.mark.parametrize("first_only", [False, True])
@pytest.mark.parametrize("term", ["GPIO", "gpio", "interrupt", "rupt", "inter", "command", "and", "line", "2",
                                  "_pin", "批处理", "title\n-", "cafe", "k", "K", "zzz", "e"])
def test_a_whole_index_scan_finds_exactly_what_searching_every_document_finds(term, opts, first_only):
    whole = _whole(WRAP_TEXTS)
    ids = [e.doc_id for e in whole]
    expected = list(find(((f"d{i}", t) for i, t in enumerate(WRAP_TEXTS)), term, opts, first_only))
    assert list(whole.find(term, ids, first_only=first_only, options=opts)) == expected


@given(st.lists(st.text(alphabet=st.sampled_from("ab AB-\u2010\n\t_1é"), max_size=30), min_size=1, max_size=6),
       st.text(alphabet=st.sampled_from("abAB_1-é"), min_size=1, max_size=4), st.sampled_from(_OPTIONS))
def test_a_whole_index_scan_equals_the_full_scan_on_any_texts(texts, term, opts):
    whole = _whole(texts)
    ids = [e.doc_id for e in whole]
    expected = list(find(((f"d{i}", t) for i, t in enumerate(texts)), term, opts))
    assert list(whole.find(term, ids, options=opts)) == expected


def test_a_whole_index_scan_skips_documents_without_the_word_but_still_checks_them():
    whole = _whole(WRAP_TEXTS)
    may = whole.may_hold("interrupt", LocateOptions())
    assert may is not None and [d for d in (e.doc_id for e in whole) if may(d)] == ["d3"]
    wrapped = whole.may_hold("interrupt", LocateOptions(wrapped=True))
    assert {d for d in (e.doc_id for e in whole) if wrapped(d)} == {"d2", "d3", "d7"}  # and the hyphen-wrapped
    whole._blobs["d0"] = b"tampered interrupt"  # a document the term cannot be in is still read and checked
    with pytest.raises(EvidenceError):
        list(whole.find("interrupt", [e.doc_id for e in whole]))
