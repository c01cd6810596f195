"""Integrations: the protocol inside other frameworks, built on the public API of the core, the store and the audit.

:mod:`evidence_lib.integrations.langchain` (notebooks 09 and 12) is the one today: a new framework gets its own
subpackage here. An integration imports only public names (``tests/test_layers.py`` checks it).
"""

__all__ = []
