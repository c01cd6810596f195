"""``python -m evidence_lib audit``: LangChain and OpenAI histories, malformed files, masking, no document text."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from langchain_core.messages import SystemMessage, convert_to_openai_messages, messages_to_dict

from evidence_lib.audit._report import mask
from evidence_lib.course.readers import RereadReader
from evidence_lib.course.tasks import run_setting

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2"
BEARER = "Bearer abcdefghijklmnop.qrstu"


def audit(path, *args):
    return subprocess.run([sys.executable, "-m", "evidence_lib", "audit", str(path), *args], capture_output=True,
                          text=True, encoding="utf-8", timeout=120)


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    run = run_setting(RereadReader, "duplicate_read", tmp_path_factory.mktemp("audit"))
    leaky = SystemMessage(f"api_key={SECRET}; Authorization: {BEARER}")
    return [leaky, *run.messages[1:]]


@pytest.mark.parametrize("fmt", ["langchain", "openai"])
def test_audit_reports_sizes_candidates_duplicates_and_findings(tmp_path, history, fmt):
    dumped = messages_to_dict(history) if fmt == "langchain" else convert_to_openai_messages(history)
    path = tmp_path / "history.json"
    path.write_text(json.dumps(dumped, ensure_ascii=False), encoding="utf-8")
    human = audit(path)
    assert human.returncode == 1, human.stderr  # 1: findings
    assert f"({fmt} format)" in human.stdout and "duplicate reads: 1" in human.stdout
    assert "candidates per manifest: 12" in human.stdout and "duplicate_read" in human.stdout
    report = json.loads(audit(path, "--json").stdout)
    assert report["format"] == fmt and report["tools"]["search_evidence"]["output_bytes"] == 3638
    assert report["tools"]["read_evidence"]["calls"] == 2 and report["citations"] == {"total": 1, "without_read": 0}
    assert [f["code"] for f in report["findings"]] == ["duplicate_read"]
    for out in (human.stdout, json.dumps(report, ensure_ascii=False)):
        assert "单批上限为" not in out and "批处理任务需保留" not in out, "document text must never be echoed"
        assert SECRET not in out and "abcdefghijklmnop" not in out


def test_audit_masks_secrets_in_what_it_shows(tmp_path):
    msgs = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"id-{SECRET}", "type": "function", "function": {"name": SECRET, "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": f"id-{SECRET}", "content": '{"error": "unknown_tool"}'}]
    path = tmp_path / "h.json"
    path.write_text(json.dumps(msgs), encoding="utf-8")
    out = audit(path, "--json")
    assert SECRET not in out.stdout and "[masked]" in out.stdout
    assert mask(f"token: {SECRET}") == "token: [masked]" and mask("plain words") == "plain words"


@pytest.mark.parametrize("content, expected", [
    ("{not json", "not valid JSON (line 1, column 2)"),
    ('{"a": 1}', "must hold a list of messages"),
    ('[{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": 5}]', "message 1: tool_calls must be a list"),
    ('[{"role": "user", "content": "q"}, {"role": "wizard"}]', "message 1: unknown role"),
    ('[{"role": "user", "content": "q"}, 7]', "message 1: not an object"),
    ('[{"role": "tool", "content": "secret document text"}]', "message 0: a tool message needs a tool_call_id"),
    ('[{"type": "ai", "data": {"content": 5}}]', "message 0: not a LangChain message dict"),
    ('[{"type": "human", "data": {"content": "q"}}, {"role": "user", "content": "q"}]', "message 1: mixes"),
])
def test_malformed_files_get_a_clear_error_naming_the_message(tmp_path, content, expected):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    out = audit(path)
    assert out.returncode == 2 and expected in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and "secret document text" not in out.stderr


def test_missing_and_non_utf8_files(tmp_path):
    assert "cannot read the file" in audit(tmp_path / "nope.json").stderr
    (tmp_path / "latin.json").write_bytes(b'["\xff"]')
    assert "not UTF-8" in audit(tmp_path / "latin.json").stderr


def test_audit_reads_a_compact_history(tmp_path):
    from evidence_lib.course.readers import CarefulReader
    from evidence_lib.course.tasks import ARTICLE_TERMS, revised_corpus, run_reader

    first = run_reader(CarefulReader(ARTICLE_TERMS), tmp_path / "a", profile="compact")
    again = run_reader(CarefulReader(ARTICLE_TERMS), tmp_path / "b", revised_corpus(), profile="compact",
                       history=first.messages)  # a second task: d03 edited, a new excerpt, a new hash
    path = tmp_path / "compact.json"
    path.write_text(json.dumps(convert_to_openai_messages(again.messages), ensure_ascii=False), encoding="utf-8")
    human = audit(path)
    assert human.returncode == 0, human.stdout + human.stderr  # 0: no findings
    assert "candidates per manifest: 12, 12" in human.stdout and "positions per locate: 1, 1" in human.stdout
    assert "citations: 2, without a read: 0" in human.stdout and "findings: none" in human.stdout
    report = json.loads(audit(path, "--json").stdout)
    assert report["tools"]["locate_evidence"]["calls"] == 2 and "read_evidence" not in report["tools"]
    assert report["manifests"][0]["omitted"] == 0
    for out in (human.stdout, json.dumps(report, ensure_ascii=False)):
        assert "单批上限为" not in out and "批处理说明" not in out, "no document text, no titles"
