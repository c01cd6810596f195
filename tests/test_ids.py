"""evidence_lib._ids: one doc_id grammar that every issuer satisfies and the answer parser accepts (issue 3), and a
revision shown cut (``…[cut]``) is citable (issue 4).

End to end per issuer: read a document through the tools, write the answer with ``format_answer``, and check that
``parse_answer`` parses it and ``verify_citation`` / ``verify_answer`` accept it. Property tests (hypothesis): what
each issuer accepts or issues is a doc_id, and every doc_id survives a Sources line.
"""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document as LCDocument
from store.storekit import BACKENDS, pg_dsn

from evidence_lib import Document, EvidenceError, EvidenceIndex, ManualClock, Principal, evidence_tools
from evidence_lib._answers import _LINE, format_answer, parse_answer
from evidence_lib._citations import Answer, Citation, verify_answer, verify_citation
from evidence_lib._ids import DOC_ID, MAX_DOC_ID_CHARS, RESERVED, check_doc_id, escape_doc_id, is_doc_id
from evidence_lib._index import _SAFE_ID
from evidence_lib._lines import TRUNCATED, shown_revision, token
from evidence_lib._tools import run_tool_call, tool_call
from evidence_lib.audit._checker import check_history
from evidence_lib.course.readers import CarefulReader
from evidence_lib.course.tasks import run_reader
from evidence_lib.retrieval import BM25Retriever, RetrieverSource, folder_corpus, pydoc_corpus, to_evidence_document
from evidence_lib.store import MemoryStore, SQLiteStore
from evidence_lib.store._offload import ToolResults
from evidence_lib.store._workspace import _PATH, ENTRY_PATH

