"""Workshop part 1: the baseline dump and how to measure it (notebook 01's ideas).

Exercises: q1 bytes vs tokens, q2 the answer's half-open range, q3 the smallest top_k that keeps the
answer, q4 how many candidates fit a token budget. Used by ``notebooks/exercises/workshop_part1.ipynb``.

Every answer is a small function, and every checker runs it on the article's candidates *and* on rankings,
lengths, texts and budgets that no notebook prints (drawn from the checker's own seeds): a number copied from
notebook 01's outputs, or from this part's, cannot pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..._documents import Document, baseline_dump
from ..._measure import Size, approx_tokens, cl100k_tokens, utf8_bytes
from ..article import ANSWER, ANSWER_DOC_ID, article_corpus
from ._shared import is_int, pair_of_ints, show, variant_corpus
from .core import Exercise, Result, call, correct, incorrect

__all__ = ["TOKEN_BUDGET", "q1", "q2", "q3", "q4"]

#: Part 1, q4: tokens an application sets aside for tool results in one turn.
TOKEN_BUDGET = 16_000


def _answer_doc():
    return next(d for d in article_corpus() if d.doc_id == ANSWER_DOC_ID)


def _copied(got: Any, what: str, first: str) -> str:
    """The diagnosis for a function that gives the first case's answer for another input (a copied number)."""
    return (f"your function returns {got!r} for {what}, exactly what it should return for {first}: it must compute "
            "its answer from its arguments (the checker runs it on inputs no notebook prints, so a number copied "
            "from an output cannot pass)")


# -- q1 · bytes and tokens of the dump ----------------------------------------------------------------

@cache
def _dump_cases() -> tuple[tuple[str, tuple[Document, ...]], ...]:
    cases = [("the article's 12 candidates", article_corpus())]
    for seed, size in (("q1-a", 5), ("q1-b", 9), ("q1-c", 3)):
        docs = variant_corpus(seed, size)
        cases.append((f"another ranking of {size} candidates ({', '.join(d.doc_id for d in docs)}, other lengths)",
                      docs))
    return tuple((label, tuple(docs)) for label, docs in cases)


@cache
def _size(docs: tuple[Document, ...]) -> Size:
    return Size.of(baseline_dump(list(docs)))


def _check_dump_size(dump_size: Any) -> Result:
    if not callable(dump_size):
        return incorrect(f"dump_size should be a function of docs, got {show(dump_size)}")
    first = None
    for label, docs in _dump_cases():
        got = call(dump_size, list(docs), name="dump_size")
        where = f"for {label}"
        if not pair_of_ints(got):
            return incorrect(f"dump_size should return a pair of ints (UTF-8 bytes, cl100k tokens), got {show(got)} "
                             f"{where}")
        size = _size(docs)
        want = (size.utf8_bytes, size.cl100k_tokens)
        first = first or want
        got = tuple(got)
        if got == want:
            continue
        n_bytes, n_tokens = got
        if got == want[::-1]:
            return incorrect(f"the two numbers are swapped {where}: bytes first, then tokens")
        if got == first:
            return incorrect(_copied(got, label, _dump_cases()[0][0]))
        if n_bytes != size.utf8_bytes:
            if n_bytes == size.chars:
                return incorrect(f"{n_bytes:,} is the number of characters (code points) {where}, not UTF-8 bytes: a "
                                 "Chinese character takes 3 bytes in UTF-8. Encode the string before counting")
            return incorrect(f"{n_bytes:,} is not the UTF-8 size of baseline_dump(docs) {where} ({size.utf8_bytes:,})")
        if n_tokens == size.approx_tokens:
            return incorrect(f"{n_tokens:,} is langchain-core's chars/4 estimate {where}, not a real token count; "
                             "count with the cl100k_base tokenizer (cl100k_tokens)")
        if n_tokens in (size.chars, size.utf8_bytes):
            return incorrect(f"{n_tokens:,} counts characters or bytes {where}, not tokens; use cl100k_tokens")
        return incorrect(f"{n_tokens:,} is not the dump's cl100k_base token count {where}")
    size = _size(_dump_cases()[0][1])
    return correct(f"dump_size agrees on {len(_dump_cases())} candidate lists, three of them never printed. The "
                   f"article's dump is {size.utf8_bytes:,} UTF-8 bytes and {size.cl100k_tokens:,} cl100k tokens for "
                   f"{size.chars:,} characters; the chars/4 rule would have guessed {size.approx_tokens:,} tokens, "
                   f"{size.cl100k_tokens / size.approx_tokens:.1f}x too few for this Chinese text.")


