"""The article's figures, regenerated from measured numbers. Figure 3 is drawn in notebook 02.

``write_figures(out)`` writes PNG and SVG files whose bytes are identical on every run (fixed
metadata, fixed SVG hash salt, no dates), so regenerated figures diff cleanly.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

STABLE_RC = {
    "svg.hashsalt": "evidence-lib",
    "svg.fonttype": "path",
    "path.simplify": True,
    "font.family": ["DejaVu Sans"],
}
_PNG_META = {"Software": None}
_SVG_META = {"Date": None, "Creator": None}

LABELS = {
    "en": {
        "title": "Figure 3 | What the model is sent (UTF-8 bytes of message content)",
        "baseline": "Baseline: full text\nof all 12 candidates",
        "protocol": "Manifest + locations\n+ one page",
        "ylabel": "UTF-8 bytes (log scale)",
        "note": "Message content only: no tool schemas, arguments, envelopes or model output.",
        "reduction": "{pct}% fewer bytes",
    },
}


def figure3(result: Mapping[str, Any], lang: str = "en") -> Figure:
    """Bars of the article's two byte counts on a log axis, values printed on the bars.

    A pyplot figure, so a notebook shows it with ``plt.show()``; scripts should ``plt.close`` it.
    """
    t = LABELS[lang]
    before = result["baseline_content_utf8_bytes"]
    after = result["manifest_plus_locations_plus_page_utf8_bytes"]
    with plt.rc_context(STABLE_RC):
        fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=100)
        bars = ax.bar([t["baseline"], t["protocol"]], [before, after], color=["#b0b0b0", "#2f6db3"], width=0.55)
        ax.set_yscale("log")
        ax.set_ylim(1_000, 400_000)
        ax.set_ylabel(t["ylabel"])
        ax.set_title(t["title"], fontsize=10)
        for bar, value in zip(bars, (before, after)):
            ax.annotate(f"{value:,}", (bar.get_x() + bar.get_width() / 2, value), xytext=(0, 4),
                        textcoords="offset points", ha="center", va="bottom", fontsize=11, fontweight="bold")
        ax.annotate(t["reduction"].format(pct=result["content_byte_reduction_percent"]),
                    xy=(0.97, 0.93), xycoords="axes fraction", ha="right", fontsize=10, color="#2f6db3")
        fig.text(0.01, 0.01, t["note"], fontsize=7, color="#555555")
        ax.spines[["top", "right"]].set_visible(False)
        fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def save_stable(fig: Figure, stem: Path) -> list[Path]:
    """Write ``stem.png`` and ``stem.svg`` with no timestamps or tool versions inside."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    with plt.rc_context(STABLE_RC):
        for ext, meta in (("png", _PNG_META), ("svg", _SVG_META)):
            path = stem.with_suffix(f".{ext}")
            fig.savefig(path, format=ext, metadata=meta)
            out.append(path)
    return out


def write_figures(out: str | Path = "figures", langs: tuple[str, ...] = ("en",)) -> list[Path]:
    """Run the article's experiment (temporary store) and write every figure into ``out``."""
    from .experiment import run_article

    result = run_article()
    out = Path(out)
    written: list[Path] = []
    for lang in langs:
        fig = figure3(result, lang)
        written += save_stable(fig, out / f"figure3-bytes.{lang}")
        plt.close(fig)
    return written