T0 = datetime(2026, 10, 27, 9, 0, tzinfo=UTC)
ALICE = Principal("acme", "alice")
TEXT = "退款在审批后7个工作日内原路退回。The refund limit is 500 per order."
#: Names that read fine and never verified before (issue 3): Chinese, 70 characters, the longest an index takes.
NAMES = ["退款政策", "x" * 70, "长" * MAX_DOC_ID_CHARS]
PROPS = settings(max_examples=60, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _read(tools, doc_id: str) -> dict:
    """One ``read_evidence`` page (article profile) of ``doc_id``, through a real tool call."""
    msg = run_tool_call(tools, tool_call("read_evidence", {"doc_id": doc_id, "offset": 0, "limit": 200}, "c1"))
    assert msg.status != "error", msg.content
    return json.loads(msg.content)


def _cited_and_verified(index, page: dict, principal: Principal | None = None) -> None:
    """Cite the whole page in the one answer format; it must parse back and verify."""
    quote = page["text"][:12]
    text = format_answer("The answer [1].", [(page["doc_id"], page["revision"], page["start"],
                                               page["start"] + len(quote), quote)])
    parsed = parse_answer(text)
    assert parsed.problems == (), text
    (c,) = parsed.citations
    assert (c.doc_id, c.revision, c.quote) == (page["doc_id"], page["revision"], quote)
    citation = Citation(c.doc_id, c.revision, c.start, c.end, page["sha256"], c.quote)
    assert verify_citation(index, citation, [page], principal).reason == "ok"
    assert verify_answer(index, Answer(parsed.prose, (citation,)), [page], principal).ok


# -- issue 3, end to end, one test per issuer ------------------------------------------------------------------
@pytest.mark.parametrize("doc_id", NAMES, ids=["chinese", "70-chars", "longest"])
def test_an_in_memory_index_doc_id_is_cited_and_verified(doc_id):
    index = EvidenceIndex.in_memory([Document(doc_id, "t", "r1", TEXT)])
    _cited_and_verified(index, _read(evidence_tools(index), doc_id))


def test_an_on_disk_index_doc_id_is_cited_and_verified(tmp_path):
    longest = "d" + "x" * 63  # the file-stem rule's longest
    index = EvidenceIndex.build([Document(longest, "t", "r1", TEXT)], tmp_path / "s")
    _cited_and_verified(index, _read(evidence_tools(index), longest))


@pytest.mark.parametrize("doc_id", NAMES[:2], ids=["chinese", "70-chars"])
def test_a_folder_corpus_file_name_is_cited_and_verified(tmp_path, doc_id):
    (tmp_path / f"{doc_id}.txt").write_text(TEXT, encoding="utf-8")
    index = EvidenceIndex.in_memory(folder_corpus(tmp_path))
    _cited_and_verified(index, _read(evidence_tools(index), doc_id))


@pytest.mark.parametrize("meta_id, doc_id", [("退款政策", "退款政策"), ("x" * 70, "x" * 70),
                                             ("refunds policy#v2 [draft]", "refunds%20policy%23v2%20%5Bdraft%5D")])
def test_a_retriever_doc_id_is_cited_and_verified(meta_id, doc_id):
    source = RetrieverSource(BM25Retriever(documents=[LCDocument(page_content=TEXT, metadata={"doc_id": meta_id})]))
    tools = evidence_tools(source)
    run_tool_call(tools, tool_call("search_evidence", {"query": "refund limit"}, "c0"))
    snapshot = source.history[-1][1]
    assert [e.doc_id for e in snapshot] == [doc_id]
    _cited_and_verified(snapshot, _read(tools, doc_id))


@contextmanager
def _store(kind: str, tmp_path: Path):
    """A real store of ``kind``: memory, an SQLite file, or a private schema on the PostgreSQL server."""
    if kind == "postgres":
        from evidence_lib.store._postgres import PostgresStore, scratch_schema

        with scratch_schema(pg_dsn(), "ids") as where:
            store = PostgresStore(where, ManualClock(T0))
            try:
                yield store
            finally:
                store.close()
        return
    store = MemoryStore(ManualClock(T0)) if kind == "memory" else SQLiteStore(str(tmp_path / "s.db"), ManualClock(T0))
    try:
        yield store
    finally:
        store.close()


@pytest.mark.parametrize("kind", BACKENDS)
@pytest.mark.parametrize("doc_id", NAMES, ids=["chinese", "70-chars", "longest"])
def test_a_store_doc_id_is_cited_and_verified(tmp_path, kind, doc_id):
    with _store(kind, tmp_path) as store:
        snap = store.put_snapshot("acme", "s1", "refund", [Document(doc_id, "t", "r1", TEXT)])
        _cited_and_verified(snap, _read(evidence_tools(snap), doc_id))


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_workspace_path_is_cited_and_verified(tmp_path, kind):
    with _store(kind, tmp_path) as store:
        ws = store.workspace(ALICE, "s1")
        ws.write_note("d03", TEXT)
        tools = evidence_tools(ws, ALICE)
        for path in ("notes/d03", ENTRY_PATH):
            _cited_and_verified(ws, _read(tools, path), ALICE)


@pytest.mark.parametrize("kind", BACKENDS)
def test_an_offloaded_result_handle_is_cited_and_verified(tmp_path, kind):
    with _store(kind, tmp_path) as store:
        shelf = ToolResults(store, ALICE, "s1", ttl=timedelta(hours=1))
        entry = shelf.put(TEXT * 40, tool="big_tool", call_id="call-7")
        assert re.fullmatch(r"res-[0-9a-f]{10}", entry.doc_id)
        _cited_and_verified(shelf, _read(evidence_tools(shelf, ALICE), entry.doc_id), ALICE)


# -- the grammar ----------------------------------------------------------------------------------------------------
def test_the_grammar_accepts_what_the_library_issues_and_refuses_what_breaks_a_sources_line():
    for good in ["d03", "notes/d03", "退款政策", "res-0123456789", ENTRY_PATH, "a" * MAX_DOC_ID_CHARS, "-rf", "%2e",
                 "pydoc:for", "v1.2_final-(copy)"]:
        assert is_doc_id(good) and check_doc_id(good) == good and token(good) == good, good
    bad = ["", "a" * (MAX_DOC_ID_CHARS + 1), "d 03", "d\u300003", "d\t03", "a@b", "a#b", "a[1]", "a]", 'a"b', "a'b",
           "a\\b", "d\x00", "d\x1b[31m", "d\x9b", "d\u200b", "d\u202e", "d\u2028", "d\ud800", None, 3]
    for value in bad:
        assert not is_doc_id(value), value
        with pytest.raises(EvidenceError) as info:
            check_doc_id(value)
        assert info.value.code == "invalid_arguments" and isinstance(info.value, ValueError)


@PROPS
@given(st.text(max_size=MAX_DOC_ID_CHARS + 8))
@example("d 03")
@example("长" * MAX_DOC_ID_CHARS)
def test_every_doc_id_survives_a_sources_line_and_nothing_else_parses_as_one(value):
    line = f"[1] {value}@r1 [0, 5)"
    parsed = parse_answer("x [1]\n\nSources:\n" + line)
    if is_doc_id(value):
        assert [c.doc_id for c in parsed.citations] == [value] and parsed.problems == ()
    else:
        assert all(is_doc_id(c.doc_id) for c in parsed.citations)
        assert value not in [c.doc_id for c in parsed.citations]


@PROPS
@given(st.text(max_size=200))
@example("refunds policy#v2 [draft]")
@example("a" * 300)
def test_escape_doc_id_always_gives_a_doc_id_and_keeps_one_unchanged(value):
    escaped = escape_doc_id(value)
    assert escaped == "" if value == "" else is_doc_id(escaped)
    if is_doc_id(value):
        assert escaped == value
    assert all(c not in escaped for c in RESERVED)


# -- every issuer, by property ---------------------------------------------------------------------------------------
@PROPS
@given(st.text(max_size=MAX_DOC_ID_CHARS + 4))
@example("notes/d03")
@example("长" * MAX_DOC_ID_CHARS)
@example("a@b")
def test_the_in_memory_index_takes_exactly_the_doc_ids(doc_id):
    try:
        index = EvidenceIndex.in_memory([Document(doc_id, "t", "r", "x")])
    except ValueError:
        assert not is_doc_id(doc_id)
    else:
        assert is_doc_id(doc_id) and [e.doc_id for e in index] == [doc_id]


@PROPS
@given(st.one_of(st.from_regex(_SAFE_ID, fullmatch=True), st.text(max_size=70)))
def test_every_file_stem_the_on_disk_index_takes_is_a_doc_id(tmp_path_factory, doc_id):
    try:
        EvidenceIndex.build([Document(doc_id, "t", "r", "x")], tmp_path_factory.mktemp("b") / "s")
    except ValueError:
        return
    assert is_doc_id(doc_id)


@PROPS
@given(st.text(st.characters(blacklist_characters="/\x00"), min_size=1, max_size=60))
@example("退款政策")
@example("a@b")
@example("x" * MAX_DOC_ID_CHARS)
def test_every_doc_id_a_folder_corpus_issues_is_a_doc_id(tmp_path_factory, name):
    folder = tmp_path_factory.mktemp("f")
    try:
        (folder / f"{name}.txt").write_text("x", encoding="utf-8")
    except (OSError, UnicodeEncodeError, ValueError):
        return  # a name this file system cannot hold is no file name
    try:
        docs = folder_corpus(folder)
    except ValueError as e:
        if name.startswith("."):  # a dotfile is skipped, as a shell glob skips it (issue 31): nothing is left
            assert "no .txt files" in str(e)
        else:
            assert not is_doc_id(name) and "rename it" in str(e)
    else:
        assert [d.doc_id for d in docs] == [name] and is_doc_id(name) and not name.startswith(".")


def test_the_shipped_corpora_use_doc_ids():
    from evidence_lib.course.article import article_corpus

    zh = Path(__file__).resolve().parents[1] / "evidence_lib" / "eval" / "data" / "zh_corpus"
    assert all(is_doc_id(d.doc_id) for d in [*article_corpus(), *pydoc_corpus(), *folder_corpus(zh)])


@PROPS
@given(st.text(max_size=200))
@example("refunds policy#v2")
@example("长" * 200)
def test_every_doc_id_a_retriever_issues_is_a_doc_id(meta_id):
    doc = to_evidence_document(LCDocument(page_content="some text", metadata={"doc_id": meta_id}))
    assert is_doc_id(doc.doc_id)


@PROPS
@given(st.text(min_size=1, max_size=200), st.integers(min_value=2, max_value=12))
@example("x" * 200, 11)
def test_chunks_of_one_source_get_distinct_doc_ids(meta_id, n):
    docs = [LCDocument(page_content=f"budget chunk {i}", metadata={"doc_id": meta_id}) for i in range(n)]
    snapshot = RetrieverSource(BM25Retriever(documents=docs, k=n)).snapshot("budget", None)
    ids = [e.doc_id for e in snapshot]
    assert len(ids) == n == len(set(ids)) and all(map(is_doc_id, ids))


@PROPS
@given(st.text(max_size=MAX_DOC_ID_CHARS + 4))
@example("a@b")
@example("长" * MAX_DOC_ID_CHARS)
@example("d 03")
def test_the_store_takes_exactly_the_doc_ids(doc_id):
    store = MemoryStore(ManualClock(T0))
    try:
        snap = store.put_snapshot("acme", "s", "q", [Document(doc_id, "t", "r", "x")])
    except EvidenceError:
        assert not is_doc_id(doc_id)
    else:
        assert is_doc_id(doc_id) and [e.doc_id for e in snap.visible()] == [doc_id]


@PROPS
@given(st.from_regex(_PATH, fullmatch=True))
def test_every_workspace_path_is_a_doc_id(path):
    ws = MemoryStore(ManualClock(T0)).workspace(ALICE, "s")
    entry = ws.write(path, "x")
    assert is_doc_id(entry.doc_id) and all(is_doc_id(e.doc_id) for e in ws.visible(ALICE))


@PROPS
@given(st.text(max_size=50), st.text(max_size=20))
def test_every_offloaded_result_handle_is_a_doc_id(content, call_id):
    shelf = ToolResults(MemoryStore(ManualClock(T0)), ALICE, "s")
    assert is_doc_id(shelf.put(content or "x", tool="t", call_id=call_id).doc_id)


def test_the_parser_embeds_the_one_grammar():
    assert DOC_ID.pattern in _LINE.pattern  # defined once, in evidence_lib._ids


# -- issue 4: a revision shown cut is citable -------------------------------------------------------------------------
LONG_REVISION = "release-2026-10-27-" + "9" * 60  # 79 characters: every reply shows it cut to 40


@pytest.mark.parametrize("profile", ["article", "compact"])
def test_a_citation_of_a_revision_shown_cut_passes_check_history(tmp_path, profile):
    docs = [Document("d03", "batch limits", LONG_REVISION, "单批上限为200条，超时设为30秒。" * 3)]
    run = run_reader(CarefulReader(["单批上限"]), tmp_path, docs, profile=profile)
    answer = parse_answer(run.result.answer)
    assert answer.problems == (), run.result.answer
    (c,) = answer.citations
    assert c.revision == shown_revision(LONG_REVISION) and c.revision.endswith(TRUNCATED)
    assert check_history(run.messages) == []


def test_a_citation_of_a_revision_shown_cut_verifies_against_the_full_one():
    index = EvidenceIndex.in_memory([Document("d03", "t", LONG_REVISION, TEXT)])
    page = _read(evidence_tools(index), "d03")
    assert page["revision"] == shown_revision(LONG_REVISION)
    _cited_and_verified(index, page)
    newer = LONG_REVISION[:-1] + "8"  # another revision with the same cut form, and other bytes
    assert shown_revision(newer) == page["revision"]
    other = EvidenceIndex.in_memory([Document("d03", "t", newer, TEXT + " Changed.")])
    cited = Citation("d03", page["revision"], 0, 5, page["sha256"])
    assert verify_citation(other, cited, [page]).reason == "document_changed"  # the sha256 tells them apart


@pytest.mark.parametrize("revision", ["v1 draft", 'say "hi"', "r#2", "tab\there"])
def test_a_revision_that_is_not_one_bare_field_is_written_quoted_and_parses_back(revision):
    text = format_answer("x [1]", [("d03", revision, 0, 5, "abcde")])
    (c,) = parse_answer(text).citations
    assert (c.doc_id, c.revision, c.start, c.end, c.quote) == ("d03", revision, 0, 5, "abcde")


# -- issue 31 items 14 and 15: every revision and quote survives the one answer format ------------------------------
SEPARATORS = ["\u2028", "\u2029", "\x85", "\r", "\x0b", "\x0c", "\x1c"]


@pytest.mark.parametrize("sep", SEPARATORS, ids=[f"U+{ord(c):04X}" for c in SEPARATORS])
def test_a_line_separator_in_a_quote_or_revision_is_escaped_and_parses_back(sep):
    revision, quote = f"r{sep}2", f"first{sep}second"
    text = format_answer("x [1]", [("d03", revision, 0, len(quote), quote)])
    sources = text.split("\n", 2)[2]
    assert all(line.isprintable() for line in sources.split("\n"))  # one Sources line, nothing raw
    (c,) = parse_answer(text).lines
    assert (c.doc_id, c.revision, c.start, c.end, c.quote) == ("d03", revision, 0, len(quote), quote)


def test_a_raw_line_separator_inside_a_quoted_string_does_not_split_the_sources_line():
    text = 'x [1]\n\nSources:\n[1] d03@r1 [0, 11) "first\u2028second"'
    (c,) = parse_answer(text).lines
    assert c is not None and c.quote == "first\u2028second"


@pytest.mark.parametrize("revision", ["build#c0ffee", "v2#0123456789abcdef", "#abcdef", "r1#ABCDEF"])
def test_a_revision_that_holds_a_hash_sign_is_written_quoted_and_never_read_as_a_handle(revision):
    text = format_answer("x [1]", [("d03", revision, 0, 5, "abcde")])
    (c,) = parse_answer(text).lines
    assert (c.revision, c.sha256) == (revision, None)
