#!/usr/bin/env python3
"""Scale benchmark of the production store (notebook 11): locate and read latency, peak memory, build cost.

Three ways to serve the same calls, on the same synthetic corpus (CJK and ASCII text, 100 KB per document,
a needle term planted in a few documents):

* ``scan``: the article's index (files on disk); locate reads and re-hashes every document;
* ``sqlite``: :class:`SQLiteStore` (FTS5 trigram index over 4,096-character chunks, and the CJK gram postings);
* ``postgres``: :class:`PostgresStore` (GIN index over snapshot and pg_trgm trigrams, and a GIN index over snapshot
  and CJK grams), when ``EVIDENCE_PG_DSN`` is set.

Both stores load inside ``store.bulk_load()``: PostgreSQL then builds its index once, after the rows; up to
1,000 documents it is also built without it (the index maintained per chunk, as a live shared store pays).

Locate is ``find(term, every doc_id of the snapshot, first_only=True)``: the hook ``locate_evidence`` calls,
over the whole snapshot (what the tool searches too), for the needle and for short CJK terms (issue 17 item 5),
each also timed on the scan in the same run: the 2-character ``上限`` and the 1-character ``上`` (planted with the
needle only, as a rare term is), and ``漎``, the corpus's most frequent CJK character (in most chunks: a locate
that returns a hit in nearly every document costs the reads of those hits, index or not). Each term is located
once untimed before it is timed, on every method alike: the timings are of a warm page cache (a cold one times
the disk: on this machine's 45 MB/s disk a 2-character locate on the 10,000-document SQLite file took 81 ms
cold, 9 ms warm, measured by hand). Each measurement runs in a
fresh worker process, which reports its latencies and its own peak RSS (``VmHWM`` of the worker's address space,
not ``ru_maxrss``, which Linux carries over from the parent). Results: bench/results/store.json
and store.png. ``--quick`` is the smoke run (< 30 s) a test exercises. Tests assert behaviour; time lives here.

    .venv/bin/python bench/bench_store.py [--quick] [--max-docs 10000] [--doc-kb 100]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from importlib.metadata import version
from pathlib import Path

from evidence_lib import Document, EvidenceIndex, IndexEntry
from evidence_lib._tools import read_page
from evidence_lib.course.article import article_corpus
from evidence_lib.store import SQLiteStore, system_clock

OUT = Path(__file__).resolve().parent / "results"
NEEDLE = "单批上限为200条"
SHORT = "上限"  # 2 CJK characters, only in the needle
SHORT1 = "上"  # 1 CJK character, only in the needle
COMMON1 = "漎"  # the most frequent CJK character of corpus()'s pool: in about three chunks of four
#: What the worker locates: (result key, term, which repetition count of the spec).
LOCATES = (("locate", NEEDLE, "locate_reps"), ("locate_short", SHORT, "short_reps"),
           ("locate_1char", SHORT1, "short_reps"), ("locate_1char_common", COMMON1, "short_reps"))
KEY = ("bench", "s", "q")
#: PostgreSQL is also built without bulk_load (index maintained per chunk) up to this size, for comparison.
INCREMENTAL_MAX_DOCS = 1000


def progress(iterable, total: int, desc: str):
    try:
        from tqdm import tqdm

        return tqdm(iterable, total=total, desc=desc, unit="doc", leave=False, mininterval=1.0, file=sys.stderr)
    except ImportError:  # the bench extra is optional: a plain line instead
        print(f"{desc}: {total:,} documents", file=sys.stderr)
        return iterable


def stats(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    return {"p50_ms": round(statistics.median(s) * 1e3, 4), "p95_ms": round(s[max(0, int(0.95 * len(s)) - 1)] * 1e3, 4),
            "n": len(s)}


# -- the corpus ---------------------------------------------------------------------------------------------
def pool_text(rng: random.Random, chars: int = 1 << 20) -> str:
    """A 1 Mi-character pool of CJK characters (3,000 of them) and ASCII words: varied trigrams."""
    cjk = [chr(c) for c in rng.sample(range(0x4E00, 0x9FA5), 3000)]
    words = ["batch", "limit", "timeout", "log", "record", "value", "retry", "queue", "node", "config"]
    parts, n = [], 0
    while n < chars:
        piece = "".join(rng.choices(cjk, k=rng.randint(4, 24))) if rng.random() < 0.8 else \
            f" {rng.choice(words)}-{rng.randint(0, 99999)} "
        parts.append(piece)
        n += len(piece)
    return "".join(parts)[:chars]


def corpus(n: int, doc_bytes: int, seed: int = 11):
    """``n`` documents of about ``doc_bytes`` UTF-8 bytes, sliced from the pool; every 500th holds the needle."""
    rng = random.Random(seed)
    pool = pool_text(rng)
    chars = max(1, doc_bytes // 3)  # the pool is mostly 3-byte CJK
    for i in range(n):
        start = rng.randrange(0, len(pool) - chars)
        text = f"doc-{i:06} " + pool[start: start + chars]
        if i % 500 == 7:
            at = rng.randrange(0, len(text))
            text = text[:at] + NEEDLE + text[at:]
        yield Document(f"doc-{i:06}", f"document {i}", "r1", text)


# -- one measurement, in a fresh process ------------------------------------------------------------------------
def open_method(method: str, where: str):
    if method == "scan":
        meta = json.loads(Path(where, "manifest.json").read_text(encoding="utf-8"))
        root = Path(where, "files")
        return EvidenceIndex(root, [IndexEntry(m["doc_id"], m["title"], m["revision"], m["chars"], m["sha256"],
                                               m["preview"], path=root / f"{m['doc_id']}.txt", bytes=m["bytes"])
                                    for m in meta])
    if method == "sqlite":
        return SQLiteStore(where, system_clock).snapshot(*KEY)
    from evidence_lib.store._postgres import PostgresStore

    return PostgresStore(where, system_clock).snapshot(*KEY)


def own_peak_rss_bytes() -> int:
    """This process's own peak resident set: ``VmHWM`` in ``/proc/self/status`` (Linux).

    Not ``getrusage(RUSAGE_SELF).ru_maxrss``: Linux carries that high-water mark across ``fork`` and ``execve``,
    so a worker started by a 400 MiB parent reports at least the parent's peak, whatever the worker does.
    ``VmHWM`` belongs to the address space ``execve`` created, so it counts the worker's interpreter, imports
    and workload only. Elsewhere the ``ru_maxrss`` fallback may include the launcher's peak.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB elsewhere


