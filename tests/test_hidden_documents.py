"""What a principal sees never depends on documents they may not see (issue 7).

The same tool calls are run over a source holding only what alice may see and over the same source with hidden
documents inserted (another tenant, another group, discover-only for someone else, readable by alice's grants but
not discoverable, malformed grants; Chinese text, the same titles, doc_ids, texts and text prefixes as visible
ones, a sha256 that shares 7 hex digits with a visible one's). Every reply, every error and every ledger entry
must be byte-identical, and a hidden doc_id must be refused exactly like one that never existed.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore

from evidence_lib import Access, Budget, Document, EvidenceIndex, Ledger, Principal, evidence_tools
from evidence_lib._tools import run_tool_call, tool_call
from evidence_lib.retrieval import AccessMetadataWarning, BM25Retriever, RetrieverSource
from evidence_lib.store import MemoryStore

# The "malformed" grant below is refused on purpose (hidden from everyone); a retriever source warns about it
# once per source (AccessMetadataWarning, tested in tests/test_retrieval_trust.py): expected here, not news.
pytestmark = pytest.mark.filterwarnings("ignore::evidence_lib.retrieval._snapshot.AccessMetadataWarning")

ALICE = Principal("acme", "alice", frozenset({"eng"}))
KEY = b"issue-7-fingerprint-key-0123456789"
T0 = datetime(2026, 10, 27, 9, 0, tzinfo=UTC)
Q1, Q2 = "单批上限 limit 200", "timeout 超时"
UNKNOWN = "no-such-doc"
#: Two texts whose sha256 share their first 7 hex digits: together they need an 8-digit handle, alone 6.
COLLIDING = ("单批上限 limit 200 note 3013", "单批上限 limit 200 note 17298")

VISIBLE_TEXTS = (
    "单批上限为200条，超时设为30秒。批处理说明见下文。",
    "Batch limit is 200 rows.\nTimeout: 30 s. The limit applies per call.",
    COLLIDING[0],
    "上限 and limit: 200 per page; see section 2. 超时 30 秒。",
    "Office plan: move in May. No limit on desks, 200 chairs.",
)
HIDDEN_TEXTS = (
    COLLIDING[1],
    "globex 单批上限为500条 limit 500 secret, 超时 90 秒。",
    "单批上限为200条，超时设为30秒。批处理说明见下文。globex 附录",  # a visible text's prefix
)
VISIBLE_ACCESS: dict[str, Access | None] = {
    "open": None,
    "tenant": Access("acme"),
    "group": Access("acme", read={"group:eng"}),
    "user": Access("acme", read={"user:alice"}),
    "discover_only": Access("acme", read={"user:bob"}, discover={"*"}),
}
HIDDEN_ACCESS: dict[str, Any] = {
    "other_tenant": Access("globex"),
    "other_tenant_alice": Access("globex", read={"user:alice", "group:eng"}),
    "other_group": Access("acme", read={"group:hr"}),
    "discover_only_for_others": Access("acme", read={"user:bob"}, discover={"user:carol"}),
    "readable_not_discoverable": Access("acme", read={"user:alice"}, discover={"user:carol"}),
    "malformed": {"tenant": "acme", "read": "*"},  # fails closed: hidden from everyone (retriever sources only)
}
TITLES = (None, "Batch", "批处理说明")
REVISIONS = (None, "2026-10-27", "r2")
UNLIMITED = Budget(max_calls=None, max_chars=None, max_bytes=None, max_tokens=None, max_reads_per_doc=None,
                   max_refusals=None)
SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class ListRetriever(BaseRetriever):
    """A retriever with no k of its own: its documents in a fixed order, whatever the query."""

    docs: list[LCDocument]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun):
        return list(self.docs)


class TopK(BaseRetriever):
    """A generic top-k retriever: the first ``k`` of its list, whatever the query (over-fetched by the source)."""

    docs: list[LCDocument]
    k: int = 3

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun):
        return list(self.docs[: self.k])


# -- the cases ------------------------------------------------------------------------------------------------------
def _metadata(doc_id: str | None, title: str | None, revision: str | None, access: Any) -> dict[str, Any]:
    meta = {"doc_id": doc_id, "title": title, "revision": revision, "access": access}
    return {k: v for k, v in meta.items() if v is not None}


@st.composite
def visible_docs(draw) -> list[LCDocument]:
    """1-5 documents alice may discover; some share a doc_id (chunks of one source), some have computed ids."""
    out = []
    for i in range(draw(st.integers(1, 5))):
        text = draw(st.sampled_from(VISIBLE_TEXTS))
        text += "" if text == COLLIDING[0] else f" v{i}"  # kept whole: its sha256 prefix is a hidden one's
        doc_id = draw(st.sampled_from((None, f"d{i}", "src")))
        access = VISIBLE_ACCESS[draw(st.sampled_from(sorted(VISIBLE_ACCESS)))]
        out.append(LCDocument(page_content=text, metadata=_metadata(doc_id, draw(st.sampled_from(TITLES)),
                                                                    draw(st.sampled_from(REVISIONS)), access)))
    return out


@st.composite
def hidden_docs(draw, visible: list[LCDocument]) -> list[LCDocument]:
    """0-6 documents alice may not discover, echoing the visible ones' ids, titles, texts and sha256 prefixes."""
    out = []
    for i in range(draw(st.integers(0, 6))):
        twin = draw(st.sampled_from(visible))
        text = draw(st.sampled_from((*HIDDEN_TEXTS, twin.page_content)))
        doc_id = draw(st.sampled_from((None, f"h{i}", twin.metadata.get("doc_id"))))
        meta = _metadata(doc_id, draw(st.sampled_from((twin.metadata.get("title"), *TITLES))),
                         draw(st.sampled_from(REVISIONS)), HIDDEN_ACCESS[draw(st.sampled_from(sorted(HIDDEN_ACCESS)))])
        if draw(st.booleans()):  # a claimed sha256 sharing a visible document's first 12 hex digits
            meta["sha256"] = hashlib.sha256(twin.page_content.encode()).hexdigest()[:12] + "0" * 52
        out.append(LCDocument(page_content=text, metadata=meta))
    return out


