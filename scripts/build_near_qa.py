#!/usr/bin/env python3
"""Write "near" QA sets over the kernel corpora: the locate term is not in the answer span (issue 25, item 1).

    python scripts/build_near_qa.py            # bench/data/kernel_en_near_qa.json, bench/data/kernel_zh_near_qa.json
    python scripts/build_near_qa.py --check    # validate both files with evidence_lib/eval/_qa_check.py
    python scripts/build_near_qa.py --set debian_holdout   # bench/data/debian_holdout_near_qa.json (issue 33)
    python scripts/build_near_qa.py --set debian_mix       # bench/data/debian_mix_near_qa.json (issue 33)

A reader that searches for the locate term lands near the answer, not on it: it must read backward when the
answer sits before the term, forward when after. No reading flow, retriever or model is used or consulted. The
rules (also in bench/data/README.md) reuse ``scripts/build_kernel_qa.py``'s (its functions are imported):

1. **Corpus**: the same archives, ``bench/data/kernel_en.tar.xz`` and ``kernel_zh.tar.xz``, checked against
   ``bench/data/kernel_corpora.json``; each QA file records the corpus's ``corpus_sha256``. Documents that hold a
   question of ``kernel_<lang>_qa.json`` are skipped, so no page repeats between the two sets.
2. **Candidate spans**: build_kernel_qa's rule 2 unchanged (sentences of 20 to 200 characters holding a concrete
   fact, prose, at least one term of their own), and unique in the whole corpus.
3. **The span's section**: from the nearest heading at or before the span (the page title when none comes
   between) to the next heading, or the end of the document (headings as build_kernel_qa's rule 6).
4. **locate_term**: a candidate term (build_kernel_qa's rule 3 grammar: English words of 4-40 characters that are
   not stop words; Chinese 2-6 ideograph words of the corpus vocabulary) of the section's text, heading included,
   that does **not** occur inside the span (``term not in span``) and that no occurrence in the document
   straddles the span's edges. Its **nearest occurrence** in the document (the whole document, literal,
   case-sensitive) is the one with the fewest characters between it and the span; a term whose nearest
   occurrences before and after the span are equally far is not used. ``term_side`` is ``after`` when that
   occurrence follows the span (the answer sits before the term: a reader must read backward) and ``before``
   otherwise; ``term_distance`` is the number of characters between the span and that occurrence (0 when
   adjacent). Document frequency and buckets as build_kernel_qa's rule 3 (``100+``, ``10-99``, ``<10``).
5. **Quotas** (strata): a third of the questions per bucket; within a bucket half the questions per side and,
   within a (bucket, side) cell, half with ``term_distance`` >= :data:`FAR` ("far") and half nearer. A split of
   an odd count gives the extra question to the first half (``after``, far) and to the second half at the next
   odd split of the same level, alternately, so the totals per side and per distance differ by at most one.
   kernel_en_near 60 questions (5 per cell), kernel_zh_near 45. At most one question per document.
6. **Sampler** (``random.Random(f"kernel-near-qa:{corpus}:{SEED}")``): documents in sorted doc_id order are
   shuffled; for each document its candidate spans (document order) are shuffled and at most
   :data:`~build_kernel_qa.SPANS_PER_DOC` tried; for each span its section's usable terms (sorted) are shuffled
   and the first term whose (bucket, side, far) stratum has room is taken, if the span is unique in the corpus.
   The first accepted span ends the document's turn. Sampling stops when every stratum is full; a stratum that
   cannot be filled stops the build with its name.
7. **Questions** (a template, never edited by hand; it names the section, the page and the term, and neither
   quotes the span nor says on which side the answer lies): kernel_en ``In the section "<section>" of "<title>",
   which mentions <term>, what concrete fact does the documentation state?`` (``In "<title>", which mentions
   <term>, ...`` when the section is the title's). kernel_zh asks in Chinese,
   ``在《<title>》的“<section>”一节中（提到“<term>”），文档给出了什么具体事实？`` (``在《<title>》中（提到…``), with
   the English template in ``question_en``.
8. **Output**: build_kernel_qa's item keys plus ``term_distance`` and ``term_side``, items sorted by doc_id and
   numbered ``kernel-en-near-001`` ...; JSON with ``ensure_ascii=False``, indent 2; byte-identical across runs.

``--set debian_holdout`` (issue 33) writes ``debian_holdout_near_qa.json``, a held-out near set over the
``debian_holdout`` corpus, by the same rules with the English variant, and with debian_holdout's own rules where
they differ from the kernel's (``scripts/build_debian_mix_qa.py``, whose functions are imported): rule 1's corpus
is ``bench/data/debian_holdout.tar.xz``, checked against ``debian_holdout_corpus.json``, and documents that hold
a question of ``debian_holdout_qa.json`` are skipped; rule 5 adds build_debian_mix_qa's package quotas (2 per
package, the rest in proportion to the packages' documents by largest remainder), and a document whose package has
no room left is passed over (no draw spent on it); 60 questions (5 per cell); rule 6's seed is
``random.Random("debian-holdout-near-qa:debian_holdout:33")`` (:data:`HOLDOUT_SEED`, fixed before any of its
questions was drawn); rule 7's question names the package's manual as build_debian_mix_qa's does,
``In the section "<section>" of "<title>" in the <label>, which mentions <term>, what concrete fact does the
documentation state?``; rule 8 adds ``package`` after ``doc_id`` and the file's ``package_quotas``, ids
``debian-holdout-near-001`` ...

``--set debian_mix`` (issue 33, a second held-out near set, written after the reader change it judges and before any
flow ran on it) writes ``debian_mix_near_qa.json`` over the 20,831 documents of ``debian_mix`` by exactly
``--set debian_holdout``'s rules with that corpus's own files: ``bench/data/debian_mix.tar.xz`` checked against
``debian_mix_corpus.json``, documents holding a question of ``debian_mix_qa.json`` skipped, build_debian_mix_qa's
package quotas over debian_mix's packages, rule 6's seed ``random.Random("debian-mix-near-qa:debian_mix:33")``
(fixed before any of its questions was drawn), ids ``debian-mix-near-001`` ...
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_debian_mix_qa as mqa  # noqa: E402
import build_kernel_corpora as corpora  # noqa: E402
import build_kernel_qa as kqa  # noqa: E402

SEED = kqa.SEED
FAR = 300
SIZES = {"kernel_en": 60, "kernel_zh": 45}   # the kernel near sets: the default run
HOLDOUT = mqa.mix.HOLDOUT
MIX = mqa.mix.NAME
HOLDOUT_SIZE = mqa.SIZE
#: debian_holdout_near's sampler seed (rule 6), the issue's number, fixed before any of its questions was drawn.
HOLDOUT_SEED = 33
#: Each set's sampler seed string (rule 6).
SEED_STRINGS = {"kernel_en": f"kernel-near-qa:kernel_en:{SEED}", "kernel_zh": f"kernel-near-qa:kernel_zh:{SEED}",
                HOLDOUT: f"debian-holdout-near-qa:{HOLDOUT}:{HOLDOUT_SEED}",
                MIX: f"debian-mix-near-qa:{MIX}:{HOLDOUT_SEED}"}
#: build_kernel_qa's language rules (spans, terms) each set's corpus is read by.
LANG = {"kernel_en": "kernel_en", "kernel_zh": "kernel_zh", HOLDOUT: mqa.LANG, MIX: mqa.LANG}
SIDES = ("after", "before")
KEYS = ("id", "question", "question_en", "doc_id", "package", "answer_span", "start", "end", "locate_term",
        "term_df", "term_bucket", "term_side", "term_distance", "section", "title")

Stratum = tuple[str, str, bool]   # (bucket, side, far)


def _halves(n: int, toggle: list[int]) -> tuple[int, int]:
    """``n`` split in two; an odd count's extra goes to the first half, then the second, alternately (rule 5)."""
    small = n // 2
    if n % 2 == 0:
        return small, small
    toggle[0] ^= 1
    return (small + 1, small) if toggle[0] else (small, small + 1)


