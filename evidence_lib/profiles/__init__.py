"""The tools' reply formats as strategy objects, and the one parser that reads replies back. Notebook 08.

``article`` (:data:`ARTICLE`) is the first article's JSON, byte-exact (the teaching default); ``compact``
(:data:`COMPACT`) carries the same guarantees in fewer bytes and tokens. Each is a :class:`Profile`: the tools
compute what to show and the profile renders it, describes the tools and reads its replies back, so nothing outside
this package branches on a profile's name. :data:`PROFILES` maps each registered name to its profile;
:func:`profile_of` turns a name (or a profile) into the profile. A new profile is one module: subclass
:class:`Profile` (or :class:`CompactProfile`) and pass the object to ``evidence_tools``, or :func:`register` it.
:func:`excerpts` reads any sequence of replies back into citable :class:`~evidence_lib.Excerpt` objects.
"""

from __future__ import annotations

from ._article import ARTICLE, ArticleProfile
from ._base import Profile
from ._compact import COMPACT, CompactProfile, excerpts
from ._registry import PROFILES, profile_of, register

__all__ = ["ARTICLE", "COMPACT", "PROFILES", "ArticleProfile", "CompactProfile", "Profile", "excerpts", "profile_of",
           "register"]
