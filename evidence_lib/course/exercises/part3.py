"""Workshop part 3: citations and failure scenarios (notebooks 03 and 04).

Exercises: q1 cite a sentence from a page (a function the checker runs on sessions no notebook prints), q2 say
why each citation fails, q3 find a keyword that locates the answer (scenario 3, keyword miss), q4 spot the entries
a manifest leaks (scenario 5). Used by ``notebooks/exercises/workshop_part3.ipynb``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from functools import cache
from typing import Any

from ..._access import Access, Principal
from ..._citations import REASONS, Citation, verify_citation
from ..._documents import Document
from ..._errors import EvidenceError
from ..._index import EvidenceIndex, sha256_hex
from ..._ledger import Ledger
from ..._tools import evidence_tools
from ..article import ANSWER, ANSWER_DOC_ID, QUESTION, article_corpus
from ._shared import cut, kept_index, show, temp_index, unlimited, variant_corpus
from .core import Exercise, NotAttempted, Result, ____, call, correct, incorrect

__all__ = ["CITATION_CASES", "MISSED_TERM", "READ_ARGS", "citation_cases", "naive_manifest", "q1", "q2", "q3",
           "q4", "run_session", "tenant_documents", "viewer"]

_READ_START = 4300
#: The session's one read: from a little before the hit to the end of d03.
READ_ARGS = {"doc_id": ANSWER_DOC_ID, "offset": _READ_START, "limit": 300}
#: 每批最多 "at most per batch": the question's own words (from QUESTION), which the notes never use.
MISSED_TERM = "每批最多"
assert MISSED_TERM in QUESTION


def run_session(tools: Iterable[Any]) -> dict[str, Any]:
    """The agent's session for this part: search, locate 单批上限, one read with :data:`READ_ARGS`.

    Returns the page. With a ledger bound into ``tools`` the read is recorded.
    """
    search, locate, read = tools
    search.invoke({"query": "批处理上限"})
    locate.invoke({"term": "单批上限"})
    return json.loads(read.invoke(READ_ARGS))


@contextmanager
def _session() -> Iterator[tuple[EvidenceIndex, Ledger, dict[str, Any]]]:
    """(index, ledger, page) after :func:`run_session` on a fresh index of the article's corpus."""
    with temp_index() as index:
        ledger = Ledger(unlimited())
        page = run_session(evidence_tools(index, ledger=ledger))
        yield index, ledger, page


def _answer_range() -> tuple[int, int]:
    text = next(d for d in article_corpus() if d.doc_id == ANSWER_DOC_ID).text
    start = text.index(ANSWER)
    return start, start + len(ANSWER)


# -- q1 · cite the answer sentence -----------------------------------------------------------------------

_CITATION_FIELDS = ("doc_id", "revision", "start", "end", "sha256")
#: q1's edited answer (a corpus no notebook shows): "At most 300 items per batch; the timeout is 45 seconds."
_EDITED_ANSWER = "单批上限为300条，超时设为45秒。"


def _edited_corpus() -> list[Document]:
    """The article's corpus after an edit no notebook shows: d03 says 300 and 45 seconds, revision 2026-12-01."""
    return [replace(d, revision="2026-12-01", text=d.text.replace(ANSWER, _EDITED_ANSWER))
            if d.doc_id == ANSWER_DOC_ID else d for d in article_corpus()]


@cache
def _cite_cases() -> tuple[tuple[str, str, dict[str, Any]], ...]:
    """(label, sentence, read arguments; "before" counts back from the located hit): the notebook's session first."""
    return (
        ("the notebook's session", ANSWER, dict(READ_ARGS)),
        ("a read of d03 from offset 4000", ANSWER, {"doc_id": ANSWER_DOC_ID, "offset": 4000, "limit": 800}),
        ("a session on other candidates, the answer in the middle of a shorter d03", ANSWER, {"before": 150,
                                                                                            "limit": 300}),
        ("a session after d03 was edited (revision 2026-12-01)", _EDITED_ANSWER, {"before": 40, "limit": 200}),
    )


def _cite_corpus(i: int) -> list[Document]:
    return [article_corpus(), article_corpus(), variant_corpus("q3.1", 7, answer_at="middle"), _edited_corpus()][i]


