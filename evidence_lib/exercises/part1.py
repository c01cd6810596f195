"""Workshop part 1: the baseline dump and how to measure it (notebook 01's ideas).

Exercises: q1 bytes vs tokens, q2 the answer's half-open range, q3 the smallest top_k that keeps the
answer, q4 how many candidates fit a token budget. Used by ``notebooks/exercises/workshop_part1.ipynb``.
"""

from __future__ import annotations

from typing import Any

from ..corpus import ANSWER, ANSWER_DOC_ID, article_corpus, baseline_dump
from ..measure import Size, approx_tokens, cl100k_tokens, utf8_bytes
from ._shared import is_int, pair_of_ints, show
from .core import Exercise, Result, correct, incorrect

__all__ = ["TOKEN_BUDGET", "q1", "q2", "q3", "q4"]

#: Part 1, q4: tokens an application sets aside for tool results in one turn.
TOKEN_BUDGET = 16_000


def _answer_doc():
    return next(d for d in article_corpus() if d.doc_id == ANSWER_DOC_ID)


# -- q1 · bytes and tokens of the dump ----------------------------------------------------------------

def _check_dump_size(answer: Any) -> Result:
    if not pair_of_ints(answer):
        return incorrect(f"the answer should be a pair of ints (UTF-8 bytes, cl100k tokens), got {show(answer)}")
    size = Size.of(baseline_dump(article_corpus()))
    n_bytes, n_tokens = answer
    if (n_bytes, n_tokens) == (size.cl100k_tokens, size.utf8_bytes):
        return incorrect("the two numbers are swapped: bytes first, then tokens")
    if n_bytes != size.utf8_bytes:
        if n_bytes == size.chars:
            return incorrect(f"{n_bytes:,} is the number of characters (code points), not UTF-8 bytes: a Chinese "
                             "character takes 3 bytes in UTF-8. Encode the string before counting")
        return incorrect(f"{n_bytes:,} is not the UTF-8 size of the string baseline_dump(docs) returns")
    if n_tokens != size.cl100k_tokens:
        if n_tokens == size.approx_tokens:
            return incorrect(f"{n_tokens:,} is langchain-core's chars/4 estimate, not a real token count; "
                             "count with the cl100k_base tokenizer (cl100k_tokens)")
        if n_tokens in (size.chars, size.utf8_bytes):
            return incorrect(f"{n_tokens:,} counts characters or bytes, not tokens; use cl100k_tokens")
        return incorrect(f"{n_tokens:,} is not the dump's cl100k_base token count")
    return correct(f"the dump is {size.utf8_bytes:,} UTF-8 bytes and {size.cl100k_tokens:,} cl100k tokens for "
                   f"{size.chars:,} characters. The chars/4 rule would have guessed {size.approx_tokens:,} tokens, "
                   f"{size.cl100k_tokens / size.approx_tokens:.1f}x too few for this Chinese text.")


q1 = Exercise(
    "1.1", "Bytes are not tokens",
    checker=_check_dump_size,
    ask="set dump_size to the pair (UTF-8 bytes, cl100k tokens) of the baseline dump, then run this cell again.",
    hints=(
        'The model is sent bytes and billed in tokens, and neither is len(text): len counts code points. How '
        'many bytes does one Chinese character take in UTF-8?',
        'baseline_dump(docs) is one str. utf8_bytes(text) counts its UTF-8 bytes and cl100k_tokens(text) its '
        'real cl100k tokens; Size.of(text) gives both, plus the chars/4 estimate to compare.',
        'Shape: measure the one string twice, bytes first: (utf8_bytes(dump), cl100k_tokens(dump)) with dump '
        'the baseline dump of docs.',
    ),
    stub="""
dump_size = ____  # (UTF-8 bytes, cl100k tokens)
""",
    solution="""
dump = baseline_dump(docs)
dump_size = (utf8_bytes(dump), cl100k_tokens(dump))
print(f"{dump_size[0]:,} UTF-8 bytes, {dump_size[1]:,} cl100k tokens, {approx_tokens(dump):,} by chars/4")
""",
)


# -- q2 · where the answer is: a half-open range of string indices --------------------------------------

