"""evidence_lib: keep retrieval results out of the model's context; read evidence on demand.

The library behind the notebook series in ``notebooks/``. Each public name says in its
docstring which notebook introduces it.
"""

from .access import Access, Principal
from .citations import Answer, Citation, verify_answer, verify_citation
from .corpus import ANSWER, QUESTION, Document, article_corpus, baseline_dump
from .errors import ERROR_CODES, EvidenceError, error_payload, to_json
from .experiment import run_article
from .index import EvidenceIndex, IndexEntry, Snapshot
from .ledger import Budget, Ledger
from .locate import LocateOptions
from .measure import Size, approx_tokens, cl100k, cl100k_tokens, reduction_percent, size_table, utf8_bytes
from .tools import evidence_tools, run_tool_call, tool_call

__all__ = [
    "ANSWER", "ERROR_CODES", "QUESTION",
    "Access", "Answer", "Budget", "Citation", "Document", "EvidenceError", "EvidenceIndex", "IndexEntry", "Ledger",
    "LocateOptions", "Principal", "Size", "Snapshot",
    "approx_tokens", "article_corpus", "baseline_dump", "cl100k", "cl100k_tokens", "error_payload",
    "evidence_tools", "reduction_percent", "run_article", "run_tool_call", "size_table", "to_json",
    "tool_call", "utf8_bytes", "verify_answer", "verify_citation",
]
__version__ = "0.1.0"
