"""The three-tool protocol: search_evidence, locate_evidence, read_evidence. Taught in notebook 02.

``evidence_tools(index)`` returns real LangChain tools with strict argument schemas. Every
refusal raises :class:`~evidence_lib._errors.EvidenceError`; :func:`run_tool_call` runs one
tool call the way an agent loop would and always returns a ``ToolMessage``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import astuple, dataclass, field
from typing import Any

from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field, create_model

from . import _calls as calls
from ._access import Principal, allowed
from ._errors import EvidenceError, to_json
from ._handles import handle, handle_length
from ._ids import MAX_DOC_ID_CHARS
from ._index import EvidenceIndex, IndexEntry, IndexProtocol
from ._ledger import Ledger
from ._lines import MAX_REVISION_CHARS, cut, shown_revision
from ._locate import LocateOptions
from ._measure import utf8_bytes
from ._paging import BOUND_CODES, MAX_PAGE_CHARS, Page, check_int, page_reply, page_request
from ._toolkit import MAX_QUERY_CHARS, EvidenceTool, StrictArgs, run_tool_call, tool_call
from .profiles._article import ARTICLE
from .profiles._base import Profile
from .profiles._registry import profile_of

__all__ = ["DEFAULT_PAGE_CHARS", "MANIFEST_LIMIT", "MAX_MANIFEST_BYTES", "MAX_MANIFEST_LIMIT",
           "MAX_PAGE_CHARS", "MAX_QUERY_CHARS", "MAX_REVISION_CHARS", "MAX_TITLE_CHARS", "EvidenceTool", "StrictArgs",
           "evidence_tools", "read_page", "run_tool_call", "tool_call"]

DEFAULT_PAGE_CHARS = 300
MANIFEST_LIMIT = 20
#: A manifest never lists more rows than this, whatever ``manifest_limit`` says ...
MAX_MANIFEST_LIMIT = 50
#: ... nor grows past this many UTF-8 bytes; rows that do not fit are counted as ``omitted``.
MAX_MANIFEST_BYTES = 16_000
#: Titles longer than this are cut in the manifest, ending with TRUNCATED; a revision is cut to
#: MAX_REVISION_CHARS wherever it is shown (``lines.shown_revision``).
MAX_TITLE_CHARS = 120
#: Bytes kept free for {"candidates": ..., "omitted": n, "note": ...} around the rows.
MANIFEST_ENVELOPE_BYTES = 200



class SearchArgs(StrictArgs):
    """The article's signature: ``search_evidence(query)``."""

    query: str = Field(description=f"What you are looking for, in words (1-{MAX_QUERY_CHARS} characters).",
                       min_length=1, max_length=MAX_QUERY_CHARS)


class CursorSearchArgs(SearchArgs):
    """Over a retriever, or in the compact profile: the next rows of the same query's manifest."""

    cursor: int = Field(0, description="Where the previous manifest of the same query stopped (its next cursor).",
                        ge=0)


class ReadArgs(StrictArgs):
    doc_id: str = Field(description="A doc_id from the search_evidence manifest.")
    offset: int = Field(0, description="First character to read (0-based, a Python string index).", ge=0)
    limit: int = Field(DEFAULT_PAGE_CHARS, description=f"Characters to read, 1-{MAX_PAGE_CHARS}.",
                       ge=1, le=MAX_PAGE_CHARS)


