"""The course: what the notebooks use to teach the protocol, never part of it. Nothing outside this package imports it.

Teaching helpers: ``experiment`` (the article's run, notebook 02 and ``make article``), ``figures`` (the article's
figures, ``make figures``; matplotlib, the ``course`` extra), ``diagrams`` (the concept diagrams of notebooks 06, 07, 09
and 11), ``explore`` and ``widgets`` (the live explorers of
notebook 10; ipywidgets), ``large_results`` (notebook 12), ``logistics`` (notebook 07's ``query_logistics``), ``workspace`` (where a notebook keeps its stores). Demo
data: ``article`` (the article's corpus and question), ``after_sales`` (notebooks 06-07's scenario). Offline
readers: ``readers`` (a careful policy reader and careless ones, notebook 09), ``scripted`` and ``obedient``
(notebooks 06-07), with ``tasks`` and ``accounting`` (notebook 09's runs and their full-context accounting). The
workshop: ``exercises``. ``import evidence_lib`` loads none of them; import the module you need, e.g.
``from evidence_lib.course.figures import figure``.
"""
