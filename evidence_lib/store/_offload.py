"""Large tool results kept out of the context: stored in the evidence store, shown as a handle, read on demand.

Notebook 12. Any tool's result over a token threshold is put into an :class:`~evidence_lib.store.EvidenceStore`
as a one-document snapshot (the store's own unit of "text with a revision, a sha256, a TTL and an owner"), and the
model sees a short handle instead: the size, the handle, the sections of a JSON result by key path with their
``[start, end)`` ranges (any other result: its first line as a bounded preview), and how to cite it; the revision
comes with the first locate or read reply of the handle (issue 33: what a citation needs, once, and nothing else).
:class:`ToolResults` is the set of a run's offloaded results as an index (:class:`~evidence_lib._index.IndexProtocol`),
so ``locate_evidence`` and ``read_evidence`` from
:func:`~evidence_lib._tools.evidence_tools` work on it unchanged: bounded pages, revisions, sha256, citations that
:func:`~evidence_lib._citations.verify_citation`, the checker and the audit check like any other evidence.

Ownership. A result belongs to the principal (tenant and user) whose run produced it, within the run's session. The
owner is part of the store key, so a handle named by another user, another tenant or another session is looked up
under *their* key and is simply not there. An expired result is refused the same way: ``unknown_doc_id`` with the
same bytes as a handle never issued (the model's remedy is the same, call the tool again), and
:meth:`~evidence_lib.store.EvidenceStore.cleanup` removes it.

Handles are derived from the content and the tool call (``res-`` and 10 hex digits): deterministic, so histories
and notebooks are reproducible, and harmless to guess, because a handle locates a result and never authorizes it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import threading
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from json.decoder import scanstring  # type: ignore[attr-defined]  # exported at runtime (C scanner or fallback), absent from typeshed
from typing import Any, Literal

from .. import _calls as calls
from .._access import Access, Action, Principal
from .._documents import Document
from .._errors import EvidenceError, to_json
from .._index import MAX_STORED_BYTES, IndexEntry, Snapshot, sha256_hex
from .._lines import cut, text_line, token
from .._locate import LocateOptions
from .._measure import TokenCounter, cl100k_tokens, utf8_bytes
from .._paging import MAX_PAGE_CHARS, page, page_reply
from .._toolkit import clean_text
from .._tools import DEFAULT_PAGE_CHARS
from ._base import EvidenceStore
from ._common import SnapshotKey, expiry_us, owner_session  # the key format lives with the store's delete_session
from ._snapshot import StoreSnapshot, prefetch

__all__ = [
    "DEFAULT_RESULT_TTL", "DEFAULT_THRESHOLD_TOKENS", "HANDLE_MAX_TOKENS", "MAX_SECTIONS",
    "PREVIEW_TOKENS", "ToolResults", "Section", "count_tokens_over", "handle_sections", "handle_text",
    "json_sections", "offload", "owner_session",
    "run_session", "storable",
]

#: Results over this many cl100k tokens are offloaded (Strands' ContextOffloader: 2,500; Deep Agents: 20,000).
DEFAULT_THRESHOLD_TOKENS = 2_000
#: How long an offloaded result stays readable.
DEFAULT_RESULT_TTL = timedelta(hours=1)
#: The preview's bound, in cl100k tokens (and at most HANDLE_PREVIEW_CHARS characters, PREVIEW_LINES lines). Two
#: lines show a result's format: a header (CSV, a page's title) or a first record, and the record after it; further
#: lines repeat that format, and the model reads any part it wants by offset (issue 25: every handle is re-sent on
#: every later model call).
PREVIEW_TOKENS = 120
HANDLE_PREVIEW_CHARS = 600
PREVIEW_LINES = 1
PREVIEW_LINE_CHARS = 160
#: How many JSON sections a handle lists (key paths and ranges), and how deep.
MAX_SECTIONS = 8
SECTION_DEPTH = 2
MAX_PATH_CHARS = 60
MAX_TOOL_CHARS = 40
#: The most cl100k tokens a handle takes, whatever the result: the constant in "threshold plus a constant".
HANDLE_MAX_TOKENS = 600
_HANDLE_PREFIX = "res-"
#: What no store can keep (a NUL, a lone surrogate), replaced by U+FFFD in the stored copy and counted in the handle.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(text: str) -> tuple[str, int]:
    """``text`` as the store keeps it and how many characters were replaced: a NUL or a lone surrogate becomes
    U+FFFD (the positions of everything else are unchanged, so every offset still means the same character)."""
    return _UNSTORABLE.subn("\ufffd", text)


def count_tokens_over(text: str, threshold: int, count: TokenCounter = cl100k_tokens) -> int | None:
    """``text``'s tokens (cl100k unless ``count`` says otherwise) if they are at most ``threshold``, else None. A
    token is at least one UTF-8 byte, so a text of more bytes than ``threshold`` can have any count and is counted
    exactly, never estimated."""
    n = count(text) if text else 0
    return n if n <= threshold else None


# -- JSON sections --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Section:
    """One part of a JSON result: its key path (``$.items[0].name``), what it is, how many keys or items it holds,
    and where it lies in the stored text, ``[start, end)``."""

    path: str
    kind: str  # object, array, string, number, true, false, null
    size: int  # keys of an object, items of an array, characters of a string; 0 otherwise
    start: int
    end: int

    def line(self) -> str:
        """``path [what] [start, end)``: what a member is (its kind, or how many keys or items it holds); an array
        item shows its range only (the array's line says what its items are)."""
        what = {"object": f"{self.size:,} keys", "array": f"{self.size:,} items"}.get(self.kind, self.kind)
        shown = "" if _ITEM.search(self.path) else f" {what}"
        return f"{cut(token(self.path), MAX_PATH_CHARS)}{shown} [{self.start}, {self.end})"


_WS = re.compile(r"[ \t\n\r]*")
_ITEM = re.compile(r"\[\d+\]$")  # an array item's path ends with its index (a member's with a key)
_JSON_KEY_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DECODER = json.JSONDecoder()


def _past_ws(text: str, i: int) -> int:
    """Where the JSON whitespace starting at ``text[i]`` ends (``_WS`` matches everywhere, the empty run included)."""
    run = _WS.match(text, i)
    assert run is not None  # `*` matches the empty string
    return run.end()


def _key_path(parent: str, key: str) -> str:
    return f"{parent}.{key}" if _JSON_KEY_IDENT.fullmatch(key) else f"{parent}[{json.dumps(key, ensure_ascii=False)}]"


def _kind(value: Any) -> tuple[str, int]:
    if isinstance(value, dict):
        return "object", len(value)
    if isinstance(value, list):
        return "array", len(value)
    if isinstance(value, str):
        return "string", len(value)
    if value is None or isinstance(value, bool):
        return json.dumps(value), 0
    return "number", 0


def json_sections(text: str, *, limit: int = MAX_SECTIONS, depth: int = SECTION_DEPTH,
                  whole_within: int = 0) -> list[Section]:
    """The sections of a JSON document, pre-order, at most ``limit`` of them, ``depth`` levels down: every key of an
    object, the first and last item of an array; the parts of a container of at most ``whole_within`` characters
    are left out (one read shows it whole). Empty when ``text`` is not one JSON value. Ranges index ``text`` itself
    (whatever its spacing), so a model reads a section with ``read_evidence(offset=start, limit=end-start)``.
    """
    if not isinstance(text, str) or text.lstrip()[:1] not in ("{", "["):
        return []
    try:
        start = _past_ws(text, 0)
        value, end = _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError):
        return []
    if _past_ws(text, end) != len(text):
        return []
    out: list[Section] = []
    kind, size = _kind(value)
    out.append(Section("$", kind, size, start, end))
    _children(text, start, end, "$", depth, out, limit, whole_within)
    return out[:limit]


