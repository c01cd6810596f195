"""The one registry of tool profiles: each registered name to its :class:`~._base.Profile`. Notebook 08.

``evidence_tools(..., profile=name)``, the command lines' ``--profile``, the eval's flows and the audit (which reads
every registered profile's replies back) look profiles up here; a new profile is one module and one :func:`register`
call (a built-in one: one entry in :data:`PROFILES`).
"""

from __future__ import annotations

from ._article import ARTICLE
from ._base import Profile
from ._compact import COMPACT
from ._offloaded import OFFLOADED

__all__ = ["PROFILES", "profile_of", "register"]

#: The profiles known by name, in the order the CLIs offer them (``article`` first: the teaching default). A profile
#: here is also one whose replies the audit reads back (:meth:`~._base.Profile.read_reply`).
PROFILES: dict[str, Profile] = {p.name: p for p in (ARTICLE, COMPACT, OFFLOADED)}


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