def worker(spec: dict) -> dict:
    if spec.get("doc_ids"):
        return read_worker(spec)
    index = open_method(spec["method"], spec["where"])
    ids = [e.doc_id for e in index]
    rng = random.Random(5)
    out: dict = {}
    for name, term, key in LOCATES:
        reps = spec[key]
        if reps == 0:
            continue
        samples, hits = [], 0
        list(index.find(term, ids, first_only=True))  # warm-up: the connection, and the pages this locate reads
        for _ in range(reps):
            t0 = time.perf_counter()
            hits = len(list(index.find(term, ids, first_only=True)))
            samples.append(time.perf_counter() - t0)
        out[name] = {**stats(samples), "hits": hits}
    samples = []
    for _ in range(spec["read_reps"]):
        doc = rng.choice(ids)
        entry = index.entry(doc)
        offset = rng.randrange(0, max(1, entry.chars - 800))
        t0 = time.perf_counter()
        read_page(index, doc, offset, 800)
        samples.append(time.perf_counter() - t0)
    out["read"] = stats(samples)
    out["peak_rss_bytes"] = own_peak_rss_bytes()
    return out


def read_worker(spec: dict) -> dict:
    """Read latency against document size: every document in each round, in a shuffled order.

    Interleaving puts every size under the same machine noise (a shared machine drifts by more than the effect
    measured); the warm-up rounds open the connection and the statement cache, not the documents' pages: each
    read starts at a random offset, so a large document keeps missing the cache as it would in service.
    """
    index = open_method(spec["method"], spec["where"])
    entries = [index.entry(d) for d in spec["doc_ids"]]
    rng = random.Random(1)
    samples: dict[str, list[float]] = {e.doc_id: [] for e in entries}
    for round_no in range(spec["warmup"] + spec["read_reps"]):
        for e in rng.sample(entries, len(entries)):
            offset = rng.randrange(0, max(1, e.chars - 800))
            t0 = time.perf_counter()
            read_page(index, e.doc_id, offset, 800)
            if round_no >= spec["warmup"]:
                samples[e.doc_id].append(time.perf_counter() - t0)
    return {d: stats(s) for d, s in samples.items()}


