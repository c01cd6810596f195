"""Who may call the MCP server and what they may read: the tokens file, the loopback rule. Issue 27.

The tokens file (``--tokens FILE``, JSON or TOML) maps bearer tokens to principals (:class:`~evidence_lib._access.
Principal`, notebook 04) and, for a ``--corpus`` folder, gives documents their grants (``parse_access``; a document
not listed is open teaching material, readable by every principal)::

    [tokens."secret-alice"]
    tenant = "acme"
    user = "alice"
    groups = ["finance"]

    [documents.payroll]
    tenant = "acme"
    read = ["group:finance"]
"""

from __future__ import annotations

import ipaddress
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._access import Access, Principal, parse_access

__all__ = ["LOCAL_PRINCIPAL", "MAX_TOKENS_FILE_BYTES", "ServerConfig", "check_loopback", "host_port", "load_config"]

#: The one principal of a stdio server (a local process speaks for the user who started it).
LOCAL_PRINCIPAL = Principal("local", "local")
#: A tokens file larger than this is refused unread.
MAX_TOKENS_FILE_BYTES = 1_000_000
_PRINCIPAL_KEYS = frozenset({"tenant", "user", "groups"})


@dataclass(frozen=True)
class ServerConfig:
    """Bearer tokens -> principals, and grants per doc_id for a folder corpus."""

    tokens: Mapping[str, Principal] = field(default_factory=dict)
    documents: Mapping[str, Access | None] = field(default_factory=dict)


def check_loopback(host: str) -> str:
    """``host`` if it is a loopback address (or ``localhost``), else ``ValueError``: the server never listens on a
    network interface (a bearer token over plain HTTP is only safe on this machine)."""
    if host == "localhost":
        return host
    try:
        if ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    raise ValueError(f"--host {host!r} is not a loopback address: use 127.0.0.1, ::1 or localhost")


def host_port(host: str, port: int) -> str:
    """``host:port`` as a client's ``Host`` header spells it (an IPv6 address in brackets)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return f"{host}:{port}"
    return f"[{address.compressed}]:{port}" if address.version == 6 else f"{address.compressed}:{port}"


def _principal(token: str, value: Any) -> Principal:
    if not isinstance(value, Mapping) or not set(value) <= _PRINCIPAL_KEYS or not {"tenant", "user"} <= set(value):
        raise ValueError(f"tokens file: the principal of a token must be {{tenant, user, groups?}} (token #{token})")
    groups = value.get("groups", [])
    parts = [value["tenant"], value["user"], *groups] if isinstance(groups, list) else [None]
    if not all(isinstance(p, str) and p for p in parts):
        raise ValueError(f"tokens file: tenant, user and groups must be non-empty strings (token #{token})")
    return Principal(value["tenant"], value["user"], frozenset(groups))


def _tokens(raw: Any) -> dict[str, Principal]:
    if not isinstance(raw, Mapping) or not raw:
        raise ValueError("tokens file: 'tokens' must map at least one bearer token to a principal")
    tokens = {}
    for n, (token, value) in enumerate(raw.items(), 1):
        if not isinstance(token, str) or len(token) < 16 or not token.isascii() or not token.isprintable() \
                or " " in token:
            raise ValueError(f"tokens file: token #{n} must be 16+ printable ASCII characters without spaces")
        tokens[token] = _principal(str(n), value)
    return tokens


def _documents(raw: Any) -> dict[str, Access | None]:
    if not isinstance(raw, Mapping):
        raise ValueError("tokens file: 'documents' must map doc_ids to grants")
    try:
        return {str(doc_id): parse_access(dict(grants) if isinstance(grants, Mapping) else grants)
                for doc_id, grants in raw.items()}
    except ValueError as e:
        raise ValueError(f"tokens file: a document's grants are malformed ({e})") from None


def load_config(path: str | Path | None) -> ServerConfig:
    """The config in ``path`` (``.toml`` or JSON), or an empty one; ``ValueError`` for anything malformed."""
    if path is None:
        return ServerConfig()
    p = Path(path)
    if not p.is_file() or p.stat().st_size > MAX_TOKENS_FILE_BYTES:
        raise ValueError(f"tokens file {p.name}: not a regular file of at most {MAX_TOKENS_FILE_BYTES:,} bytes")
    text = p.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text) if p.suffix == ".toml" else json.loads(text)
    except ValueError as e:
        raise ValueError(f"tokens file {p.name}: cannot parse it ({type(e).__name__})") from None
    if not isinstance(data, Mapping) or not set(data) <= {"tokens", "documents"}:
        raise ValueError(f"tokens file {p.name}: expected an object with 'tokens' and optional 'documents'")
    return ServerConfig(_tokens(data.get("tokens")), _documents(data.get("documents", {})))
