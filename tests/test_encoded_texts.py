"""In-memory evidence is hashed and decoded once per bytes object (issue 33, item 3): a locate over 3,000 documents
re-hashed and re-decoded every one of them on every call. Bytes never change, so the object that was checked still
holds what was hashed; bytes replaced behind an index's back are another object and are checked again. The cache is
bounded, safe under threads, and never serves a text for an entry whose revision (sha256) is not that text's."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.documents import Document as LCDocument

from evidence_lib._documents import Document
from evidence_lib._errors import EvidenceError
from evidence_lib._index import EncodedTexts, EvidenceIndex, IndexEntry, sha256_hex
from evidence_lib.retrieval import BM25Retriever, RetrieverSource
from evidence_lib.retrieval._bm25 import _WORD, tokenize


def test_a_checked_bytes_object_is_served_without_decoding_it_again():
    cache = EncodedTexts()
    raw = "The batch limit is 200 rows.".encode()
    first = cache.verified(raw, sha256_hex(raw))
    assert first == "The batch limit is 200 rows."
    assert cache.verified(raw, sha256_hex(raw)) is first  # the text kept, not decoded again


def test_a_text_encoded_by_the_cache_counts_as_checked():
    cache = EncodedTexts()
    text = "ranked by a search, read by locate"
    raw, digest = cache.get(text)
    assert cache.verified(raw, digest) is text  # the retriever's own text object: no decoding, no copy


def test_bytes_that_do_not_hash_to_the_recorded_sha256_are_refused_and_never_decoded():
    cache = EncodedTexts()
    good = "alpha".encode()
    assert cache.verified(good, sha256_hex(good)) == "alpha"
    assert cache.verified(good, sha256_hex(b"other revision")) is None  # same object, another recorded hash
    assert cache.verified(b"\xff\xfe not utf-8", sha256_hex(good)) is None  # refused before any decode


def test_equal_bytes_in_another_object_are_hashed_again_and_give_the_same_text():
    cache = EncodedTexts()
    a = bytes(bytearray(b"same content"))
    b = bytes(bytearray(b"same content"))
    assert a is not b
    assert cache.verified(a, sha256_hex(a)) == cache.verified(b, sha256_hex(b)) == "same content"


def test_the_cache_stays_within_its_bound_and_forgets_evicted_bytes():
    cache = EncodedTexts(max_bytes=10_000)
    raws = [(str(n) * 3_000).encode() for n in range(10)]
    for raw in raws:
        assert cache.verified(raw, sha256_hex(raw)) == raw.decode()
    assert cache._size <= 10_000 and len(cache) < 10
    assert len(cache._texts) == len(cache._items)  # no identity left behind for an evicted text
    assert cache.verified(raws[0], sha256_hex(raws[0])) == raws[0].decode()  # evicted: checked again
    big = b"y" * 20_000  # larger than the bound: checked, not kept
    assert cache.verified(big, sha256_hex(big)) == big.decode() and cache._size <= 10_000


def test_threads_checking_and_encoding_at_once_get_correct_texts_within_the_bound():
    cache = EncodedTexts(max_bytes=50_000)
    texts = [f"document {n} " * (50 + n) for n in range(40)]
    encoded = [t.encode() for t in texts]
    wrong: list[str] = []

    def work(k: int) -> None:
        for round_ in range(30):
            n = (k * 7 + round_) % len(texts)
            if round_ % 2:
                raw, digest = cache.get(texts[n])
                if raw != encoded[n] or digest != sha256_hex(encoded[n]):
                    wrong.append(f"get {n}")
            elif cache.verified(encoded[n], sha256_hex(encoded[n])) != texts[n]:
                wrong.append(f"verified {n}")
            if cache.verified(encoded[n], sha256_hex(b"x")) is not None:
                wrong.append(f"accepted a wrong hash for {n}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
    assert cache._size <= 50_000 and len(cache._texts) == len(cache._items)
    assert cache._size == sum(len(r) + __import__("sys").getsizeof(t) for t, (r, _) in cache._items.items())


def test_an_entry_of_a_new_revision_is_not_served_the_old_revisions_checked_text():
    old = Document("d1", "Limits", "r1", "The limit is 100.")
    index = EvidenceIndex.in_memory([old])
    assert index.snapshot("d1").text == "The limit is 100."
    raw = index._blobs["d1"]
    new_text = "The limit is 200."
    entry = IndexEntry("d1", "Limits", "r2", len(new_text), sha256_hex(new_text), new_text[:40], bytes=len(raw))
    revised = EvidenceIndex(None, [entry], {"d1": raw}, index._encoded)  # the new revision's entry, the old bytes
    with pytest.raises(EvidenceError) as err:
        revised.snapshot("d1")
    assert err.value.code == "evidence_changed"
    fresh = EvidenceIndex(None, [entry], {"d1": new_text.encode()}, index._encoded)
    assert fresh.snapshot("d1").text == new_text


def test_a_retriever_documents_claimed_sha256_that_is_not_its_texts_is_still_refused_on_every_read():
    docs = [LCDocument(page_content="alpha limit", metadata={"doc_id": "a", "sha256": "0" * 64}),
            LCDocument(page_content="beta limit", metadata={"doc_id": "b"})]
    source = RetrieverSource(BM25Retriever(documents=docs, k=2))
    whole = source.whole(None)
    assert whole.snapshot("b").text == "beta limit"
    for _ in range(2):
        with pytest.raises(EvidenceError):
            whole.snapshot("a")


def test_every_snapshot_and_the_whole_index_of_a_source_share_its_checked_texts():
    docs = [LCDocument(page_content="The batch limit is 200 rows per call.", metadata={"doc_id": "big"})]
    source = RetrieverSource(BM25Retriever(documents=docs, k=5), corpus=docs)
    served = [index.snapshot("big").text for index in (source.snapshot("batch", None), source.snapshot("rows", None),
                                                        source.whole(None))]
    assert all(t is docs[0].page_content for t in served)  # the retriever's own text, never a decoded copy


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
