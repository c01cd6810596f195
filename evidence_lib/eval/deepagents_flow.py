"""The comparison flow: LangChain Deep Agents' filesystem tools, driven by a script, no model.

What it runs. Each document is written to ``<workdir>/<doc_id>.txt`` and served by
``deepagents.backends.FilesystemBackend(root_dir=workdir, virtual_mode=True)``. The tools are the
real ``BaseTool`` objects Deep Agents hands a model: ``FilesystemMiddleware(backend=...).tools``,
built with the same defaults ``create_deep_agent`` uses. Each call is a model-style tool-call
dict ``{"name", "args", "id", "type": "tool_call"}``; the tools declare an injected
``runtime: ToolRuntime`` argument, which an agent's ToolNode fills in, so we pass one in the args
the way Deep Agents' own unit tests do. What we measure is the returned ``ToolMessage.content``:
the text a model would see. (In an agent, ``FilesystemMiddleware.wrap_tool_call`` does not alter
``grep`` or ``read_file`` results: both are excluded from its large-result eviction, and binary
offload is off by default. Model-specific harness profiles are not applied here.)

The scripted reader gets the same help as the protocol flows, nothing more, per question:

1. ``grep`` for the literal ``locate_term`` across the whole workdir, ``output_mode="content"``
   (matching lines grouped under ``/<file>:``, each as ``  <line>: <text>``);
2. if the answer's file (``/<doc_id>.txt``) is among the files grep shows, ``read_file`` it
   from its first matching line (``offset = line - 1``) with Deep Agents' default ``limit``
   (100 lines); if grep does not show that file, the question is not answered;
3. page on with the ``next offset`` the ``@@ ... @@`` status header advertises, until the whole
   ``answer_span`` is visible in the concatenated reads of that file, the file ends (no next
   offset), or ``max_calls`` tool calls (grep included) were made.

``start``/``end`` are never used to decide where to read, only checked against the document.
The reader only pages forward: a span that begins before the locate term's first matching line
is never reached.

What "answered" can and cannot prove. Deep Agents gives file paths and line numbers (in grep
output and in the read header); it gives no revision and no content hash. So ``answered`` only
means the span was visible: the ``answer_span`` appears verbatim in the concatenated bodies of
the ``read_file`` outputs (the text below each status header; with deepagents >= 0.7.14 that body
is verbatim source, there is no per-line gutter to strip). No citation made from these outputs
can be verified against a snapshot: the file could change between two reads and nothing in the
outputs would show it. The byte and token totals are the cost of getting the span into view.

Known edges, all of the tools' making, left as they are so the numbers are the tools' numbers:
``read_file`` reports LF line ends (a span containing ``\\r`` is never "visible"); it splits lines
with ``str.splitlines`` while grep counts ``\\n`` lines, so line numbers disagree in documents
holding ``\\x0c``, ``\\x1c``-``\\x1e``, ``\\x85``, ``\\u2028`` or ``\\u2029``; one read result is capped at
80,000 characters (a longer single line is cut "mid-line" with no way to page past the cut);
grep stops after 1,000 matches and its 80,000-character output cap, and which matches survive
then depends on directory order (ripgrep if it is on ``PATH``, else a Python walk).

deepagents is imported only inside functions: importing this module does not need it.
"""

from __future__ import annotations

import re

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evidence_lib.measure import cl100k_tokens

__all__ = ["available", "deepagents_version", "run_deepagents"]

#: grep's output mode that shows matching lines with their line numbers.
GREP_OUTPUT_MODE = "content"

# A doc_id becomes one file name. Deep Agents' FilesystemBackend (virtual mode) refuses any path
# containing "..", and ripgrep skips hidden files, so a leading dot is refused as well.
_DOC_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
_READ_HEADER = re.compile(r"@@ (.*) @@")
_NEXT_OFFSET = re.compile(r"next offset (\d+)")
_GREP_ROW = re.compile(r"  (\d+): ")


