"""debian_holdout_near (issue 33): a held-out near set over the debian_holdout corpus, written by
scripts/build_near_qa.py --set debian_holdout (bench/data/README.md, "debian_holdout_near").

The generalised builder is checked offline on synthetic pages (the kernel near rules with debian_holdout's package
quotas, labels, seed and ids; its rule check catches a broken item); the shipped file against the checker, the
strata, the package quotas and debian_holdout_qa.json's documents, and against a second build (skipped when the
archive is absent; the archive is read in memory, never unpacked).
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
from test_near_qa import synthetic_doc  # noqa: E402  (its synthetic pages)

qa_check = near.kqa.load_qa_check()
NAME = near.HOLDOUT
DATA = ROOT / "bench" / "data"
ARCHIVE = DATA / f"{NAME}.tar.xz"
QA = DATA / f"{NAME}_near_qa.json"
SMALL = 12   # one question per (bucket, side, far) stratum
CELLS = [(b, s, f) for b in near.kqa.BUCKETS for s in near.SIDES for f in (True, False)]


def synthetic(prefixes: tuple[str, ...], docs: int = 120) -> dict[str, str]:
    """tests/test_near_qa.py's pages (a fact sentence, three terms of df 120, 12 and 1 on either side of it, some
    within a few characters and some 300+ away) under the given packages' doc_id prefixes."""
    return {f"{prefixes[i % len(prefixes)]}__page-{i:03d}": synthetic_doc(i) for i in range(docs)}


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return synthetic(("qt", "sqlite", "openssl"))


@pytest.fixture(scope="module")
def drawn(pages) -> list[dict]:
    return near.build(NAME, pages, SMALL)


def strata(items: list[dict]) -> dict[tuple[str, str, bool], int]:
    counts = {cell: 0 for cell in CELLS}
    for item in items:
        counts[(item["term_bucket"], item["term_side"], item["term_distance"] >= near.FAR)] += 1
    return counts


# --- the generalised builder ------------------------------------------------------------------------------------


def test_holdout_near_draw_obeys_the_near_rules_and_the_package_quotas(pages, drawn):
    assert len(drawn) == SMALL and qa_check.check_items(pages, drawn) == []
    assert near.rule_errors(NAME, pages, drawn, SMALL) == []
    assert strata(drawn) == {cell: 1 for cell in CELLS}
    quotas = near.package_quotas(NAME, pages, SMALL)
    assert quotas == {"qtbase5-doc-html": 4, "sqlite3-doc": 4, "libssl-doc": 4}
    assert {p: sum(i["package"] == p for i in drawn) for p in quotas} == quotas
    assert all(i["locate_term"] not in i["answer_span"] for i in drawn)


def test_holdout_near_questions_name_the_manual_and_ids_are_the_sets(drawn):
    assert [i["id"] for i in drawn] == [f"debian-holdout-near-{n:03d}" for n in range(1, SMALL + 1)]
    for item in drawn:
        label = near.mqa.package_of(item["doc_id"]).label
        where = f'"{item["title"]}"' if item["section"] == item["title"] else \
            f'the section "{item["section"]}" of "{item["title"]}"'
        assert item["question"] == (f"In {where} in the {label}, which mentions {item['locate_term']}, "
                                    "what concrete fact does the documentation state?")
        assert list(item) == [k for k in near.KEYS if k != "question_en"]


def test_holdout_near_has_its_own_seed(pages, drawn):
    data = json.loads(near.document(NAME, pages, drawn))
    assert (data["corpus"], data["set"], data["seed"]) == (NAME, f"{NAME}_near", near.HOLDOUT_SEED)
    assert data["package_quotas"] == near.package_quotas(NAME, pages, SMALL)
    assert len(set(near.SEED_STRINGS.values())) == len(near.SEED_STRINGS)
    assert near.SEED_STRINGS[NAME] == "debian-holdout-near-qa:debian_holdout:33"


