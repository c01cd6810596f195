"""Bring your own retriever (notebook 08): its documents for a query become that query's snapshot.

:class:`BM25Retriever` is the offline lexical retriever the series ships (words for Latin text, character bigrams
for Chinese); :func:`pydoc_corpus` and :func:`folder_corpus` load the real corpora (Python's documentation topics,
or a folder of ``.txt`` files); :class:`RetrieverSource` turns any LangChain ``BaseRetriever``'s documents into an
evidence snapshot per query, filtered by permission first, with ids that name one text for the whole task
(:class:`DocIds`); :class:`FolderSource` serves a folder that changes while it is served (the MCP server's
``--corpus``).
"""

from ._bm25 import BM25Retriever, recall_at_k
from ._corpora import folder_corpus, pydoc_corpus
from ._folder import FolderSource
from ._snapshot import AccessMetadataWarning, DocIds, RetrieverSource, to_evidence_document

__all__ = ["AccessMetadataWarning", "BM25Retriever", "DocIds", "FolderSource", "RetrieverSource", "folder_corpus",
           "pydoc_corpus", "recall_at_k", "to_evidence_document"]