def quotas(n: int) -> dict[Stratum, int]:
    """Questions per (bucket, side, far) stratum for a set of ``n`` questions (rule 5)."""
    per = n // len(kqa.BUCKETS)
    side_toggle, far_toggle = [0], [0]
    room = {}
    for b in kqa.BUCKETS:
        for side, m in zip(SIDES, _halves(per, side_toggle)):
            far, near = _halves(m, far_toggle)
            room[(b, side, True)], room[(b, side, False)] = far, near
    return room


def section_bounds(text: str, start: int) -> tuple[int, int, str, str]:
    """``(begin, end, section, title)`` of the section holding ``start`` (rule 3)."""
    heads = kqa.headings(text)
    title = heads[0][1] if heads else text.strip().split("\n")[0]
    before = [(at, h) for at, h in heads if at <= start]
    after = [at for at, _ in heads if at > start]
    begin, section = before[-1] if before else (0, title)
    return begin, after[0] if after else len(text), section, title


def occurrences(text: str, term: str) -> list[int]:
    """Every start of ``term`` in ``text``, overlapping ones included."""
    found, at = [], text.find(term)
    while at >= 0:
        found.append(at)
        at = text.find(term, at + 1)
    return found


def nearest(text: str, term: str, start: int, end: int) -> tuple[str, int] | None:
    """``(side, distance)`` of the term's nearest occurrence to ``[start, end)``; None when an occurrence
    straddles the span or the nearest ones before and after are equally far (rule 4)."""
    before, after = [], []
    for at in occurrences(text, term):
        if at + len(term) <= start:
            before.append(start - at - len(term))
        elif at >= end:
            after.append(at - end)
        else:
            return None
    gap_before, gap_after = min(before, default=None), min(after, default=None)
    if gap_before == gap_after:
        return None
    if gap_before is None or (gap_after is not None and gap_after < gap_before):
        return "after", gap_after
    return "before", gap_before


