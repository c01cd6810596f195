"""The debian_holdout held-out set (issue 33, item 1): 7,299 documents from 16 Debian packages debian_mix does not use,
60 questions by debian_mix's rules with their own seed (bench/data/README.md).

The builders' generalisation is checked offline (one set of rules, two package lists, SQLite's menu markup removed
before conversion, the set's own seed and ids); the shipped archive and QA file against the manifest and the rules
(skipped when the archive is absent), reading the archive in memory, never unpacking it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_debian_holdout_corpus as holdout_corpus  # noqa: E402
import build_debian_holdout_qa as holdout_qa  # noqa: E402
import build_debian_mix_corpus as mix  # noqa: E402
import build_debian_mix_qa as mqa  # noqa: E402

qa_check = mqa.kqa.load_qa_check()
NAME = mix.HOLDOUT
DATA = ROOT / "bench" / "data"
ARCHIVE = DATA / f"{NAME}.tar.xz"
HOLDOUT_SET = mix.SETS[NAME]

# --- the generalised builders ------------------------------------------------------------------------------------


def test_holdout_packages_share_nothing_with_debian_mix():
    mine, theirs = HOLDOUT_SET.packages, mix.SETS[mix.NAME].packages
    assert mix.SETS[mix.NAME].packages is mix.PACKAGES and HOLDOUT_SET.packages is mix.HOLDOUT_PACKAGES
    assert not {p.name for p in mine} & {p.name for p in theirs}
    assert not {p.prefix for p in mine} & {p.prefix for p in theirs}
    assert len({p.prefix for p in mine}) == len(mine)
    assert all(re.fullmatch(r"[0-9a-f]{64}", p.sha256) for p in mine)
    assert HOLDOUT_SET.manifest == DATA / f"{NAME}_corpus.json"


def test_sqlite_menus_are_stripped_before_conversion():
    """SQLite's menus never close their <li>, so skipping them by class would skip the rest of the page; they are
    removed from the source instead (without that, their links open every document)."""
    sqlite = next(p for p in mix.HOLDOUT_PACKAGES if p.prefix == "sqlite")
    page = ('<html><body><div class=nosearch><div class="menu mainmenu">\n<ul>\n<li><a href="a.html">Home</a>\n'
            '<li><a href="b.html">About</a>\n</ul>\n</div>\n<div class="menu submenu" id="submenu">\n<ul>\n'
            '<li><a href="c.html">Docs</a>\n</ul>\n</div></div>\n<h1>Limits In SQLite</h1>\n'
            '<p>The maximum length of a string is 1000000000 bytes.</p></body></html>')
    outcome, text = mix.page_text((sqlite, "limits.html", page.encode("utf-8")))
    assert outcome == "ok"
    assert text == "Limits In SQLite\n================\n\nThe maximum length of a string is 1000000000 bytes.\n"
    unstripped = mix.kc.html_to_text(page, sqlite.content, sqlite.skip, sqlite.before)
    assert unstripped.startswith("Home\n\nAbout\n\nDocs\n\n") and unstripped.endswith(text)
    skipping = mix.kc.html_to_text(page, sqlite.content, {"class": frozenset({"menu"})}, sqlite.before)
    assert "maximum length" not in skipping


def test_pins_name_the_holdout_packages(capsys):
    assert holdout_corpus.main(["--pins"]) == 0
    assert capsys.readouterr().out.split() == [f"{p.name}={p.version}" for p in mix.HOLDOUT_PACKAGES]


def synthetic(prefixes: tuple[str, ...]) -> dict[str, str]:
    """debian_mix's synthetic pages (tests/test_debian_mix.py's shape) under the given packages' prefixes."""
    docs = {}
    for i in range(120):
        code = chr(97 + i // 26) + chr(97 + i % 26)
        title, section = f"Page {code}", f"On {code}"
        fact = (f"The limit for unit {i} is {i * 7 + 3} Frequent items per Middle{chr(97 + i % 10)}Q queue "
                f"of Rare{code}Q.")
        deep = f"At most {i + 40} Frequent readers wait on Middle{chr(97 + i % 10)}Q locks for Rare{code}Q here."
        filler = "\n".join(["aa bb cc dd ee ff gg hh ii jj kk ll mm nn oo pp"] * 45)
        docs[f"{prefixes[i % len(prefixes)]}__page-{i:03d}"] = (
            f"{title}\n{'=' * len(title)}\n\n{section}\n{'-' * len(section)}\n\n{fact}\n\n{filler}\n\n{deep}\n")
    return docs


def test_holdout_sampler_has_its_own_seed_ids_and_labels():
    small = 12
    docs = synthetic(("qt", "sqlite", "openssl"))
    items = mqa.build(docs, small, NAME)
    assert len(items) == small and qa_check.check_items(docs, items) == []
    assert mqa.rule_errors(docs, items, small, NAME) == []
    assert [i["id"] for i in items] == [f"debian-holdout-{n:03d}" for n in range(1, small + 1)]
    assert {i["package"] for i in items} == {"qtbase5-doc-html", "sqlite3-doc", "libssl-doc"}
    assert all(f" in the {mqa.package_of(i['doc_id']).label}, " in i["question"] for i in items)
    data = json.loads(mqa.document(docs, items, small, NAME))
    assert (data["corpus"], data["seed"]) == (NAME, mqa.SEEDS[NAME]) and mqa.SEEDS[NAME] != mqa.SEED
    # the same documents under debian_mix's seed give another draw: the seed is the set's own
    renamed = {d.replace("qt__", "pg__").replace("sqlite__", "java__").replace("openssl__", "man__"): t
               for d, t in docs.items()}
    theirs = mqa.build(renamed, small)
    assert [i["answer_span"] for i in theirs] != [i["answer_span"] for i in items]


# --- the shipped set ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped() -> tuple[dict[str, str], dict, dict, str]:
    """(documents read from the archive in memory, manifest, QA file, the documents' corpus_sha256); skips when the
    archive is absent."""
    if not ARCHIVE.exists():
        pytest.skip(f"{ARCHIVE.name} not present")
    manifest = json.loads(HOLDOUT_SET.manifest.read_text(encoding="utf-8"))
    data = json.loads((DATA / f"{NAME}_qa.json").read_text(encoding="utf-8"))
    docs = mix.kc.read_archive(ARCHIVE)
    return docs, manifest, data, qa_check.corpus_sha256(docs)


def test_shipped_holdout_archive_matches_its_manifest(shipped):
    docs, manifest, _, sha = shipped
    entry = manifest["corpora"][NAME]
    assert manifest["name"] == NAME and sha == entry["corpus_sha256"]
    assert mix.kc.sha256_file(ARCHIVE) == entry["archive_sha256"] and ARCHIVE.stat().st_size == entry["archive_bytes"]
    assert 5_000 <= len(docs) == entry["documents"] <= 12_000
    pins = [(s["package"], s["version"], s["sha256"]) for s in manifest["sources"]]
    assert pins == [(p.name, p.version, p.sha256) for p in mix.HOLDOUT_PACKAGES]


def test_shipped_holdout_is_a_mix_no_package_or_format_dominates(shipped):
    docs, manifest, _, _ = shipped
    per_package = mqa.documents_per_package(docs, NAME)
    assert per_package == manifest["corpora"][NAME]["documents_per_package"]
    assert len(per_package) == 16 and min(per_package.values()) >= 50
    assert max(per_package.values()) <= 0.2 * len(docs)
    kinds = {p.name: p.kind for p in mix.HOLDOUT_PACKAGES}
    man = sum(n for name, n in per_package.items() if kinds[name] == "man")
    assert 0.05 * len(docs) < man < 0.5 * len(docs)
    assert all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", d) and len(d) <= 128 for d in docs)
    assert all(mix.MIN_CHARS <= len(t.strip()) and len(t) <= mix.MAX_CHARS + 1 for t in docs.values())


def test_shipped_holdout_questions_pass_the_checker_and_the_rules(shipped):
    docs, _, data, sha = shipped
    items = data["items"]
    assert data["corpus_sha256"] == sha and data["corpus"] == NAME and data["seed"] == mqa.SEEDS[NAME]
    assert len(items) == mqa.SIZE == 60
    assert qa_check.check_items(docs, items) == []
    assert mqa.rule_errors(docs, items, mqa.SIZE, NAME) == []
    assert data["package_quotas"] == mqa.package_quotas(mqa.documents_per_package(docs, NAME))
    for b in mqa.kqa.BUCKETS:
        mine = [i for i in items if i["term_bucket"] == b]
        assert len(mine) == 20 and sum(i["start"] >= mqa.kqa.DEEP for i in mine) == 10, b
    assert {i["package"] for i in items} == {p.name for p in mix.HOLDOUT_PACKAGES}
    assert [i["id"] for i in items] == [f"debian-holdout-{n:03d}" for n in range(1, 61)]


def test_shipped_holdout_questions_are_the_rules_draw(shipped):
    """The committed questions are exactly what the builder draws from the committed corpus (nothing hand-picked)."""
    docs, _, data, _ = shipped
    assert mqa.document(docs, mqa.build(docs, mqa.SIZE, NAME), mqa.SIZE, NAME) == \
        (DATA / f"{NAME}_qa.json").read_text(encoding="utf-8")


def test_benchmark_knows_the_holdout_set():
    """bench/eval_compare.py runs it (its QA file, its result file) and unpacks its corpus with the holdout script."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_eval_compare", ROOT / "bench" / "eval_compare.py")
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    corpus, qa, out = compare.RUNS[NAME]
    folder, corpora, script = compare.UNPACK[NAME]
    assert Path(corpus) == folder / NAME and corpora == (NAME,)
    assert script == Path(holdout_corpus.__file__).name and Path(holdout_qa.__file__).is_file()
    assert qa == DATA / f"{NAME}_qa.json" and out.name == f"eval_{NAME}.json"
