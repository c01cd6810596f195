"""The held-out near sets (issue 33): debian_holdout_near over the debian_holdout corpus and debian_mix_near over
debian_mix's, written by scripts/build_near_qa.py --set debian_holdout / --set debian_mix (bench/data/README.md).

The generalised builder is checked offline on synthetic pages (the kernel near rules with debian_holdout's package
quotas, labels, seed and ids; its rule check catches a broken item); each shipped file against the checker, the
strata, the package quotas and its corpus set's documents, debian_holdout_near also against a second build (skipped
when the archive is absent; the archive is read in memory, never unpacked); each set's before run against its
questions.
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


# --- the shipped sets: debian_holdout_near, and debian_mix_near (the same rules over debian_mix's corpus) ----------

#: Each held-out near set's corpus -> (its document count, whether the 60-question rebuild runs here: debian_mix's
#: takes about five CPU minutes, so bench/data/README.md records when a second build was compared instead).
SHIPPED = {near.HOLDOUT: (7_299, True), near.MIX: (20_831, False)}


@pytest.fixture(scope="module", params=sorted(SHIPPED))
def shipped(request) -> tuple[str, dict[str, str], dict]:
    """(corpus, documents read from its archive in memory, its near QA file); skips when the archive is absent."""
    name = request.param
    if not (DATA / f"{name}.tar.xz").exists():
        pytest.skip(f"{name}.tar.xz not present")
    return name, near.load(name, DATA), json.loads((DATA / f"{name}_near_qa.json").read_text(encoding="utf-8"))


def test_shipped_near_set_passes_the_checker_and_the_rules(shipped):
    name, docs, data = shipped
    items = data["items"]
    assert len(docs) == SHIPPED[name][0] and data["corpus_sha256"] == qa_check.corpus_sha256(docs)
    assert (data["set"], data["seed"]) == (f"{name}_near", near.HOLDOUT_SEED)
    assert len(items) == near.size_of(name) == 60
    assert qa_check.check_items(docs, items) == []
    assert near.rule_errors(name, docs, items, 60) == []
    prefix = name.replace("_", "-")
    assert [i["id"] for i in items] == [f"{prefix}-near-{n:03d}" for n in range(1, 61)]


def test_shipped_near_set_strata_are_a_third_per_bucket_half_per_side_and_distance(shipped):
    name, docs, data = shipped
    assert strata(data["items"]) == {cell: 5 for cell in CELLS}
    assert data["package_quotas"] == near.package_quotas(name, docs, 60)
    assert {p: sum(i["package"] == p for i in data["items"]) for p in data["package_quotas"]} == data["package_quotas"]


def test_shipped_near_set_shares_no_document_with_its_corpus_set(shipped):
    name, _, data = shipped
    own = json.loads((DATA / f"{name}_qa.json").read_text(encoding="utf-8"))
    mine = [i["doc_id"] for i in data["items"]]
    assert len(set(mine)) == len(mine)
    assert not set(mine) & {i["doc_id"] for i in own["items"]}


def test_shipped_near_set_is_the_rules_draw(shipped):
    """A second build from the committed corpus writes the committed file byte for byte (nothing hand-picked)."""
    name, docs, _ = shipped
    if not SHIPPED[name][1]:
        pytest.skip(f"{name}: a second build takes minutes (compared once, bench/data/README.md)")
    own = json.loads((DATA / f"{name}_qa.json").read_text(encoding="utf-8"))
    skip = frozenset(i["doc_id"] for i in own["items"])
    qa = DATA / f"{name}_near_qa.json"
    assert near.document(name, docs, near.build(name, docs, 60, skip)) == qa.read_text(encoding="utf-8")


def test_mix_near_has_its_own_seed():
    assert near.SEED_STRINGS[near.MIX] == "debian-mix-near-qa:debian_mix:33"
    assert near.LANG[near.MIX] == near.LANG[near.HOLDOUT] and near.size_of(near.MIX) == 60


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_benchmark_knows_the_near_set(name):
    """bench/eval_compare.py runs it over its corpus set's folder (unpacked by that set's script) into its own file."""
    spec = importlib.util.spec_from_file_location("_eval_compare", ROOT / "bench" / "eval_compare.py")
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    corpus, qa, out = compare.RUNS[f"{name}_near"]
    assert corpus == compare.RUNS[name][0] and qa == DATA / f"{name}_near_qa.json"
    assert out.name == f"eval_{name}_near.json"
    assert [prefix for prefix in compare.UNPACK if f"{name}_near".startswith(prefix)] == [name]


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_before_run_read_the_committed_questions_with_every_flow(name):
    """bench/results/before/eval_<set>_near.json (the reader before the change the set judges) was made from this
    QA file and corpus, every flow on every question, both choosers, Deep Agents with ripgrep three times and with its
    Python grep."""
    qa = DATA / f"{name}_near_qa.json"
    before = json.loads((ROOT / "bench" / "results" / "before" / f"eval_{name}_near.json").read_text(encoding="utf-8"))
    data = json.loads(qa.read_text(encoding="utf-8"))
    assert before["qa_sha256"] == hashlib.sha256(qa.read_bytes()).hexdigest()
    assert before["corpus_sha256"] == data["corpus_sha256"] and before["questions"] == 60
    ids = [i["id"] for i in data["items"]]
    for run in (before, *before["by_chooser"].values()):
        assert set(run["flows"]) == set(FLOWS) and not run["skipped"]
        assert all([r["id"] for r in rows] == ids for rows in run["per_question"].values())
    assert (before["deepagents_grep_engine"], before["deepagents_runs"]["runs"]) == ("ripgrep", 3)
    assert set(before["deepagents_python_grep"]) == {"oracle", "overlap"}
