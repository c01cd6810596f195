#!/usr/bin/env python3
"""Write QA sets over the kernel documentation corpora by fixed rules, before any reading flow sees them (issue 25).

    python scripts/build_kernel_corpora.py /path/to/linux-doc-6.1_6.1.192-3_all.deb   # the corpora, first
    python scripts/build_kernel_qa.py            # bench/data/kernel_en_qa.json and bench/data/kernel_zh_qa.json
    python scripts/build_kernel_qa.py --check    # validate both files with evidence_lib/eval/_qa_check.py

No reading flow, retriever or model is used or consulted: the questions come from the corpus text and the rules
below only. The rules are the contract (also in bench/data/README.md):

1. **Corpus**: ``bench/data/<corpus>.tar.xz``, checked against ``corpus_sha256`` in
   ``bench/data/kernel_corpora.json``; the QA file records that sha256 (the eval CLI refuses other text).
2. **Candidate spans**: each document is cut into paragraphs at blank lines; heading paragraphs (a line
   underlined with ``=``, ``-`` or ``~``) are skipped. A paragraph is cut into sentences after ``.``, ``!`` or
   ``?`` followed by white space, and after ``。``, ``！`` or ``？``; a sentence longer than 200 characters is cut
   into its lines. Each piece is stripped of surrounding white space. A candidate is a piece that
   (a) has 20 to 200 characters; (b) holds a concrete fact: a digit, a ``CONFIG_`` symbol, an option
   (``-x``, ``--name``), a path (``/a/b``), or one of the words default, maximum, minimum, limit, at most,
   at least, up to (kernel_zh also 默认, 最大, 最小, 上限, 下限, 至少, 至多, 不超过, 限制); (c) is prose:
   kernel_en at least 4 plain words (2+ Latin letters between white space, one trailing ``,.:;)`` allowed),
   kernel_zh at least 4 CJK characters; and it neither holds ``|``, ``{``, ``}`` or ``://``, nor ends with
   ``;``, nor starts with ``*``, ``#``, ``%``, ``$`` or ``>`` (table rows, code, URLs, prompts); (d) holds at least one
   candidate term (rule 3). A chosen span must also occur exactly once in the whole corpus (every document,
   overlapping occurrences counted), checked when it is chosen.
3. **Candidate terms** (the ``locate_term``), literal substrings of the span: kernel_en: words matching
   ``[A-Za-z][A-Za-z0-9_]*[A-Za-z0-9]`` of 4 to 40 characters, not in the stop-word list :data:`STOP_EN`
   (compared lower-cased); kernel_zh: substrings of 2 to 6 CJK ideographs of the span's CJK runs that occur
   as a whole run (bounded by non-CJK characters, after joining a line break between two ideographs) in at
   least two documents (the corpus's own evidence that they are words, e.g. 默认 but not 默认行; so kernel_zh's
   ``<10`` bucket holds df 2 to 9) and neither start nor end with one of the function characters
   :data:`STOP_ZH`. A term's document frequency (df) is the number of documents that contain
   it literally (case-sensitive, ``term in text``, what a literal locate or grep finds). Buckets: ``100+``
   (df >= 100), ``10-99``, ``<10`` (1 to 9).
4. **Quotas**: a third of the questions per bucket (kernel_en 60: 20 each; kernel_zh 45: 15 each); within a
   bucket ceil(n/2) spans start at or past character 2,000 of their document ("deep") and the rest before it.
   At most one question per document.
5. **Sampler** (seed :data:`SEED`, ``random.Random(f"kernel-qa:{corpus}:{SEED}")``): documents in sorted
   doc_id order are shuffled; for each document in turn its candidate spans (in document order) are shuffled and
   at most :data:`SPANS_PER_DOC` tried; for each span its distinct terms (sorted) are shuffled and the first term
   whose (bucket, deep or not) stratum still has room is taken, if the span is unique in the corpus. The first
   accepted span ends the document's turn. Sampling stops when every stratum is full.
6. **Questions** (a template, never edited by hand): the page title is the document's first heading, the section
   the nearest heading before the span (leading section numbers such as ``3.1.`` removed). kernel_en:
   ``In the section "<section>" of "<title>", what does the documentation say about <term>?`` (``In "<title>",
   ...`` when the span comes before any heading but the title). kernel_zh: the question is Chinese,
   ``在《<title>》的“<section>”一节中，文档关于“<term>”说了什么？`` (``在《<title>》中，...``), and ``question_en``
   holds the English template with the same (Chinese) title, section and term.
7. **Output**: items sorted by doc_id and numbered ``kernel-en-001`` ...; each holds the checker's keys (``id,
   question, doc_id, answer_span, start, end, locate_term``) and ``term_df``, ``term_bucket``, ``section``,
   ``title`` (and ``question_en`` for kernel_zh). JSON with ``ensure_ascii=False``, indent 2, sorted item keys
   in a fixed order; the output is byte-identical across runs.
"""