def section_terms(corpus: str, text: str, start: int, span: str, words: frozenset[str]) -> list[str]:
    """The section's candidate terms that do not occur inside the span, sorted (rule 4)."""
    begin, end, _, _ = section_bounds(text, start)
    return [t for t in kqa.terms_of(LANG[corpus], text[begin:end], words) if t not in span]


def question(corpus: str, title: str, section: str, term: str, label: str = "") -> dict[str, str]:
    """The question template of rule 7 (Chinese sets also carry ``question_en``; debian_holdout's names the
    package's manual, ``label``)."""
    where = f'"{title}"' if section == title else f'the section "{section}" of "{title}"'
    where += f" in the {label}" if label else ""
    en = f"In {where}, which mentions {term}, what concrete fact does the documentation state?"
    if LANG[corpus] == "kernel_en":
        return {"question": en}
    zh_where = f"《{title}》" if section == title else f"《{title}》的“{section}”一节"
    return {"question": f"在{zh_where}中（提到“{term}”），文档给出了什么具体事实？", "question_en": en}


def pick(corpus: str, text: str, index: kqa.Corpus, words: frozenset[str], room: dict[Stratum, int],
         rng: random.Random) -> tuple | None:
    """One document's turn (rule 6): ``(start, span, term, stratum, distance)`` or None."""
    spans = kqa.candidates(LANG[corpus], text, words)
    rng.shuffle(spans)
    for start, span, _ in spans[:kqa.SPANS_PER_DOC]:
        terms = section_terms(corpus, text, start, span, words)
        rng.shuffle(terms)
        for term in terms:
            near = nearest(text, term, start, start + len(span))
            if near is None:
                continue
            key = (kqa.bucket(index.df(term)), near[0], near[1] >= FAR)
            if room[key] and index.unique(span):
                return start, span, term, key, near[1]
    return None


