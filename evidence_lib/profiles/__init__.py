"""The tools' reply formats as strategy objects, and the one parser that reads replies back. Notebook 08.

``article`` (:mod:`.article`) is the first article's JSON, byte-exact (the teaching default); ``compact``
(:mod:`.compact`) carries the same guarantees in fewer bytes and tokens. Each is a :class:`~.base.Profile`: the
tools compute what to show and the profile renders it, describes the tools and reads its replies back, so nothing
outside this package branches on a profile's name. :data:`PROFILES` maps each registered name to its profile;
:func:`profile_of` turns a name (or a profile) into the profile. A new profile is one module: subclass
:class:`Profile` (or :class:`CompactProfile`) and pass the object to ``evidence_tools``, or :func:`register` it.
"""

from __future__ import annotations

from .article import ARTICLE, ArticleProfile
from .base import Excerpt, Profile
from .compact import (COMPACT, COMPACT_EXCERPTS, COMPACT_TITLE_CHARS, CONTINUES_NOTE, HANDLE_HEX, MAX_ALSO,
                      WINDOW_AFTER, WINDOW_BEFORE, Block, CompactProfile, ManifestRow, compact_locate,
                      compact_manifest, compact_page, content_revision, excerpts, handle, handle_length,
                      located_documents, manifest_rows, matches_handle, next_number, query_words, window)

__all__ = ["ARTICLE", "COMPACT", "COMPACT_EXCERPTS", "COMPACT_TITLE_CHARS", "CONTINUES_NOTE", "HANDLE_HEX",
           "MAX_ALSO", "PROFILES", "WINDOW_AFTER", "WINDOW_BEFORE", "ArticleProfile", "Block", "CompactProfile",
           "Excerpt", "ManifestRow", "Profile", "compact_locate", "compact_manifest", "compact_page",
           "content_revision", "excerpts", "handle", "handle_length", "located_documents", "manifest_rows",
           "matches_handle", "next_number", "profile_of", "query_words", "register", "window"]

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