@cache
def _cite_session(i: int) -> tuple[EvidenceIndex, Ledger, dict[str, Any]]:
    """Case ``i``'s index, ledger and page: search, locate 单批上限, one read (kept for the process: read-only)."""
    index = kept_index(f"part3-q1-{i}", _cite_corpus(i))
    ledger = Ledger(unlimited())
    search, locate, read = evidence_tools(index, ledger=ledger)
    search.invoke({"query": "批处理上限"})
    hit = json.loads(locate.invoke({"term": "单批上限"}))[0]
    args = _cite_cases()[i][2]
    if "before" in args:
        args = {"doc_id": hit["doc_id"], "offset": max(hit["offset"] - args["before"], 0), "limit": args["limit"]}
    return index, ledger, json.loads(read.invoke(args))


def _check_citation(cite_sentence: Any) -> Result:
    if not callable(cite_sentence):
        return incorrect(f"cite_sentence should be a function of (page, sentence), got {show(cite_sentence)}")
    first = None
    for i, (label, sentence, _) in enumerate(_cite_cases()):
        index, ledger, page = _cite_session(i)
        answer = call(cite_sentence, dict(page), sentence, name="cite_sentence")
        where = f"for {label}"
        if isinstance(answer, Mapping):
            return incorrect("a citation is a Citation object, not a dict: use Citation(...) or "
                             "Citation.from_page(...)")
        if not isinstance(answer, Citation):
            return incorrect(f"cite_sentence should return a Citation, got {show(answer)} {where}")
        if any(getattr(answer, f) is ____ for f in _CITATION_FIELDS):
            raise NotAttempted
        start = page["start"] + page["text"].index(sentence)
        end = start + len(sentence)
        want = (page["doc_id"], page["revision"], start, end)
        first = first or want
        got = (answer.doc_id, answer.revision, answer.start, answer.end)
        check = verify_citation(index, answer, ledger)
        if check.ok and got == want:
            continue
        if not check.ok and got[0] == want[0] and got[2:] == want[2:] and answer.revision != page["revision"]:
            return incorrect(f"verify_citation says {check.reason} {where}: the page says revision "
                             f"{page['revision']}, your citation {answer.revision}; take the revision and the sha256 "
                             "from the page, never from another read")
        if not check.ok and i > 0 and got == first:
            return incorrect(f"your function returns {answer} {where}, the citation of the notebook's session, but "
                             f"the page it was given is {page['doc_id']}@{page['revision']} [{page['start']}, "
                             f"{page['end']}): verify_citation says {check.reason}. Take doc_id, revision, sha256 "
                             "and offsets from the page (a citation copied from an output cannot pass)")
        if not check.ok and check.reason == "document_changed" and answer.sha256 != page["sha256"]:
            said = "has no sha256" if not answer.sha256 else f"has sha256 {cut(str(answer.sha256), 20)}"
            return incorrect(f"verify_citation says document_changed {where}, but the document did not change: your "
                             f"citation {said}, the page's is {page['sha256'][:12]}... A citation names the exact "
                             "bytes it quotes: take the sha256 (and the revision) from the page, or let "
                             "Citation.from_page fill them in")
        if not check.ok:
            if check.reason == "never_read" and (answer.start, answer.end) == (start - page["start"],
                                                                               end - page["start"]):
                return incorrect(f"verify_citation says never_read {where}: [{answer.start}, {answer.end}) is an "
                                 "offset inside the page, but citations use offsets in the document: add "
                                 "page['start']")
            return incorrect(f"verify_citation says {check.reason} {where}: {REASONS[check.reason]}")
        if answer.start <= start and end <= answer.end:
            extra = (answer.end - answer.start) - (end - start)
            return incorrect(f"[{answer.start}, {answer.end}) checks out {where} but also cites {extra} characters "
                             "around the sentence; cite just the sentence")
        text = index.snapshot(page["doc_id"]).text
        return incorrect(f"[{answer.start}, {answer.end}) quotes {cut(text[answer.start:answer.end])} {where}, not "
                         "the whole sentence")
    index, ledger, page = _cite_session(0)
    citation = cite_sentence(dict(page), ANSWER)
    note = "" if citation.quote is not None else " Tip: keep quote=... so a reader can check the text too."
    return correct(f"every citation verifies and holds exactly its sentence, in {len(_cite_cases())} sessions (three "
                   f"never printed: another read, the answer moved, d03 edited). In the notebook's session: "
                   f"{citation}, the answer sentence ({ANSWER}).{note}")


