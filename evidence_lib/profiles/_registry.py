"""The one registry of tool profiles: each registered name to its :class:`~._base.Profile`. Notebook 08.

``evidence_tools(..., profile=name)``, the MCP server's ``--profile`` and the eval's flows look profiles up here; a
new profile is one module and one :func:`register` call.
"""

from __future__ import annotations

from ._article import ARTICLE
from ._base import Profile
from ._compact import COMPACT

__all__ = ["PROFILES", "profile_of", "register"]

#: The profiles known by name, in the order the CLI offers them (``article`` first: the teaching default).
PROFILES: dict[str, Profile] = {p.name: p for p in (ARTICLE, COMPACT)}


def profile_of(profile: str | Profile) -> Profile:
    """The profile named ``profile`` (or ``profile`` itself); an unknown name raises ``ValueError`` naming the
    known ones, as ``evidence_tools`` always has."""
    if isinstance(profile, Profile):
        return profile
    if isinstance(profile, str) and profile in PROFILES:
        return PROFILES[profile]
    raise ValueError(f"profile is one of {tuple(PROFILES)}")


def register(profile: Profile) -> Profile:
    """Make ``profile`` known by its name (``evidence_tools(..., profile=name)``, the CLI); returns it."""
    if not isinstance(profile, Profile) or not profile.name:
        raise ValueError("register needs a Profile with a name")
    PROFILES[profile.name] = profile
    return profile
