"""One tool call reads, hashes and decodes each document once (issue 27's hostile-client review).

A compact locate cuts an excerpt window per match; before, each window re-read and re-hashed the whole document
(1,020 whole-document reads for one locate of a common term in a 10 MB document: minutes of CPU a single client
call could cost). The tests count reads of the stored bytes: behaviour, not time.
"""

from __future__ import annotations

import threading

from evidence_lib._documents import Document
from evidence_lib._index import EvidenceIndex
from evidence_lib._toolkit import run_tool_call, tool_call
from evidence_lib._tools import evidence_tools


class CountingBlobs(dict):
    """The in-memory index's bytes, counting how often a document's bytes are fetched."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.reads = 0
        self.lock = threading.Lock()

    def __getitem__(self, key):
        with self.lock:
            self.reads += 1
        return super().__getitem__(key)


def _index(text: str) -> tuple[EvidenceIndex, CountingBlobs]:
    index = EvidenceIndex.in_memory([Document("d1", "r1", "Limits", text)])
    index._blobs = CountingBlobs(index._blobs)
    return index, index._blobs


def _call(tools, name: str, **args):
    return run_tool_call(tools, tool_call(name, args, "c1"))


def test_a_compact_locate_reads_each_document_once_however_many_matches_it_shows():
    text = "".join(f"Line {i}: the upper limit is {i} requests.\n" for i in range(400))
    index, blobs = _index(text)
    tools = evidence_tools(index, profile="compact")
    msg = _call(tools, "locate_evidence", term="limit")
    assert msg.status == "success" and "limit" in msg.content
    assert blobs.reads == 1


def test_the_next_call_verifies_the_document_again():
    index, blobs = _index("alpha beta alpha beta\n" * 50)
    tools = evidence_tools(index, profile="compact")
    _call(tools, "locate_evidence", term="alpha")
    _call(tools, "locate_evidence", term="beta")
    assert blobs.reads == 2  # one per call: a changed document is still caught on the next call


def test_a_changed_document_is_refused_inside_one_call_as_before():
    index, blobs = _index("alpha beta\n" * 20)
    blobs["d1"] = b"tampered"
    tools = evidence_tools(index, profile="compact")
    msg = _call(tools, "locate_evidence", term="alpha")
    assert msg.status == "error" and "evidence_changed" in msg.content


def test_calls_in_two_threads_each_verify_the_document_for_themselves():
    index, blobs = _index("gamma delta\n" * 200)
    tools = evidence_tools(index, profile="compact")
    out = []
    threads = [threading.Thread(target=lambda: out.append(_call(tools, "locate_evidence", term="gamma")))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [m.status for m in out] == ["success"] * 4
    assert blobs.reads == 4
