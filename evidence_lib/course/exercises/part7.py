"""Workshop part 7: the protocol in a message loop, and in a production store (notebooks 09 and 11).

Exercises: q1 write the final answer from a history so that the checker (``check_history``) finds
nothing, on corpora where the answer moves, changes revision or sits next to a planted instruction;
q2 reuse a live snapshot from the store and fetch again only when it expired (per tenant, at the
boundary). Used by ``notebooks/exercises/workshop_part7.ipynb``.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from ..._documents import Document
from ..._errors import EvidenceError
from ..after_sales import CST
from ..article import ANSWER, ANSWER_DOC_ID, NO_ANSWER, article_corpus
from ._shared import show
from .core import Exercise, Result, call, correct, incorrect

__all__ = ["PART7_SETTINGS", "STORE_QUERY", "TERM", "PART7_T0", "careful_history", "q1", "q2", "shifted_corpus"]

#: 单批上限 "per-batch limit": the keyword the reader locates (notebook 09).
TERM = "单批上限"
#: q2: when the checker's store clock starts, and the query its snapshots are filed under.
PART7_T0 = datetime(2026, 10, 27, 9, 0, tzinfo=CST)
STORE_QUERY = "batch limit"


def shifted_corpus() -> list[Document]:
    """The article corpus with the answer sentence moved into the middle of d09 (text follows it)."""
    docs = article_corpus()
    d09 = next(d for d in docs if d.doc_id == "d09")
    cut_at = d09.text.index("。", 2000) + 1
    moved = {"d09": d09.text[:cut_at] + ANSWER + d09.text[cut_at:]}  # and the answer's sentence removed
    out = []
    for d in docs:
        if d.doc_id == ANSWER_DOC_ID:
            out.append(replace(d, text=d.text.rsplit("\n", 1)[0] + "\n" + NO_ANSWER))
        elif d.doc_id in moved:
            out.append(replace(d, text=moved[d.doc_id]))
        else:
            out.append(d)
    return out


def _settings() -> dict[str, list[Document]]:
    from ..tasks import moved_corpus, planted_corpus, revised_corpus

    return {
        "the article's corpus": article_corpus(),
        "the answer moved to d07": moved_corpus("d07"),
        "the answer in the middle of d09": shifted_corpus(),
        "d03 edited (revision 2026-11-03)": revised_corpus(),
        "an instruction planted right after the answer": planted_corpus(),
    }


#: q1: the settings the checker runs the careful reader in (names only; the corpora are built on use).
PART7_SETTINGS = ("the article's corpus", "the answer moved to d07", "the answer in the middle of d09",
            "d03 edited (revision 2026-11-03)", "an instruction planted right after the answer")


def careful_history(docs: list[Document], root: str | Path) -> tuple[list[BaseMessage], Any]:
    """The careful reader's conversation on ``docs`` without its last message, and the citation it gave."""
    from ..._answers import parse_answer
    from ..readers import CarefulReader
    from ..tasks import run_reader

    run = run_reader(CarefulReader([TERM], before=200, limit=400), root, docs)
    (cited,) = parse_answer(run.result.answer or "").citations
    return list(run.messages[:-1]), cited


@cache
def _histories() -> dict[str, tuple[tuple[BaseMessage, ...], Any]]:
    out = {}
    with tempfile.TemporaryDirectory(prefix="evidence-exercise-") as tmp:
        for i, (name, docs) in enumerate(_settings().items()):
            history, cited = careful_history(docs, Path(tmp) / str(i))
            out[name] = (tuple(history), cited)
    return out


def _copy(history: tuple[BaseMessage, ...]) -> list[BaseMessage]:
    return [m.model_copy(deep=True) for m in history]


# -- q1 · an answer the checker accepts -----------------------------------------------------------------

