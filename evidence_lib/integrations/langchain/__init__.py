"""LangChain: the evidence middleware, the message loop, the ``create_agent`` harness, an offload reader.

:mod:`.middleware` (notebook 12: ``EvidenceMiddleware`` for any ``create_agent`` agent), :mod:`.loop` (notebook 09: a
message loop with stop rules and parallel reads), :mod:`.harness` (notebook 09: the same tools inside
``create_agent``), :mod:`.offload_reader` (notebook 12: an offline reader for offloaded results). Import the module
you need: ``create_agent`` is the optional ``agents`` extra, and only :mod:`.harness` and :mod:`.middleware` use it.
"""
