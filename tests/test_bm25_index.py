"""BM25 over an inverted index (issue 33, item 3): the same rankings as scoring every document, permissions applied
before anything is counted, each ranking computed once (the eval's recall reuses the flows'), safe under threads."""

from __future__ import annotations

import io
import json
import math
import tarfile
import threading
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.documents import Document as LCDocument

from evidence_lib import Access, Principal, evidence_tools, run_tool_call, tool_call
from evidence_lib.eval import data_path, evaluate, load_corpus
from evidence_lib.retrieval import BM25Retriever, RetrieverSource, _bm25, pydoc_corpus, recall_at_k
from evidence_lib.retrieval._bm25 import K1, B, FixedFilter, tokenize

ROOT = Path(__file__).resolve().parents[1]
KERNEL_ZH = ROOT / "bench" / "data" / "kernel_zh.tar.xz"


_REFERENCE: dict[int, tuple[list, list[Counter], list[int]]] = {}


def reference_scores(documents, query, pick=None):
    """BM25 as the series first computed it: every allowed document scored term by term (the straightforward way)."""
    if id(documents) not in _REFERENCE or _REFERENCE[id(documents)][0] is not documents:
        tf = [Counter(tokenize(d.page_content)) for d in documents]
        _REFERENCE[id(documents)] = (documents, tf, [sum(c.values()) for c in tf])
    _, tf, lengths = _REFERENCE[id(documents)]
    ids = [i for i, d in enumerate(documents) if pick is None or pick(d)]
    if not ids:
        return []
    avg = sum(lengths[i] for i in ids) / len(ids)
    terms = list(dict.fromkeys(tokenize(query)))
    df = {t: sum(1 for i in ids if t in tf[i]) for t in terms}
    n, out = len(ids), []
    for i in ids:
        score = 0.0
        for t in terms:
            f = tf[i].get(t, 0)
            if f:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                score += idf * f * (K1 + 1) / (f + K1 * (1 - B + B * lengths[i] / (avg or 1)))
        if score > 0:
            out.append((i, score))
    out.sort(key=lambda p: (-p[1], p[0]))
    return out


def _lc(docs):
    return [LCDocument(page_content=d.text, metadata={"doc_id": d.doc_id}) for d in docs]


def _queries(qa_file: Path) -> list[str]:
    data = json.loads(qa_file.read_text(encoding="utf-8"))
    items = data["items"] if isinstance(data, dict) else data
    return [q for i in items for q in (i["question"], i["locate_term"])]


def _kernel_zh() -> tuple[list[LCDocument], list[str]]:
    """The Chinese kernel pages, read from the archive in memory, and their QA set's questions and terms."""
    docs = []
    with tarfile.open(KERNEL_ZH) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if member.isfile() and member.name.endswith(".txt"):
                text = io.TextIOWrapper(tar.extractfile(member), encoding="utf-8", newline="").read()
                docs.append(LCDocument(page_content=text, metadata={"doc_id": Path(member.name).stem}))
    return docs, _queries(ROOT / "bench" / "data" / "kernel_zh_qa.json")


CORPORA = {
    "pydoc": lambda: (_lc(pydoc_corpus()), _queries(data_path("pydoc_qa.json"))),
    "zh": lambda: (_lc(load_corpus(str(data_path("zh_corpus")))[1]), _queries(data_path("zh_qa.json"))),
    "kernel_zh": _kernel_zh,
}


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_rankings_equal_scoring_every_document_on_the_repository_corpora(corpus):
    if corpus == "kernel_zh" and not KERNEL_ZH.is_file():
        pytest.skip("bench/data/kernel_zh.tar.xz is not in this checkout")
    docs, queries = CORPORA[corpus]()
    r = BM25Retriever(documents=docs, k=20)
    queries += ["", "zzzz-no-such-word", "the the the", "上限 上限", "__enter__ 单批上限为200条"]
    for q in queries:
        assert r.scores(q) == reference_scores(docs, q), q  # the same floats, the same order (ties by corpus order)
        assert [d.metadata["doc_id"] for d in r.invoke(q)] == [docs[i].metadata["doc_id"]
                                                               for i, _ in reference_scores(docs, q)[:20]]


@pytest.mark.parametrize("fixed", [False, True])
def test_filtered_rankings_equal_scoring_only_the_allowed_documents(fixed):
    docs, queries = CORPORA["pydoc"]()
    hide = {d.metadata["doc_id"] for d in docs[::3]}
    pick = lambda d: d.metadata["doc_id"] not in hide  # noqa: E731
    r = BM25Retriever(documents=docs, k=20)
    allowed = FixedFilter(pick) if fixed else pick
    for q in queries[:60]:
        got = r.scores(q, allowed)
        assert got == reference_scores(docs, q, pick), q
        assert not {docs[i].metadata["doc_id"] for i, _ in got} & hide
    assert r.scores("with statement", lambda d: False) == [] == reference_scores(docs, "with statement", lambda d: False)
    assert r.scores("with statement", lambda d: True) == r.scores("with statement")


