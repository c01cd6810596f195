"""evidence_lib._spans (issue 24, "one span type for pages, reads, excerpts and citations"): one frozen ``Span`` whose
constraint (two real integers, ``0 <= start <= end``) is declared once and enforced when a span is built; the range
types of the library are ``Span`` or thin subclasses that keep their old constructors; a parser never raises on an
impossible range, it reports a problem."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import evidence_lib
from evidence_lib import Citation, EvidenceError, EvidenceIndex, Excerpt, Ledger, ReadRecord, Span, evidence_tools
from evidence_lib._answers import CitedRange, format_answer, parse_answer
from evidence_lib._citations import verify_citation
from evidence_lib._lines import shown_revision
from evidence_lib._paging import covering, covering_reads
from evidence_lib._spans import is_range
from evidence_lib._tools import run_tool_call, tool_call
from evidence_lib.course.article import article_corpus

SHA = "a" * 64
OFFSETS = st.one_of(st.integers(-5, 50), st.booleans(), st.floats(-5, 50), st.none(), st.text(max_size=2))
SMALL = st.integers(0, 40)


@given(OFFSETS, OFFSETS)
def test_a_span_exists_only_for_two_integers_with_start_at_most_end(start: Any, end: Any):
    valid = type(start) is int and type(end) is int and 0 <= start <= end
    assert is_range(start, end) is valid
    if valid:
        assert Span("d03", "r1", start, end).length == end - start
    else:
        with pytest.raises(EvidenceError) as info:
            Span("d03", "r1", start, end)
        assert info.value.code == "invalid_range"


@pytest.mark.parametrize("build", [
    lambda: ReadRecord("d03", "r1", 9, 3, SHA),
    lambda: Citation("d03", "r1", 9, 3, SHA, "quote"),
    lambda: CitedRange("d03", "r1", -1, 3),
    lambda: Citation("d03", "r1", True, 3, SHA),
    lambda: replace(Citation("d03", "r1", 0, 3, SHA), start=4),
], ids=["read", "citation", "cited_range", "bool_offset", "replace"])
def test_every_range_type_rejects_an_impossible_range_when_built(build):
    with pytest.raises(EvidenceError) as info:
        build()
    assert info.value.code == "invalid_range"


@pytest.mark.parametrize("cls", [ReadRecord, Citation, CitedRange, Excerpt])
def test_the_range_types_are_spans(cls):
    assert issubclass(cls, Span)
    assert [f for f in ("doc_id", "revision", "start", "end", "sha256")] == list(cls.__dataclass_fields__)[:5]


def test_span_is_exported_and_frozen():
    assert evidence_lib.Span is Span and "Span" in evidence_lib.__all__
    with pytest.raises(FrozenInstanceError):
        Span("d03", "r1", 0, 1).start = 2  # type: ignore[misc]


def test_read_record_keeps_its_constructor_and_requires_the_sha256():
    r = ReadRecord("d03", "2026-10-27", 4321, 4339, SHA)
    assert r == ReadRecord(doc_id="d03", revision="2026-10-27", start=4321, end=4339, sha256=SHA)
    twin = ReadRecord("d03", "2026-10-27", 4321, 4339, SHA)
    assert twin == r and hash(twin) == hash(r) and twin is not r
    assert repr(r) == f"ReadRecord(doc_id='d03', revision='2026-10-27', start=4321, end=4339, sha256='{SHA}')"
    with pytest.raises(TypeError):
        ReadRecord("d03", "2026-10-27", 4321, 4339)  # type: ignore[call-arg]


def test_citation_keeps_its_constructors_repr_and_str():
    c = Citation("break", "3.11.7", 404, 547, "#cf9259")
    assert repr(c) == "Citation(doc_id='break', revision='3.11.7', start=404, end=547, sha256='#cf9259', quote=None)"
    assert str(c) == "break@3.11.7 [404, 547)"
    assert Citation("d", "r", 0, 2, SHA, "ab") == Citation("d", "r", 0, 2, SHA, quote="ab") != c
    page = {"doc_id": "d03", "revision": "r1", "start": 10, "end": 16, "sha256": SHA, "text": "abcdef"}
    assert Citation.from_page(page) == Citation("d03", "r1", 10, 16, SHA, "abcdef")
    assert Citation.from_page(page, 11, 13) == Citation("d03", "r1", 11, 13, SHA, "bc")
    with pytest.raises(TypeError):
        Citation("d03", "r1", 0, 1)  # type: ignore[call-arg]


def test_cited_range_keeps_its_constructor_and_defaults():
    c = CitedRange("d03", "r1", 1, 4)
    assert (c.sha256, c.quote, c.n) == (None, None, 0)
    assert CitedRange("d03", "r1", 1, 4, "#abcdef", "q", n=2) == CitedRange("d03", "r1", 1, 4, "#abcdef", "q", 2)
    assert repr(c) == "CitedRange(doc_id='d03', revision='r1', start=1, end=4, sha256=None, quote=None, n=0)"


def test_equal_fields_of_two_range_types_are_still_two_different_values():
    read, cite = ReadRecord("d", "r", 0, 2, SHA), Citation("d", "r", 0, 2, SHA)
    assert read != cite and Span("d", "r", 0, 2, SHA) != read
    assert len({read, cite, ReadRecord("d", "r", 0, 2, SHA)}) == 2


@pytest.mark.parametrize("line", ["[1] d03@r1 [9, 3) \"x\"", "[1] d03@r1 [9, 3)", "[1] d03@r1#abcdef [5, 4)"])
def test_a_sources_line_with_an_impossible_range_is_a_parse_problem_not_an_exception(line):
    parsed = parse_answer(f"The limit is 200 [1].\n\nSources:\n{line}")
    assert parsed.citations == ()
    assert len(parsed.problems) == 1 and parsed.problems[0].endswith("does not parse")


def test_format_answer_output_parses_back_to_the_same_spans():
    text = format_answer("a [1] b [2]", [("d03", "r1", 0, 0, None), ("d03", "r1", 4, 9, "quote")])
    assert [(c.start, c.end, c.quote) for c in parse_answer(text).citations] == [(0, 0, None), (4, 9, "quote")]


@given(SMALL, SMALL, SMALL, SMALL)
def test_covers_is_the_single_range_case_of_covering(a, b, s, e):
    a, b, s, e = min(a, b), max(a, b), min(s, e), max(s, e)
    outer, inner = Span("d", "r", a, b, SHA), Span("d", "r", s, e, SHA)
    assert outer.covers(inner) is (covering([(a, b)], s, e) is not None)
    assert (covering_reads([outer], "d", "r", SHA, s, e) is not None) is outer.covers(inner)


@given(SMALL, SMALL, SMALL, SMALL)
def test_overlaps_is_symmetric_and_means_a_shared_character(a, b, s, e):
    x, y = Span("d", "r", min(a, b), max(a, b), SHA), Span("d", "r", min(s, e), max(s, e), SHA)
    shared = set(range(x.start, x.end)) & set(range(y.start, y.end))
    assert x.overlaps(y) is y.overlaps(x) is bool(shared)


def test_covers_and_overlaps_need_the_same_bytes():
    span = Span("d03", "r1", 0, 10, SHA)
    for other in (Span("d04", "r1", 2, 4, SHA), Span("d03", "r2", 2, 4, SHA), Span("d03", "r1", 2, 4, "b" * 64)):
        assert not span.covers(other) and not span.overlaps(other)
    long_revision = "release-" + "9" * 60
    cut = shown_revision(long_revision)
    assert Span("d03", long_revision, 0, 10, SHA).covers(Span("d03", cut, 2, 4, SHA))


def test_a_citation_of_a_span_read_verifies_and_a_longer_one_is_out_of_bounds():
    index = EvidenceIndex.in_memory(article_corpus())
    ledger = Ledger()
    tools = evidence_tools(index, ledger=ledger)
    msg = run_tool_call(tools, tool_call("read_evidence", {"doc_id": "d01", "offset": 0, "limit": 800}, "c1"))
    page = json.loads(msg.content)
    whole = Citation.from_page(page)
    assert verify_citation(index, whole, ledger).ok
    assert verify_citation(index, replace(whole, end=page["total_chars"] + 1, quote=None),
                           ledger).reason == "out_of_bounds"
