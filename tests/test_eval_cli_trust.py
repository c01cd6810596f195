"""``python -m evidence_lib eval`` refuses bad input with exit 2 and one clear line (issue 16, defect 12).

Every refusal here goes through the real command line (``evidence_lib.__main__.main(argv)``, one case also as
a subprocess) and must: exit 2, print exactly one line on stderr, no traceback, no absolute path of the
test's folder, no terminal control character, and write no output file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from evidence_lib.__main__ import main
from evidence_lib._index import MAX_STORED_BYTES
from evidence_lib.eval._run import load_corpus

ROOT = Path(__file__).resolve().parents[1]
GOOD_TEXT = "Retry policy\nThe client retries a failed upload at most 7 times, then gives up.\n"
SPAN = "at most 7 times"
_UNSAFE = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}  # controls, format, surrogates, unassigned, separators


def _item(**over):
    start = GOOD_TEXT.index(SPAN)
    item = {"id": "q-1", "question": "How often does the client retry an upload?", "doc_id": "good",
            "answer_span": SPAN, "start": start, "end": start + len(SPAN), "locate_term": "retries"}
    return {**item, **over}


@pytest.fixture
def case(tmp_path):
    """A one-document corpus folder, a QA file that fits it, and an output path, all under ``tmp_path``."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.txt").write_text(GOOD_TEXT, encoding="utf-8")
    qa = tmp_path / "qa.json"
    qa.write_text(json.dumps([_item()]), encoding="utf-8")
    return corpus, qa, tmp_path / "out.json"


def _run(capsys, corpus, qa, out, *extra):
    rc = main(["eval", "--corpus", str(corpus), "--qa", str(qa), "--out", str(out), "--flows", "compact", *extra])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def _one_line_refusal(rc, err, tmp_path) -> str:
    assert rc == 2, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), err
    line = lines[0]
    assert line.startswith("error: "), line
    for folder in {str(tmp_path), str(tmp_path.resolve())}:
        assert folder not in line, line
    assert not any(unicodedata.category(c) in _UNSAFE for c in line), ascii(line)  # no ESC, BEL, C1, U+2028...
    return line


def test_the_fixture_itself_runs(capsys, case):
    """The control: the same corpus, QA file and output path without the defect run to exit 0."""
    corpus, qa, out = case
    rc, stdout, err = _run(capsys, corpus, qa, out)
    assert rc == 0, err
    assert json.loads(out.read_text(encoding="utf-8"))["questions"] == 1


@pytest.mark.parametrize("name, why", [
    ("has space.txt", "white space"),
    ("new\nline.txt", "white space"),
    ("tab\there.txt", "white space"),
    ("back\\slash.txt", "backslash"),
    ("x" * 129 + ".txt", "129 characters"),
    ("bell\x07.txt", "control character"),
    ("esc\x1b[31mred\x1b[0m.txt", "control character"),
])
def test_eval_refuses_a_folder_whose_file_names_the_index_refuses(capsys, case, name, why):
    """Issue 16 defect 12: a file name the index refuses as a doc_id is one line naming the file, before any run."""
    corpus, qa, out = case
    (corpus / name).write_text("Another document entirely.\n", encoding="utf-8")
    rc, _, err = _run(capsys, corpus, qa, out)
    line = _one_line_refusal(rc, err, corpus.parent)
    assert "file name" in line and why in line, line
    assert "\x1b" not in err and "\x07" not in err
    assert not out.exists()


def test_eval_refuses_a_file_name_that_is_not_utf8(capsys, case):
    """Issue 16 defect 12: a file name of undecodable bytes would become a doc_id with a lone surrogate."""
    corpus, qa, out = case
    if sys.platform == "darwin":
        pytest.skip("macOS file systems refuse non-UTF-8 names")
    with open(os.path.join(os.fsencode(corpus), b"caf\xe9.txt"), "wb") as f:
        f.write(b"Another document entirely.\n")
    rc, _, err = _run(capsys, corpus, qa, out)
    line = _one_line_refusal(rc, err, corpus.parent)
    assert "file name" in line and "UTF-8" in line, line
    assert not out.exists()


def test_a_128_character_file_name_is_still_a_document(case):
    """The limit is the index's own: 128 characters of doc_id (the name without ``.txt``) are accepted."""
    corpus, _, _ = case
    (corpus / ("y" * 128 + ".txt")).write_text("Another document entirely.\n", encoding="utf-8")
    _, docs = load_corpus(str(corpus))
    assert "y" * 128 in {d.doc_id for d in docs}