q1 = Exercise(
    "3.1", "Cite the answer sentence",
    checker=_check_citation,
    ask="fill in cite_sentence(page, sentence): a Citation of exactly sentence inside the page, in document "
        "offsets, then run this cell again.",
    hints=(
        'A citation names offsets in the document, not offsets inside the page you read: the page itself '
        "starts at page['start'].",
        "Find the sentence inside page['text'] with str.index and add page['start']. Citation.from_page(page, "
        'start, end) fills in doc_id, revision, sha256 and the quote for you, from the page you are given.',
        "Shape: start = page['start'] + page['text'].index(sentence); Citation.from_page(page, start, start + "
        'len(sentence)).',
    ),
    stub='''
def cite_sentence(page, sentence):
    """A Citation of exactly sentence inside page (a read_evidence reply), in document offsets."""
    return ____
''',
    solution='''
def cite_sentence(page, sentence):
    """A Citation of exactly sentence inside page (a read_evidence reply), in document offsets."""
    start = page["start"] + page["text"].index(sentence)
    return Citation.from_page(page, start, start + len(sentence))

citation = cite_sentence(page, ANSWER)
print(citation, citation.quote)
''',
)


# -- q2 · why does each citation fail? -------------------------------------------------------------------

def citation_cases() -> dict[str, tuple[Citation, str]]:
    """label -> (citation, why). Verdicts are computed with verify_citation, ``why`` explains them."""
    doc = next(d for d in article_corpus() if d.doc_id == ANSWER_DOC_ID)
    start, end = _answer_range()
    good = Citation(doc.doc_id, doc.revision, start, end, sha256_hex(doc.text.encode("utf-8")), ANSWER)
    read_start = _READ_START
    return {
        "a": (good, "the answer sentence, read in this session, quoted exactly"),
        "b": (replace(good, start=0, end=len(ANSWER), quote=None),
              "the range exists, but no tool call ever returned it"),
        # 单批上限为500条 "at most 500 items per batch": a misquote.
        "c": (replace(good, quote=ANSWER.replace("200", "500")), "the quote differs from the text at that range"),
        "d": (replace(good, revision="2026-09-01"), "it names a revision the index no longer holds"),
        "e": (replace(good, end=len(doc.text) + 100, quote=None), "the range runs past the end of the document"),
        "f": (replace(good, doc_id="d3"), "there is no document d3 (the ids are d00..d11)"),
        "g": (replace(good, start=read_start - 10, quote=None),
              f"it starts 10 characters before the read began at {read_start}: part of it was never read"),
    }


CITATION_CASES = {label: c for label, (c, _) in citation_cases().items()}


def _check_reasons(answer: Any) -> Result:
    if not isinstance(answer, Mapping):
        return incorrect(f"the answer should be a dict like {{'a': 'ok', ...}}, got {show(answer)}")
    cases = citation_cases()
    with _session() as (index, ledger, _):
        expected = {label: verify_citation(index, c, ledger).reason for label, (c, _) in cases.items()}
    missing = [k for k in expected if k not in answer or answer[k] is ____]
    if len(missing) == len(expected):
        raise NotAttempted
    if missing:
        return incorrect(f"no reason for {', '.join(missing)} yet")
    for label, reason in answer.items():
        if label not in expected:
            return incorrect(f"there is no citation labelled {label!r}")
        if reason not in REASONS:
            return incorrect(f"{reason!r} for ({label}) is not one of the reasons in REASONS")
    wrong = [k for k in expected if answer[k] != expected[k]]
    if wrong:
        verb = "is" if len(wrong) == 1 else "are"
        return incorrect(f"{len(wrong)} of {len(expected)} {verb} wrong. " + "; ".join(
            f"({k}) {cases[k][0]}: you said {answer[k]}, but verify_citation says {expected[k]}: {cases[k][1]}"
            for k in wrong))
    return correct(f"all {len(expected)} right. Only (a) would support an answer; note (b) and (g): a range can "
                   "exist in the document and still be uncitable, because nobody read it.")