from __future__ import annotations

import argparse
import bisect
import importlib.util
import json
import math
import random
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_kernel_corpora as corpora  # noqa: E402

SEED = 25
SPANS_PER_DOC = 6
DEEP = 2000
MIN_SPAN, MAX_SPAN = 20, 200
SIZES = {"kernel_en": 60, "kernel_zh": 45}
BUCKETS = ("100+", "10-99", "<10")

STOP_EN = frozenset("""
about above after again against also although always among another anything because been before being below
between both cannot could does doing done down during each either else enough even every from further given
have having here into itself just least less like made make makes many more most much must need needs never
none only other others ought over same shall should since some such than that their them then there these
they this those through thus under until upon very want were what when where whether which while will with
within without would your yours also there's it's doesn't don't isn't used uses using usually instead still
""".split())
STOP_ZH = set("的了是在和与或及将被把对从而也都就这那个们该其之一不如若则但并所于为让我你他它此等即已还再又很更着过吗呢吧啊")

_HEADING = re.compile(r"(?P<title>[^\n]+)\n(?P<rule>=+|-+|~+)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_FACT_EN = (r"\d|CONFIG_\w|(?<![\w-])--?[A-Za-z][\w-]*|(?<![\w.])/(?:[\w.-]+/)+[\w.-]*"
            r"|\b(?:[Dd]efaults?|[Mm]aximum|[Mm]inimum|[Ll]imits?|[Aa]t most|[Aa]t least|[Uu]p to)\b")
FACT = {"kernel_en": re.compile(_FACT_EN),
        "kernel_zh": re.compile(_FACT_EN + "|默认|最大|最小|上限|下限|至少|至多|不超过|限制")}
_WORD_EN = re.compile(r"[A-Za-z][A-Za-z0-9_]*[A-Za-z0-9]")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")
_NOT_PROSE = re.compile(r"[|{}]|://|;$|^[*#%$>]")   # table rows, code, URLs, comments and prompts
_PLAIN_WORD = re.compile(r"(?<!\S)[A-Za-z]{2,}[,.:;)]?(?!\S)")
_CJK_WRAP = re.compile(r"(?<=[\u3400-\u4dbf\u4e00-\u9fff])[^\S\n]*\n[^\S\n]*(?=[\u3400-\u4dbf\u4e00-\u9fff])")
_SECTION_NUMBER = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[A-Z](?:\.\d+)*\.)\s+")


def paragraphs(text: str):
    """``(start, paragraph)`` for each run of text between blank lines."""
    pos = 0
    for block in text.split("\n\n"):
        if block.strip():
            yield pos, block
        pos += len(block) + 2


def headings(text: str) -> list[tuple[int, str]]:
    """``(start, heading without section number)`` for every underlined heading paragraph, in order."""
    found = []
    for start, block in paragraphs(text):
        m = _HEADING.fullmatch(block)
        if m and len(m["rule"]) == len(m["title"]):
            found.append((start, _SECTION_NUMBER.sub("", m["title"]).strip() or m["title"]))
    return found


def pieces(start: int, block: str):
    """``(start, piece)``: the block's sentences, and the lines of a sentence over MAX_SPAN characters."""
    pos = 0
    for m in list(_SENTENCE_END.finditer(block)) + [None]:
        end = m.start() if m else len(block)
        sentence = block[pos:end]
        parts = [(pos, sentence)]
        if len(sentence.strip()) > MAX_SPAN:
            parts, at = [], pos
            for line in sentence.split("\n"):
                parts.append((at, line))
                at += len(line) + 1
        for at, part in parts:
            stripped = part.strip()
            if stripped:
                yield start + at + (len(part) - len(part.lstrip())), stripped
        pos = m.end() if m else len(block)


