"""Tables of eval results (``python -m evidence_lib eval`` output): taught in notebooks 08 and 08x.

The eval writes one JSON file per QA set (``bench/results/eval_<set>.json``): the run of its first chooser at the
top level and the other choosers under ``by_chooser``. These helpers read whatever sets and flows a file holds
(never a hard-coded set or number) and format them as plain-text tables, so a notebook shows them with one call:

* :func:`flow_table`: one set, one chooser, every flow;
* :func:`every_set_table`: every set, both choosers, each flow's answered / median bytes / median tokens / p90 bytes
  and its ratio to Deep Agents (the efficient flow, ``deepagents``) on the same set and chooser;
* :func:`bytes_by_tool_table`: where the bytes go, per set, chooser, flow and tool;
* :func:`grid_figure`: the same per set as a picture, one flow beside Deep Agents (matplotlib, the ``course`` extra);
* :func:`sets_at_a_glance`: one line per set: its size, one flow's answered beside Deep Agents' and their median bytes
  ratio, over every question and over the questions both answered (:func:`both_answered`), under one chooser;
* :func:`unanswered_table`: per set, the questions one flow and Deep Agents left unanswered and their median bytes;
* :func:`set_inputs`: a set's corpus and checked questions, a kernel or Debian corpus read from its archive;
* :func:`first_reply`: the reply the eval's tools gave to a question's first call (what a flow saw, not its size).

Ratios print with two decimals (a value under its peer's reads below ``1.00x``, never rounded to ``1x``).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["PEER", "both_answered", "bytes_by_tool_table", "engines", "every_set_table", "first_reply", "floor_table",
           "flow_table", "grid_figure", "load_sets", "ratio", "runs_by_chooser", "set_inputs", "sets_at_a_glance",
           "unanswered_table"]

#: The flow every ratio is taken against: Deep Agents' own tools used as a capable model would.
PEER = "deepagents"
#: The columns of :func:`every_set_table` that get a ratio to :data:`PEER` (summary key, header).
RATIO_KEYS = (("median_bytes", "median B"), ("median_tokens", "median tok"), ("p90_bytes", "p90 B"))

Result = Mapping[str, Any]


def load_sets(folder: str | Path, pattern: str = "eval_*.json") -> dict[str, Result]:
    """Every eval result in ``folder`` (``eval_<set>.json``), keyed by ``<set>``, smallest corpus first."""
    found = {p.stem.removeprefix("eval_"): json.loads(p.read_text(encoding="utf-8"))
             for p in sorted(Path(folder).glob(pattern))}
    return dict(sorted(found.items(), key=lambda kv: (kv[1].get("documents", 0), kv[0])))


def runs_by_chooser(result: Result) -> dict[str, Result]:
    """``{chooser: run}`` for one result: its top-level run under its own ``chooser``, then ``by_chooser``'s."""
    return {result["chooser"]: result, **dict(result.get("by_chooser", {}))}


def ratio(value: float, peer: float | None) -> str:
    """``value / peer`` as ``0.42x`` (two decimals), or ``-`` when there is no peer value to divide by."""
    return f"{value / peer:.2f}x" if peer else "-"


def _num(x: float) -> str:
    """A byte or token count: thousands separated, a half kept (``689.5``), a whole number without ``.0``."""
    return f"{x:,.1f}".removesuffix(".0")


def _render(header: Sequence[str], rows: Iterable[Sequence[str]], left: int) -> str:
    """Columns aligned to their widest cell: the first ``left`` left-aligned (labels), the rest right-aligned."""
    rows = [list(header), *map(list, rows)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    cells = ([c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))] for r in rows)
    return "\n".join("  ".join(r).rstrip() for r in cells)


def flow_table(run: Result, only: Sequence[str] | None = None) -> str:
    """One set under one chooser: per flow answered, median and p90 bytes and tokens, median calls (notebook 08)."""
    header = ("flow", "answered", "median B", "p90 B", "median tok", "p90 tok", "calls")
    rows = [(flow, f"{s['answered']}/{s['questions']}", _num(s["median_bytes"]), _num(s["p90_bytes"]),
             _num(s["median_tokens"]), _num(s["p90_tokens"]), _num(s["median_calls"]))
            for flow, s in run["flows"].items() if only is None or flow in only]
    return _render(header, rows, left=1)


