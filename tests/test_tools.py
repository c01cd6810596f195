"""The three-tool protocol: names, shapes, paging, refusals, strict schemas, run_tool_call."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from conftest import TOOL_NAMES, body, refusal_code
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

from evidence_lib import ERROR_CODES, EvidenceError, error_payload, evidence_tools, to_json
from evidence_lib._tools import run_tool_call, tool_call

ANSWER = "单批上限为200条，超时设为30秒。"
READ_KEYS = ["doc_id", "revision", "sha256", "start", "end", "total_chars", "next_offset", "text"]
MANIFEST_KEYS = ["doc_id", "title", "revision", "chars", "sha256", "preview"]


# -- names and manifest ------------------------------------------------------------------------

def test_tools_are_named_exactly_search_locate_read_in_protocol_order(tools):
    assert [t.name for t in tools] == list(TOOL_NAMES)
    assert all(isinstance(t, BaseTool) for t in tools)


def test_tool_argument_names_match_the_article_signatures(tools):
    search, locate, read = tools
    assert list(search.args) == ["query"]
    assert list(locate.args) == ["term"]
    assert list(read.args) == ["doc_id", "offset", "limit"]
    assert read.args["offset"].get("default") == 0
    assert read.args["limit"].get("default") == 300


def test_manifest_entries_have_article_keys_in_order(search, corpus, index):
    manifest = json.loads(search.invoke({"query": "批处理上限"}))
    assert [m["doc_id"] for m in manifest] == [d.doc_id for d in corpus]
    for m, d in zip(manifest, corpus):
        assert list(m) == MANIFEST_KEYS
        assert m["title"] == d.title
        assert m["revision"] == d.revision
        assert m["chars"] == len(d.text) == (4339 if d.doc_id == "d03" else 4333)
        assert m["sha256"] == hashlib.sha256(d.text.encode("utf-8")).hexdigest()
        assert m["preview"] == d.text[:40]
        assert len(m["preview"]) == 40


def test_manifest_never_contains_full_text(search, d03_text):
    content = search.invoke({"query": "批处理上限"})
    assert ANSWER not in content
    assert d03_text[:41] not in content


def test_search_refuses_empty_query_with_invalid_query(search):
    assert refusal_code(search, {"query": ""}) == "invalid_query"
    assert refusal_code(search, {"query": "x" * 257}) == "invalid_query"
    assert json.loads(search.invoke({"query": "x" * 256}))


def test_tool_json_keeps_chinese_characters_literal(search, locate, read):
    for content in (search.invoke({"query": "批处理"}), read.invoke({"doc_id": "d03", "offset": 4321})):
        assert "批处理" in content or ANSWER in content
        assert "\\u" not in content
    content = read.invoke({"doc_id": "d03", "offset": 4321})
    assert content == json.dumps(json.loads(content), ensure_ascii=False)


# -- locate ------------------------------------------------------------------------------------

def test_locate_finds_the_answer_term_only_in_d03_at_4321(locate):
    assert json.loads(locate.invoke({"term": "单批上限"})) == [{"doc_id": "d03", "offset": 4321}]


def test_locate_returns_first_occurrence_per_document_only(locate):
    hits = json.loads(locate.invoke({"term": "日志"}))
    # "日志" occurs 240 times per document; only the first (offset 13) is reported, once per doc
    assert all(h == {"doc_id": h["doc_id"], "offset": 13} for h in hits)
    assert len({h["doc_id"] for h in hits}) == len(hits)


def test_locate_returns_at_most_five_positions_in_total(locate):
    hits = json.loads(locate.invoke({"term": "本条没有"}))
    assert hits == [{"doc_id": d, "offset": 4321} for d in ["d00", "d01", "d02", "d04", "d05"]]
    assert len(json.loads(locate.invoke({"term": "批处理"}))) == 5


def test_locate_entries_are_doc_id_then_offset(locate):
    for h in json.loads(locate.invoke({"term": "批"})):
        assert list(h) == ["doc_id", "offset"]


def test_locate_returns_empty_list_for_a_missing_term(locate):
    assert locate.invoke({"term": "没有的关键词"}) == "[]"


@pytest.mark.parametrize("term", ["", "x" * 65, "批" * 65])
def test_locate_refuses_terms_of_length_0_or_65_with_invalid_term(locate, term):
    assert refusal_code(locate, {"term": term}) == "invalid_term"


@pytest.mark.parametrize("term", ["批", "批" * 64])
def test_locate_accepts_terms_of_length_1_and_64(locate, term):
    assert isinstance(json.loads(locate.invoke({"term": term})), list)


def test_locate_returns_positions_never_text(locate):
    content = locate.invoke({"term": "单批上限"})
    assert ANSWER not in content and "超时" not in content


# -- read --------------------------------------------------------------------------------------

def test_read_page_has_article_keys_in_order(read, index):
    page = json.loads(read.invoke({"doc_id": "d03"}))
    assert list(page) == READ_KEYS
    assert page["revision"] == "2026-10-27"
    assert page["sha256"] == next(e.sha256 for e in index if e.doc_id == "d03")


def test_read_defaults_to_offset_0_and_300_characters(read, d03_text):
    page = json.loads(read.invoke({"doc_id": "d03"}))
    assert (page["start"], page["end"], page["next_offset"]) == (0, 300, 300)
    assert page["text"] == d03_text[:300]


def test_read_returns_the_answer_at_4321_4339_with_null_next_offset(read):
    page = json.loads(read.invoke({"doc_id": "d03", "offset": 4321, "limit": 300}))
    assert page["text"] == ANSWER
    assert (page["start"], page["end"], page["total_chars"]) == (4321, 4339, 4339)
    assert page["next_offset"] is None


def test_read_pages_hold_at_most_800_characters(read, d03_text):
    page = json.loads(read.invoke({"doc_id": "d03", "limit": 800}))
    assert len(page["text"]) == 800 == page["end"] - page["start"]
    assert page["next_offset"] == 800
    assert page["text"] == d03_text[:800]


def test_read_at_offset_equal_to_total_chars_gives_empty_last_page(read):
    page = json.loads(read.invoke({"doc_id": "d03", "offset": 4339}))
    assert page["text"] == ""
    assert (page["start"], page["end"], page["total_chars"]) == (4339, 4339, 4339)
    assert page["next_offset"] is None


def test_read_beyond_total_chars_is_refused_offset_exceeds_document(read):
    assert refusal_code(read, {"doc_id": "d03", "offset": 4340}) == "offset_exceeds_document"
    assert refusal_code(read, {"doc_id": "d03", "offset": 999999}) == "offset_exceeds_document"


@pytest.mark.parametrize(
    "args",
    [{"limit": 0}, {"limit": 801}, {"limit": 10**12}, {"limit": -1}, {"offset": -1}, {"offset": -(10**30)}],
)
def test_read_refuses_bad_page_bounds_with_invalid_page_bounds(read, args):
    assert refusal_code(read, {"doc_id": "d03", **args}) == "invalid_page_bounds"


def test_read_refuses_huge_integer_offset_as_offset_exceeds_document_not_a_crash(read, tools, call):
    assert refusal_code(read, {"doc_id": "d03", "offset": 10**30}) == "offset_exceeds_document"
    msg = call(tools, "read_evidence", {"doc_id": "d03", "offset": 10**30}, "big")
    assert msg.status == "error" and body(msg)["error"] == "offset_exceeds_document"


@pytest.mark.parametrize("limit", [97, 300, 799, 800])
def test_paging_with_next_offset_concatenates_back_to_the_whole_document(read, d03_text, limit):
    pieces, offset, pages = [], 0, 0
    while offset is not None:
        page = json.loads(read.invoke({"doc_id": "d03", "offset": offset, "limit": limit}))
        assert page["start"] == offset
        assert len(page["text"]) == page["end"] - page["start"] <= limit
        pieces.append(page["text"])
        offset = page["next_offset"]
        pages += 1
    assert "".join(pieces) == d03_text
    assert pages == -(-len(d03_text) // limit)


def test_one_character_pages_walk_the_answer_tail_exactly(read, d03_text):
    pieces, offset = [], 4300
    while offset is not None:
        page = json.loads(read.invoke({"doc_id": "d03", "offset": offset, "limit": 1}))
        assert page["end"] - page["start"] == len(page["text"]) == 1
        pieces.append(page["text"])
        offset = page["next_offset"]
    assert "".join(pieces) == d03_text[4300:]


def test_paging_every_document_reproduces_its_stored_text(read, corpus):
    for d in corpus:
        text, offset = "", 0
        while offset is not None:
            page = json.loads(read.invoke({"doc_id": d.doc_id, "offset": offset, "limit": 800}))
            text += page["text"]
            offset = page["next_offset"]
        assert text == d.text


def test_read_rejects_changed_evidence(read, index):
    index.stored_file("d03").write_text("modified", encoding="utf-8")
    assert refusal_code(read, {"doc_id": "d03"}) == "evidence_changed"


def test_read_rejects_evidence_changed_by_a_single_byte(read, index):
    path = index.stored_file("d03")
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0x01
    path.write_bytes(bytes(raw))
    assert refusal_code(read, {"doc_id": "d03", "offset": 0, "limit": 1}) == "evidence_changed"


def test_read_rejects_deleted_evidence_as_evidence_changed(read, index):
    index.stored_file("d03").unlink()
    assert refusal_code(read, {"doc_id": "d03"}) == "evidence_changed"


def test_change_to_one_document_does_not_block_reading_another(read, index, corpus):
    index.stored_file("d03").write_text("modified", encoding="utf-8")
    assert json.loads(read.invoke({"doc_id": "d04", "limit": 5}))["text"] == corpus[4].text[:5]


def test_locate_refuses_when_stored_evidence_changed(locate, index):
    index.stored_file("d03").write_text("modified", encoding="utf-8")
    assert refusal_code(locate, {"term": "单批上限"}) == "evidence_changed"


def test_bounds_are_checked_before_the_file_is_touched(read, index, monkeypatch):
    index.stored_file("d03").unlink()
    assert refusal_code(read, {"doc_id": "d03", "limit": 801}) == "invalid_page_bounds"
    assert refusal_code(read, {"doc_id": "d03", "offset": -1}) == "invalid_page_bounds"
    assert refusal_code(read, {"doc_id": "d03", "offset": 4340}) == "offset_exceeds_document"
    opened = []
    monkeypatch.setattr(Path, "read_bytes", lambda self: opened.append(self) or b"")
    for args in ({"doc_id": "d04", "limit": 0}, {"doc_id": "d04", "offset": -5}, {"doc_id": "d04", "offset": 10**9},
                 {"doc_id": "nope", "limit": 801}):
        with pytest.raises(EvidenceError):
            read.invoke(args)
    assert opened == []


def test_bounds_are_checked_before_the_doc_id_is_looked_up(read):
    assert refusal_code(read, {"doc_id": "../secret", "limit": 801}) == "invalid_page_bounds"


# -- strict argument schemas -------------------------------------------------------------------

@pytest.mark.parametrize("bad", [True, False, "10", 2.5, 2.0, None, [1], {"n": 1}])
def test_read_refuses_non_integer_offset_with_invalid_arguments(read, bad):
    assert refusal_code(read, {"doc_id": "d03", "offset": bad}) == "invalid_arguments"


@pytest.mark.parametrize("bad", [True, "300", 300.0, None])
def test_read_refuses_non_integer_limit_with_invalid_arguments(read, bad):
    assert refusal_code(read, {"doc_id": "d03", "limit": bad}) == "invalid_arguments"


@pytest.mark.parametrize("bad", [3, None, b"d03", ["d03"]])
def test_read_refuses_non_string_doc_id_with_invalid_arguments(read, bad):
    assert refusal_code(read, {"doc_id": bad}) == "invalid_arguments"


def test_read_refuses_missing_doc_id_with_invalid_arguments(read):
    assert refusal_code(read, {}) == "invalid_arguments"
    assert refusal_code(read, {"offset": 0}) == "invalid_arguments"


@pytest.mark.parametrize("extra", ["principal", "path", "tenant", "user"])
def test_every_tool_refuses_unknown_argument_names(tools, extra):
    search, locate, read = tools
    assert refusal_code(search, {"query": "q", extra: "x"}) == "invalid_arguments"
    assert refusal_code(locate, {"term": "批", extra: "x"}) == "invalid_arguments"
    assert refusal_code(read, {"doc_id": "d03", extra: "x"}) == "invalid_arguments"


@pytest.mark.parametrize("bad", [1, None, ["批"], True])
def test_search_and_locate_refuse_non_string_arguments(search, locate, bad):
    assert refusal_code(search, {"query": bad}) == "invalid_arguments"
    assert refusal_code(locate, {"term": bad}) == "invalid_arguments"


def test_invalid_arguments_details_name_the_field_but_not_the_value(read):
    with pytest.raises(EvidenceError) as info:
        read.invoke({"doc_id": "d03", "offset": "SENTINEL-VALUE"})
    payload = to_json(error_payload(info.value))
    assert info.value.details["problems"][0]["field"] == "offset"
    assert "SENTINEL-VALUE" not in payload


def test_all_refusals_are_evidence_errors_and_value_errors_with_registered_codes(read):
    for args in ({"doc_id": "x"}, {"doc_id": "d03", "limit": 0}, {"doc_id": "d03", "offset": True}):
        with pytest.raises(ValueError) as info:
            read.invoke(args)
        assert isinstance(info.value, EvidenceError)
        assert info.value.code in ERROR_CODES


def test_article_boundary_cases_each_produce_their_code(read, index):
    from evidence_lib.course.experiment import BOUNDARY_CASES

    cases = {case: (args, code) for case, args, code in BOUNDARY_CASES}
    assert set(cases) == {"unknown id", "page too long", "negative offset", "beyond the end"}
    for args, expected in cases.values():
        assert refusal_code(read, args) == expected


# -- run_tool_call -----------------------------------------------------------------------------

def test_run_tool_call_returns_tool_messages_with_matching_ids(tools, call):
    for name, args in [("search_evidence", {"query": "批处理上限"}), ("locate_evidence", {"term": "单批上限"}),
                       ("read_evidence", {"doc_id": "d03", "offset": 4321})]:
        msg = call(tools, name, args, f"id-{name}")
        assert isinstance(msg, ToolMessage)
        assert msg.tool_call_id == f"id-{name}"
        assert msg.status == "success"
        assert msg.name == name


def test_run_tool_call_result_is_identical_to_invoke_content(tools, call, read):
    msg = call(tools, "read_evidence", {"doc_id": "d03", "offset": 4321, "limit": 300}, "r1")
    assert msg.content == read.invoke({"doc_id": "d03", "offset": 4321, "limit": 300})


def test_tool_call_builds_the_chat_model_dict():
    assert tool_call("read_evidence", {"doc_id": "d03"}, "c1") == {
        "name": "read_evidence", "args": {"doc_id": "d03"}, "id": "c1", "type": "tool_call"}


@pytest.mark.parametrize(
    "args, code",
    [({"doc_id": "../secret"}, "unknown_doc_id"),
     ({"doc_id": "d03", "limit": 801}, "invalid_page_bounds"),
     ({"doc_id": "d03", "offset": -1}, "invalid_page_bounds"),
     ({"doc_id": "d03", "offset": 999999}, "offset_exceeds_document"),
     ({"doc_id": "d03", "offset": True}, "invalid_arguments"),
     ({"doc_id": "d03", "principal": {"tenant": "x"}}, "invalid_arguments")],
)
def test_run_tool_call_turns_refusals_into_error_messages_with_the_code(tools, call, tmp_path, args, code):
    msg = call(tools, "read_evidence", args, "c-err")
    assert isinstance(msg, ToolMessage)
    assert msg.tool_call_id == "c-err"
    assert msg.status == "error"
    payload = json.loads(msg.content)
    assert payload["error"] == code
    assert list(payload)[:2] == ["error", "message"]
    assert "Traceback" not in msg.content and str(tmp_path) not in msg.content


def test_run_tool_call_reports_changed_evidence_without_leaking_the_path(tools, call, index, tmp_path):
    index.stored_file("d03").write_text("modified", encoding="utf-8")
    for name, args in [("read_evidence", {"doc_id": "d03"}), ("locate_evidence", {"term": "批"})]:
        msg = call(tools, name, args, "c")
        assert msg.status == "error" and json.loads(msg.content)["error"] == "evidence_changed"
        assert str(tmp_path) not in msg.content and "/store" not in msg.content
        assert ".txt" not in msg.content and "Traceback" not in msg.content


def test_run_tool_call_unknown_tool_name_gives_unknown_tool(tools, call):
    msg = call(tools, "delete_everything", {}, "c9")
    assert msg.status == "error" and msg.tool_call_id == "c9"
    assert json.loads(msg.content)["error"] == "unknown_tool"


@pytest.mark.parametrize(
    "bad_call",
    [None, [], "read_evidence", 42,
     {"name": "read_evidence", "args": {"doc_id": "d03"}},  # missing id
     {"name": "read_evidence", "args": {"doc_id": "d03"}, "id": 7, "type": "tool_call"},  # id not a string
     {"name": "read_evidence", "args": {"doc_id": "d03"}, "id": "", "type": "tool_call"},
     {"args": {"doc_id": "d03"}, "id": "c", "type": "tool_call"},  # missing name
     {"name": None, "args": {}, "id": "c", "type": "tool_call"}],
)
def test_run_tool_call_never_raises_on_malformed_call_dicts(tools, bad_call):
    msg = run_tool_call(tools, bad_call)
    assert isinstance(msg, ToolMessage)
    assert msg.status == "error"
    assert json.loads(msg.content)["error"] in {"invalid_arguments", "unknown_tool"}


@pytest.mark.parametrize("args", ["doc_id=d03", None, ["d03"], 3, ("d03",), {1: 2}])
def test_run_tool_call_refuses_args_that_are_not_an_object(tools, args):
    msg = run_tool_call(tools, {"name": "read_evidence", "args": args, "id": "c-args", "type": "tool_call"})
    assert isinstance(msg, ToolMessage)
    assert msg.tool_call_id == "c-args" and msg.status == "error"
    assert json.loads(msg.content)["error"] == "invalid_arguments"


def test_run_tool_call_accepts_a_single_tool(read):
    msg = run_tool_call(read, tool_call("read_evidence", {"doc_id": "d03", "offset": 4321}, "one"))
    assert msg.status == "success" and json.loads(msg.content)["text"] == ANSWER


def test_run_tool_call_hides_unexpected_exceptions_as_internal_error(tmp_path):
    def explode(x: str) -> str:
        raise RuntimeError(f"secret path {tmp_path}/db.sqlite exploded")

    boom = StructuredTool.from_function(explode, name="explode", description="fails")
    msg = run_tool_call([boom], tool_call("explode", {"x": "1"}, "boom-1"))
    assert msg.status == "error" and msg.tool_call_id == "boom-1"
    assert json.loads(msg.content) == {"error": "internal_error", "message": ERROR_CODES["internal_error"]}
    assert str(tmp_path) not in msg.content and "RuntimeError" not in msg.content


def test_error_payload_never_includes_an_unregistered_code():
    with pytest.raises(KeyError):
        EvidenceError("made_up_code")


def test_tools_built_twice_over_one_index_are_independent(index):
    a, b = evidence_tools(index), evidence_tools(index)
    assert a[0].invoke({"query": "q"}) == b[0].invoke({"query": "q"})
    assert a[2] is not b[2]


def test_locate_searches_the_whole_permitted_snapshot_not_only_the_rows_shown(index):
    # the manifest is capped at 3 rows (d00-d02), but locate searches every document the principal may read
    search, locate, _ = evidence_tools(index, manifest_limit=3)
    manifest = json.loads(search.invoke({"query": "x"}))
    assert [m["doc_id"] for m in manifest["candidates"]] == ["d00", "d01", "d02"] and manifest["omitted"] == 9
    assert json.loads(locate.invoke({"term": "单批上限"})) == [{"doc_id": "d03", "offset": 4321}]