@st.composite
def cases(draw) -> tuple[list[LCDocument], list[LCDocument]]:
    """``(visible, mixed)``: the visible documents, and the same ones in the same order with hidden ones inserted."""
    visible = draw(visible_docs())
    mixed = list(visible)
    for h in draw(hidden_docs(visible)):
        mixed.insert(draw(st.integers(0, len(mixed))), h)
    return visible, mixed


# -- sources ----------------------------------------------------------------------------------------------------------
def _retriever_source(kind: str) -> Callable[[list[LCDocument]], Any]:
    make = {"list": lambda d: ListRetriever(docs=d), "topk": lambda d: TopK(docs=d, k=3),
            "bm25": lambda d: BM25Retriever(documents=d, k=3)}[kind]
    return lambda docs: RetrieverSource(make(docs), fingerprint_key=KEY)


def _fixed(docs: list[LCDocument], tenant: str | None = None) -> list[Document]:
    """The documents a fixed index holds (a store snapshot: only ``tenant``'s); malformed grants cannot be stored."""
    kept = [d for d in docs if isinstance(d.metadata.get("access"), Access | None)
            and (tenant is None or getattr(d.metadata.get("access"), "tenant", tenant) == tenant)]
    return [Document(f"x{hashlib.sha256((d.page_content + repr(d.metadata)).encode()).hexdigest()[:10]}",
                     d.metadata.get("title") or "untitled", d.metadata.get("revision") or "r0", d.page_content,
                     d.metadata.get("access")) for d in kept]


def _unique(docs: list[Document]) -> list[Document]:
    seen: set[str] = set()
    return [d for d in docs if not (d.doc_id in seen or seen.add(d.doc_id))]