def _check_answer_range(answer: Any) -> Result:
    doc = _answer_doc()
    start = doc.text.index(ANSWER)
    end = start + len(ANSWER)
    if not pair_of_ints(answer):
        return incorrect(f"the answer should be a pair of ints (start, end), got {show(answer)}")
    got = tuple(answer)
    if got == (start, end):
        return correct(f"{doc.doc_id}.text[{start}:{end}] is the answer sentence ({ANSWER}), and "
                       f"end - start = {end - start} = len(ANSWER): start is included, end is not.")
    if got == (start, end - 1):
        return incorrect(f"[{start}, {end - 1}) leaves out the last character {doc.text[end - 1]!r}: the end of a "
                         "half-open range is the first index *after* the text, so end - start == len(ANSWER)")
    if got == (start, len(ANSWER)):
        return incorrect("the second number is the end index, not the length")
    byte_start = utf8_bytes(doc.text[:start])
    if got == (byte_start, byte_start + utf8_bytes(ANSWER)):
        return incorrect(f"({got[0]:,}, {got[1]:,}) are UTF-8 byte offsets; the protocol counts Python string "
                         "indices (code points), the same numbers str.index and slicing use")
    if got == (start + 1, end + 1) or got == (start + 1, end):
        return incorrect("Python indices start at 0, not 1")
    dump = baseline_dump(article_corpus())
    if got[0] == dump.index(ANSWER):
        return incorrect("that is the position inside the dump; give the range inside d03's own text")
    return incorrect(f"{doc.doc_id}.text[{got[0]}:{got[1]}] is not the answer sentence")


q2 = Exercise(
    "1.2", "Where the answer sits: [start, end)",
    checker=_check_answer_range,
    ask="set answer_range to the pair (start, end) of the answer sentence inside d03's text, then run this "
        "cell again.",
    hints=(
        'A half-open range [start, end) includes start and excludes end, so end - start is the length of the '
        'text it holds, and text[start:end] is exactly that text.',
        "Search d03's own text (not the dump) for ANSWER with str.index: that is the start. The end is one "
        "past the answer's last character.",
        'Shape: start = d03.text.index(ANSWER), then the pair (start, start + len(ANSWER)); check that '
        'slicing d03.text with it gives ANSWER back.',
    ),
    stub="""
answer_range = ____  # (start, end) inside d03's text
""",
    solution="""
d03 = next(d for d in docs if d.doc_id == "d03")
start = d03.text.index(ANSWER)
answer_range = (start, start + len(ANSWER))
print(answer_range, d03.text[answer_range[0]:answer_range[1]])
""",
)


# -- q3 · the smallest top_k that keeps the answer ------------------------------------------------------

def _keeps(docs, k: int) -> bool:
    return any(ANSWER in d.text for d in docs[:k])


def _check_smallest_top_k(answer: Any) -> Result:
    docs = article_corpus()
    expected = min(k for k in range(1, len(docs) + 1) if _keeps(docs, k))
    if not is_int(answer):
        return incorrect(f"the answer should be an int, got {show(answer)}")
    if not 1 <= answer <= len(docs):
        return incorrect(f"top_k must be between 1 and {len(docs)}, the number of candidates")
    kept = ", ".join(d.doc_id for d in docs[:answer])
    if answer < expected:
        hint = (f"; the answer document is at index {expected - 1}, and a slice stops *before* its end index"
                if answer == expected - 1 else "")
        return incorrect(f"docs[:{answer}] is {kept}: the answer is not among them{hint}")
    if answer > expected:
        return incorrect(f"top_k={answer} keeps the answer, but a smaller top_k does too")
    sent = utf8_bytes(baseline_dump(docs[:answer]))
    return correct(f"top_k={answer} keeps {ANSWER_DOC_ID} and sends {sent:,} bytes. But you only knew {answer} "
                   "was enough because you knew where the answer was; a real retriever's ranking moves, and "
                   "cutting top_k trades recall for bytes.")


