"""The folder an MCP server serves, as it is now (issue 31, items 1, 5 and 6), through the SDK's client over stdio and
streamable HTTP: an edited file gets a new revision and its old citation is stale, a deleted one is gone, an added one
is found; a file that is not UTF-8 text (invalid UTF-8 or a NUL byte) is named at start, and left out (named once on
stderr) when it turns bad while the server runs; names starting with a dot are skipped, as a shell's ``*.txt`` does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

from mcp_kit import (
    LIMITS,
    TRANSPORTS,
    ask,
    corpus,  # noqa: F401 - a pytest fixture, used by name
    mcp_session,
    task_of,
    tokens,  # noqa: F401 - corpus and tokens are fixtures
    write_corpus,
)

from evidence_lib.__main__ import main as cli_main
from evidence_lib._answers import format_answer
from evidence_lib._index import sha256_hex
from evidence_lib.retrieval._corpora import folder_corpus

QUOTE = "The batch limit is 200 rows per call."
START = LIMITS.index(QUOTE)
EDITED = LIMITS.replace("200", "500")  # the same size: only the stat's times and the bytes change
ADDED = "Retries\nThe retry limit is 7 attempts per call.\n"


def revision(text: str) -> str:
    return sha256_hex(text.encode())[:12]


def verdict(reply: tuple[str, bool]) -> dict:
    assert not reply[1], reply
    return json.loads(reply[0])


def error(reply: tuple[str, bool]) -> str:
    assert reply[1], reply
    return json.loads(reply[0])["error"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_each_call_sees_the_folder_as_it_is_now(transport: str, corpus: Path, tokens: Path) -> None:
    cited = format_answer("200 rows. [1]", [("limits", revision(LIMITS), START, START + len(QUOTE), QUOTE)])
    async with mcp_session(transport, corpus, tokens) as served:
        s = served.session
        task = await task_of(s)
        page = await ask(s, "read_evidence", task=task, doc_id="limits", offset=START, limit=len(QUOTE))
        assert QUOTE in page[0] and revision(LIMITS) in page[0]
        assert verdict(await ask(s, "verify_citations", task=task, answer=cited))["verified"] is True

        (corpus / "limits.txt").write_text(EDITED, encoding="utf-8")  # edited: a new revision, the old one is stale
        page = await ask(s, "read_evidence", task=task, doc_id="limits", offset=START, limit=len(QUOTE))
        assert "500 rows" in page[0] and revision(EDITED) in page[0] and "200 rows" not in page[0]
        stale = verdict(await ask(s, "verify_citations", task=task, answer=cited))
        assert stale["verified"] is False and [c["reason"] for c in stale["checks"]] == ["document_changed"]
        assert "500 rows" in (await ask(s, "locate_evidence", task=task, term="batch limit"))[0]

        (corpus / "limits.txt").unlink()  # deleted: unknown for reads, searches, locates and citations
        assert error(await ask(s, "read_evidence", task=task, doc_id="limits")) == "unknown_doc_id"
        gone = verdict(await ask(s, "verify_citations", task=task, answer=cited))
        assert [c["reason"] for c in gone["checks"]] == ["unknown_doc_id"]
        assert "limits" not in (await ask(s, "search_evidence", task=task, query="batch limit"))[0]
        assert "batch limit" not in (await ask(s, "locate_evidence", task=task, term="batch limit"))[0]

        (corpus / "retries.txt").write_text(ADDED, encoding="utf-8")  # added: found by search, locate and read
        assert "retries" in (await ask(s, "search_evidence", task=task, query="retry limit"))[0]
        assert "7 attempts" in (await ask(s, "locate_evidence", task=task, term="retry limit"))[0]
        fresh = await task_of(s)  # a task started now sees the same folder
        assert "7 attempts" in (await ask(s, "read_evidence", task=fresh, doc_id="retries"))[0]
        assert error(await ask(s, "read_evidence", task=fresh, doc_id="limits")) == "unknown_doc_id"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_file_that_turns_bad_is_left_out_and_named_once(transport: str, corpus: Path, tokens: Path) -> None:
    async with mcp_session(transport, corpus, tokens) as served:
        s = served.session
        task = await task_of(s)
        (corpus / "limits.txt").write_bytes(LIMITS.encode() + b"\x00")  # a NUL byte
        (corpus / "legacy.txt").write_bytes("caf\u00e9 limit".encode("latin-1"))  # not UTF-8
        for _ in range(3):  # the server keeps answering; each file is named once
            assert error(await ask(s, "read_evidence", task=task, doc_id="limits")) == "unknown_doc_id"
            assert error(await ask(s, "read_evidence", task=task, doc_id="legacy")) == "unknown_doc_id"
            assert "上限" in (await ask(s, "locate_evidence", task=task, term="上限"))[0]  # the rest is served
        lines = served.log_lines()
        assert sum("limits.txt" in line for line in lines) == 1
        assert sum("legacy.txt" in line for line in lines) == 1
        assert any("limits.txt holds a NUL byte" in line for line in lines)
        assert any("legacy.txt is not valid UTF-8" in line for line in lines)
        assert not any("Traceback" in line for line in lines)
        (corpus / "limits.txt").write_text(LIMITS, encoding="utf-8")  # fixed: served again
        assert "200 rows" in (await ask(s, "read_evidence", task=task, doc_id="limits", offset=START))[0]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_dotfiles_are_not_served(transport: str, corpus: Path, tokens: Path) -> None:
    (corpus / ".hidden.txt").write_text("The secret batch limit is 999.\n", encoding="utf-8")
    (corpus / "._limits.txt").write_bytes(b"\x00\x05\x16\x07\xff Mac OS X metadata")  # what macOS writes beside a file
    async with mcp_session(transport, corpus, tokens) as served:  # starts: the AppleDouble file is not read
        s = served.session
        task = await task_of(s)
        (corpus / ".late.txt").write_text("The secret batch limit is 999.\n", encoding="utf-8")
        for doc_id in (".hidden", "._limits", ".late", "hidden"):
            assert error(await ask(s, "read_evidence", task=task, doc_id=doc_id)) == "unknown_doc_id"
        assert "999" not in (await ask(s, "locate_evidence", task=task, term="secret batch"))[0]
        assert ".hidden" not in (await ask(s, "search_evidence", task=task, query="secret batch limit"))[0]
        assert not any(".txt" in line for line in served.log_lines())  # skipped, not refused


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("name,data,said", [("nul.txt", b"batch\x00limit", "nul.txt holds a NUL byte (byte 5)"),
                                            ("latin.txt", b"caf\xe9", "latin.txt is not valid UTF-8 (byte 3)")])
async def test_a_file_that_is_not_utf8_text_is_named_at_start(transport: str, corpus: Path, tokens: Path, name: str,
                                                              data: bytes, said: str) -> None:
    (corpus / name).write_bytes(data)
    with pytest.raises(Exception):  # noqa: B017 - stdio: the connection closes; HTTP: the server exits
        async with mcp_session(transport, corpus, tokens):
            pass
    log = tokens.with_name(f"{tokens.name}.{transport}.log").read_text(encoding="utf-8")
    assert said in log and "Traceback" not in log


def test_one_rule_for_files_that_cannot_be_documents(corpus: Path, capsys) -> None:
    (corpus / ".hidden.txt").write_text("dotfile", encoding="utf-8")
    (corpus / "._limits.txt").write_bytes(b"\x00\x05\x16\x07\xff")
    assert sorted(d.doc_id for d in folder_corpus(corpus)) == ["limits", "payroll"]
    for name, data in (("nul.txt", b"a\x00b"), ("latin.txt", b"caf\xe9")):
        (corpus / name).write_bytes(data)
        with pytest.raises(ValueError, match=f"^{name} .*a document is UTF-8 text without NUL bytes"):
            folder_corpus(corpus)
        assert cli_main(["mcp", "--corpus", str(corpus)]) == 2
        assert name in capsys.readouterr().err
        (corpus / name).unlink()


def test_help_says_which_files_are_served(capsys) -> None:
    with pytest.raises(SystemExit):
        cli_main(["mcp", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "starting with a dot are skipped" in text and "NUL byte" in text and "as it is now" in text


def _bob_replies(folder: Path, edit_hidden: bool) -> list[tuple[str, bool]]:
    """Bob's replies to one sequence of calls; between them, ``payroll`` (which he may not see) is edited or not."""
    from evidence_lib._access import Access, Principal
    from evidence_lib.integrations.mcp import build_server, fixed_source
    from evidence_lib.retrieval._folder import FolderSource

    bob = Principal("acme", "bob")
    grants = {"payroll": Access("acme", frozenset({"group:finance"}))}
    server = build_server(fixed_source(FolderSource(folder, grants)), tokens={"b" * 16: bob})
    task = json.loads(server.dispatch(bob, "start_task", {}).content[0].text)["task"]

    def call(name: str, **args) -> tuple[str, bool]:
        result = server.dispatch(bob, name, {"task": task, **args})
        return result.content[0].text, bool(result.isError)

    replies = [call("search_evidence", query="batch limit"), call("locate_evidence", term="batch limit")]
    if edit_hidden:
        (folder / "payroll.txt").write_text("工资单\n单批上限改为80条。\n", encoding="utf-8")
    replies += [call("locate_evidence", term="batch limit"), call("read_evidence", doc_id="limits", offset=START),
                call("search_evidence", query="batch limit"), call("read_evidence", doc_id="payroll")]
    return replies


def test_an_edit_to_a_document_one_may_not_see_changes_nothing_one_sees(tmp_path: Path) -> None:
    edited = _bob_replies(write_corpus(tmp_path / "a"), edit_hidden=True)
    untouched = _bob_replies(write_corpus(tmp_path / "b"), edit_hidden=False)
    assert edited == untouched
    assert "@" not in edited[2][0].splitlines()[1]  # the revision, shown once, is not shown again
