"""Who may discover and read what. Introduced in notebook 04 (scenario 5) and used by every store.

A :class:`Principal` comes from the application (its authentication middleware) and is bound
into the tools when they are built; it is never taken from a model's arguments.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["EVERYONE", "NOBODY", "Access", "Action", "Principal", "allowed", "parse_access"]

Action = Literal["discover", "read"]
EVERYONE = "*"


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: tenant, user and optional groups."""

    tenant: str
    user: str
    groups: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", frozenset(self.groups))

    @property
    def names(self) -> frozenset[str]:
        """The grant names this principal answers to: ``*``, ``user:<id>``, ``group:<id>``."""
        return frozenset({EVERYONE, f"user:{self.user}", *(f"group:{g}" for g in self.groups)})

    def __repr__(self) -> str:
        groups = f", groups={sorted(self.groups)}" if self.groups else ""
        return f"Principal({self.tenant!r}, {self.user!r}{groups})"


@dataclass(frozen=True)
class Access:
    """Grants on one document or resource, inside one tenant.

    ``read`` and ``discover`` hold grant names (``*``, ``user:alice``, ``group:finance``).
    ``discover=None`` means "whoever may read may also discover". Reading needs both grants: a document the
    principal may not discover is hidden, and a hidden document is refused like one that never existed.
    """

    tenant: str
    read: frozenset[str] = frozenset({EVERYONE})
    discover: frozenset[str] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "read", frozenset(self.read))
        if self.discover is not None:
            object.__setattr__(self, "discover", frozenset(self.discover))

    def allows(self, principal: Principal | None, action: Action) -> bool:
        """True when ``principal`` may ``action`` under these grants (no principal: nothing)."""
        if principal is None or principal.tenant != self.tenant:
            return False
        names = principal.names
        may_discover = bool((self.read if self.discover is None else self.discover) & names)
        # Whoever may discover but not read sees the entry, never the text; whoever may not discover sees nothing.
        return may_discover if action == "discover" else may_discover and bool(self.read & names)


def allowed(access: Access | None, principal: Principal | None, action: Action) -> bool:
    """``access=None`` marks open teaching material: everyone may discover and read it."""
    return True if access is None else access.allows(principal, action)


#: Grants nobody answers to: what a document with malformed access metadata gets (fail closed).
NOBODY = Access("", frozenset(), frozenset())
_ACCESS_KEYS = frozenset({"tenant", "read", "discover"})


def _grants(value: object, key: str) -> frozenset[str]:
    if not isinstance(value, (list, tuple, set, frozenset)):
        raise ValueError(f"{key!r} is a {type(value).__name__}, not a list of grant names")
    if not all(isinstance(g, str) for g in value):
        raise ValueError(f"{key!r} holds a grant name that is not a string")
    return frozenset(value)


def parse_access(value: object) -> Access | None:
    """Grants as a document's metadata may hold them, checked strictly; ``ValueError`` for anything else.

    Accepted: ``None`` (open: no grants); an :class:`Access`; a mapping ``{"tenant": str, "read": [names],
    "discover": [names] | None}`` as ``dataclasses.asdict`` or a JSON round trip gives it (``tenant`` a
    non-empty string, ``read`` required, ``discover`` optional and ``None`` when absent, grant lists of strings,
    no other keys); that mapping as a JSON string. A list, a bare string grant, a number or any other key is
    refused, never guessed at. Used by :func:`evidence_lib.retrieval._snapshot.default_access`.
    """
    if value is None or isinstance(value, Access):
        return value
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError("a string that is not JSON") from None
        if not isinstance(value, dict):
            raise ValueError(f"a JSON {type(value).__name__}, not a JSON object")
    if not isinstance(value, Mapping):
        raise ValueError(f"a {type(value).__name__}, not an Access or a mapping")
    keys = set(value)
    if not keys <= _ACCESS_KEYS or not {"tenant", "read"} <= keys:
        raise ValueError(f"keys {sorted(map(str, keys))}, not tenant, read and an optional discover")
    tenant = value["tenant"]
    if not isinstance(tenant, str) or not tenant:
        raise ValueError("'tenant' is not a non-empty string")
    discover = value.get("discover")
    return Access(tenant, _grants(value["read"], "read"), None if discover is None else _grants(discover, "discover"))