def locate_args(opts: LocateOptions, extended: bool = False, ranked: bool = False) -> type[BaseModel]:
    """The locate schema for ``opts``: the term's bounds (and the cursor) come from the options in force.

    ``extended`` (a retriever source or the compact profile) adds ``doc_id`` (every match in one
    document) and ``cursor``; the article's fixed index keeps the article's ``locate_evidence(term)``.
    ``ranked`` (a profile that ranks excerpts by words, the compact one) adds ``query``: the words to rank by,
    as a search with them would, without the manifest (notebook 08).
    """
    fields: dict[str, Any] = {
        "term": (str, Field(description=f"A literal keyword to find (1-{opts.max_term_chars} characters).",
                            min_length=1, max_length=opts.max_term_chars)),
    }
    if extended:
        fields["doc_id"] = (str | None, Field(None, description="Only this document (a doc_id from the manifest): "
                                                              "every occurrence in it, with a cursor.", max_length=MAX_DOC_ID_CHARS))
    if extended or opts.paged:
        fields["cursor"] = (int, Field(0, description="Where the previous batch stopped (its next cursor).", ge=0))
    if extended and ranked:
        fields["query"] = (str | None, Field(None, description="Rank by these words, as search_evidence(query) "
                                                               "would, without listing the candidates (default: your "
                                                               "last search).", min_length=1,
                                             max_length=MAX_QUERY_CHARS))
    name = ("Extended" if extended else "") + ("PagedLocateArgs" if opts.paged else "LocateArgs")
    return create_model(name, __base__=StrictArgs, **fields)


def as_source(source: Any) -> Any:
    """What ``evidence_tools`` accepts: anything speaking :class:`~evidence_lib._index.IndexProtocol` (a fixed
    index, a store snapshot, a task workspace), or a retriever (a ``BaseRetriever`` or a ``RetrieverSource``).

    With a retriever, each search makes that query's snapshot (notebook 08)."""
    if isinstance(source, IndexProtocol):
        return source
    from langchain_core.retrievers import BaseRetriever

    from .retrieval._snapshot import RetrieverSource  # only when a retriever is used: the core never loads it

    if isinstance(source, RetrieverSource) or (callable(getattr(source, "snapshot", None))
                                                and callable(getattr(source, "whole", None))):
        return source  # a RetrieverSource, or one that serves through one (a FolderSource)
    if isinstance(source, BaseRetriever):
        return RetrieverSource(source)
    raise TypeError(f"evidence_tools needs an index (IndexProtocol) or a BaseRetriever, got {type(source).__name__}")


def read_page(index: IndexProtocol, doc_id: str, offset: int = 0, limit: int = DEFAULT_PAGE_CHARS,
              principal: Principal | None = None) -> dict[str, Any]:
    """What ``read_evidence`` returns, without the budget: one bounded page of verified bytes. Notebook 02."""
    entry, p = page_of(index, doc_id, offset, limit, principal)
    return page_body(index, entry, p, principal)


def page_of(index: IndexProtocol, doc_id: str, offset: Any, limit: Any,
            principal: Principal | None = None) -> tuple[IndexEntry, Page]:
    """The entry and the page ``[start, end)`` a read asks for: its arguments checked once, its entry looked up once."""
    request = page_request(offset, limit, MAX_PAGE_CHARS)  # bounds first: nothing is looked up for an impossible page
    entry = index.entry(doc_id, principal, "read")  # unknown and forbidden raise the same error
    return entry, request.within(entry.chars)  # [start, end) and next_offset, in one place


def page_body(index: IndexProtocol, entry: IndexEntry, p: Page, principal: Principal | None = None) -> dict[str, Any]:
    """The page ``p`` of ``entry``, fetched and verified (refused if the bytes changed), as the one page body."""
    text = index.text(entry.doc_id, principal, p.start, p.end)
    labels = {"doc_id": entry.doc_id, "revision": shown_revision(entry.revision), "sha256": entry.sha256}
    return page_reply(labels, p, text)  # labels, start, end, total_chars, next_offset, text


