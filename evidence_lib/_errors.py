"""One exception family for every refusal, and one way to show it to a model.

Introduced in notebook 02 (the refusals section). Every tool in the series raises
:class:`EvidenceError` with a stable ``code``; :func:`error_payload` is the only
function that turns an error into what the model sees.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal

__all__ = ["AUDIT_REASONS", "BUDGET_REASONS", "CITATION_REASONS", "ERROR_CODES", "FINDING_CODES",
           "LOOP_STOP_REASONS", "SAME_CONDITION", "STOP_REASONS", "TASK_WIDE", "AuditReason", "BudgetReason",
           "CitationReason", "EvidenceError", "FindingCode", "LoopStopReason", "StopReason", "error_payload",
           "to_json"]

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
    "unknown_resource": "no such resource, revision or section is available",
    "unknown_tool": "no such tool is available",
    "internal_error": "the tool failed; the call was not completed",
    "evidence_incomplete": "a final answer needs the full source clause; read it before answering",
    "snapshot_expired": "the evidence snapshot is gone (expired, deleted or replaced); search again",
    "workspace_expired": "the task workspace expired; start the task again",
    "ledger_expired": "the task's budget ledger expired or was deleted; start the task again",
    "unknown_task": "no such task for you: call start_task",
    "invalid_text": "a text value holds a NUL byte or a lone surrogate and cannot be stored",
    "integer_out_of_range": "an integer does not fit in 64 bits and cannot be stored",
    "invalid_ttl": "a TTL must be a positive timedelta that ends before the year 10000",
    "malformed_history": "the message history is malformed (not messages, or a tool result that answers no call)",
    "unreadable_history": "the history file cannot be read (not a regular file, too large, or unreadable)",
    "result_too_large": "the tool's result is larger than the evidence store keeps; ask the tool for less",
    "unencodable_result": "the tool's result holds a block that cannot be encoded (a cycle); ask the tool for text",
    "invalid_range": "a range [start, end) needs two integers with 0 <= start <= end",
}


#: Why a citation does or does not verify (notebook 03). ``ok`` is the only passing reason.
CitationReason = Literal["ok", "unknown_doc_id", "document_changed", "out_of_bounds", "never_read",
                         "text_mismatch", "no_citations", "malformed", "empty_range"]
CITATION_REASONS: Final[dict[str, str]] = {
    "ok": "the cited range was read from this exact snapshot and matches",
    "unknown_doc_id": "no such document in the index (or not readable by this principal)",
    "document_changed": "the document changed since the cited snapshot (revision or sha256 differ)",
    "out_of_bounds": "the range is not a valid [start, end) inside the document",
    "never_read": "no read of these exact bytes covered this range: the text was never retrieved",
    "text_mismatch": "the quoted text differs from the text at that range",
    "no_citations": "the answer cites nothing",
    "malformed": 'the Sources line does not follow the citation format [n] doc_id@revision [start, end) "quote"',
    "empty_range": "the range [start, end) is empty (start == end): it cites no text",
}

#: Which limit a ``budget_exhausted`` refusal ran into (notebook 05).
BudgetReason = Literal["calls", "chars", "bytes", "tokens", "reads_per_doc", "refusals", "calls_per_message",
                       "loop_stopped"]
BUDGET_REASONS: Final[dict[str, str]] = {
    "calls": "the task made as many charged calls as its budget allows",
    "chars": "the characters returned would pass the budget",
    "bytes": "the UTF-8 bytes returned would pass the budget",
    "tokens": "the cl100k tokens returned would pass the budget",
    "reads_per_doc": "this document was read as often as the budget allows",
    "refusals": "too many refused calls: the caller is looping",
    # the agent loop's own refusals (notebook 09), not a ledger's
    "calls_per_message": "the message carried more tool calls than the loop runs from one message; the rest were not run",
    "loop_stopped": "a stop rule ended the task; tool calls on the answer turn are refused, not run",
}
#: Task-wide budget reasons: after one of these no tool call can help (``reads_per_doc`` only closes one
#: document). The agent loop stops on them and the checker reads them (notebook 09).
TASK_WIDE: Final[frozenset[str]] = frozenset({"calls", "chars", "bytes", "tokens", "refusals", "loop_stopped"})

#: Why the operator-side audit refused a call; the caller only ever sees the uniform error.
AuditReason = Literal["malformed_id", "not_found", "other_tenant", "no_read_grant", "unknown_revision",
                      "unknown_section", "other_principal", "source_read_revoked", "not_granted",
                      "order_not_found", "order_of_other_tenant"]
AUDIT_REASONS: Final[dict[str, str]] = {
    "malformed_id": "the id is not well-formed (a path, a URL, ...): never looked up",
    "not_found": "no such resource, artifact or tool",
    "other_tenant": "it belongs to another tenant",
    "no_read_grant": "the principal may not read it",
    "unknown_revision": "no such revision of the resource",
    "unknown_section": "no such section in that revision",
    "other_principal": "the artifact was created by another principal",
    "source_read_revoked": "the principal may no longer read the artifact's source",
    "not_granted": "the principal may not execute the tool",
    "order_not_found": "no such order",
    "order_of_other_tenant": "the order belongs to another tenant",
}

#: Why a read session stopped (notebook 07).
StopReason = Literal["all_needs_found", "no_new_evidence", "read_limit", "budget_exhausted"]
STOP_REASONS: Final[dict[str, str]] = {
    "all_needs_found": "every piece of evidence the task needs was found",
    "no_new_evidence": "consecutive reads brought no new evidence",
    "read_limit": "the supplementary read limit was reached",
    "budget_exhausted": "the task's budget (its ledger) refused the next read",
}

#: Findings of the agent checker (notebook 09): a breach of the reading contract seen in a message history.
#: ``evidence_lib.audit._checker.FINDINGS`` is this registry. One condition, one name per layer: a snapshot that
#: changed is ``evidence_changed`` to the model, ``document_changed`` to a citation check, ``citation_stale`` here.
FindingCode = Literal["citation_never_read", "citation_stale", "citation_text_mismatch", "citation_malformed",
                      "citation_empty_range", "answer_without_citation", "preview_as_evidence",
                      "absence_from_empty_locate", "duplicate_read", "exhaustive_reading",
                      "call_after_budget_exhausted", "instruction_from_evidence"]
FINDING_CODES: Final[dict[str, str]] = {
    "citation_never_read": "a citation's range was never returned by a read of that doc_id and revision",
    "citation_stale": "a citation points at a snapshot the history later shows was replaced or changed",
    "citation_text_mismatch": "a citation's quote differs from the text that was read at that range",
    "citation_malformed": "a Sources line does not follow the citation format",
    "citation_empty_range": "a citation's range [start, end) is empty: it cites no text",
    "answer_without_citation": "a final answer makes claims and cites nothing (and does not say evidence is missing)",
    "preview_as_evidence": "an answer rests on a manifest preview, which is a hint for locating, not evidence",
    "absence_from_empty_locate": "an empty locate result was turned into 'there is no such rule'",
    "duplicate_read": "a read asked again for a range already read from the same bytes",
    "exhaustive_reading": "documents were paged through without locating first, past what the answer cited",
    "call_after_budget_exhausted": "tools were called after a budget_exhausted refusal that closed the task",
    "instruction_from_evidence": "a tool call that only an instruction found in retrieved text explains",
}

#: Why the agent loop (``evidence_lib.integrations.langchain._loop.run_loop``, notebook 09) ended a task: ``LoopResult.stop_reason``.
LoopStopReason = Literal["final_answer", "empty_response", "model_error", "max_turns", "no_new_evidence",
                         "refusal_cap", "budget_exhausted"]
LOOP_STOP_REASONS: Final[dict[str, str]] = {
    "final_answer": "the model answered with text and no tool calls",
    "empty_response": "the model answered with neither text nor tool calls",
    "model_error": "the model call failed",
    "max_turns": "the task used every model turn its rules allow",
    "no_new_evidence": "consecutive tool rounds brought no new evidence (the answer turn followed)",
    "refusal_cap": "the ledger refused too many calls (the answer turn followed)",
    "budget_exhausted": "a task-wide budget was spent (the answer turn followed)",
}


#: One condition, one name per layer: what the model is told (a tool's error code), what a citation check says
#: (``CITATION_REASONS``) and what the history checker reports (``FINDING_CODES``) for the same thing.
#: ``None``: that layer cannot see the condition. Checked by tests/test_errors.py against the registries.
SAME_CONDITION: Final[dict[str, dict[str, str | None]]] = {
    "the bytes changed since they were indexed or shown": {
        "tool": "evidence_changed", "citation": "document_changed", "finding": "citation_stale"},
    "no such document for this principal": {
        "tool": "unknown_doc_id", "citation": "unknown_doc_id", "finding": None},
    "the cited text was never returned": {
        "tool": None, "citation": "never_read", "finding": "citation_never_read"},
    "the quote differs from the text at the range": {
        "tool": None, "citation": "text_mismatch", "finding": "citation_text_mismatch"},
    "the range is not inside the document": {
        "tool": "offset_exceeds_document", "citation": "out_of_bounds", "finding": None},
    "the answer cites nothing": {
        "tool": None, "citation": "no_citations", "finding": "answer_without_citation"},
    "a Sources line does not parse": {
        "tool": None, "citation": "malformed", "finding": "citation_malformed"},
    "the cited range is empty": {
        "tool": None, "citation": "empty_range", "finding": "citation_empty_range"},
    "the task's budget is spent": {
        "tool": "budget_exhausted", "citation": None, "finding": "call_after_budget_exhausted"},
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