q1 = Exercise(
    "1.1", "Bytes are not tokens",
    checker=_check_dump_size,
    ask="fill in dump_size(docs): the pair (UTF-8 bytes, cl100k tokens) of baseline_dump(docs), then run this cell "
        "again.",
    hints=(
        'The model is sent bytes and billed in tokens, and neither is len(text): len counts code points. How '
        'many bytes does one Chinese character take in UTF-8?',
        'baseline_dump(docs) is one str. utf8_bytes(text) counts its UTF-8 bytes and cl100k_tokens(text) its '
        'real cl100k tokens; Size.of(text) gives both, plus the chars/4 estimate to compare. Measure the docs '
        'you are given: the checker passes other candidate lists too.',
        'Shape: build the dump of docs once, then return (utf8_bytes(dump), cl100k_tokens(dump)), bytes first.',
    ),
    stub='''
def dump_size(docs):
    """(UTF-8 bytes, cl100k tokens) of baseline_dump(docs)."""
    return ____
''',
    solution='''
def dump_size(docs):
    """(UTF-8 bytes, cl100k tokens) of baseline_dump(docs)."""
    dump = baseline_dump(docs)
    return (utf8_bytes(dump), cl100k_tokens(dump))

n_bytes, n_tokens = dump_size(docs)
print(f"{n_bytes:,} UTF-8 bytes, {n_tokens:,} cl100k tokens, {approx_tokens(baseline_dump(docs)):,} by chars/4")
''',
)


# -- q2 · where the answer is: a half-open range of string indices --------------------------------------

#: q2: an English sentence, and a text where emoji and accents come before it (bytes and code points differ).
_EN_SENTENCE = "At most 200 items per batch; the timeout is 30 seconds."


@dataclass(frozen=True)
class _RangeCase:
    label: str
    text: str
    sentence: str


@cache
def _range_cases() -> tuple[_RangeCase, ...]:
    middle = next(d for d in variant_corpus("q2-a", 4, answer_at="middle") if d.doc_id == ANSWER_DOC_ID)
    mixed = "Notes 👍🏽 on café batches 🇨🇳: keep the log number. " * 7 + _EN_SENTENCE + " (Rule 4.2.)"
    return (
        _RangeCase("d03's text", _answer_doc().text, ANSWER),
        _RangeCase("another note, with the answer in the middle of its filler", middle.text, ANSWER),
        _RangeCase("an English sentence after emoji and accents", mixed, _EN_SENTENCE),
        _RangeCase("the sentence at the very start", _EN_SENTENCE + " Nothing else.", _EN_SENTENCE),
    )


