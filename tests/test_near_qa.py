"""scripts/build_near_qa.py: QA sets whose locate term sits beside the answer span, not in it (issue 25).

The builder is checked on a small synthetic corpus (deterministic across processes, every item obeying the
documented rules) and the shipped sets in bench/data/ against the same rules.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_near_qa as near  # noqa: E402

qa_check = near.kqa.load_qa_check()   # evidence_lib/eval/_qa_check.py by path, as the build script loads it

SMALL = 12   # one question per (bucket, side, far) stratum
DOCS = 120


def _code(i: int) -> str:
    return chr(97 + i // 26) + chr(97 + i % 26)


def synthetic_doc(i: int) -> str:
    """A page whose one section holds a fact sentence and three terms (df 120, 12 and 1) on either side of it,
    some within a few characters and some 300+ away."""
    terms = ("Frequent", f"Middle{_code(i % 10)}Q", f"Rare{_code(i)}Q")
    before, after = [], []
    for j, term in enumerate(terms):
        filler = "aa " * (120 if ((i // 2) + j) % 2 else 4)
        (before if (i + j) % 2 else after).append((len(filler), term, filler.strip()))
    paras = [f"{t} {f}" for _, t, f in sorted(before, reverse=True)]
    paras.append(f"The limit for unit {i} is {i * 7 + 3} items per queue.")
    paras += [f"{f} {t}" for _, t, f in sorted(after)]
    title, section = f"Doc {_code(i)}", f"On {_code(i)}"
    return (f"{title}\n{'=' * len(title)}\n\n{section}\n{'-' * len(section)}\n\n" + "\n\n".join(paras) + "\n")


@pytest.fixture(scope="module")
def corpus() -> dict[str, str]:
    return {f"page-{i:03d}": synthetic_doc(i) for i in range(DOCS)}


@pytest.fixture(scope="module")
def items(corpus) -> list[dict]:
    return near.build("kernel_en", corpus, SMALL)


def _independent_nearest(text: str, term: str, start: int, end: int) -> tuple[str, int]:
    """The term's nearest occurrence to [start, end), computed here without the script's helper."""
    gaps = []
    at = text.find(term)
    while at >= 0:
        assert not (at < end and at + len(term) > start), "an occurrence overlapping the span"
        gaps.append(("before", start - at - len(term)) if at + len(term) <= start else ("after", at - end))
        at = text.find(term, at + 1)
    best = min(gap for _, gap in gaps)
    sides = {side for side, gap in gaps if gap == best}
    assert len(sides) == 1, "a tie between both sides must never be chosen"
    return sides.pop(), best


def test_near_set_is_byte_identical_across_processes(corpus, tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    for doc_id, text in corpus.items():
        (folder / f"{doc_id}.txt").write_text(text, encoding="utf-8")
    program = ("import sys; sys.path.insert(0, sys.argv[1]); import build_near_qa as n; "
               "d = n.kqa.load_qa_check().folder_corpus(sys.argv[2]); "
               f"sys.stdout.write(n.document('kernel_en', d, n.build('kernel_en', d, {SMALL})))")
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run([sys.executable, "-c", program, str(ROOT / "scripts"), str(folder)], env=env,
                             capture_output=True, check=True, cwd=ROOT)
        outputs.append(run.stdout)
    assert outputs[0] == outputs[1]
    assert len(json.loads(outputs[0])["items"]) == SMALL


def test_near_items_pass_the_repo_checker(corpus, items):
    assert qa_check.check_items(corpus, items) == []
    assert near.rule_errors("kernel_en", corpus, items, SMALL) == []


def test_near_term_is_never_inside_the_span_but_in_its_section(corpus, items):
    for item in items:
        text = corpus[item["doc_id"]]
        begin, end, section, _ = near.section_bounds(text, item["start"])
        assert item["locate_term"] not in item["answer_span"]
        assert item["locate_term"] in text[begin:end]
        assert item["section"] == section


def test_near_side_and_distance_are_the_nearest_occurrence(corpus, items):
    for item in items:
        got = _independent_nearest(corpus[item["doc_id"]], item["locate_term"], item["start"], item["end"])
        assert got == (item["term_side"], item["term_distance"])


def test_near_strata_fill_every_bucket_side_and_distance(items):
    counts = {}
    for item in items:
        key = (item["term_bucket"], item["term_side"], item["term_distance"] >= near.FAR)
        counts[key] = counts.get(key, 0) + 1
    assert counts == {(b, s, f): 1 for b in ("100+", "10-99", "<10") for s in ("after", "before")
                      for f in (True, False)}


def test_near_spans_are_unique_and_one_per_document(corpus, items):
    big = "\x00".join(corpus.values())
    assert all(big.count(item["answer_span"]) == 1 for item in items)
    assert len({item["doc_id"] for item in items}) == len(items)


def test_near_build_skips_documents_of_another_set(corpus, items):
    skip = frozenset(item["doc_id"] for item in items)
    again = near.build("kernel_en", corpus, SMALL, skip)
    assert not skip & {item["doc_id"] for item in again}


def test_near_quotas_split_odd_counts_evenly():
    room = near.quotas(45)
    assert sum(room.values()) == 45
    for b in ("100+", "10-99", "<10"):
        assert sum(n for (bb, _, _), n in room.items() if bb == b) == 15
    sides = [sum(n for (_, s, _), n in room.items() if s == side) for side in ("after", "before")]
    far = [sum(n for (_, _, f), n in room.items() if f is flag) for flag in (True, False)]
    assert sorted(sides) == [22, 23] and sorted(far) == [22, 23]
    assert set(near.quotas(60).values()) == {5}


def test_nearest_refuses_ties_and_straddling_terms():
    text = "xx TERM yy SPAN zzz TERM"
    start = text.index("SPAN")
    assert near.nearest("TERM yy SPAN yy TERM", "TERM", 8, 12) is None
    assert near.nearest("abSPANcd", "Nc", 2, 6) is None
    assert near.nearest(text, "TERM", start, start + 4) == ("before", 4)


def test_shipped_near_sets_obey_the_rules():
    data_dir = ROOT / "bench" / "data"
    if not (data_dir / "kernel_en.tar.xz").exists():
        pytest.skip("kernel corpora not present")
    for corpus_name, size in near.SIZES.items():
        docs = near.corpora.load_corpus(corpus_name, data_dir)
        data = json.loads((data_dir / f"{corpus_name}_near_qa.json").read_text(encoding="utf-8"))
        kernel = json.loads((data_dir / f"{corpus_name}_qa.json").read_text(encoding="utf-8"))
        assert data["corpus_sha256"] == qa_check.corpus_sha256(docs)
        assert len(data["items"]) == size
        assert qa_check.check_items(docs, data["items"]) == []
        assert near.rule_errors(corpus_name, docs, data["items"], size) == []
        assert not {i["doc_id"] for i in data["items"]} & {i["doc_id"] for i in kernel["items"]}
        if corpus_name == "kernel_zh":
            assert all("question_en" in i and "文档" in i["question"] for i in data["items"])
