"""A folder of ``.txt`` files as a retriever source that follows the folder while it serves. Issue 31.

:class:`FolderSource` is what ``python -m evidence_lib mcp --corpus DIR`` serves (notebook 13): a BM25 retriever over
the folder's documents (:func:`bm25_source`, the eval's source too), re-checked on every tool call. Its
:attr:`~FolderSource.generation` is the hook the tools read at the start of each call (``_Session.refresh``): one
``os.scandir`` and a ``stat`` per file (name, size, mtime, ctime, inode), no watcher thread and no dependency (a file
changed in the last two seconds is read again too, as git does: the file system's clock is coarse). When
anything changed, only the changed files are read again, the BM25 source is rebuilt outside any lock and swapped in
under one; a later scan's build always wins over an earlier one. Revisions stay content-derived (the first 12 hex
digits of the file's sha256), so an edited file gets a new revision and a citation of the old one verifies as
``document_changed``; a deleted file is ``unknown_doc_id``. A file that becomes unusable while serving (not UTF-8, a
NUL byte, too large, a bad name: :func:`~evidence_lib.retrieval._corpora.file_document`'s rule) is left out, and
said once on stderr, by its name.
"""

from __future__ import annotations

import itertools
import secrets
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from langchain_core.documents import Document as LCDocument

from .._access import Access, Principal
from .._documents import Document
from .._index import EvidenceIndex, sha256_hex
from .._lines import token
from ._bm25 import BM25Retriever
from ._corpora import file_document, first_line, folder_files
from ._snapshot import DocIds, EncodedTexts, RetrieverSnapshot, RetrieverSource

__all__ = ["RETRIEVER_K", "FolderSource", "bm25_source"]

#: How many documents a search lists (the BM25 retriever's k): the eval's and the MCP server's.
RETRIEVER_K = 20
#: What one file looked like when the folder was scanned: (name, size, mtime_ns, ctime_ns, inode).
Listing = tuple[tuple[str, int, int, int, int], ...]
#: A file changed less than this long before a scan is read again at the next scan even if its stat is the same (git's
#: "racily clean" rule): the file system's clock is coarse, so two writes of the same size within one tick look alike.
RACY_NS = 2_000_000_000


def bm25_source(docs: Sequence[Document], k: int = RETRIEVER_K, *, encoded: EncodedTexts | None = None,
                fingerprint_key: bytes | None = None) -> RetrieverSource:
    """A BM25 retriever (``k`` per query) over ``docs`` behind the three tools: the eval's source and the MCP
    server's for a folder. Each document keeps its doc_id, title, revision and grants (``access``). ``encoded`` and
    ``fingerprint_key`` let a rebuilt source share the previous one's bytes and computed ids."""
    lc = [LCDocument(page_content=d.text, metadata=_metadata(d)) for d in docs]
    extra: dict[str, Any] = {"encoded": encoded} if encoded is not None else {}
    return RetrieverSource(BM25Retriever(documents=lc, k=k), fingerprint_key=fingerprint_key, **extra)


def _metadata(d: Document) -> dict[str, object]:
    """What the retriever hands on about ``d``: its doc_id and grants, and its title and revision only where they do
    not come from its text. A title that is the text's first line and a revision that is its sha256 prefix are left
    for :class:`~.snapshot.RetrieverSource` to compute per principal: a principal who may discover but not read the
    document is then shown its doc_id and a keyed fingerprint, never its first line or its plain hash (issue 31)."""
    meta: dict[str, object] = {"doc_id": d.doc_id}
    if d.access is not None:
        meta["access"] = d.access
    if d.access is None or d.title != first_line(d.text):
        meta["title"] = d.title
    if d.access is None or d.revision != sha256_hex(d.text)[:12]:
        meta["revision"] = d.revision
    return meta


@dataclass(frozen=True)
class _State:
    """One version of the folder: what the scan saw, each file's document (``None``: left out), the source over them."""

    scan: int  # the number of the scan it was built from (a later scan's state replaces an earlier one's)
    listing: Listing
    files: Mapping[str, tuple[tuple[int, ...], Document | None]] = field(repr=False)
    source: RetrieverSource = field(repr=False)
    generation: int = 0
    contents: tuple[tuple[str, str], ...] = ()  # (doc_id, sha256) of every document served
    racy: frozenset[str] = frozenset()  # names changed too recently to trust their stat (RACY_NS)


