"""Teaching helpers: what the notebooks use to show the protocol, never part of it.

``experiment`` (the article's run, notebook 02 and ``make article``), ``figures`` (the article's figures, ``make
figures``), ``explore`` and ``widgets`` (the live explorers of notebook 10), ``workspace`` (where a notebook keeps
its stores). ``import evidence_lib`` loads none of them; import the module you need, e.g.
``from evidence_lib.teaching.figures import figure``.
"""
