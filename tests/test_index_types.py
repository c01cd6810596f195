"""What the type checker found in the index (issue 32 item 6), pinned as behaviour."""

from __future__ import annotations

import pytest

from evidence_lib import Document, EvidenceError, EvidenceIndex, Principal

ALICE = Principal("acme", "alice")


def test_an_index_with_neither_texts_nor_their_folder_refuses_a_read_as_changed_evidence():
    """``EvidenceIndex(None, entries)`` (no bytes, no folder) used to end a read in a TypeError from the file reader."""
    entries = list(EvidenceIndex.in_memory([Document("d1", "t", "r1", "some text")]))
    with pytest.raises(EvidenceError) as refused:
        EvidenceIndex(None, entries).snapshot("d1", ALICE)
    assert refused.value.code == "evidence_changed"