def test_eval_refuses_a_file_over_the_size_cap_without_reading_it(capsys, case):
    """Issue 16 defect 12: a document over the index's size cap is refused by its size, in one line."""
    corpus, qa, out = case
    with open(corpus / "huge.txt", "wb") as f:
        f.truncate(MAX_STORED_BYTES + 1)  # sparse: costs no disk
    rc, _, err = _run(capsys, corpus, qa, out)
    line = _one_line_refusal(rc, err, corpus.parent)
    assert "huge.txt" in line and f"{MAX_STORED_BYTES:,}" in line, line
    assert not out.exists()


def test_eval_refuses_out_pointing_at_a_folder_before_running(capsys, case):
    """Issue 16 defect 12: ``--out DIR`` is refused before any flow runs (no progress line, one error line)."""
    corpus, qa, out = case
    folder = out.parent / "results"
    folder.mkdir()
    rc, _, err = _run(capsys, corpus, qa, folder)
    line = _one_line_refusal(rc, err, out.parent)
    assert "--out" in line and "results" in line and "folder" in line, line


def test_eval_refuses_out_in_a_missing_folder_before_running(capsys, case):
    """Issue 16 defect 12: ``--out missing/OUT.json`` is refused before any flow runs."""
    corpus, qa, out = case
    rc, _, err = _run(capsys, corpus, qa, out.parent / "missing" / "out.json")
    line = _one_line_refusal(rc, err, out.parent)
    assert "--out" in line and "missing" in line and "does not exist" in line, line
    assert not (out.parent / "missing").exists()


def test_eval_refuses_a_deeply_nested_qa_file(capsys, case):
    """Issue 16 defect 12: JSON nested past Python's recursion limit is a QA error, not a ``RecursionError``."""
    corpus, qa, out = case
    qa.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    rc, _, err = _run(capsys, corpus, qa, out)
    line = _one_line_refusal(rc, err, out.parent)
    assert "qa.json" in line and "nested" in line, line
    assert not out.exists()


@pytest.mark.parametrize("key", ["question", "id", "answer_span", "question_en"])
def test_eval_refuses_a_lone_surrogate_in_the_qa_file_on_load(capsys, case, key):
    """Issue 16 defect 12: a lone surrogate (valid JSON escape, not writable as UTF-8) is refused on load,
    naming the item and the key, instead of a ``UnicodeEncodeError`` when the results are written."""
    corpus, qa, out = case
    item = _item()
    item[key] = item.get(key, "extra") + "\ud800"
    qa.write_text(json.dumps([item]), encoding="utf-8")  # json.dumps writes the surrogate as \ud800
    rc, _, err = _run(capsys, corpus, qa, out)
    line = _one_line_refusal(rc, err, out.parent)
    assert key in line and "surrogate" in line, line
    assert not out.exists()


def test_eval_names_a_missing_qa_file_without_its_folder(capsys, case):
    """Issue 16 defect 12: unreadable input is named by its file name only, never by an absolute path."""
    corpus, qa, out = case
    rc, _, err = _run(capsys, corpus, qa.parent / "nope.json", out)
    line = _one_line_refusal(rc, err, out.parent)
    assert "nope.json" in line, line


def test_eval_names_a_missing_corpus_folder_without_its_path(capsys, case):
    """Issue 16 defect 12: a corpus that is not a folder is named by its last component only."""
    corpus, qa, out = case
    rc, _, err = _run(capsys, corpus.parent / "nowhere", qa, out)
    line = _one_line_refusal(rc, err, out.parent)
    assert "nowhere" in line, line


def test_eval_reports_several_bad_items_on_one_line_without_control_characters(capsys, case):
    """Issue 16 defect 12: QA problems are one line (the first problem and how many more), and an item id
    holding terminal control characters is shown escaped."""
    corpus, qa, out = case
    bad = [_item(id="evil\x1b]0;owned\x07\x9b2J", start=0), _item(id="q-2", locate_term="absent"), _item(id="q-3")]
    qa.write_text(json.dumps(bad), encoding="utf-8")
    rc, _, err = _run(capsys, corpus, qa, out)
    line = _one_line_refusal(rc, err, out.parent)
    assert "evil" in line and "1 more" in line, line
    assert not any(c in err for c in "\x1b\x07\x9b")


def test_the_module_command_refuses_a_control_character_file_name_in_one_line(case):
    """Issue 16 defect 12, as a user runs it: ``python -m evidence_lib eval`` in a subprocess."""
    corpus, qa, out = case
    (corpus / "a\x1b[2Jb.txt").write_text("Another document entirely.\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "evidence_lib", "eval", "--corpus", str(corpus), "--qa", str(qa),
                           "--out", str(out), "--flows", "compact"], capture_output=True, text=True,
                          encoding="utf-8", cwd=ROOT, timeout=300)
    line = _one_line_refusal(proc.returncode, proc.stderr, corpus.parent)
    assert "file name" in line and proc.stdout == ""
    assert not out.exists()
