#!/usr/bin/env python3
"""Write the ``debian_mix`` QA set by fixed rules, before any reading flow sees it (issue 33, item 1).

    python scripts/build_debian_mix_corpus.py build/debs   # the corpus, first (its docstring says how to get the debs)
    python scripts/build_debian_mix_qa.py                  # bench/data/debian_mix_qa.json, then checks it
    python scripts/build_debian_mix_qa.py --check          # validate it with evidence_lib/eval/_qa_check.py

No reading flow, retriever or model is used or consulted: the questions come from the corpus text and the rules
below only. They are the kernel sets' rules (``scripts/build_kernel_qa.py``, whose functions are imported and used
unchanged, English variant) plus a quota per Debian package. ``--set debian_holdout``
(``scripts/build_debian_holdout_qa.py``) writes the held-out set by the same rules on its own corpus, with its own
seed (:data:`SEEDS`). The rules are the contract (also in bench/data/README.md):

1. **Corpus**: ``bench/data/debian_mix.tar.xz`` (20,831 documents from 15 Debian bookworm packages), checked
   against ``corpus_sha256`` in ``bench/data/debian_mix_corpus.json``; the QA file records that sha256.
2. **Candidate spans**: build_kernel_qa's rule 2, English: whole sentences (a sentence over 200 characters cut
   into its lines) of 20 to 200 characters, not headings, holding a concrete fact (a digit, ``CONFIG_``, an
   option, a path, or default / maximum / minimum / limit / at most / at least / up to), prose (4+ plain words;
   no ``|``, ``{``, ``}``, ``://``, no trailing ``;``, no leading ``* # % $ >``), with at least one candidate
   term, and occurring exactly once in the whole corpus (checked when chosen).
3. **Candidate terms** (``locate_term``): build_kernel_qa's rule 3, English: words matching
   ``[A-Za-z][A-Za-z0-9_]*[A-Za-z0-9]`` of 4 to 40 characters, not stop words. Document frequency (df) =
   documents containing the term literally (case-sensitive). Buckets ``100+``, ``10-99``, ``<10``.
4. **Quotas**: :data:`SIZE` = 60 questions, a third per bucket (20 each); within a bucket half the spans (10)
   start at or past character 2,000 of their document ("deep"), half before. Per package (the doc_id's prefix,
   ``pg__...`` is postgresql-doc-15): :data:`FLOOR` questions each, and the remaining ones in proportion to the
   package's documents by largest remainder (exact integer arithmetic; a tie goes to the package with more
   documents, then to the name that sorts first). At most one question per document.
5. **Sampler** (seed :data:`SEED` = 33, the issue; ``random.Random(f"debian-mix-qa:debian_mix:33")``):
   documents in sorted doc_id order are shuffled; a document whose package has no room left is passed over;
   otherwise its candidate spans (document order) are shuffled and at most 6 tried; for each span its distinct
   terms (sorted) are shuffled and the first term whose (bucket, deep) stratum still has room is taken, if the
   span is unique in the corpus. The first accepted span ends the document's turn. Sampling stops when every
   quota is full; a quota that cannot be filled stops the build with its name.
6. **Questions** (a template, never edited by hand): the page title is the document's first underlined heading
   (its first line when it has none), the section the nearest heading before the span (leading section numbers
   removed), the source the package's label (``PostgreSQL 15 documentation``):
   ``In the section "<section>" of "<title>" in the <source>, what does the documentation say about <term>?``
   (``In "<title>" in the <source>, ...`` when the span comes before any heading but the title).
7. **Output**: items sorted by doc_id and numbered ``debian-mix-001`` ...; each holds the checker's keys (``id,
   question, doc_id, answer_span, start, end, locate_term``) and ``package``, ``term_df``, ``term_bucket``,
   ``section``, ``title``. JSON with ``ensure_ascii=False``, indent 2; byte-identical across runs.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_debian_mix_corpus as mix  # noqa: E402
import build_kernel_qa as kqa  # noqa: E402

#: Each set's sampler seed (rule 5): debian_mix's is the issue's number; debian_holdout's another, fixed before its
#: questions were written.
SEEDS = {mix.NAME: 33, mix.HOLDOUT: 333}
SEED = SEEDS[mix.NAME]
SIZE = 60
FLOOR = 2
LANG = "kernel_en"     # build_kernel_qa's English rules (fact words, term grammar, stop words)
KEYS = ("id", "question", "doc_id", "package", "answer_span", "start", "end", "locate_term", "term_df",
        "term_bucket", "section", "title")
PACKAGE_OF_PREFIX = {p.prefix: p for corpus_set in mix.SETS.values() for p in corpus_set.packages}

Stratum = tuple[str, bool]   # (bucket, deep)


def package_of(doc_id: str) -> mix.Package:
    return PACKAGE_OF_PREFIX[mix.package_of(doc_id)]


def package_quotas(counts: dict[str, int], size: int = SIZE, floor: int = FLOOR) -> dict[str, int]:
    """Questions per package (rule 4): ``floor`` each, the rest by largest remainder in proportion to ``counts``."""
    rest, total = size - floor * len(counts), sum(counts.values())
    if rest < 0:
        raise ValueError(f"{len(counts)} packages need {floor * len(counts)} questions, more than {size}")
    room = {p: floor + rest * c // total for p, c in counts.items()}
    by_remainder = sorted(counts, key=lambda p: (-(rest * counts[p] % total), -counts[p], p))
    for p in by_remainder[: size - sum(room.values())]:
        room[p] += 1
    return room


def documents_per_package(docs: dict[str, str], name: str = mix.NAME) -> dict[str, int]:
    counts = {p.name: 0 for p in mix.SETS[name].packages}
    for doc_id in docs:
        counts[package_of(doc_id).name] += 1
    return {p: n for p, n in counts.items() if n}


def title_and_section(text: str, start: int) -> tuple[str, str]:
    """The page title and the section holding ``start`` (rule 6; build_kernel_qa's rule 6)."""
    heads = kqa.headings(text)
    title = heads[0][1] if heads else text.strip().split("\n")[0]
    before = [h for at, h in heads if at < start]
    return title, before[-1] if before else title


def question(label: str, title: str, section: str, term: str) -> str:
    """The question template of rule 6."""
    where = f'"{title}"' if section == title else f'the section "{section}" of "{title}"'
    return f"In {where} in the {label}, what does the documentation say about {term}?"


class Sampler:
    """One pass over the shuffled documents (rule 5), filling the (bucket, deep) and package quotas."""

    def __init__(self, docs: dict[str, str], size: int = SIZE, name: str = mix.NAME) -> None:
        self.docs = docs
        self.name = name
        self.index = kqa.Corpus(docs)
        self.rng = random.Random(f"{dashed(name)}-qa:{name}:{SEEDS[name]}")
        self.room: dict[Stratum, int] = kqa.quotas(size)
        self.package_room = package_quotas(documents_per_package(docs, name), size)
        self._unique: dict[str, bool] = {}

    def unique(self, span: str) -> bool:
        if span not in self._unique:
            self._unique[span] = self.index.unique(span)
        return self._unique[span]

    def pick(self, text: str) -> tuple[int, str, str, Stratum] | None:
        """One document's turn: ``(start, span, term, stratum)`` or None."""
        spans = kqa.candidates(LANG, text)
        self.rng.shuffle(spans)
        for start, span, terms in spans[:kqa.SPANS_PER_DOC]:
            terms = list(terms)
            self.rng.shuffle(terms)
            for term in terms:
                key = (kqa.bucket(self.index.df(term)), start >= kqa.DEEP)
                if self.room[key] and self.unique(span):
                    return start, span, term, key
        return None

    def run(self) -> list[dict]:
        order = list(self.index.ids)
        self.rng.shuffle(order)
        chosen = []
        for doc_id in order:
            if not any(self.room.values()):
                break
            package = package_of(doc_id)
            if not self.package_room[package.name]:
                continue
            picked = self.pick(self.docs[doc_id])
            if picked is None:
                continue
            start, span, term, key = picked
            self.room[key] -= 1
            self.package_room[package.name] -= 1
            title, section = title_and_section(self.docs[doc_id], start)
            chosen.append({"doc_id": doc_id, "package": package.name, "answer_span": span, "start": start,
                           "end": start + len(span), "locate_term": term, "term_df": self.index.df(term),
                           "term_bucket": key[0], "section": section, "title": title,
                           "question": question(package.label, title, section, term)})
        unfilled = {f"{b}/{'deep' if deep else 'shallow'}": n for (b, deep), n in self.room.items() if n}
        unfilled.update({p: n for p, n in self.package_room.items() if n})
        if unfilled:
            raise SystemExit(f"{self.name}: ran out of documents with quotas left: {unfilled}")
        chosen.sort(key=lambda item: item["doc_id"])
        for n, item in enumerate(chosen, 1):
            item["id"] = f"{dashed(self.name)}-{n:03d}"
        return [{k: item[k] for k in KEYS} for item in chosen]


def dashed(name: str) -> str:
    """``debian_mix`` -> ``debian-mix``: the seed's and the item ids' spelling of a set's name."""
    return name.replace("_", "-")


def build(docs: dict[str, str], size: int = SIZE, name: str = mix.NAME) -> list[dict]:
    """The items of the set (rules 1-7)."""
    return Sampler(docs, size, name).run()


def document(docs: dict[str, str], items: list[dict], size: int = SIZE, name: str = mix.NAME) -> str:
    """The QA file's text: the eval CLI's ``{corpus_sha256, items}`` with provenance (rule 7)."""
    corpus_set = mix.SETS[name]
    data = {"corpus": name, "corpus_sha256": mix.kc.corpus_sha256(docs),
            "source": f"Debian bookworm, {len(corpus_set.packages)} packages: bench/data/{corpus_set.manifest.name}",
            "seed": SEEDS[name], "rules": "scripts/build_debian_mix_qa.py (module docstring) and bench/data/README.md",
            "question_language": "en", "package_quotas": package_quotas(documents_per_package(docs, name), size),
            "items": items}
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def rule_errors(docs: dict[str, str], items: list[dict], size: int = SIZE, name: str = mix.NAME) -> list[str]:
    """What breaks rules 2-6: the span is a candidate and its term one of its terms, the df bucket, the quotas,
    the question's template, one question per document."""
    errors = []
    index = kqa.Corpus(docs)
    for item in items:
        text, start, span, term = docs[item["doc_id"]], item["start"], item["answer_span"], item["locate_term"]
        package = package_of(item["doc_id"])
        found = {(at, s): terms for at, s, terms in kqa.candidates(LANG, text)}
        if term not in found.get((start, span), ()):
            errors.append(f"{item['id']}: ({start}, {span!r}) with {term!r} is not a candidate of rules 2-3")
        df = index.df(term)
        if (df, kqa.bucket(df)) != (item["term_df"], item["term_bucket"]):
            errors.append(f"{item['id']}: term {term!r} has df {df}, not {item['term_df']} ({item['term_bucket']})")
        title, section = title_and_section(text, start)
        if item["question"] != question(package.label, title, section, term) or item["package"] != package.name:
            errors.append(f"{item['id']}: the question or package is not rule 6's")
    strata = {key: 0 for key in kqa.quotas(size)}
    packages = {p: 0 for p in documents_per_package(docs, name)}
    for item in items:
        strata[(item["term_bucket"], item["start"] >= kqa.DEEP)] += 1
        packages[item["package"]] += 1
    if strata != kqa.quotas(size):
        errors.append(f"{name}: strata {strata} differ from the quotas {kqa.quotas(size)}")
    if packages != package_quotas(documents_per_package(docs, name), size):
        errors.append(f"{name}: questions per package {packages} differ from rule 4's")
    if len({i["doc_id"] for i in items}) != len(items):
        errors.append(f"{name}: two questions share a document")
    return errors


def report(docs: dict[str, str], data: dict) -> list[str]:
    """Check the QA file with the repo's checker and the rules above; print its split; return the errors."""
    qa = kqa.load_qa_check()
    items, name = data["items"], data["corpus"]
    errors = qa.check_items(docs, items) + rule_errors(docs, items, len(items), name)
    if data["corpus_sha256"] != qa.corpus_sha256(docs):
        errors.append(f"{name}: corpus_sha256 differs from the corpus")
    print(f"{name}_qa.json: {len(items)} items over {len(docs):,} documents")
    for b in kqa.BUCKETS:
        mine = [i for i in items if i["term_bucket"] == b]
        dfs = [i["term_df"] for i in mine]
        print(f"  bucket {b:>5}: {len(mine)} questions, df {min(dfs, default=0)}-{max(dfs, default=0)}, "
              f"{sum(i['start'] >= kqa.DEEP for i in mine)} deep")
    for package, n in data["package_quotas"].items():
        got = sum(i["package"] == package for i in items)
        print(f"  {package:>24}: {got} questions (quota {n})")
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=mix.OUT_DIR, help="folder of the archive and QA file")
    parser.add_argument("--check", action="store_true", help="only validate the written QA file")
    parser.add_argument("--set", default=mix.NAME, choices=sorted(mix.SETS), help="which set (default %(default)s)")
    args = parser.parse_args(argv)
    docs = mix.load_corpus(args.data, args.set)
    path = args.data / f"{args.set}_qa.json"
    if not args.check:
        path.write_text(document(docs, build(docs, SIZE, args.set), SIZE, args.set), encoding="utf-8")
    errors = report(docs, json.loads(path.read_text(encoding="utf-8")))
    for error in errors:
        print(f"  error: {error}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
