"""Trust in the retriever adapter (issue 16, defects 1, 3, 4 and 10), through the three tools and the source."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import re
import warnings

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore

from evidence_lib import Access, Principal, evidence_tools, run_tool_call, tool_call
from evidence_lib.retrieval import AccessMetadataWarning, BM25Retriever, RetrieverSource
from evidence_lib.retrieval._snapshot import MAX_FETCH, default_access

ALICE, BOB = Principal("acme", "alice"), Principal("acme", "bob")
SALARY = "Salary of Alice: 250,000 USD\nBonus: 10%, paid in March."
KEY = b"test-key-0123456789abcdef-012345"


class ListRetriever(BaseRetriever):
    """A retriever with no k of its own: its documents in a fixed order, whatever the query."""

    docs: list[LCDocument]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun):
        return list(self.docs)


class TopK(BaseRetriever):
    """A generic top-k retriever: the first ``k`` of its list, whatever the query. ``asked`` records each k."""

    docs: list[LCDocument]
    k: int = 3
    asked: list[int] = []

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun):
        self.asked.append(self.k)
        return list(self.docs[: self.k])



def _rows(content: str) -> list:
    """A manifest's rows: the article's bare list, or its ``candidates`` when the reply carries a note (a retriever
    with no k ranks before permissions, and every manifest of it says so: issue 31)."""
    body = json.loads(content)
    return body["candidates"] if isinstance(body, dict) else body

def _call(tools, name, args, cid="c"):
    return run_tool_call(tools, tool_call(name, args, cid))


def _salary_docs() -> list[LCDocument]:
    # No title, no doc_id, no revision in the metadata: every one of them is computed.
    hr_only = Access("acme", read={"user:alice"}, discover={"*"})  # bob may know it exists, not read it
    return [LCDocument(page_content=SALARY, metadata={"access": hr_only}),
            LCDocument(page_content="Office plan: move in May.", metadata={"doc_id": "plan", "access": Access("acme")})]


def _fingerprints(text: str) -> list[str]:
    """Every 8-hex window of the text's plain sha256: what anyone could compute from a guess of the text."""
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return [sha[i:i + 8] for i in range(len(sha) - 7)]


@pytest.mark.parametrize("profile", ["article", "compact"])
def test_a_discover_only_document_is_listed_without_text_or_a_fingerprint_of_its_text(profile):
    """Issue 16 defect 1: no computed title from unreadable text; computed doc_id and revision are keyed."""
    tools = evidence_tools(RetrieverSource(ListRetriever(docs=_salary_docs()), fingerprint_key=KEY), BOB,
                           profile=profile)
    manifest = _call(tools, "search_evidence", {"query": "salary"}).content
    assert "plan" in manifest  # the readable neighbour is listed as before
    assert "Salary" not in manifest and "250,000" not in manifest and "Bonus" not in manifest
    assert not [f for f in _fingerprints(SALARY) if f in manifest], "a plain sha256 prefix lets a guess be confirmed"
    ids = re.findall(r"doc-[0-9a-f]{12}", manifest)
    assert ids, "the discover-only document is still listed, under a computed doc_id"
    keyed = hmac.new(KEY, SALARY.encode("utf-8"), hashlib.sha256).hexdigest()
    assert ids[0] == f"doc-{keyed[:12]}"  # keyed with the source's secret: deterministic for whoever holds it
    if profile == "article":
        row = next(r for r in _rows(manifest) if r["doc_id"] == ids[0])
        assert row["title"] == row["doc_id"] and row["sha256"] is None and row["preview"] is None
        assert row["revision"] == keyed[:12]
    for term, rest in (("Salary of", "250,000"), ("250,000", "Salary")):
        found = _call(tools, "locate_evidence", {"term": term}).content
        assert rest not in found and ids[0] not in found  # locate searches what bob may read only
    refused = json.loads(_call(tools, "read_evidence", {"doc_id": ids[0]}).content)
    assert refused["error"] == "unknown_doc_id"


def test_the_keyed_fingerprint_cannot_be_confirmed_without_the_key_and_a_reader_keeps_the_plain_one():
    """Issue 16 defect 1: another key gives other ids; the reader, who is shown sha256 anyway, sees the plain ones."""
    def listed(principal, key):
        tools = evidence_tools(RetrieverSource(ListRetriever(docs=_salary_docs()), fingerprint_key=key), principal)
        return _rows(_call(tools, "search_evidence", {"query": "salary"}).content)

    assert listed(BOB, KEY)[0]["doc_id"] == listed(BOB, KEY)[0]["doc_id"]  # deterministic for one key
    assert listed(BOB, KEY)[0]["doc_id"] != listed(BOB, b"another key, another fingerprint")[0]["doc_id"]
    # The default key is random per source: stable across one source's queries, unknown to everyone else.
    a = evidence_tools(RetrieverSource(ListRetriever(docs=_salary_docs())), BOB)
    b = evidence_tools(RetrieverSource(ListRetriever(docs=_salary_docs())), BOB)
    ida = _rows(_call(a, "search_evidence", {"query": "s"}).content)[0]["doc_id"]
    idb = _rows(_call(b, "search_evidence", {"query": "s"}).content)[0]["doc_id"]
    assert ida != idb and ida == _rows(_call(a, "search_evidence", {"query": "t"}).content)[0]["doc_id"]
    mine = listed(ALICE, KEY)[0]  # alice may read it: title from its first line, revision from its sha256
    assert mine["title"] == "Salary of Alice: 250,000 USD" and mine["revision"] == mine["sha256"][:12]
    assert mine["doc_id"] == f"doc-{mine['sha256'][:12]}"