def available() -> bool:
    """True when deepagents (and the pieces of LangChain this flow uses) can be imported."""
    try:
        import deepagents  # noqa: F401
        from deepagents.backends import FilesystemBackend  # noqa: F401
        from deepagents.middleware.filesystem import FilesystemMiddleware  # noqa: F401
        from langchain.tools import ToolRuntime  # noqa: F401
    except ImportError:
        return False
    return True


def deepagents_version() -> str | None:
    """The installed deepagents version, or None when it is not installed."""
    try:
        import deepagents
    except ImportError:
        return None
    return str(deepagents.__version__)


class _DeepAgentsTools:
    """Deep Agents' ``ls``/``read_file``/``grep`` bound to one FilesystemBackend, called like a model."""

    def __init__(self, root: Path) -> None:
        from deepagents.backends import FilesystemBackend
        from deepagents.middleware.filesystem import FilesystemMiddleware

        backend = FilesystemBackend(root_dir=root, virtual_mode=True)
        # Defaults as in create_deep_agent (no permissions, no custom descriptions).
        middleware = FilesystemMiddleware(backend=backend)
        self._tools = {t.name: t for t in middleware.tools}
        self._calls = 0

    def call(self, name: str, args: Mapping[str, Any]) -> tuple[str, str]:
        """Run one tool call; return ``(content, status)`` of the ToolMessage the model would get."""
        from langchain.tools import ToolRuntime
        from langchain_core.messages import ToolMessage

        self._calls += 1
        call_id = f"call_{self._calls}"  # deterministic; never part of the returned data
        runtime = ToolRuntime(
            state={}, context=None, config={}, stream_writer=lambda _chunk: None, tool_call_id=call_id, store=None
        )
        message = self._tools[name].invoke(
            {"name": name, "args": {**args, "runtime": runtime}, "id": call_id, "type": "tool_call"}
        )
        if not isinstance(message, ToolMessage) or message.tool_call_id != call_id:
            raise TypeError(f"deepagents {name} returned {type(message).__name__}, not this call's ToolMessage")
        if not isinstance(message.content, str):
            raise TypeError(f"deepagents {name} returned non-text content (multimodal blocks)")
        return message.content, str(message.status)


def _first_match_line(grep_output: str, file_path: str) -> int | None:
    """First line number grep shows under ``<file_path>:`` in content mode, or None."""
    header = f"{file_path}:"
    in_file = False
    lines: list[int] = []
    for row in grep_output.split("\n"):  # not splitlines(): matched text may hold \x0c, \u2028, ...
        if row.startswith("  "):
            if in_file and (m := _GREP_ROW.match(row)):
                lines.append(int(m.group(1)))
        else:
            in_file = row == header
    return min(lines) if lines else None


def _read_body(output: str) -> tuple[str, int | None]:
    """Split a successful read_file result into (verbatim body, advertised next offset).

    Notices (truncation, offset clamp) sit above the ``@@ ... @@`` header; every line after the
    header is file content. No ``next offset`` field means the window reached the end of the file
    or was cut mid-line, and either way no further page exists.
    """
    if output.startswith("System reminder: "):  # the empty-file (or zero-line) reminder: no body
        return "", None
    rows = output.split("\n")
    for i, row in enumerate(rows):
        if m := _READ_HEADER.fullmatch(row):
            fields = m.group(1).split(" | ")
            offsets = [int(n.group(1)) for f in fields if (n := _NEXT_OFFSET.fullmatch(f))]
            return "\n".join(rows[i + 1 :]), (offsets[0] if offsets else None)
    raise ValueError(
        "read_file output has no '@@ ... @@' status header; this flow parses the format of "
        f"deepagents >= 0.7.14 (installed: {deepagents_version()})"
    )