def measure(spec: dict) -> dict:
    """Run one measurement in a fresh interpreter (``python bench_store.py --worker SPEC``, a new address space
    by ``execve``), which reports its latencies and its own peak RSS (:func:`own_peak_rss_bytes`)."""
    proc = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"worker failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


# -- building each index ---------------------------------------------------------------------------------------
def build_scan(docs, n: int, where: Path) -> dict:
    t0 = time.perf_counter()
    index = EvidenceIndex.build(progress(docs, n, f"scan files ({n:,} docs)"), where / "files")
    meta = [{"doc_id": e.doc_id, "title": e.title, "revision": e.revision, "chars": e.chars, "sha256": e.sha256,
             "preview": e.preview, "bytes": e.bytes} for e in index]
    (where / "manifest.json").write_text(json.dumps(meta), encoding="utf-8")
    size = sum(p.stat().st_size for p in (where / "files").iterdir())
    return {"build_s": round(time.perf_counter() - t0, 2), "store_bytes": size, "index_bytes": 0,
            "corpus_bytes": sum(m["bytes"] for m in meta)}


def build_store(store, docs, n: int, label: str, *, bulk: bool = True) -> dict:
    """Load ``docs`` as one snapshot; ``bulk`` inside ``store.bulk_load()`` (PostgreSQL builds its index last)."""
    bar = progress(docs, n, f"{label} ({n:,} docs{'' if bulk else ', index maintained row by row'})")
    t0 = time.perf_counter()
    if bulk:
        with store.bulk_load():
            store.put_snapshot(*KEY, bar, batch_bytes=16 << 20)
            if store.backend == "postgres":
                print(f"{label}: building the trigram index over {n:,} documents", file=sys.stderr)
    else:
        store.put_snapshot(*KEY, bar, batch_bytes=16 << 20)
    return {"build_s": round(time.perf_counter() - t0, 2), **store.index_size()}