@dataclass
class _Session:
    """What the tools share: the source, the principal bound by the application, the ledger, the profile.

    It checks, admits and charges every call the same way for every profile; what a reply shows is the profile's to
    compute, from what the session offers it (:class:`~evidence_lib.profiles._base.ToolSession`).

    One session serves parallel calls (LangGraph runs one message's calls in threads): each call works on the
    ``index`` it started with (a search running meanwhile changes it for later calls only), and the caches below
    only ever hold what any call may reuse."""

    source: Any  # an IndexProtocol (a fixed candidate set) or a RetrieverSource (one snapshot per query)
    principal: Principal | None
    ledger: Ledger | None
    locate_options: LocateOptions
    manifest_limit: int
    profile: Profile = ARTICLE
    _index: Any = field(default=None, repr=False)  # the source, a snapshot, or a Reach (snapshot + the rest)
    last: Any = None  # over a retriever: the last query's snapshot (what search lists)
    query: str | None = None
    #: (doc_id, revision) the model was shown this snapshot (a profile shows each revision once: compact)
    rev_shown: set[tuple[str, str]] = field(default_factory=set)
    #: the snapshot's handle length, per snapshot object (content handles: compact)
    handles: dict[tuple[int, Any], int] = field(default_factory=dict)
    nfc_texts: dict[str, bool] = field(default_factory=dict)  # NFC locate: sha256 -> whether that text is NFC
    doc_ids: Any = None  # over a retriever: the task's registry of ids (retrieval.snapshot.DocIds), made on first use
    _shown_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    generation: Any = None  # over a retriever: the source's generation the snapshot was taken at (refresh)

    def __post_init__(self) -> None:
        self.per_query = not isinstance(self.source, IndexProtocol)  # a retriever: one snapshot per query
        if self.per_query and self.doc_ids is None:
            from .retrieval._snapshot import DocIds  # only with a retriever: the core never loads it

            self.doc_ids = DocIds()
        if self.per_query:
            self.generation = getattr(self.source, "generation", None)  # before anything is built from the source
        if self._index is None and self.per_query:
            self.last = EvidenceIndex(None, [], {})  # before any search: nothing ranked yet
            self.index = self.reach(self.last)
        elif self._index is None:
            self.index = self.source

    @property
    def index(self) -> IndexProtocol:
        """What read and locate work on: within a tool call, the index the call started with (kept on the call)."""
        call = calls.current()
        if call is None:
            return self._index
        return call.kept.setdefault(("session index", id(self)), self._index)

    @index.setter
    def index(self, value: Any) -> None:
        self._index = value
        call = calls.current()
        if call is not None:
            call.kept[("session index", id(self))] = value

    def reach(self, snapshot: Any) -> Any:
        """What read and locate cover after a search that made ``snapshot``: the snapshot first, then every other
        document the principal may discover when the source can enumerate them (a
        :class:`~evidence_lib.retrieval._snapshot.Reach`), else the snapshot alone. Notebook 08."""
        whole = self.source.whole(self.principal)
        if whole is None:
            return snapshot
        from .retrieval._snapshot import Reach  # only with a retriever: the core never loads it

        return Reach(snapshot, whole)

    def refresh(self, query: str | None = None) -> None:
        """At the start of every tool call, and when a caller asks before it checks citations (the MCP server's
        ``verify_citations``): over a retriever source that exposes ``generation`` (hashable, cheap, changes when its
        documents changed: a :class:`~evidence_lib.retrieval._folder.FolderSource`), a changed generation takes a new
        snapshot for the current query (``query``, if the call brings one), as :meth:`use_query` does, and forgets
        the revisions and handles shown, so every call sees the documents as they are now (issue 31). The generation
        is the whole source's: when nothing the principal may discover changed (an edit to a document it may not
        see), the session keeps what it had, so such an edit changes nothing it is shown. A fixed index's
        ``generation`` (an offload shelf that grew) is :meth:`handle_of`'s concern, not this one's."""
        if not self.per_query:
            return
        now = getattr(self.source, "generation", None)
        if now == self.generation:
            return
        self.generation = now
        query = query if query is not None else self.query
        last = EvidenceIndex(None, [], {}) if query is None else self.source.snapshot(query, self.principal,
                                                                                     ids=self.doc_ids)
        index = self.reach(last)
        if self._view(index) == self._view(self.index):
            return
        self.query, self.last, self.index = query, last, index
        self.rev_shown, self.handles = set(), {}  # (the ids a new generation gave its texts came with the snapshot)

    def _view(self, index: IndexProtocol) -> list[tuple[str, str, str]]:
        """What the principal may discover of ``index``, in order: (doc_id, revision, sha256) per entry."""
        return [(e.doc_id, e.revision, e.sha256) for e in index.visible(self.principal, "discover")]

    @property
    def covers_all(self) -> bool:
        """Whether a whole-scope locate covers every document the principal may read (not only the last snapshot)."""
        return not self.per_query or self.index is not self.last

    def guarded(self, tool: str, fn: Callable[..., str], *args: Any) -> str:
        """Run one tool's body in its call scope (:func:`evidence_lib._calls.within`: the tool call's own); a refusal
        is recorded once the call's reads are over."""
        try:
            with calls.within():
                return fn(*args)
        except EvidenceError as e:
            answer = self.record_refusal(tool, e)
            if answer is not e:
                raise answer from None
            raise

    def record_refusal(self, tool: str, error: EvidenceError) -> EvidenceError:
        """Record a refused call in the ledger; the error the call answers with (the ledger's refusal cap may have
        been reached by parallel calls meanwhile: :meth:`~evidence_lib._ledger.Ledger.refused`)."""
        return error if self.ledger is None else self.ledger.refused(tool, error)

    # -- per-snapshot state a profile may show: handles and revisions (the compact profile) ----------------------
    def handle_of(self, entry: IndexEntry) -> str:
        """``#`` + the shortest sha256 prefix (6+ hex) no other readable document of this snapshot shares."""
        key = (id(self.index), getattr(self.index, "generation", None))  # a growing index (an offload shelf)
        if key not in self.handles:
            self.handles = {key: handle_length(e.sha256 for e in self.readable())}
        return handle(entry.sha256, self.handles[key])

    def revision_once(self, entry: IndexEntry) -> str | None:
        """The revision to show with ``entry``'s first block (``None``: the model was shown it already)."""
        key = (entry.doc_id, shown_revision(entry.revision))
        with self._shown_lock:  # parallel calls: exactly one of them shows it
            if key in self.rev_shown:
                return None
            self.rev_shown.add(key)
        return entry.revision

    def mark_revisions_shown(self, shown: Iterable[tuple[str, str]]) -> None:
        """``(doc_id, revision)`` pairs a reply showed: later blocks of those documents leave the revision out."""
        with self._shown_lock:
            self.rev_shown.update(shown)

    # -- search ---------------------------------------------------------------------------
    def search(self, query: str, cursor: int = 0) -> str:
        check_query(query)
        check_int(cursor, 0)
        if self.ledger:
            self.ledger.admit("search_evidence")
        self.refresh(query)
        self.use_query(query)
        # (A fixed index is the article's teaching version: the query is not used for ranking.)
        listed = self.last if self.per_query else self.index
        visible = listed.visible(self.principal, "discover")  # filtering first, before anything is built
        rows = self.manifest_rows(visible, cursor)
        end = cursor + len(rows)
        nxt = end if end < len(visible) else None
        content = self.profile.manifest(self, rows, cursor, len(visible), nxt, self.unfilled(),
                                        unsure=self.per_query and bool(getattr(self.last, "unsure", False)))
        return self._charge("search_evidence", content)

    def use_query(self, query: str) -> None:
        """Rank by ``query`` from now on: over a retriever, that query's snapshot (the retriever's documents, filtered
        by permission before ranking); compact locate ranks its excerpts by the words of the last query."""
        if self.per_query and query != self.query:
            self.last = self.source.snapshot(query, self.principal, ids=self.doc_ids)
            self.index = self.reach(self.last)
            self.rev_shown = set()
        self.query = query

    def unfilled(self) -> tuple[int, int] | None:
        """``(empty, k)`` when a retriever asked for ``k`` results left ``empty`` slots without documents the
        principal may see, after over-fetching (issue 16): never a count of hidden documents. ``None`` otherwise,
        and always for a retriever that filters before ranking (then an empty slot only means fewer matches)."""
        empty, k = getattr(self.last, "unfilled", None), getattr(self.last, "requested", None)
        if not self.per_query or not empty or k is None or getattr(self.last, "prefiltered", False):
            return None
        return empty, k

    def manifest_rows(self, visible: list[IndexEntry], cursor: int = 0) -> list[dict[str, object]]:
        """The rows shown from ``cursor`` on, bounded in rows and UTF-8 bytes."""
        rows: list[dict[str, object]] = []
        size = 2 + MANIFEST_ENVELOPE_BYTES  # "[]" and, when rows are left out, the object around them
        for e in visible[cursor: cursor + self.manifest_limit]:
            row = self._manifest_row(e)
            row_bytes = utf8_bytes(to_json(row)) + 2  # ", " between rows
            if size + row_bytes > MAX_MANIFEST_BYTES:
                break
            rows.append(row)
            size += row_bytes
        return rows

    def readable(self) -> list[IndexEntry]:
        """What locate searches: every document the principal may read, in rank order (not only the rows shown):
        over a retriever, the last query's snapshot first, then, when the source can enumerate its documents, every
        other one in corpus order (:meth:`reach`)."""
        return [e for e in self.index.visible(self.principal, "discover") if allowed(e.access, self.principal, "read")]

    def doc_order(self, entries: Sequence[IndexEntry], counts: Mapping[str, int]) -> dict[str, tuple[int, ...]]:
        """How a locate ranks the documents with matches: those the last search ranked, in its rank (a fixed index:
        build order), then the others by their match count, most first, then in corpus order."""
        ranked = {e.doc_id for e in self.last} if self.per_query else None
        return {e.doc_id: (0, i) if ranked is None or e.doc_id in ranked else (1, -counts.get(e.doc_id, 0), i)
                for i, e in enumerate(entries)}

    def _manifest_row(self, entry: IndexEntry) -> dict[str, object]:
        row = entry.manifest_entry()
        row["title"] = cut(entry.title, MAX_TITLE_CHARS)
        row["revision"] = shown_revision(entry.revision)
        if not allowed(entry.access, self.principal, "read"):
            # May know it exists, may not read it: no text (preview) and no fingerprint of the text.
            row["sha256"] = row["preview"] = None
        return row

    # -- locate ---------------------------------------------------------------------------
    def locate(self, term: str, doc_id: str | None = None, cursor: int = 0, query: str | None = None) -> str:
        """One locate call: checked, admitted, served in the tool call's scope (:func:`evidence_lib._calls.serving`),
        charged once. ``query``: rank by those words from now on, as a search would (:meth:`use_query`), without a manifest."""
        check_int(cursor, 0)
        opts = self.locate_options
        if not isinstance(term, str) or not 1 <= len(term) <= opts.max_term_chars:
            raise EvidenceError("invalid_term")
        if query is not None:
            check_query(query)
        if self.ledger:  # before the retriever is asked anything: a refused call changes nothing (issue 31)
            self.ledger.admit("locate_evidence")
        self.refresh(query)
        if query is not None:
            self.use_query(query)  # before the doc_id is looked up: the snapshot is part of what locate covers
        entry = self.index.entry(doc_id, self.principal, "read") if doc_id is not None else None
        with calls.within(neighbours=self.profile.serves_neighbours):  # the tool call's scope
            content, shown = self.profile.locate(self, term, entry, cursor)
        return self._charge("locate_evidence", content, excerpts=[astuple(r) for r in shown])  # after its last check

    # -- read -----------------------------------------------------------------------------
    def read(self, doc_id: str, offset: int = 0, limit: int = DEFAULT_PAGE_CHARS) -> str:
        """The teaching body (:func:`read_page`) wrapped in the ledger: admitted and deduped on the counters, the page
        fetched (outside the ledger's lock) only if it was not read already, then charged with every limit checked
        again (notebook 05; :meth:`~evidence_lib._ledger.Ledger.charge_read`)."""
        self.refresh()
        entry, p = page_of(self.index, doc_id, offset, limit, self.principal)  # checked once, looked up once
        if self.ledger is None:
            return self._page_content(entry, p)
        revision = shown_revision(entry.revision)

        def seen(earlier: list[tuple[int, int]]) -> str:  # answered from memory: a call, not a read of the document
            return to_json({"status": "already_read", "doc_id": entry.doc_id, "revision": revision,
                            "start": p.start, "end": p.end, "covered_by": [list(r) for r in earlier]})

        return self.ledger.charge_read("read_evidence", (entry.doc_id, revision, p.start, p.end, entry.sha256),
                                       lambda: self._page_content(entry, p), seen)

    def _page_content(self, entry: IndexEntry, p: Page) -> str:
        """The verified page as the profile shows it."""
        return self.profile.page(self, entry, page_body(self.index, entry, p, self.principal))

    def _charge(self, tool: str, content: str, **kw: Any) -> str:
        if self.ledger is not None:
            self.ledger.charge(tool, content, **kw)
        return content



