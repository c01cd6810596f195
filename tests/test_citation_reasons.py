"""Issue 31 (items 4 and 9): a citation of an empty range cites nothing; a Sources line that does not parse says which
line it was and what was expected. The MCP server's replies for the same are in tests/test_mcp_server.py."""

from __future__ import annotations

from evidence_lib._answers import format_answer
from evidence_lib._citations import CITATION_FORM, REASONS, Citation, verify_citation, verify_sources
from evidence_lib._documents import Document
from evidence_lib._errors import SAME_CONDITION
from evidence_lib._index import EvidenceIndex
from evidence_lib._ledger import ReadRecord

TEXT = "The batch limit is 200 rows per call."


def _index_and_reads():
    index = EvidenceIndex.in_memory([Document("limits", "Limits", "r1", TEXT)])
    entry = index.entry("limits")
    return index, entry, [ReadRecord("limits", "r1", 0, len(TEXT), entry.sha256)]


def test_verify_citation_refuses_an_empty_range_even_inside_a_read() -> None:
    index, entry, reads = _index_and_reads()
    for s in (0, 17, len(TEXT)):
        check = verify_citation(index, Citation("limits", "r1", s, s, entry.sha256, ""), reads)
        assert check.reason == "empty_range" and not check.ok
    assert verify_citation(index, Citation("limits", "r1", 17, 18, entry.sha256, TEXT[17]), reads).ok


def test_an_answer_citing_only_an_empty_range_does_not_verify() -> None:
    index, _, reads = _index_and_reads()
    checks = verify_sources(index, format_answer("200 rows. [1]", [("limits", "r1", 17, 17, "")]), reads)
    assert [(c.reason, c.line) for c in checks] == [("empty_range", 1)]


def test_empty_range_is_one_condition_in_every_layer() -> None:
    assert {"tool": None, "citation": "empty_range", "finding": "citation_empty_range"} in SAME_CONDITION.values()


def test_a_malformed_line_says_which_line_and_the_expected_form() -> None:
    index, entry, reads = _index_and_reads()
    answer = "200 rows. [1] [2]\n\nSources:\n[1] limits@r1 [0, 5) \"The b\"\n\n[2] #a1b2c3 [0, 5)\n"
    good, bad = verify_sources(index, answer, reads)
    assert (good.reason, good.line) == ("ok", 1)
    assert (bad.reason, bad.line, bad.citation) == ("malformed", 2, None)
    assert CITATION_FORM in REASONS["malformed"] and "Sources line 2" in str(bad)