def _children(text: str, i: int, end: int, path: str, depth: int, out: list[Section], limit: int,
              whole_within: int) -> None:
    """Sections of the container ``text[i:end]`` (already known to be valid JSON)."""
    if depth <= 0 or len(out) >= limit or text[i] not in "{[" or end - i <= whole_within:
        return
    close = "}" if text[i] == "{" else "]"
    j = _past_ws(text, i + 1)
    items: list[tuple[str, int, int, Any]] = []
    index = 0
    while text[j] != close:
        if close == "}":
            key, j = scanstring(text, j + 1)
            j = _past_ws(text, _past_ws(text, j) + 1)  # past ':'
            child = _key_path(path, key)
        else:
            child = f"{path}[{index}]"
        value, end = _DECODER.raw_decode(text, j)
        items.append((child, j, end, value))
        index += 1
        j = _past_ws(text, end)
        if text[j] == ",":
            j = _past_ws(text, j + 1)
    shown = items if close == "}" else items[:1] + items[-1:] if len(items) > 1 else items
    for child, s, e, value in shown:
        if len(out) >= limit:
            return
        kind, size = _kind(value)
        out.append(Section(child, kind, size, s, e))
        _children(text, s, e, child, depth - 1, out, limit, whole_within)


# -- the handle the model sees -------------------------------------------------------------------------------------
def _preview(text: str, count: TokenCounter) -> list[str]:
    """The first lines of ``text``, each on one escaped line, within PREVIEW_* bounds (characters, lines, tokens)."""
    lines = []
    for raw in text[:HANDLE_PREVIEW_CHARS].split("\n")[:PREVIEW_LINES]:
        lines.append("| " + text_line(cut(raw, PREVIEW_LINE_CHARS)) if raw else "|")
    while lines and count("\n".join(lines)) > PREVIEW_TOKENS:
        lines.pop()
    return lines


