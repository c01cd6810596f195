"""evidence_lib: keep retrieval results out of the model's context; read evidence on demand.

The library behind the notebook series in ``notebooks/``. This package is its core (notebooks 01-05): documents,
the evidence index, the three tools, locate options, citations and the one answer format, principals and grants,
the ledger, measuring, errors and clocks. It loads nothing else. The other layers are subpackages, each with its
own public names (README, "Architecture"; every name is in the API reference):

* :mod:`evidence_lib.profiles`: the tools' reply formats (notebook 08);
* :mod:`evidence_lib.retrieval`: your retriever behind the tools, the shipped corpora (notebook 08);
* :mod:`evidence_lib.disclosure`: catalogs, tool discovery, stop rules (notebooks 06-07);
* :mod:`evidence_lib.store`: the production store, large results kept outside the context (notebooks 07, 11, 12);
* :mod:`evidence_lib.integrations.langchain` and :mod:`evidence_lib.integrations.mcp` (notebooks 09, 12, 13);
* :mod:`evidence_lib.audit` (notebook 09) and :mod:`evidence_lib.eval` (notebook 08);
* :mod:`evidence_lib.course`: the teaching helpers, exercises and demo data, which nothing else imports.

Every other module is private (``_name.py``): import from here or from a subpackage.
"""

from __future__ import annotations

from ._access import Access, Principal
from ._answers import CitedRange, FinalAnswer, format_answer, insufficient_answer, parse_answer
from ._citations import (
    Answer,
    AnswerCheck,
    Citation,
    CitationCheck,
    Excerpt,
    verify_answer,
    verify_citation,
    verify_sources,
)
from ._clock import Clock, FixedClock, ManualClock
from ._documents import Document, baseline_dump
from ._errors import CITATION_REASONS, ERROR_CODES, EvidenceError, error_payload, to_json
from ._index import EvidenceIndex, IndexEntry, IndexProtocol, Snapshot
from ._ledger import Budget, Ledger, ReadRecord
from ._locate import LocateOptions
from ._measure import Size, TokenCounter, cl100k_tokens, utf8_bytes
from ._paging import MAX_PAGE_CHARS
from ._spans import Span
from ._toolkit import EvidenceTool, StrictArgs, run_tool_call, tool_call
from ._tools import evidence_tools, read_page

__all__ = [
    # notebooks 01-02: documents, the index, the three tools, running a tool call
    "Document", "baseline_dump", "EvidenceIndex", "IndexEntry", "IndexProtocol", "Snapshot", "evidence_tools",
    "read_page", "MAX_PAGE_CHARS", "LocateOptions", "EvidenceTool", "StrictArgs", "run_tool_call", "tool_call",
    "EvidenceError", "ERROR_CODES", "error_payload", "to_json", "Size", "TokenCounter", "cl100k_tokens",
    "utf8_bytes",
    # notebook 03: ranges, citations and the one answer format
    "Span", "Citation", "CitationCheck", "Excerpt", "Answer", "AnswerCheck", "CITATION_REASONS", "verify_citation",
    "verify_answer", "verify_sources", "format_answer", "parse_answer", "insufficient_answer", "FinalAnswer",
    "CitedRange",
    # notebooks 04-05: who may read what, one budget per task, clocks
    "Access", "Principal", "Budget", "Ledger", "ReadRecord", "Clock", "FixedClock", "ManualClock",
]
__version__ = "0.1.0"
