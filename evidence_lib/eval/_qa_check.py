"""Validate question-answer items against the corpus they were written for.

An item is a JSON object with at least these keys (extra keys, e.g. ``question_en``, are allowed
and ignored)::

    id           str   unique within its file, e.g. "pydoc-001"
    question     str   what a developer would ask
    doc_id       str   the document that answers it
    answer_span  str   a literal substring of that document which answers the question
    start, end   int   half-open character range: docs[doc_id][start:end] == answer_span
    locate_term  str   1-64 characters a reader would search for; occurs in docs[doc_id]

``check_items`` enforces the shape above plus one corpus-wide rule: the ``answer_span`` occurs
exactly once in the whole corpus (all documents, overlapping occurrences counted), so a span
names one place and only one.

Two corpora ship in ``evidence_lib/eval/data/``:

* ``pydoc_qa.json``: Python's documentation topics, ``pydoc_data.topics.topics`` (one document
  per topic, doc_id = topic name, revision = the Python version). The file records
  ``python_version`` and ``corpus_sha256`` because the topics change between Python releases, and the
  series ships the topics it was written against (``evidence_lib.retrieval._pinned``, Python 3.11.7's).
* ``zh_qa.json``: the Chinese operations handbook in ``zh_corpus/`` (doc_id = file name without
  ``.txt``), read by :func:`folder_corpus`.

Standard library only, and no imports from the rest of evidence_lib, so
``scripts/check_qa.py`` can load this file on a bare Python of any version.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "DATA_DIR", "MAX_LOCATE_TERM", "REQUIRED_KEYS", "check_items", "corpus_sha256", "folder_corpus",
    "pydoc_corpus", "summarize",
]

#: Where the shipped QA files and the Chinese folder corpus live.
DATA_DIR = Path(__file__).resolve().parent / "data"

#: Keys every item must have, with the type each value must have (``bool`` is never an ``int`` here).
REQUIRED_KEYS: dict[str, type] = {
    "id": str,
    "question": str,
    "doc_id": str,
    "answer_span": str,
    "start": int,
    "end": int,
    "locate_term": str,
}

#: Longest allowed ``locate_term``, in characters.
MAX_LOCATE_TERM = 64

_EXCERPT = 60   # characters of text quoted in an error message
_LISTED = 5     # occurrences listed for a span that is not unique


def corpus_sha256(docs: Mapping[str, str]) -> str:
    """SHA-256 (hex) of a canonical serialization of ``docs``; independent of insertion order.

    Defined as the sha256 of the UTF-8 bytes of
    ``json.dumps(sorted(docs.items()), ensure_ascii=False, separators=(",", ":"))``.
    """
    payload = json.dumps(sorted(docs.items()), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _pinned():
    """:mod:`evidence_lib.retrieval._pinned`, also when this file is loaded on its own (``scripts/check_qa.py``)."""
    try:
        from ..retrieval import _pinned as pinned
    except ImportError:  # no package: load the sibling file by path (it is standard library only too)
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            "_evidence_pinned", Path(__file__).resolve().parent.parent / "retrieval" / "_pinned.py")
        if spec is None or spec.loader is None:  # a path always has a spec; narrowed for the type checker
            raise ImportError("evidence_lib/retrieval/_pinned.py cannot be loaded") from None
        pinned = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(pinned)
    return pinned


def pydoc_corpus(source: str = "pinned") -> tuple[dict[str, str], str]:
    """Python's documentation topics as ``(docs, revision)`` (see :func:`evidence_lib.retrieval._pinned.pydoc_topics`)."""
    return _pinned().pydoc_topics(source)


def folder_corpus(folder: str | Path) -> dict[str, str]:
    """Every ``*.txt`` directly in ``folder``, decoded as UTF-8, keyed by file name without ``.txt``.

    Line ends are kept exactly as stored (no newline translation), so offsets index the file's
    own characters. A file that is not valid UTF-8 raises ``UnicodeDecodeError``.
    """
    docs = {}
    for path in sorted(Path(folder).glob("*.txt")):
        if path.is_file():
            docs[path.stem] = path.read_bytes().decode("utf-8")
    return docs


def _short(text: str) -> str:
    return repr(text if len(text) <= _EXCERPT else text[:_EXCERPT] + "…")


def _occurrences(docs: Mapping[str, str], span: str) -> list[tuple[str, int]]:
    """Every (doc_id, start) where ``span`` occurs, overlapping occurrences included."""
    found = []
    for doc_id, text in docs.items():
        i = text.find(span)
        while i >= 0:
            found.append((doc_id, i))
            i = text.find(span, i + 1)
    return found


def _type_name(value: Any) -> str:
    return type(value).__name__


def _shown(value: Any) -> str:
    """A wrong value in a message: a short repr, or only the size of a list or object (which may nest deep)."""
    if isinstance(value, (list, dict)):
        return f"with {len(value)} entries"
    if isinstance(value, str):
        return _short(value)
    text = repr(value)
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "…"


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: valid as a JSON escape, never writable as UTF-8
        return False
    return True


