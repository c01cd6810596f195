"""Notebook 13 and its guide say what the server does (issue 34's review of 13): the try-it's hidden outcome holds for
both settings it asks about, the guide's LangGraph snippet answers through a real HTTP server, its stdio snippets name
an absolute Python, and its team section gives loopback's reason and the way a team reaches the server.

Real servers (subprocesses on free loopback ports), the notebook's own try-it cell, the guide's own code block.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

from mcp_kit import LIMITS, corpus, http_server, tokens  # noqa: F401 - corpus and tokens are fixtures

from evidence_lib.course.article import article_corpus
from evidence_lib.course.mcp_session import McpSession, ServerProcess
from evidence_lib.eval import load_corpus
from evidence_lib.integrations.mcp._config import check_loopback

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "13_mcp-server.ipynb"
GUIDE = (ROOT / "docs" / "mcp-server.md").read_text(encoding="utf-8")
ALICE = "alice-token-0123456789"


def _cell(marker: str) -> str:
    """The source of notebook 13's first code cell holding ``marker``."""
    cells = nbformat.read(NOTEBOOK, as_version=4).cells
    return next(c.source for c in cells if c.cell_type == "code" and marker in c.source)


def _try_it(tmp_path: Path, server_args_line: str) -> list[str]:
    """Run the notebook's try-it cell as committed, ``server_args`` set by ``server_args_line``; its printed lines."""
    from evidence_lib.store import SQLiteStore, system_clock

    folder = tmp_path / "docs"
    folder.mkdir()
    for doc in article_corpus():
        (folder / f"{doc.doc_id}.txt").write_text(doc.text, encoding="utf-8")
    tokens_file = tmp_path / "tokens.json"
    tokens_file.write_text(json.dumps({"tokens": {ALICE: {"tenant": "acme", "user": "alice"}}}), encoding="utf-8")
    store_file = tmp_path / "evidence.db"
    with SQLiteStore(store_file, system_clock) as store:
        store.put_snapshot("acme", "mcp", "mcp", load_corpus(str(folder))[1])
    source = _cell("victim, after =")
    line = next(x for x in source.splitlines() if x.startswith("server_args = "))
    namespace = {"json": json, "folder": folder, "tokens_file": tokens_file, "ALICE": ALICE, "McpSession": McpSession,
                 "ServerProcess": ServerProcess,
                 "store_args": ["--store", str(store_file), "--tokens", str(tokens_file)]}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(source.replace(line, server_args_line), namespace)  # the notebook's own cell
    return out.getvalue().splitlines()


def test_try_it_with_corpus_servers_b_answers_unknown_task(tmp_path: Path) -> None:
    """The hidden outcome: with --corpus each server keeps its tasks in memory, so B never knew A's handle."""
    comment = _cell("victim, after =").split("server_args = store_args  # then: ", 1)[1].splitlines()[0]
    lines = _try_it(tmp_path, f"server_args = {comment}")
    assert lines[0].startswith("A: read d08 -> d08 @")
    assert lines[1] == "B: read d09 -> unknown_task"
    assert lines[2] == "server A killed"
    assert all(x.endswith("-> unknown_task") for x in lines[3:]) and len(lines) == 7


def test_try_it_with_the_store_the_survivor_answers_and_d10_is_read_once(tmp_path: Path) -> None:
    """The other half: the survivor answers every read; d10, same bytes and revision as d08, is still read first."""
    lines = _try_it(tmp_path, "server_args = store_args")
    assert [x.split(" -> ")[1].split(" ")[0] if " -> " in x else x for x in lines] == [
        "d08", "d09", "server A killed", "already_read", "d10", "already_read", "already_read"]


def test_loopback_is_the_rule_the_notebook_and_the_guide_explain() -> None:
    with pytest.raises(ValueError, match="is not a loopback address"):
        check_loopback("0.0.0.0")
    prose = "\n".join(c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "markdown")
    for text in (" ".join(prose.split()), " ".join(GUIDE.split())):
        assert "a bearer token over plain HTTP is safe only on this machine" in text
        assert "HTTPS reverse proxy" in text


def test_the_guides_stdio_snippets_name_an_absolute_python() -> None:
    section = GUIDE.split("## Connect a client", 1)[1].split("\n## ", 1)[0]
    added = re.findall(r"claude mcp add evidence -- (\S+)", section)
    commands = re.findall(r'"command": "([^"]+)"', section)
    assert added and commands
    assert all(c.startswith("/") for c in added + commands), added + commands
    assert "~/.cursor/mcp.json" in section and "Application Support/Claude" in section


async def test_the_guides_langgraph_snippet_answers_with_a_verified_citation(corpus: Path, tokens: Path) -> None:
    """The guide's code block, as written, with the test's server URL: the adapters' tools inside create_agent."""
    pytest.importorskip("langchain_mcp_adapters", reason="langchain-mcp-adapters is not installed (the mcp extra)")
    pytest.importorskip("langchain.agents", reason="create_agent needs the agents extra")
    from langchain_core.messages import SystemMessage
    from test_mcp_clients import CitingReader

    from evidence_lib.course.readers import PolicyChatModel
    from evidence_lib.profiles import COMPACT

    snippet = GUIDE.split("**A LangGraph agent**", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    revision = {d.doc_id: d.revision for d in load_corpus(str(corpus))[1]}["limits"]
    reader = CitingReader(revision)
    first: list = []  # the first message the model is given, at each turn
    respond = reader.respond
    reader.respond = lambda messages: first.append(messages[0]) or respond(messages)
    with http_server(corpus, tokens) as url:
        namespace: dict = {}
        exec(snippet.replace("http://127.0.0.1:8765/mcp", url), namespace)  # the guide's own code
        answer = await namespace["ask"](PolicyChatModel(reader=reader), "What is the batch limit?")
    assert answer == reader.answer() and "The batch limit is 200 rows per call." in LIMITS
    assert reader.verdict == {"verified": True, "checks": [
        {"line": 1, "doc_id": "limits", "start": 12, "end": 49, "reason": "ok"}]}
    # The agent is given the server's reading_contract prompt as its system prompt, at every turn.
    assert first and all(isinstance(m, SystemMessage) and COMPACT.system_prompt in m.content for m in first)
