"""What the notebooks show from inside the library: constants and steps of the protocol that are not its API.

The lessons open the library up (the page arithmetic of notebook 02, the compact profile's excerpt bounds in 08,
the store's gram postings in 11x, the offload thresholds in 12); the API keeps them private (``_name.py``) so they
can change. This module names them for the notebooks in one place; code that uses the library imports its public
API instead (``site/api.md``).
"""

from __future__ import annotations

from .._lines import shown_revision
from .._measure import approx_tokens, reduction_percent, size_table
from .._paging import page_reply, page_request
from .._tools import page_body, page_of
from ..disclosure._session import MAX_PREFETCH_BYTES, PREFETCH_RATE
from ..profiles._compact import COMPACT_EXCERPTS, RELEVANCE_CUT
from ..store._common import gram_term
from ..store._offload import DEFAULT_THRESHOLD_TOKENS, HANDLE_MAX_TOKENS
from ..store._postgres import scratch_schema

__all__ = ["COMPACT_EXCERPTS", "DEFAULT_THRESHOLD_TOKENS", "HANDLE_MAX_TOKENS", "MAX_PREFETCH_BYTES", "PREFETCH_RATE",
           "RELEVANCE_CUT", "approx_tokens", "gram_term", "page_body", "page_of", "page_reply", "page_request",
           "reduction_percent", "scratch_schema", "shown_revision", "size_table"]
