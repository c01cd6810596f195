#!/usr/bin/env python3
"""The reading flows side by side, Deep Agents included, with both choosers: writes bench/results/eval_pydoc.json,
eval_zh.json, for the Linux kernel documentation sets (issue 25, bench/data/README.md) eval_kernel_en.json and
eval_kernel_zh.json, for the 20,000-document Debian set (issue 33) eval_debian_mix.json (its corpus unpacked into
build/debian_mix/ the first time), for the held-out Debian set eval_debian_holdout.json (build/debian_holdout/), for its held-out near set
eval_debian_holdout_near.json, and for debian_mix's held-out near set eval_debian_mix_near.json.

    python bench/eval_compare.py                      # every set
    python bench/eval_compare.py kernel_en kernel_zh  # some sets
    python bench/eval_compare.py kernel_en_near       # a set given by its file: bench/data/kernel_en_near_qa.json
    python bench/eval_compare.py --python-grep pydoc  # add Deep Agents with its Python grep to an existing file
    python bench/eval_compare.py --table              # only rewrite bench/results/eval_all_sets.txt
    python bench/eval_compare.py --reuse-deepagents zh  # run the library flows, keep the committed Deep Agents rows

Every run ends by rewriting bench/results/eval_all_sets.txt: every set in one table (and the bytes per tool).

The kernel corpora are unpacked from bench/data/ into build/kernel/ the first time. Deep Agents' grep uses ripgrep
when ``rg`` is on PATH (``make bench-eval`` installs Debian's ``ripgrep`` when it can), else its Python fallback;
each file records which engine ran (``deepagents_grep_engine``). ripgrep's capped matches vary from run to run, so
with it each Deep Agents flow runs three times and its figures are the median per metric with their spread (min, max):
``runs`` and ``spread`` in its summary, ``deepagents_runs`` in the file (issue 33, item 6); the Python grep is
deterministic and runs once. With ripgrep, each set is run a second time with
Deep Agents' Python grep (``rg`` hidden from that process's PATH: Deep Agents picks its engine once per process), kept
under ``deepagents_python_grep``: ``{chooser: {"flows", "targets"}}`` for the compact and Deep Agents flows, so both
engines are reported side by side.

``--reuse-deepagents`` runs only the library's flows and keeps the Deep Agents flows (both grep engines) of the
committed result file of the same set, when that file was made from the same corpus (``corpus_sha256``) and the same
QA file (``qa_sha256``, or for a file written before that key the same question ids in order); the file says so under
``deepagents_reused``. Deep Agents' flows do not read the library's reader, so a reader change leaves them as they
were; any other mismatch is an error, never a silent reuse.

Run with an interpreter that has the optional extra installed (``make bench-eval`` makes ``.venv-bench`` with
``pip install -e '.[deepagents]'``). Without deepagents the two Deep Agents flows are reported as skipped.
Everything else is the same command a team runs on its own QA set: ``python -m evidence_lib eval``, once per
chooser. Each file is the ``--chooser oracle`` run, keys as they were (``chooser``, ``flows``, ``per_question``,
``targets``, ...), plus ``by_chooser``: ``{"overlap": {"chooser", "flows", "skipped", "targets", "per_question"}}``,
the ``--chooser overlap`` run of the same flows on the same corpus and QA set.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from evidence_lib.__main__ import main
from evidence_lib.course.eval_tables import bytes_by_tool_table, every_set_table, floor_table, load_sets
from evidence_lib.eval._deepagents_flow import DEEPAGENTS_FLOWS, grep_engine
from evidence_lib.eval._run import FLOWS, over_floor, targets

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "evidence_lib" / "eval" / "data"
OUT = ROOT / "bench" / "results"

BENCH_DATA = ROOT / "bench" / "data"
KERNEL = ROOT / "build" / "kernel"
DEBIAN_MIX = ROOT / "build" / "debian_mix"
DEBIAN_HOLDOUT = ROOT / "build" / "debian_holdout"

#: set name -> (corpus for --corpus, QA file, result file)
RUNS = {
    "pydoc": ("pydoc", DATA / "pydoc_qa.json", OUT / "eval_pydoc.json"),
    "zh": (str(DATA / "zh_corpus"), DATA / "zh_qa.json", OUT / "eval_zh.json"),
    "kernel_en": (str(KERNEL / "kernel_en"), BENCH_DATA / "kernel_en_qa.json", OUT / "eval_kernel_en.json"),
    "kernel_zh": (str(KERNEL / "kernel_zh"), BENCH_DATA / "kernel_zh_qa.json", OUT / "eval_kernel_zh.json"),
    "debian_mix": (str(DEBIAN_MIX / "debian_mix"), BENCH_DATA / "debian_mix_qa.json", OUT / "eval_debian_mix.json"),
    "debian_holdout": (str(DEBIAN_HOLDOUT / "debian_holdout"), BENCH_DATA / "debian_holdout_qa.json",
                       OUT / "eval_debian_holdout.json"),
    "debian_holdout_near": (str(DEBIAN_HOLDOUT / "debian_holdout"), BENCH_DATA / "debian_holdout_near_qa.json",
                            OUT / "eval_debian_holdout_near.json"),
    "debian_mix_near": (str(DEBIAN_MIX / "debian_mix"), BENCH_DATA / "debian_mix_near_qa.json",
                        OUT / "eval_debian_mix_near.json"),
}
#: The folder corpora unpacked from bench/data/ the first time a set reads them: set-name prefix -> (folder, its
#: corpora, the script whose --unpack writes them).
UNPACK = {"kernel_": (KERNEL, ("kernel_en", "kernel_zh"), "build_kernel_corpora.py"),
          "debian_mix": (DEBIAN_MIX, ("debian_mix",), "build_debian_mix_corpus.py"),
          "debian_holdout": (DEBIAN_HOLDOUT, ("debian_holdout",), "build_debian_holdout_corpus.py")}
#: The choosers run besides the oracle, each kept under by_chooser.
OTHER_CHOOSERS = ("overlap",)
KEPT = ("chooser", "flows", "skipped", "targets", "per_question")


#: The flows ``--reuse-deepagents`` runs: every flow but Deep Agents'.
LIBRARY_FLOWS = tuple(f for f in FLOWS if f not in DEEPAGENTS_FLOWS)


def run(corpus: str, qa: Path, out: Path, reuse: bool = False) -> int:
    committed = json.loads(out.read_text(encoding="utf-8")) if reuse else None  # read before it is overwritten
    flows = ["--flows", ",".join(LIBRARY_FLOWS)] if reuse else []
    code = main(["eval", "--corpus", corpus, "--qa", str(qa), "--out", str(out), "--chooser", "oracle", *flows])
    if code:
        return code
    result = json.loads(out.read_text(encoding="utf-8"))
    result["qa_sha256"] = hashlib.sha256(qa.read_bytes()).hexdigest()
    result["deepagents_grep_engine"] = grep_engine()
    result["by_chooser"] = {}
    with tempfile.TemporaryDirectory(prefix="eval-compare-") as tmp:
        for chooser in OTHER_CHOOSERS:
            other = Path(tmp) / f"{chooser}.json"
            code = main(["eval", "--corpus", corpus, "--qa", str(qa), "--out", str(other), "--chooser", chooser,
                         *flows])
            if code:
                return code
            body = json.loads(other.read_text(encoding="utf-8"))
            if body["corpus_sha256"] != result["corpus_sha256"]:
                raise SystemExit(f"{out.name}: the {chooser} run read another corpus")
            result["by_chooser"][chooser] = {k: body[k] for k in KEPT}
    if committed is not None:
        reuse_deepagents(result, committed, out.name)
    elif result["deepagents_grep_engine"] == "ripgrep":
        result["deepagents_python_grep"] = python_grep_runs(corpus, qa)
    out.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


def _same_questions(result: dict, committed: dict) -> bool:
    """Whether ``committed`` was made from the QA file ``result`` was: by its hash, else (a file written before the
    hash was kept) by the question ids, in order."""
    if "qa_sha256" in committed:
        return committed["qa_sha256"] == result["qa_sha256"]
    ids = [r["id"] for r in next(iter(result["per_question"].values()))]
    return all([r["id"] for r in runs] == ids for runs in committed["per_question"].values())


def _with_deepagents(run: dict, committed: dict, floor: float) -> None:
    """Put ``committed``'s Deep Agents flows (summaries, with their median bytes over ``floor``, and per-question runs
    where it has them) into ``run`` of the same chooser, every flow in :data:`FLOWS` order; its targets recomputed."""
    kept = {f: {**s, "median_bytes_over_floor": over_floor(s, floor)}
            for f, s in committed["flows"].items() if f in DEEPAGENTS_FLOWS}
    flows = {**run["flows"], **kept}
    run["flows"] = {f: flows[f] for f in FLOWS if f in flows}
    if "per_question" in run:
        per = {**run["per_question"], **{f: r for f, r in committed["per_question"].items() if f in kept}}
        run["per_question"] = {f: per[f] for f in run["flows"]}
        run["skipped"] = {**{f: why for f, why in committed.get("skipped", {}).items() if f in DEEPAGENTS_FLOWS},
                          **run["skipped"]}
    run["targets"] = targets(run)


def reuse_deepagents(result: dict, committed: dict, name: str) -> None:
    """``--reuse-deepagents``: the committed file's Deep Agents rows (both grep engines) into ``result``, after
    checking that both were made from the same corpus and QA file (else :class:`SystemExit`); recorded in the file."""
    if committed["corpus_sha256"] != result["corpus_sha256"] or not _same_questions(result, committed):
        raise SystemExit(f"{name}: the committed file was made from another corpus or QA file: run without "
                         "--reuse-deepagents")
    floor = result["physical_floor"]["median_bytes"]
    old = {committed["chooser"]: committed, **committed.get("by_chooser", {})}
    new = {result["chooser"]: result, **result["by_chooser"]}
    for chooser, run in new.items():
        _with_deepagents(run, old[chooser], floor)
    for key in ("deepagents_version", "deepagents_runs", "deepagents_grep_engine"):
        if key in committed:
            result[key] = committed[key]
    if "deepagents_python_grep" in committed:  # compact there is the main run's (deterministic): this run's
        result["deepagents_python_grep"] = {}
        for chooser, was in committed["deepagents_python_grep"].items():
            mine = {"flows": {"compact": new[chooser]["flows"]["compact"]}}
            _with_deepagents(mine, was, floor)
            result["deepagents_python_grep"][chooser] = mine
    result["deepagents_reused"] = {
        "from": f"bench/results/{name} as committed before this run",
        "checked": "same corpus_sha256, and the same QA file (qa_sha256; question ids in order where the committed "
                   "file had no qa_sha256)",
        "why": "Deep Agents' flows do not use the library's reader: only the library's flows were run again; the "
               "Deep Agents rows (both grep engines), their per-question runs and spread are the committed ones, "
               "with median_bytes_over_floor computed from their median bytes"}


#: The flows run again with Deep Agents' Python grep: the two Deep Agents flows and compact, which the targets
#: compare them with (deterministic: the same numbers as in the main run).
PYTHON_GREP_FLOWS = "compact,deepagents,deepagents_default"


def python_grep_runs(corpus: str, qa: Path) -> dict:
    """Deep Agents' flows with its Python grep, both choosers: ``{chooser: {"flows", "targets"}}``. Each run is a
    process whose PATH holds only this interpreter's folder (no ``rg``)."""
    runs = {}
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    with tempfile.TemporaryDirectory(prefix="eval-python-grep-") as tmp:
        for chooser in ("oracle", *OTHER_CHOOSERS):
            out = Path(tmp) / f"{chooser}.json"
            subprocess.run([sys.executable, "-m", "evidence_lib", "eval", "--corpus", corpus, "--qa", str(qa),
                            "--out", str(out), "--chooser", chooser, "--flows", PYTHON_GREP_FLOWS],
                           env=env, check=True, stdout=subprocess.DEVNULL)
            body = json.loads(out.read_text(encoding="utf-8"))
            runs[chooser] = {"flows": body["flows"], "targets": body["targets"]}
    return runs


