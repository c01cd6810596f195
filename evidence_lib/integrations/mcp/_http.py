"""The HTTP side of the MCP server: which Host and Origin it answers, how it checks tokens, and the guard in front of
the SDK's JSON parsing. Issue 31.

* DNS rebinding (item 3): the SDK turns its Host/Origin checks on by itself only for the literal hosts ``127.0.0.1``,
  ``localhost`` and ``::1``; :func:`transport_security` always gives it the bound address and port, whatever
  loopback address ``--host`` named.
* Tokens from a file (item 8): the server is a plain bearer-token resource. :func:`auth_settings` names no resource
  server URL, so the SDK serves no protected-resource metadata and its 401 points at no authorization server; the
  endpoints an OAuth client falls back to without metadata answer a plain 401 "bad token"
  (:class:`NoAuthorizationServer`), so such a client ends there, not in a discovery error.
* Malformed bodies (item 7): :class:`BodyGuard` answers a body the SDK's ``json.loads`` would fail on with anything but
  ``JSONDecodeError`` (bytes that are not UTF-8, an integer of more digits than Python converts, JSON nested deeper
  than its parser recurses) as a JSON-RPC parse error, ``-32700`` with HTTP 400, and logs one line.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import PARSE_ERROR
from pydantic import AnyHttpUrl

from ._config import host_port

__all__ = ["BAD_TOKEN", "BodyGuard", "NoAuthorizationServer", "auth_settings", "host_port", "transport_security"]

#: Where the server's own one-line messages go (the command line prints them to stderr, one line each).
LOG = logging.getLogger("evidence_lib.mcp")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]


#: The names of this machine a client may use for a server bound to any one of them (``localhost`` resolves to the
#: other two): a server on 127.0.0.1 is also reached as ``localhost``.
LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")


def transport_security(host: str, port: int) -> TransportSecuritySettings:
    """DNS-rebinding protection on for the bound address and port, whatever loopback address it is: the ``Host``
    header must name it (a server bound to ``localhost``, ``127.0.0.1`` or ``::1`` answers to all three names) and an
    ``Origin``, when sent, must be ``http://`` and one of those. Any other host, or another port, is refused."""
    names = LOCAL_NAMES if host_port(host, port) in {host_port(n, port) for n in LOCAL_NAMES} else (host,)
    hosts = list(dict.fromkeys(host_port(n, port) for n in names))
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=[f"http://{h}" for h in hosts])


def auth_settings(host: str, port: int) -> AuthSettings:
    """The SDK's auth settings for bearer tokens checked by the server itself: no resource server URL, so no
    protected-resource metadata route and no ``resource_metadata`` in the 401 (there is no authorization server to
    point at; ``issuer_url`` is required by the SDK and used for nothing without an authorization-server provider)."""
    return AuthSettings(issuer_url=AnyHttpUrl(f"http://{host_port(host, port)}"), resource_server_url=None)


#: The endpoints an OAuth client tries when a server publishes no OAuth metadata (the MCP 2025-03-26 defaults).
OAUTH_FALLBACK_PATHS = frozenset({"/authorize", "/token", "/register"})
#: What they answer (HTTP 401, as the MCP endpoint's refusal of a bad token).
BAD_TOKEN = {"error": "invalid_token",
             "error_description": "bad or missing bearer token: this server has no OAuth authorization server; it "
                                  "accepts only the bearer tokens of its tokens file (ask its operator for one)"}


class NoAuthorizationServer:
    """ASGI middleware: :data:`OAUTH_FALLBACK_PATHS` answer 401 with :data:`BAD_TOKEN` (and
    ``WWW-Authenticate: Bearer error="invalid_token"``). An OAuth-capable client that got the MCP endpoint's 401 and
    found no metadata guesses these; it then reports a 401 "bad token" (the SDK's client: ``Registration failed: 401
    {"error": "invalid_token", ...}``) instead of a 404 from an authorization server that does not exist."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope.get("type") != "http" or scope.get("path") not in OAUTH_FALLBACK_PATHS:
            return await self.app(scope, receive, send)
        body = json.dumps(BAD_TOKEN).encode()
        await _reply(send, 401, body, b"application/json",
                     [(b"www-authenticate", b'Bearer error="invalid_token", error_description="bad or missing token"')])


def json_problem(body: bytes) -> str | None:
    """Why ``body`` is not JSON the SDK can parse, in a few words, or ``None`` (then the SDK parses it itself and
    answers its own ``JSONDecodeError`` and validation errors)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"not UTF-8 (byte {e.start})"
    try:
        json.loads(text)
    except RecursionError:
        return "nested too deep"
    except json.JSONDecodeError:
        return None  # the SDK answers it (-32700) with its own message
    except ValueError as e:  # an integer literal over Python's digit limit, ...
        return "a number too large to read" if "digits" in str(e) else "not JSON"
    return None


class BodyGuard:
    """ASGI middleware in front of the SDK's streamable HTTP endpoint: a JSON POST of an authenticated caller is read
    (up to ``max_bytes``; more is 413, as the SDK answers) and checked by :func:`json_problem` before the SDK sees it;
    a body the SDK would choke on gets a JSON-RPC parse error (``-32700``, HTTP 400) and one log line, never a 500 and
    a traceback. Anything else passes through untouched (an unauthenticated request reaches the SDK's 401 unread)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if not self._guards(scope):
            return await self.app(scope, receive, send)
        body, more, messages = bytearray(), True, []
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client left: nothing to answer
                return
            body += message.get("body", b"")
            more = bool(message.get("more_body", False))
            if len(body) > self.max_bytes:
                return await _reply(send, 413, b"Request body too large", b"text/plain; charset=utf-8")
        problem = json_problem(bytes(body))
        if problem is not None:
            LOG.warning("refused a request body (%s): JSON-RPC parse error -32700, HTTP 400", problem)
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": f"Parse error: {problem}"}}
            return await _reply(send, 400, json.dumps(error).encode(), b"application/json")
        messages.append({"type": "http.request", "body": bytes(body), "more_body": False})

        async def replay() -> Message:
            return messages.pop() if messages else await receive()

        await self.app(scope, replay, send)

    @staticmethod
    def _guards(scope: Scope) -> bool:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            return False
        if not isinstance(scope.get("user"), AuthenticatedUser):
            return False
        content_type = dict(scope.get("headers") or []).get(b"content-type", b"")
        return content_type.lower().startswith(b"application/json")


async def _reply(send: Callable[[Message], Awaitable[None]], status: int, body: bytes, content_type: bytes,
                 headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode()),
                            *(headers or [])]})
    await send({"type": "http.response.body", "body": body})