def check_query(query: Any) -> None:
    """A query is a string of 1 to ``MAX_QUERY_CHARS`` characters, else ``invalid_query``."""
    if not isinstance(query, str) or not 1 <= len(query) <= MAX_QUERY_CHARS:
        raise EvidenceError("invalid_query")


def locate_description(opts: LocateOptions, profile: str | Profile = "article") -> str:
    """What ``locate_evidence`` does under ``opts`` (with ``doc_id`` and ``cursor``), in the words the model reads."""
    return profile_of(profile).locate_description(opts, extended=True)


def evidence_tools(
    source: Any,
    principal: Principal | None = None,
    *,
    ledger: Ledger | None = None,
    locate_options: LocateOptions | None = None,
    manifest_limit: int = MANIFEST_LIMIT,
    profile: str | Profile = "article",
) -> list[BaseTool]:
    """The three tools, in protocol order: search, locate, read.

    ``source`` is a fixed :class:`~evidence_lib._index.EvidenceIndex` (the article's candidate set) or any
    LangChain ``BaseRetriever`` (each search makes that query's snapshot, notebook 08). ``principal`` is bound
    here by the application (never a tool argument); ``ledger`` shares one budget across the three tools;
    ``locate_options`` switches on the production behaviours of :mod:`evidence_lib._locate`; ``profile`` picks
    the reply format: a :class:`~evidence_lib.profiles.Profile` or a registered name (``"article"``, byte-exact;
    ``"compact"``; see :mod:`evidence_lib.profiles`).
    Taught in notebook 02 (basics), 04 (principal), 05 (ledger), 08 (retrievers, compact).
    """
    if not isinstance(manifest_limit, int) or isinstance(manifest_limit, bool) \
            or not 1 <= manifest_limit <= MAX_MANIFEST_LIMIT:
        raise ValueError(f"manifest_limit must be an int in 1..{MAX_MANIFEST_LIMIT}")
    shown = profile_of(profile)  # an unknown name raises ValueError here
    opts = locate_options or shown.default_locate_options()
    src = as_source(source)
    s = _Session(src, principal, ledger, opts, manifest_limit, shown)

    def search_evidence(query: str, cursor: int = 0) -> str:
        return s.guarded("search_evidence", s.search, query, cursor)

    def locate_evidence(term: str, doc_id: str | None = None, cursor: int = 0, query: str | None = None) -> str:
        return s.guarded("locate_evidence", s.locate, term, doc_id, cursor, query)

    def read_evidence(doc_id: str, offset: int = 0, limit: int = DEFAULT_PAGE_CHARS) -> str:
        return s.guarded("read_evidence", s.read, doc_id, offset, limit)

    fixed = not s.per_query
    extended = shown.extended(fixed)
    tools: list[BaseTool] = [
        EvidenceTool.from_function(search_evidence, name="search_evidence", description=shown.search_description(fixed),
                                   args_schema=CursorSearchArgs if extended else SearchArgs),
        EvidenceTool.from_function(locate_evidence, name="locate_evidence",
                                   description=shown.locate_description(opts, extended),
                                   args_schema=locate_args(opts, extended, shown.locate_ranks_by_query)),
        EvidenceTool.from_function(read_evidence, name="read_evidence", description=shown.read_description(),
                                   args_schema=ReadArgs),
    ]
    for t in tools:
        assert isinstance(t, EvidenceTool)
        t.session = s
        t.on_refusal = s.record_refusal
        t.bound_codes = BOUND_CODES
        if ledger is not None:
            t.before_call = ledger.check_refusals
    return tools
