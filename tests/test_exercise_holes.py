"""Issue 26 items 3 and 4: the exercise checkers' holes and wrong diagnoses, each fed the wrong answer that was
accepted or misdiagnosed before.

tests/test_exercises.py proves every checker both ways with its typical wrong answers; this file adds the answers a
fresh-eyes review gave that got through (1.4's strict ``<``, 5.2's delegation, 7.2's early refetch, 8.1's byte
shortcut) or were told the wrong cause (2.2's small pages, 5.3's naive datetimes, 7.2's one-hour TTL, 8.2's wrong key
and locate-then-read), and checks that what an exercise states (its ask, hints, solution note, the notebooks and the
facilitator guide) agrees with what its checker accepts (4.2's per-document cap, 6.1's narrowing rule).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import nbformat

from evidence_lib import Budget, baseline_dump, cl100k_tokens, utf8_bytes
from evidence_lib._errors import EvidenceError
from evidence_lib._paging import MAX_PAGE_CHARS
from evidence_lib.course.exercises import exercise

ROOT = Path(__file__).resolve().parents[1]
EXERCISES_DIR = ROOT / "notebooks" / "exercises"
GUIDE = EXERCISES_DIR / "README.md"


def _markdown(path: Path) -> str:
    return "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")


def _part_notebooks(part: int) -> list[Path]:
    """The solution notebook and the student copy of one workshop part."""
    return [EXERCISES_DIR / "solutions" / f"workshop_part{part}.ipynb", EXERCISES_DIR / f"workshop_part{part}.ipynb"]


def _guide_row(part: int, number: int) -> str:
    guide = GUIDE.read_text(encoding="utf-8")
    section = guide[guide.index(f"### Part {part}"):]
    return next(line for line in section.splitlines() if line.startswith(f"| {number} |"))


# -- 1.4 · a dump exactly at the budget fits ------------------------------------------------------------------------

def test_largest_top_k_refuses_a_strict_comparison_with_the_budget():
    def largest_top_k(docs, budget):
        return max(k for k in range(len(docs) + 1) if cl100k_tokens(baseline_dump(docs[:k])) < budget)

    result = exercise("1.4").check(largest_top_k)
    assert result.status == "incorrect", result
    assert "exactly" in result.message and "<=" in result.message, result


# -- 2.2 · small pages are small pages, not a loop that never advances ------------------------------------------------

def test_read_all_with_small_pages_is_told_to_ask_for_bigger_pages():
    def read_all(read, doc_id):
        parts, offset = [], 0
        while offset is not None:
            page = json.loads(read.invoke({"doc_id": doc_id, "offset": offset, "limit": 100}))
            parts.append(page["text"])
            offset = page["next_offset"]
        return "".join(parts)

    result = exercise("2.2").check(read_all)
    assert result.status == "incorrect", result
    assert "limit=800" in result.message and "100 characters" in result.message, result
    assert "is offset moving" not in result.message, result


# -- 4.2 · a per-document cap: accepted, and said so everywhere ----------------------------------------------------

def test_budget_with_a_per_document_cap_is_accepted_and_every_text_agrees():
    ex = exercise("4.2")
    result = ex.check(Budget(max_reads_per_doc=6))
    assert result.status == "correct", result
    assert "reads_per_doc" in result.message, result
    texts = {"hint 2": ex.hints[1], "solution note": ex.solution()._repr_markdown_(), "guide": _guide_row(4, 2)}
    texts.update({p.name if "solutions" not in str(p) else f"solutions/{p.name}": _markdown(p)
                  for p in _part_notebooks(4)})
    for where, text in texts.items():
        assert not re.search(r"per[- ]document cap cannot|reads per document cannot|names the problem most "
                             r"precisely", text, re.IGNORECASE), where
        assert re.search(r"reads per document|max_reads_per_doc|per-document cap", text), where


# -- 5.2 · delegation refused, as in 2.1 and 8.1 ------------------------------------------------------------------

def test_find_and_load_bytes_refuses_delegating_to_measure_schema_loading():
    from evidence_lib.disclosure._toolbox import measure_schema_loading

    def find_and_load_bytes(toolbox, query, names):
        return measure_schema_loading(toolbox, query, load=names).find_and_load.utf8_bytes

    result = exercise("5.2").check(find_and_load_bytes)
    assert result.status == "incorrect", result
    assert "delegates to" in result.message and "measure_schema_loading" in result.message, result


# -- 5.3 · naive datetimes are named as such ----------------------------------------------------------------------

def test_still_readable_with_naive_datetimes_is_told_they_are_naive():
    def still_readable(handle, now):
        return now.replace(tzinfo=None) < datetime.fromisoformat(handle["expires_at"]).replace(tzinfo=None)

    result = exercise("5.3").check(still_readable)
    assert result.status == "incorrect", result
    assert "naive" in result.message and "ISO strings" not in result.message, result


def test_still_readable_comparing_strings_is_still_told_about_strings():
    result = exercise("5.3").check(lambda handle, now: now.isoformat() < handle["expires_at"])
    assert result.status == "incorrect" and "ISO strings" in result.message, result


# -- 6.1 · the task states the rule the checker applies ----------------------------------------------------------

def test_locate_terms_task_states_the_narrowing_rule_and_the_reply_size():
    from evidence_lib.course.exercises.part6 import MAX_NARROW_DOCS
    from evidence_lib.profiles._compact import COMPACT_EXCERPTS

    ex = exercise("6.1")
    result = ex.check({"a": "terminates the nearest", "b": "continue", "c": "method is invoked"})
    assert result.status == "incorrect", result
    assert f"{COMPACT_EXCERPTS} excerpts" in result.message.replace("three", "3"), result
    assert "five" not in result.message and not any("five excerpts" in h for h in ex.hints)
    rule = f"at most {MAX_NARROW_DOCS} documents"
    assert rule in ex.ask, ex.ask
    for path in _part_notebooks(6):
        text = _markdown(path)
        assert rule in text and "at most three excerpts" in text, path
    assert rule in _guide_row(6, 1)


# -- 7.2 · a margin of your own, and a TTL of your own ---------------------------------------------------------------

def _snapshot_for(margin=timedelta(0), ttl=None):
    def snapshot_for(store, tenant, session, query, fetch):
        try:
            snap = store.snapshot(tenant, session, query)
            if store.clock() < snap.expires_at - margin:
                return snap
        except EvidenceError as error:
            if error.code != "snapshot_expired":
                raise
        kw = {} if ttl is None else {"ttl": ttl}
        return store.put_snapshot(tenant, session, query, fetch(), **kw)
    return snapshot_for


def test_snapshot_for_refuses_refetching_a_second_before_expiry():
    assert exercise("7.2").check(_snapshot_for()).status == "correct"
    result = exercise("7.2").check(_snapshot_for(margin=timedelta(seconds=1)))
    assert result.status == "incorrect", result
    assert "before expires_at" in result.message and "still alive" in result.message, result


def test_snapshot_for_with_a_one_hour_ttl_is_told_about_the_ttl_in_one_time_zone():
    result = exercise("7.2").check(_snapshot_for(ttl=timedelta(hours=1)))
    assert result.status == "incorrect", result
    assert "1:00:00" in result.message and "default TTL" in result.message, result
    assert "still alive" not in result.message, result
    offsets = set(re.findall(r"\d{2}:\d{2}:\d{2}([+-]\d{2}:\d{2})", result.message))
    assert len(offsets) <= 1, result


# -- 8.1 · bytes never decide that a text is over -----------------------------------------------------------------

def test_should_offload_refuses_offloading_by_a_multiple_of_the_bytes():
    def should_offload(text, threshold_tokens):
        size = utf8_bytes(text)
        if size <= threshold_tokens:
            return False
        if size > 4 * threshold_tokens:
            return True
        return cl100k_tokens(text) > threshold_tokens

    result = exercise("8.1").check(should_offload)
    assert result.status == "incorrect", result
    assert "spaces" in result.message and "from above" in result.message, result


# -- 8.2 · the key, and a locate before the read --------------------------------------------------------------

def _section_reader(match, retry=False, locate_first=False):
    """A reader for 8.2 that finds its line with ``match``; ``retry`` tries a refused page again, ``locate_first``
    runs locate_evidence on the key before reading."""
    def read_section(tools, handle, path):
        by_name = {t.name: t for t in tools}
        doc_id = re.search(r"stored as (res-[0-9a-f]+)", handle)[1]
        line = next(x for x in handle.splitlines() if x.startswith("- ") and match(x, path))
        start, end = map(int, re.search(r"\[(\d+), (\d+)\)$", line).groups())
        if locate_first:
            by_name["locate_evidence"].invoke({"term": path.rsplit(".", 1)[-1][:20], "doc_id": doc_id})
        parts, offset = [], start
        while offset < end:
            try:
                reply = by_name["read_evidence"].invoke({"doc_id": doc_id, "offset": offset,
                                                         "limit": min(MAX_PAGE_CHARS, end - offset)})
            except EvidenceError:
                if retry:
                    continue  # the learner's mistake under test: a refused page is tried again
                raise
            head, text = reply.split("\n", 1) if "\n" in reply else (reply, "")
            parts.append(text)
            found = re.search(r" next (\d+)$", head)
            offset = int(found[1]) if found else end
        return "".join(parts)
    return read_section


def test_read_section_reading_the_key_another_key_starts_with_is_told_about_the_key():
    result = exercise("8.2").check(_section_reader(lambda line, path: path in line, retry=True))
    assert result.status == "incorrect", result
    assert "you are reading $.events" in result.message and "is offset moving" not in result.message, result


def test_read_section_that_locates_before_reading_is_told_why_the_read_came_back_empty():
    def exact(line, path):
        return line.split()[1] == path

    assert exercise("8.2").check(_section_reader(exact)).status == "correct"
    result = exercise("8.2").check(_section_reader(exact, locate_first=True))
    assert result.status == "incorrect", result
    assert "already_read" in result.message and "locate_evidence" in result.message, result
    assert "differs" not in result.message, result


# -- workshop navigation ---------------------------------------------------------------------------------------

def test_the_last_workshop_parts_do_not_send_learners_back_to_part_one():
    for part in (7, 8):
        for path in _part_notebooks(part):
            last = nbformat.read(path, as_version=4).cells[-1].source
            assert "workshop_part1.ipynb" not in last and "Part 1" not in last, path
    for path in _part_notebooks(7):
        assert "(workshop_part8.ipynb)" in nbformat.read(path, as_version=4).cells[-1].source, path