def test_documents_a_principal_cannot_see_change_nothing_they_see():
    """Document frequencies and the average length count visible documents only: adding hidden documents (that hold
    the query's words, in any number) leaves every visible score byte for byte as in a corpus without them."""
    docs, queries = CORPORA["pydoc"]()
    secret = [LCDocument(page_content="with statement context manager yield " * k,
                          metadata={"doc_id": f"secret-{k}", "hidden": True}) for k in range(1, 40)]
    mixed = secret[:20] + docs + secret[20:]
    visible = FixedFilter(lambda d: not d.metadata.get("hidden"))
    alone, both = BM25Retriever(documents=docs), BM25Retriever(documents=mixed)
    for q in queries[:40] + ["with statement context manager"]:
        assert [(docs[i].metadata["doc_id"], s) for i, s in alone.scores(q)] == \
            [(mixed[i].metadata["doc_id"], s) for i, s in both.scores(q, visible)], q


def test_search_through_the_tools_keeps_hidden_documents_out_of_ranking_and_asks_grants_once_per_document():
    asked = Counter()
    secret, mine = Access("globex"), Access("acme")

    def grants(doc):
        asked[doc.metadata["doc_id"]] += 1
        return doc.metadata["access"]

    docs = [LCDocument(page_content=f"budget secret {i} " * 20, metadata={"doc_id": f"s{i}", "access": secret})
            for i in range(30)]
    docs += [LCDocument(page_content="budget plan", metadata={"doc_id": "open", "access": mine})]
    source = RetrieverSource(BM25Retriever(documents=docs, k=5), access=grants)
    tools = evidence_tools(source, Principal("acme", "alice"))
    for q in ("budget secret", "budget plan", "secret 7"):
        reply = run_tool_call(tools, tool_call("search_evidence", {"query": q}, "c"))
        assert "s1" not in reply.content and ("open" in reply.content) == (q != "secret 7")
    assert max(asked[f"s{i}"] for i in range(30)) <= 2  # the filter once, the whole corpus once: not once per query


def test_each_ranking_is_computed_once_and_the_eval_recall_reuses_the_flows_rankings(monkeypatch):
    """Every flow asks the retriever for the same question; the ranking is computed once, shared by copies with
    another k, and the eval's recall report (which asks again) is answered from those rankings, not scored again."""
    computed = []
    real = _bm25._rank

    def counting(postings, view, terms):
        computed.append(terms)
        return real(postings, view, terms)

    monkeypatch.setattr(_bm25, "_rank", counting)
    _, docs = load_corpus("pydoc")
    items = json.loads(data_path("pydoc_qa.json").read_text(encoding="utf-8"))["items"][:6]
    result = evaluate("pydoc", docs, items, flows=("dump_top5", "article", "no_help"))
    questions = {tuple(dict.fromkeys(tokenize(i["question"]))) for i in items}
    assert set(computed) >= questions and len(computed) == len(set(computed))  # none scored twice
    assert result["retriever"]["recall_at_k"]["20"] > 0
    before = len(computed)
    r = BM25Retriever(documents=_lc(docs))
    assert recall_at_k(r, items) == {int(k): v for k, v in result["retriever"]["recall_at_k"].items()}
    assert len(computed) == before + len(questions)  # a fresh retriever scores each question once
    recall_at_k(r, items)
    assert len(computed) == before + len(questions)  # and asked again, scores nothing


def test_the_index_is_built_once_under_concurrent_first_queries(monkeypatch):
    docs, queries = CORPORA["zh"]()
    r = BM25Retriever(documents=docs)
    built = []
    real = _bm25.Postings

    class Counting(real):
        def __init__(self, *a):
            built.append(1)
            super().__init__(*a)

    monkeypatch.setattr(_bm25, "Postings", Counting)
    got: dict[int, list] = {}
    threads = [threading.Thread(target=lambda n=n: got.__setitem__(n, r.scores(queries[n % len(queries)])))
               for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert built == [1]
    assert all(got[n] == reference_scores(docs, queries[n % len(queries)]) for n in range(8))


def test_copies_share_the_index_and_a_copy_with_other_documents_builds_its_own():
    docs, _ = CORPORA["zh"]()
    r = BM25Retriever(documents=docs, k=3)
    r.invoke("上限")
    five = r.model_copy(update={"k": 5})
    assert five._shared is r._shared and len(five.invoke("上限")) <= 5
    other = r.model_copy(update={"documents": docs[:2]})
    assert other.scores("上限") == reference_scores(docs[:2], "上限")
    deep = r.model_copy(deep=True)
    assert deep.scores("上限") == r.scores("上限")


def reference_tokenize(text):
    """The tokenizer as first written: ASCII words, then every CJK run's characters and bigrams, one scan each."""
    from evidence_lib._text import CJK_WORD_RUN
    from evidence_lib.retrieval._bm25 import _WORD

    lowered = text.lower()
    tokens = _WORD.findall(lowered)
    for run in CJK_WORD_RUN.findall(lowered):
        tokens.extend(run)
        tokens.extend(run[i:i + 2] for i in range(len(run) - 1))
    return tokens


@given(st.text(alphabet=st.sampled_from("aZ_9 .\n-’éßİK\u1100\u3000\u3042\u30a2\uac00\uff21\uff10上限单批为条，。\U00020000"
                                        "\u2e80\u4dbf\u9fff"), max_size=60))
def test_tokenize_gives_the_tokens_of_one_scan_per_script(text):
    assert tokenize(text) == reference_tokenize(text)


@pytest.mark.parametrize("corpus", ["pydoc", "zh"])
def test_tokenize_gives_the_first_tokenizers_tokens_on_the_repository_corpora(corpus):
    docs, _ = CORPORA[corpus]()
    assert all(tokenize(d.page_content) == reference_tokenize(d.page_content) for d in docs)