#: What a Deep Agents flow run with its Python grep (``deepagents_python_grep`` in a result) is called in a table.
PYTHON_GREP = " (python grep)"


def _python_grep_flows(result: Result, chooser: str) -> dict[str, Result]:
    """The Deep Agents flows of the run with Deep Agents' Python grep (``bench/eval_compare.py`` adds it when the
    main run used ripgrep), named ``deepagents (python grep)``; none when the file has no such run."""
    run = result.get("deepagents_python_grep", {}).get(chooser, {})
    return {flow + PYTHON_GREP: s for flow, s in run.get("flows", {}).items() if flow.startswith(PEER)}


def _set_rows(name: str, result: Result, flows: Sequence[str] | None) -> list[list[str]]:
    """The rows of :func:`every_set_table` for one set: per chooser, per flow (Deep Agents with both grep engines
    when the file holds both; every ratio is to the main run's ``deepagents``)."""
    rows = []
    for chooser, run in runs_by_chooser(result).items():
        peer = run["flows"].get(PEER, {})
        for flow, s in {**run["flows"], **_python_grep_flows(result, chooser)}.items():
            if flows is not None and flow.removesuffix(PYTHON_GREP) not in flows:
                continue
            rows.append([name, chooser, flow, f"{s['answered']}/{s['questions']}",
                         *(_num(s[key]) for key, _ in RATIO_KEYS),
                         *(ratio(s[key], peer.get(key)) for key, _ in RATIO_KEYS)])
    return rows


def engines(results: Mapping[str, Result]) -> str:
    """One line per set: its documents and questions, and which Deep Agents and grep engine ran (when recorded)."""
    lines = []
    for name, r in results.items():
        engine = r.get("deepagents_grep_engine", "not recorded")
        both = " (and python grep, rows marked)" if r.get("deepagents_python_grep") else ""
        lines.append(f"{name}: {r['documents']:,} documents, {r['questions']} questions, "
                     f"deepagents {r.get('deepagents_version', 'not run')}, grep engine {engine}{both}{_spread(r)}")
    return "\n".join(lines)


def _spread(result: Result) -> str:
    """Where Deep Agents ran several times (ripgrep, issue 33 item 6): how many, and its answered counts' spread."""
    runs = result.get("deepagents_runs", {}).get("runs", 1)
    if runs < 2:
        return ""
    ranges = [f"{flow} {chooser} {s['spread']['answered'][0]}-{s['spread']['answered'][1]}"
              for chooser, run in runs_by_chooser(result).items() for flow, s in run["flows"].items() if "spread" in s]
    return f"; Deep Agents rows: median of {runs} runs (answered min-max: {', '.join(ranges)})"


def every_set_table(results: Mapping[str, Result], flows: Sequence[str] | None = None, footer: bool = True) -> str:
    """Every set (as :func:`load_sets` returns them), both choosers, each flow: answered, median bytes, median
    tokens, p90 bytes, and each of the three as a ratio to :data:`PEER` on the same set and chooser (notebook 08x).
    ``flows`` keeps only those flows (default: every flow a file holds). Under the table, one line per set
    (:func:`engines`) unless ``footer`` is false."""
    header = ("set", "chooser", "flow", "answered", *(h for _, h in RATIO_KEYS),
              *(f"{h} / DA" for _, h in RATIO_KEYS))
    rows = [row for name, result in results.items() for row in _set_rows(name, result, flows)]
    table = _render(header, rows, left=3)
    return table + "\n\n" + engines(results) if footer else table