def add_python_grep(corpus: str, qa: Path, out: Path) -> None:
    """Add ``deepagents_python_grep`` to an existing result file without re-running the rest."""
    result = json.loads(out.read_text(encoding="utf-8"))
    result["deepagents_python_grep"] = python_grep_runs(corpus, qa)
    out.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


#: Every set's results in one table (issue 25): the same table notebook 08x prints.
TABLE = OUT / "eval_all_sets.txt"


def write_table() -> None:
    """Write :data:`TABLE` from every ``eval_*.json`` in bench/results/ (:func:`evidence_lib.course.eval_tables.every_set_table`
    and the bytes per tool)."""
    results = load_sets(OUT)
    TABLE.write_text("Every QA set, both choosers (python bench/eval_compare.py writes this file)\n\n"
                     + every_set_table(results) + "\n\nWhere the bytes go, per tool\n\n"
                     + bytes_by_tool_table(results) + "\n\nMedian bytes over the physical floor (the answer span "
                     "with its citation line, as the answer format writes it; median over the set's questions)\n\n"
                     + floor_table(results) + "\n", encoding="utf-8")


def unpack_corpora(names: list[str]) -> None:
    """Unpack the archived corpora the sets ``names`` read, once (:data:`UNPACK`, each script's ``--unpack``)."""
    for prefix, (folder, corpora, script) in UNPACK.items():
        if any(n.startswith(prefix) for n in names) and not all((folder / c).is_dir() for c in corpora):
            subprocess.run([sys.executable, str(ROOT / "scripts" / script), "--unpack", str(folder)], check=True)


