"""Keep your retriever, replace what it returns: any ``BaseRetriever`` behind the three tools. Notebook 08.

For each ``search_evidence(query)`` the retriever's documents become *that query's snapshot*: an
in-memory :class:`~evidence_lib.index.EvidenceIndex` holding the exact bytes that were hashed.
``doc_id``, ``title``, ``revision`` and ``sha256`` come from a document's metadata where present and
are computed otherwise. Permission filtering happens first: documents the principal may not
discover are dropped before anything is ranked (for :class:`~evidence_lib.retrieval.BM25Retriever`,
before scoring), cut or counted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever

from ..access import Access, Principal, allowed
from ..corpus import Document
from ..index import PREVIEW_CHARS, EvidenceIndex, IndexEntry
from ..toolkit import clean_text
from .bm25 import BM25Retriever

MAX_TITLE_CHARS = 120


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:MAX_TITLE_CHARS]


def default_access(doc: LCDocument) -> Access | None:
    """A document's grants: an :class:`~evidence_lib.access.Access` in ``metadata["access"]``, else open."""
    access = doc.metadata.get("access")
    return access if isinstance(access, Access) else None


def to_evidence_document(doc: LCDocument, access: Callable[[LCDocument], Access | None] = default_access) -> Document:
    """A LangChain ``Document`` as the series' :class:`~evidence_lib.corpus.Document` (metadata first)."""
    text = doc.page_content
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    meta = doc.metadata
    doc_id = str(meta.get("doc_id") or meta.get("id") or doc.id or f"doc-{digest[:12]}")
    title = str(meta.get("title") or _first_line(text) or doc_id)
    revision = str(meta.get("revision") or digest[:12])
    return Document(doc_id, title, revision, text, access(doc))


@dataclass
class RetrieverSource:
    """A retriever as the evidence tools' source: one snapshot per query, filtered by permission first."""

    retriever: BaseRetriever
    access: Callable[[LCDocument], Access | None] = default_access
    #: Snapshots made so far, newest last (what an operator may inspect; never shown to the model).
    history: list[tuple[str, EvidenceIndex]] = field(default_factory=list, repr=False)

    def documents(self, query: str, principal: Principal | None) -> list[LCDocument]:
        """The retriever's documents for ``query`` that ``principal`` may discover, in the retriever's order."""
        def visible(d: LCDocument) -> bool:
            return allowed(self.access(d), principal, "discover")

        if isinstance(self.retriever, BM25Retriever):  # filter before scoring, not after
            return self.retriever.model_copy(update={"allowed": visible}).invoke(query)
        return [d for d in self.retriever.invoke(query) if visible(d)]

    def snapshot(self, query: str, principal: Principal | None) -> EvidenceIndex:
        """This query's snapshot: entries in rank order, bytes kept in memory, hashes from what is stored."""
        entries: list[IndexEntry] = []
        blobs: dict[str, bytes] = {}
        for lc in self.documents(query, principal):
            doc = to_evidence_document(lc, self.access)
            if not clean_text(doc.text) or not clean_text(doc.doc_id):
                continue  # text that cannot be stored or shown is not evidence
            raw = doc.text.encode("utf-8")
            doc_id, n = doc.doc_id[:120], 1
            while doc_id in blobs:  # chunks of one source: keep each, with a distinct id
                if blobs[doc_id] == raw:
                    break
                n += 1
                doc_id = f"{doc.doc_id[:120]}~{n}"
            if doc_id in blobs:
                continue
            blobs[doc_id] = raw
            claimed = lc.metadata.get("sha256")
            sha = claimed if isinstance(claimed, str) else hashlib.sha256(raw).hexdigest()
            entries.append(IndexEntry(doc_id, doc.title, doc.revision, len(doc.text), sha,
                                      doc.text[:PREVIEW_CHARS], doc.access, bytes=len(raw)))
        index = EvidenceIndex(None, entries, blobs)
        self.history.append((query, index))
        return index

    def __repr__(self) -> str:
        return f"RetrieverSource({type(self.retriever).__name__}, {len(self.history)} snapshots)"


def as_source(source: Any) -> RetrieverSource | EvidenceIndex:
    """What ``evidence_tools`` accepts: a fixed index, a retriever, or a :class:`RetrieverSource`."""
    if isinstance(source, (EvidenceIndex, RetrieverSource)):
        return source
    if isinstance(source, BaseRetriever):
        return RetrieverSource(source)
    if hasattr(source, "visible") and hasattr(source, "snapshot") and hasattr(source, "entry"):
        return source  # an index-like store snapshot (notebook 11)
    raise TypeError(f"evidence_tools needs an EvidenceIndex or a BaseRetriever, got {type(source).__name__}")
