#!/usr/bin/env python3
"""Search that scales (issue 33, item 3): the eval's compute at about 3,000 documents and BM25 index build plus
search/locate at 20,000+, each in a fresh worker process that reports its own seconds and peak RSS.

* ``kernel_en``: ``evaluate`` (the library's reading flows: dump_top5, article, compact, no_help; oracle chooser;
  Deep Agents left out, it is another program's time) on the first 40 questions of ``bench/data/kernel_en_qa.json``
  over ``build/kernel/kernel_en`` (2,735 documents). Target: at most 8 s of compute.
* ``debian_mix``: the held-out set's corpus (20,831 documents): load, build the BM25 source, then per question one
  ``search_evidence(question)`` and one ``locate_evidence(term, query=question)`` through the compact profile's tools
  (a first locate, as the compact flow makes it). No reading flow runs and no reply is looked at beyond its status
  (the set's questions are held out). Target: at most 60 s and 2 GiB.

Seconds are wall time after the corpus is loaded (``load_seconds`` apart) on a shared 2-core machine; ``cpu_seconds``
is the worker's process time (the figure to compare when the machine is busy). Peak RSS is the worker's own ``VmHWM``
(as ``bench/bench_store.py``'s ``own_peak_rss_bytes``), reset once the corpus is loaded so that ``work_peak_rss_mib``
is the peak of the measured work alone (the corpus still resident); ``ru_maxrss`` beside it. ``--label before`` with ``PYTHONPATH`` pointing at an older
checkout measures that code (the file keeps one entry per label)::

    .venv/bin/python bench/bench_search.py [--label after] [--sets kernel_en,debian_mix]

``--repeat N`` runs N workers per set and keeps the one of median CPU seconds (``cpu_seconds_runs`` lists all N): on a
busy machine one run's figure moves by a second or more. Results: ``bench/results/search.json``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "search.json"
QUESTIONS = {"kernel_en": 40, "debian_mix": 60}
CORPUS = {"kernel_en": ("build/kernel/kernel_en", "build_kernel_corpora.py", "build/kernel"),
          "debian_mix": ("build/debian_mix/debian_mix", "build_debian_mix_corpus.py", "build/debian_mix")}
EVAL_FLOWS = ("dump_top5", "article", "compact", "no_help")
TARGETS = {"kernel_en": {"seconds": 8.0}, "debian_mix": {"seconds": 60.0, "peak_rss_mib": 2048.0}}


def own_peak_rss_bytes() -> int:
    """This process's own peak resident set (``VmHWM``), not a high-water mark inherited from the launcher."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def _qa(name: str, docs) -> list[dict]:
    from evidence_lib.eval import load_qa

    return load_qa(ROOT / "bench" / "data" / f"{name}_qa.json", docs)[: QUESTIONS[name]]


def eval_worker(name: str, docs) -> dict:
    """The eval's compute on ``name`` (the reading flows, recall reporting included)."""
    from evidence_lib.eval import evaluate

    items = _qa(name, docs)
    start, cpu = time.perf_counter(), time.process_time()
    result = evaluate(name, docs, items, flows=EVAL_FLOWS)
    return {"documents": len(docs), "questions": len(items), "flows": list(result["flows"]),
            "seconds": round(time.perf_counter() - start, 2), "cpu_seconds": round(time.process_time() - cpu, 2)}


def search_worker(name: str, docs) -> dict:
    """Build the BM25 source over ``name`` and run one search and one ranked locate per question; outcomes unread."""
    from evidence_lib import evidence_tools
    from evidence_lib.retrieval._folder import bm25_source

    items = _qa(name, docs)
    start, cpu = time.perf_counter(), time.process_time()
    source = bm25_source(docs)
    tools = {t.name: t for t in evidence_tools(source, profile="compact")}
    source.retriever.invoke("index")  # the index is built by the first query at the latest
    built = time.perf_counter() - start
    statuses = []
    for n, item in enumerate(items):
        for name_, args in (("search_evidence", {"query": item["question"][:256]}),
                            ("locate_evidence", {"term": item["locate_term"], "query": item["question"][:256]})):
            msg = tools[name_].invoke({"name": name_, "args": args, "id": f"c{n}", "type": "tool_call"})
            statuses.append(msg.status)
    return {"documents": len(docs), "questions": len(items), "calls": len(statuses),
            "calls_ok": statuses.count("success"), "build_seconds": round(built, 2),
            "seconds": round(time.perf_counter() - start, 2), "cpu_seconds": round(time.process_time() - cpu, 2)}


def worker(name: str) -> dict:
    from evidence_lib.eval import load_corpus

    load = time.perf_counter()
    _, docs = load_corpus(str(ROOT / CORPUS[name][0]))
    load = time.perf_counter() - load
    load_peak = own_peak_rss_bytes()
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")  # reset VmHWM (Linux 4.0+): the next peak is the work's, the loaded corpus resident
    out = (eval_worker if name == "kernel_en" else search_worker)(name, docs)
    out["load_seconds"] = round(load, 2)
    out["load_peak_rss_mib"] = round(load_peak / 2**20, 1)
    out["work_peak_rss_mib"] = round(own_peak_rss_bytes() / 2**20, 1)
    out["peak_rss_mib"] = max(out["load_peak_rss_mib"], out["work_peak_rss_mib"])
    out["ru_maxrss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--label", default="after")
    parser.add_argument("--sets", default="kernel_en,debian_mix")
    parser.add_argument("--repeat", type=int, default=1, help="workers per set; the run of median CPU seconds is kept")
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return
    result = json.loads(OUT.read_text(encoding="utf-8")) if OUT.is_file() else {}
    result["about"] = {"script": "bench/bench_search.py", "targets": TARGETS,
                       "kernel_en": f"evaluate, flows {', '.join(EVAL_FLOWS)}, first 40 questions",
                       "debian_mix": "BM25 build + one search and one ranked locate per question (60); "
                                     "no reading flow, no outcome read",
                       "peak_rss": "VmHWM of each worker process: peak_rss_mib its whole life, load_peak_rss_mib "
                                   "while loading the corpus, work_peak_rss_mib after (VmHWM reset through "
                                   "/proc/self/clear_refs once the corpus is loaded)",
                       "seconds": "wall seconds on a shared 2-core machine; compare cpu_seconds when it is busy"}
    for name in args.sets.split(","):
        folder, script, dest = CORPUS[name]
        if not (ROOT / folder).is_dir():
            subprocess.run([sys.executable, str(ROOT / "scripts" / script), "--unpack", str(ROOT / dest)], check=True)
        runs = []
        for _ in range(args.repeat):
            proc = subprocess.run([sys.executable, __file__, "--worker", name], capture_output=True, text=True, cwd=ROOT)
            if proc.returncode:
                sys.exit(f"{name} worker failed:\n{proc.stderr[-3000:]}")
            runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(name, args.label, runs[-1], flush=True)
        got = sorted(runs, key=lambda r: r["cpu_seconds"])[(len(runs) - 1) // 2]
        if len(runs) > 1:
            got["cpu_seconds_runs"] = [r["cpu_seconds"] for r in runs]
        result.setdefault(args.label, {})[name] = got
    OUT.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
