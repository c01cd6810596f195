"""One exception family for every refusal, and one way to show it to a model.

Introduced in notebook 02 (the refusals section). Every tool in the series raises
:class:`EvidenceError` with a stable ``code``; :func:`error_payload` is the only
function that turns an error into what the model sees.
"""

from __future__ import annotations

import json
from typing import Any, Final

#: Stable error codes. The model (and your tests) may rely on these strings.
ERROR_CODES: Final[dict[str, str]] = {
    "invalid_arguments": "the call's arguments do not match the tool's schema",
    "unknown_doc_id": "no such document in this evidence snapshot; search again",
    "invalid_page_bounds": "offset must be >= 0 and limit within the page bounds",
    "offset_exceeds_document": "offset is beyond the end of the document",
    "evidence_changed": "the stored evidence changed since it was indexed; search again",
    "invalid_term": "search term length is out of bounds",
    "invalid_query": "query length is out of bounds",
    "budget_exhausted": "the budget for this task is spent; narrow the query, ask the user, or answer with what you have",
    "unknown_resource": "no such resource, version or section is available",
    "unknown_tool": "no such tool is available",
    "unknown_artifact": "no such artifact is available",
    "artifact_expired": "the artifact expired; run the query again",
    "version_changed": "the source changed since the summary was made",
    "internal_error": "the tool failed; the call was not completed",
    "evidence_incomplete": "a final answer needs the full source clause; read it before answering",
}


class EvidenceError(ValueError):
    """A refusal with a stable ``code``; ``details`` are safe to show the model.

    Never put a file path, a stack trace or another tenant's data in ``details``.
    """

    def __init__(self, code: str, message: str | None = None, **details: Any) -> None:
        if code not in ERROR_CODES:
            raise KeyError(f"unregistered error code: {code!r}")
        self.code = code
        self.message = message or ERROR_CODES[code]
        self.details = details
        super().__init__(f"{code}: {self.message}")

    def __repr__(self) -> str:
        return f"EvidenceError({self.code!r})"


def error_payload(error: BaseException) -> dict[str, Any]:
    """The JSON-able body the model sees for ``error`` (unknown errors become ``internal_error``)."""
    if isinstance(error, EvidenceError):
        return {"error": error.code, "message": error.message, **error.details}
    return {"error": "internal_error", "message": ERROR_CODES["internal_error"]}


def to_json(obj: Any) -> str:
    """Serialize what the model sees: UTF-8 as is (``ensure_ascii=False``), key order preserved."""
    return json.dumps(obj, ensure_ascii=False)
