"""The numbers notebooks 04 and 05 state in their prose, computed again through the library.

Each notebook keeps the one assert per experiment a learner needs (it fails without the fix); the other
numbers its cells print and its prose quotes are pinned here, named by the behaviour they show. nbval
checks the printed outputs themselves; these tests say what each number means, so a library change that
moves one fails with a name instead of a diff.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import replace

import pytest

from evidence_lib import (
    Access,
    Budget,
    Citation,
    Document,
    EvidenceIndex,
    Ledger,
    LocateOptions,
    Principal,
    Size,
    baseline_dump,
    evidence_tools,
    run_tool_call,
    to_json,
    tool_call,
    verify_citation,
)
from evidence_lib.course.article import ANSWER, article_corpus


def _run(tools, name, args, call_id="t"):
    return run_tool_call(tools, tool_call(name, args, call_id))


def _body(msg):
    return json.loads(msg.content)


@pytest.fixture
def docs():
    return article_corpus()


# ---------------------------------------------------------------- notebook 04, scenario 1: a stale manifest
def test_edited_source_is_refused_and_citations_from_the_old_snapshot_fail_as_document_changed(docs, tmp_path):
    index_v1 = EvidenceIndex.build(docs, root=tmp_path / "store")
    tools_v1 = evidence_tools(index_v1)
    page_v1 = _body(_run(tools_v1, "read_evidence", {"doc_id": "d03", "offset": 4321, "limit": 300}))
    cited = Citation.from_page(page_v1)
    assert (cited.start, cited.end, cited.quote) == (4321, 4339, ANSWER)

    stored = index_v1.stored_file("d03")
    new_text = stored.read_text(encoding="utf-8").replace("单批上限为200条", "单批上限为500条")
    stored.write_text(new_text, encoding="utf-8")
    assert stored.read_text(encoding="utf-8")[4321:4339] == "单批上限为500条，超时设为30秒。"  # the naive read

    refused = _run(tools_v1, "read_evidence", {"doc_id": "d03", "offset": 4321})
    assert refused.status == "error" and _body(refused)["error"] == "evidence_changed"
    assert verify_citation(index_v1, cited, [page_v1]).reason == "document_changed"

    docs_v2 = [Document(d.doc_id, d.title, "2026-11-03", new_text) if d.doc_id == "d03" else d for d in docs]
    index_v2 = EvidenceIndex.build(docs_v2, root=tmp_path / "store-v2")
    page_v2 = _body(_run(evidence_tools(index_v2), "read_evidence", {"doc_id": "d03", "offset": 4321, "limit": 300}))
    assert verify_citation(index_v2, cited, [page_v1]).reason == "document_changed"
    assert verify_citation(index_v2, Citation.from_page(page_v2), [page_v2]).ok


# ---------------------------------------------------------------- notebook 04, scenario 2: paths nobody can open
def test_a_shared_store_serves_worker_b_by_doc_id_and_no_path_reaches_the_model(docs, tmp_path):
    shared = EvidenceIndex.build(docs, root=tmp_path / "shared-store")
    tools_a, tools_b = evidence_tools(shared), evidence_tools(shared)
    listing = _run(tools_a, "search_evidence", {"query": "批处理上限"})
    where = _run(tools_a, "locate_evidence", {"term": "单批上限"})
    page_b = _run(tools_b, "read_evidence", {**_body(where)[0], "limit": 300})
    assert _body(where) == [{"doc_id": "d03", "offset": 4321}]
    assert page_b.status == "success" and _body(page_b)["text"] == ANSWER
    seen = listing.content + where.content + page_b.content
    assert str(tmp_path) not in seen and "/srv/" not in seen
    assert all("path" not in entry for entry in _body(listing))


# ---------------------------------------------------------------- notebook 04, scenario 3: a keyword miss
@pytest.fixture
def index3(docs, tmp_path):
    d12 = Document("d12", "备份说明", "2026-10-27", "备份说明：Zu\u0308rich 机房每晚两点开始备份。")
    return EvidenceIndex.build([*docs, d12], root=tmp_path / "store-3")


@pytest.fixture
def careful(index3):
    return evidence_tools(index3, locate_options=LocateOptions(paged=True, normalization="NFC", explicit_miss=True))


def test_literal_locate_misses_the_documents_wording_with_a_bare_empty_list(index3):
    teaching = evidence_tools(index3)
    assert [_body(_run(teaching, "locate_evidence", {"term": t})) for t in ("每批上限", "批量上限")] == [[], []]


def test_the_general_variant_finds_twelve_matches_in_three_batches_one_per_batch_note(index3, careful):
    for term in ("每批上限", "批量上限", "每批最多"):
        assert _body(_run(careful, "locate_evidence", {"term": term}))["total_matches"] == 0
    first = _body(_run(careful, "locate_evidence", {"term": "上限"}))
    assert (first["total_matches"], first["next_cursor"], len(first["matches"])) == (12, 5, 5)
    assert {"doc_id": "d03", "offset": 4323} in first["matches"]
    page = json.loads(careful[2].invoke({"doc_id": "d03", "offset": 4323, "limit": 40}))
    assert page["text"].startswith("上限为200条")
    second = _body(_run(careful, "locate_evidence", {"term": "上限", "cursor": 5}))
    assert second["next_cursor"] == 10
    every, cursor, batches = [], 0, 0
    while cursor is not None:
        batch = _body(_run(careful, "locate_evidence", {"term": "上限", "cursor": cursor}))
        every += batch["matches"]
        cursor, batches = batch["next_cursor"], batches + 1
    assert batches == 3 and len(every) == 12 and len({m["doc_id"] for m in every}) == 12
    assert first["matches"] + second["matches"] == every[:10]
    tails = Counter(index3.snapshot(m["doc_id"]).text[m["offset"] - 7:m["offset"] + 4]
                    for m in every if m["doc_id"] != "d03")
    assert tails == {"本条没有批处理上限参数": 11}


def test_the_exact_term_finds_only_d03_at_the_start_of_its_sentence(careful):
    found = _body(_run(careful, "locate_evidence", {"term": "单批上限"}))
    assert (found["total_matches"], found["next_cursor"], found["matches"]) == (1, None, [{"doc_id": "d03",
                                                                                          "offset": 4321}])
    assert json.loads(careful[2].invoke({"doc_id": "d03", "offset": 4321, "limit": 40}))["text"] == ANSWER


def test_nfc_finds_a_decomposed_umlaut_and_the_offset_points_into_the_original_text(index3, careful):
    assert _body(_run(evidence_tools(index3), "locate_evidence", {"term": "Zürich"})) == []
    hit = _body(_run(careful, "locate_evidence", {"term": "Zürich"}))["matches"]
    assert hit == [{"doc_id": "d12", "offset": 5}]
    assert index3.snapshot("d12").text[5:12] == "Zu\u0308rich"


def test_a_fullwidth_miss_says_it_is_not_evidence_of_absence(careful):
    miss = _body(_run(careful, "locate_evidence", {"term": "２００条"}))
    assert miss["matches"] == [] and "not evidence that the answer is absent" in miss["note"]


# ---------------------------------------------------------------- notebook 04, scenario 4: a hundred tiny reads
def _tiny_reads(tools, prefix):
    return [_run(tools, "read_evidence", {"doc_id": "d03", "offset": 3539 + 8 * i, "limit": 8}, f"{prefix}-{i:03}")
            for i in range(100)]


def test_a_hundred_tiny_reads_cost_more_than_one_read_of_the_same_text(docs, tmp_path):
    plain = evidence_tools(EvidenceIndex.build(docs, root=tmp_path / "store-4"))
    tiny = _tiny_reads(plain, "tiny")
    one = _run(plain, "read_evidence", {"doc_id": "d03", "offset": 3539, "limit": 800}, "one-800")
    assert "".join(_body(m)["text"] for m in tiny) == _body(one)["text"]
    total, single = Size.of(*tiny), Size.of(one)
    assert (total.utf8_bytes, total.cl100k_tokens) == (22_689, 10_274)
    assert (single.utf8_bytes, single.cl100k_tokens) == (2_592, 847)
    assert round(total.utf8_bytes / single.utf8_bytes, 1) == 8.8
    assert round(total.cl100k_tokens / single.cl100k_tokens, 1) == 12.1
    cumulative = list(itertools.accumulate(Size.of(m).utf8_bytes for m in tiny))
    assert next(n for n, b in enumerate(cumulative, 1) if b > single.utf8_bytes) == 12


def test_after_one_read_the_tiny_reads_are_already_read_until_the_call_limit(docs, tmp_path):
    ledger = Ledger(Budget())
    guarded = evidence_tools(EvidenceIndex.build(docs, root=tmp_path / "store-4"), ledger=ledger)
    _run(guarded, "read_evidence", {"doc_id": "d03", "offset": 3539, "limit": 800}, "g-800")
    again = _tiny_reads(guarded, "g")
    outcomes = [_body(m).get("status") or _body(m).get("error") or "ok" for m in again]
    assert Counter(outcomes) == {"already_read": 19, "budget_exhausted": 81}
    assert again[outcomes.index("budget_exhausted")].tool_call_id == "g-019"
    assert all("text" not in _body(m) for m in again)
    assert Counter(_body(m)["reason"] for m in again if m.status == "error") == {"calls": 10, "refusals": 71}
    assert [_body(m)["reason"] for m in again if m.status == "error"][:10] == ["calls"] * 10
    assert ledger.totals() == {"calls": 20, "chars": 3417, "bytes": 5005, "tokens": 1854}


def test_without_the_covering_read_the_per_document_cap_stops_the_tiny_reads(docs, tmp_path):
    # 04's second "Try it yourself": the first read shrunk to 8 characters.
    ledger = Ledger(Budget())
    guarded = evidence_tools(EvidenceIndex.build(docs, root=tmp_path / "store-4"), ledger=ledger)
    _run(guarded, "read_evidence", {"doc_id": "d03", "offset": 3539, "limit": 8}, "g-800")
    again = _tiny_reads(guarded, "g")
    outcomes = [_body(m).get("status") or _body(m).get("error") or "ok" for m in again]
    assert Counter(outcomes) == {"already_read": 1, "ok": 3, "budget_exhausted": 96}
    first_refusal = again[outcomes.index("budget_exhausted")]
    assert first_refusal.tool_call_id == "g-004" and _body(first_refusal)["reason"] == "reads_per_doc"


# ---------------------------------------------------------------- notebook 04, scenario 5: a leaky manifest
@pytest.fixture
def tenants(docs):
    acme = [replace(d, access=Access("acme")) for d in docs]
    h01 = Document("h01", "裁员名单 2027", "2026-10-20",
                   "2027年第一季度组织调整名单（草稿）。仅限人力资源部查阅，不得转发。名单如下：……",
                   access=Access("acme", read={"group:hr"}))
    g01 = Document("g01", "收购要约草案", "2026-10-21", "收购要约草案：拟以现金方式收购目标公司全部股份。",
                   access=Access("globex"))
    return [*acme, h01, g01]


def test_a_manifest_built_from_every_document_lists_hidden_titles_and_previews(tenants, tmp_path):
    index5 = EvidenceIndex.build(tenants, root=tmp_path / "store-5")
    leaky = json.loads(to_json([entry.manifest_entry() for entry in index5]))
    assert len(leaky) == 14 and {"裁员名单 2027", "收购要约草案"} <= {e["title"] for e in leaky}
    assert len(leaky[-2]["preview"]) == 40 and leaky[-1]["preview"] == tenants[-1].text and len(tenants[-1].text) == 24


def test_filtered_tools_show_alice_nothing_hidden_and_refuse_a_smuggled_principal(tenants, tmp_path):
    index5 = EvidenceIndex.build(tenants, root=tmp_path / "store-5")
    tools_alice = evidence_tools(index5, principal=Principal("acme", "alice"))
    listing = _run(tools_alice, "search_evidence", {"query": "裁员 收购"})
    hits = [_run(tools_alice, "locate_evidence", {"term": t}) for t in ("裁员", "收购")]
    smuggled = _run(tools_alice, "read_evidence", {"doc_id": "h01", "principal": "hr"})
    probes = [_run(tools_alice, "read_evidence", {"doc_id": d}) for d in ("g01", "h01", "h99")]
    assert len(_body(listing)) == 12 and all(_body(m) == [] for m in hits)
    assert _body(smuggled)["error"] == "invalid_arguments"
    assert len({m.content for m in probes}) == 1 and _body(probes[0])["error"] == "unknown_doc_id"
    seen = listing.content + "".join(m.content for m in (*hits, smuggled, *probes))
    for hidden in (e for e in index5 if e.doc_id in ("h01", "g01")):
        assert hidden.title not in seen and hidden.sha256 not in seen and hidden.preview not in seen


def test_a_read_after_revocation_is_refused_although_the_manifest_listed_it(tenants, tmp_path):
    index5 = EvidenceIndex.build(tenants, root=tmp_path / "store-5")
    tools_bob = evidence_tools(index5, principal=Principal("acme", "bob", groups={"hr"}))
    assert "h01" in {e["doc_id"] for e in _body(_run(tools_bob, "search_evidence", {"query": "名单"}))}
    index5.set_access("h01", Access("acme", read={"user:carol"}))
    bob_read = _run(tools_bob, "read_evidence", {"doc_id": "h01"})
    assert bob_read.status == "error" and _body(bob_read)["error"] == "unknown_doc_id"


# ---------------------------------------------------------------- notebook 05: the budget ledger
def test_fifty_capped_pages_cost_most_of_the_dump_they_replace(docs, tmp_path):
    plain = evidence_tools(EvidenceIndex.build(docs, root=tmp_path))
    plan = [(d.doc_id, offset) for d in docs for offset in range(0, len(d.text), 800)][:50]
    pages = [_run(plain, "read_evidence", {"doc_id": doc_id, "offset": offset, "limit": 800})
             for doc_id, offset in plan]
    fifty, dump = Size.of(*pages), Size.of(baseline_dump(docs))
    assert max(len(_body(m)["text"]) for m in pages) == 800
    assert (fifty.utf8_bytes, fifty.cl100k_tokens, dump.utf8_bytes) == (118_888, 39_048, 156_982)
    assert round(100 * fifty.utf8_bytes / dump.utf8_bytes) == 76


OPENING = [("search_evidence", {"query": "批处理上限"}), ("locate_evidence", {"term": "每批上限"}),
           ("locate_evidence", {"term": "单批上限"}),
           ("read_evidence", {"doc_id": "d03", "offset": 4321, "limit": 300})]
REREADS = [("read_evidence", {"doc_id": "d03", "offset": 4321, "limit": 18}),
           ("read_evidence", {"doc_id": "d03", "offset": 0, "limit": 300}),
           ("read_evidence", {"doc_id": "d03", "offset": 100, "limit": 100})]
BAD = [("read_evidence", {"doc_id": "d03", "offset": -1}), ("read_evidence", {"doc_id": "../d03"}),
       ("read_evidence", {"doc_id": "d03", "limit": 801}), ("read_evidence", {"doc_id": "d03", "page": 2})]
CAP = [("read_evidence", {"doc_id": "d03", "offset": 300, "limit": 300}),
       ("read_evidence", {"doc_id": "d03", "offset": 600, "limit": 300}),
       ("read_evidence", {"doc_id": "d03", "offset": 900, "limit": 300})]
NARROWING = [("locate_evidence", {"term": "超时"})]
LAST = [("read_evidence", {"doc_id": "d05", "offset": 0, "limit": 800}),
        ("read_evidence", {"doc_id": "d07", "offset": 0, "limit": 800}),
        ("read_evidence", {"doc_id": "d07", "offset": 0, "limit": 300}),
        ("search_evidence", {"query": "批处理超时"})]
SCRIPTED = OPENING + REREADS + BAD + CAP + NARROWING + LAST


def _turn(index, calls):
    ledger = Ledger(Budget())
    tools = evidence_tools(index, ledger=ledger)
    return ledger, [_run(tools, name, args, f"call-{n:02}") for n, (name, args) in enumerate(calls, 1)]


def test_the_default_budget():
    assert Budget() == Budget(max_calls=20, max_chars=6000, max_bytes=16000, max_tokens=6000, max_reads_per_doc=4,
                              max_refusals=10)


def test_the_scripted_opening_charges_each_call_by_what_it_returned(index):
    ledger, _ = _turn(index, OPENING)
    assert [e.bytes for e in ledger.entries] == [3638, 2, 35, 247]
    assert ledger.totals()["bytes"] == 3922 and ledger.totals()["bytes"] - ledger.entries[1].bytes == 3920


def test_covered_rereads_are_already_read_and_add_no_range(index):
    ledger, messages = _turn(index, OPENING + REREADS)
    again, inside = messages[4], messages[6]
    assert [_body(m)["covered_by"] for m in (again, inside)] == [[[4321, 4339]], [[0, 300]]]
    assert [Size.of(m).utf8_bytes for m in (again, inside)] == [127, 121] and len(ledger.reads) == 2


def test_refused_calls_are_recorded_uncharged_but_enter_the_context(index):
    before, _ = _turn(index, OPENING + REREADS)
    ledger, messages = _turn(index, OPENING + REREADS + BAD)
    assert before.totals() == ledger.totals() == {"calls": 7, "chars": 3562, "bytes": 5268, "tokens": 2080}
    assert [e.status for e in ledger.entries[-4:]] == [
        "invalid_page_bounds", "unknown_doc_id", "invalid_page_bounds", "invalid_arguments"]
    assert sum(len(m.content.encode()) for m in messages[-4:]) == 455 and ledger.context()["bytes"] == 5723


def test_the_fifth_read_of_one_document_is_refused_on_reads_per_doc(index):
    ledger, messages = _turn(index, OPENING + REREADS + BAD + CAP)
    capped = _body(messages[-1])
    assert (capped["error"], capped["reason"]) == ("budget_exhausted", "reads_per_doc")
    assert capped["spent"] == {"calls": 9, "chars": 4562, "bytes": 7468, "tokens": 2830}


def test_the_timeout_sits_inside_the_range_already_read(index):
    ledger, messages = _turn(index, OPENING + REREADS + BAD + CAP + NARROWING)
    position = _body(messages[-1])[0]["offset"]
    d03 = index.entry("d03")
    assert position == 4331 and ledger.covering("d03", d03.revision, d03.sha256, position, position + 2) == [
        (4321, 4339)]


def test_the_scripted_turn_ends_on_chars_with_405_characters_left(index):
    ledger, messages = _turn(index, SCRIPTED)
    over = _body(messages[16])
    assert over["limits"]["chars"] - over["spent"]["chars"] == 405
    assert [_body(m)["reason"] for m in messages[16:]] == ["chars", "chars", "chars"]
    assert ledger.totals() == {"calls": 11, "chars": 5595, "bytes": 10101, "tokens": 3696}
    assert len(ledger.entries) == 19 and ledger.context()["bytes"] == 11_775
    assert [(e.step, e.reason) for e in ledger.entries if e.status == "budget_exhausted"] == [
        (14, "reads_per_doc"), (17, "chars"), (18, "chars"), (19, "chars")]


def _scripted_turn(index, budget, script):
    turn, hits = Ledger(budget), []
    tools = evidence_tools(index, ledger=turn)
    for name, args in script:
        msg = _run(tools, name, args)
        if msg.status == "error" and _body(msg)["error"] == "budget_exhausted":
            return _body(msg), turn, hits
        if name == "locate_evidence" and msg.status == "success":
            hits += _body(msg)
    return None, turn, hits


GUESSING = [("search_evidence", {"query": "每批最多多少条"})] + [
    ("locate_evidence", {"term": t}) for t in ("每批上限", "批量上限", "每批最多", "批次大小")]
SKIMMING = [("read_evidence", {"doc_id": f"d{i:02}", "offset": 0, "limit": 800}) for i in range(12)]


def test_the_scripted_turns_stop_on_the_reasons_the_moves_read(index):
    paging = [("read_evidence", {"doc_id": "d03", "offset": 800 * i, "limit": 800}) for i in range(6)]
    payload_a, _, hits_a = _scripted_turn(index, Budget(), paging)
    payload_b, turn_b, hits_b = _scripted_turn(index, Budget(max_calls=4), GUESSING)
    payload_c, turn_c, hits_c = _scripted_turn(index, Budget(), SKIMMING)
    assert [p["reason"] for p in (payload_a, payload_b, payload_c)] == ["reads_per_doc", "calls", "chars"]
    assert hits_a == hits_b == hits_c == [] and len(turn_b.reads) == 0
    assert [(r.doc_id, r.start, r.end) for r in turn_c.reads] == [(f"d{i:02}", 0, 800) for i in range(6)]


def test_the_narrow_plan_finds_and_verifies_the_answer_in_two_calls(index):
    narrow = Ledger(Budget())
    tools = evidence_tools(index, ledger=narrow)
    where = _body(_run(tools, "locate_evidence", {"term": "单批上限"}))
    page = _body(_run(tools, "read_evidence", {**where[0], "limit": 300}))
    assert page["text"] == ANSWER and verify_citation(index, Citation.from_page(page), narrow).ok
    assert (narrow.totals()["calls"], narrow.totals()["bytes"]) == (2, 282)


def test_try_it_a_located_hit_without_a_read_still_runs_out_on_calls(index):
    # 05's first "Try it yourself": 单批上限 among the guesses.
    guessing = [GUESSING[0], GUESSING[1], ("locate_evidence", {"term": "单批上限"}), *GUESSING[3:]]
    payload, turn, hits = _scripted_turn(index, Budget(max_calls=4), guessing)
    assert payload["reason"] == "calls" and hits == [{"doc_id": "d03", "offset": 4321}] and turn.reads == []


def test_try_it_without_a_character_limit_the_skim_stops_at_the_same_call_on_bytes(index):
    # 05's second "Try it yourself": Budget(max_chars=None).
    payload, turn, _ = _scripted_turn(index, Budget(max_chars=None), SKIMMING)
    assert payload["reason"] == "bytes" and len(turn.reads) == 6


def test_a_hundred_one_character_reads_are_stopped_yet_their_refusals_cost_more_than_the_reads(index):
    check = Ledger(Budget())
    tools = evidence_tools(index, ledger=check)
    ones = [_run(tools, "read_evidence", {"doc_id": "d05", "offset": i, "limit": 1}) for i in range(100)]
    unguarded = Size.of(*[_run(evidence_tools(index), "read_evidence", {"doc_id": "d05", "offset": i, "limit": 1})
                          for i in range(100)])
    assert Counter(_body(m).get("error", "ok") for m in ones) == {"ok": 4, "budget_exhausted": 96}
    assert Counter(_body(m)["reason"] for m in ones if m.status == "error") == {"reads_per_doc": 10, "refusals": 86}
    assert (check.totals()["calls"], check.totals()["bytes"]) == (4, 788)
    assert {len(m.content.encode()) for m in ones if m.status == "error"} <= set(range(299, 314))
    assert check.context()["bytes"] == 29_632 and unguarded.utf8_bytes == 19_974
    assert check.context()["bytes"] > unguarded.utf8_bytes


def test_a_repeat_is_already_read_even_after_the_documents_read_cap(index):
    fresh = Ledger(Budget())
    tools = evidence_tools(index, ledger=fresh)
    read1 = _run(tools, "read_evidence", {"doc_id": "d03", "offset": 4321, "limit": 18})
    read2 = _run(tools, "read_evidence", {"doc_id": "d03", "offset": 4321, "limit": 18})
    for i in range(5):
        _run(tools, "read_evidence", {"doc_id": "d05", "offset": i, "limit": 1})
    repeat = _body(_run(tools, "read_evidence", {"doc_id": "d05", "offset": 0, "limit": 1}))
    assert _body(read1)["text"] == ANSWER
    assert _body(read2)["status"] == "already_read" and _body(read2)["covered_by"] == [[4321, 4339]]
    assert repeat["status"] == "already_read" and "text" not in repeat and fresh.totals()["calls"] == 7