def pg_incremental_build(dsn: str, n: int, doc_kb: int) -> float:
    """PostgreSQL's build time without ``bulk_load``: what a live shared store pays for a new snapshot."""
    from evidence_lib.store._postgres import PostgresStore, scratch_schema

    with scratch_schema(dsn, "bench_inc") as where, PostgresStore(where, system_clock) as s:
        docs = article_corpus() if n == 12 else corpus(n, doc_kb * 1024)
        return build_store(s, docs, n, "postgres", bulk=False)["build_s"]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: small sizes, few repetitions (< 30 s)")
    ap.add_argument("--max-docs", type=int, default=10_000, help="largest corpus, in documents (default 10,000)")
    ap.add_argument("--doc-kb", type=int, default=100, help="document size in KB (default 100)")
    ap.add_argument("--out", type=Path, default=OUT / "store.json")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    dsn = os.environ.get("EVIDENCE_PG_DSN", "")
    if args.quick:
        sizes, doc_kb, doc_sizes = [12, 60], 10, [4 << 10, 256 << 10]
        reps = {"scan": (3, 2, 30), "sqlite": (10, 3, 60), "postgres": (10, 3, 60)}
    else:
        sizes = [n for n in (12, 100, 1000, 10_000) if n <= args.max_docs] or [args.max_docs]
        if args.max_docs not in sizes:
            sizes.append(args.max_docs)
        doc_kb, doc_sizes = args.doc_kb, [4 << 10, 64 << 10, 1 << 20, 10 << 20]
        reps = {"scan": (5, 3, 100), "sqlite": (50, 15, 300), "postgres": (50, 15, 300)}
    methods = ["scan", "sqlite"] + (["postgres"] if dsn else [])
    tmp = Path(tempfile.mkdtemp(prefix="bench-store-"))
    schemas = ExitStack()  # PostgreSQL: one scratch schema per store, dropped when it is measured
    results: dict = {
        "environment": {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
                        "sqlite": __import__("sqlite3").sqlite_version, "evidence_lib": version("evidence-lib"),
                        "psycopg": version("psycopg") if dsn else None,
                        "load_average_start": [round(x, 2) for x in os.getloadavg()]},
        "parameters": {"quick": args.quick, "doc_kb": doc_kb, "sizes_docs": sizes, "needle": NEEDLE,
                       "short_term": SHORT, "short_term_1char": SHORT1, "short_term_1char_common": COMMON1,
                       "methods": methods,
                       "locate": "find(term, every doc_id of the snapshot, first_only=True), in a fresh worker "
                                 "process, after one untimed locate of the same term (every method: the page "
                                 "cache warm, so the disk's speed is not what is timed); locate_short (2 CJK "
                                 "characters), locate_1char (1, rare) and locate_1char_common (1, in most "
                                 "chunks) on every method, the scan included",
                       "read": "read_page(doc, random offset, 800 chars)",
                       "peak_rss": "VmHWM of each worker process: its own peak, not the launcher's",
                       "build": "put_snapshot inside store.bulk_load() (PostgreSQL: rows first, trigram and gram "
                                "indexes built once; SQLite writes the gram postings with each batch); "
                                "build_incremental_s: PostgreSQL without it, up to "
                                f"{INCREMENTAL_MAX_DOCS:,} documents; gram_index_bytes: the CJK gram postings alone",
                       "read_by_doc_size": "every size in each round, shuffled, after 20 warm-up rounds, in one "
                                           "fresh worker process per method"},
        "corpus": [], "doc_size": [],
    }
    t_start = time.perf_counter()
    try:
        for n in sizes:
            row: dict = {"docs": n}
            for method in methods:
                where = tmp / f"{method}-{n}"
                where.mkdir()
                docs = article_corpus() if n == 12 else corpus(n, doc_kb * 1024)
                if method == "scan":
                    build = build_scan(docs, n, where)
                    spec_where = str(where)
                elif method == "sqlite":
                    spec_where = str(where / "store.db")
                    with SQLiteStore(spec_where, system_clock) as s:
                        build = build_store(s, docs, n, "sqlite")
                else:
                    from evidence_lib.store._postgres import PostgresStore, scratch_schema

                    spec_where = schemas.enter_context(scratch_schema(dsn, "bench"))
                    with PostgresStore(spec_where, system_clock) as s:
                        build = build_store(s, docs, n, "postgres")
                    if n <= INCREMENTAL_MAX_DOCS:
                        build["build_incremental_s"] = pg_incremental_build(dsn, n, doc_kb)
                lr, sr, rr = reps[method]
                m = measure({"method": method, "where": spec_where, "locate_reps": lr, "short_reps": sr,
                             "read_reps": rr})
                row[method] = {**build, **m}
                short = "  ".join(f"{k.removeprefix('locate_')} {m[k]['p50_ms']:.3f}" for k, _, _ in LOCATES[1:])
                print(f"{n:>6} docs  {method:<8} build {build['build_s']:>8.2f} s  locate p50 "
                      f"{m['locate']['p50_ms']:>10.3f} ms ({short})  read p50 {m['read']['p50_ms']:.3f} ms  "
                      f"rss {m['peak_rss_bytes'] / 2**20:.0f} MiB", file=sys.stderr)
                if method == "scan":
                    row["corpus_bytes"] = build["corpus_bytes"]
                    shutil.rmtree(where / "files")  # the next size needs the disk more
                elif method == "postgres":
                    schemas.close()
                else:
                    shutil.rmtree(where)
            results["corpus"].append(row)
        rng = random.Random(3)
        pool = pool_text(rng, 4 << 20)
        big = [Document(f"size-{b}", f"{b} bytes", "r1", (pool * (1 + b // len(pool.encode())))[: b // 3])
               for b in doc_sizes]
        for method in methods:
            where = tmp / f"{method}-sizes"
            where.mkdir()
            spec_where = str(where)
            if method == "scan":
                build_scan(big, len(big), where)
            elif method == "sqlite":
                spec_where = str(where / "store.db")
                with SQLiteStore(spec_where, system_clock) as s:
                    build_store(s, big, len(big), "sqlite sizes")
            else:
                from evidence_lib.store._postgres import PostgresStore, scratch_schema

                spec_where = schemas.enter_context(scratch_schema(dsn, "bench_sizes"))
                with PostgresStore(spec_where, system_clock) as s:
                    build_store(s, big, len(big), "postgres sizes")
            reads = measure({"method": method, "where": spec_where, "doc_ids": [d.doc_id for d in big],
                             "warmup": 20, "read_reps": reps[method][2]})
            for doc in big:
                results["doc_size"].append({"method": method, "doc_bytes": len(doc.text.encode()),
                                            "read": reads[doc.doc_id]})
            if method == "postgres":
                schemas.close()
    finally:
        schemas.close()
        shutil.rmtree(tmp, ignore_errors=True)
    results["elapsed_s"] = round(time.perf_counter() - t_start, 1)
    results["environment"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    results["targets"] = targets(results, methods)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    plot(results, args.out.with_suffix(".png"))
    json.dump(results["targets"], sys.stdout, ensure_ascii=False, indent=2)
    print(f"\nwrote {args.out} and {args.out.with_suffix('.png').name}")
    return 0


def targets(results: dict, methods: list[str]) -> dict:
    """The issue's targets, computed on what this run measured (the largest size it reached)."""
    last = results["corpus"][-1]
    out: dict = {"largest_corpus": {"docs": last["docs"], "bytes": last.get("corpus_bytes")}}
    for m in methods[1:]:
        ratio, short2, short1 = (last["scan"][k]["p50_ms"] / max(last[m][k]["p50_ms"], 1e-6)
                                 for k in ("locate", "locate_short", "locate_1char"))
        reads = [r["read"]["p50_ms"] for r in results["doc_size"] if r["method"] == m]
        read_ratio = max(reads) / min(reads)
        rss = last[m]["peak_rss_bytes"]
        out[m] = {
            "locate_speedup_vs_scan_p50": {"target": ">= 100", "measured": round(ratio, 1), "met": ratio >= 100},
            "locate_2char_cjk_speedup_vs_scan_p50": {"target": ">= 100", "measured": round(short2, 1),
                                                     "met": short2 >= 100},
            "locate_1char_cjk_speedup_vs_scan_p50": {"target": ">= 100", "measured": round(short1, 1),
                                                     "met": short1 >= 100},
            "read_p50_ratio_largest_to_smallest_doc": {"target": "<= 2", "measured": round(read_ratio, 2),
                                                       "met": read_ratio <= 2},
            "worker_peak_rss_mib": {"target": "< 300", "measured": round(rss / 2**20, 1), "met": rss < 300 * 2**20},
        }
    return out


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = results["parameters"]["methods"]
    rows = results["corpus"]
    xs = [r["corpus_bytes"] / 2**20 for r in rows]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    panels = [(axes[0][0], lambda r, m: r[m]["locate"]["p50_ms"], "locate p50 (ms)"),
              (axes[0][1], lambda r, m: r[m]["read"]["p50_ms"], "read p50 (ms)"),
              (axes[1][0], lambda r, m: r[m]["peak_rss_bytes"] / 2**20, "worker peak RSS (MiB)")]
    for ax, get, label in panels:
        for m in methods:
            line, = ax.plot(xs, [get(r, m) for r in rows], marker="o", label=m)
            if ax is axes[0][0]:  # the short CJK terms, same colour, dashed (2 characters) and dotted (1)
                for key, style, what in (("locate_short", "--", "2 CJK chars"), ("locate_1char", ":", "1 CJK char")):
                    ax.plot(xs, [r[m][key]["p50_ms"] for r in rows], linestyle=style, marker=".",
                            color=line.get_color(), label=f"{m}, {what}")
        ax.set_xscale("log")
        ax.set_xlabel("corpus size (MiB)")
        ax.set_ylabel(label)
    for ax in (axes[0][0], axes[0][1]):
        ax.set_yscale("log")
    ax = axes[1][0]  # memory against its target, on a linear scale from zero
    ax.axhline(300, color="grey", linestyle="--", label="target: under 300 MiB")
    ax.set_ylim(0, max([330] + [1.1 * r[m]["peak_rss_bytes"] / 2**20 for r in rows for m in methods]))
    for ax, _, _ in panels:
        ax.legend()
    ax = axes[1][1]
    for m in methods:
        pts = [r for r in results["doc_size"] if r["method"] == m]
        ax.plot([p["doc_bytes"] / 1024 for p in pts], [p["read"]["p50_ms"] for p in pts], marker="o", label=m)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("document size (KiB)")
    ax.set_ylabel("read p50 (ms), 800 characters")
    ax.legend()
    fig.suptitle(f"evidence store: scan vs indexed ({results['corpus'][-1]['docs']:,} documents at most)")
    fig.tight_layout()
    fig.savefig(path, dpi=220)  # twice the display size: notebook 11x shows it with retina=True (sharp on HiDPI)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
