"""The audit: read any message history as protocol steps and check it against the reading contract (notebook 09).

:mod:`.history` (a history as steps, parsed once), :mod:`.checker` (findings with stable codes) and :mod:`.report`
(an exported conversation's report, ``python -m evidence_lib audit``). It needs the core only: no index, no model,
no store.
"""

from .checker import FINDINGS, Finding, check_history, finding_codes

__all__ = ["FINDINGS", "Finding", "check_history", "finding_codes"]