def test_holdout_near_build_skips_documents_and_full_packages(pages, drawn):
    skip = frozenset(i["doc_id"] for i in drawn)
    again = near.build(NAME, pages, SMALL, skip)
    assert not skip & {i["doc_id"] for i in again}
    with pytest.raises(SystemExit, match="ran out of documents"):   # too few pages for every quota
        near.build(NAME, dict(list(pages.items())[:9]), SMALL)


def test_holdout_near_rule_check_catches_a_wrong_package_or_question(pages, drawn):
    moved = [dict(drawn[0], package="libssl-doc" if drawn[0]["package"] != "libssl-doc" else "sqlite3-doc"),
             *drawn[1:]]
    assert any("rule 7" in e for e in near.rule_errors(NAME, pages, moved, SMALL))
    assert any("quota" in e for e in near.rule_errors(NAME, pages, moved, SMALL))
    reworded = [dict(drawn[0], question=drawn[0]["question"].replace("which mentions", "about")), *drawn[1:]]
    assert any("rule 7" in e for e in near.rule_errors(NAME, pages, reworded, SMALL))


# --- the shipped set ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped() -> tuple[dict[str, str], dict]:
    """(documents read from the archive in memory, the QA file); skips when the archive is absent."""
    if not ARCHIVE.exists():
        pytest.skip(f"{ARCHIVE.name} not present")
    return near.load(NAME, DATA), json.loads(QA.read_text(encoding="utf-8"))


def test_shipped_holdout_near_passes_the_checker_and_the_rules(shipped):
    docs, data = shipped
    items = data["items"]
    assert data["corpus_sha256"] == qa_check.corpus_sha256(docs) and data["seed"] == near.HOLDOUT_SEED
    assert len(items) == near.HOLDOUT_SIZE == 60
    assert qa_check.check_items(docs, items) == []
    assert near.rule_errors(NAME, docs, items, 60) == []
    assert [i["id"] for i in items] == [f"debian-holdout-near-{n:03d}" for n in range(1, 61)]


def test_shipped_holdout_near_strata_are_a_third_per_bucket_half_per_side_and_distance(shipped):
    _, data = shipped
    assert strata(data["items"]) == {cell: 5 for cell in CELLS}
    assert data["package_quotas"] == near.package_quotas(NAME, shipped[0], 60)
    assert {p: sum(i["package"] == p for i in data["items"]) for p in data["package_quotas"]} == data["package_quotas"]


def test_shipped_holdout_near_shares_no_document_with_the_holdout_set(shipped):
    _, data = shipped
    holdout = json.loads((DATA / f"{NAME}_qa.json").read_text(encoding="utf-8"))
    mine = [i["doc_id"] for i in data["items"]]
    assert len(set(mine)) == len(mine)
    assert not set(mine) & {i["doc_id"] for i in holdout["items"]}


def test_shipped_holdout_near_is_the_rules_draw(shipped):
    """A second build from the committed corpus writes the committed file byte for byte (nothing hand-picked)."""
    docs, _ = shipped
    holdout = json.loads((DATA / f"{NAME}_qa.json").read_text(encoding="utf-8"))
    skip = frozenset(i["doc_id"] for i in holdout["items"])
    assert near.document(NAME, docs, near.build(NAME, docs, 60, skip)) == QA.read_text(encoding="utf-8")


def test_benchmark_knows_the_holdout_near_set():
    """bench/eval_compare.py runs it over debian_holdout's corpus (unpacked by the holdout script) into its own file."""
    spec = importlib.util.spec_from_file_location("_eval_compare", ROOT / "bench" / "eval_compare.py")
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    corpus, qa, out = compare.RUNS[f"{NAME}_near"]
    assert corpus == compare.RUNS[NAME][0] and qa == QA and out.name == f"eval_{NAME}_near.json"
    unpacked = [prefix for prefix in compare.UNPACK if f"{NAME}_near".startswith(prefix)]
    assert unpacked == [NAME] and compare.UNPACK[NAME][2] == "build_debian_holdout_corpus.py"


def test_before_run_read_the_committed_questions_with_every_flow():
    """bench/results/before/eval_debian_holdout_near.json (main's reader) was made from this QA file and corpus, every
    flow on every question, both choosers, Deep Agents with ripgrep three times and with its Python grep."""
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