def _check_answer_range(answer_range: Any) -> Result:
    if not callable(answer_range):
        return incorrect(f"answer_range should be a function of (text, sentence), got {show(answer_range)}")
    first = None
    for case in _range_cases():
        text, sentence = case.text, case.sentence
        start = text.index(sentence)
        end = start + len(sentence)
        first = first or (start, end)
        got = call(answer_range, text, sentence, name="answer_range")
        where = f"in {case.label}"
        if not pair_of_ints(got):
            return incorrect(f"answer_range should return a pair of ints (start, end), got {show(got)} {where}")
        got = tuple(got)
        if got == (start, end):
            continue
        if got == (start, end - 1):
            return incorrect(f"[{start}, {end - 1}) leaves out the last character {text[end - 1]!r} {where}: the end "
                             "of a half-open range is the first index *after* the text, so end - start == "
                             "len(sentence)")
        if got == (start, len(sentence)):
            return incorrect(f"the second number is the end index, not the length {where}")
        byte_start = utf8_bytes(text[:start])
        if got == (byte_start, byte_start + utf8_bytes(sentence)):
            return incorrect(f"({got[0]:,}, {got[1]:,}) are UTF-8 byte offsets {where}; the protocol counts Python "
                             "string indices (code points), the same numbers str.index and slicing use")
        if got in ((start + 1, end + 1), (start + 1, end)):
            return incorrect(f"Python indices start at 0, not 1 {where}")
        if case is _range_cases()[0] and got[0] == baseline_dump(article_corpus()).index(ANSWER):
            return incorrect("that is the position inside the dump; give the range inside the text you are given")
        if got == first:
            return incorrect(_copied(got, case.label, _range_cases()[0].label))
        return incorrect(f"text[{got[0]}:{got[1]}] is not the sentence {where} (it starts at {start})")
    start, end = _range_cases()[0].text.index(ANSWER), _range_cases()[0].text.index(ANSWER) + len(ANSWER)
    return correct(f"answer_range agrees on {len(_range_cases())} texts, Chinese, emoji and accents included. In d03 "
                   f"the answer is [{start}, {end}): end - start = {end - start} = len(ANSWER); start is included, "
                   "end is not.")


q2 = Exercise(
    "1.2", "Where the answer sits: [start, end)",
    checker=_check_answer_range,
    ask="fill in answer_range(text, sentence): the pair (start, end) with text[start:end] == sentence, then run "
        "this cell again.",
    hints=(
        'A half-open range [start, end) includes start and excludes end, so end - start is the length of the '
        'text it holds, and text[start:end] is exactly that text.',
        "Search the text you are given (not the dump) for the sentence with str.index: that is the start. The "
        "end is one past the sentence's last character. Offsets count code points, not bytes.",
        'Shape: start = text.index(sentence), then the pair (start, start + len(sentence)); check that '
        'slicing the text with it gives the sentence back.',
    ),
    stub='''
def answer_range(text, sentence):
    """(start, end) with text[start:end] == sentence."""
    return ____
''',
    solution='''
def answer_range(text, sentence):
    """(start, end) with text[start:end] == sentence."""
    start = text.index(sentence)
    return (start, start + len(sentence))

d03 = next(d for d in docs if d.doc_id == "d03")
start, end = answer_range(d03.text, ANSWER)
print((start, end), d03.text[start:end])
''',
)


# -- q3 · the smallest top_k that keeps the answer ------------------------------------------------------

def _keeps(docs: Sequence[Document], k: int, answer: str = ANSWER) -> bool:
    return any(answer in d.text for d in docs[:k])


@cache
def _ranking_cases() -> tuple[tuple[str, tuple[Document, ...]], ...]:
    cases = [("the article's ranking", article_corpus()),
             ("another ranking of 7", variant_corpus("q3-a", 7)),
             ("another ranking of 5, d03 first", variant_corpus("q3-b", 5, first=True)),
             ("another ranking of 9, d03 last", variant_corpus("q3-c", 9, last=True)),
             ("another ranking of 8", variant_corpus("q3-d", 8))]
    return tuple((label, tuple(docs)) for label, docs in cases)


