"""The article's three figures, regenerated from measured numbers, in English and Chinese.

Figure 1: the experiment at a glance (same 12 candidates, two transport shapes). Figure 2: the
manifest → location → text flow with the half-open ``[start, end)`` page. Figure 3: the byte bars.
Notebook 02 draws Figure 3; ``make figures`` writes all of them. Output bytes are identical on
every run (fixed metadata, fixed SVG hash salt, text as paths, no dates).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib import font_manager
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

_PNG_META = {"Software": None}
_SVG_META = {"Date": None, "Creator": None}
CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "WenQuanYi Zen Hei")
BLUE, GREY, GOLD = "#2f6db3", "#b0b0b0", "#e0a100"


class MissingFontError(RuntimeError):
    """Raised for ``lang="zh"`` when no CJK font is installed (see ``make fonts``)."""


def cjk_family() -> str:
    """Name of an installed CJK sans font, registering system font files matplotlib has not seen yet."""
    known = {f.name for f in font_manager.fontManager.ttflist}
    for fam in CJK_FAMILIES:
        if fam in known:
            return fam
    for path in font_manager.findSystemFonts():
        if "CJK" in Path(path).name and "Sans" in Path(path).name:
            font_manager.fontManager.addfont(path)
    known = {f.name for f in font_manager.fontManager.ttflist}
    for fam in CJK_FAMILIES:
        if fam in known:
            return fam
    raise MissingFontError(
        "No CJK font found for the Chinese figures. Install one, e.g. `apt-get install fonts-noto-cjk` "
        "(Debian/Ubuntu; `make fonts` tries this) or `brew install --cask font-noto-sans-cjk-sc` (macOS), "
        f"then run again. Looked for: {', '.join(CJK_FAMILIES)}."
    )


def style(lang: str = "en") -> dict[str, Any]:
    """rcParams for stable, readable figures; Chinese falls back from DejaVu Sans to a CJK font."""
    families = ["DejaVu Sans", cjk_family()] if lang == "zh" else ["DejaVu Sans"]
    return {"svg.hashsalt": "evidence-lib", "svg.fonttype": "path", "font.family": families,
            "axes.unicode_minus": False}


LABELS: dict[str, dict[str, str]] = {
    "en": {
        "f1_title": "Figure 1 | Same 12 candidates, two ways to send them",
        "f1_candidates": "12 fixed candidates\n(d03 holds the answer)",
        "f1_baseline": "Baseline tool result:\nfull text of all 12",
        "f1_protocol": "Three tools:\nmanifest + positions + one page",
        "f1_manifest": "manifest: 12 rows, no text",
        "f1_locate": "positions: d03 @ 4321",
        "f1_page": "page: d03 [4321, 4339)",
        "f1_note": "Original illustration. Compares the message content of the same synthetic candidates, "
                   "not model bills or online quality.",
        "f2_title": "Figure 2 | From manifest to position to text",
        "f2_search": "search_evidence(query)\n→ manifest: doc_id, title, revision,\n   chars, sha256, 40-char preview",
        "f2_locate": "locate_evidence(term)\n→ positions: {doc_id: d03,\n   offset: 4321}",
        "f2_read": "read_evidence(doc_id, offset, limit)\n→ page: text + revision, sha256,\n   [start, end), next_offset",
        "f2_doc": "{doc_id}: {total:,} characters",
        "f2_range": "[{start}, {end}): the answer sentence",
        "f2_note": "Half-open range of Python string indices (code points), not UTF-8 byte offsets: "
                   "character {start} is byte {byte:,}.",
        "f3_title": "Figure 3 | What the model is sent (UTF-8 bytes of message content)",
        "f3_baseline": "Baseline: full text\nof all 12 candidates",
        "f3_protocol": "Manifest + locations\n+ one page",
        "f3_ylabel": "UTF-8 bytes (log scale)",
        "f3_note": "Message content only: no tool schemas, arguments, envelopes or model output.",
        "f3_reduction": "{pct}% fewer bytes",
    },
    "zh": {
        "f1_title": "图 1｜同一批 12 条候选，两种传输形态",
        "f1_candidates": "12 条固定候选\n（d03 含答案）",
        "f1_baseline": "基线工具结果：\n12 份全文",
        "f1_protocol": "三个工具：\n清单＋位置＋一页正文",
        "f1_manifest": "清单：12 行，无正文",
        "f1_locate": "位置：d03 @ 4321",
        "f1_page": "正文：d03 [4321, 4339)",
        "f1_note": "原创实验示意。对比的是同一批合成候选资料的消息 content，不是模型账单或线上效果。",
        "f2_title": "图 2｜从清单、位置到正文",
        "f2_search": "search_evidence(query)\n→ 清单：doc_id、标题、修订日期、\n   字符数、sha256、40 字符预览",
        "f2_locate": "locate_evidence(term)\n→ 位置：{doc_id: d03,\n   offset: 4321}",
        "f2_read": "read_evidence(doc_id, offset, limit)\n→ 一页正文＋修订、sha256、\n   [start, end)、next_offset",
        "f2_doc": "{doc_id}：{total:,} 个字符",
        "f2_range": "[{start}, {end})：答案句",
        "f2_note": "页范围为 Python 字符串的半开区间 [start, end)，不是 UTF-8 字节偏移：第 {start} 个字符位于第 {byte:,} 字节。",
        "f3_title": "图 3｜发给模型的内容（消息 content 的 UTF-8 字节数）",
        "f3_baseline": "基线：12 条候选全文",
        "f3_protocol": "清单＋定位结果＋一页",
        "f3_ylabel": "UTF-8 字节数（对数坐标）",
        "f3_note": "仅统计消息 content：不含工具 schema、请求参数、消息封装或模型输出。",
        "f3_reduction": "字节减少 {pct}%",
    },
}


def _box(ax, xy, w, h, text, color, fontsize=9, fill_alpha=0.12):
    ax.add_patch(FancyBboxPatch(xy, w, h, boxstyle="round,pad=0.01,rounding_size=0.015",
                                fc=color, ec=color, alpha=fill_alpha, lw=0))
    ax.add_patch(FancyBboxPatch(xy, w, h, boxstyle="round,pad=0.01,rounding_size=0.015",
                                fc="none", ec=color, lw=1.2))
    ax.text(xy[0] + w / 2, xy[1] + h / 2, text, ha="center", va="center", fontsize=fontsize)


def _arrow(ax, a, b, color="#444444"):
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=12, color=color, lw=1.2))


def _canvas(title: str, size=(8.0, 4.2)):
    fig = plt.figure(figsize=size, dpi=100)
    ax = fig.add_axes((0.01, 0.06, 0.98, 0.84))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    fig.text(0.02, 0.95, title, fontsize=11, va="top")
    return fig, ax


def figure1(result: Mapping[str, Any], lang: str = "en") -> Figure:
    """The experiment at a glance: one candidate set, the dump vs the three tools, with measured bytes."""
    t = LABELS[lang]
    with plt.rc_context(style(lang)):
        fig, ax = _canvas(t["f1_title"])
        for i in range(12):  # the candidate stack
            x, y = 0.03 + (i % 3) * 0.075, 0.68 - (i // 3) * 0.12
            answer = i == 3
            ax.add_patch(Rectangle((x, y), 0.06, 0.09, fc=GOLD if answer else "#f2f2f2", ec="#666666", lw=0.8))
            ax.text(x + 0.03, y + 0.045, f"d{i:02}", ha="center", va="center", fontsize=7)
        ax.text(0.14, 0.18, t["f1_candidates"], ha="center", va="top", fontsize=8.5)
        before = result["baseline_content_utf8_bytes"]
        after = result["manifest_plus_locations_plus_page_utf8_bytes"]
        _arrow(ax, (0.27, 0.68), (0.39, 0.76))
        _arrow(ax, (0.27, 0.42), (0.39, 0.30))
        _box(ax, (0.40, 0.60), 0.27, 0.30, t["f1_baseline"], GREY)
        ax.add_patch(Rectangle((0.70, 0.62), 0.26, 0.26, fc=GREY, ec="none"))
        ax.text(0.83, 0.75, f"{before:,} B", ha="center", va="center", fontsize=11, fontweight="bold")
        _box(ax, (0.40, 0.08), 0.27, 0.40, t["f1_protocol"], BLUE)
        for j, key in enumerate(("f1_manifest", "f1_locate", "f1_page")):
            ax.text(0.70, 0.40 - j * 0.09, "• " + t[key], fontsize=8, va="center")
        side = 0.26 * (after / before) ** 0.5  # square area proportional to bytes
        ax.add_patch(Rectangle((0.83 - side / 2, 0.07), side, side, fc=BLUE, ec="none"))
        ax.text(0.83, 0.07 + side + 0.02, f"{after:,} B", ha="center", va="bottom", fontsize=11,
                fontweight="bold", color=BLUE)
        fig.text(0.01, 0.01, t["f1_note"], fontsize=6.5, color="#555555")
    return fig


def figure2(result: Mapping[str, Any], lang: str = "en") -> Figure:
    """Manifest → location → text, with the cited document as a strip and its half-open range marked.

    Needs only ``result["citation"]`` (doc_id, start, end); sizes come from the article corpus.
    """
    from .corpus import article_corpus

    t = LABELS[lang]
    c = result["citation"]
    text = next(d.text for d in article_corpus() if d.doc_id == c["doc_id"])
    total = len(text)
    fmt = {"doc_id": c["doc_id"], "total": total, "start": c["start"], "end": c["end"],
           "byte": len(text[: c["start"]].encode("utf-8"))}
    with plt.rc_context(style(lang)):
        fig, ax = _canvas(t["f2_title"], size=(8.0, 4.0))
        for k, key in enumerate(("f2_search", "f2_locate", "f2_read")):
            x = 0.01 + k * 0.335
            _box(ax, (x, 0.56), 0.31, 0.32, t[key], BLUE, fontsize=7.5)
            if k < 2:
                _arrow(ax, (x + 0.312, 0.72), (x + 0.333, 0.72))
        y, x0, w = 0.26, 0.04, 0.92
        ax.add_patch(Rectangle((x0, y), w, 0.08, fc="#f2f2f2", ec="#666666", lw=0.8))
        ax.text(x0, y + 0.11, t["f2_doc"].format(**fmt), fontsize=8.5)
        s = x0 + w * c["start"] / total
        e = x0 + w * c["end"] / total
        ax.add_patch(Rectangle((s, y), max(e - s, 0.006), 0.08, fc=GOLD, ec=GOLD))
        ax.annotate(t["f2_range"].format(**fmt), xy=(s, y), xytext=(0.58, 0.13), fontsize=8.5,
                    arrowprops={"arrowstyle": "-|>", "color": "#444444", "lw": 1})
        for pos, label in ((0, "0"), (total, f"{total:,}")):
            ax.text(x0 + w * pos / total, y - 0.035, label, ha="center", fontsize=7)
        _arrow(ax, (0.86, 0.55), (e, y + 0.09))
        fig.text(0.01, 0.02, t["f2_note"].format(**fmt), fontsize=7, color="#555555")
    return fig


def figure3(result: Mapping[str, Any], lang: str = "en") -> Figure:
    """Bars of the article's two byte counts on a log axis, values printed on the bars.

    A pyplot figure, so a notebook shows it with ``plt.show()``; scripts should ``plt.close`` it.
    """
    t = LABELS[lang]
    before = result["baseline_content_utf8_bytes"]
    after = result["manifest_plus_locations_plus_page_utf8_bytes"]
    with plt.rc_context(style(lang)):
        fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=100)
        bars = ax.bar([t["f3_baseline"], t["f3_protocol"]], [before, after], color=[GREY, BLUE], width=0.55)
        ax.set_yscale("log")
        ax.set_ylim(1_000, 400_000)
        ax.set_ylabel(t["f3_ylabel"])
        ax.set_title(t["f3_title"], fontsize=10)
        for bar, value in zip(bars, (before, after)):
            ax.annotate(f"{value:,}", (bar.get_x() + bar.get_width() / 2, value), xytext=(0, 4),
                        textcoords="offset points", ha="center", va="bottom", fontsize=11, fontweight="bold")
        ax.annotate(t["f3_reduction"].format(pct=result["content_byte_reduction_percent"]),
                    xy=(0.97, 0.93), xycoords="axes fraction", ha="right", fontsize=10, color=BLUE)
        fig.text(0.01, 0.01, t["f3_note"], fontsize=7, color="#555555")
        ax.spines[["top", "right"]].set_visible(False)
        fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


FIGURES = {"figure1-experiment": figure1, "figure2-flow": figure2, "figure3-bytes": figure3}


def save_stable(fig: Figure, stem: Path, lang: str = "en") -> list[Path]:
    """Write ``stem.png`` and ``stem.svg`` with no timestamps or tool versions inside."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    with plt.rc_context(style(lang)):
        for ext, meta in (("png", _PNG_META), ("svg", _SVG_META)):
            path = stem.with_name(f"{stem.name}.{ext}")
            fig.savefig(path, format=ext, metadata=meta)
            out.append(path)
    return out


def write_figures(out: str | Path = "figures", langs: tuple[str, ...] = ("en", "zh"),
                  result: Mapping[str, Any] | None = None) -> list[Path]:
    """Run the article's experiment (temporary store) and write every figure in every language."""
    from .experiment import run_article

    result = run_article() if result is None else result
    out = Path(out)
    written: list[Path] = []
    for lang in langs:
        for stem, draw in FIGURES.items():
            fig = draw(result, lang)
            written += save_stable(fig, out / f"{stem}.{lang}", lang)
            plt.close(fig)
    return written