q2 = Exercise(
    "3.2", "Why does each citation fail?",
    checker=_check_reasons,
    ask="set reasons to a dict from each label (a to g) to the reason verify_citation gives, then run this cell "
        "again.",
    hints=(
        'verify_citation checks in a fixed order and the first failing check is the reason: the doc_id '
        'exists, the revision and sha256 match, the range is inside the document, some read covered the '
        'range, the quote matches.',
        'Compare each case with (a), the good one: a range nobody read, another quote, an old revision, an '
        'end past the document, a wrong id, a start before the read began. The reasons are the keys of '
        'REASONS.',
        'Check yourself: verify_citation(index, CITATION_CASES[label], ledger).reason for each label.',
    ),
    stub="""
reasons = {"a": ____, "b": ____, "c": ____, "d": ____, "e": ____, "f": ____, "g": ____}
""",
    solution="""
reasons = {"a": "ok", "b": "never_read", "c": "text_mismatch", "d": "document_changed",
           "e": "out_of_bounds", "f": "unknown_doc_id", "g": "never_read"}
""",
    solution_note="Check yourself: verify_citation(index, CITATION_CASES[label], ledger).reason for each label.",
)


# -- q3 · scenario 3: a keyword miss is not "no answer" ----------------------------------------------------

def _check_term(answer: Any) -> Result:
    if not isinstance(answer, str):
        return incorrect(f"the answer should be a str (the term to locate), got {show(answer)}")
    start, end = _answer_range()
    with temp_index() as index:
        locate = evidence_tools(index)[1]
        try:
            hits = json.loads(locate.invoke({"term": answer}))
        except EvidenceError as e:
            return incorrect(f"locate_evidence refuses {cut(answer)} with {e.code}: {e.message}")
    if not hits:
        return incorrect(f"locate_evidence({answer!r}) returns []: no literal match, which is no evidence that no "
                         "note states the rule. The notes word it differently; use words from the answer sentence")
    docs = [h["doc_id"] for h in hits]
    if docs != [ANSWER_DOC_ID]:
        return incorrect(f"{answer!r} matches {len(hits)} position(s), in {', '.join(docs)}: too broad. The list is "
                         "capped at 5 positions, so a broad term can even push out the document you need")
    offset = hits[0]["offset"]
    inside = "inside" if start <= offset < end else "outside"
    return correct(f"locate_evidence({answer!r}) finds only {ANSWER_DOC_ID}, at offset {offset}, {inside} the answer "
                   f"sentence [{start}, {end}). The empty list for {MISSED_TERM!r} meant 'no literal match', never "
                   "'no such rule'.")


q3 = Exercise(
    "3.3", "A keyword miss is not 'no answer'",
    checker=_check_term,
    ask="set term to a keyword that locate_evidence finds in d03 and in no other document, then run this cell "
        "again.",
    hints=(
        "The question's own words do not appear in the notes: the notes word the rule differently. Look for "
        'words the answer sentence itself uses (part 1 printed it).',
        "A term that also occurs in the other notes is too broad: their last line, 本条没有批处理上限参数 ('this note "
        "has no batch-limit parameter'), contains 上限 and 批处理, and the list of positions is capped at five. "
        'Pick a word only the answer sentence has.',
        "The answer sentence starts with 单批上限 ('per-batch limit'), which no other note uses: try "
        "locate.invoke({'term': '单批上限'}).",
    ),
    stub="""
term = ____
""",
    solution="""
term = "单批上限"
print(locate.invoke({"term": term}))
""",
)


# -- q4 · scenario 5: spot the entries a manifest leaks ----------------------------------------------------