def both_answered(run: Result, flow: str, peer: str = PEER) -> tuple[int, float, float] | None:
    """``(n, flow's median bytes, peer's median bytes)`` over the ``n`` questions both flows answered, from the
    run's ``per_question`` (a Deep Agents flow run several times keeps its first run's there); ``None`` when the
    run holds no per-question records of both or they answered no question in common. The summaries' medians
    are over every question, an unanswered one counting the bytes it spent (notebook 08x)."""
    per = run.get("per_question", {})
    if flow not in per or peer not in per:
        return None
    answered = {r["id"]: r["bytes"] for r in per[peer] if r["answered"]}
    mine = [(r["bytes"], answered[r["id"]]) for r in per[flow] if r["answered"] and r["id"] in answered]
    if not mine:
        return None
    return len(mine), statistics.median(b for b, _ in mine), statistics.median(b for _, b in mine)


def sets_at_a_glance(results: Mapping[str, Result], chooser: str = "overlap", flow: str = "compact") -> str:
    """One line per set under ``chooser``: documents, questions, ``flow``'s answered beside :data:`PEER`'s,
    ``flow``'s median bytes as a ratio to :data:`PEER`'s over every question, then how many questions both
    answered and the ratio of their median bytes over those alone (:func:`both_answered`; notebook 08x)."""
    header = ("set", "chooser", "documents", "questions", f"{flow} answered", "DA answered", "median B / DA",
              "both answered", "their B / DA")
    rows = []
    for name, result in results.items():
        run = runs_by_chooser(result)[chooser]
        mine, peer = run["flows"][flow], run["flows"].get(PEER, {})
        both = both_answered(run, flow)
        rows.append((name, chooser, f"{result['documents']:,}", str(result["questions"]), str(mine["answered"]),
                     str(peer.get("answered", "-")), ratio(mine["median_bytes"], peer.get("median_bytes")),
                     str(both[0]) if both else "-", ratio(both[1], both[2]) if both else "-"))
    return _render(header, rows, left=2)


def bytes_by_tool_table(results: Mapping[str, Result], flows: Sequence[str] = ("compact", PEER)) -> str:
    """Where the bytes go: per set, chooser, flow and tool, the median UTF-8 bytes and cl100k tokens of that tool's
    calls in a question (up to the answer) and in how many questions it ran (the eval's ``bytes_by_tool``)."""
    header = ("set", "chooser", "flow", "tool", "median B", "median tok", "questions")
    rows = [(name, chooser, flow, tool, _num(t["median_bytes"]), _num(t["median_tokens"]), str(t["questions"]))
            for name, result in results.items() for chooser, run in runs_by_chooser(result).items()
            for flow in flows if flow in run["flows"]
            for tool, t in run["flows"][flow].get("bytes_by_tool", {}).items()]
    return _render(header, rows, left=4)


def floor_table(results: Mapping[str, Result]) -> str:
    """Per set, chooser and flow: the flow's median bytes, the set's median physical floor and their ratio
    (``median_bytes_over_floor``); files written before the floor was measured are left out."""
    rows = [(name, chooser, flow, _num(s["median_bytes"]), _num(result["physical_floor"]["median_bytes"]),
             f"{s['median_bytes_over_floor']:.2f}x")
            for name, result in results.items() if "physical_floor" in result
            for chooser, run in runs_by_chooser(result).items()
            for flow, s in run["flows"].items() if "median_bytes_over_floor" in s]
    return _render(("set", "chooser", "flow", "median B", "floor B", "median B / floor"), rows, left=3)


def grid_figure(results: Mapping[str, Result], chooser: str = "overlap", flow: str = "compact") -> Figure:
    """Per set under ``chooser``, ``flow`` beside :data:`PEER`: the share of questions answered (left) and the median
    bytes over every question (right, log scale) (notebook 08x's picture of the grid; matplotlib is imported here,
    so the tables above never need it)."""
    import matplotlib.pyplot as plt

    names = list(results)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), layout="constrained")
    for k, who in enumerate((flow, PEER)):
        runs = [runs_by_chooser(results[name])[chooser]["flows"].get(who) for name in names]
        xs = [i + (k - 0.5) * 0.4 for i in range(len(names))]
        label = who if who != PEER else f"{PEER} (DA)"
        axes[0].bar(xs, [r["answered"] / r["questions"] if r else 0 for r in runs], width=0.4, label=label)
        axes[1].bar(xs, [r["median_bytes"] if r else 0 for r in runs], width=0.4, label=label)
    for ax in axes:
        ax.set_xticks(range(len(names)), names, rotation=25, ha="right")
    axes[0].set(ylim=(0, 1), ylabel="share of questions answered")
    axes[1].set(yscale="log", ylabel="median bytes (log)", title="UTF-8 bytes, median over all questions")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right upper")
    fig.suptitle(f"Every set, chooser {chooser}: {flow} beside Deep Agents")
    return fig


