"""Where a protocol flow reads inside one document, one call a step (issue 33 item 2). Taught in notebook 08.

The reader knows what the tools showed it: the located excerpts (``[start, end)`` and text), the match count, the
pages it read. It never knows where the answer is. Its rules, each from what locate shows or from the protocol's
limits (pages of at most ``MAX_PAGE_CHARS``, text read once is in the context already), and from the corpus which
question words are common (held by more than :data:`COMMON_SHARE` of its documents, :func:`common_words`). Where
these rules order places by question words, they order by the *rare* ones first, then by all of them: a word found
all over the corpus (a title's word found all over its document) says little about where the answer is.

1. The page around the located excerpt holding the most question words (:func:`evidence_score`) first, as long
   as a page of one-byte text costs (:func:`page_chars`: a third of the characters where the excerpts are Chinese,
   3 UTF-8 bytes a character, each about a word; English is unchanged): the answer most often sits next to the best
   excerpt; every later page is a whole one. A page around a match starts a quarter of it (:data:`LEAD` for a whole
   page) before it, shifts to take in whole any other located excerpt its edge would cut (a page costs the same
   wherever it starts), and skips text read already: a match in an unread stretch of at most one page reads
   exactly that stretch.
2. A page around a match whose edge cuts the sentence of a match it shows (the sentence window locate itself would
   show around that match, :func:`~evidence_lib.profiles.window`: up to ``WINDOW_BEFORE`` characters before it and
   ``WINDOW_AFTER`` after, to a sentence end) extends past that edge, by a page: the near miss, not the first
   page. Once: the extension is no page around a match, so a text dense with the term does not chain extensions.
3. Its doc-restricted locate when it holds more matches than were shown; then pages around its matches, the most
   question words first (those holding the most of this document's read where the evidence is; where no excerpt
   shows any question word, all do).
4. An unread gap of at most one page between two pages that both show a match (they bracket it): exactly the gap.
5. Only then paging on: from the page holding the most question words, first toward the half of it holding more of
   them, then the other way, alternately. These are the only steps that do not read where the evidence is.

Rules 2 and 4 weigh their evidence like rule 3 does (:func:`_evidence_led`): by the question words the page shows of
the cut sentence, or of the sentences of the matches next to the gap. The strongest is read first, and before a
located match not read yet only when it holds as many question words as that match's excerpt (a term dense in a
text cuts some sentence at nearly every page edge: the term alone is no evidence of the answer). Such a read counts
as reading where the evidence is only when it holds as many question words as the document's best excerpt: after a
weaker one, the best pick's turn ends like after paging on (:func:`~evidence_lib.eval._flows.read_where_evidence_is`).
Whether a read counts so, and so whether a turn ends, is decided by all question words, common ones included: the
rare ones only order where to read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from langchain_core.messages import ToolMessage
from langchain_core.retrievers import BaseRetriever

from .._citations import Excerpt
from .._measure import utf8_bytes
from .._tools import MAX_PAGE_CHARS
from ..profiles._base import Profile
from ..profiles._compact import WINDOW_AFTER, WINDOW_BEFORE, excerpts, query_words, window
from ..retrieval._bm25 import BM25Retriever

__all__ = ["COMMON_SHARE", "END", "LEAD", "Step", "common_words", "evidence_score", "page_range", "read_document",
           "reader_words"]

#: How far before a located match the reader starts a page (it does not know where the answer begins): a quarter
#: of a page, so the page around a match shows the sentences before it and most of what follows.
LEAD = MAX_PAGE_CHARS // 4
#: The end a page that reached the document's end is recorded with (no page starts there).
END = float("inf")
#: A question word held by more than this share of the corpus's documents is *common*: it says little about where in
#: one document the answer is (a title's words, "section", 配置 in a configuration manual). Where to read orders by the
#: rare question words first (:func:`common_words`); every question word still counts after them and in a turn.
COMMON_SHARE = 0.2

#: How a reading's step reads: ``True`` while it reads where this document's evidence is (its located excerpts, its
#: doc-restricted locate, the pages around its matches, on from a page edge that cuts a match's sentence, the gap
#: between two pages showing matches), ``False`` for paging on with nothing pointing there.
Step = bool


def reader_words(question: str, term: str) -> frozenset[str]:
    """The words a reader looks for near a match: the question's (as compact locate ranks them,
    :func:`~evidence_lib.profiles.query_words`) other than the term's own, which every match holds."""
    return query_words(question) - query_words(term)