def package_quotas(corpus: str, docs: dict[str, str], size: int) -> dict[str, int]:
    """Questions per package (debian_holdout: build_debian_mix_qa's rule 4); none for the kernel sets."""
    return mqa.package_quotas(mqa.documents_per_package(docs, corpus), size) if corpus in mqa.mix.SETS else {}


def build(corpus: str, docs: dict[str, str], size: int, skip: frozenset[str] = frozenset()) -> list[dict]:
    """The items of one near set (rules 1-8), ``size`` questions, never from a document in ``skip``."""
    rng = random.Random(SEED_STRINGS[corpus])
    index = kqa.Corpus(docs)
    words = kqa.cjk_words(docs) if LANG[corpus] == "kernel_zh" else frozenset()
    room = quotas(size)
    package_room = package_quotas(corpus, docs, size)
    order = list(index.ids)
    rng.shuffle(order)
    chosen = []
    for doc_id in order:
        if not any(room.values()):
            break
        package = mqa.package_of(doc_id) if package_room else None
        if doc_id in skip or (package and not package_room[package.name]):
            continue
        picked = pick(corpus, docs[doc_id], index, words, room, rng)
        if picked is None:
            continue
        start, span, term, key, distance = picked
        room[key] -= 1
        _, _, section, title = section_bounds(docs[doc_id], start)
        item = {"doc_id": doc_id, "answer_span": span, "start": start, "end": start + len(span),
                "locate_term": term, "term_df": index.df(term), "term_bucket": key[0], "term_side": key[1],
                "term_distance": distance, "section": section, "title": title,
                **question(corpus, title, section, term, package.label if package else "")}
        if package:
            package_room[package.name] -= 1
            item["package"] = package.name
        chosen.append(item)
    unfilled = {f"{b}/{side}/{'far' if far else 'near'}": n for (b, side, far), n in room.items() if n}
    unfilled.update({p: n for p, n in package_room.items() if n})
    if unfilled:
        raise SystemExit(f"{corpus}: ran out of documents with strata left: {unfilled}")
    chosen.sort(key=lambda item: item["doc_id"])
    prefix = corpus.replace("_", "-") + "-near"
    for n, item in enumerate(chosen, 1):
        item["id"] = f"{prefix}-{n:03d}"
    return [{k: item[k] for k in KEYS if k in item} for item in chosen]


def document(corpus: str, docs: dict[str, str], items: list[dict]) -> str:
    """The QA file's text: the eval CLI's ``{corpus_sha256, items}`` with provenance (rule 8)."""
    provenance = {"source": f"Debian linux-doc-6.1 {corpora.DEB_VERSION}", "seed": SEED}
    if corpus in mqa.mix.SETS:
        corpus_set = mqa.mix.SETS[corpus]
        provenance = {"source": f"Debian bookworm, {len(corpus_set.packages)} packages: "
                                f"bench/data/{corpus_set.manifest.name}", "seed": HOLDOUT_SEED}
    data = {"corpus": corpus, "set": f"{corpus}_near", "corpus_sha256": corpora.corpus_sha256(docs),
            **provenance, "rules": "scripts/build_near_qa.py (module docstring) and bench/data/README.md",
            "question_language": "en" if LANG[corpus] == "kernel_en" else "zh (question), en (question_en)"}
    if package_room := package_quotas(corpus, docs, len(items)):
        data["package_quotas"] = package_room
    data["items"] = items
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def rule_errors(corpus: str, docs: dict[str, str], items: list[dict], size: int) -> list[str]:
    """What breaks rules 4-5 (the term outside the span, its side and distance, the strata, debian_holdout's package
    quotas) or rule 7 (the question's template), or repeats a document."""
    errors = []
    package_room = package_quotas(corpus, docs, size)
    for item in items:
        text, span, term = docs[item["doc_id"]], item["answer_span"], item["locate_term"]
        near = nearest(text, term, item["start"], item["end"])
        if term in span or near != (item["term_side"], item["term_distance"]):
            errors.append(f"{item['id']}: term {term!r} is in the span or its side/distance is not {near}")
        if kqa.bucket(sum(term in t for t in docs.values())) != item["term_bucket"]:
            errors.append(f"{item['id']}: term {term!r} is not in bucket {item['term_bucket']}")
        package = mqa.package_of(item["doc_id"]) if package_room else None
        _, _, section, title = section_bounds(text, item["start"])
        asked = question(corpus, title, section, term, package.label if package else "")
        if any(item.get(k) != v for k, v in asked.items()) or item.get("package") != (package and package.name):
            errors.append(f"{item['id']}: the question or package is not rule 7's")
    for package, n in package_room.items():
        if sum(item["package"] == package for item in items) != n:
            errors.append(f"{corpus}: package {package} does not hold its quota of {n} questions")
    counts = {key: 0 for key in quotas(size)}
    for item in items:
        counts[(item["term_bucket"], item["term_side"], item["term_distance"] >= FAR)] += 1
    if counts != quotas(size):
        errors.append(f"{corpus}: strata {counts} differ from the quotas {quotas(size)}")
    if len({i["doc_id"] for i in items}) != len(items):
        errors.append(f"{corpus}: two questions share a document")
    return errors


