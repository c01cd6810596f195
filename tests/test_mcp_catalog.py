"""The server teaches its own protocol (issue 31, items 8 and 10), through the SDK's client over stdio and HTTP: the
reading contract as a prompt, the catalog and bounded pages as resources (a page is read by the task's
``read_evidence``: same bytes, same budget), and ``initialize`` advertises exactly tools, prompts and resources."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

from mcp.shared.exceptions import McpError
from mcp_kit import (
    BOB_TOKEN,
    LIMITS,
    TRANSPORTS,
    ask,
    corpus,  # noqa: F401 - a pytest fixture, used by name
    mcp_session,
    task_of,
    tokens,  # noqa: F401 - a pytest fixture, used by name
    write_corpus,
)

from evidence_lib._ledger import Budget
from evidence_lib._paging import MAX_PAGE_CHARS
from evidence_lib.profiles import COMPACT

PAGE = "evidence://page/{task}/{doc_id}/{offset}/{limit}"


def page(task: str, doc_id: str, offset: int | str = 0, limit: int | str = 100) -> str:
    return PAGE.format(task=task, doc_id=quote(doc_id, safe=""), offset=offset, limit=limit)


async def read(session, uri: str) -> str:
    result = await session.read_resource(uri)
    (content,) = result.contents
    return content.text


async def refusal(session, uri: str) -> dict:
    with pytest.raises(McpError) as refused:
        await session.read_resource(uri)
    return json.loads(refused.value.error.message)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_initialize_advertises_exactly_tools_prompts_and_resources(transport: str, corpus: Path,
                                                                         tokens: Path) -> None:
    async with mcp_session(transport, corpus, tokens) as served:
        capabilities = served.session.get_server_capabilities().model_dump(exclude_none=True)
        prompts = (await served.session.list_prompts()).prompts
        resources = (await served.session.list_resources()).resources
        templates = (await served.session.list_resource_templates()).resourceTemplates
    assert set(capabilities) - {"experimental"} == {"tools", "prompts", "resources"}
    assert not capabilities.get("experimental")  # the SDK sends an empty object: nothing experimental
    assert capabilities["resources"] == {"subscribe": False, "listChanged": False}
    assert [p.name for p in prompts] == ["reading_contract"] and prompts[0].description
    assert [str(r.uri) for r in resources] == ["evidence://catalog"] and resources[0].description
    assert [t.uriTemplate for t in templates] == ["evidence://catalog/{cursor}", PAGE]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_reading_contract_is_a_prompt(transport: str, corpus: Path, tokens: Path) -> None:
    async with mcp_session(transport, corpus, tokens) as served:
        plain = await served.session.get_prompt("reading_contract")
        asked = await served.session.get_prompt("reading_contract", {"question": "What is the batch limit?"})
        with pytest.raises(McpError):
            await served.session.get_prompt("no_such_prompt")
    (message,) = plain.messages
    assert message.role == "user" and COMPACT.system_prompt in message.content.text
    assert "start_task" in message.content.text and "verify_citations" in message.content.text
    assert asked.messages[0].content.text.endswith("Question: What is the batch limit?")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_catalog_lists_what_the_caller_may_discover(transport: str, corpus: Path, tokens: Path,
                                                              tmp_path: Path) -> None:
    async with mcp_session(transport, corpus, tokens) as served:
        alice = json.loads(await read(served.session, "evidence://catalog"))
    assert [d["doc_id"] for d in alice["documents"]] == ["limits", "payroll"] and alice["next"] is None
    assert alice["documents"][0] == {"doc_id": "limits", "title": "Batch limit", "revision": alice["documents"][0][
        "revision"], "chars": len(LIMITS), "readable": True}
    if transport == "http":  # Bob may not see payroll: his catalog is the one of a folder without it
        async with mcp_session(transport, corpus, tokens, token=BOB_TOKEN) as bob:
            theirs = await read(bob.session, "evidence://catalog")
        alone = write_corpus(tmp_path / "alone")
        (alone / "payroll.txt").unlink()
        no_grants = tmp_path / "no-grants.json"  # the same tokens; no grant names the missing document
        no_grants.write_text(json.dumps({"tokens": json.loads(tokens.read_text())["tokens"]}), encoding="utf-8")
        async with mcp_session(transport, alone, no_grants, token=BOB_TOKEN) as bob:
            without = await read(bob.session, "evidence://catalog")
        assert theirs == without and "payroll" not in theirs and "工资" not in theirs


async def test_the_catalog_pages_a_large_folder(corpus: Path, tokens: Path) -> None:
    for n in range(120):
        (corpus / f"note-{n:03}.txt").write_text(f"Note {n}\nbody {n}\n", encoding="utf-8")
    async with mcp_session("stdio", corpus, tokens) as served:
        seen, uri = [], "evidence://catalog"
        while uri is not None:
            body = json.loads(await read(served.session, uri))
            assert len(json.dumps(body).encode()) <= 24_000 and body["total"] == 122
            seen += [d["doc_id"] for d in body["documents"]]
            uri = body["next"]
    assert len(seen) == 122 == len(set(seen))


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_page_resource_is_read_evidence_charged_to_its_task(transport: str, corpus: Path,
                                                                    tokens: Path) -> None:
    async with mcp_session(transport, corpus, tokens) as served:
        s = served.session
        task = await task_of(s)
        text = await read(s, page(task, "limits", 12, 37))
        tool = await ask(s, "read_evidence", task=task, doc_id="limits", offset=12, limit=37)
        fresh = await task_of(s)
        same = await ask(s, "read_evidence", task=fresh, doc_id="limits", offset=12, limit=37)
        assert text == same[0] and "The batch limit is 200 rows per call." in text
        assert json.loads(tool[0])["status"] == "already_read"  # the resource read was this task's read
        unknown = await refusal(s, page(task, "no-such-doc"))
        too_long = await refusal(s, page(task, "limits", 0, MAX_PAGE_CHARS + 1))
        no_task = await refusal(s, page("t-never-issued", "limits"))
        malformed = await refusal(s, "evidence://page/only/two")
        spent = None
        for n in range(Budget().max_calls + 1):  # the task's budget holds for resource reads too
            try:
                await read(s, page(task, "limits", n % len(LIMITS), 1))
            except McpError as e:
                spent = json.loads(e.error.message)
                break
        after = await ask(s, "read_evidence", task=task, doc_id="limits", offset=70, limit=1)
    assert unknown["error"] == "unknown_doc_id" and too_long["error"] == "invalid_page_bounds"
    assert no_task["error"] == "unknown_task" and malformed["error"] == "unknown_resource"
    assert spent is not None and spent["error"] == "budget_exhausted"
    assert after[1] and json.loads(after[0])["error"] == "budget_exhausted"


async def test_a_forbidden_page_is_refused_like_a_missing_one(corpus: Path, tokens: Path) -> None:
    async with mcp_session("http", corpus, tokens, token=BOB_TOKEN) as served:
        task = await task_of(served.session)
        forbidden = await refusal(served.session, page(task, "payroll"))
        missing = await refusal(served.session, page(task, "no-such-doc"))
    assert forbidden == missing and forbidden["error"] == "unknown_doc_id"


def test_a_document_one_may_discover_but_not_read_shows_its_doc_id_only(corpus: Path) -> None:
    from evidence_lib._access import Access, Principal
    from evidence_lib.integrations.mcp import build_server, fixed_source
    from evidence_lib.retrieval._folder import FolderSource

    grants = {"payroll": Access("acme", frozenset({"group:finance"}), frozenset({"*"}))}
    bob = Principal("acme", "bob")
    server = build_server(fixed_source(FolderSource(corpus, grants)), tokens={"b" * 16: bob})
    text, mime = server.resource_text(bob, "evidence://catalog")
    rows = {row["doc_id"]: row for row in json.loads(text)["documents"]}
    assert mime == "application/json" and rows["payroll"] == {"doc_id": "payroll", "readable": False}
    assert "工资" not in text and rows["limits"]["readable"] is True


def test_the_reading_contract_says_revisions_are_the_corpus_own() -> None:
    """The contract's example cites a dated revision (``d03@2026-10-27#145412``); a folder's are sha256 prefixes, a
    store's whatever its snapshot holds: the prompt says to cite the revision as a reply showed it, whatever its form
    (issue 34's review of 13, item 14)."""
    from evidence_lib.integrations.mcp._catalog import contract

    text = contract("compact")
    assert "@2026-10-27" in text  # the shared contract's example, kept
    assert "A revision is what a reply showed" in text and "12 hex digits of a file's sha256" in text
    assert text.index("@2026-10-27") < text.index("A revision is what")  # the note follows the example
    assert "A revision is what a reply showed" in contract("article")  # no dated example there: the note holds too