def tenant_documents() -> list[Document]:
    """Six documents: five in tenants acme and globex, one open to all (English text; the ACL is the lesson)."""
    return [
        Document("acme-runbook", "ACME ops runbook", "r3", "Restart the batch worker before 06:00.", Access("acme")),
        Document("acme-salaries", "ACME salaries 2026", "r1", "Salary bands for 2026, finance only.",
                 Access("acme", read=frozenset({"group:finance"}))),
        Document("acme-roadmap", "ACME product roadmap", "r2", "Q3: ship the new batch scheduler.",
                 Access("acme", read=frozenset({"user:alice"}), discover=frozenset({"*"}))),
        Document("globex-manual", "Globex operator manual", "r7", "Globex batch limits: 500 per run.",
                 Access("globex")),
        Document("globex-plan", "Globex merger plan", "r7", "Globex plans to acquire ACME in Q4.",
                 Access("globex", read=frozenset({"user:bob"}))),
        Document("open-faq", "Public FAQ", "r1", "Batch jobs run nightly.", None),
    ]


#: The user every exercise in q4 acts for: bob, authenticated in tenant acme.
viewer = Principal("acme", "bob")


def naive_manifest(index: EvidenceIndex, principal: Principal) -> list[dict[str, object]]:
    """A BROKEN manifest builder, for the exercise: it matches grant names but forgets the tenant."""
    rows = []
    for e in index:
        a = e.access
        grants = None if a is None else (a.discover if a.discover is not None else a.read)
        if grants is None or grants & principal.names:
            rows.append(e.manifest_entry())
    return rows


_WHY_NOT_LEAK = {"acme-roadmap": "acme-roadmap may be *discovered* by everyone in acme (discover={'*'}); bob may "
                                 "see its entry. Reading it will still be refused: an entry is not a permission"}


def _check_leaks(answer: Any) -> Result:
    if isinstance(answer, str) or not isinstance(answer, (set, frozenset, list, tuple)):
        return incorrect(f"the answer should be a set of doc_ids, got {show(answer)}")
    if any(not isinstance(x, str) for x in answer):
        return incorrect("every element should be a doc_id (a str)")
    got = set(answer)
    with temp_index(tenant_documents()) as index:
        # A manifest row is a dict[str, object]; every row's doc_id is a str.
        shown = [doc_id for row in naive_manifest(index, viewer) if isinstance(doc_id := row["doc_id"], str)]
        allowed = {e.doc_id for e in index.visible(viewer, "discover")}
        grants = {e.doc_id: e.access for e in index if e.access is not None}  # an open document leaks nothing
    expected = {d for d in shown if d not in allowed}
    if got == expected:
        return correct(f"{', '.join(sorted(expected))} leak: their grants look right, but in tenant "
                       f"{grants[sorted(expected)[0]].tenant}. Filter with the index before building the "
                       "manifest (index.visible(principal)), so no title, preview or count of a hidden document "
                       "is ever made.")
    not_shown = sorted(got - set(shown))
    if not_shown:
        return incorrect(f"{not_shown[0]!r} is not in the manifest shown to bob")
    extra = sorted(got - expected)
    if extra:
        return incorrect(_WHY_NOT_LEAK.get(extra[0], f"{extra[0]} is one bob may see"))
    d = sorted(expected - got)[0]
    a = grants[d]
    return incorrect(f"{d} leaks: its grants ({', '.join(sorted(a.read))}) apply inside tenant {a.tenant}, and bob "
                     f"is authenticated in {viewer.tenant}")


q4 = Exercise(
    "3.4", "Spot the leaking manifest entries",
    checker=_check_leaks,
    ask="set leaked to the set of doc_ids in the manifest that bob must not see, then run this cell again.",
    hints=(
        "A grant such as '*' or user:bob means something only inside its tenant: look at each manifest "
        "entry's Access.tenant, and at which tenant bob is authenticated in.",
        "index.visible(viewer, 'discover') checks tenant and grants. What the naive manifest shows beyond "
        'that leaks; an entry bob may discover but not read is not a leak.',
        'Shape: the doc_ids of the manifest rows, minus {e.doc_id for e in tenant_index.visible(viewer, '
        "'discover')}.",
    ),
    stub="""
leaked = ____  # a set of doc_ids
""",
    solution="""
may_see = {e.doc_id for e in tenant_index.visible(viewer, "discover")}
leaked = {row["doc_id"] for row in manifest} - may_see
print(sorted(leaked))
""",
)