SOURCES: dict[str, Callable[[list[LCDocument]], Any]] = {
    "list": _retriever_source("list"),
    "topk": _retriever_source("topk"),
    "bm25": _retriever_source("bm25"),
    "index": lambda docs: EvidenceIndex.in_memory(_unique(_fixed(docs))),
    "store": lambda docs: MemoryStore(lambda: T0).put_snapshot("acme", "s", Q1, _unique(_fixed(docs, "acme"))),
}


# -- the calls --------------------------------------------------------------------------------------------------------
def _visible_ids(source: Any) -> list[str]:
    if isinstance(source, RetrieverSource):
        return [e.doc_id for e in source.snapshot(Q1, ALICE)]
    return [e.doc_id for e in source.visible(ALICE)]


def _calls(visible_ids: list[str], hidden_ids: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """One sequence: searches with cursors, locates over the snapshot and by doc_id, reads, hidden and unknown ids."""
    calls: list[tuple[str, dict[str, Any]]] = [("search_evidence", {"query": Q1})]
    calls += [("search_evidence", {"query": Q1, "cursor": c}) for c in (2, 4, 40)]
    calls += [("locate_evidence", {"term": t}) for t in ("上限", "limit", "200", "globex", "超时设为")]
    calls += [("locate_evidence", {"term": "上限", "cursor": 1}), ("locate_evidence", {"term": "200", "cursor": 3})]
    calls += [("locate_evidence", {"term": "200", "doc_id": d}) for d in [*visible_ids, *hidden_ids, UNKNOWN]]
    calls += [("read_evidence", {"doc_id": d, "limit": 30}) for d in [*visible_ids, *hidden_ids, UNKNOWN]]
    calls += [("read_evidence", {"doc_id": d, "offset": 5, "limit": 10}) for d in visible_ids[:2]]  # already read
    calls += [("search_evidence", {"query": Q2}), ("locate_evidence", {"term": "30"}),
              ("read_evidence", {"doc_id": UNKNOWN})]
    return calls


def _run(source: Any, profile: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[tuple[str, str]], list]:
    ledger = Ledger(UNLIMITED)
    tools = evidence_tools(source, ALICE, ledger=ledger, profile=profile, manifest_limit=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccessMetadataWarning)
        replies = [run_tool_call(tools, tool_call(name, args, f"c{i}")) for i, (name, args) in enumerate(calls)]
    return [(m.status, m.content) for m in replies], list(ledger.entries)


def _hidden_ids(visible: list[LCDocument], mixed: list[LCDocument], source: Any) -> list[str]:
    """Ids of hidden documents that no visible document has (for a fixed source: every id it holds beyond them)."""
    if isinstance(source, RetrieverSource):
        shown = {d.metadata.get("doc_id") for d in visible}
        return sorted({d.metadata["doc_id"] for d in mixed if "doc_id" in d.metadata} - shown)
    return sorted({e.doc_id for e in source} - set(_visible_ids(source)))


@pytest.mark.parametrize("profile", ["compact", "article"])
@pytest.mark.parametrize("kind", sorted(SOURCES))
@SETTINGS
@given(case=cases())
def test_every_reply_and_charge_is_the_same_with_or_without_hidden_documents(kind, profile, case):
    """Issue 7: revisions, handles and their lengths, totals, cursors, errors and charges ignore hidden documents."""
    visible, mixed = case
    make = SOURCES[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccessMetadataWarning)
        alone, together = make(visible), make(mixed)
        calls = _calls(_visible_ids(make(visible)), _hidden_ids(visible, mixed, together))
    replies_alone, charges_alone = _run(alone, profile, calls)
    replies_together, charges_together = _run(together, profile, calls)
    for call, a, b in zip(calls, replies_alone, replies_together):
        assert a == b, f"{call}: what alice sees changed with hidden documents"
    assert charges_alone == charges_together


@pytest.mark.parametrize("profile", ["compact", "article"])
@pytest.mark.parametrize("kind", sorted(SOURCES))
@SETTINGS
@given(case=cases())
def test_a_hidden_doc_id_is_refused_exactly_like_an_unknown_one(kind, profile, case):
    """Issue 7: reading or locating in a hidden document gives the very error an id never stored gives."""
    visible, mixed = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccessMetadataWarning)
        source = SOURCES[kind](mixed)
        hidden = _hidden_ids(visible, mixed, source)
    probes = [[("read_evidence", {"doc_id": d}), ("locate_evidence", {"term": "200", "doc_id": d})]
              for d in [*hidden, UNKNOWN]]
    replies = [_run(source, profile, [("search_evidence", {"query": Q1}), *p])[0][1:] for p in probes]
    assert all(r == replies[-1] for r in replies), "a hidden id is told apart from an unknown one"
    assert all(status == "error" for status, _ in replies[-1])