def _check_item(item: Mapping[str, Any], docs: Mapping[str, str]) -> None:
    doc_id = item["doc_id"]
    if doc_id not in docs:
        raise ValueError(f"item {item['id']!r}: doc_id {doc_id!r} is not among the documents")
    span, term = item["answer_span"], item["locate_term"]
    if not isinstance(span, str) or not span:
        raise ValueError(f"item {item['id']!r}: answer_span must be a non-empty string")
    if not isinstance(term, str) or not term:
        raise ValueError(f"item {item['id']!r}: locate_term must be a non-empty string")
    start, end = item.get("start"), item.get("end")
    if start is not None and end is not None and docs[doc_id][start:end] != span:
        raise ValueError(f"item {item['id']!r}: docs[doc_id][start:end] is not answer_span")


def _write_docs(docs: Mapping[str, str], workdir: Path) -> None:
    names = {}
    for doc_id in docs:
        if not isinstance(doc_id, str) or not _DOC_ID.fullmatch(doc_id) or ".." in doc_id:
            raise ValueError(f"doc_id {doc_id!r} cannot be a file name under FilesystemBackend's virtual mode")
        names[f"{doc_id}.txt"] = doc_id
    workdir.mkdir(parents=True, exist_ok=True)
    strangers = sorted(p.name for p in workdir.iterdir() if p.name not in names)
    if strangers:
        # grep searches the whole root: any other file would change its output.
        raise ValueError(f"workdir holds files this flow did not write: {strangers[:5]}")
    for name, doc_id in names.items():
        (workdir / name).write_bytes(docs[doc_id].encode("utf-8"))  # bytes: no newline translation


def run_deepagents(
    docs: Mapping[str, str],
    items: Sequence[Mapping[str, Any]],
    workdir: Path,
    max_calls: int = 10,
) -> list[dict[str, Any]]:
    """Answer each item with Deep Agents' grep and read_file; one result dict per item, in order.

    ``docs`` maps doc_id to text; each item has ``id, question, doc_id, answer_span, start, end,
    locate_term``. ``workdir`` must be empty, missing, or hold only ``<doc_id>.txt`` files (it
    becomes the backend's root). Each result is ``{"id", "answered", "calls", "bytes",
    "tokens"}``; ``calls`` lists ``{"tool", "args", "utf8_bytes", "cl100k_tokens"}`` with
    virtual paths (``"/<doc_id>.txt"``) in the args, and ``bytes``/``tokens`` total every call
    made (the reader stops at the call that made the span visible).
    """
    if max_calls < 1:
        raise ValueError("max_calls must be at least 1 (the grep)")
    for item in items:
        _check_item(item, docs)
    workdir = Path(workdir)
    _write_docs(docs, workdir)
    tools = _DeepAgentsTools(workdir)

    results: list[dict[str, Any]] = []
    for item in items:
        span = item["answer_span"]
        file_path = f"/{item['doc_id']}.txt"
        calls: list[dict[str, Any]] = []

        def call(name: str, args: dict[str, Any]) -> tuple[str, str]:
            content, status = tools.call(name, args)
            calls.append({
                "tool": name,
                "args": args,
                "utf8_bytes": len(content.encode("utf-8")),
                "cl100k_tokens": cl100k_tokens(content),
            })
            return content, status

        answered = False
        grep_out, grep_status = call("grep", {"pattern": item["locate_term"], "output_mode": GREP_OUTPUT_MODE})
        line = _first_match_line(grep_out, file_path) if grep_status == "success" else None
        if line is not None:
            seen: list[str] = []
            offset: int | None = line - 1
            while offset is not None and len(calls) < max_calls:
                out, status = call("read_file", {"file_path": file_path, "offset": offset})
                if status != "success":
                    break
                body, offset = _read_body(out)
                seen.append(body)
                # Consecutive windows end on line boundaries, so "\n" rejoins them.
                if span in "\n".join(seen):
                    answered = True
                    break

        results.append({
            "id": item["id"],
            "answered": answered,
            "calls": calls,
            "bytes": sum(c["utf8_bytes"] for c in calls),
            "tokens": sum(c["cl100k_tokens"] for c in calls),
        })
    return results