def evidence_score(text: str, words: frozenset[str]) -> int:
    """How many of ``words`` ``text`` holds (case-insensitive): where a reader expects the answer."""
    lowered = text.lower()
    return sum(1 for w in words if w in lowered)


def common_words(retriever: BaseRetriever, words: Iterable[str], share: float = COMMON_SHARE) -> frozenset[str]:
    """The ``words`` held by more than ``share`` of the documents ``retriever`` may see (its BM25 index's counts,
    :meth:`~evidence_lib.retrieval.BM25Retriever.document_share`); none for a retriever that keeps no such counts."""
    if not isinstance(retriever, BM25Retriever):
        return frozenset()
    return frozenset(w for w in words if retriever.document_share(w) > share)


Weight = tuple[int, int]  # (rare question words held, question words held)


def _weigher(words: frozenset[str], common: frozenset[str]) -> Callable[[str], Weight]:
    """Where a text points, as rule 1, 3 and 5 order places: ``(rare question words, question words)`` it holds."""
    rare = words - common

    def weigh(text: str) -> Weight:
        return evidence_score(text, rare), evidence_score(text, words)
    return weigh


def page_range(msg: ToolMessage, profile: Profile, start: int) -> tuple[int, float]:
    """``[start, end)`` of a page reply: up to the next offset it names, or :data:`END` when it reached the end."""
    nxt = profile.next_offset(msg.text)
    return start, nxt if nxt is not None else END


@dataclass(frozen=True)
class _Page:
    start: int
    end: float  # END when it reached the document's end
    text: str
    around: bool = False  # read around a located match (rule 1 or 3): only such a page extends (rule 2)


def _covering(pages: Sequence[_Page], offset: float) -> _Page | None:
    return next((p for p in pages if p.start <= offset < p.end), None)


def _stretch(pages: Sequence[_Page], offset: int) -> tuple[int, float]:
    """The unread stretch ``[lo, hi)`` holding the unread ``offset``: from the end of the page read before it to the
    start of the page read after it (0 and :data:`END` where there is none)."""
    lo = max((p.end for p in pages if p.end <= offset), default=0)
    hi = min((p.start for p in pages if p.start > offset), default=END)
    return int(lo), hi


def page_chars(sample: str) -> int:
    """The characters of a page that costs what a page of ``MAX_PAGE_CHARS`` one-byte characters costs: divided by the
    whole UTF-8 bytes per character of ``sample`` (the excerpts shown; 1 for English, 3 for Chinese, where a character
    is about a word), so the first look at the best excerpt carries about as much text in any script."""
    width = round(utf8_bytes(sample) / len(sample)) if sample else 1
    return MAX_PAGE_CHARS // max(1, width)