def _vector_store_view(hidden: int, profile: str) -> list[tuple[str, str]]:
    """Alice's replies over ``as_retriever()`` (no k given) of a store whose ``hidden`` documents rank first."""
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    grants = [Access("globex"), Access("acme", read={"group:hr"})]
    store.add_documents([LCDocument(page_content="budget", metadata={"doc_id": f"h{i}", "access": grants[i % 2]})
                         for i in range(hidden)])  # the query's very text: they rank first
    store.add_documents([LCDocument(page_content=f"budget note {i}", metadata={"doc_id": f"v{i}",
                                                                                "access": Access("acme")})
                         for i in range(6)])
    source = RetrieverSource(store.as_retriever(), fingerprint_key=KEY)
    return _run(source, profile, [("search_evidence", {"query": "budget"}), ("locate_evidence", {"term": "note"})])[0]


@pytest.mark.parametrize("profile", ["compact", "article"])
def test_hidden_documents_do_not_take_the_slots_of_a_vector_store_retriever_with_its_default_k(profile):
    """Issue 7: ``as_retriever()`` with no ``k`` in ``search_kwargs`` asks its store for 4 documents; 8 hidden ones
    ranked first took all 4 and alice saw none of her 6 (the source over-fetched only a k named in the kwargs)."""
    alone, together = _vector_store_view(0, profile), _vector_store_view(8, profile)
    assert alone == together
    assert "v0" in together[0][1] and "h0" not in together[0][1]


def test_a_document_one_may_read_but_not_discover_cannot_be_read():
    """Issue 7: read grants without discover grants let alice read (and locate in) a document her manifest never
    listed, so a fixed index told that hidden id apart from an unknown one. Reading now needs both grants."""
    grants = Access("acme", read={"user:alice"}, discover={"user:carol"})
    assert not grants.allows(ALICE, "discover") and not grants.allows(ALICE, "read")
    carol = Principal("acme", "carol")
    assert grants.allows(carol, "discover") and not grants.allows(carol, "read")
    both = Access("acme", read={"user:alice"}, discover={"group:eng"})
    assert both.allows(ALICE, "discover") and both.allows(ALICE, "read")
    assert Access("acme", read={"user:alice"}).allows(ALICE, "read")  # discover=None: readers discover


def test_a_hidden_sha256_sharing_seven_hex_digits_does_not_lengthen_a_visible_handle():
    """Issue 7: a handle is as long as the documents alice may read need, never longer because of hidden ones."""
    def read(second: Any) -> str:
        docs = [LCDocument(page_content=COLLIDING[0], metadata={"doc_id": "a", "revision": "r1"}),
                LCDocument(page_content=COLLIDING[1], metadata={"doc_id": "b", "access": second})]
        calls = [("search_evidence", {"query": Q1}), ("read_evidence", {"doc_id": "a"})]
        return re.findall(r"#[0-9a-f]+", _run(SOURCES["list"](docs), "compact", calls)[0][1][1])

    assert read(Access("acme")) == ["#409d0a1e"]  # both readable: 8 digits tell them apart
    for hidden in (Access("globex"), Access("acme", read={"group:hr"}), HIDDEN_ACCESS["readable_not_discoverable"]):
        assert read(hidden) == ["#409d0a"]


