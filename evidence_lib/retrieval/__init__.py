"""Bring your own retriever (notebook 08): its documents for a query become that query's snapshot.

:mod:`.bm25` is the offline lexical retriever the series ships (words for Latin text, character
bigrams for Chinese); :mod:`.corpora` loads the real corpora (Python's documentation topics, or a
folder of ``.txt`` files); :mod:`.snapshot` turns any LangChain ``BaseRetriever``'s documents into
an :class:`~evidence_lib.index.EvidenceIndex`, filtered by permission first; :mod:`.folder` serves a folder that
changes while it is served (``FolderSource``, the MCP server's ``--corpus``).
"""

from .bm25 import BM25Retriever, recall_at_k, tokenize
from .corpora import folder_corpus, pydoc_corpus
from .snapshot import AccessMetadataWarning, RetrieverSnapshot, RetrieverSource, default_access, to_evidence_document

__all__ = ["AccessMetadataWarning", "BM25Retriever", "RetrieverSnapshot", "RetrieverSource", "default_access",
           "folder_corpus", "pydoc_corpus", "recall_at_k", "to_evidence_document", "tokenize"]
