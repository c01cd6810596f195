"""evidence_lib: keep retrieval results out of the model's context; read evidence on demand.

The library behind the notebook series in ``notebooks/``. Each public name says in its
docstring which notebook introduces it.
"""

from .access import Access, Principal
from .artifacts import Artifact, ArtifactStore, FixedClock, ManualClock, logistics_tools
from .catalog import Catalog, Resource, after_sales_catalog, catalog_tools
from .citations import Answer, Citation, verify_answer, verify_citation
from .disclosure import AnswerGate, ReadSession, StopRules, plan_loading
from .corpus import ANSWER, QUESTION, Document, article_corpus, baseline_dump
from .errors import ERROR_CODES, EvidenceError, error_payload, to_json
from .experiment import run_article
from .index import EvidenceIndex, IndexEntry, Snapshot
from .ledger import Budget, Ledger
from .locate import LocateOptions
from .measure import Size, approx_tokens, cl100k, cl100k_tokens, reduction_percent, size_table, utf8_bytes
from .toolbox import Toolbox, ToolSpec, after_sales_toolbox, discovery_tools, measure_schema_loading
from .tools import evidence_tools, run_tool_call, tool_call

__all__ = [
    "ANSWER", "ERROR_CODES", "QUESTION",
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
