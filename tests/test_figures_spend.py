"""Notebook 05's spend figure: each panel's legend sits outside its axes, so it never covers a refusal marker.

Issue 18 item 6: with ``Ledger.plot``'s legend inside the axes (lower right), the legend of the token panel
covered the crosses of the refused calls at steps 8-11. The figure must place the legends where no data can be.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.collections import PathCollection
from matplotlib.transforms import Bbox

from evidence_lib import Budget, EvidenceIndex, Ledger, evidence_tools, run_tool_call, tool_call
from evidence_lib.course.article import article_corpus
from evidence_lib.course.figures import spend_figure

# Notebook 05's scripted turn: 19 calls, eight of them refused (steps 8-11, 14 and 17-19).
SCRIPT = [("search_evidence", {"query": "批处理上限"}), ("locate_evidence", {"term": "每批上限"}),
          ("locate_evidence", {"term": "单批上限"}),
          ("read_evidence", {"doc_id": "d03", "offset": 4321, "limit": 300}),
          ("read_evidence", {"doc_id": "d03", "offset": 4321, "limit": 18}),
          ("read_evidence", {"doc_id": "d03", "offset": 0, "limit": 300}),
          ("read_evidence", {"doc_id": "d03", "offset": 100, "limit": 100}),
          ("read_evidence", {"doc_id": "d03", "offset": -1}), ("read_evidence", {"doc_id": "../d03"}),
          ("read_evidence", {"doc_id": "d03", "limit": 801}), ("read_evidence", {"doc_id": "d03", "page": 2}),
          ("read_evidence", {"doc_id": "d03", "offset": 300, "limit": 300}),
          ("read_evidence", {"doc_id": "d03", "offset": 600, "limit": 300}),
          ("read_evidence", {"doc_id": "d03", "offset": 900, "limit": 300}),
          ("locate_evidence", {"term": "超时"}),
          ("read_evidence", {"doc_id": "d05", "offset": 0, "limit": 800}),
          ("read_evidence", {"doc_id": "d07", "offset": 0, "limit": 800}),
          ("read_evidence", {"doc_id": "d07", "offset": 0, "limit": 300}),
          ("search_evidence", {"query": "批处理超时"})]


@pytest.fixture(scope="module")
def ledger(tmp_path_factory):
    index = EvidenceIndex.build(article_corpus(), root=tmp_path_factory.mktemp("spend"))
    ledger = Ledger(Budget())
    tools = evidence_tools(index, ledger=ledger)
    for n, (name, args) in enumerate(SCRIPT, 1):
        run_tool_call(tools, tool_call(name, args, f"call-{n:02}"))
    assert len(ledger.refusals) == 8
    return ledger


def _marker_boxes(ax) -> list[Bbox]:
    """The refusal crosses of one panel as drawn: a box of the marker's width around each centre, in pixels.

    (The old legend covered the crosses' arms at steps 8-10, not their centres.)
    """
    (crosses,) = [c for c in ax.collections if isinstance(c, PathCollection)]
    half = np.sqrt(crosses.get_sizes()[0]) * ax.figure.dpi / 72 / 2  # marker size is in points squared
    return [Bbox.from_extents(x - half, y - half, x + half, y + half)
            for x, y in ax.transData.transform(crosses.get_offsets())]


@pytest.mark.parametrize("units", [("chars", "tokens"), ("bytes",), ("chars", "bytes", "tokens")])
def test_no_legend_covers_a_refusal_marker(ledger, units):
    fig = spend_figure(ledger, units=units)
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
        boxes = [lg.get_window_extent(renderer) for lg in legends if lg is not None]
        assert boxes, "the figure has a legend"
        for ax in fig.axes:
            markers = _marker_boxes(ax)
            assert len(markers) == 8
            for box in boxes:
                covered = [m.bounds for m in markers if m.overlaps(box)]
                assert not covered, f"a legend covers refusal markers of the {ax.get_ylabel()} panel at {covered}"
            # outside the axes altogether: no data point, present or future, can be under it
            for box in boxes:
                assert not box.overlaps(ax.get_window_extent(renderer)), "a legend lies inside the axes"
    finally:
        plt.close(fig)


def test_each_panel_shows_its_unit_against_its_budget(ledger):
    fig = spend_figure(ledger, units=("chars", "tokens"))
    try:
        assert [ax.get_title() for ax in fig.axes] == ["characters returned", "cl100k tokens returned"]
        for ax, unit in zip(fig.axes, ("chars", "tokens")):
            labels = [t.get_text() for t in ax.get_legend().get_texts()]
            assert f"budget ({ledger.limits()[unit]:,} {unit})" in labels
            assert ax.lines[0].get_ydata()[-1] == ledger.totals()[unit]
    finally:
        plt.close(fig)


def test_the_figure_is_the_same_on_every_run(ledger, tmp_path):
    pngs = []
    for name in ("a", "b"):
        fig = spend_figure(ledger)
        path = tmp_path / f"{name}.png"
        fig.savefig(path, format="png", metadata={"Software": None})
        plt.close(fig)
        pngs.append(path.read_bytes())
    assert pngs[0] == pngs[1]
