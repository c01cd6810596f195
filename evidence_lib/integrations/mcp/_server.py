"""The MCP server: the three tools, ``start_task`` and ``verify_citations`` over the official ``mcp`` SDK. Issue 27.

Every evidence call runs the very tools :func:`~evidence_lib._tools.evidence_tools` builds (notebook 02; the compact
profile of notebook 08 by default) through :func:`~evidence_lib._toolkit.run_tool_call`, so a client of this server
receives the bytes a LangChain agent's ``ToolMessage`` holds, and a refusal is an MCP tool error (``isError``) whose
text is the tools' JSON refusal with its stable code. One budget per task (notebook 05): ``start_task`` mints a
handle bound to the caller's principal; every other call passes it, and another principal's handle is refused
exactly like one never minted. The principal comes from the transport (stdio: one local principal; HTTP: the
bearer token, through the SDK's ``TokenVerifier``), never from a tool argument (notebook 04). Where tasks live is
:mod:`._tasks`' concern: in this process, or, with a store, in the store only (issue 33: several processes serve one
task).

Beside the tools (issue 31): the reading contract as a prompt and the catalog and bounded pages as resources
(:mod:`._catalog`); over HTTP, DNS-rebinding checks for the bound address, no OAuth metadata, and a guard in front of
the SDK's JSON parsing (:mod:`._http`). ``initialize`` advertises exactly tools, prompts and resources.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import Mapping
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.fastmcp import FastMCP
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.shared.exceptions import McpError
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    ErrorData,
    GetPromptResult,
    Prompt,
    PromptArgument,
    PromptMessage,
    Resource,
    ResourceTemplate,
    TextContent,
)
from mcp.types import Tool as MCPTool
from pydantic import AnyUrl
from starlette.routing import Route

from ..._access import Principal
from ..._citations import CITATION_FORM, REASONS, verify_sources
from ..._errors import EvidenceError, error_payload, to_json
from ..._ledger import Budget
from ..._paging import MAX_PAGE_CHARS
from ..._toolkit import refusal_message, run_tool_call
from ..._tools import evidence_tools
from ._catalog import (
    CATALOG_TEMPLATE,
    CATALOG_URI,
    INSTRUCTIONS,
    MAX_QUESTION_CHARS,
    PAGE_TEMPLATE,
    PROMPT,
    catalog_cursor,
    catalog_page,
    contract,
    page_args,
)
from ._http import BodyGuard, NoAuthorizationServer, auth_settings, transport_security
from ._tasks import MAX_TASKS_PER_PRINCIPAL, MAX_VERIFY_CALLS, MemoryTasks, Source, StoreTasks, Task, TaskIndex

__all__ = ["EVIDENCE_TOOLS", "MAX_ANSWER_CHARS", "MAX_CHECKS_SHOWN", "MAX_REPLY_BYTES", "MAX_REQUEST_BYTES",
           "MAX_TASKS_PER_PRINCIPAL", "MAX_VERIFY_CALLS", "EvidenceMCP", "Source", "TokenPrincipals", "build_server",
           "fixed_source"]

#: The tools served from :func:`evidence_tools`, in protocol order.
EVIDENCE_TOOLS = ("search_evidence", "locate_evidence", "read_evidence")
#: Longest answer ``verify_citations`` checks (characters); a longer one is refused unread.
MAX_ANSWER_CHARS = 20_000
#: Most citation checks one ``verify_citations`` reply lists (the rest are counted as ``omitted``).
MAX_CHECKS_SHOWN = 40
#: Largest reply (UTF-8 bytes) the server sends: the tools' own bounds keep far under it (tests/test_mcp_bounds.py);
#: a reply over it would be refused as ``result_too_large``, never sent.
MAX_REPLY_BYTES = 24_000
#: Largest HTTP request body the server reads.
MAX_REQUEST_BYTES = 256 * 1024
#: MCP's error code for a resource that does not exist (the specification's resources page); a refusal of another
#: kind (bounds, budget) is ``INVALID_PARAMS``.
RESOURCE_NOT_FOUND = -32002
_HANDLE_MAX_CHARS = 64
_TASK_FIELD = {"type": "string", "maxLength": _HANDLE_MAX_CHARS,
               "description": "The task handle start_task returned (one budget per task)."}


class TokenPrincipals:
    """The SDK's ``TokenVerifier`` for local use: bearer tokens from the tokens file, compared in constant time."""

    def __init__(self, tokens: Mapping[str, Principal]) -> None:
        self._tokens = dict(tokens)

    def principal(self, token: str) -> Principal | None:
        """The principal whose bearer token is ``token``, else ``None``; every known token is compared in
        constant time, so the answer's timing does not tell how close a guess was (notebook 13)."""
        found = None
        for known, principal in self._tokens.items():
            if hmac.compare_digest(known.encode(), token.encode("utf-8", "replace")):
                found = principal
        return found

    async def verify_token(self, token: str) -> AccessToken | None:
        """The MCP SDK's ``TokenVerifier`` hook: an ``AccessToken`` for a known token (its client id the
        principal's user), ``None`` for any other (notebook 13)."""
        principal = self.principal(token)
        return None if principal is None else AccessToken(token=token, client_id=principal.user, scopes=[])