def _name(tool: str) -> str:
    """A tool's name as a handle shows it: escaped first, then cut, so it is one printable field of bounded size."""
    return cut(token(tool if isinstance(tool, str) else "tool"), MAX_TOOL_CHARS)


def handle_sections(text: str) -> list[Section]:
    """The JSON sections a handle lists: :func:`json_sections` without ``$`` (the whole result, whose size the handle
    states) and without the parts of a section one ``read_evidence`` shows whole (at most ``MAX_PAGE_CHARS``
    characters): listing them would cost more on every later model call than reading them costs once."""
    return json_sections(text, whole_within=MAX_PAGE_CHARS)[1:]


def handle_text(entry: IndexEntry, *, tool: str, text: str, count: TokenCounter = cl100k_tokens) -> str:
    """What the model sees instead of a result: its size, handle and expiry, the JSON sections (or, when the result
    is not JSON, its first line as a preview), how to read and cite it.

    Only what a model uses to read and cite (issues 25 and 33): the revision is not here but on the first locate or
    read reply of the handle, where the model takes its citation from (the compact profile shows a document's
    revision once, on its first block), so no reply states it twice; the sections of a JSON result describe the
    same first bytes a preview would show, with their ranges, so a JSON handle shows no preview. Bounded by
    :data:`HANDLE_MAX_TOKENS` whatever the result holds: every value taken from the result or the tool is escaped,
    then cut (:mod:`evidence_lib._lines`); the preview and the sections have fixed bounds, and if the whole still
    passes the bound, sections and then preview lines are left out, last first. ``count`` is the token counter the
    bounds are measured with.
    """
    text, replaced = storable(text)
    name = _name(tool)
    head = [f"{name} returned {entry.chars:,} characters, stored as {entry.doc_id}. Cite doc_id@revision [start, end)."]
    if replaced:
        head.append(f"{replaced:,} characters no store can keep (NUL, lone surrogates) are stored as U+FFFD.")
    sections = [f"- {s.line()}" for s in handle_sections(text)]
    preview = [] if sections else _preview(text, count)
    # the doc_id is named once, above; the two tools and their arguments are in their schemas, sent with every call

    def assemble() -> str:
        out = [*head, *(["preview (data):", *preview] if preview else [])]
        if sections:
            out += ["JSON sections:", *sections]
        return "\n".join(out)

    shown = assemble()
    while count(shown) > HANDLE_MAX_TOKENS and (sections or preview):
        (sections or preview).pop()
        shown = assemble()
    return shown


# -- a run's listing: which results locate_evidence without doc_id searches ------------------------------------------
def run_session(session: str, user: str, run: str) -> str:
    """The store session key of the listing of ``user``'s run ``run`` in ``session``: an owner-qualified key
    (:func:`owner_session`) whose owner part names the run, so ``delete_session(tenant, session)`` removes it too."""
    return owner_session(session, f"{user}/run/{run}")