def _check_smallest_top_k(smallest_top_k: Any) -> Result:
    if not callable(smallest_top_k):
        return incorrect(f"smallest_top_k should be a function of (docs, answer), got {show(smallest_top_k)}")
    first = None
    for label, ranking in _ranking_cases():
        docs = list(ranking)
        expected = min(k for k in range(1, len(docs) + 1) if _keeps(docs, k))
        first = first or expected
        got = call(smallest_top_k, list(docs), ANSWER, name="smallest_top_k")
        where = f"for {label} ({', '.join(d.doc_id for d in docs)})"
        if not is_int(got):
            return incorrect(f"smallest_top_k should return an int, got {show(got)} {where}")
        if got == expected:
            continue
        if got == expected - 1:
            return incorrect(f"docs[:{got}] stops before the answer document {where}: it is at index {got}, and a "
                             "slice stops *before* its end index, so top_k must be one more than the index")
        if not 1 <= got <= len(docs):
            return incorrect(f"top_k must be between 1 and {len(docs)}, the number of candidates {where}")
        if got == first:
            return incorrect(_copied(got, label, _ranking_cases()[0][0]))
        if got < expected:
            return incorrect(f"docs[:{got}] does not contain the answer {where}")
        return incorrect(f"top_k={got} keeps the answer {where}, but a smaller top_k does too")
    corpus = article_corpus()
    k = min(k for k in range(1, len(corpus) + 1) if _keeps(corpus, k))
    return correct(f"smallest_top_k agrees on {len(_ranking_cases())} rankings. For the article's, top_k={k} keeps "
                   f"{ANSWER_DOC_ID} and sends {utf8_bytes(baseline_dump(corpus[:k])):,} bytes; but only because you "
                   "knew where the answer was. A real retriever's ranking moves (the checker's did), and cutting "
                   "top_k trades recall for bytes.")


q3 = Exercise(
    "1.3", "The smallest top_k that keeps the answer",
    checker=_check_smallest_top_k,
    ask="fill in smallest_top_k(docs, answer): the smallest k for which docs[:k] still contains answer, then run "
        "this cell again.",
    hints=(
        'Try k = 1, 2, 3, ... and ask, for each, whether the answer sentence is in one of docs[:k].',
        'docs[:k] stops before index k: if the answer document sits at index i, the first k that includes it '
        'is not i. The checker passes rankings in which the answer sits elsewhere.',
        'Shape: next(k for k in range(1, len(docs) + 1) if any(answer in d.text for d in docs[:k])).',
    ),
    stub='''
def smallest_top_k(docs, answer):
    """The smallest k for which docs[:k] contains answer."""
    return ____
''',
    solution='''
def smallest_top_k(docs, answer):
    """The smallest k for which docs[:k] contains answer."""
    return next(k for k in range(1, len(docs) + 1) if any(answer in d.text for d in docs[:k]))

k = smallest_top_k(docs, ANSWER)
print(k, [d.doc_id for d in docs[:k]])
''',
)


# -- q4 · how many candidates fit a token budget ---------------------------------------------------------

@cache
def _largest(docs: tuple[Document, ...], measure: Callable[[str], int], budget: int) -> int:
    return max((k for k in range(0, len(docs) + 1) if measure(baseline_dump(list(docs[:k]))) <= budget), default=0)


@cache
def _budget_cases() -> tuple[tuple[str, tuple[Document, ...], int], ...]:
    """The article's ranking with two budgets, two rankings of the checker's own, and one whose budget is exactly the
    tokens of its first four notes' dump (a dump at the budget fits: "at most", <=)."""
    article = tuple(article_corpus())
    exact = tuple(variant_corpus("q4-c", 6))
    return (("the article's ranking", article, TOKEN_BUDGET),
            ("the article's ranking", article, 30_000),
            ("another ranking of 9, other lengths", tuple(variant_corpus("q4-a", 9)), 9_000),
            ("another ranking of 7, other lengths", tuple(variant_corpus("q4-b", 7)), 20_000),
            ("another ranking of 6, other lengths", exact,
             cl100k_tokens(baseline_dump(list(exact[:4])))))


def _strictly_under(docs: tuple[Document, ...], budget: int) -> int:
    """What ``<`` instead of ``<=`` gives: the largest k whose dump is *under* the budget."""
    return _largest(docs, cl100k_tokens, budget - 1)