def _error(error: BaseException) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=to_json(error_payload(error)))], isError=True)


def _schema(tool: Any) -> dict[str, Any]:
    """A tool's JSON schema with the ``task`` handle first and required."""
    schema = tool.args_schema.model_json_schema()
    schema["properties"] = {"task": _TASK_FIELD, **schema.get("properties", {})}
    schema["required"] = ["task", *schema.get("required", [])]
    schema.pop("title", None)
    return schema


def _tool_list(profile: str) -> list[MCPTool]:
    """``tools/list``: the same for every principal (built from the tools' own schemas and descriptions)."""
    from ..._index import EvidenceIndex

    template = evidence_tools(EvidenceIndex.in_memory([]), None, profile=profile)
    tools = [MCPTool(name="start_task", description="Start a task: returns the task handle every other tool needs. "
                     "One task, one budget: start a new task for a new question.",
                     inputSchema={"type": "object", "properties": {}, "additionalProperties": False})]
    tools += [MCPTool(name=t.name, description=t.description, inputSchema=_schema(t)) for t in template]
    tools.append(MCPTool(
        name="verify_citations",
        description="Check a final answer's Sources lines ([n] doc_id@revision [start, end) \"quote\") against the "
                    "documents and this task's reads: each line ok, or why not.",
        inputSchema={"type": "object", "additionalProperties": False, "required": ["task", "answer"],
                     "properties": {"task": _TASK_FIELD, "answer": {
                         "type": "string", "maxLength": MAX_ANSWER_CHARS,
                         "description": f"The final answer with its Sources block (at most {MAX_ANSWER_CHARS:,} "
                                        "characters)."}}}))
    return tools


def _check_row(check: Any) -> dict[str, Any]:
    """One ``verify_citations`` row: which Sources line, what it cites, and why it does or does not verify; a line that
    does not parse shows the expected form instead of an empty citation."""
    c = check.citation
    if c is None:
        return {"line": check.line, "reason": check.reason, "expected": CITATION_FORM}
    return {"line": check.line, "doc_id": c.doc_id, "start": c.start, "end": c.end, "reason": check.reason}


