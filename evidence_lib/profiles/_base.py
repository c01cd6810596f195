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
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from .._access import Principal
from .._index import IndexEntry, IndexProtocol
from .._ledger import ReadRecord
from .._locate import LocateOptions

__all__ = ["Profile", "ToolSession"]


class ToolSession(Protocol):
    """What a profile may ask of the tools' shared session (:class:`evidence_lib._tools._Session`): the index a call
    works on, who is asking, the locate options in force, and the per-snapshot state every format may show (revisions
    shown once, content handles). The session checks, admits and charges; the profile computes what to show."""

    #: The principal the application bound into the tools (never a tool argument).
    principal: Principal | None
    #: The locate options in force (``evidence_tools(..., locate_options=...)`` or the profile's default).
    locate_options: LocateOptions
    #: The last search's query (what a profile may rank by), ``None`` before any search.
    query: str | None
    #: What the session learnt of its texts: sha256 -> whether that text is NFC (read once per content).
    nfc_texts: dict[str, bool]

    @property
    def index(self) -> IndexProtocol:
        """What this call reads and locates in (the index it started with)."""
        ...

    @property
    def covers_all(self) -> bool:
        """Whether a whole-scope locate covers every document the principal may read (not only the last snapshot)."""
        ...

    def readable(self) -> list[IndexEntry]:
        """Every document the principal may read, in rank order."""
        ...

    def doc_order(self, entries: Sequence[IndexEntry], counts: Mapping[str, int]) -> dict[str, tuple[int, ...]]:
        """How a locate ranks the documents with matches (``counts``: matches per doc_id)."""
        ...

    def revision_once(self, entry: IndexEntry) -> str | None:
        """The revision to show with ``entry`` (``None``: the model was shown it already this snapshot)."""
        ...

    def handle_of(self, entry: IndexEntry) -> str:
        """``entry``'s content handle: ``#`` and the shortest sha256 prefix no other readable document shares."""
        ...

    def mark_revisions_shown(self, shown: Iterable[tuple[str, str]]) -> None:
        """``(doc_id, revision)`` pairs a reply showed: later replies leave those revisions out."""
        ...


class Profile(ABC):
    """One reply format of the three tools. Subclasses set :attr:`name` and implement every abstract method.

    ``session`` arguments are the tools' shared session, seen through :class:`ToolSession`: the profile computes what
    to show from its index (the article's offsets, the compact profile's excerpts) and asks it for the per-snapshot
    state a format needs (``revision_once``, ``handle_of``, ``mark_revisions_shown``).
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
    def manifest(self, session: ToolSession, rows: list[dict[str, object]], cursor: int, total: int,
                 next_cursor: int | None, unfilled: tuple[int, int] | None, *, unsure: bool = False) -> str:
        """A search reply: ``rows`` (manifest entries from ``cursor`` on) of ``total`` the principal may see;
        ``unfilled=(empty, k)`` when a retriever's slots held nothing the caller may see; ``unsure`` when the
        retriever ranks before permissions and cannot be asked for more (the reply says places may be missing)."""

    @abstractmethod
    def locate(self, session: ToolSession, term: str, entry: IndexEntry | None,
               cursor: int) -> tuple[str, list[ReadRecord]]:
        """A locate reply and the ranges of text it shows (charged as reads); ``entry``: only that document."""

    @abstractmethod
    def page(self, session: ToolSession, entry: IndexEntry, body: Mapping[str, Any]) -> str:
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

    @abstractmethod
    def read_reply(self, tool: str, content: str) -> Any:
        """A reply of ``tool`` in this format, read back in the article's shapes (what the audit reads:
        :func:`evidence_lib.audit.steps`), else ``None``: a manifest is a list of rows or ``{"candidates": [...],
        ...}``; a locate ``{"matches": [...]}`` (offsets) or ``{"excerpts": [page dicts]}`` (text shown); a read one
        page dict ``{doc_id, revision, sha256, start, end, text}``. A registered profile's replies are read by the
        audit without anything else to register."""