# -- defect 3: access metadata after a JSON round trip ---------------------------------------------------------
FINANCE = Access("acme", read={"group:finance"}, discover={"group:finance", "user:bob"})
ROUND_TRIPS = {
    "asdict": dataclasses.asdict(FINANCE),
    "json-dict": json.loads(json.dumps({"tenant": "acme", "read": ["group:finance"],
                                        "discover": ["group:finance", "user:bob"]})),
    "json-string": json.dumps({"tenant": "acme", "read": ["group:finance"], "discover": ["group:finance", "user:bob"]}),
}


@pytest.mark.parametrize("shape", list(ROUND_TRIPS))
def test_access_metadata_as_a_mapping_or_its_json_keeps_its_grants(shape):
    """Issue 16 defect 3: a dict or JSON string in metadata["access"] made the document visible to everyone."""
    docs = [LCDocument(page_content="Payroll run: 2026-10-27.",
                       metadata={"doc_id": "pay", "access": ROUND_TRIPS[shape]}),
            LCDocument(page_content="Open teaching note.", metadata={"doc_id": "open"})]  # no access key: open

    def ids(principal):
        tools = evidence_tools(ListRetriever(docs=docs), principal)
        return [r["doc_id"] for r in _rows(_call(tools, "search_evidence", {"query": "payroll"}).content)]

    with warnings.catch_warnings():
        warnings.simplefilter("error", AccessMetadataWarning)  # a documented shape is not warned about
        assert ids(Principal("acme", "mallory")) == ["open"]
        assert ids(Principal("globex", "carol", {"finance"})) == ["open"]
        assert ids(Principal("acme", "carol", {"finance"})) == ["pay", "open"]
        assert ids(BOB) == ["pay", "open"]  # may discover, not read
        assert default_access(docs[0]) == FINANCE and default_access(docs[1]) is None


MALFORMED = {
    "list": ["acme", ["*"], None],  # dataclasses.astuple's shape after JSON
    "not-json": "acme",
    "json-list": '["acme", ["*"]]',
    "json-null": "null",
    "bare-grant-string": {"tenant": "acme", "read": "*"},
    "non-string-grant": {"tenant": "acme", "read": ["*", 7]},
    "empty-tenant": {"tenant": "", "read": ["*"]},
    "tenant-not-str": {"tenant": ["acme"], "read": ["*"]},
    "unknown-key": {"tenant": "acme", "read": ["*"], "reader": ["user:alice"]},
    "no-read": {"tenant": "acme"},
    "discover-string": {"tenant": "acme", "read": ["*"], "discover": "*"},
    "number": 42,
    "true": True,
}


@pytest.mark.parametrize("shape", list(MALFORMED))
def test_malformed_access_metadata_hides_the_document_from_everyone_with_one_warning_per_source(shape):
    """Issue 16 defect 3: anything but the documented shapes failed open (visible to everyone); now it fails closed."""
    docs = [LCDocument(page_content=f"Secret {i}.", metadata={"doc_id": f"bad{i}", "access": MALFORMED[shape]})
            for i in range(3)] + [LCDocument(page_content="Open teaching note.", metadata={"doc_id": "open"})]
    source = RetrieverSource(ListRetriever(docs=docs))
    for principal in (ALICE, BOB, Principal("globex", "x"), Principal("", "nobody")):
        tools = evidence_tools(source, principal)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rows = _rows(_call(tools, "search_evidence", {"query": f"secret {principal.user}"}).content)
            assert _call(tools, "read_evidence", {"doc_id": "bad0"}).status == "error"
        assert [r["doc_id"] for r in rows] == ["open"]
        warned = [w for w in caught if issubclass(w.category, AccessMetadataWarning)]
        assert len(warned) == (1 if principal is ALICE else 0), "one warning per source, not one per document"
        if warned:
            assert "'bad0'" in str(warned[0].message) and "hidden from everyone" in str(warned[0].message)


# -- defect 4: hidden documents do not take a generic retriever's top-k slots -------------------------------------
def _mixed(hidden: int, shown: int) -> list[LCDocument]:
    return ([LCDocument(page_content=f"hidden {i}", metadata={"doc_id": f"h{i}", "access": Access("globex")})
             for i in range(hidden)]
            + [LCDocument(page_content=f"shown {i}", metadata={"doc_id": f"v{i}", "access": Access("acme")})
               for i in range(shown)])