class EvidenceMCP(FastMCP):
    """FastMCP serving the evidence tools: ``tools/list`` and ``tools/call`` are answered here, the SDK does the
    transports, sessions and bearer-token checks. ``local`` is the stdio principal (``None`` over HTTP)."""

    def __init__(self, tasks: MemoryTasks | StoreTasks, *, local: Principal | None,
                 verifier: TokenPrincipals | None = None, **settings: Any) -> None:
        super().__init__("evidence", instructions=INSTRUCTIONS, token_verifier=verifier, **settings)
        self.tasks, self.local, self.verifier = tasks, local, verifier
        self._listing = _tool_list(tasks.profile)

    async def list_tools(self) -> list[MCPTool]:
        return list(self._listing)

    def caller(self) -> Principal | None:
        """The principal of the current request: the local one (stdio) or the bearer token's (HTTP)."""
        if self.local is not None:
            return self.local
        token = get_access_token()
        return None if token is None or self.verifier is None else self.verifier.principal(token.token)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:  # type: ignore[override]
        principal = self.caller()
        if principal is None:
            return _error(EvidenceError("unknown_task"))
        return await asyncio.to_thread(self.dispatch, principal, name, arguments or {})

    # -- prompts and resources (issue 31, item 10) ---------------------------------------------------------------------
    async def list_prompts(self) -> list[Prompt]:
        return [Prompt(name=PROMPT, title="The reading contract",
                       description="How to use these tools and cite what you read: the system prompt a LangChain agent "
                                   "of this library is given (search, locate, read; Sources lines that verify).",
                       arguments=[PromptArgument(name="question", required=False,
                                                 description="The question to answer (optional, at most "
                                                             f"{MAX_QUESTION_CHARS:,} characters).")])]

    async def get_prompt(self, name: str,
                         arguments: dict[str, Any] | None = None) -> GetPromptResult:
        question = (arguments or {}).get("question")
        if name != PROMPT or set(arguments or {}) - {"question"} or not (
                question is None or isinstance(question, str) and len(question) <= MAX_QUESTION_CHARS):
            raise McpError(ErrorData(code=INVALID_PARAMS, message=f"the one prompt is {PROMPT}, with an optional "
                                     f"question of at most {MAX_QUESTION_CHARS:,} characters"))
        text = contract(self.tasks.profile, question)
        return GetPromptResult(description="the reading contract of this server's tools",
                               messages=[PromptMessage(role="user", content=TextContent(type="text", text=text))])

    async def list_resources(self) -> list[Resource]:
        return [Resource(uri=AnyUrl(CATALOG_URI), name="catalog", title="Documents you may discover",
                         description="The documents your token may discover: doc_id, title, revision, chars, "
                                     "readable (a bounded page; 'next' names the next one).",
                         mimeType="application/json")]

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        return [ResourceTemplate(uriTemplate=CATALOG_TEMPLATE, name="catalog_page", title="A later catalog page",
                                 description="The catalog from row {cursor} on (its previous page's 'next').",
                                 mimeType="application/json"),
                ResourceTemplate(uriTemplate=PAGE_TEMPLATE, name="page", title="One page of a document",
                                 description="read_evidence(doc_id, offset, limit) of task {task} (start_task gives "
                                             f"one): at most {MAX_PAGE_CHARS} characters, charged to that task's "
                                             "budget; doc_id percent-encoded.",
                                 mimeType="text/plain")]

    async def read_resource(self, uri: Any) -> list[ReadResourceContents]:
        text, mime = await asyncio.to_thread(self.resource_text, self.caller(), str(uri))
        return [ReadResourceContents(content=text, mime_type=mime)]

    def resource_text(self, principal: Principal | None, uri: str) -> tuple[str, str]:
        """``resources/read`` for ``principal``: ``(text, MIME type)`` of a catalog page or of one document page read
        by a task's ``read_evidence``; a refusal is an ``McpError`` whose message is the tools' JSON refusal (an
        unknown resource, task or document: ``RESOURCE_NOT_FOUND``; unknown and forbidden documents alike)."""
        if principal is None:
            raise _refused(to_json(error_payload(EvidenceError("unknown_task"))))
        cursor = catalog_cursor(uri)
        if cursor is not None:
            try:
                return catalog_page(self.tasks.catalog_index(principal), principal, cursor), "application/json"
            except EvidenceError as e:
                raise _refused(to_json(error_payload(e))) from None
        found = page_args(uri)
        if found is None:
            raise _refused(to_json(error_payload(EvidenceError("unknown_resource"))))
        handle, args = found
        result = self.dispatch(principal, "read_evidence", {"task": handle, **args})
        reply = result.content[0]
        assert isinstance(reply, TextContent)  # dispatch answers in text, a refusal too
        text = reply.text
        if result.isError:
            raise _refused(text)
        return text, "text/plain"

    def streamable_http_app(self) -> Any:
        """The SDK's app, with :class:`~._http.BodyGuard` in front of the MCP endpoint (after the bearer check) and,
        with bearer tokens, :class:`~._http.NoAuthorizationServer` answering the OAuth fallback endpoints."""
        app = super().streamable_http_app()
        for route in app.routes:
            if isinstance(route, Route) and route.path == self.settings.streamable_http_path:
                route.app = BodyGuard(route.app, self.settings.max_request_body_size)
        if self.verifier is not None:
            app.add_middleware(NoAuthorizationServer)
        return app

    def dispatch(self, principal: Principal, name: str, arguments: Mapping[str, Any]) -> CallToolResult:
        """One tool call of ``principal``, never raising: a refusal is an MCP tool error with its stable code."""
        try:
            if name == "start_task":
                if arguments:
                    raise EvidenceError("invalid_arguments", problems=[{"field": None, "problem": "takes_no_args"}])
                return _text(to_json({"task": self.tasks.start(principal)}))
            args = {k: v for k, v in arguments.items() if k != "task"}
            with self.tasks.use(arguments.get("task"), principal) as task:
                if name == "verify_citations":
                    return self.verify(task, args)
                if name not in EVIDENCE_TOOLS:
                    raise EvidenceError("unknown_tool")
                msg = run_tool_call(task.tools, {"name": name, "args": args, "id": "mcp", "type": "tool_call"})
            return _text(msg.content, msg.status == "error")
        except Exception as e:  # noqa: BLE001 - a client never sees a traceback
            return _text(refusal_message(e).content, True)

    def verify(self, task: Task, args: Mapping[str, Any]) -> CallToolResult:
        """``verify_citations``: every Sources line checked against the index and this task's reads
        (:func:`~evidence_lib._citations.verify_sources`, the check behind ``EvidenceMiddleware.verify_answer``)."""
        answer = args.get("answer")
        if set(args) != {"answer"} or not isinstance(answer, str) or len(answer) > MAX_ANSWER_CHARS:
            raise EvidenceError("invalid_arguments", problems=[{"field": "answer", "problem": "a string of at most "
                                                                f"{MAX_ANSWER_CHARS} characters"}])
        self.tasks.spend_verify(task)  # inside the task's one call (dispatch: tasks.use)
        session = task.tools[0].session
        session.refresh()  # the documents as they are now: an edited file's old citation is document_changed
        # What this task's read and locate work on now (over a retriever: the last search's snapshot and the rest
        # of the corpus), so a citation is checked against the very bytes the task was served.
        checks = verify_sources(session.index, answer, task.ledger.reads, task.principal)
        rows = [_check_row(c) for c in checks]
        reply: dict[str, Any] = {"verified": bool(checks) and all(c.ok for c in checks)}
        if not checks:  # nothing to check is a verdict too: say why, in the citation checks' words
            reply.update(reason="no_citations", message=REASONS["no_citations"])
        reply["checks"] = rows[:MAX_CHECKS_SHOWN]
        if len(rows) > MAX_CHECKS_SHOWN:
            reply["omitted"] = len(rows) - MAX_CHECKS_SHOWN
        return _text(to_json(reply))