class FolderSource:
    """The documents of ``folder`` (``*.txt`` directly in it, no dotfiles: :func:`~.corpora.folder_files`) as a
    retriever source whose documents follow the folder (see the module's docstring). ``grants`` maps doc_ids to
    their :class:`~evidence_lib._access.Access` (a document not listed is open to every principal, as in the MCP
    server's tokens file). At start every file must be a document (else a ``ValueError`` naming the file, the rule of
    :func:`~.corpora.folder_corpus`); ``report`` receives the one line said about a file left out later (default:
    stderr)."""

    def __init__(self, folder: str | Path, grants: Mapping[str, Access | None] | None = None, *,
                 k: int = RETRIEVER_K, report: Callable[[str], None] | None = None) -> None:
        self.root = Path(folder)
        self.grants = dict(grants or {})
        self.k = k
        self.report = report or (lambda line: print(line, file=sys.stderr, flush=True))
        self.encoded = EncodedTexts()
        self.fingerprint_key = secrets.token_bytes(32)
        self._scans = itertools.count()
        self._lock = threading.Lock()
        self._said: set[tuple[str, tuple[int, ...]]] = set()  # (name, signature) already reported
        where = token(self.root.name or str(folder))
        if not self.root.is_dir():
            raise ValueError(f"not a folder: {where}")
        empty = _State(-1, (), {}, bm25_source([], k), 0)
        scan, now = next(self._scans), time.time_ns()
        self._state = self._build(scan, self._list(strict=True), empty, now, strict=True)
        if not self._state.contents:
            raise ValueError(f"no .txt files in {where}")

    # -- what the tools use -----------------------------------------------------------------------------------------
    @property
    def generation(self) -> int:
        """The version of the documents served, after checking the folder now (one scandir and a stat per file):
        it changes when a document was added, edited or removed. The tools read it at the start of every call."""
        scan, started = next(self._scans), time.time_ns()
        listing = self._list()
        state = self._state
        if listing == state.listing and not state.racy:
            return state.generation
        built = self._build(scan, listing, state, started)  # file I/O and indexing outside the lock
        with self._lock:
            now = self._state
            if built.scan > now.scan:  # a later scan's build wins; an earlier one's is dropped
                same = built.contents == now.contents
                self._state = replace(built, source=now.source if same else built.source,
                                      generation=now.generation if same else now.generation + 1)
            return self._state.generation

    def snapshot(self, query: str, principal: Principal | None, *, ids: DocIds | None = None) -> RetrieverSnapshot:
        """This query's snapshot over the documents served now (:meth:`RetrieverSource.snapshot`; ``ids``, the
        task's registry of ids: a file's name is its id whatever its text, since the source numbers what it knows)."""
        return self._state.source.snapshot(query, principal, ids=ids)

    def whole(self, principal: Principal | None) -> EvidenceIndex | None:
        """Every document served now that ``principal`` may discover (:meth:`RetrieverSource.whole`)."""
        return self._state.source.whole(principal)

    def enumerable(self) -> bool:
        """Always: the folder's documents are known (locate covers every one the principal may read)."""
        return True

    @property
    def source(self) -> RetrieverSource:
        """The retriever source over the documents served now (another one after the folder changed)."""
        return self._state.source

    def doc_ids(self) -> list[str]:
        """The doc_ids served now, in name order."""
        return [doc_id for doc_id, _ in self._state.contents]

    def __repr__(self) -> str:
        return f"FolderSource({token(self.root.name)}, generation {self._state.generation})"

    # -- scanning and building ----------------------------------------------------------------------------------------
    def _list(self, strict: bool = False) -> Listing:
        """What the folder holds now; while serving, a folder that cannot be read holds nothing (said once)."""
        try:
            files = folder_files(self.root)
        except OSError as e:
            if strict:
                raise ValueError(f"cannot read the folder {token(self.root.name)} ({e.strerror})") from None
            self._say("", (), f"evidence_lib: cannot read the folder {token(self.root.name)} "
                              f"({e.strerror or type(e).__name__}): no documents are served until it can be read")
            return ()
        if ("", ()) in self._said:  # readable again: say it once more if it goes away again
            with self._lock:
                self._said.discard(("", ()))
        out = []
        for entry in files:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:  # removed since it was listed
                continue
            out.append((entry.name, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
        return tuple(out)

    def _build(self, scan: int, listing: Listing, state: _State, started: int, strict: bool = False) -> _State:
        """The state for ``listing`` (scanned at ``started``, ns): unchanged files keep their document, changed, new
        and racy ones are read again (a file that cannot be a document raises when ``strict``, else it is left out
        and said once); the BM25 source is rebuilt only when the documents differ from ``state``'s."""
        files: dict[str, tuple[tuple[int, ...], Document | None]] = {}
        racy = frozenset(name for name, _, mtime, ctime, _ in listing if max(mtime, ctime) > started - RACY_NS)
        for name, *rest in listing:
            sig = tuple(rest)
            old = state.files.get(name)
            if old is not None and old[0] == sig and name not in state.racy:
                files[name] = old
                continue
            try:
                doc: Document | None = file_document(self.root / name)
            except FileNotFoundError:  # removed since the scan
                continue
            except (ValueError, OSError) as e:
                if strict:
                    raise ValueError(str(e) if isinstance(e, ValueError) else
                                     f"{token(name)} cannot be read ({e.strerror})") from None
                reason = str(e) if isinstance(e, ValueError) else f"{token(name)} cannot be read ({e.strerror})"
                self._say(name, sig, f"evidence_lib: left out of the served documents: {reason}")
                doc = None
            files[name] = (sig, doc)
        docs = [replace(d, access=self.grants.get(d.doc_id)) for _, d in files.values() if d is not None]
        contents = tuple((d.doc_id, self.encoded.get(d.text)[1]) for d in docs)
        if contents == state.contents:
            return _State(scan, listing, files, state.source, state.generation, contents, racy)
        source = bm25_source(docs, self.k, encoded=self.encoded, fingerprint_key=self.fingerprint_key)
        return _State(scan, listing, files, source, state.generation, contents, racy)

    def _say(self, name: str, sig: tuple[int, ...], line: str) -> None:
        """``line`` once per file state (a file left out is named once, and again only after it changes)."""
        with self._lock:
            if (name, sig) in self._said:
                return
            self._said.add((name, sig))
        self.report(line)