def test_a_generic_top_k_retriever_over_fetches_until_k_visible_documents():
    """Issue 16 defect 4: 10 hidden documents took all 3 top-k slots, so alice saw none of the 5 she may see."""
    retriever = TopK(docs=_mixed(10, 5), k=3, asked=[])
    source = RetrieverSource(retriever)
    rows = _rows(_call(evidence_tools(source, ALICE), "search_evidence", {"query": "q"}).content)
    assert [r["doc_id"] for r in rows] == ["v0", "v1", "v2"]
    assert retriever.asked == [3, 6, 12, 24][:len(retriever.asked)] and retriever.k == 3  # copies, doubling
    snap = source.history[-1][1]
    assert (snap.requested, snap.unfilled, snap.prefiltered) == (3, 0, False)


def test_over_fetching_stops_when_the_retriever_is_exhausted_or_at_the_cap_and_says_only_how_many_slots_are_empty():
    """Issue 16 defect 4: the snapshot records unfilled slots, a number that never depends on the hidden count."""
    few = RetrieverSource(TopK(docs=_mixed(10, 2), k=3, asked=[]))
    few.snapshot("q", ALICE)
    assert [e.doc_id for e in few.history[-1][1]] == ["v0", "v1"] and few.history[-1][1].unfilled == 1
    assert few.retriever.asked == [3, 6, 12, 24]  # 24 asked, 12 returned: exhausted
    for hidden in (40, 400):  # issue 31: over-fetched until the page is full, not to a multiple of k
        deep = RetrieverSource(TopK(docs=_mixed(hidden, 1), k=3, asked=[]))
        snap = deep.snapshot("q", ALICE)
        assert [e.doc_id for e in snap] == ["v0"] and (snap.requested, snap.unfilled) == (3, 2)
    capped = RetrieverSource(TopK(docs=_mixed(2 * MAX_FETCH, 1), k=3, asked=[]))
    snap = capped.snapshot("q", ALICE)  # more hidden documents than MAX_FETCH outrank the one visible
    assert [e.doc_id for e in snap] == [] and max(capped.retriever.asked) == MAX_FETCH
    big = RetrieverSource(TopK(docs=_mixed(2 * MAX_FETCH, 1), k=MAX_FETCH, asked=[]))
    assert big.snapshot("q", ALICE).unfilled == MAX_FETCH and big.retriever.asked == [MAX_FETCH]  # k at the cap
    plain = RetrieverSource(ListRetriever(docs=_mixed(3, 2))).snapshot("q", ALICE)
    assert [e.doc_id for e in plain] == ["v0", "v1"] and (plain.requested, plain.unfilled) == (None, None)
    bm25 = RetrieverSource(BM25Retriever(documents=_mixed(30, 2), k=5)).snapshot("shown hidden", ALICE)
    assert [e.doc_id for e in bm25] == ["v0", "v1"]  # BM25 filters before ranking: nothing to over-fetch
    assert (bm25.requested, bm25.unfilled, bm25.prefiltered) == (5, 3, True)


def test_a_vector_store_retriever_over_fetches_through_search_kwargs_k():
    """Issue 16 defect 4: a VectorStoreRetriever's top-k slots were taken by documents alice may not see."""
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents([LCDocument(page_content="budget", metadata={"doc_id": f"h{i}", "access": Access("globex")})
                         for i in range(6)])  # the very query's text: they rank first
    store.add_documents([LCDocument(page_content=f"budget note {i}", metadata={"doc_id": f"v{i}",
                                                                                "access": Access("acme")})
                         for i in range(4)])
    retriever = store.as_retriever(search_kwargs={"k": 2})
    assert all(d.metadata["doc_id"].startswith("h") for d in retriever.invoke("budget"))  # what alice got before
    source = RetrieverSource(retriever)
    rows = _rows(_call(evidence_tools(source, ALICE), "search_evidence", {"query": "budget"}).content)
    assert len(rows) == 2 and all(r["doc_id"].startswith("v") for r in rows)
    assert retriever.search_kwargs == {"k": 2} and source.history[-1][1].unfilled == 0


# -- defect 10: a bounded history ---------------------------------------------------------------------------------
def test_retriever_source_history_keeps_only_the_newest_history_limit_snapshots():
    """Issue 16 defect 10: the history kept every query's snapshot forever."""
    docs = [LCDocument(page_content="x", metadata={"doc_id": "a"})]
    source = RetrieverSource(ListRetriever(docs=docs), history_limit=3)
    tools = evidence_tools(source)
    for i in range(10):
        _call(tools, "search_evidence", {"query": f"q{i}"})
    assert [q for q, _ in source.history] == ["q7", "q8", "q9"] and len(source.history) == 3
    assert source.history[-1][0] == "q9" and "3 snapshots" in repr(source)
    default = RetrieverSource(ListRetriever(docs=docs))
    for i in range(40):
        default.snapshot(f"q{i}", None)
    assert len(default.history) == default.history_limit == 16
    none = RetrieverSource(ListRetriever(docs=docs), history_limit=0)
    none.snapshot("q", None)
    assert list(none.history) == []
    with pytest.raises(ValueError, match="history_limit"):
        RetrieverSource(ListRetriever(docs=docs), history_limit=-1)
