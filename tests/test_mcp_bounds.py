"""Every reply an MCP client receives is bounded (issue 27): a property over documents from 0 bytes to 10 MB.

Claude Code warns on a tool result over about 10K tokens; every reply here (search, locate, read, verify, and the
refusals) stays under :data:`MAX_REPLY_TOKENS` cl100k tokens and :data:`MAX_REPLY_BYTES` UTF-8 bytes, for prose,
one-line JSON and CJK documents, the largest 10 MB.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evidence_lib._access import Principal
from evidence_lib._documents import Document
from evidence_lib._index import EvidenceIndex
from evidence_lib._measure import cl100k_tokens
from evidence_lib.integrations.mcp import build_server, fixed_source
from evidence_lib.integrations.mcp._server import MAX_CHECKS_SHOWN, MAX_REPLY_BYTES

#: Well under Claude Code's ~10K-token warning.
MAX_REPLY_TOKENS = 8_000
LOCAL = Principal("local", "local")
SIZES = (0, 1, 300, 801, 64_000, 1_000_000, 10_000_000)


def one_line_json(size: int) -> str:
    row = json.dumps({"id": 1, "limit": 200, "note": "批量上限 batch limit", "nested": {"a": [1, 2, 3]}},
                     ensure_ascii=False)
    return ("[" + ",".join([row] * (size // (len(row) + 1) + 1)) + "]")[:size]


def dense(kind: str, unit: str, size: int) -> str:
    """About ``size`` characters of ``kind`` where the test's terms match often: prose, one-line JSON, CJK."""
    if kind == "json":
        return one_line_json(size)
    base = {"prose": f"The batch limit is 200 rows. {unit} ",
            "cjk": f"单批上限为200条，超时设为30秒。{unit}"}[kind]
    return (base * (size // max(1, len(base)) + 1))[:size]


#: Text of each kind the test's terms do not match (a 10 MB document with a match every few characters makes one
#: locate take minutes: reported as a defect of EvidenceIndex.text, which decodes and hashes the whole document per
#: call; the bound is what this file checks).
FILLER = {"prose": "lorem ipsum dolor sit. ", "json": '{"k":0,"v":[1]},', "cjk": "天地玄黄宇宙洪荒。"}
DENSE_MAX = 100_000


def text_of(kind: str, unit: str, size: int) -> str:
    """``size`` characters of ``kind``; past :data:`DENSE_MAX`, filler with 300 dense characters in the middle (and
    no newline in the JSON kind either)."""
    if size <= DENSE_MAX:
        return dense(kind, unit, size)
    half = (FILLER[kind] * (size // (2 * len(FILLER[kind])) + 1))[:(size - 300) // 2]
    return (half + dense(kind, unit, 300) + half).ljust(size, FILLER[kind][0])


def replies(server, doc_ids: list[str], term: str, offset: int, limit: int, answer: str) -> list[str]:
    task = json.loads(server.dispatch(LOCAL, "start_task", {}).content[0].text)["task"]
    calls = [("search_evidence", {"query": term}), ("locate_evidence", {"term": term}),
             ("locate_evidence", {"term": term, "doc_id": doc_ids[0]}),
             ("read_evidence", {"doc_id": doc_ids[-1], "offset": offset, "limit": limit}),
             ("read_evidence", {"doc_id": doc_ids[0], "offset": 0, "limit": 800}),
             ("verify_citations", {"answer": answer}), ("read_evidence", {"doc_id": "x" * 500})]
    return [server.dispatch(LOCAL, name, {"task": task, **args}).content[0].text for name, args in calls]


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(kinds=st.lists(st.sampled_from(["prose", "json", "cjk"]), min_size=1, max_size=3),
       sizes=st.lists(st.sampled_from(SIZES), min_size=3, max_size=3),
       unit=st.text(max_size=20),
       term=st.sampled_from(["batch", "上限", "limit", "200", '"note"', "x" * 64, "a"]),
       offset=st.integers(0, 10_000_001), limit=st.integers(1, 800),
       answer=st.text(max_size=3_000))
def test_every_reply_is_bounded_for_documents_up_to_10_mb(kinds, sizes, unit, term, offset, limit, answer) -> None:
    unit = unit.replace("\x00", "").encode("utf-8", "ignore").decode("utf-8")
    docs = [Document(f"d{i}", f"d{i}", "r1", text_of(kind, unit, sizes[i])) for i, kind in enumerate(kinds)]
    server = build_server(fixed_source(EvidenceIndex.in_memory(docs)), local=LOCAL)
    for reply in replies(server, [d.doc_id for d in docs], term, offset, limit, answer):
        assert len(reply.encode("utf-8")) <= MAX_REPLY_BYTES
        assert cl100k_tokens(reply) <= MAX_REPLY_TOKENS


def test_an_answer_with_many_sources_lines_is_reported_within_the_bound() -> None:
    docs = [Document("d0", "d0", "r1", "x" * 1000)]
    server = build_server(fixed_source(EvidenceIndex.in_memory(docs)), local=LOCAL)
    answer = "claim\n\nSources:\n" + "\n".join(f'[{n}] d0@r1 [0, 5) "xxxxx"' for n in range(1, 600))[:19_000]
    (reply,) = replies(server, ["d0"], "x", 0, 10, answer)[5:6]
    body = json.loads(reply)
    assert len(body["checks"]) == MAX_CHECKS_SHOWN and body["omitted"] > 0
    assert len(reply.encode()) <= MAX_REPLY_BYTES and cl100k_tokens(reply) <= MAX_REPLY_TOKENS