def _surrogate_keys(item: Mapping[str, Any]) -> list[str]:
    """The item's top-level keys whose key or value (at any depth) holds a lone surrogate."""
    bad = []
    for key, value in item.items():
        stack, found = [key, value], False
        while stack and not found:
            v = stack.pop()
            if isinstance(v, str):
                found = not _encodable(v)
            elif isinstance(v, Mapping):
                stack.extend(v.keys())
                stack.extend(v.values())
            elif isinstance(v, list):
                stack.extend(v)
        if found:
            bad.append(key if isinstance(key, str) and _encodable(key) else repr(key))
    return bad


def _problems(docs: Mapping[str, str], item: Mapping[str, Any]) -> list[str]:
    bad = _surrogate_keys(item)
    if bad:  # the text checks below would quote these strings back
        return [f"{key} holds a lone surrogate (not UTF-8 text)" for key in bad]
    problems = []
    missing = [key for key in REQUIRED_KEYS if key not in item]
    if missing:
        problems.append("missing keys: " + ", ".join(missing))
    for key, kind in REQUIRED_KEYS.items():
        if key in item:
            value = item[key]
            if isinstance(value, bool) or not isinstance(value, kind):
                problems.append(f"{key} must be {kind.__name__}, got {_type_name(value)} {_shown(value)}")
    if problems:
        return problems   # the checks below need every key, with the right type

    doc_id, span, start, end, term = (item[k] for k in ("doc_id", "answer_span", "start", "end", "locate_term"))
    if not item["id"]:
        problems.append("id is empty")
    if not item["question"].strip():
        problems.append("question is empty")
    if not span:
        problems.append("answer_span is empty")
    if not 1 <= len(term) <= MAX_LOCATE_TERM:
        problems.append(f"locate_term must be 1-{MAX_LOCATE_TERM} characters, got {len(term)}")
    if doc_id not in docs:
        problems.append(f"unknown doc_id {doc_id!r}")
        return problems

    text = docs[doc_id]
    if not 0 <= start < end <= len(text):
        problems.append(f"[{start},{end}) is not a non-empty range inside {doc_id!r} (length {len(text)})")
    elif text[start:end] != span:
        hint = ""
        if span:
            at = text.find(span)
            hint = f"; answer_span occurs in {doc_id!r} at [{at},{at + len(span)})" if at >= 0 \
                else f"; answer_span does not occur in {doc_id!r}"
        problems.append(f"span mismatch at [{start},{end}): the text there is {_short(text[start:end])}, "
                        f"answer_span is {_short(span)}{hint}")
    if span:
        where = _occurrences(docs, span)
        if not where:
            problems.append("answer_span does not occur anywhere in the corpus")
        elif len(where) > 1:
            listed = ", ".join(f"{d}@{i}" for d, i in where[:_LISTED]) + (", …" if len(where) > _LISTED else "")
            problems.append(f"answer_span is not unique: {len(where)} occurrences in the corpus ({listed})")
    if term and term not in text:
        problems.append(f"locate_term {term!r} does not occur in {doc_id!r}")
    return problems


def check_items(docs: Mapping[str, str], items: Sequence[Any]) -> list[str]:
    """One error message per bad item, each starting with the item's id; ``[]`` when all are good.

    An item without a usable id is named ``item #<index>`` (0-based). A message lists every
    problem found in that item, separated by ``"; "``. A string holding a lone surrogate (a valid JSON
    escape such as ``"\\ud800"`` that no UTF-8 file can hold) is refused, naming its key.
    """
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        return [f"items must be a list of objects, got {_type_name(items)}"]
    errors = []
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            errors.append(f"item #{index}: must be an object, got {_type_name(item)}")
            continue
        item_id = item.get("id")
        name = item_id if isinstance(item_id, str) and item_id and _encodable(item_id) else f"item #{index}"
        problems = _problems(docs, item)
        if isinstance(item_id, str) and item_id:
            if item_id in seen:
                problems.insert(0, f"duplicate id (first used by item #{seen[item_id]})")
            else:
                seen[item_id] = index
        if problems:
            errors.append(f"{name}: " + "; ".join(problems))
    return errors


def summarize(docs: Mapping[str, str], items: Sequence[Mapping[str, Any]], *, deep: int = 2000,
              many: int = 5) -> dict[str, int]:
    """Counts for a one-line report: items, documents covered, spans starting at or past
    character ``deep``, and locate_terms occurring in more than ``many`` documents."""
    return {
        "items": len(items),
        "docs_covered": len({item.get("doc_id") for item in items}),
        "deep_spans": sum(1 for item in items if isinstance(item.get("start"), int) and item["start"] >= deep),
        "ambiguous_terms": sum(
            1 for item in items
            if isinstance(item.get("locate_term"), str) and item["locate_term"]
            and sum(item["locate_term"] in text for text in docs.values()) > many
        ),
    }
