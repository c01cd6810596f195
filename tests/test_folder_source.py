"""Issue 31, items 1 and 2, below the MCP server: the tools' ``generation`` hook, :class:`FolderSource` (a stat per
call, only changed files read again, a later scan's build wins) and the bytes a :class:`RetrieverSource` shares
between snapshots, tasks and principals."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from langchain_core.documents import Document as LCDocument

from evidence_lib._access import Principal
from evidence_lib._toolkit import run_tool_call
from evidence_lib._tools import evidence_tools
from evidence_lib.retrieval import BM25Retriever, RetrieverSource
from evidence_lib.retrieval import _folder as folder_module
from evidence_lib.retrieval._folder import FolderSource
from evidence_lib.retrieval._snapshot import EncodedTexts

ALICE, BOB = Principal("acme", "alice"), Principal("acme", "bob")


def call(tools, name: str, **args) -> str:
    return run_tool_call(tools, {"name": name, "args": args, "id": "c", "type": "tool_call"}).content


class Versioned:
    """A retriever source with a ``generation`` the test turns: the core hook, without a folder."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.generation = 0
        self.use(texts)

    def use(self, texts: dict[str, str]) -> None:
        self.inner = RetrieverSource(BM25Retriever.from_texts(texts, k=5))
        self.generation += 1

    def snapshot(self, query, principal, *, ids=None):
        return self.inner.snapshot(query, principal, ids=ids)

    def whole(self, principal):
        return self.inner.whole(principal)


def test_a_changed_generation_takes_a_new_snapshot_for_the_current_query() -> None:
    source = Versioned({"a": "the batch limit is 200 rows"})
    tools = evidence_tools(source, None, profile="compact")
    assert "200 rows" in call(tools, "locate_evidence", term="batch limit", query="batch limit")
    source.use({"a": "the batch limit is 500 rows", "b": "the batch window is nightly"})
    assert "500 rows" in call(tools, "locate_evidence", term="batch limit")  # no new search: the hook re-snapshots
    assert "nightly" in call(tools, "read_evidence", doc_id="b")
    session = tools[0].session
    assert session.query == "batch limit" and {e.doc_id for e in session.last} == {"a", "b"}


def test_a_fixed_index_ignores_the_hook(tmp_path: Path) -> None:
    from evidence_lib._documents import Document
    from evidence_lib._index import EvidenceIndex

    index = EvidenceIndex.in_memory([Document("a", "A", "r1", "the batch limit is 200 rows")])
    index.generation = 1  # an offload shelf's growth counter: the handle's concern, never a new snapshot
    tools = evidence_tools(index, None, profile="compact")
    call(tools, "read_evidence", doc_id="a")
    index.generation = 2
    assert tools[0].session.index is index and "200 rows" in call(tools, "read_evidence", doc_id="a", offset=5)


def test_the_folder_source_reads_only_changed_files(tmp_path: Path, monkeypatch) -> None:
    for n in range(5):
        (tmp_path / f"d{n}.txt").write_text(f"doc {n}\nbody {n}\n", encoding="utf-8")
    monkeypatch.setattr(folder_module, "RACY_NS", 0)  # the files were just written: trust their stat here
    source = FolderSource(tmp_path)
    read: list[str] = []
    real = folder_module.file_document
    monkeypatch.setattr(folder_module, "file_document", lambda path, *a: read.append(Path(path).name) or real(path, *a))
    before = source.generation
    assert source.generation == before and read == []  # nothing changed: a stat per file, no read
    (tmp_path / "d3.txt").write_text("doc 3\nan edit that changes the size\n", encoding="utf-8")
    assert source.generation == before + 1 and read == ["d3.txt"]
    (tmp_path / "d1.txt").unlink()
    assert source.generation == before + 2 and read == ["d3.txt"] and "d1" not in source.doc_ids()


def test_a_racy_file_is_read_again_until_its_stat_can_be_trusted(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("the limit is 200\n", encoding="utf-8")
    source = FolderSource(tmp_path)
    stat = path.stat()
    path.write_text("the limit is 500\n", encoding="utf-8")  # same size, maybe the same clock tick
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # even the same mtime: ctime and the racy rule see it
    assert source.generation == 1 and "500" in source.whole(None).text("a")


def test_concurrent_checks_end_in_the_folder_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("start\n", encoding="utf-8")
    source = FolderSource(tmp_path)
    errors: list[BaseException] = []

    def check() -> None:
        try:
            for _ in range(30):
                _ = source.generation
                source.snapshot("edit", None)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=check) for _ in range(4)]
    for t in threads:
        t.start()
    for n in range(20):
        (tmp_path / "a.txt").write_text(f"edit {n}\n" * (n + 1), encoding="utf-8")
    for t in threads:
        t.join()
    _ = source.generation
    assert errors == [] and source.whole(None).text("a") == "edit 19\n" * 20


def test_one_copy_of_each_documents_bytes_serves_every_snapshot_and_principal() -> None:
    big = "The batch limit is 200 rows per call. " * 30_000
    docs = [LCDocument(page_content=big, metadata={"doc_id": "big"}),
            LCDocument(page_content="small batch", metadata={"doc_id": "small"})]
    source = RetrieverSource(BM25Retriever(documents=docs, k=5), corpus=docs)
    blobs = [s._blobs["big"] for s in (source.snapshot("batch limit", ALICE), source.snapshot("rows per call", BOB),
                                       source.whole(ALICE), source.whole(BOB))]
    assert all(b is blobs[0] for b in blobs) and blobs[0] == big.encode()


def test_the_encoded_cache_is_bounded_and_gives_every_caller_the_first_copy() -> None:
    cache = EncodedTexts(max_bytes=10_000)
    first = cache.get("x" * 3_000)[0]
    assert cache.get("x" * 3_000)[0] is first  # an equal text, another str object: the same bytes
    for n in range(10):
        cache.get(str(n) * 3_000)
    assert cache.get("x" * 3_000)[0] is not first  # evicted, least recently used first
    raw, digest = cache.get("y" * 20_000)  # larger than the bound: computed, not kept
    assert len(raw) == 20_000 and len(digest) == 64 and cache._size <= 10_000
    with pytest.raises(UnicodeEncodeError):
        cache.get("\ud800")
