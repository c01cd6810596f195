"""Concept diagrams of the series: labelled boxes and arrows, one per idea that is easier seen than read.

``catalog_layers`` (notebook 06), ``artifact_lifecycle`` (07), ``agent_loop`` (09) and ``store_layout`` (11).
Each is a `Diagram` (title, boxes, arrows) drawn by `draw` into a matplotlib Figure in the style of
``figures.py``: the same fonts (the shipped CJK subset when a label holds CJK, never a system font), no dates,
the same drawing on every run. Every label is a phrase of its notebook's prose (case aside: a box's label starts
with a capital), so the figure says nothing the text does not (tests/test_diagrams.py checks it wherever a notebook
draws one).
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from .figures import BLUE, GOLD, GREY, style

__all__ = ["Box", "Diagram", "DIAGRAMS", "agent_loop", "artifact_lifecycle", "catalog_layers", "draw",
           "store_layout"]

GREEN = "#3a8a4f"


@dataclass(frozen=True)
class Box:
    """One labelled box at ``(x, y)`` (lower left, axes fraction) of size ``w`` x ``h``; ``\\n`` in a label only
    wraps it (the prose says it on one line)."""

    key: str
    label: str
    x: float
    y: float
    w: float
    h: float
    color: str = BLUE


@dataclass(frozen=True)
class Diagram:
    """A concept diagram: its title, boxes, arrows ``(from key, to key)`` and the notebook that teaches it;
    ``frame`` is an optional dashed box around others (a group), drawn behind them; an arrow to its key ends on
    its top edge."""

    title: str
    notebook: str
    boxes: tuple[Box, ...]
    arrows: tuple[tuple[str, str], ...]
    frame: Box | None = None

    def labels(self) -> list[str]:
        """Every text the diagram draws, each on one line: the title, the frame's label, the boxes' labels."""
        texts = [self.title] + ([self.frame.label] if self.frame else []) + [b.label for b in self.boxes]
        return [" ".join(t.split()) for t in texts]


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float | None:
    """The middle of the intervals' overlap, or None when they do not overlap."""
    lo, hi = max(a0, b0), min(a1, b1)
    return (lo + hi) / 2 if lo < hi else None


def _ends(a: Box, b: Box) -> tuple[tuple[float, float], tuple[float, float]]:
    """Where the arrow from ``a`` to ``b`` starts and ends: straight down or up where the boxes share columns,
    straight across where they share rows, else from the middle of the facing sides."""
    if (x := _overlap(a.x, a.x + a.w, b.x, b.x + b.w)) is not None:
        return ((x, a.y), (x, b.y + b.h)) if b.y < a.y else ((x, a.y + a.h), (x, b.y))
    if (y := _overlap(a.y, a.y + a.h, b.y, b.y + b.h)) is not None:
        return ((a.x, y), (b.x + b.w, y)) if b.x < a.x else ((a.x + a.w, y), (b.x, y))
    down = b.y < a.y
    return (a.x + a.w / 2, a.y if down else a.y + a.h), (b.x + b.w / 2, b.y + b.h if down else b.y)


def _canvas(title: str) -> tuple[Figure, Axes]:
    """An 8 x 4.2 inch figure with one bare axes spanning [0, 1] x [0, 1] and the title on top, as figures.py's."""
    fig = plt.figure(figsize=(8.0, 4.2), dpi=100)
    ax = fig.add_axes((0.01, 0.06, 0.98, 0.84))
    ax.set(xlim=(0, 1), ylim=(0, 1))
    ax.axis("off")
    fig.text(0.02, 0.95, title, fontsize=11, va="top")
    return fig, ax


def _box(ax: Axes, box: Box) -> None:
    """A rounded box: a light fill, an outline in its colour and its label in the middle."""
    for fc, alpha in ((box.color, 0.12), ("none", 1.0)):
        ax.add_patch(FancyBboxPatch((box.x, box.y), box.w, box.h, boxstyle="round,pad=0.01,rounding_size=0.015",
                                    fc=fc, ec=box.color, alpha=alpha, lw=0 if fc != "none" else 1.2))
    ax.text(box.x + box.w / 2, box.y + box.h / 2, box.label, ha="center", va="center", fontsize=8)


def _frame(ax: Axes, frame: Box) -> None:
    ax.add_patch(FancyBboxPatch((frame.x, frame.y), frame.w, frame.h, boxstyle="round,pad=0.01",
                                fc="none", ec=frame.color, lw=1.0, ls="--"))
    ax.text(frame.x + 0.01, frame.y + frame.h - 0.015, frame.label, ha="left", va="top", fontsize=8.5)


def draw(diagram: Diagram) -> Figure:
    """The Figure of ``diagram``: a pyplot figure, so a notebook shows it with ``plt.show()``."""
    lang = "zh" if any(not ch.isascii() for ch in "".join(diagram.labels())) else "en"
    boxes = {b.key: b for b in diagram.boxes + ((diagram.frame,) if diagram.frame else ())}
    with plt.rc_context(style(lang)):
        fig, ax = _canvas(diagram.title)
        if diagram.frame:
            _frame(ax, diagram.frame)
        for b in diagram.boxes:
            _box(ax, b)
        for src, dst in diagram.arrows:
            ax.add_patch(FancyArrowPatch(*_ends(boxes[src], boxes[dst]), arrowstyle="-|>", mutation_scale=12,
                                         color="#444444", lw=1.2))
    return fig


