"""The protocol inside a real message loop: offline readers, full-context accounting, a checker, an audit.

Notebook 09. The core modules never import this subpackage; ``create_agent`` (the optional ``agents``
extra) is imported only by :func:`evidence_lib.agent.harness.run_create_agent`. The finding codes and the loop's stop
reasons are registries of :mod:`evidence_lib.errors` (``FINDING_CODES``, ``LOOP_STOP_REASONS``), re-exported here.
"""

from ..errors import FINDING_CODES, LOOP_STOP_REASONS
from .checker import FINDINGS, Finding, check_history, finding_codes
from .loop import READ_ONLY_TOOLS, LoopResult, LoopRules, evidence_found, run_loop, sleep_latency, stop_rule
from .models import (CARELESS_READERS, CarefulReader, PolicyChatModel, ScriptedChatModel, Seen, careful_answer,
                     careful_citations, careful_policy)
from .prompt import SYSTEM_PROMPT, CitedRange, FinalAnswer, format_answer, insufficient_answer, parse_answer

__all__ = ["CARELESS_READERS", "FINDINGS", "FINDING_CODES", "LOOP_STOP_REASONS", "READ_ONLY_TOOLS", "SYSTEM_PROMPT",
           "CarefulReader", "CitedRange", "FinalAnswer", "Finding", "LoopResult", "LoopRules", "PolicyChatModel",
           "ScriptedChatModel", "Seen", "careful_answer", "careful_citations", "careful_policy", "check_history",
           "evidence_found", "finding_codes", "format_answer", "insufficient_answer", "parse_answer", "run_loop",
           "sleep_latency", "stop_rule"]
