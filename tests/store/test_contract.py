"""The store's contract, the same on every backend (memory, SQLite, PostgreSQL): tools, locate, reads, refusals."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evidence_lib import (
    Budget,
    Document,
    EvidenceError,
    EvidenceIndex,
    Ledger,
    LocateOptions,
    Principal,
    evidence_tools,
    run_tool_call,
    tool_call,
)
from evidence_lib._locate import find as scan_find
from evidence_lib._tools import read_page
from evidence_lib.course.article import article_corpus
from evidence_lib.store import CHUNK_CHARS, OVERLAP_CHARS, ToolResults

from .storekit import raw_sql, tamper

KEY = ("acme", "s-1", "batch limit")
HOUR = timedelta(hours=1)


def mixed_corpus() -> list[Document]:
    """Documents that cross chunk boundaries, with CJK, astral, combining and metacharacter text."""
    base = article_corpus()[:3]
    edge = "a" * (CHUNK_CHARS - 2) + "上限ab*?[x]%_\\" + "a" * 10  # matches straddling the first boundary
    long = ("批处理任务需保留执行批次和日志编号。" * 700) + "单批上限为200条" + ("🙂e\u0301" * 50)
    return [*base,
            Document("edge", "edge", "r1", edge),
            Document("long", "long", "r1", long),
            Document("tiny", "tiny", "r1", "上限"),
            Document("empty", "empty", "r1", "")]


@pytest.fixture
def corpus():
    return mixed_corpus()


@pytest.fixture
def snap(estore, corpus):
    return estore.put_snapshot(*KEY, corpus, ttl=HOUR)


TERMS = ["单批上限", "上限", "批", "a", "aa", "aaa", "ab*?[x]", "*?", "%_\\", "_", "%", "🙂e\u0301", "e\u0301🙂",
         "日志编号。批处理", "不存在的词", "200条", "x]%"]


@pytest.mark.parametrize("first_only", [True, False])
def test_indexed_find_returns_exactly_what_the_scan_returns(snap, corpus, first_only):
    ids = [d.doc_id for d in corpus]
    texts = [(d.doc_id, d.text) for d in corpus]
    for term in TERMS:
        for order in (ids, ids[::-1], ids[3:5]):
            want = list(scan_find([t for d in order for t in texts if t[0] == d], term, LocateOptions(), first_only))
            assert list(snap.find(term, order, first_only=first_only)) == want, term


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_find_matches_the_scan_for_any_substring_of_the_corpus(snap, corpus, data):
    doc = data.draw(st.sampled_from([d for d in corpus if d.text]))
    start = data.draw(st.integers(0, len(doc.text) - 1))
    term = doc.text[start: start + data.draw(st.integers(1, min(OVERLAP_CHARS + 1, 70)))]
    ids = [d.doc_id for d in corpus]
    want = list(scan_find([(d.doc_id, d.text) for d in corpus], term, LocateOptions(), False))
    assert list(snap.find(term, ids)) == want
    assert (doc.doc_id, start) in want


def test_nfc_locate_falls_back_to_the_scan(snap, corpus):
    opts = LocateOptions(normalization="NFC", paged=True)
    ids = [d.doc_id for d in corpus]
    for term in ["é", "e\u0301", "🙂é"]:
        want = list(scan_find([(d.doc_id, d.text) for d in corpus], term, opts, False))
        assert list(snap.find(term, ids, options=opts)) == want


def test_tools_over_a_store_snapshot_answer_exactly_like_the_teaching_index(estore, tmp_path):
    index = EvidenceIndex.build(article_corpus(), tmp_path / "teaching")
    snap = estore.put_snapshot(*KEY, article_corpus(), ttl=HOUR)
    calls = [("search_evidence", {"query": "批处理上限"}), ("locate_evidence", {"term": "单批上限"}),
             ("locate_evidence", {"term": "上限"}), ("read_evidence", {"doc_id": "d03", "offset": 4300, "limit": 300}),
             ("read_evidence", {"doc_id": "d03", "offset": 4300, "limit": 30}),
             ("read_evidence", {"doc_id": "d03", "offset": 10**30}), ("read_evidence", {"doc_id": "../d03"}),
             ("read_evidence", {"doc_id": "d99"}), ("read_evidence", {"doc_id": "d01", "offset": 4000, "limit": 800})]
    for paged in (False, True):
        opts = LocateOptions(paged=paged, explicit_miss=paged)
        a = evidence_tools(index, ledger=Ledger(Budget()), locate_options=opts)
        b = evidence_tools(snap, ledger=estore.ledger(*KEY[:2], f"task-{paged}", Budget()), locate_options=opts)
        for i, (name, args) in enumerate(calls):
            ma, mb = (run_tool_call(t, tool_call(name, args, f"c{i}")) for t in (a, b))
            assert (ma.status, ma.content) == (mb.status, mb.content), (name, args)


def test_pages_read_from_chunks_concatenate_back_to_the_document(snap, corpus):
    for doc in corpus:
        text, offset = [], 0
        while offset is not None:
            p = read_page(snap, doc.doc_id, offset, 800)
            text.append(p["text"])
            offset = p["next_offset"]
        assert "".join(text) == doc.text
        assert snap.text(doc.doc_id) == doc.text
    edge = read_page(snap, "edge", CHUNK_CHARS - 5, 20)["text"]
    assert edge == corpus[3].text[CHUNK_CHARS - 5: CHUNK_CHARS + 15]


def test_a_changed_chunk_is_refused_as_evidence_changed(spec, estore, snap):
    tamper(spec, estore, snap, "long", chunk_no=1)
    assert read_page(snap, "long", 0, 100)["end"] == 100  # chunk 0 is intact and still verifies
    with pytest.raises(EvidenceError) as info:
        read_page(snap, "long", CHUNK_CHARS + 10, 100)
    assert info.value.code == "evidence_changed"
    with pytest.raises(EvidenceError, match="evidence_changed"):
        snap.text("long")


def test_replacing_a_snapshot_retires_the_old_handle(estore, corpus):
    old = estore.put_snapshot(*KEY, corpus[:2], ttl=HOUR)
    new = estore.put_snapshot(*KEY, corpus[2:4], ttl=HOUR)
    with pytest.raises(EvidenceError, match="snapshot_expired"):
        old.visible()
    assert [e.doc_id for e in estore.snapshot(*KEY)] == [e.doc_id for e in new] == ["d02", "edge"]
    assert estore.delete_snapshot(*KEY) and not estore.delete_snapshot(*KEY)
    for handle in (lambda: estore.snapshot(*KEY), new.visible, lambda: read_page(new, "d02"),
                   lambda: list(new.find("批", ["d02"]))):
        with pytest.raises(EvidenceError, match="snapshot_expired"):
            handle()


def test_a_snapshot_refuses_duplicate_ids_and_another_tenants_grants_and_stores_nothing(estore):
    from evidence_lib import Access

    with pytest.raises(ValueError, match="duplicate"):
        estore.put_snapshot(*KEY, [Document("a", "a", "r", "x"), Document("a", "b", "r", "y")])
    with pytest.raises(ValueError, match="another tenant"):
        estore.put_snapshot(*KEY, [Document("a", "a", "r", "x", Access("globex"))])
    with pytest.raises(EvidenceError, match="snapshot_expired"):
        estore.snapshot(*KEY)


BAD_TEXT = ["nul\x00byte", "lone \ud800 surrogate"]


@pytest.mark.parametrize("bad", BAD_TEXT, ids=["nul", "surrogate"])
def test_nul_bytes_and_lone_surrogates_are_refused_as_invalid_text(estore, bad):
    attempts = [
        lambda: estore.put_snapshot(*KEY, [Document("a", "t", "r", bad)]),
        lambda: estore.put_snapshot(*KEY, [Document(bad, "t", "r", "x")]),
        lambda: estore.put_snapshot(*KEY, [Document("a", bad, "r", "x")]),
        lambda: estore.put_snapshot(bad, "s", "q", []),
        lambda: estore.put_snapshot("acme", "s", bad, []),
        lambda: estore.snapshot("acme", bad, "q"),
        lambda: ToolResults(estore, Principal("acme", "alice"), bad),
        lambda: estore.ledger("acme", bad, "task"),
        lambda: estore.workspace(Principal("acme", "alice"), "s").write_note("n", bad),
    ]
    for attempt in attempts:
        with pytest.raises(EvidenceError) as info:
            attempt()
        assert info.value.code == "invalid_text"
    with pytest.raises(EvidenceError, match="snapshot_expired"):
        estore.snapshot(*KEY)


def test_integers_beyond_64_bits_are_refused_as_integer_out_of_range(estore):
    # A TTL past the calendar is invalid_ttl, whether or not it fits 64 bits (issue 16 defect 6, test_trust.py).
    for attempt in [lambda: estore.ledger("acme", "s", "t1", Budget(max_chars=2**64)),
                    lambda: estore.ledger("acme", "s", "t2", Budget(max_calls=-(2**63) - 1))]:
        with pytest.raises(EvidenceError) as info:
            attempt()
        assert info.value.code == "integer_out_of_range"
    snap = estore.put_snapshot(*KEY, article_corpus()[:1])
    read = evidence_tools(snap)[2]
    msg = run_tool_call([read], tool_call("read_evidence", {"doc_id": "d00", "offset": 2**64}, "c1"))
    assert json.loads(msg.content)["error"] == "offset_exceeds_document"


def test_bulk_load_gives_the_same_answers_and_leaves_the_index_in_place(spec, estore, corpus):
    """``bulk_load`` may defer index maintenance (PostgreSQL does); what is stored and found must not change."""
    with estore.bulk_load() as same:
        assert same is estore
        snap = estore.put_snapshot(*KEY, corpus, ttl=HOUR)
    ids = [d.doc_id for d in corpus]
    texts = [(d.doc_id, d.text) for d in corpus]
    for term in TERMS:
        assert list(snap.find(term, ids)) == list(scan_find(texts, term, LocateOptions(), False)), term
    assert read_page(snap, "long", 100, 50)["text"] == corpus[4].text[100:150]
    if estore.backend == "postgres":
        assert trigram_index_exists(spec), "bulk_load must leave the trigram index built"


def test_bulk_load_rebuilds_the_index_even_when_the_load_fails(spec, estore, corpus):
    with pytest.raises(ValueError, match="duplicate doc_id"):
        with estore.bulk_load():
            estore.put_snapshot(*KEY, [corpus[0], corpus[0]], ttl=HOUR)
    with pytest.raises(EvidenceError) as err:
        estore.snapshot(*KEY)
    assert err.value.code == "snapshot_expired", "a failed load publishes nothing"
    if estore.backend == "postgres":
        assert trigram_index_exists(spec), "the index comes back after a failed bulk load too"


def trigram_index_exists(spec) -> bool:
    with raw_sql(spec) as conn:  # a second client, as another worker
        return conn.execute("SELECT count(*) FROM pg_indexes WHERE indexname = 'chunks_snap_trgm' "
                            "AND schemaname = current_schema()").fetchone()[0] == 1