CATALOG_LAYERS = Diagram(
    title="The catalog's layers: just enough to choose the next step",
    notebook="06",
    boxes=(
        Box("principal", "Principal: from authentication,\nnever from the model", 0.32, 0.80, 0.36, 0.14, GREY),
        Box("discover", "Discovery per principal: purpose, key fields,\nrevisions and sections, no text",
            0.01, 0.53, 0.46, 0.16),
        Box("sections", "Versioned sections: one section\nof one revision, read on demand", 0.01, 0.27, 0.46, 0.16),
        Box("gate", "A summary is navigation:\nthe answer gate needs the full clause", 0.01, 0.01, 0.46, 0.16, GOLD),
        Box("find", "Tool discovery: names and purposes only", 0.53, 0.53, 0.46, 0.16),
        Box("load", "Loaded on demand: only the chosen schemas", 0.53, 0.27, 0.46, 0.16),
        Box("execute", "Execution: the backend re-checks\ngrants on every call", 0.53, 0.01, 0.46, 0.16, GREEN),
    ),
    arrows=(("principal", "discover"), ("principal", "find"), ("discover", "sections"), ("sections", "gate"),
            ("find", "load"), ("load", "execute")),
)

ARTIFACT_LIFECYCLE = Diagram(
    title="A large result's life: put, handed over, read by range, expired",
    notebook="07",
    boxes=(
        Box("saved", "Tool result put into the store\n(ToolResults), outside the context", 0.01, 0.60, 0.29, 0.26,
            GREY),
        Box("handle", "Handle to the model: doc_id,\nrevision, summary, sections\n[start, end), sha256, expires_at",
            0.35, 0.60, 0.30, 0.26),
        Box("read", "Any range read with\nread_evidence, one page at a time", 0.70, 0.60, 0.29, 0.26),
        Box("requery", "Re-query: a new result\nwith a new handle", 0.01, 0.08, 0.29, 0.26, GREY),
        Box("expiry", "Expiry: at expires_at the\nreply is unknown_doc_id", 0.35, 0.08, 0.30, 0.26, GOLD),
        Box("moved", "Source moves to r9: the result\nstill reads r8 and says so", 0.70, 0.08, 0.29, 0.26, GOLD),
    ),
    arrows=(("saved", "handle"), ("handle", "read"), ("handle", "expiry"), ("read", "moved"), ("expiry", "requery"),
            ("requery", "saved")),
)

AGENT_LOOP = Diagram(
    title="The loop in one picture",
    notebook="09",
    boxes=(
        Box("model", "Model", 0.01, 0.34, 0.27, 0.50),
        Box("calls", "Tool calls", 0.36, 0.62, 0.27, 0.22),
        Box("middleware", "Middleware and ledger", 0.72, 0.62, 0.27, 0.22, GREEN),
        Box("replies", "Tool replies", 0.72, 0.34, 0.27, 0.20),
        Box("answer", "Final answer", 0.01, 0.04, 0.27, 0.20, GREY),
        Box("checker", "Compliance checker", 0.36, 0.04, 0.27, 0.20, GOLD),
    ),
    arrows=(("model", "calls"), ("calls", "middleware"), ("middleware", "replies"), ("replies", "model"),
            ("model", "answer"), ("answer", "checker")),
)

STORE_LAYOUT = Diagram(
    title="The store in one picture",
    notebook="11",
    boxes=(
        Box("workers", "Workers", 0.20, 0.80, 0.60, 0.12, GREY),
        Box("memory", "Memory", 0.01, 0.50, 0.30, 0.14),
        Box("sqlite", "SQLite", 0.35, 0.50, 0.30, 0.14),
        Box("postgres", "PostgreSQL", 0.69, 0.50, 0.30, 0.14),
        Box("snapshots", "Snapshots", 0.03, 0.06, 0.21, 0.16, GOLD),
        Box("chunks", "Chunks", 0.27, 0.06, 0.21, 0.16, GOLD),
        Box("ledgers", "Ledgers", 0.51, 0.06, 0.21, 0.16, GOLD),
        Box("workspaces", "Workspaces", 0.75, 0.06, 0.21, 0.16, GOLD),
    ),
    arrows=(("workers", "memory"), ("workers", "sqlite"), ("workers", "postgres"), ("memory", "keeps"),
            ("sqlite", "keeps"), ("postgres", "keeps")),
    frame=Box("keeps", "What every backend keeps", 0.01, 0.01, 0.98, 0.36, GREY),
)

DIAGRAMS: dict[str, Diagram] = {"catalog_layers": CATALOG_LAYERS, "artifact_lifecycle": ARTIFACT_LIFECYCLE,
                                "agent_loop": AGENT_LOOP, "store_layout": STORE_LAYOUT}


def catalog_layers() -> Figure:
    """Notebook 06: what each layer of the catalog shows, resources on the left and tools on the right."""
    return draw(CATALOG_LAYERS)


def artifact_lifecycle() -> Figure:
    """Notebook 07: an artifact saved, handed over as a handle, read by revision, expired and re-queried."""
    return draw(ARTIFACT_LIFECYCLE)


def agent_loop() -> Figure:
    """Notebook 09: model, tool calls, middleware and ledger, replies; then the answer and its checker."""
    return draw(AGENT_LOOP)


def store_layout() -> Figure:
    """Notebook 11: workers on one store, its three backends and what every backend keeps."""
    return draw(STORE_LAYOUT)