def size_of(corpus: str) -> int:
    """The set's number of questions (rule 5)."""
    return HOLDOUT_SIZE if corpus in mqa.mix.SETS else SIZES[corpus]


def load(corpus: str, data_dir: Path) -> dict[str, str]:
    """The set's corpus, read from its archive and checked against its manifest (rule 1)."""
    if corpus in mqa.mix.SETS:
        return mqa.mix.load_corpus(data_dir, corpus)
    return corpora.load_corpus(corpus, data_dir)


def report(corpus: str, docs: dict[str, str], data: dict) -> list[str]:
    """Check one near QA file with the repo's checker and the rules above; print its strata; return the errors."""
    qa = kqa.load_qa_check()
    items = data["items"]
    errors = qa.check_items(docs, items) + rule_errors(corpus, docs, items, size_of(corpus))
    if data["corpus_sha256"] != qa.corpus_sha256(docs):
        errors.append(f"{corpus}: corpus_sha256 differs from the corpus")
    print(f"{corpus}_near_qa.json: {len(items)} items over {len(docs):,} documents")
    for b in kqa.BUCKETS:
        for side in SIDES:
            mine = [i for i in items if i["term_bucket"] == b and i["term_side"] == side]
            far = sum(i["term_distance"] >= FAR for i in mine)
            gaps = [i["term_distance"] for i in mine]
            print(f"  bucket {b:>5}, term {side:>6} the span: {len(mine)} questions, {far} far "
                  f"(>= {FAR}), {len(mine) - far} near; distance {min(gaps, default=0)}-{max(gaps, default=0)}")
    for package, n in data.get("package_quotas", {}).items():
        print(f"  {package:>26}: {sum(i['package'] == package for i in items)} questions (quota {n})")
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=corpora.OUT_DIR, help="folder of the archives and QA files")
    parser.add_argument("--check", action="store_true", help="only validate the written QA files")
    parser.add_argument("--set", action="append", choices=sorted(LANG), dest="sets",
                        help="a corpus whose near set to write (repeatable; default: the kernel sets)")
    args = parser.parse_args(argv)
    errors = []
    for corpus in args.sets or SIZES:
        docs = load(corpus, args.data)
        path = args.data / f"{corpus}_near_qa.json"
        if not args.check:
            own_set = json.loads((args.data / f"{corpus}_qa.json").read_text(encoding="utf-8"))
            skip = frozenset(item["doc_id"] for item in own_set["items"])
            path.write_text(document(corpus, docs, build(corpus, docs, size_of(corpus), skip)), encoding="utf-8")
        errors += report(corpus, docs, json.loads(path.read_text(encoding="utf-8")))
    for error in errors:
        print(f"  error: {error}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
