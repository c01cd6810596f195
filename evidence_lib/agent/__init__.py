"""Compatibility package: the old ``evidence_lib.agent`` (notebook 09) before the layout of issue 24.

Its modules moved (see :mod:`evidence_lib._renames`): the loop, harness, middleware and offload reader to
:mod:`evidence_lib.integrations.langchain`, the history, checker and audit CLI to :mod:`evidence_lib.audit`, the
answer format to :mod:`evidence_lib.answers`, the offline readers and tasks to :mod:`evidence_lib.course`. This
package re-exports the names it exported before, from their new homes; new code imports those directly.
"""

from ..answers import SYSTEM_PROMPT, CitedRange, FinalAnswer, format_answer, insufficient_answer, parse_answer
from ..audit.checker import FINDINGS, Finding, check_history, finding_codes
from ..course.readers import (CARELESS_READERS, CarefulReader, PolicyChatModel, ScriptedChatModel, Seen,
                              careful_answer, careful_citations, careful_policy)
from ..errors import FINDING_CODES, LOOP_STOP_REASONS
from ..integrations.langchain.loop import (READ_ONLY_TOOLS, LoopResult, LoopRules, evidence_found, run_loop,
                                           sleep_latency, stop_rule)

__all__ = ["CARELESS_READERS", "FINDINGS", "FINDING_CODES", "LOOP_STOP_REASONS", "READ_ONLY_TOOLS", "SYSTEM_PROMPT",
           "CarefulReader", "CitedRange", "FinalAnswer", "Finding", "LoopResult", "LoopRules", "PolicyChatModel",
           "ScriptedChatModel", "Seen", "careful_answer", "careful_citations", "careful_policy", "check_history",
           "evidence_found", "finding_codes", "format_answer", "insufficient_answer", "parse_answer", "run_loop",
           "sleep_latency", "stop_rule"]
