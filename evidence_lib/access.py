"""Who may discover and read what. Introduced in notebook 04 (scenario 5) and used by every store.

A :class:`Principal` comes from the application (its authentication middleware) and is bound
into the tools when they are built; it is never taken from a model's arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

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
    ``discover=None`` means "whoever may read may also discover".
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
        granted = self.read if action == "read" or self.discover is None else self.discover
        # Whoever may discover but not read sees the entry, never the text.
        return bool(granted & principal.names)


def allowed(access: Access | None, principal: Principal | None, action: Action) -> bool:
    """``access=None`` marks open teaching material: everyone may discover and read it."""
    return True if access is None else access.allows(principal, action)
