"""``python -m evidence_lib article`` prints the article's table and leaves no files behind."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evidence_lib.course.article import article_corpus


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    """Run the CLI once in an empty cwd with TMPDIR pointed at an empty directory."""
    cwd = tmp_path_factory.mktemp("cli-cwd")
    tmpdir = tmp_path_factory.mktemp("cli-tmpdir")
    env = {**os.environ, "TMPDIR": str(tmpdir), "TEMP": str(tmpdir), "TMP": str(tmpdir)}
    env.pop("TIKTOKEN_CACHE_DIR", None)
    env.pop("DATA_GYM_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-m", "evidence_lib", "article"], cwd=cwd, env=env,
                          capture_output=True, text=True, encoding="utf-8", timeout=180)
    return proc, cwd, tmpdir


@pytest.fixture(scope="module")
def table(cli_run):
    proc, _, _ = cli_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_cli_exits_zero_and_prints_one_json_object(cli_run):
    proc, _, _ = cli_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert isinstance(json.loads(proc.stdout), dict)


def test_cli_prints_the_articles_byte_counts(table):
    assert table["baseline_content_utf8_bytes"] == 156982
    assert table["manifest_plus_locations_plus_page_utf8_bytes"] == 3920
    assert table["content_byte_reduction_percent"] == 97.5
    assert table["hits"] == 12


def test_cli_reports_a_tool_message_and_the_verified_excerpt(table):
    assert table["message_class"] == "ToolMessage"
    assert table["verified_excerpt"] == "单批上限为200条，超时设为30秒。"


def test_cli_citation_points_at_d03_4321_4339_with_its_hash(table):
    d03 = next(d for d in article_corpus() if d.doc_id == "d03")
    assert table["citation"] == {
        "doc_id": "d03",
        "revision": "2026-10-27",
        "start": 4321,
        "end": 4339,
        "sha256": hashlib.sha256(d03.text.encode("utf-8")).hexdigest(),
    }
    assert list(table["citation"]) == ["doc_id", "revision", "start", "end", "sha256"]


def test_cli_boundary_checks_each_produce_the_expected_code(table):
    checks = table["boundary_checks"]
    assert len(checks) == 5
    for check in checks:
        assert check["code"] == check["expected"], check
    assert [c["expected"] for c in checks] == [
        "unknown_doc_id", "invalid_page_bounds", "invalid_page_bounds", "offset_exceeds_document", "evidence_changed",
    ]


def test_cli_first_page_next_offset_is_800(table):
    assert table["first_page_next_offset"] == 800


def test_cli_reports_integer_token_counts(table):
    keys = ["baseline_cl100k_tokens", "manifest_plus_locations_plus_page_cl100k_tokens",
            "baseline_approx_tokens", "manifest_plus_locations_plus_page_approx_tokens"]
    for key in keys:
        assert isinstance(table[key], int) and not isinstance(table[key], bool) and table[key] > 0, key
    assert table["baseline_cl100k_tokens"] > table["manifest_plus_locations_plus_page_cl100k_tokens"]
    assert table["baseline_cl100k_tokens"] > table["baseline_approx_tokens"]
    assert isinstance(table["content_token_reduction_percent"], float)


def test_cli_output_keeps_chinese_literal(cli_run):
    proc, _, _ = cli_run
    assert "单批上限为200条" in proc.stdout and "\\u" not in proc.stdout


def test_cli_leaves_no_files_in_tmpdir(cli_run):
    proc, _, tmpdir = cli_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _listing(tmpdir) == []


def test_cli_leaves_no_files_in_the_working_directory(cli_run):
    proc, cwd, _ = cli_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _listing(cwd) == []



@pytest.mark.parametrize("how, prog", [("module", "python -m evidence_lib"), ("script", "evidence-lib")])
def test_help_names_the_command_as_it_was_invoked(how, prog, tmp_path):
    script = Path(sys.executable).with_name("evidence-lib")  # the console script pip installed beside python
    if how == "script" and not script.exists():
        pytest.skip(f"console script not installed at {script}")
    cmd = [sys.executable, "-m", "evidence_lib", "--help"] if how == "module" else [str(script), "--help"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, encoding="utf-8", timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith(f"usage: {prog} "), proc.stdout.splitlines()[:1]
