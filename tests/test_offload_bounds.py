"""What an offloaded result costs the context, whatever the tool returns; JSON sections against the parsed value."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evidence_lib import ManualClock, Principal
from evidence_lib._measure import cl100k_tokens
from evidence_lib.store import MemoryStore
from evidence_lib.store._offload import HANDLE_MAX_TOKENS, ToolResults, count_tokens_over, json_sections, offload

ALICE = Principal("acme", "alice")
T0 = datetime(2026, 12, 1, tzinfo=UTC)
MB = 1 << 20
#: What tools return: log lines, CJK prose, one giant line, JSON, control characters and bidi marks, emoji.
KINDS = ("log", "cjk", "one_line", "json", "hostile", "emoji")


def result(kind: str, size: int, seed: int) -> str:
    """About ``size`` characters of one kind of tool output (deterministic for a seed)."""
    rng = random.Random(seed)
    if kind == "log":
        unit = "".join(f"2026-11-30T12:00:{i % 60:02}Z INFO worker-{rng.randrange(9)} ok seq={i}\n" for i in range(64))
    elif kind == "cjk":
        unit = "".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(200)) + "。\n"
    elif kind == "one_line":
        unit = "".join(rng.choice("abcdefghij ") for _ in range(512))
    elif kind == "json":
        n = max(1, size // 60)
        return json.dumps({"meta": {"n": n}, "rows": [{"id": i, "name": f"item {i}", "ok": i % 3 == 0}
                                                       for i in range(n)]}, indent=1)[:max(size, 2)] if size < 60 \
            else json.dumps({"meta": {"n": n}, "rows": [{"id": i, "name": f"item {i}"} for i in range(n)]}, indent=1)
    elif kind == "hostile":
        unit = "\x1b[31mred\x1b[0m\u202eevil\u2028line\rcr\tTAB " * 8 + "\n"
    else:
        unit = "🙂🚀👍🏽 " * 40 + "\n"
    return (unit * (size // max(len(unit), 1) + 1))[:size]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(KINDS), size=st.one_of(st.integers(0, 20_000), st.integers(20_000, 10 * MB)),
       threshold=st.sampled_from([1, 50, 2_000, 20_000]), seed=st.integers(0, 3))
def test_what_the_model_sees_stays_under_the_threshold_plus_a_constant(kind, size, threshold, seed):
    text = result(kind, size, seed)
    shelf = ToolResults(MemoryStore(ManualClock(T0)), ALICE, "s1")
    shown, entry = offload(shelf, text, tool="tool", call_id="c1", threshold_tokens=threshold)
    tokens = cl100k_tokens(shown)
    assert tokens <= threshold + HANDLE_MAX_TOKENS
    if entry is None:
        assert shown == text and tokens <= threshold
    else:
        assert tokens <= HANDLE_MAX_TOKENS and shelf.text(entry.doc_id, ALICE) == text
        assert all(line.isprintable() for line in shown.split("\n"))  # no control character reaches the model


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=3_000), threshold=st.integers(1, 400))
def test_count_tokens_over_is_the_exact_count_or_none(text, threshold):
    n = cl100k_tokens(text)
    assert count_tokens_over(text, threshold) == (n if n <= threshold else None)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=8),
                    lambda kids: st.lists(kids, max_size=5) | st.dictionaries(st.text(max_size=6), kids, max_size=5),
                    max_leaves=30)


def at(value, path: list):
    for step in path:
        value = value[step]
    return value


def paths(value, depth: int, prefix=()):
    """Every (path tuple) json_sections may list, brute force: all keys, the first and last item, depth levels."""
    yield prefix
    if depth == 0:
        return
    if isinstance(value, dict):
        for k in value:
            yield from paths(value[k], depth - 1, prefix + (k,))
    elif isinstance(value, list) and value:
        for i in sorted({0, len(value) - 1}):
            yield from paths(value[i], depth - 1, prefix + (i,))


@settings(max_examples=150, deadline=None)
@given(value=JSON, indent=st.sampled_from([None, 1, 2]), pad=st.sampled_from(["", " ", "\n  "]))
def test_json_sections_name_ranges_that_parse_back_to_their_value(value, indent, pad):
    text = pad + json.dumps(value, indent=indent, ensure_ascii=False) + pad
    sections = json_sections(text, limit=10_000)
    if not isinstance(value, (dict, list)):
        assert sections == []
        return
    expected = list(paths(value, 2))
    assert len(sections) == len(expected)
    for s, path in zip(sections, expected):
        assert json.loads(text[s.start:s.end]) == at(value, list(path))


def test_json_sections_are_bounded_and_name_key_paths():
    text = json.dumps({"meta": {"page": 1}, "items": [{"id": i} for i in range(5000)], "odd key": 1}, indent=2)
    sections = json_sections(text)
    assert [s.path for s in sections] == ["$", "$.meta", "$.meta.page", "$.items", "$.items[0]", "$.items[4999]",
                                          '$["odd key"]']
    assert json_sections(text, limit=3) == sections[:3]
    assert sections[3].kind == "array" and sections[3].size == 5000
    assert json_sections("not json {") == [] and json_sections('{"a": 1} trailing') == []
    assert json_sections("[" * 100_000 + "]" * 100_000) == []  # too deep for the parser: no sections, no crash


def test_characters_no_store_can_keep_are_replaced_in_place_and_said_so():
    text = ("x\x00y\ud800z " * 2_000)
    shelf = ToolResults(MemoryStore(ManualClock(T0)), ALICE, "s1")
    shown, entry = offload(shelf, text, tool="tool", call_id="c1", threshold_tokens=50)
    stored = shelf.text(entry.doc_id, ALICE)
    assert len(stored) == len(text) and stored == text.replace("\x00", "\ufffd").replace("\ud800", "\ufffd")
    assert "4,000 characters no store can keep" in shown
    small, none = offload(shelf, "a\x00b", tool="tool", call_id="c2")
    assert (small, none) == ("a\x00b", None)  # under the threshold the result is passed on as the tool gave it


def test_a_result_over_the_store_limit_is_refused_before_anything_is_written():
    from evidence_lib._errors import EvidenceError
    from evidence_lib._index import MAX_STORED_BYTES

    store = MemoryStore(ManualClock(T0))
    shelf = ToolResults(store, ALICE, "s1")
    try:
        offload(shelf, "é" * (MAX_STORED_BYTES // 2 + 1), tool="dump", call_id="c1")
    except EvidenceError as e:
        assert e.code == "result_too_large"
    else:
        raise AssertionError("expected result_too_large")
    assert store.stats()["snapshots"] == 0 and shelf.handles == []
