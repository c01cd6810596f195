"""``python -m evidence_lib eval``: the flows side by side on a corpus and a QA file. Taught in notebook 08.

``--corpus pydoc`` is Python's documentation topics; ``--corpus DIR`` a folder of UTF-8 ``.txt`` files.
``--chooser oracle|overlap`` (default ``oracle``) is how every flow picks the document it reads among those it
was shown (see :mod:`.flows`); the result says which (``"chooser"``).
The QA file is a list of items (``id, question, doc_id, answer_span, start, end, locate_term``; other
keys ignored) or ``{"corpus_sha256": ..., "items": [...]}``; every span is checked against the corpus
first, and a mismatch is an error naming the item.
"""

from __future__ import annotations

import json
import os
import stat
import statistics
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._documents import Document
from .._index import EvidenceIndex
from .._lines import text_line, token
from ..profiles._registry import profile_of
from ..retrieval._bm25 import BM25Retriever, recall_at_k
from ..retrieval._corpora import folder_corpus, pydoc_corpus
from ..retrieval._folder import RETRIEVER_K, bm25_source  # the eval's source: BM25 (k = RETRIEVER_K) over the docs
from . import _deepagents_flow as deepagents_flow
from ._answered import physical_floor
from ._flows import CHOOSERS, DEFAULT_CHOOSER, MAX_CALLS, PROVES, dump_flow, help_text, no_help_flow, protocol_flow
from ._qa_check import check_items, corpus_sha256

__all__ = ["FLOOR_WHAT", "FLOWS", "MAX_QA_BYTES", "TARGET_FLOW", "QAError", "bytes_by_tool", "evaluate", "load_corpus",
           "load_qa", "over_floor", "summarize", "targets", "tool_label"]

FLOWS = ("dump_top5", "article", "compact", "no_help", "deepagents", "deepagents_default")
#: The flow the issue's targets hold to account against Deep Agents (:func:`targets`).
TARGET_FLOW = "compact"


#: Largest QA file read (bytes); a bigger one is refused by its size before it is read.
MAX_QA_BYTES = 64 * 1024 * 1024


class QAError(ValueError):
    """The QA file does not fit the corpus, or cannot be read: one line naming the file and the first bad item.

    ``problems`` holds every message (one per bad item) for callers that want the whole list.
    """

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems = list(problems) or [message]


def load_corpus(corpus: str, revision: str | None = None) -> tuple[str, list[Document]]:
    """``("pydoc", docs)`` or ``(folder name, docs)``; a folder whose files cannot all be documents of the
    index is a ``ValueError`` naming the file (see :func:`~evidence_lib.retrieval.folder_corpus`)."""
    if corpus == "pydoc":
        return "pydoc", pydoc_corpus()
    return Path(corpus).name, folder_corpus(corpus, revision)


def _read_qa(path: Path, name: str) -> Any:
    try:  # O_NONBLOCK: a FIFO is refused below instead of blocking the open
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise QAError(f"{name}: cannot read a JSON QA file (not a regular file)")
            if st.st_size > MAX_QA_BYTES:
                raise QAError(f"{name}: {st.st_size:,} bytes, over the {MAX_QA_BYTES:,}-byte limit of a QA file")
            raw = f.read(MAX_QA_BYTES + 1)
    except OSError as e:
        raise QAError(f"{name}: cannot read a JSON QA file ({e.strerror or type(e).__name__})") from None
    if len(raw) > MAX_QA_BYTES:
        raise QAError(f"{name}: over the {MAX_QA_BYTES:,}-byte limit of a QA file")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise QAError(f"{name}: cannot read a JSON QA file (not UTF-8 at byte {e.start})") from None
    except RecursionError:
        raise QAError(f"{name}: cannot read a JSON QA file (nested deeper than the JSON reader allows)") from None
    except ValueError as e:
        raise QAError(f"{name}: cannot read a JSON QA file ({type(e).__name__}: {e})") from None


def load_qa(path: str | Path, docs: Sequence[Document]) -> list[dict[str, Any]]:
    """The QA items, checked against ``docs`` (spans, ids, terms; the corpus hash when the file carries one).

    Every refusal is a one-line :class:`QAError` naming the file by its name only (never its folder): an
    unreadable, oversized, non-UTF-8 or too deeply nested file, and items that do not fit the corpus (the first
    bad item and how many more; strings holding a lone surrogate included, so writing the results cannot fail).
    """
    name = token(Path(path).name)
    data = _read_qa(Path(path), name)
    texts = {d.doc_id: d.text for d in docs}
    if isinstance(data, Mapping):
        items = data.get("items")
        expected = data.get("corpus_sha256")
        if expected is not None and expected != corpus_sha256(texts):
            raise QAError(f"{name}: corpus_sha256 {text_line(str(expected)[:16])}… does not match this corpus "
                          f"({corpus_sha256(texts)[:16]}…): the QA set was written for other text")
    else:
        items = data
    if not isinstance(items, list) or not items:
        raise QAError(f"{name}: expected a non-empty list of items (or an object with 'items')")
    problems = check_items(texts, items)
    if problems:
        n = len(problems) - 1
        more = f" (and {n:,} more bad item{'s' if n > 1 else ''})" if n else ""
        raise QAError(f"{name}: {text_line(problems[0])}{more}", problems)
    return items


