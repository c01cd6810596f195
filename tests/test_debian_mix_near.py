"""debian_mix_near (issue 33): a second held-out near set, over debian_mix's 20,831 documents, written by
scripts/build_near_qa.py --set debian_mix after the rare-words reader change it judges and before any flow ran on it
(bench/data/README.md, "debian_mix_near").

The builder's rules are tested on synthetic pages in tests/test_debian_holdout_near.py (the same code, another
corpus); here the shipped file is checked against the checker, the rules, the strata, the package quotas and
debian_mix_qa.json's documents (skipped when the archive is absent; read in memory, never unpacked), and the before
run against the committed questions. A second build writes the same bytes, but takes about five CPU minutes: it is
not run here (bench/data/README.md says when it was checked).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from evidence_lib.eval._run import FLOWS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_near_qa as near  # noqa: E402

qa_check = near.kqa.load_qa_check()
NAME = near.MIX
DATA = ROOT / "bench" / "data"
ARCHIVE = DATA / f"{NAME}.tar.xz"
QA = DATA / f"{NAME}_near_qa.json"
CELLS = [(b, s, f) for b in near.kqa.BUCKETS for s in near.SIDES for f in (True, False)]


@pytest.fixture(scope="module")
def shipped() -> tuple[dict[str, str], dict]:
    """(documents read from the archive in memory, the QA file); skips when the archive is absent."""
    if not ARCHIVE.exists():
        pytest.skip(f"{ARCHIVE.name} not present")
    return near.load(NAME, DATA), json.loads(QA.read_text(encoding="utf-8"))


def test_mix_near_has_its_own_seed_and_size():
    assert near.SEED_STRINGS[NAME] == "debian-mix-near-qa:debian_mix:33"
    assert len(set(near.SEED_STRINGS.values())) == len(near.SEED_STRINGS)
    assert near.size_of(NAME) == 60 and near.LANG[NAME] == near.LANG[near.HOLDOUT]


def test_shipped_mix_near_passes_the_checker_and_the_rules(shipped):
    docs, data = shipped
    items = data["items"]
    assert len(docs) == 20_831 and data["corpus_sha256"] == qa_check.corpus_sha256(docs)
    assert data["set"] == "debian_mix_near" and data["seed"] == near.HOLDOUT_SEED
    assert qa_check.check_items(docs, items) == []
    assert near.rule_errors(NAME, docs, items, 60) == []
    assert [i["id"] for i in items] == [f"debian-mix-near-{n:03d}" for n in range(1, 61)]


def test_shipped_mix_near_strata_and_package_quotas(shipped):
    docs, data = shipped
    counts = {cell: 0 for cell in CELLS}
    for item in data["items"]:
        counts[(item["term_bucket"], item["term_side"], item["term_distance"] >= near.FAR)] += 1
    assert counts == {cell: 5 for cell in CELLS}
    assert data["package_quotas"] == near.package_quotas(NAME, docs, 60)
    assert {p: sum(i["package"] == p for i in data["items"]) for p in data["package_quotas"]} == data["package_quotas"]


def test_shipped_mix_near_shares_no_document_with_the_mix_set():
    data = json.loads(QA.read_text(encoding="utf-8"))
    mix = json.loads((DATA / f"{NAME}_qa.json").read_text(encoding="utf-8"))
    mine = [i["doc_id"] for i in data["items"]]
    assert len(set(mine)) == len(mine)
    assert not set(mine) & {i["doc_id"] for i in mix["items"]}


def test_benchmark_knows_the_mix_near_set():
    """bench/eval_compare.py runs it over debian_mix's corpus (unpacked by the mix script) into its own file."""
    spec = importlib.util.spec_from_file_location("_eval_compare", ROOT / "bench" / "eval_compare.py")
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    corpus, qa, out = compare.RUNS[f"{NAME}_near"]
    assert corpus == compare.RUNS[NAME][0] and qa == QA and out.name == f"eval_{NAME}_near.json"
    assert [prefix for prefix in compare.UNPACK if f"{NAME}_near".startswith(prefix)] == [NAME]


def test_before_run_read_the_committed_questions_with_every_flow():
    """bench/results/before/eval_debian_mix_near.json (the reader before the rare-words order) was made from this QA
    file and corpus, every flow on every question, both choosers, Deep Agents with ripgrep three times and with its
    Python grep."""
    before = json.loads((ROOT / "bench" / "results" / "before" / f"eval_{NAME}_near.json").read_text(encoding="utf-8"))
    data = json.loads(QA.read_text(encoding="utf-8"))
    assert before["qa_sha256"] == hashlib.sha256(QA.read_bytes()).hexdigest()
    assert before["corpus_sha256"] == data["corpus_sha256"] and before["questions"] == 60
    ids = [i["id"] for i in data["items"]]
    for run in (before, *before["by_chooser"].values()):
        assert set(run["flows"]) == set(FLOWS) and not run["skipped"]
        assert all([r["id"] for r in rows] == ids for rows in run["per_question"].values())
    assert (before["deepagents_grep_engine"], before["deepagents_runs"]["runs"]) == ("ripgrep", 3)
    assert set(before["deepagents_python_grep"]) == {"oracle", "overlap"}