q3 = Exercise(
    "1.3", "The smallest top_k that keeps the answer",
    checker=_check_smallest_top_k,
    ask="set smallest_top_k to the smallest k for which docs[:k] still contains the answer, then run this cell "
        "again.",
    hints=(
        'Try k = 1, 2, 3, ... and ask, for each, whether the answer sentence is in one of docs[:k].',
        'docs[:k] stops before index k: if the answer document sits at index i, the first k that includes it '
        'is not i.',
        'Shape: next(k for k in range(1, len(docs) + 1) if any(ANSWER in d.text for d in docs[:k])).',
    ),
    stub="""
smallest_top_k = ____
""",
    solution="""
smallest_top_k = next(k for k in range(1, len(docs) + 1) if any(ANSWER in d.text for d in docs[:k]))
print(smallest_top_k, [d.doc_id for d in docs[:smallest_top_k]])
""",
)


# -- q4 · how many candidates fit a token budget ---------------------------------------------------------

def _largest(docs, measure, budget: int) -> int:
    return max((k for k in range(0, len(docs) + 1) if measure(baseline_dump(docs[:k])) <= budget), default=0)


def _check_largest_top_k(answer: Any) -> Result:
    if not is_int(answer):
        return incorrect(f"the answer should be an int, got {show(answer)}")
    docs = article_corpus()
    expected = _largest(docs, cl100k_tokens, TOKEN_BUDGET)
    if answer == expected:
        tokens = cl100k_tokens(baseline_dump(docs[:answer]))
        keeps = _keeps(docs, answer)
        tail = ("it still contains the answer." if keeps else
                f"and docs[:{answer}] does not even contain {ANSWER_DOC_ID}: a token cap on full text silently "
                "drops the answer.")
        return correct(f"top_k={answer} is {tokens:,} cl100k tokens, within {TOKEN_BUDGET:,}; {tail}")
    if answer == _largest(docs, approx_tokens, TOKEN_BUDGET):
        dump = baseline_dump(docs[:answer])
        return incorrect(f"you measured with the chars/4 estimate: baseline_dump(docs[:{answer}]) is "
                         f"{approx_tokens(dump):,} by chars/4 but {cl100k_tokens(dump):,} real cl100k tokens")
    if answer == _largest(docs, utf8_bytes, TOKEN_BUDGET):
        return incorrect("you counted UTF-8 bytes; the budget is in cl100k tokens")
    if answer == _largest(docs, len, TOKEN_BUDGET):
        return incorrect("you counted characters; the budget is in cl100k tokens")
    if 0 <= answer <= len(docs):
        tokens = cl100k_tokens(baseline_dump(docs[:answer]))
        if tokens > TOKEN_BUDGET:
            return incorrect(f"baseline_dump(docs[:{answer}]) is {tokens:,} cl100k tokens, over {TOKEN_BUDGET:,}")
        return incorrect(f"baseline_dump(docs[:{answer}]) is {tokens:,} cl100k tokens; a larger top_k still fits")
    return incorrect(f"top_k must be between 0 and {len(docs)}")


q4 = Exercise(
    "1.4", "How many candidates fit a token budget",
    checker=_check_largest_top_k,
    ask=f"set largest_top_k to the largest k whose dump baseline_dump(docs[:k]) fits in TOKEN_BUDGET "
        f"({TOKEN_BUDGET:,}) cl100k tokens, then run this cell again.",
    hints=(
        'Measure the dump of docs[:k] for every k and keep the largest that fits. The budget is in real '
        'cl100k tokens, not characters, not bytes, not chars/4.',
        'For k = 0 .. 12, compute cl100k_tokens of baseline_dump(docs[:k]) and compare it with TOKEN_BUDGET; '
        'the dump grows with k, so the answer is the last k that still fits.',
        'Shape: max(k for k in range(len(docs) + 1) if cl100k_tokens(baseline_dump(docs[:k])) <= '
        'TOKEN_BUDGET).',
    ),
    stub="""
largest_top_k = ____
""",
    solution="""
largest_top_k = max(k for k in range(len(docs) + 1) if cl100k_tokens(baseline_dump(docs[:k])) <= TOKEN_BUDGET)
print(largest_top_k, cl100k_tokens(baseline_dump(docs[:largest_top_k])))
""",
)