def _quantile(values: list[int], q: float) -> float:
    if len(values) == 1:
        return float(values[0])
    return round(statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1], 1)


def tool_label(call: Mapping[str, Any]) -> str:
    """The name a call is counted under in ``bytes_by_tool``: its tool's name, and a locate restricted to one
    document (``doc_id`` in its args) apart from the whole-snapshot one, as ``locate_evidence(doc_id)``."""
    if call["tool"] == "locate_evidence" and call.get("args", {}).get("doc_id") is not None:
        return "locate_evidence(doc_id)"
    return call["tool"]


def bytes_by_tool(runs: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Where the counted bytes go, per :func:`tool_label`: ``{label: {"median_bytes", "median_tokens",
    "questions"}}``; per question the bytes (tokens) of that tool's calls up to the answer are summed, the
    medians are over the questions where the tool was called at all (``questions`` of them), in first-call order."""
    per: dict[str, list[tuple[int, int]]] = {}
    for r in runs:
        mine: dict[str, list[int]] = {}
        for c in r.get("calls", [])[: r.get("calls_until_answer", 0)]:
            total = mine.setdefault(tool_label(c), [0, 0])
            total[0] += c["utf8_bytes"]
            total[1] += c["cl100k_tokens"]
        for label, (b, t) in mine.items():
            per.setdefault(label, []).append((b, t))
    return {label: {"median_bytes": statistics.median([b for b, _ in v]),
                    "median_tokens": statistics.median([t for _, t in v]), "questions": len(v)}
            for label, v in per.items()}


def summarize(runs: Sequence[Mapping[str, Any]], flow: str, chooser: str = DEFAULT_CHOOSER) -> dict[str, Any]:
    """``answered, questions, median/p90 bytes and tokens, median_calls, help, proves, chooser, bytes_by_tool``
    (p90 by linear interpolation)."""
    b = [r["bytes"] for r in runs]
    t = [r["tokens"] for r in runs]
    c = [r["calls_until_answer"] for r in runs]
    return {"answered": sum(r["answered"] for r in runs), "questions": len(runs),
            "median_bytes": statistics.median(b), "p90_bytes": _quantile(b, 0.9),
            "median_tokens": statistics.median(t), "p90_tokens": _quantile(t, 0.9),
            "median_calls": statistics.median(c), "help": help_text(flow, chooser), "proves": PROVES[flow],
            "chooser": chooser, "bytes_by_tool": bytes_by_tool(runs)}


def evaluate(name: str, docs: Sequence[Document], items: Sequence[Mapping[str, Any]],
             flows: Sequence[str] = FLOWS, progress: Callable[[str, int, int], None] | None = None,
             chooser: str = DEFAULT_CHOOSER, max_calls: int = MAX_CALLS) -> dict[str, Any]:
    """Run every flow on every item; the result ``OUT.json`` holds per flow a summary and per question the calls.

    ``max_calls`` is every reading flow's call limit per question (the dump makes one call); notebook 08x's try-it
    lowers it to see which flows still answer.

    ``chooser`` (``oracle`` or ``overlap``, see :mod:`.flows`) picks the document each flow reads among the
    candidates it was shown; the result records it (``"chooser"``, and per flow its ``help``). Per flow that
    picks, ``picked_answer_first`` counts the questions whose first pick was the answer's document, and every
    per-question run lists its ``picked`` doc_ids in the order the chooser would read them. A Deep Agents flow whose
    grep is ripgrep runs three times: its summary is the median per figure with ``runs`` and ``spread`` (min, max),
    and ``deepagents_runs`` says so (:func:`~evidence_lib.eval._deepagents_flow.median_summary`).
    """
    if chooser not in CHOOSERS:
        raise ValueError(f"unknown chooser {chooser!r}; choose from {', '.join(CHOOSERS)}")
    if max_calls < 1:
        raise ValueError(f"max_calls must be at least 1 (a reading flow needs one call to answer), got {max_calls}")
    source = bm25_source(docs)  # one source for every question: its whole-corpus index is built once
    retriever = source.retriever
    assert isinstance(retriever, BM25Retriever)  # bm25_source's: dump_flow widens its k
    corpus = EvidenceIndex.in_memory(docs)
    by_id = {d.doc_id: d for d in docs}
    per: dict[str, list[dict[str, Any]]] = {}
    repeated: dict[str, list[list[dict[str, Any]]]] = {}  # a Deep Agents flow over ripgrep: every run's results
    skipped: dict[str, str] = {}
    for flow in flows:
        if flow in deepagents_flow.DEEPAGENTS_FLOWS:
            if not deepagents_flow.available():
                skipped[flow] = "deepagents is not installed (pip install -e '.[deepagents]')"
                continue
            repeated[flow] = []
            for _ in range(deepagents_flow.repeats()):
                with tempfile.TemporaryDirectory(prefix="evidence-deepagents-") as tmp:
                    repeated[flow].append(deepagents_flow.run_deepagents(
                        {d.doc_id: d.text for d in docs}, items, Path(tmp), max_calls=max_calls, flow=flow,
                        chooser=chooser))
            per[flow] = repeated[flow][0]
            if progress:
                progress(flow, len(items), len(items))
            continue
        runs = []
        for item in items:
            if flow == "dump_top5":
                run = dump_flow(retriever, by_id, item)
            elif flow == "no_help":
                run = no_help_flow(source, corpus, item, max_calls=max_calls, chooser=chooser)
            else:  # a protocol flow: the tools in the profile of that name
                run = protocol_flow(source, corpus, item, profile_of(flow), max_calls=max_calls, chooser=chooser)
            runs.append(run.as_dict())
            if flow == "dump_top5":
                del runs[-1]["picked"]  # nothing is picked: the five texts are dumped
            if progress:
                progress(flow, len(runs), len(items))
        per[flow] = runs
    texts = {d.doc_id: d.text for d in docs}
    floor = statistics.median(physical_floor(i, by_id[i["doc_id"]].revision) for i in items)
    summaries = {f: deepagents_flow.median_summary([_summary(r, f, chooser, items, floor) for r in repeated[f]])
                 if f in repeated else _summary(runs, f, chooser, items, floor) for f, runs in per.items()}
    out: dict[str, Any] = {
        "corpus": name, "corpus_sha256": corpus_sha256(texts), "documents": len(docs), "questions": len(items),
        "revision": sorted({d.revision for d in docs})[:3],
        # recall asks the retriever again: it answers from the rankings the flows' searches already computed
        "retriever": {"name": "BM25Retriever", "k": RETRIEVER_K,
                      "recall_at_k": {str(k): v for k, v in recall_at_k(retriever, items).items()}},
        "chooser": chooser,
        "physical_floor": {"median_bytes": floor, "what": FLOOR_WHAT},
        "flows": summaries,
        "skipped": skipped,
        "per_question": per,
    }
    if repeated:
        out["deepagents_version"] = deepagents_flow.deepagents_version()
        engine, repeats = deepagents_flow.grep_engine(), deepagents_flow.repeats()
        out["deepagents_runs"] = {
            "grep_engine": engine, "runs": repeats,
            "reported": (f"each Deep Agents flow ran {repeats} times (ripgrep's capped matches vary from run to run): its "
                         "figures are the median per metric, 'spread' the [min, max], per_question the first run's")
            if repeats > 1 else "each Deep Agents flow ran once (its Python grep gives the same matches every run)"}
    return out


#: What ``physical_floor`` in a result is (:func:`~evidence_lib.eval._answered.physical_floor`).
FLOOR_WHAT = ("per question, the UTF-8 bytes of its answer span with its citation, as the answer format writes a "
              "Sources line ([1] doc_id@revision [start, end) \"span\"); median_bytes is the median over the questions, "
              "and each flow's median_bytes_over_floor its median bytes divided by it")


def over_floor(summary: Mapping[str, Any], floor: float) -> float:
    """A flow's median bytes as a multiple of the set's median physical floor (two decimals)."""
    return round(summary["median_bytes"] / floor, 2)


def _summary(runs: Sequence[Mapping[str, Any]], flow: str, chooser: str,
             items: Sequence[Mapping[str, Any]], floor: float) -> dict[str, Any]:
    """:func:`summarize` with the median bytes over the ``floor``, and for a flow that picks, how often its first pick
    was the answer's document."""
    summary = summarize(runs, flow, chooser)
    summary["median_bytes_over_floor"] = over_floor(summary, floor)
    if flow != "dump_top5":
        summary["picked_answer_first"] = sum(
            bool(r["picked"]) and r["picked"][0] == i["doc_id"] for r, i in zip(runs, items))
    return summary


def targets(result: Mapping[str, Any]) -> dict[str, Any]:
    """The issue's targets for compact vs the efficient Deep Agents flow, from one run (only when both ran).

    Keys of the first version kept (``median_tokens_at_most_deepagents``); issue 17's token target
    (``median_tokens_at_most_0.8x``) added.
    """
    f = result["flows"]
    if TARGET_FLOW not in f or "deepagents" not in f:
        return {}
    c, d = f[TARGET_FLOW], f["deepagents"]
    return {
        "answered_at_least_as_many": c["answered"] >= d["answered"],
        "median_bytes_ratio": round(c["median_bytes"] / d["median_bytes"], 3),
        "median_bytes_at_most_0.7x": c["median_bytes"] <= 0.7 * d["median_bytes"],
        "median_tokens_at_most_deepagents": c["median_tokens"] <= d["median_tokens"],
        "median_tokens_ratio": round(c["median_tokens"] / d["median_tokens"], 3),
        "median_tokens_at_most_0.8x": c["median_tokens"] <= 0.8 * d["median_tokens"],
        "p90_bytes_ratio": round(c["p90_bytes"] / d["p90_bytes"], 3),
        "p90_bytes_at_most_0.5x": c["p90_bytes"] <= 0.5 * d["p90_bytes"],
    }
