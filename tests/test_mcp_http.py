"""The MCP server's HTTP side under attack (issue 31, items 3, 7 and 8), against real servers on loopback:
DNS-rebinding checks for whatever loopback address ``--host`` names, malformed bodies answered as JSON-RPC parse
errors with one log line, and no OAuth authorization server advertised (an OAuth-capable client, the SDK's own, ends
in a clear 401 "bad token")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

import httpx
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata, OAuthToken
from mcp_kit import ALICE_TOKEN, corpus, serve_http, tokens  # noqa: F401 - corpus and tokens are fixtures

from evidence_lib.integrations.mcp._server import MAX_REQUEST_BYTES

HEADERS = {"Authorization": f"Bearer {ALICE_TOKEN}", "Content-Type": "application/json",
           "Accept": "application/json, text/event-stream"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "1"}}}
MALFORMED = {
    "a 5,000-digit JSON-RPC id": b'{"jsonrpc": "2.0", "id": ' + b"7" * 5000 + b', "method": "ping"}',
    "bytes that are not UTF-8": b'{"jsonrpc": "2.0", "id": 1, "method": "p\xff\xfeing"}',
    "JSON nested 2,000 deep in 4 KB": b"[" * 2000 + b"]" * 2000,
}


@pytest.mark.parametrize("host", ["127.0.0.2", "127.0.0.1", "localhost", "::1"])
def test_a_foreign_host_or_origin_is_refused_on_every_loopback_address(host: str, corpus: Path, tokens: Path,
                                                                       tmp_path: Path) -> None:
    with serve_http(corpus, tokens, tmp_path / "server.log", host=host) as server, httpx.Client(timeout=60) as http:
        own = server.url.split("/")[2]  # the Host header a client of the bound address sends
        assert http.post(server.url, json=INITIALIZE, headers=HEADERS).status_code == 200
        assert http.post(server.url, json=INITIALIZE, headers={**HEADERS, "Origin": f"http://{own}"}).status_code == 200
        evil_host = http.post(server.url, json=INITIALIZE, headers={**HEADERS, "Host": "evil.example"})
        evil_origin = http.post(server.url, json=INITIALIZE, headers={**HEADERS, "Origin": "http://evil.example"})
        other_port = http.post(server.url, json=INITIALIZE, headers={**HEADERS, "Host": own.rsplit(":", 1)[0] + ":1"})
        port = own.rsplit(":", 1)[1]
        as_localhost = http.post(server.url, json=INITIALIZE, headers={**HEADERS, "Host": f"localhost:{port}",
                                                                        "Origin": f"http://localhost:{port}"})
    assert evil_host.status_code == 421 and other_port.status_code == 421
    assert evil_origin.status_code == 403
    # a server on 127.0.0.1, ::1 or localhost is also reached as localhost (it resolves there); one on 127.0.0.2 is not
    assert as_localhost.status_code == (421 if host == "127.0.0.2" else 200)


def test_malformed_bodies_are_parse_errors_with_one_log_line(corpus: Path, tokens: Path, tmp_path: Path) -> None:
    with serve_http(corpus, tokens, tmp_path / "server.log") as server, httpx.Client(timeout=60) as http:
        # malformed bodies first: a well-formed request's own INFO lines may reach the log after its reply
        for what, body in MALFORMED.items():
            before = len(server.log_lines())
            reply = http.post(server.url, content=body, headers=HEADERS)
            assert reply.status_code == 400, (what, reply.status_code, reply.text[:200])
            error = reply.json()
            assert error["jsonrpc"] == "2.0" and error["id"] is None and error["error"]["code"] == -32700, what
            added = server.log_lines()[before:]
            assert len(added) == 1 and "-32700" in added[0], (what, added)
        too_big = http.post(server.url, content=b" " * (MAX_REQUEST_BYTES + 1), headers=HEADERS)
        still = http.post(server.url, json=INITIALIZE, headers=HEADERS)
        log = server.log.read_text(encoding="utf-8")
    assert too_big.status_code == 413 and still.status_code == 200
    assert "Traceback" not in log and "Exception" not in log


def test_no_authorization_server_is_advertised(corpus: Path, tokens: Path, tmp_path: Path) -> None:
    with serve_http(corpus, tokens, tmp_path / "server.log") as server, httpx.Client(timeout=60) as http:
        base = server.url.removesuffix("/mcp")
        unauthorized = http.post(server.url, json=INITIALIZE, headers={**HEADERS, "Authorization": "Bearer wrong"})
        metadata = [http.get(base + path).status_code for path in (
            "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")]
        register = http.post(base + "/register", json={"redirect_uris": ["http://127.0.0.1:1/cb"]})
    assert unauthorized.status_code == 401
    assert "resource_metadata" not in unauthorized.headers["www-authenticate"]
    assert metadata == [404, 404, 404, 404]
    assert register.status_code == 401 and register.json()["error"] == "invalid_token"


class _Storage(TokenStorage):
    """A static bearer token handed to the SDK's OAuth client, as a user who pasted it into an OAuth-capable client."""

    def __init__(self, token: str) -> None:
        self.token = OAuthToken(access_token=token, token_type="Bearer")

    async def get_tokens(self) -> OAuthToken | None:
        return self.token

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.token = tokens

    async def get_client_info(self):
        return None

    async def set_client_info(self, client_info) -> None:
        pass


def _innermost(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


async def _connect(url: str, token: str) -> str:
    """What the SDK's OAuth-capable client reports: ``"ok"``, or its error's type and message."""
    auth = OAuthClientProvider(server_url=url, storage=_Storage(token), client_metadata=OAuthClientMetadata(
        redirect_uris=["http://127.0.0.1:1/callback"], client_name="tests"))
    try:
        async with streamable_http_client(url, http_client=httpx.AsyncClient(auth=auth, timeout=60)) as (r, w, _), \
                ClientSession(r, w) as session:
            await session.initialize()
            await session.list_tools()
            return "ok"
    except BaseException as e:  # noqa: BLE001 - the report is the point
        inner = _innermost(e)
        return f"{type(inner).__name__}: {inner}"


async def test_an_oauth_client_with_a_bad_token_ends_in_a_clear_401(corpus: Path, tokens: Path,
                                                                    tmp_path: Path) -> None:
    with serve_http(corpus, tokens, tmp_path / "server.log") as server:
        good = await _connect(server.url, ALICE_TOKEN)
        bad = await _connect(server.url, "not-a-token-of-this-server")
    assert good == "ok"
    assert " 401 " in bad and "invalid_token" in bad and "bad or missing bearer token" in bad, bad
    body = json.loads(bad[bad.index("{"):])
    assert "no OAuth authorization server" in body["error_description"]