def _check_largest_top_k(largest_top_k: Any) -> Result:
    if not callable(largest_top_k):
        return incorrect(f"largest_top_k should be a function of (docs, budget), got {show(largest_top_k)}")
    first = None
    for label, docs, budget in _budget_cases():
        expected = _largest(docs, cl100k_tokens, budget)
        first = first if first is not None else expected
        got = call(largest_top_k, list(docs), budget, name="largest_top_k")
        where = f"for {label} and a budget of {budget:,} tokens"
        if not is_int(got):
            return incorrect(f"largest_top_k should return an int, got {show(got)} {where}")
        if got == expected:
            continue
        if not 0 <= got <= len(docs):
            return incorrect(f"top_k must be between 0 and {len(docs)} {where}")
        dump = baseline_dump(list(docs[:got]))
        if got == _strictly_under(docs, budget):
            return incorrect(f"baseline_dump(docs[:{got + 1}]) is exactly {budget:,} cl100k tokens {where}: a dump at "
                             "the budget fits. The budget is the most you may send, so compare with <=, not <")
        if got == _largest(docs, approx_tokens, budget):
            return incorrect(f"you measured with the chars/4 estimate {where}: baseline_dump(docs[:{got}]) is "
                             f"{approx_tokens(dump):,} by chars/4 but {cl100k_tokens(dump):,} real cl100k tokens")
        if got == _largest(docs, utf8_bytes, budget):
            return incorrect(f"you counted UTF-8 bytes {where}; the budget is in cl100k tokens")
        if got == _largest(docs, len, budget):
            return incorrect(f"you counted characters {where}; the budget is in cl100k tokens")
        tokens = cl100k_tokens(dump)
        if tokens > budget:
            return incorrect(f"baseline_dump(docs[:{got}]) is {tokens:,} cl100k tokens, over {budget:,} ({label})")
        if got == first:
            return incorrect(_copied(got, f"{label} with a budget of {budget:,}",
                                     "the article's ranking with TOKEN_BUDGET"))
        return incorrect(f"baseline_dump(docs[:{got}]) is {tokens:,} cl100k tokens {where}; a larger top_k still fits")
    article = _budget_cases()[0][1]
    k = _largest(article, cl100k_tokens, TOKEN_BUDGET)
    tail = ("it still contains the answer." if _keeps(article, k) else
            f"and docs[:{k}] does not even contain {ANSWER_DOC_ID}: a token cap on full text silently drops the "
            "answer.")
    return correct(f"largest_top_k agrees on {len(_budget_cases())} rankings and budgets, one budget exactly the tokens "
                   "of a dump (it fits). With the article's ranking "
                   f"and TOKEN_BUDGET, top_k={k} is {cl100k_tokens(baseline_dump(list(article[:k]))):,} cl100k "
                   f"tokens, within {TOKEN_BUDGET:,}; {tail}")


q4 = Exercise(
    "1.4", "How many candidates fit a token budget",
    checker=_check_largest_top_k,
    ask="fill in largest_top_k(docs, budget): the largest k whose dump baseline_dump(docs[:k]) fits in budget "
        "cl100k tokens, then run this cell again.",
    hints=(
        'Measure the dump of docs[:k] for every k and keep the largest that fits. The budget is in real '
        'cl100k tokens, not characters, not bytes, not chars/4.',
        'For k = 0 .. len(docs), compute cl100k_tokens of baseline_dump(docs[:k]) and compare it with the budget; '
        'the dump grows with k, so the answer is the last k that still fits. A dump of exactly budget tokens fits: '
        'the budget is the most you may send.',
        'Shape: max(k for k in range(len(docs) + 1) if cl100k_tokens(baseline_dump(docs[:k])) <= budget).',
    ),
    stub='''
def largest_top_k(docs, budget):
    """The largest k for which baseline_dump(docs[:k]) is at most budget cl100k tokens."""
    return ____
''',
    solution='''
def largest_top_k(docs, budget):
    """The largest k for which baseline_dump(docs[:k]) is at most budget cl100k tokens."""
    return max(k for k in range(len(docs) + 1) if cl100k_tokens(baseline_dump(docs[:k])) <= budget)

k = largest_top_k(docs, TOKEN_BUDGET)
print(k, cl100k_tokens(baseline_dump(docs[:k])))
''',
)