def unanswered_table(results: Mapping[str, Result], chooser: str = "overlap", flow: str = "compact") -> str:
    """Per set under ``chooser``: the questions ``flow`` and :data:`PEER` left unanswered, the median bytes they spent
    on them and the median calls (notebook 08x: why running out of calls is expensive; from the per-question
    records)."""
    def cells(records: Sequence[Mapping[str, Any]]) -> list[str]:
        missed = [r for r in records if not r["answered"]]
        if not missed:
            return ["0", "-", "-"]
        return [str(len(missed)), _num(statistics.median(r["bytes"] for r in missed)),
                _num(statistics.median(len(r["calls"]) for r in missed))]

    rows = []
    for name, result in results.items():
        per_question = runs_by_chooser(result)[chooser]["per_question"]
        rows.append([name, chooser, *cells(per_question.get(flow, [])), *cells(per_question.get(PEER, []))])
    header = ("set", "chooser", f"{flow} unanswered", "median B", "calls", "DA unanswered", "median B", "calls")
    return _render(header, rows, left=2)


def set_inputs(name: str, data: str | Path = "../bench/data") -> tuple[str, list[Any], list[dict[str, Any]]]:
    """``(corpus name, documents, checked questions)`` of the set ``name`` as ``bench/eval_compare.py`` runs it:
    ``pydoc``, ``zh`` (shipped), or a set whose corpus is archived in ``data`` (``<corpus>.tar.xz``, a ``*_near``
    set's corpus is its base set's), unpacked into a temporary folder and read as that folder corpus (notebook 08x,
    so a learner re-runs a flow on any set)."""
    import tarfile
    import tempfile

    from ..eval import data_path, load_corpus, load_qa

    if name in ("pydoc", "zh"):
        corpus_name, docs = load_corpus("pydoc" if name == "pydoc" else str(data_path("zh_corpus")))
        return corpus_name, docs, load_qa(data_path(f"{name}_qa.json"), docs)
    data = Path(data)
    corpus = name.removesuffix("_near")
    with tempfile.TemporaryDirectory(prefix="evidence-set-") as tmp:
        with tarfile.open(data / f"{corpus}.tar.xz", mode="r:xz") as tar:
            # the data filter refuses links and paths out of tmp (Python 3.11.4 and later; before, our own archive)
            if hasattr(tarfile, "data_filter"):
                tar.extractall(tmp, filter="data")
            else:
                tar.extractall(tmp)  # our own committed archive
        corpus_name, docs = load_corpus(str(Path(tmp) / corpus))
    return corpus_name, docs, load_qa(data / f"{name}_qa.json", docs)


def first_reply(docs: Sequence[Any], record: Mapping[str, Any], profile: str = "compact") -> str:
    """The reply to a per-question record's first call from fresh tools of ``profile`` over ``docs``, the eval's
    source: the text the flow saw, ``utf8_bytes`` as recorded (notebook 08x). Only the first: later replies depend on
    what the run showed before (a revision is shown once per snapshot)."""
    from .._toolkit import run_tool_call, tool_call
    from .._tools import evidence_tools
    from ..retrieval._folder import bm25_source

    call = record["calls"][0]
    tools = evidence_tools(bm25_source(docs), profile=profile)
    return str(run_tool_call(tools, tool_call(call["tool"], dict(call["args"]), "first")).content)