# -- issue 31 item 19: the three gaps that RetrieverSource.documents documented ---------------------------------------
class FirstThree(BaseRetriever):
    """A top-3 retriever with no k of its own to ask for more: hidden documents can take its places."""

    docs: list[LCDocument]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun):
        return list(self.docs[:3])


def _budget_docs(hidden: int) -> list[LCDocument]:
    grants = [Access("globex"), Access("acme", read={"group:hr"})]
    hide = [LCDocument(page_content="budget", metadata={"doc_id": f"h{i}", "revision": "h-rev", "access": grants[i % 2]})
            for i in range(hidden)]  # the query's very text: they rank first
    return hide + [LCDocument(page_content=f"budget note {i}", metadata={"doc_id": f"v{i}", "access": Access("acme"),
                                                                       "revision": "r1" if i % 3 else "r2"})
                   for i in range(6)]


@pytest.mark.parametrize("search_type", ["similarity", "mmr"])
@pytest.mark.parametrize("profile", ["compact", "article"])
def test_an_in_memory_vector_store_filters_before_it_ranks_so_hidden_documents_change_nothing(profile, search_type):
    """Issue 31: MMR picked its diverse k among hidden documents too; the store's own filter now drops them first."""
    def view(hidden: int) -> tuple[list[tuple[str, str]], list]:
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        store.add_documents(_budget_docs(hidden))
        source = RetrieverSource(store.as_retriever(search_type=search_type, search_kwargs={"k": 3, "fetch_k": 4}),
                                 fingerprint_key=KEY)
        return _run(source, profile, [("search_evidence", {"query": "budget"}), ("locate_evidence", {"term": "note"}),
                                      ("read_evidence", {"doc_id": "v0", "limit": 11})])

    assert view(0) == view(9)
    assert view(9)[0][0][0] == "success" and "h0" not in view(9)[0][0][1]


@pytest.mark.parametrize("hidden", [30, 200])
@pytest.mark.parametrize("profile", ["compact", "article"])
def test_a_top_k_retriever_is_over_fetched_until_the_page_is_full(profile, hidden):
    """Issue 31: past 8 x k hidden documents alice's places stayed empty and her manifest changed."""
    alone = _run(_retriever_source("topk")(_budget_docs(0)), profile, [("search_evidence", {"query": "budget"})])
    together = _run(_retriever_source("topk")(_budget_docs(hidden)), profile, [("search_evidence", {"query": "budget"})])
    assert alone == together


@pytest.mark.parametrize("profile", ["compact", "article"])
def test_a_retriever_that_can_neither_filter_nor_be_asked_for_more_says_so_in_every_manifest(profile):
    """Issue 31: such a retriever's places can go to hidden documents; the reply says so, with or without them, in
    the same words (a property of the retriever, never of what is hidden)."""
    calls = [("search_evidence", {"query": "budget"})]
    alone = _run(RetrieverSource(FirstThree(docs=_budget_docs(0)), fingerprint_key=KEY), profile, calls)[0][0][1]
    assert "ranked before permissions" in alone or "ranks before permissions" in alone
    together = _run(RetrieverSource(FirstThree(docs=_budget_docs(1)), fingerprint_key=KEY), profile, calls)[0][0][1]
    assert ("ranked before permissions" in together or "ranks before permissions" in together) and "h0" not in together
    bm25 = _run(RetrieverSource(BM25Retriever(documents=_budget_docs(1), k=3), fingerprint_key=KEY), profile, calls)
    assert "before permissions" not in bm25[0][0][1]  # filters first: nothing to warn about
