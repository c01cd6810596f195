"""The audit: read any message history as protocol steps and check it against the reading contract (notebook 09).

:func:`steps` reads a history as protocol steps (parsed once); :func:`check_history` returns :class:`Finding` objects
with stable codes (:data:`FINDINGS`); :func:`audit` is the report of an exported conversation
(``python -m evidence_lib audit``). It needs the core only: no index, no model, no store.
"""

from ._checker import FINDINGS, Finding, check_history, finding_codes
from ._history import steps
from ._report import audit

__all__ = ["FINDINGS", "Finding", "audit", "check_history", "finding_codes", "steps"]