def held_out(name: str) -> tuple[str, Path, Path] | None:
    """A set named by its file alone: ``bench/data/<name>_qa.json`` over the corpus of the longest set name it starts
    with (``kernel_en_near`` reads ``kernel_en``'s corpus), written to ``bench/results/eval_<name>.json``."""
    qa = BENCH_DATA / f"{name}_qa.json"
    base = max((k for k in RUNS if name.startswith(k + "_")), key=len, default=None)
    return (RUNS[base][0], qa, OUT / f"eval_{name}.json") if base and qa.is_file() else None


if __name__ == "__main__":
    args = sys.argv[1:]
    if args == ["--table"]:
        write_table()
        sys.exit(0)
    only_python_grep = "--python-grep" in args
    reuse = "--reuse-deepagents" in args
    names = [a for a in args if a not in ("--python-grep", "--reuse-deepagents")] or list(RUNS)
    for name in names:
        if name not in RUNS and (found := held_out(name)) is not None:
            RUNS[name] = found
    unknown = sorted(set(names) - set(RUNS))
    if unknown:
        sys.exit(f"unknown set(s) {unknown}; the sets are {list(RUNS)} and bench/data/<set>_<name>_qa.json")
    OUT.mkdir(parents=True, exist_ok=True)
    unpack_corpora(names)
    for name in names:
        if only_python_grep:
            add_python_grep(*RUNS[name])
            continue
        code = run(*RUNS[name], reuse=reuse)
        if code:
            sys.exit(code)
    write_table()
