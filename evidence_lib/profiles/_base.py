"""What a tool profile decides, one method per decision: the :class:`Profile` strategy. Notebook 08.

A profile is the reply format of :func:`~evidence_lib._tools.evidence_tools`: how the three tools describe
themselves, which system prompt goes with them, how a manifest, a locate and a page are shown, and how a reader
(the eval flows) reads those replies back. The tools compute what to show (rows, offsets, excerpts, pages, all
checked and charged the same way for every profile) and hand it to the profile to render; nothing outside
``evidence_lib/profiles/`` asks which profile is in force. A new profile is one module: subclass :class:`Profile`
(or a built-in one) and pass the object as ``evidence_tools(..., profile=...)``, or :func:`~evidence_lib.profiles.
register` it to use it by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from .._index import IndexEntry
from .._locate import LocateOptions

__all__ = ["Profile"]


class Profile(ABC):
    """One reply format of the three tools. Subclasses set :attr:`name` and implement every abstract method.

    ``session`` arguments are the tools' shared session (:class:`evidence_lib._tools._Session`): the profile asks it
    to compute (``offset_locate``, ``excerpt_locate``) and, for per-snapshot state a format needs (revisions shown
    once, content handles), ``revision_once``, ``handle_of`` and ``mark_revisions_shown``.
    """

    #: The name ``evidence_tools(..., profile=...)`` and the registry know it by.
    name: str = ""

    def __repr__(self) -> str:
        return f"<profile {self.name}>"

    # -- what the model is told -----------------------------------------------------------------------------------
    @property
    @abstractmethod
    def system_prompt(self) -> str:
        """The reading contract for these replies (:mod:`evidence_lib._answers`)."""

    @abstractmethod
    def search_description(self, fixed: bool) -> str:
        """``search_evidence``'s description; ``fixed``: over a fixed index rather than a retriever."""

    @abstractmethod
    def locate_description(self, opts: LocateOptions, extended: bool) -> str:
        """``locate_evidence``'s description under ``opts``; ``extended``: it takes ``doc_id`` and ``cursor``."""

    @abstractmethod
    def read_description(self) -> str:
        """``read_evidence``'s description."""

    # -- what the tools take ---------------------------------------------------------------------------------------
    @abstractmethod
    def extended(self, fixed: bool) -> bool:
        """Whether search takes a ``cursor`` and locate a ``doc_id`` and ``cursor`` (``fixed``: a fixed index)."""

    @abstractmethod
    def default_locate_options(self) -> LocateOptions:
        """The locate options used when ``evidence_tools`` is given none."""

    @property
    def locate_ranks_by_query(self) -> bool:
        """Whether locate ranks what it shows by words, and so takes a ``query`` to rank by (else the last search's)."""
        return False

    @property
    def serves_neighbours(self) -> bool:
        """Whether one locate call reads around its matches (a store snapshot then fetches neighbouring chunks)."""
        return False

    # -- what the model sees ---------------------------------------------------------------------------------------
    @abstractmethod
    def manifest(self, session: Any, rows: list[dict[str, object]], cursor: int, total: int,
                 next_cursor: int | None, unfilled: tuple[int, int] | None, *, unsure: bool = False) -> str:
        """A search reply: ``rows`` (manifest entries from ``cursor`` on) of ``total`` the principal may see;
        ``unfilled=(empty, k)`` when a retriever's slots held nothing the caller may see; ``unsure`` when the
        retriever ranks before permissions and cannot be asked for more (the reply says places may be missing)."""

    @abstractmethod
    def locate(self, session: Any, term: str, entry: IndexEntry | None, cursor: int) -> tuple[str, list[tuple]]:
        """A locate reply and the ranges of text it shows (charged as reads: ``(doc_id, revision, start, end,
        sha256)``); ``entry``: only that document."""

    @abstractmethod
    def page(self, session: Any, entry: IndexEntry, body: Mapping[str, Any]) -> str:
        """A read reply from the verified page ``body`` (:func:`~evidence_lib._paging.page_reply`) of ``entry``."""

    # -- reading replies back (the eval flows) ---------------------------------------------------------------------
    @abstractmethod
    def manifest_shown(self, content: str) -> list[tuple[str, str]]:
        """``(doc_id, text)`` a search reply showed per document (title, and preview where shown)."""

    @abstractmethod
    def located(self, content: str) -> list[str]:
        """The documents a whole-snapshot locate reply says hold matches, in the order shown."""

    def located_counts(self, content: str) -> dict[str, int]:
        """How many matches a whole-snapshot locate reply says each document holds (``{}`` where it does not say)."""
        return {}

    @abstractmethod
    def match_offsets(self, content: str, doc_id: str) -> tuple[list[int], int | None]:
        """A one-document locate reply read back: the match (or excerpt) offsets and the next cursor."""

    @abstractmethod
    def next_offset(self, content: str) -> int | None:
        """Where a read reply says the next page starts (``None`` at the end)."""