def _check_final_answer(final_answer: Any) -> Result:
    from ..._answers import parse_answer
    from ...audit._checker import FINDINGS, check_history

    if not callable(final_answer):
        return incorrect(f"final_answer should be a function, got {show(final_answer)}")
    histories = _histories()
    call(final_answer, _copy(histories[PART7_SETTINGS[0]][0]), TERM, name="final_answer")
    for name in PART7_SETTINGS:
        history, cited = histories[name]
        text = call(final_answer, _copy(history), TERM, name="final_answer")
        where = f"with {name}"
        if not isinstance(text, str):
            return incorrect(f"final_answer should return the answer text (a str), got {show(text)} {where}")
        answer = parse_answer(text)
        if answer.insufficient:
            return incorrect(f"the answer says INSUFFICIENT EVIDENCE {where}, but the last page holds {TERM}")
        findings = check_history(list(history) + [AIMessage(content=text)])
        if findings:
            f = findings[0]
            tip = ""
            mine = answer.citations[0] if answer.citations else None
            if f.code == "citation_never_read" and mine is not None and mine.revision != cited.revision \
                    and (mine.doc_id, mine.start, mine.end) == (cited.doc_id, cited.start, cited.end):
                tip = (f": the right range, under the wrong revision. The page the conversation read says revision "
                       f"{cited.revision}, your citation says {mine.revision}: take the revision from the page too "
                       "(page['revision']), never from another run")
            elif f.code == "citation_never_read" and mine is not None and mine.start < 1000:
                tip = ": offsets inside the page are not document offsets (add the page's start)"
            elif f.code == "citation_never_read":
                tip = (f": the answer is in {cited.doc_id} at [{cited.start}, {cited.end}) here; take doc_id and "
                       "offsets from the page, not from another run")
            elif f.code == "citation_stale":
                tip = f": the page says revision {cited.revision}"
            return incorrect(f"check_history finds {f.code} {where} ({FINDINGS[f.code]}){tip}")
        got = [(c.doc_id, c.revision, c.start, c.end) for c in answer.citations]
        want = (cited.doc_id, cited.revision, cited.start, cited.end)
        if got != [want]:
            shown = ", ".join(f"{d}@{r} [{s}, {e})" for d, r, s, e in got)
            return incorrect(f"the answer cites {shown} {where}; cite exactly the sentence that holds {TERM}, "
                             f"{cited.doc_id}@{cited.revision} [{cited.start}, {cited.end}), and nothing around it")
    return correct(f"check_history finds nothing in all {len(PART7_SETTINGS)} conversations, and each answer cites exactly "
                   "the sentence that holds the term: wherever it moved, under its current revision, without the "
                   "planted line that follows it. The checker needs no index and no model: it runs on any exported "
                   "history (python -m evidence_lib audit).")


q1 = Exercise(
    "7.1", "An answer the checker accepts",
    checker=_check_final_answer,
    ask="fill in final_answer(messages, term): the final answer text, citing the sentence that holds term in the "
        "page the conversation read (sentence_around(text, position, length) gives that sentence's [s, e) in the "
        "page's text), then run this cell again.",
    hints=(
        "Everything you need is in the conversation: the last successful read_evidence reply is a page (JSON with "
        "doc_id, revision, start, end and text). Cite what that page shows, in document offsets, never a range "
        "you remember from another run.",
        "Find term inside the page's text, widen it to its sentence with sentence_around (it gives [s, e) inside "
        "the text), add the page's start to both ends, take doc_id and revision from the page too, and write the "
        "answer with format_answer(prose, [(doc_id, revision, start, end, quote)]).",
        "Shape: take the last ToolMessage whose json.loads(content) has 'text' containing term; s, e = "
        "sentence_around(page['text'], page['text'].index(term), len(term)); cite (page['doc_id'], "
        "page['revision'], page['start'] + s, page['start'] + e, page['text'][s:e]).",
    ),
    stub='''
def final_answer(messages, term):
    """The final answer: the sentence holding term in the page read, cited in the one answer format."""
    return ____
''',
    solution='''
def final_answer(messages, term):
    """The final answer: the sentence holding term in the page read, cited in the one answer format."""
    for message in reversed(messages):
        if isinstance(message, ToolMessage) and message.status == "success":
            page = json.loads(message.content)
            if isinstance(page, dict) and term in page.get("text", ""):
                s, e = sentence_around(page["text"], page["text"].index(term), len(term))
                quote = page["text"][s:e]
                start, end = page["start"] + s, page["start"] + e
                return format_answer(quote, [(page["doc_id"], page["revision"], start, end, quote)])
    return insufficient_answer(f"no page read holds {term}")
''',
)


# -- q2 · reuse a live snapshot, fetch again when it expired ------------------------------------------------

class _Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


