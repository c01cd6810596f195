"""evidence_lib: keep retrieval results out of the model's context; read evidence on demand.

The library behind the notebook series in ``notebooks/``. Each public name says in its
docstring which notebook introduces it.
"""

from .access import Access, Principal
from .citations import Answer, Citation, verify_answer, verify_citation
from .clock import FixedClock, ManualClock
from .corpus import ANSWER, QUESTION, Document, article_corpus, baseline_dump
from .disclosure import (AnswerGate, Artifact, ArtifactStore, Catalog, ReadSession, Resource, StopRules, Toolbox,
                         ToolSpec, after_sales_catalog, after_sales_toolbox, catalog_tools, discovery_tools,
                         logistics_tools, measure_schema_loading, plan_loading)
from .errors import AUDIT_REASONS, BUDGET_REASONS, CITATION_REASONS, ERROR_CODES, STOP_REASONS, EvidenceError, \
    error_payload, to_json
from .experiment import run_article
from .index import EvidenceIndex, IndexEntry, Snapshot
from .ledger import Budget, Ledger, ReadRecord
from .locate import LocateOptions
from .measure import Size, approx_tokens, cl100k, cl100k_tokens, reduction_percent, size_table, utf8_bytes
from .paging import Page, covering, covers, page
from .toolkit import EvidenceTool, StrictArgs, run_tool_call, tool_call
from .tools import evidence_tools

# notebook 08: your own retriever behind the tools (the store, the agent loop and the evaluation are imported
# from their subpackages: evidence_lib.store, evidence_lib.agent, evidence_lib.eval; the core never loads them)
from .retrieval import BM25Retriever, RetrieverSource, folder_corpus, pydoc_corpus, recall_at_k

__all__ = [
    # notebook 08
    "BM25Retriever", "RetrieverSource", "folder_corpus", "pydoc_corpus", "recall_at_k",
    "ANSWER", "AUDIT_REASONS", "BUDGET_REASONS", "CITATION_REASONS", "ERROR_CODES", "QUESTION", "STOP_REASONS",
    "EvidenceTool", "Page", "ReadRecord", "StrictArgs", "covering", "covers", "page",
    # notebooks 06-07: progressive disclosure
    "AnswerGate", "Artifact", "ArtifactStore", "Catalog", "FixedClock", "ManualClock", "ReadSession", "Resource",
    "StopRules", "ToolSpec", "Toolbox", "after_sales_catalog", "after_sales_toolbox", "catalog_tools",
    "discovery_tools", "logistics_tools", "measure_schema_loading", "plan_loading",
    # notebooks 01-05
    "Access", "Answer", "Budget", "Citation", "Document", "EvidenceError", "EvidenceIndex", "IndexEntry", "Ledger",
    "LocateOptions", "Principal", "Size", "Snapshot",
    "approx_tokens", "article_corpus", "baseline_dump", "cl100k", "cl100k_tokens", "error_payload",
    "evidence_tools", "reduction_percent", "run_article", "run_tool_call", "size_table", "to_json",
    "tool_call", "utf8_bytes", "verify_answer", "verify_citation",
]
__version__ = "0.1.0"