def _placed(start: int, end: int, known: Sequence[tuple[int, int]], size: int = MAX_PAGE_CHARS) -> int:
    """Where the page of ``size`` characters around the excerpt ``[start, end)`` starts: a quarter of it before the
    excerpt, shifted to take in whole a known excerpt its edge would cut, while the page still holds ``[start, end)``."""
    first = max(0, start - size // 4)
    for s, e in sorted(known):
        last = first + size
        if s < last < e and e - start <= size:
            first = max(first, e - size)  # the excerpt runs over the page's end: move on to hold it
        elif s < first < e and end - s <= size:
            first = s  # it starts before the page: move back to hold it
    return first


#: A sentence end (one character, no look-ahead) that stands for a page's edge, so :func:`window` says whether a
#: sentence ends between a match and that edge.
_EDGE = "。"


def _cuts(page: _Page, term: str) -> tuple[str | None, str | None]:
    """What the page shows of a match's sentence window (locate's, :func:`~evidence_lib.profiles.window`) that it cuts
    at its start and at its end, or ``None`` for an edge that cuts none: no sentence ends between the match and that
    edge, and the window's reach (``WINDOW_BEFORE`` back, ``WINDOW_AFTER`` on) passes it. Each edge is marked by
    :data:`_EDGE`; the window reaches the mark only when nothing ends the sentence first."""
    text, needle = page.text, term.lower()
    lowered = text.lower()
    back = ahead = None
    at = lowered.find(needle) if needle else -1
    while at >= 0:
        stop = at + len(needle)
        if page.start > 0 and back is None:
            s, e = window(_EDGE + text, at + 1, stop + 1, WINDOW_BEFORE, WINDOW_AFTER)
            lead = text[:s - 1]  # white space only when the window reached the mark (a blank line ends a paragraph)
            if at + 1 <= WINDOW_BEFORE and not lead.strip() and lead.count("\n") < 2:
                back = text[:e - 1]
        if page.end != END:
            s, e = window(text + _EDGE, at, stop, WINDOW_BEFORE, WINDOW_AFTER)
            if e > len(text):
                ahead = text[s:]  # the last match whose window runs over the end: the one the edge cuts
        at = lowered.find(needle, at + 1)
    return back, ahead


def _onward_from(pages: Sequence[_Page], page: _Page, forward: bool) -> tuple[int, int] | None:
    """The unread page next to ``page``'s side (``forward``: after it; else before it), skipping pages read:
    ``(offset, limit)``, or ``None`` when that side is read to the document's edge."""
    if forward:
        at = page.end
        while at < END and (p := _covering(pages, at)) is not None:
            at = p.end
        if at >= END:
            return None
        lo, hi = _stretch(pages, int(at))
        return int(at), int(min(MAX_PAGE_CHARS, hi - at))
    at = page.start
    while at > 0 and (p := _covering(pages, at - 1)) is not None:
        at = p.start
    if at <= 0:
        return None
    lo, _ = _stretch(pages, at - 1)
    first = max(lo, at - MAX_PAGE_CHARS)
    return first, at - first


def _evidence_led(pages: Sequence[_Page], term: str, weigh: Callable[[str], Weight]) -> list[tuple[int, int, Weight]]:
    """Every next read evidence points to, ``(offset, limit, weight)``: the rest of a match's sentence window a page
    edge cut (rule 2), weighed by the question words the page shows of that window; a gap of at most one page between
    two pages showing a match (rule 4), weighed by the question words of the windows of the matches nearest it."""
    led = []
    for page in (p for p in pages if p.around):
        back, ahead = _cuts(page, term)
        if ahead is not None and (nxt := _onward_from(pages, page, True)) is not None and nxt[0] == page.end:
            led.append((*nxt, weigh(ahead)))
        if back is not None and (nxt := _onward_from(pages, page, False)) is not None and \
                nxt[0] + nxt[1] == page.start:
            led.append((*nxt, weigh(back)))
    needle = term.lower()
    ordered = sorted(pages, key=lambda p: p.start)
    for a, b in zip(ordered, ordered[1:]):
        if a.end < b.start and b.start - a.end <= MAX_PAGE_CHARS and needle and \
                (last := a.text.lower().rfind(needle)) >= 0 and (first := b.text.lower().find(needle)) >= 0:
            near = max(weigh(a.text[slice(*window(a.text, last, last + len(needle)))]),
                       weigh(b.text[slice(*window(b.text, first, first + len(needle)))]))
            led.append((int(a.end), int(b.start - a.end), near))
    return led


def read_document(call: Callable, term: str, doc_id: str, profile: Profile, words: frozenset[str], matches: int,
                  shown: Sequence[Excerpt] = (), common: frozenset[str] = frozenset()) -> Iterator[Step]:
    """One document's reading, one call a step (yields :data:`Step`), by the rules of this module's docstring.
    ``common``: the question words common in the corpus (:func:`common_words`), ordered after the rare ones."""
    pages: list[_Page] = []
    known = [(x.start, x.end) for x in shown]
    weigh = _weigher(words, common)

    def read(offset: int, limit: int, around: bool = False) -> bool:
        msg = call("read_evidence", {"doc_id": doc_id, "offset": offset, "limit": limit})
        if msg.status != "success":
            return False
        got = excerpts([msg])
        pages.append(_Page(*page_range(msg, profile, offset), got[0].text if got else "", around))
        return True

    def around(start: int, end: int, size: int = MAX_PAGE_CHARS) -> bool:
        lo, hi = _stretch(pages, start)
        if hi - lo <= size:  # a match in an unread stretch of at most a page: exactly the stretch
            return read(lo, int(hi - lo), around=True)
        first = max(lo, _placed(start, end, known, size))
        return read(first, int(min(size, hi - first)), around=True)

    def unread() -> Weight:  # the weight of the best located excerpt not on a page read yet
        return max((weight for weight, start, _ in spots if _covering(pages, start) is None), default=(0, 0))

    def evidence(at_least: Weight = (0, 0)) -> Iterator[Step]:  # rules 2 and 4, while they point as strongly
        while led := [x for x in _evidence_led(pages, term, weigh) if x[2] >= at_least]:
            offset, limit, weight = max(led, key=lambda x: x[2])  # max() keeps the first of equals
            if not read(offset, limit):
                return
            yield weight[1] >= max((w[1] for w, _, _ in spots), default=0)  # as strong as the document's best excerpt

    def spotted(found: Sequence[Excerpt]) -> list[tuple[Weight, int, int]]:  # the most rare words first, then all
        return sorted(((weigh(x.text), x.start, x.end) for x in found), key=lambda s: (-s[0][0], -s[0][1], s[1]))

    spots = spotted(shown)
    for _, start, end in spots[:1]:  # rule 1: the best excerpt of this document
        if not around(start, end, page_chars("".join(x.text for x in shown))):
            return
        yield True
        yield from evidence(unread())
    if matches > len(shown) or not shown:  # rule 3
        msg = call("locate_evidence", {"term": term, "doc_id": doc_id})
        yield True
        if msg.status == "error":
            return
        found = [x for x in excerpts([msg]) if x.doc_id == doc_id]
        known += [(x.start, x.end) for x in found]
        spots = spotted(found) or [((0, 0), o, o) for o in profile.match_offsets(msg.content, doc_id)[0]]
    best = max((w[1] for w, _, _ in spots), default=0)
    for weight, start, end in spots:
        if _covering(pages, start) is not None:
            continue  # this match is on a page read already
        if not around(start, end):
            return
        yield weight[1] == best  # a match holding the most question words of this document's (all, where none shows any)
        yield from evidence(unread())
    yield from evidence()
    yield from _paging_on(pages, weigh, read, evidence)


def _paging_on(pages: list[_Page], weigh: Callable[[str], Weight], read: Callable[[int, int], bool],
               evidence: Callable[[], Iterator[Step]]) -> Iterator[Step]:
    """Rule 5: pages on both sides of the page holding the most rare question words, then the most question words
    (the first read of those holding as many), first toward its half holding more question words, alternately;
    evidence a page shows is followed first."""
    if not pages:
        if not read(0, MAX_PAGE_CHARS):
            return
        yield False
        yield from evidence()
    anchor = max(pages, key=lambda p: weigh(p.text))  # max() keeps the first of equals
    half = len(anchor.text) // 2
    forward = weigh(anchor.text[half:])[1] > weigh(anchor.text[:half])[1]  # the half holding more question words
    while True:
        nxt = _onward_from(pages, anchor, forward) or _onward_from(pages, anchor, not forward)
        if nxt is None:
            return
        if not read(*nxt):
            return
        yield False
        yield from evidence()
        forward = not forward
