"""The debian_mix held-out set (issue 33, item 1): 20,000+ documents from 15 Debian packages, 60 questions by rules.

The builders' parts are checked offline on small inputs (the man page layout, the generalised HTML converter, the
per-package quotas, the sampler on a synthetic corpus, deterministic across processes); the shipped archive and
QA file in bench/data/ against the manifest and the documented rules (skipped when the archive is absent). The
archive is read in memory, never unpacked.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_debian_mix_corpus as mix  # noqa: E402
import build_debian_mix_qa as mqa  # noqa: E402

qa_check = mqa.kqa.load_qa_check()   # evidence_lib/eval/_qa_check.py by path, as the build scripts load it
DATA = ROOT / "bench" / "data"
ARCHIVE = DATA / f"{mix.NAME}.tar.xz"
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*[A-Za-z0-9]")

# --- the builders' parts ---------------------------------------------------------------------------------------

RENDERED = """\
open(2)                       System Calls Manual                      open(2)



NAME
       open, openat - open and possibly create a file

DESCRIPTION
       The open() system call opens the file specified by pathname.

   Creation flags
       O_CREAT
              If pathname does not exist, create it as a regular file.

Linux man-pages 6.03              2023-02-05                           open(2)
"""


def test_man_text_underlines_title_sections_and_subsections():
    text = mix.man_text(RENDERED, mix.man_title("man2/open.2.gz"))
    assert text.startswith("open(2)\n=======\n\nNAME\n----\n\n       open, openat - open")
    assert "\n\nDESCRIPTION\n-----------\n\n       The open() system call" in text
    assert "\n\nCreation flags\n~~~~~~~~~~~~~~\n\n       O_CREAT\n" in text
    assert "System Calls Manual" not in text and "2023-02-05" not in text and text.endswith("regular file.\n")
    assert [h for _, h in mqa.kqa.headings(text)] == ["open(2)", "NAME", "DESCRIPTION", "Creation flags"]


def test_man_title_and_doc_ids_name_the_package():
    perl = next(p for p in mix.PACKAGES if p.prefix == "perl")
    java = next(p for p in mix.PACKAGES if p.prefix == "java")
    assert mix.man_title("man3/App::Cpan.3perl.gz") == "App::Cpan(3perl)"
    assert mix.doc_id_of(perl, "man3/App::Cpan.3perl.gz") == "perl__App--Cpan.3perl"
    assert mix.doc_id_of(java, "java.base/java/util/HashMap.html") == "java__java.base__java__util__HashMap"


def test_man_alias_is_a_lone_so_request():
    assert mix.is_alias('.\\" a comment\n.so man3/printf.3\n')
    assert not mix.is_alias(".so man3/printf.3\n.TH X 3\n")


def test_html_converter_takes_another_main_element_skips_and_classifiers():
    page = ('<body><nav>menu</nav><main role="main"><h1>Class HashMap</h1><div class="table-tabs">All Methods</div>'
            '<dl><dt><strong>axis</strong><span class="classifier">int, optional</span></dt>'
            '<dd><p>Axis along which to operate.</p></dd></dl></main><footer>x</footer></body>')
    text = mix.kc.html_to_text(page, ("main", "role", "main"), {"class": frozenset({"table-tabs"})},
                               {"classifier": " : "})
    assert text == "Class HashMap\n=============\n\naxis : int, optional\n\nAxis along which to operate.\n"
    assert mix.kc.html_to_text(page) == "\n"                 # the kernel's default root (div[role=main]) is absent


def test_is_english_counts_letters_outside_ascii():
    assert mix.is_english("The default is 10 seconds; café and naïve are fine.")
    assert not mix.is_english("默认值是十秒，最大为一百。 The default.")


def test_package_quotas_floor_then_largest_remainder():
    counts = {"a": 5000, "b": 3000, "c": 1000, "d": 150}
    room = mqa.package_quotas(counts, 20, 2)
    assert sum(room.values()) == 20 and min(room.values()) >= 2
    assert room == {"a": 9, "b": 6, "c": 3, "d": 2}           # 2 + 12 x share: 6.56, 3.93, 1.31, 0.20; .93 and .56 up
    assert mqa.package_quotas({"x": 10, "y": 10}, 5, 2) == {"x": 3, "y": 2}   # a tie: the name that sorts first
    with pytest.raises(ValueError):
        mqa.package_quotas(counts, 7, 2)


SMALL = 12
PREFIXES = ("pg", "java", "man")


def synthetic_doc(i: int) -> str:
    """A page with one fact sentence near the top and one past character 2,000, each holding a term of df 120
    (Frequent), 12 (MiddleXQ) and 1 (RareXXQ)."""
    code = chr(97 + i // 26) + chr(97 + i % 26)
    title, section = f"Page {code}", f"On {code}"
    fact = f"The limit for unit {i} is {i * 7 + 3} Frequent items per Middle{chr(97 + i % 10)}Q queue of Rare{code}Q."
    deep = f"At most {i + 40} Frequent readers wait on Middle{chr(97 + i % 10)}Q locks for Rare{code}Q here."
    filler = "\n".join(["aa bb cc dd ee ff gg hh ii jj kk ll mm nn oo pp"] * 45)
    return f"{title}\n{'=' * len(title)}\n\n{section}\n{'-' * len(section)}\n\n{fact}\n\n{filler}\n\n{deep}\n"


@pytest.fixture(scope="module")
def corpus() -> dict[str, str]:
    return {f"{PREFIXES[i % 3]}__page-{i:03d}": synthetic_doc(i) for i in range(120)}


def test_sampler_items_obey_the_rules_and_pass_the_repo_checker(corpus):
    items = mqa.build(corpus, SMALL)
    assert len(items) == SMALL
    assert qa_check.check_items(corpus, items) == []
    assert mqa.rule_errors(corpus, items, SMALL) == []
    assert {i["package"] for i in items} == {"postgresql-doc-15", "openjdk-17-doc", "manpages"}
    first = items[0]
    assert first["question"] == (f'In the section "{first["section"]}" of "{first["title"]}" in the '
                                 f'{mqa.package_of(first["doc_id"]).label}, what does the documentation say about '
                                 f'{first["locate_term"]}?')


def test_rule_errors_catch_a_wrong_bucket_and_a_repeated_document(corpus):
    items = mqa.build(corpus, SMALL)
    bad = [dict(items[0], term_bucket="<10" if items[0]["term_bucket"] != "<10" else "100+"), *items[1:]]
    assert any("has df" in e for e in mqa.rule_errors(corpus, bad, SMALL))
    twice = [*items[:-1], dict(items[-1], doc_id=items[0]["doc_id"])]
    assert any("share a document" in e for e in mqa.rule_errors(corpus, twice, SMALL))


def test_sampler_is_byte_identical_across_processes(corpus):
    program = ("import json, sys; sys.path.insert(0, sys.argv[1]); import build_debian_mix_qa as q; "
               f"d = json.load(sys.stdin); sys.stdout.write(q.document(d, q.build(d, {SMALL}), {SMALL}))")
    outputs = {subprocess.run([sys.executable, "-c", program, str(ROOT / "scripts")], input=json.dumps(corpus),
                              capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": seed},
                              ).stdout for seed in ("1", "2")}
    assert len(outputs) == 1
    assert len(json.loads(outputs.pop())["items"]) == SMALL


# --- the shipped set --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped() -> tuple[dict[str, str], dict, dict, str]:
    """(documents read from the archive in memory, manifest, QA file, the documents' corpus_sha256); skips when the
    archive is absent."""
    if not ARCHIVE.exists():
        pytest.skip(f"{ARCHIVE.name} not present")
    manifest = json.loads(mix.MANIFEST.read_text(encoding="utf-8"))
    data = json.loads((DATA / f"{mix.NAME}_qa.json").read_text(encoding="utf-8"))
    docs = mix.kc.read_archive(ARCHIVE)
    return docs, manifest, data, qa_check.corpus_sha256(docs)


def test_shipped_archive_matches_its_manifest(shipped):
    docs, manifest, _, sha = shipped
    entry = manifest["corpora"][mix.NAME]
    assert sha == entry["corpus_sha256"]
    assert mix.kc.sha256_file(ARCHIVE) == entry["archive_sha256"] and ARCHIVE.stat().st_size == entry["archive_bytes"]
    assert len(docs) == entry["documents"] >= 20_000
    pins = [(s["package"], s["version"], s["sha256"]) for s in manifest["sources"]]
    assert pins == [(p.name, p.version, p.sha256) for p in mix.PACKAGES]


def test_shipped_corpus_is_a_mix_of_packages_and_formats(shipped):
    docs, manifest, _, _ = shipped
    per_package = {p.name: 0 for p in mix.PACKAGES}
    for doc_id in docs:
        assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", doc_id) and len(doc_id) <= 128, doc_id
        per_package[mqa.package_of(doc_id).name] += 1
    assert per_package == manifest["corpora"][mix.NAME]["documents_per_package"]
    assert len(per_package) == 15 and min(per_package.values()) >= 100
    assert max(per_package.values()) <= 0.3 * len(docs)                    # no package is most of it
    kinds = {p.name: p.kind for p in mix.PACKAGES}
    man = sum(n for name, n in per_package.items() if kinds[name] == "man")
    assert 0.05 * len(docs) < man < 0.5 * len(docs)                         # neither man pages alone nor none
    assert all(mix.MIN_CHARS <= len(t.strip()) and len(t) <= mix.MAX_CHARS + 1 for t in docs.values())


def test_shipped_questions_pass_the_checker_and_the_rules(shipped):
    docs, _, data, sha = shipped
    items = data["items"]
    assert data["corpus_sha256"] == sha
    assert len(items) == mqa.SIZE == 60
    assert qa_check.check_items(docs, items) == []                          # each span once in the corpus, here
    assert mqa.rule_errors(docs, items) == []
    assert data["package_quotas"] == mqa.package_quotas(mqa.documents_per_package(docs))


def test_shipped_questions_split_by_bucket_depth_and_package(shipped):
    _, _, data, _ = shipped
    items = data["items"]
    for b in mqa.kqa.BUCKETS:
        mine = [i for i in items if i["term_bucket"] == b]
        assert len(mine) == 20 and sum(i["start"] >= 2000 for i in mine) == 10, b
    assert len({i["doc_id"] for i in items}) == 60
    assert {i["package"] for i in items} == {p.name for p in mix.PACKAGES}
    assert all(sum(i["package"] == p for i in items) >= mqa.FLOOR for p in data["package_quotas"])
    for item in items:
        term = item["locate_term"]
        assert WORD.fullmatch(term) and 4 <= len(term) <= 40 and term.lower() not in mqa.kqa.STOP_EN, term
        assert term in item["answer_span"] and item["question"].endswith(f"say about {term}?")


def test_benchmark_unpacks_and_names_the_set_like_the_kernel_sets():
    """bench/eval_compare.py knows the set (its QA file, its result file) and where --unpack writes its corpus."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_eval_compare", ROOT / "bench" / "eval_compare.py")
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    corpus, qa, out = compare.RUNS[mix.NAME]
    folder, corpora, script = compare.UNPACK[mix.NAME]
    assert Path(corpus) == folder / mix.NAME and corpora == (mix.NAME,) and (ROOT / "scripts" / script).is_file()
    assert qa == DATA / f"{mix.NAME}_qa.json" and out.name == f"eval_{mix.NAME}.json"
    assert compare.UNPACK["kernel_"][0] == compare.KERNEL
