"""evidence_lib: keep retrieval results out of the model's context; read evidence on demand.

The library behind the notebook series in ``notebooks/``. Each public name says in its
docstring which notebook introduces it.

``import evidence_lib`` loads the small core only: the protocol of notebooks 01-05 (documents, index, the three
tools, paging, locate, citations, access, the ledger, measuring, errors, profiles, clocks). The names of later
notebooks (progressive disclosure, your own retriever) and the course's names (the article's corpus, question and
experiment) are exported here too, but their modules load on first use, as langchain-core's own top-level exports
do. The layers (README, "Architecture"): the store (``evidence_lib.store``), the LangChain integration
(``evidence_lib.integrations.langchain``), the audit (``evidence_lib.audit``), the evaluation (``evidence_lib.eval``)
and the course (``evidence_lib.course``: teaching helpers, exercises, readers, demo data) are imported from their
subpackages. Old module paths keep importing through one table, :mod:`evidence_lib._renames`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from . import _renames
from .access import Access, Principal
from .citations import Answer, Citation, verify_answer, verify_citation
from .clock import FixedClock, ManualClock
from .documents import Document, baseline_dump
from .errors import AUDIT_REASONS, BUDGET_REASONS, CITATION_REASONS, ERROR_CODES, STOP_REASONS, EvidenceError, \
    error_payload, to_json
from .index import EvidenceIndex, IndexEntry, IndexProtocol, Snapshot
from .ledger import Budget, Ledger, ReadRecord
from .locate import LocateOptions
from .measure import Size, approx_tokens, cl100k, cl100k_tokens, reduction_percent, size_table, utf8_bytes
from .paging import Page, covering, covers, page
from .spans import Span
from .toolkit import EvidenceTool, StrictArgs, run_tool_call, tool_call
from .tools import evidence_tools

_renames.install()

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers and IDEs
    from .course.after_sales import after_sales_catalog, after_sales_toolbox
    from .course.article import ANSWER, QUESTION, article_corpus
    from .course.experiment import run_article
    from .disclosure import (AnswerGate, Artifact, ArtifactStore, Catalog, ReadSession, Resource, StopRules,
                             Toolbox, ToolSpec, catalog_tools, discovery_tools, logistics_tools, measure_schema_loading,
                             plan_loading)
    from .retrieval import BM25Retriever, RetrieverSource, folder_corpus, pydoc_corpus, recall_at_k

#: Names whose modules load on first use: name -> module (relative to this package). The only place outside
#: ``course/`` (with ``__main__`` and the compatibility shims) that names a course module.
_LAZY = {
    # notebooks 06-07: progressive disclosure, and the after-sales scenario it is taught on
    **dict.fromkeys(["AnswerGate", "Artifact", "ArtifactStore", "Catalog", "ReadSession", "Resource", "StopRules",
                     "ToolSpec", "Toolbox", "catalog_tools", "discovery_tools", "logistics_tools",
                     "measure_schema_loading", "plan_loading"], ".disclosure"),
    **dict.fromkeys(["after_sales_catalog", "after_sales_toolbox"], ".course.after_sales"),
    # notebook 08: your own retriever behind the tools
    **dict.fromkeys(["BM25Retriever", "RetrieverSource", "folder_corpus", "pydoc_corpus", "recall_at_k"],
                    ".retrieval"),
    # notebooks 01-02 and `make article`: the article's corpus, question and experiment
    **dict.fromkeys(["ANSWER", "QUESTION", "article_corpus"], ".course.article"),
    "run_article": ".course.experiment",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    # notebook 08
    "BM25Retriever", "RetrieverSource", "folder_corpus", "pydoc_corpus", "recall_at_k",
    "ANSWER", "AUDIT_REASONS", "BUDGET_REASONS", "CITATION_REASONS", "ERROR_CODES", "QUESTION", "STOP_REASONS",
    "EvidenceTool", "IndexProtocol", "Page", "ReadRecord", "StrictArgs", "covering", "covers", "page",
    # notebooks 06-07: progressive disclosure
    "AnswerGate", "Artifact", "ArtifactStore", "Catalog", "FixedClock", "ManualClock", "ReadSession", "Resource",
    "StopRules", "ToolSpec", "Toolbox", "after_sales_catalog", "after_sales_toolbox", "catalog_tools",
    "discovery_tools", "logistics_tools", "measure_schema_loading", "plan_loading",
    # notebooks 01-05
    "Access", "Answer", "Budget", "Citation", "Document", "EvidenceError", "EvidenceIndex", "IndexEntry", "Ledger",
    "LocateOptions", "Principal", "Size", "Snapshot", "Span",
    "approx_tokens", "article_corpus", "baseline_dump", "cl100k", "cl100k_tokens", "error_payload",
    "evidence_tools", "reduction_percent", "run_article", "run_tool_call", "size_table", "to_json",
    "tool_call", "utf8_bytes", "verify_answer", "verify_citation",
]
__version__ = "0.1.0"
