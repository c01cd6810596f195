"""A task workspace whose file goes away between the check and the read answers with a stable code (issue 32 item 6:
the type checker found the read assumed the file was still there)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from evidence_lib import EvidenceError, ManualClock, Principal
from evidence_lib.store import MemoryStore

ALICE = Principal("acme", "alice")


def test_a_workspace_file_deleted_between_its_check_and_its_read_is_unknown_not_a_crash():
    store = MemoryStore(ManualClock(datetime(2026, 10, 27, 9, 0, tzinfo=UTC)))
    ws = store.workspace(ALICE, "s")
    ws.write_note("a", "some text")
    found = store.workspace_file
    asked: list[str] = []

    def gone_after_the_check(key, path):  # the entry check finds the file; another worker deletes it; the read does not
        asked.append(path)
        return found(key, path) if len(asked) == 1 else None

    store.workspace_file = gone_after_the_check
    with pytest.raises(EvidenceError) as refused:
        ws.snapshot("notes/a", ALICE)
    assert refused.value.code == "unknown_doc_id" and asked == ["notes/a", "notes/a"]