class _MemoryListing:
    """The handles a standalone shelf stored, in order, kept in memory (a shelf used outside a middleware run)."""

    def __init__(self) -> None:
        self._ids: list[str] = []

    def handles(self) -> list[str]:
        return list(self._ids)

    def add(self, doc_id: str) -> None:
        if doc_id not in self._ids:
            self._ids.append(doc_id)

    def clear(self) -> None:
        self._ids.clear()


class _StoreListing:
    """The handles one run stored, kept in the store (one workspace file per handle, ``results/<seq>-<handle>``):
    every worker serving the run sees the same listing, safe across threads and processes (each write is one store
    transaction) and expiring ``ttl`` after the run's last result, like the results. Notebook 12."""

    def __init__(self, store: EvidenceStore, principal: Principal, session: str, run: str, ttl: timedelta) -> None:
        self.workspace = store.workspace(principal, run_session(session, principal.user, run), ttl=ttl)

    def _paths(self) -> dict[str, str]:
        """handle -> its file, in the order stored (a sequence number, then the handle: two workers' ties too): the
        workspace's paths alone, never its files' text (two queries, however many results)."""
        try:
            paths = self.workspace.paths()
        except EvidenceError:  # workspace_expired: the listing expired with the run's last result
            return {}
        out: dict[str, str] = {}
        for path in paths:
            if path.startswith("results/"):
                out.setdefault(path.split("-", 1)[1], path)
        return out

    def handles(self) -> list[str]:
        return list(self._paths())

    def add(self, doc_id: str) -> None:
        """List ``doc_id`` (again: its file is rewritten, so the listing lives as long as the result stored now)."""
        paths = self._paths()
        self.workspace.write(paths.get(doc_id) or f"results/{len(paths):06d}-{doc_id}", doc_id)

    def clear(self) -> None:
        for path in self._paths().values():
            self.workspace.delete(path)


# -- the one large-result API: a principal's results as an index ----------------------------------------------------
#: How a result's handle is made. ``content``: ``res-`` and 10 hex digits of the call id and the content's sha256,
#: deterministic (the same result of the same call has the same handle). ``minted``: ``art-`` and 16 hex digits of
#: an HMAC of the owner, the session and the object's own sequence number under ``seed``: it says nothing about the
#: content or about other owners' results, and is never issued twice while the store holds the result.
IdPolicy = Literal["content", "minted"]
_PREFIXES: dict[str, str] = {"content": _HANDLE_PREFIX, "minted": "art-"}