def _refused(text: str) -> McpError:
    """A resource refusal: the tools' JSON refusal ``text`` as the JSON-RPC error's message."""
    try:
        code = json.loads(text).get("error", "")
    except ValueError:
        code = ""
    return McpError(ErrorData(code=RESOURCE_NOT_FOUND if code.startswith("unknown_") else INVALID_PARAMS, message=text))


def _text(text: Any, is_error: bool = False) -> CallToolResult:
    """One text reply; over :data:`MAX_REPLY_BYTES` it becomes the ``result_too_large`` refusal."""
    text = str(text)
    if len(text.encode("utf-8", "replace")) > MAX_REPLY_BYTES:
        return _error(EvidenceError("result_too_large"))
    return CallToolResult(content=[TextContent(type="text", text=text)], isError=is_error)


def build_server(source: Source, *, local: Principal | None = None, tokens: Mapping[str, Principal] | None = None,
                 profile: str = "compact", budget: Budget | None = None, host: str = "127.0.0.1",
                 port: int = 8000) -> EvidenceMCP:
    """The server over ``source``: stdio with ``local`` (one principal), or streamable HTTP with ``tokens`` on the
    loopback ``host``/``port`` (bearer tokens checked by :class:`TokenPrincipals`; no OAuth authorization server is
    advertised; Host and Origin must name the bound address; malformed bodies are refused before the SDK parses
    them: :mod:`._http`)."""
    tasks = source.tasks(budget or Budget(), profile)
    if local is not None:
        return EvidenceMCP(tasks, local=local, host=host, port=port)
    if not tokens:
        raise ValueError("an HTTP server needs --tokens (bearer tokens mapped to principals)")
    return EvidenceMCP(tasks, local=None, verifier=TokenPrincipals(tokens), auth=auth_settings(host, port), host=host,
                       port=port, stateless_http=True, max_request_body_size=MAX_REQUEST_BYTES,
                       transport_security=transport_security(host, port))


def fixed_source(index: TaskIndex) -> Source:
    """A :class:`Source` over one fixed index, or a retriever source (a folder behind BM25): every task reads it,
    each with its own ledger."""
    return Source(lambda _principal: index)