def cjk_words(docs: dict[str, str]) -> frozenset[str]:
    """kernel_zh's vocabulary: the whole CJK runs of 2-6 ideographs (bounded by non-CJK characters, a line break
    between two ideographs joined first) that occur in at least two documents."""
    seen: dict[str, int] = {}
    for text in docs.values():
        for run in set(_CJK_RUN.findall(_CJK_WRAP.sub("", text))):
            if 2 <= len(run) <= 6:
                seen[run] = seen.get(run, 0) + 1
    return frozenset(run for run, n in seen.items() if n >= 2)


def terms_of(corpus: str, span: str, words: frozenset[str] = frozenset()) -> list[str]:
    """The span's candidate terms (rule 3), sorted."""
    if corpus == "kernel_en":
        found = (w for w in _WORD_EN.findall(span) if 4 <= len(w) <= 40 and w.lower() not in STOP_EN)
    else:
        found = (run[i:j] for run in _CJK_RUN.findall(span) for i in range(len(run))
                 for j in range(i + 2, min(i + 6, len(run)) + 1)
                 if run[i:j] in words and run[i] not in STOP_ZH and run[j - 1] not in STOP_ZH)
    return sorted(set(found))


def candidates(corpus: str, text: str, words: frozenset[str] = frozenset()) -> list[tuple[int, str, list[str]]]:
    """``(start, span, terms)`` for every candidate span of one document (rule 2), in document order."""
    found = []
    for start, block in paragraphs(text):
        m = _HEADING.fullmatch(block)
        if m and len(m["rule"]) == len(m["title"]):
            continue
        for at, span in pieces(start, block):
            if not MIN_SPAN <= len(span) <= MAX_SPAN or not FACT[corpus].search(span) or _NOT_PROSE.search(span):
                continue
            prose = len(_PLAIN_WORD.findall(span)) >= 4 if corpus == "kernel_en" else len(_CJK.findall(span)) >= 4
            terms = terms_of(corpus, span, words)
            if prose and terms:
                assert text[at:at + len(span)] == span
                found.append((at, span, terms))
    return found


class Corpus:
    """The documents, joined once for uniqueness and document-frequency look-ups.

    Joined as UTF-8 bytes: a UTF-8 needle matches only at character boundaries, so every count equals the text's,
    and a corpus holding one character past U+FFFF would otherwise be a string of 4 bytes per character.
    """

    def __init__(self, docs: dict[str, str]) -> None:
        self.ids = sorted(docs)
        self.docs = docs
        encoded = [docs[d].encode("utf-8") for d in self.ids]
        self.big = b"\x00".join(encoded)   # no span or term holds U+0000
        self.starts, pos = [], 0
        for data in encoded:
            self.starts.append(pos)
            pos += len(data) + 1
        self._df: dict[str, int] = {}

    def unique(self, span: str) -> bool:
        needle = span.encode("utf-8")
        first = self.big.find(needle)
        return first >= 0 and self.big.find(needle, first + 1) < 0

    def df(self, term: str) -> int:
        """Documents holding ``term`` literally."""
        if term not in self._df:
            needle = term.encode("utf-8")
            count, pos = 0, self.big.find(needle)
            while pos >= 0:
                count += 1
                k = bisect.bisect_right(self.starts, pos)          # the document after the one holding pos
                if k >= len(self.starts):
                    break
                pos = self.big.find(needle, self.starts[k])
            self._df[term] = count
        return self._df[term]


def bucket(df: int) -> str:
    return "100+" if df >= 100 else "10-99" if df >= 10 else "<10"


def question(corpus: str, title: str, section: str, term: str) -> dict[str, str]:
    same = section == title
    en = (f'In "{title}", what does the documentation say about {term}?' if same else
          f'In the section "{section}" of "{title}", what does the documentation say about {term}?')
    if corpus == "kernel_en":
        return {"question": en}
    zh = f"在《{title}》中，文档关于“{term}”说了什么？" if same else \
        f"在《{title}》的“{section}”一节中，文档关于“{term}”说了什么？"
    return {"question": zh, "question_en": en}


def quotas(n: int) -> dict[tuple[str, bool], int]:
    per = n // len(BUCKETS)
    deep = math.ceil(per / 2)
    return {(b, d): (deep if d else per - deep) for b in BUCKETS for d in (True, False)}