class ToolResults:
    """Large results kept outside the context: one principal's results in one session, in an evidence store.

    The one API for the idea (notebooks 07, 11 and 12): :meth:`put` a result (its handle is the returned entry's
    ``doc_id``, :func:`offload` writes what the model sees), :meth:`read` a range ``[start, end)`` of it, :meth:`expire`
    it; it expires by itself ``ttl`` after it was put. The object is an index (``visible``, ``entry``, ``snapshot``,
    ``text``, ``find``), so the model reads with ``locate_evidence`` and ``read_evidence`` of
    :func:`~evidence_lib._tools.evidence_tools`, the one read tool. A handle locates, it never authorizes: one of
    another user, tenant or session, an expired or expired-early one and one never issued are all ``unknown_doc_id``,
    byte-identical. ``ids``: the handles' :data:`IdPolicy` (``seed``: the HMAC key of ``minted`` ids, random when
    None). With ``run`` (a middleware run's id) the listing of what ``visible`` shows lives in the store, shared by
    every worker serving that run; without, in this object.
    """

    def __init__(self, store: EvidenceStore, principal: Principal, session: str = "default", *,
                 ttl: timedelta = DEFAULT_RESULT_TTL, run: str | None = None, ids: IdPolicy = "content",
                 seed: str | bytes | None = None) -> None:
        if not isinstance(principal, Principal):
            raise TypeError("results belong to a Principal")
        if ids not in _PREFIXES:
            raise ValueError("ids is 'content' or 'minted'")
        if not isinstance(ttl, timedelta) or ttl <= timedelta(0):
            raise EvidenceError("invalid_ttl")
        expiry_us(store.now_us(), ttl)  # a TTL past the calendar is refused now, not at every put of the run
        self.store, self.principal, self.session, self.ttl, self.run = store, principal, session, ttl, run
        self.ids: IdPolicy = ids
        key = secrets.token_bytes(32) if seed is None else seed
        self._key = key.encode("utf-8") if isinstance(key, str) else bytes(key)
        self._minted = 0  # this object's sequence of minted ids
        self.key_session = owner_session(session, principal.user)
        SnapshotKey.checked(principal.tenant, self.key_session, "art-" + "0" * 16)  # refused now, not later
        self.access = Access(principal.tenant, read=frozenset({f"user:{principal.user}"}))
        self._listing = _MemoryListing() if run is None else _StoreListing(store, principal, session, run, ttl)
        self._lock = threading.Lock()  # parallel tool calls of one message store one at a time

    def __repr__(self) -> str:
        return f"ToolResults({self.store.backend}, {self.principal.tenant!r}, {self.session!r}, {len(self.handles)} stored)"

    # -- one call ----------------------------------------------------------------------------------------------
    def serving(self, *, neighbours: bool = False) -> AbstractContextManager[calls.Call]:
        """One tool call of its own (:func:`evidence_lib._calls.serving`; every tool call opens one): the listing is
        read and each result's snapshot resolved once for the call (the listed ones together), and each result's
        chunks are fetched and verified once, all in the call's one read transaction of the store, however many
        matches the call finds (without it, a locate resolved the snapshot again for every window it cut)."""
        return calls.serving(neighbours=neighbours)

    def _kept(self) -> dict[str, Any] | None:
        """What the current call keeps of this shelf (``None`` outside a call)."""
        call = calls.current()
        return None if call is None else call.kept.setdefault(self, {})

    @property
    def handles(self) -> list[str]:
        """The listed handles, in the order stored (read once per call)."""
        kept = self._kept()
        if kept is None:
            return self._listing.handles()
        if "handles" not in kept:
            kept["handles"] = self._listing.handles()
        return kept["handles"]

    @property
    def generation(self) -> tuple[str, ...]:
        """Changes whenever :meth:`visible` would list other handles: a reply's content handles are as long as the
        entries listed *now* need (``evidence_lib._tools``), so they are computed again when it changes (read from
        the listing itself, so a result another worker listed counts too)."""
        return tuple(self.handles)

    def forget(self) -> None:
        """Start a new listing: the results stored so far stay readable by handle but are no longer :meth:`visible`."""
        with self._lock:
            self._listing.clear()
            (self._kept() or {}).pop("handles", None)

    def put(self, content: str, *, tool: str, call_id: str = "") -> IndexEntry:
        """Store ``content`` (what ``tool`` returned to call ``call_id``) for ``ttl``; its entry (handle, revision,
        sha256). The same content from the same call gets the same handle, stored again with a fresh TTL. A NUL or a
        lone surrogate is stored as U+FFFD (:func:`storable`); a result over the store's limit is ``result_too_large``
        before anything is written."""
        content, _ = storable(content)
        if len(content) * 4 > MAX_STORED_BYTES and utf8_bytes(content) > MAX_STORED_BYTES:
            raise EvidenceError("result_too_large", chars=len(content), limit_bytes=MAX_STORED_BYTES)
        sha = sha256_hex(content)
        call = (call_id if isinstance(call_id, str) else "").encode("utf-8", "surrogatepass")  # any str hashes
        with self._lock:
            doc_id = self._mint() if self.ids == "minted" else \
                _HANDLE_PREFIX + sha256_hex(call + b"\n" + sha.encode())[:10]
            doc = Document(doc_id, f"result of {_name(tool)}", sha[:12], content, self.access)
            snap = self.store.put_snapshot(self.principal.tenant, self.key_session, doc_id, [doc], ttl=self.ttl)
            self._listing.add(doc_id)
            kept = self._kept() or {}
            kept.pop("handles", None)
            kept.get("snaps", {}).pop(doc_id, None)
            return snap.entry(doc_id, self.principal, "read")

    def _mint(self) -> str:
        """A ``minted`` id no result of this owner and session holds now (one lookup, unless another object with the
        same seed minted it already)."""
        while True:
            self._minted += 1
            mac = hmac.new(self._key, to_json([self.principal.tenant, self.principal.user, self.session,
                                               self._minted]).encode("utf-8"), hashlib.sha256)
            doc_id = "art-" + mac.hexdigest()[:16]
            if self.store.lookup_snapshot(SnapshotKey(self.principal.tenant, self.key_session, doc_id)) is None:
                return doc_id

    def read(self, doc_id: str, offset: int = 0, limit: int = DEFAULT_PAGE_CHARS) -> dict[str, Any]:
        """The range ``[offset, offset + limit)`` of the result ``doc_id`` (at most ``MAX_PAGE_CHARS``), the page
        ``read_evidence`` replies with (same defaults, same bounds): its revision, sha256, ``start``, ``end``,
        ``total_chars``, ``next_offset`` and text. Only the chunks the range covers are fetched, each checked against
        its sha256 (``evidence_changed``), in one call (:func:`evidence_lib._calls.within`): one read transaction."""
        with calls.within():
            snap = self._snap(doc_id)
            entry = self._translated(lambda: snap.entry(doc_id, self.principal, "read"))
            p = page(entry.chars, offset, limit, MAX_PAGE_CHARS)
            text = self._translated(lambda: snap.text(doc_id, self.principal, p.start, p.end))
        return page_reply({"doc_id": doc_id, "revision": entry.revision, "sha256": entry.sha256}, p, text)

    def expire(self, doc_id: str) -> bool:
        """Remove the result ``doc_id`` now (before its TTL); whether this owner had it. Afterwards it is
        ``unknown_doc_id``, like a handle never issued."""
        if not self._shaped(doc_id):
            return False
        with self._lock:
            (self._kept() or {}).get("snaps", {}).pop(doc_id, None)
            return self.store.delete_snapshot_key(SnapshotKey(self.principal.tenant, self.key_session, doc_id))

    def expires_at(self, doc_id: str) -> str:
        """When the stored result ``doc_id`` expires, as ISO 8601 text for a reply (notebook 07)."""
        return self.expiry(doc_id).isoformat()

    def expiry(self, doc_id: str) -> datetime:
        """When the stored result ``doc_id`` expires (``unknown_doc_id`` if it is not readable now)."""
        return self._snap(doc_id).expires_at

    @staticmethod
    def _shaped(doc_id: Any) -> bool:
        """Whether ``doc_id`` has a handle's shape (either id policy's), so it may be looked up at all."""
        return isinstance(doc_id, str) and doc_id.startswith(tuple(_PREFIXES.values())) and len(doc_id) <= 64 \
            and clean_text(doc_id)  # a NUL or a lone surrogate never reaches a database

    def _snap(self, doc_id: Any) -> StoreSnapshot:
        """The result's snapshot, resolved once per call (else ``unknown_doc_id``, whatever the reason)."""
        if not self._shaped(doc_id):
            raise EvidenceError("unknown_doc_id")
        kept = self._kept()
        if kept is None:
            return self._resolve(doc_id)
        snaps = kept.setdefault("snaps", {})
        if doc_id not in snaps:
            try:
                snaps[doc_id] = self._resolve(doc_id)
            except EvidenceError as e:
                snaps[doc_id] = e.code
        if isinstance(snaps[doc_id], str):
            raise EvidenceError(snaps[doc_id])
        return snaps[doc_id]

    def _resolve(self, doc_id: str) -> StoreSnapshot:
        try:
            return self.store.snapshot(self.principal.tenant, self.key_session, doc_id)
        except EvidenceError as e:
            if e.code in ("snapshot_expired", "invalid_text"):
                raise EvidenceError("unknown_doc_id") from None  # expired, cleaned up or never issued: one answer
            raise

    def _resolve_listed(self, handles: list[str]) -> None:
        """Inside a call: resolve every listed handle not resolved yet, together (two queries however many)."""
        kept = self._kept()
        if kept is None:
            return
        snaps = kept.setdefault("snaps", {})
        todo = [d for d in handles if d not in snaps]
        if todo:
            found = self.store.snapshots(self.principal.tenant, self.key_session, todo)
            for d in todo:
                snaps[d] = found.get(d, "unknown_doc_id")

    def _mine(self, principal: Principal | None) -> bool:
        return principal == self.principal

    # -- the index protocol ----------------------------------------------------------------------------------
    def visible(self, principal: Principal | None = None, action: Action = "discover") -> list[IndexEntry]:
        """The entries of this session's results ``principal`` may ``action``, skipping expired ones: the
        shelf the evidence tools list (notebooks 07 and 12)."""
        if not self._mine(principal):
            return []
        out = []
        self._resolve_listed(self.handles)
        for d in self.handles:
            try:
                out.append(self.entry(d, principal, action))
            except EvidenceError:
                continue  # expired: no longer on the shelf
        return out

    def entry(self, doc_id: str, principal: Principal | None = None, action: Action = "read") -> IndexEntry:
        """The index entry of the stored result ``doc_id`` for ``principal`` (``unknown_doc_id`` if it is
        not theirs or expired; notebooks 07 and 12)."""
        if not self._mine(principal):
            raise EvidenceError("unknown_doc_id")
        return self._translated(lambda: self._snap(doc_id).entry(doc_id, principal, action))

    def snapshot(self, doc_id: str, principal: Principal | None = None) -> Snapshot:
        """The stored result ``doc_id`` as a snapshot (text, revision, sha256) after the same access check as
        :meth:`entry` (notebooks 07 and 12)."""
        self.entry(doc_id, principal)
        return self._translated(lambda: self._snap(doc_id).snapshot(doc_id, principal))

    def text(self, doc_id: str, principal: Principal | None = None, start: int = 0, end: int | None = None) -> str:
        """The text ``[start, end)`` of the stored result ``doc_id``, after the same access check as
        :meth:`entry` (notebooks 07 and 12)."""
        self.entry(doc_id, principal)
        return self._translated(lambda: self._snap(doc_id).text(doc_id, principal, start, end))

    def find(self, term: str, doc_ids: Iterable[str], principal: Principal | None = None, *,
             first_only: bool = False, options: LocateOptions | None = None) -> Iterator[tuple[str, int]]:
        """The matches in each result, in order. Inside a call the results' candidates and first chunks are asked for
        together (:func:`~evidence_lib.store._snapshot.prefetch`), however many results the listing holds."""
        doc_ids = list(doc_ids)
        if self._kept() is not None and self._mine(principal):
            snaps = []
            for d in doc_ids:
                try:
                    snaps.append(self._snap(d))
                except EvidenceError:
                    break  # refused below, in order; nothing after it is read
            prefetch(snaps, term, options)
        for d in doc_ids:
            self.entry(d, principal)
            try:
                yield from self._snap(d).find(term, [d], principal, first_only=first_only, options=options)
            except EvidenceError as e:
                if e.code == "snapshot_expired":
                    raise EvidenceError("unknown_doc_id") from None
                raise

    @staticmethod
    def _translated(fn):
        try:
            return fn()
        except EvidenceError as e:
            if e.code == "snapshot_expired":
                raise EvidenceError("unknown_doc_id") from None
            raise


def offload(shelf: ToolResults, content: str, *, tool: str, call_id: str = "",
            threshold_tokens: int = DEFAULT_THRESHOLD_TOKENS,
            count: TokenCounter = cl100k_tokens) -> tuple[str, IndexEntry | None]:
    """``(what the model sees, entry)``: ``content`` itself and None when it is at most ``threshold_tokens``
    tokens (``count``, cl100k by default), else the handle of the stored result and its entry. The text is counted
    at most once, not at all when its UTF-8 bytes already settle it (a token is at least one byte), and a result
    over the store's limit is ``result_too_large`` before it is counted."""
    counted, _ = storable(content)  # a lone surrogate has no UTF-8 form to count
    size = utf8_bytes(counted)
    if size <= threshold_tokens:
        return content, None
    if size > MAX_STORED_BYTES:
        raise EvidenceError("result_too_large", chars=len(content), limit_bytes=MAX_STORED_BYTES)
    tokens = count(counted)
    if tokens <= threshold_tokens:
        return content, None
    entry = shelf.put(content, tool=tool, call_id=call_id)
    return handle_text(entry, tool=tool, text=content, count=count), entry
