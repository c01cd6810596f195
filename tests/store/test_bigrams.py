"""Issue 17 item 5: 1- and 2-character CJK terms in the store, found through CJK unigram and bigram postings.

Trigram indexes cannot serve a term under 3 characters, so a 2-character Chinese term used to check every chunk
of the snapshot. The SQL backends now also index every CJK character and every two adjacent CJK characters of
each chunk (SQLite: a postings table maintained with the chunks; PostgreSQL: a GIN index over the chunks), and
a locate of a 1- or 2-character CJK term fetches only the chunks those postings name. These tests check that the
answers are still exactly the scan's, that the postings are what a locate uses, that another tenant's postings
never change a locate's work, and that no posting outlives its chunk. Tests count work, never time.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evidence_lib import Document, EvidenceError, LocateOptions
from evidence_lib._locate import find as scan_find
from evidence_lib._locate import is_cjk
from evidence_lib.store import CHUNK_CHARS, OVERLAP_CHARS, StoreSnapshot
from evidence_lib.store._common import chunk_rows
from evidence_lib.store._sqlbase import SCHEMA_VERSION

from .storekit import auto_explain, nodes, open_spec, raw_sql, sqlite_steps, tamper

HOUR = timedelta(hours=1)
KEY = ("acme", "s-1", "q")
#: Common text: Han, CJK punctuation, ASCII, white space and line breaks.
BACKGROUND = "批处理任务日志。、ab \n"
#: Rare characters, planted: Han, katakana, hangul, bopomofo, an astral ideograph, a fullwidth quote.
RARE = "上限アカ한글ㄅ𠀀＂"
CJK_CHARS = [c for c in BACKGROUND + RARE if is_cjk(c)]
EMPTY = {"snapshots": 0, "unpublished": 0, "documents": 0, "chunks": 0, "chunk_grams": 0, "artifacts": 0,
         "ledgers": 0, "workspaces": 0, "workspace_files": 0}


def ids_and_texts(docs):
    return [d.doc_id for d in docs], [(d.doc_id, d.text) for d in docs]


def reference_grams(body: str) -> set[str]:
    """The CJK unigrams and bigrams of one chunk, by definition (independent of the store's code)."""
    uni = {c for c in body if is_cjk(c)}
    return uni | {body[i:i + 2] for i in range(len(body) - 1) if is_cjk(body[i]) and is_cjk(body[i + 1])}


def postings_of(docs) -> int:
    return sum(len(reference_grams(body)) for n, d in enumerate(docs) for _, _, body, _ in chunk_rows(n, d.text))


def planted_text(data, rng: random.Random) -> str:
    length = data.draw(st.one_of(st.integers(0, 5), st.integers(CHUNK_CHARS - 3, 3 * CHUNK_CHARS + OVERLAP_CHARS + 2)),
                       label="length")
    text = rng.choices(BACKGROUND, k=length)
    edges = [k * CHUNK_CHARS + d for k in range(1, 4) for d in (0, OVERLAP_CHARS)]
    for _ in range(data.draw(st.integers(0, 8), label="plants")):
        if not text:
            break
        at = data.draw(st.one_of(st.sampled_from(edges), st.integers(0, len(text) - 1)), label="edge")
        at = max(0, min(len(text) - 1, at + data.draw(st.integers(-2, 1), label="shift")))
        piece = data.draw(st.text(alphabet=RARE + BACKGROUND, min_size=1, max_size=3), label="piece")
        text[at: at + len(piece)] = piece
    return "".join(text)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_one_and_two_character_cjk_terms_find_exactly_what_the_scan_finds(estore, data):
    """Issue 17 item 5: over CJK texts with rare characters planted around the chunk boundaries (and in the
    overlap), every 1- and 2-character CJK term's hits through the postings are the scan's, each once."""
    rng = random.Random(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    docs = [Document(f"d{i}", "t", "r1", planted_text(data, rng))
            for i in range(data.draw(st.integers(1, 3), label="docs"))]
    snap = estore.put_snapshot(*KEY, docs, ttl=HOUR)  # the same key each example: replacements drop postings
    ids, texts = ids_and_texts(docs)
    terms = [data.draw(st.text(alphabet=CJK_CHARS, min_size=1, max_size=2), label="term") for _ in range(3)]
    edges = [k * CHUNK_CHARS + d for k in range(1, 4) for d in (0, OVERLAP_CHARS)]
    around = [t[e + d: e + d + n] for _, t in texts for e in edges for d in (-2, -1, 0) for n in (1, 2)]
    terms += sorted({p for p in around if p and all(map(is_cjk, p))})  # what lies across each boundary
    for term in terms:
        for first_only in (False, True):
            for order in (ids, ids[::-1]):
                want = list(scan_find([t for d in order for t in texts if t[0] == d], term, LocateOptions(),
                                      first_only))
                assert list(snap.find(term, order, first_only=first_only)) == want, (term, first_only)


def test_a_term_across_a_chunk_boundary_is_found_once_where_it_starts(estore):
    """Issue 17 item 5: chunk c holds text[cC : (c+1)C + OVERLAP]; a bigram starting at the last position of
    chunk 0's own part lies in chunk 0's overlap, one starting at the last overlap position in chunk 1 only."""
    c, o = CHUNK_CHARS, OVERLAP_CHARS
    text = list("a" * (2 * c + 10))
    for at in (c - 1, c + o - 1, 2 * c - 1):
        text[at: at + 2] = "上限"
    docs = [Document("edge", "edge", "r1", "".join(text)), Document("tail", "tail", "r1", "ab上")]
    snap = estore.put_snapshot(*KEY, docs)
    ids, texts = ids_and_texts(docs)
    assert [o_ for _, o_ in snap.find("上限", ids)] == [c - 1, c + o - 1, 2 * c - 1]
    assert list(snap.find("限", ids)) == [("edge", c), ("edge", c + o), ("edge", 2 * c)]
    for term in ("上限", "上", "限", "限上", "a上"):
        for first_only in (False, True):
            assert list(snap.find(term, ids, first_only=first_only)) == \
                list(scan_find(texts, term, LocateOptions(), first_only)), term


# -- the postings are what a locate uses ---------------------------------------------------------------------
SECRET = "秘密"  # held in one document of each snapshot below (or by tenant B only)
FILLER = "".join(chr(0x4E00 + (i * 7919) % 3000) for i in range(9000))  # U+4E00..U+5AB7: no 秘 (U+79D8), no 密
assert not set(SECRET) & set(FILLER)


def filler_docs(n: int, prefix: str = "f", secret_in: int | None = 0) -> list[Document]:
    return [Document(f"{prefix}{i}", "f", "r1", FILLER[:3000] + (SECRET if i == secret_in else "") + FILLER[3000:])
            for i in range(n)]


@pytest.mark.parametrize("backend", ["sqlite"])
def test_sqlite_short_cjk_locate_work_does_not_grow_with_the_chunks_lacking_the_term(estore):
    """Issue 17 item 5: the 2- and 1-character terms are looked up in the postings (the same few steps for 5 or
    200 documents, 3 chunks each, of which one holds the term); a non-CJK 2-character term keeps the fallback,
    whose work grows with every chunk it checks: the count below would see that."""
    small = estore.put_snapshot("acme", "s", "small", filler_docs(5))
    big = estore.put_snapshot("acme", "s", "big", filler_docs(200))
    for term in (SECRET, SECRET[0], SECRET[1]):
        counts = []
        for snap in (small, big):
            ids = [e.doc_id for e in snap]
            counts.append(sqlite_steps(estore, lambda: list(snap.find(term, ids))))  # noqa: B023 (called here)
            assert list(snap.find(term, ids)) == [("f0", 3000 + SECRET.index(term))]
        assert counts[1] <= counts[0] + 50, (term, counts)
    ids = [e.doc_id for e in big]
    fallback = [sqlite_steps(estore, lambda s=s: list(s.find("ab", [e.doc_id for e in s]))) for s in (small, big)]
    assert fallback[1] > fallback[0] + 200, fallback  # instr() over 600 chunks instead of 15
    assert list(big.find("ab", ids)) == []


@pytest.mark.parametrize("backend", ["postgres"])
def test_postgres_short_cjk_locate_asks_the_gram_index_for_the_chunks_holding_the_term(spec, estore):
    """Issue 17 item 5: PostgreSQL answers a 1- or 2-character CJK term with one bitmap scan of the gram index
    (snapshot and gram in its condition) that returns exactly the chunks holding the term, and no seq scan."""
    snap = estore.put_snapshot("acme", "s", "q", filler_docs(60) + filler_docs(3, prefix="g", secret_in=1))
    with raw_sql(spec) as conn:
        conn.execute("ANALYZE chunks")
    plans = auto_explain(estore)
    ids = [e.doc_id for e in snap]
    for term in (SECRET, SECRET[1]):
        plans.clear()
        assert [d for d, _ in snap.find(term, ids)] == ["f0", "g1"]
        [plan] = [p["Plan"] for p in plans if "cjk_gram_codes" in str(p)]
        scans = [n for n in nodes(plan) if "Index Name" in n or "Scan" in n["Node Type"]]
        assert [(s["Node Type"], s.get("Index Name")) for s in scans] == \
            [("Bitmap Heap Scan", None), ("Bitmap Index Scan", "chunks_snap_grams")], plan
        cond = scans[1]["Index Cond"]
        assert "snap_id" in cond and "cjk_gram_codes" in cond, cond
        assert scans[1]["Actual Rows"] == 2, "only the two chunks holding the term"


# -- tenant isolation ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["sqlite"])
def test_sqlite_short_cjk_locate_work_does_not_grow_with_another_tenants_postings(estore):
    """Issue 17 item 5: tenant B's 400 chunks holding the term add no work to tenant A's locate: the postings
    are read inside A's snapshot's chunk-id range, as the trigram index is."""
    a = estore.put_snapshot("tenant-a", "s", "q", filler_docs(5, prefix="a", secret_in=None))
    ids = [e.doc_id for e in a]
    terms = (SECRET, SECRET[0])
    alone = [sqlite_steps(estore, lambda t=t: list(a.find(t, ids))) for t in terms]
    estore.put_snapshot("tenant-b", "s", "q",
                        [Document(f"b{i}", "b", "r1", FILLER[:1000] + SECRET + FILLER[1000:2000]) for i in range(400)])
    beside = [sqlite_steps(estore, lambda t=t: list(a.find(t, ids))) for t in terms]
    for t, x, y in zip(terms, alone, beside):
        assert list(a.find(t, ids)) == []
        assert y <= x + 50, (t, x, y)


@pytest.mark.parametrize("backend", ["postgres"])
def test_postgres_short_cjk_locate_never_reads_another_tenants_postings(spec, estore):
    """Issue 17 item 5: with tenant B's 200 chunks holding the term, the gram index hands tenant A's locate none
    of them (the snapshot is part of the index condition) and nothing is rechecked."""
    a = estore.put_snapshot("tenant-a", "s", "q", filler_docs(5, prefix="a", secret_in=None))
    estore.put_snapshot("tenant-b", "s", "q",
                        [Document(f"b{i}", "b", "r1", FILLER[:1000] + SECRET + FILLER[1000:2000]) for i in range(200)])
    with raw_sql(spec) as conn:
        conn.execute("ANALYZE chunks")
    plans = auto_explain(estore)
    for term in (SECRET, SECRET[0]):
        plans.clear()
        assert list(a.find(term, [e.doc_id for e in a])) == []
        [plan] = [p["Plan"] for p in plans if "cjk_gram_codes" in str(p)]
        scans = [n for n in nodes(plan) if n["Node Type"] == "Bitmap Index Scan"]
        assert [s["Index Name"] for s in scans] == ["chunks_snap_grams"], plan
        assert scans[0]["Actual Rows"] == 0, "none of tenant B's 200 chunks holding the term"
        assert all(n.get("Rows Removed by Index Recheck", 0) == 0 for n in nodes(plan)), plan


# -- no posting outlives its chunk ---------------------------------------------------------------------------
def cjk_docs(tag: str, n: int = 3) -> list[Document]:
    return [Document(f"{tag}{i}", tag, "r1", f"{tag}{i}: " + "".join(random.Random(i).choices(RARE + BACKGROUND,
                                                                                             k=CHUNK_CHARS + 300)))
            for i in range(n)]


def expect(estore, docs: list[Document]) -> int:
    return 0 if estore.backend == "memory" else postings_of(docs)


def test_replacement_cleanup_and_delete_session_leave_no_gram_postings(estore, clock):
    """Issue 17 item 5: stats() counts the gram postings (SQLite: rows of chunk_grams; PostgreSQL: the entries of
    its gram index for the stored chunks; the memory backend keeps none); a replaced snapshot, an expired one and
    a deleted session take theirs with them."""
    old, new, other = cjk_docs("o"), cjk_docs("n"), cjk_docs("x", 2)
    estore.put_snapshot(*KEY, old, ttl=HOUR)
    estore.put_snapshot(*KEY, new, ttl=HOUR)  # replaces: the old postings go
    estore.put_snapshot("acme", "s-2", "q", other, ttl=2 * HOUR)
    assert estore.stats()["chunk_grams"] == expect(estore, new) + expect(estore, other)
    if estore.backend != "memory":
        assert expect(estore, new) > 0 and estore.index_size()["gram_index_bytes"] > 0
    clock.advance(HOUR)
    assert estore.cleanup()["snapshots"] == 1
    assert estore.stats() == {**EMPTY, "snapshots": 1, "documents": 2, "chunks": 4,
                              "chunk_grams": expect(estore, other)}
    assert estore.delete_session("acme", "s-2")["snapshots"] == 1
    assert estore.stats() == EMPTY


def test_a_write_removed_mid_write_leaves_no_gram_postings(spec, estore, clock):
    """Issue 17 item 5: cleanup on another connection removes a write whose TTL passed half-way; the batches it
    had written go with their postings, and the writer ends snapshot_expired."""
    other = estore if spec[0] == "memory" else open_spec(spec, clock)
    removed = []

    def docs():
        for i, d in enumerate(cjk_docs("w", 6)):
            if i == 3:
                clock.advance(HOUR)
                removed.append(other.cleanup()["snapshots"])
            yield d

    with pytest.raises(EvidenceError, match="snapshot_expired"):
        estore.put_snapshot(*KEY, docs(), ttl=HOUR, batch_bytes=2_000)
    assert removed == [1]
    assert estore.stats() == EMPTY
    if other is not estore:
        other.close()


def test_a_changed_chunk_still_takes_its_postings_with_it(spec, estore):
    """Issue 17 item 5: a chunk edited behind the store's back no longer holds the grams it was indexed with
    (here its first character, 鑫, found nowhere else); deleting its snapshot still removes every posting."""
    docs = [Document("t", "t", "r1", "鑫" + "上限批处理" * 1000)]
    snap = estore.put_snapshot(*KEY, docs)
    assert [d for d, _ in snap.find("鑫", ["t"])] == ["t"]
    tamper(spec, estore, snap, "t", chunk_no=0)
    with pytest.raises(EvidenceError, match="evidence_changed"):
        list(snap.find("上限", ["t"]))
    assert estore.delete_snapshot(*KEY)
    assert estore.stats() == EMPTY


# -- schema, bulk load, wrapped locate ------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_store_without_gram_postings_is_refused_and_left_as_it_was(spec, estore, clock):
    """Issue 17 item 5: the gram postings are schema version 4. A version-3 store (no postings) is refused, naming
    both versions; a store whose postings were built for other CJK ranges than this library's is refused too."""
    estore.close()
    with raw_sql(spec) as conn:
        conn.execute("UPDATE store_meta SET value = '3' WHERE key = 'schema_version'")
    with pytest.raises(RuntimeError, match=f"schema version 3 is not {SCHEMA_VERSION}: migrate it first"):
        open_spec(spec, clock)
    with raw_sql(spec) as conn:
        assert conn.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone()[0] == "3"
        conn.execute("UPDATE store_meta SET value = '4' WHERE key = 'schema_version'")
        conn.execute("UPDATE store_meta SET value = 'other' WHERE key = 'cjk_gram_ranges'")
    with pytest.raises(RuntimeError, match="CJK gram ranges"):
        open_spec(spec, clock)


@pytest.mark.parametrize("backend", ["postgres"])
def test_bulk_load_builds_the_gram_index_at_the_end_even_when_the_load_fails(spec, estore):
    """Issue 17 item 5: bulk_load drops PostgreSQL's gram index with the trigram index and builds both at the end
    (also after a failed load); answers are the same."""
    docs = cjk_docs("b")
    with estore.bulk_load():
        snap = estore.put_snapshot(*KEY, docs)
    ids, texts = ids_and_texts(docs)
    for term in ("上限", "ア", "한글", "𠀀"):
        assert list(snap.find(term, ids)) == list(scan_find(texts, term, LocateOptions(), False)), term
    assert gram_index_exists(spec)
    with pytest.raises(ValueError, match="duplicate doc_id"):
        with estore.bulk_load():
            estore.put_snapshot("acme", "s-2", "q", [docs[0], docs[0]])
    assert gram_index_exists(spec)


def gram_index_exists(spec) -> bool:
    with raw_sql(spec) as conn:
        return conn.execute("SELECT count(*) FROM pg_indexes WHERE indexname = 'chunks_snap_grams' "
                            "AND schemaname = current_schema()").fetchone()[0] == 1


def test_a_wrapped_locate_of_a_term_that_can_wrap_finds_what_the_wrapped_scan_finds(estore):
    """Issue 17 items 4 and 5: a wrapped locate whose term can wrap asks the index for the term's pieces (a CJK
    pair: its two characters) and scans the documents holding them all; a Latin word (single-letter pieces) takes
    the scan; a term that cannot wrap stays on the literal index. All answer like the wrapped scan."""
    docs = [Document("w", "w", "r1", "批处\n    理 exam-\n  ple 上\n限 200条"),
            Document("v", "v", "r1", "批处理 上限")]
    snap = estore.put_snapshot(*KEY, docs)
    ids, texts = ids_and_texts(docs)
    opts = LocateOptions(wrapped=True)
    for term in ("批处理", "上限", "example", "上", "200条", "0条", "处\n"):
        for first_only in (False, True):
            assert list(snap.find(term, ids, first_only=first_only, options=opts)) == \
                list(scan_find(texts, term, opts, first_only)), term
    assert [d for d, _ in snap.find("批处理", ids, options=opts)] == ["w", "v"]


#: Wrapped text: CJK runs broken by a line break and indentation (ASCII or ideographic spaces), hyphenated words.
WRAP_BITS = ["\n", "\n  ", " \n\t", "\u3000\n\u3000", "\r\n ", "-\n", "-\n   "]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_wrapped_locate_through_the_index_finds_exactly_what_the_wrapped_scan_finds(estore, data):
    """Issue 17 items 4 and 5, against the brute-force reference (the wrapped scan over every whole text): terms
    planted with wraps inside them, around the chunk boundaries, with indentation deeper than a chunk's overlap
    now and then. The same hits, in the same order, each once, with ``first_only`` or not."""
    rng = random.Random(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    terms = ["上限", "批处理", "上限200条", "アカ", "日志。上"]
    docs = []
    for i in range(data.draw(st.integers(1, 3), label="docs")):
        text = list(planted_text(data, rng))
        for _ in range(data.draw(st.integers(0, 4), label="wrapped plants")):
            term = data.draw(st.sampled_from(terms), label="planted")
            cut = data.draw(st.integers(1, len(term) - 1), label="cut")
            gap = data.draw(st.one_of(st.sampled_from(WRAP_BITS), st.just("\n" + " " * (OVERLAP_CHARS + 5))),
                            label="gap")
            at = data.draw(st.integers(0, len(text)), label="at")
            text[at:at] = term[:cut] + gap + term[cut:]
        docs.append(Document(f"d{i}", "t", "r1", "".join(text)))
    snap = estore.put_snapshot(*KEY, docs, ttl=HOUR)
    ids, texts = ids_and_texts(docs)
    opts = LocateOptions(wrapped=True)
    for term in terms + ["处理", "上"]:
        for first_only in (False, True):
            assert list(snap.find(term, ids, first_only=first_only, options=opts)) == \
                list(scan_find(texts, term, opts, first_only)), (term, first_only)


def test_a_wrapped_cjk_locate_reads_only_the_documents_holding_every_piece(estore, monkeypatch):
    """Issue 17 items 4 and 5: the compact profile's wrapped locate of a 2-character CJK term on a store reads
    the chunks of the documents holding both characters, not every document (as it did, through the scan)."""
    docs = [Document(f"d{i}", "t", "r1", "批处理任务日志。" * 1200) for i in range(6)]
    docs[2] = Document("d2", "t", "r1", docs[2].text + "单批上\n    限为200条")
    docs[4] = Document("d4", "t", "r1", docs[4].text + "上")  # one piece only: a candidate no index can rule out
    snap = estore.put_snapshot(*KEY, docs)
    read: list[int] = []
    real = StoreSnapshot._keep  # every chunk a snapshot fetches is verified and kept there
    monkeypatch.setattr(StoreSnapshot, "_keep", lambda self, call, rows: real(self, call, rows := list(rows))
                        or read.extend(r[0] for r in rows))
    ids = [d.doc_id for d in docs]
    hits = list(snap.find("上限", ids, options=LocateOptions(wrapped=True)))
    assert hits == [("d2", docs[2].text.index("上\n"))]
    assert set(read) == {2}  # d4 holds 上 but not 限; the others hold neither
    read.clear()
    assert list(snap.find("上限", [ids[0], ids[3]], options=LocateOptions(wrapped=True))) == []
    assert read == []
    with pytest.raises(EvidenceError, match="unknown_doc_id"):  # every id is still checked, in order
        list(snap.find("上限", [ids[0], "nope"], options=LocateOptions(wrapped=True)))