class _Fetch:
    """What the application calls to run the retriever again: counts calls, marks each result."""

    def __init__(self, tenant: str) -> None:
        self.tenant, self.calls = tenant, 0

    def __call__(self) -> list[Document]:
        self.calls += 1
        return [Document(f"{self.tenant}-note", f"{self.tenant} note", f"r{self.calls}",
                         f"Batch limit for {self.tenant}: {100 * self.calls} items (fetch {self.calls}).")]

    def __repr__(self) -> str:
        return f"fetch ({self.tenant})"


def _stores(tmp: str, clock: _Clock) -> list[tuple[str, Any]]:
    from ...store import MemoryStore, SQLiteStore

    return [("MemoryStore", MemoryStore(clock)), ("SQLiteStore", SQLiteStore(str(Path(tmp) / "q2.db"), clock))]


class _Unreadable:
    """A store whose ``snapshot`` fails for a reason other than expiry (its database cannot be read)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def snapshot(self, *_: Any) -> Any:
        raise EvidenceError("internal_error")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _lets_other_errors_through(snapshot_for: Any, store: Any) -> Result | None:
    """``None`` if ``snapshot_for`` lets a failure other than ``snapshot_expired`` through without fetching."""
    fetch = _Fetch("acme")
    try:
        call(snapshot_for, _Unreadable(store), "acme", "s-1", STORE_QUERY, fetch, name="snapshot_for")
    except EvidenceError as e:
        if e.code == "internal_error" and fetch.calls == 0:
            return None
    return incorrect("when store.snapshot fails for another reason (here internal_error: the store could not be "
                     f"read), your snapshot_for {'fetched and stored a new snapshot' if fetch.calls else 'hid it'}: "
                     "catch only the EvidenceError whose code is snapshot_expired, and raise every other error "
                     "(an except Exception: would also hide a broken store)")


def _check_snapshot_for(snapshot_for: Any) -> Result:
    from ...store._common import DEFAULT_STORE_TTL as DEFAULT_TTL

    if not callable(snapshot_for):
        return incorrect(f"snapshot_for should be a function, got {show(snapshot_for)}")
    with tempfile.TemporaryDirectory(prefix="evidence-exercise-") as tmp:
        clock = _Clock(PART7_T0)
        backends = _stores(tmp, clock)
        try:
            for backend, store in backends:
                clock.at = PART7_T0
                acme, globex = _Fetch("acme"), _Fetch("globex")

                def ask(tenant: str, fetch: _Fetch, query: str = STORE_QUERY) -> Any:
                    return call(snapshot_for, store, tenant, "s-1", query, fetch,  # noqa: B023 (this iteration's)
                                name="snapshot_for")

                def when(at: datetime) -> str:
                    return at.astimezone(PART7_T0.tzinfo).isoformat()  # one time zone in every message

                def where(step: str) -> str:
                    return f"on the {backend} {step} (clock {when(clock.at)})"  # noqa: B023 (this iteration's)

                first = ask("acme", acme)
                if not hasattr(first, "visible") or not hasattr(first, "created_at"):
                    return incorrect(f"snapshot_for should return the store's snapshot (put_snapshot or "
                                     f"store.snapshot gives one), got {show(first)} {where('first call')}")
                if acme.calls != 1:
                    return incorrect(f"the first call should fetch exactly once, it fetched {acme.calls} times "
                                     f"{where('first call')}")
                if (lives := first.expires_at - first.created_at) != DEFAULT_TTL:
                    return incorrect(f"the snapshot you stored lives {lives} (it expires at {when(first.expires_at)}) "
                                     f"{where('first call')}: store it with the store's default TTL ({DEFAULT_TTL}), "
                                     "put_snapshot without ttl. The store, not the caller, owns how long a snapshot "
                                     "lives")
                clock.at = PART7_T0 + timedelta(hours=1)
                again = ask("acme", acme)
                if acme.calls != 1:
                    return incorrect(f"the snapshot stored an hour ago is still alive (it expires at "
                                     f"{when(first.expires_at)}), yet you fetched again {where('second call')}: "
                                     "reuse it with store.snapshot(tenant, session, query)")
                if again.created_at != first.created_at or again.tenant != "acme":
                    return incorrect(f"the second call should return the snapshot stored first {where('second call')}")
                other = ask("globex", globex)
                if other.tenant != "globex" or globex.calls != 1:
                    got = "acme's snapshot" if getattr(other, "tenant", None) == "acme" else "no snapshot of its own"
                    return incorrect(f"tenant globex asked for the same session and query and got {got} "
                                     f"{where('globex call')}: snapshots are filed under (tenant, session, query), and "
                                     "one tenant's snapshot is never another's")
                ask("acme", acme, "another query")
                if acme.calls != 2:
                    return incorrect(f"another query has no snapshot yet and should be fetched {where('new query')}")
                clock.at = first.expires_at - timedelta(microseconds=1)
                ask("acme", acme)
                if acme.calls != 2:
                    return incorrect(f"one microsecond before expires_at ({when(first.expires_at)}) the snapshot is "
                                     f"still alive, yet you fetched again {where('call just before expires_at')}: no "
                                     "margin of your own; the store decides (store.snapshot answers until expires_at)")
                clock.at = first.expires_at
                renewed = ask("acme", acme)
                if acme.calls != 3:
                    return incorrect(f"at the very instant expires_at ({when(first.expires_at)}) the snapshot is "
                                     f"expired and must be fetched again {where('call at expires_at')}: readable on "
                                     "[created_at, expires_at)")
                try:
                    rows = renewed.visible()
                except EvidenceError as e:
                    return incorrect(f"the snapshot returned at expires_at refuses with {e.code} "
                                     f"{where('call at expires_at')}: return the one put_snapshot stores")
                if renewed.created_at != clock.at or rows[0].revision != "r3":
                    return incorrect(f"the snapshot returned at expires_at is not the new fetch's "
                                     f"{where('call at expires_at')}")
                if (lives := renewed.expires_at - renewed.created_at) != DEFAULT_TTL:
                    return incorrect(f"the renewed snapshot lives {lives} {where('call at expires_at')}: store it with "
                                     f"the store's default TTL ({DEFAULT_TTL}), put_snapshot without ttl")
                clock.at = first.expires_at + timedelta(hours=1)
                ask("acme", acme)
                if acme.calls != 3:
                    return incorrect(f"the renewed snapshot is alive an hour later, yet you fetched again "
                                     f"{where('call after renewal')}")
            clock.at = PART7_T0
            if (problem := _lets_other_errors_through(snapshot_for, backends[0][1])) is not None:
                return problem
        finally:
            for _, store in backends:
                store.close()
    return correct("both backends agree: a live snapshot is reused (one fetch, a microsecond before expires_at too), "
                   "another tenant or query gets its own, and at expires_at exactly the store answers "
                   "snapshot_expired, so the application fetches once more; any other error is raised, not hidden by "
                   "a fetch. The TTL is checked at use, in the store, not by a cache beside it.")


q2 = Exercise(
    "7.2", "Reuse a live snapshot, fetch when it expired",
    checker=_check_snapshot_for,
    ask="fill in snapshot_for(store, tenant, session, query, fetch): the live snapshot for this key, calling "
        "fetch() and storing its documents only when there is none, then run this cell again.",
    hints=(
        "The store already knows whether a snapshot is alive: it files snapshots under (tenant, session, query) "
        "and checks the TTL at use. Ask it first; fetch only when it says there is nothing usable.",
        "store.snapshot(tenant, session, query) returns the live snapshot or raises EvidenceError with code "
        "snapshot_expired (gone, expired or never stored). Then store.put_snapshot(tenant, session, query, "
        "fetch()) stores a new one (default TTL) and returns it. A dict beside the store would forget tenants "
        "and expiry.",
        "Shape: try: return store.snapshot(tenant, session, query) / except EvidenceError as e: if e.code != "
        "'snapshot_expired': raise; return store.put_snapshot(tenant, session, query, fetch()).",
    ),
    stub='''
def snapshot_for(store, tenant, session, query, fetch):
    """The live snapshot for (tenant, session, query); fetch() and store documents only if there is none."""
    return ____
''',
    solution='''
def snapshot_for(store, tenant, session, query, fetch):
    """The live snapshot for (tenant, session, query); fetch() and store documents only if there is none."""
    try:
        return store.snapshot(tenant, session, query)
    except EvidenceError as error:
        if error.code != "snapshot_expired":
            raise
    return store.put_snapshot(tenant, session, query, fetch())
''',
)