def build(corpus: str, docs: dict[str, str]) -> list[dict]:
    rng = random.Random(f"kernel-qa:{corpus}:{SEED}")
    index = Corpus(docs)
    words = cjk_words(docs) if corpus == "kernel_zh" else frozenset()
    room = quotas(SIZES[corpus])
    order = list(index.ids)
    rng.shuffle(order)
    chosen = []
    for doc_id in order:
        if not any(room.values()):
            break
        text = docs[doc_id]
        spans = candidates(corpus, text, words)
        rng.shuffle(spans)
        picked = None
        for start, span, terms in spans[:SPANS_PER_DOC]:
            terms = list(terms)
            rng.shuffle(terms)
            for term in terms:
                key = (bucket(index.df(term)), start >= DEEP)
                if room[key] and index.unique(span):
                    picked = (start, span, term, key)
                    break
            if picked:
                break
        if not picked:
            continue
        start, span, term, key = picked
        room[key] -= 1
        heads = headings(text)
        title = heads[0][1] if heads else text.strip().split("\n")[0]
        before = [h for at, h in heads if at < start]
        section = before[-1] if before else title
        chosen.append({"doc_id": doc_id, "answer_span": span, "start": start, "end": start + len(span),
                       "locate_term": term, "term_df": index.df(term), "term_bucket": key[0],
                       "section": section, "title": title, **question(corpus, title, section, term)})
    if any(room.values()):
        raise SystemExit(f"{corpus}: ran out of documents with strata left: {room}")
    chosen.sort(key=lambda item: item["doc_id"])
    prefix = corpus.replace("_", "-")
    keys = ("id", "question", "question_en", "doc_id", "answer_span", "start", "end", "locate_term", "term_df",
            "term_bucket", "section", "title")
    items = []
    for n, item in enumerate(chosen, 1):
        item["id"] = f"{prefix}-{n:03d}"
        items.append({k: item[k] for k in keys if k in item})
    return items


def load_qa_check():
    """evidence_lib/eval/_qa_check.py loaded from its file, as scripts/check_qa.py does."""
    spec = importlib.util.spec_from_file_location("_evidence_qa_check", ROOT / "evidence_lib" / "eval" / "_qa_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def report(corpus: str, docs: dict[str, str], data: dict) -> list[str]:
    """Check one QA file with the repo's checker; print its buckets; return the errors."""
    qa = load_qa_check()
    items = data["items"]
    errors = qa.check_items(docs, items)
    if data["corpus_sha256"] != qa.corpus_sha256(docs):
        errors.append(f"{corpus}: corpus_sha256 differs from the corpus")
    if len({i["doc_id"] for i in items}) != len(items):
        errors.append(f"{corpus}: two questions share a document")
    s = qa.summarize(docs, items)
    print(f"{corpus}_qa.json: {s['items']} items over {len(docs):,} documents, {s['docs_covered']} documents "
          f"covered, {s['deep_spans']} spans past character {DEEP:,}")
    for b in BUCKETS:
        mine = [i for i in items if i["term_bucket"] == b]
        dfs = [sum(i["locate_term"] in t for t in docs.values()) for i in mine]
        if any(bucket(d) != b for d in dfs):
            errors.append(f"{corpus}: a term in bucket {b} has another document frequency")
        deep = sum(i["start"] >= DEEP for i in mine)
        print(f"  bucket {b:>5}: {len(mine)} questions, df {min(dfs)}-{max(dfs)}, {deep} deep, "
              f"span length {min(len(i['answer_span']) for i in mine)}-{max(len(i['answer_span']) for i in mine)}")
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=corpora.OUT_DIR, help="folder of the archives and QA files")
    parser.add_argument("--check", action="store_true", help="only validate the written QA files")
    args = parser.parse_args(argv)
    errors = []
    for corpus in SIZES:
        docs = corpora.load_corpus(corpus, args.data)
        path = args.data / f"{corpus}_qa.json"
        if not args.check:
            data = {"corpus": corpus, "corpus_sha256": corpora.corpus_sha256(docs),
                    "source": f"Debian linux-doc-6.1 {corpora.DEB_VERSION}", "seed": SEED,
                    "rules": "scripts/build_kernel_qa.py (module docstring) and bench/data/README.md",
                    "question_language": "en" if corpus == "kernel_en" else "zh (question), en (question_en)",
                    "items": build(corpus, docs)}
            path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        errors += report(corpus, docs, json.loads(path.read_text(encoding="utf-8")))
    for error in errors:
        print(f"  error: {error}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
