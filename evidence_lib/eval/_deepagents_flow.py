"""The comparison flows: LangChain Deep Agents' filesystem tools, driven by a script, no model.

What they run. Each document is written to ``<workdir>/<doc_id>.txt`` and served by
``deepagents.backends.FilesystemBackend(root_dir=workdir, virtual_mode=True)``. The tools are the
real ``BaseTool`` objects Deep Agents hands a model: ``FilesystemMiddleware(backend=...).tools``,
built with the same defaults ``create_deep_agent`` uses. Each call is a model-style tool-call
dict ``{"name", "args", "id", "type": "tool_call"}``; the tools declare an injected
``runtime: ToolRuntime`` argument, which an agent's ToolNode fills in, so we pass one in the args
the way Deep Agents' own unit tests do. What we measure is the returned ``ToolMessage.content``:
the text a model would see, every byte and cl100k token of every call, grep's included. (In an agent,
``FilesystemMiddleware.wrap_tool_call`` does not alter ``grep`` or ``read_file`` results: both are
excluded from its large-result eviction, and binary offload is off by default. Model-specific harness
profiles are not applied here.)

The scripted reader gets the same help as the protocol flows, nothing more, per question: the literal
``locate_term``, and a chooser (:func:`evidence_lib.eval._flows.choose`) that picks among the files grep
shows: ``oracle`` is handed the answer's file if grep shows it; ``overlap`` ranks the shown files by the
question words in their grep lines (and file name) and tries them in turn. Two flows:

``deepagents`` (efficient use, the strongest scripted use of these tools):

1. ``grep`` for ``locate_term`` across the whole workdir, ``output_mode="content"`` (matching lines
   grouped under ``/<file>:``, each as ``  <line>: <text>``). If the ``answer_span`` appears verbatim in
   the answer file's lines grep shows (:func:`grep_visible`: the ``  <line>: `` prefix stripped, lines of
   consecutive numbers joined by ``"\\n"``), the question is answered by the grep alone;
2. else, per picked file in turn, ``read_file(file, offset=max(hit_line - 2, 0), limit=10)`` around its
   first hit (``hit_line`` is grep's 1-based number, so the window starts one line above the hit). Reading first
   around the hit holding the most question words instead (the compact reader's rule) was measured and answered
   fewer questions on three of eight set and chooser rows, so the first hit stays: its strongest use;
3. then, per picked file in the same order, pages of ``limit=100`` from the ``next offset`` the window's
   ``@@ ... @@`` header advertises, wrapping to line 0 once at the end of the file and stopping when the
   pages come back to where the window began, until the span is visible in the read lines of its file
   (lines of consecutive numbers joined by ``"\\n"``) or ``max_calls`` calls (grep included) were made.

``deepagents_default`` (the first version's flow, how a default agent reads): grep as above, but grep
output never counts as seen; per picked file ``read_file`` from its first hit (``offset = line - 1``) with
the default ``limit`` (100 lines), then pages onward with the advertised next offset, no wrapping.

``start``/``end`` are never used to decide where to read, only checked against the document.

What "answered" can and cannot prove. Deep Agents gives file paths and line numbers (in grep
output and in the read header); it gives no revision and no content hash. So ``answered`` only
means the span was visible (with deepagents >= 0.7.14 the read body is verbatim source, there is no
per-line gutter to strip). No citation made from these outputs can be verified against a snapshot: the
file could change between two reads and nothing in the outputs would show it. The byte and token totals
are the cost of getting the span into view.

Known edges, all of the tools' making, left as they are so the numbers are the tools' numbers:
``read_file`` reports LF line ends (a span containing ``\\r`` is never "visible"); it splits lines
with ``str.splitlines`` while grep counts ``\\n`` lines (its Python fallback reads with universal
newlines), so line numbers disagree in documents holding ``\\r``, ``\\x0c``, ``\\x1c``-``\\x1e``, ``\\x85``,
``\\u2028`` or ``\\u2029``; one read result is capped at 80,000 characters (a longer single line is cut
"mid-line" with no way to page past the cut); grep stops after 1,000 matches and its 80,000-character
output cap, and which matches survive then depends on directory order (ripgrep if it is on ``PATH``, else
a Python walk). ripgrep searches files in parallel, so the surviving matches change from run to run: with ripgrep
the eval runs each Deep Agents flow :data:`RIPGREP_RUNS` times and reports the median per metric and the spread
(:func:`median_summary`, issue 33 item 6); the Python walk gives the same output every run, so it runs once.

deepagents is imported only inside functions: importing this module does not need it.
"""

from __future__ import annotations

import re
import shutil
import statistics
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from evidence_lib._measure import cl100k_tokens

from ._flows import DEFAULT_CHOOSER, choose, read_in_turn

__all__ = ["DEEPAGENTS_FLOWS", "RIPGREP_RUNS", "SPREAD_KEYS", "available", "deepagents_version", "grep_engine",
           "grep_lines", "grep_visible", "median_summary", "repeats", "run_deepagents"]

#: The two Deep Agents flows: the efficient one and the first version's (a default agent's reading).
DEEPAGENTS_FLOWS = ("deepagents", "deepagents_default")

#: grep's output mode that shows matching lines with their line numbers.
GREP_OUTPUT_MODE = "content"
#: Lines of the first read around a grep hit (efficient flow), and of every later page.
AROUND_HIT_LINES = 10
PAGE_LINES = 100

# A doc_id becomes one file name. Deep Agents' FilesystemBackend (virtual mode) refuses any path
# containing "..", and ripgrep skips hidden files, so a leading dot is refused as well.
_DOC_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
_READ_HEADER = re.compile(r"@@ (.*) @@")
_NEXT_OFFSET = re.compile(r"next offset (\d+)")
_LINES = re.compile(r"lines (\d+)-(\d+)(?: of \d+)?")
_GREP_ROW = re.compile(r"  (\d+): (.*)", re.DOTALL)
_GREP_FILE = re.compile(r"(/.+\.txt):")


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


#: Runs of each Deep Agents flow when its grep is ripgrep (the median is reported): its capped matches vary.
RIPGREP_RUNS = 3
#: The summary figures whose spread over the runs (min, max) a repeated flow reports.
SPREAD_KEYS = ("answered", "median_bytes", "p90_bytes", "median_tokens", "p90_tokens", "median_calls",
               "picked_answer_first")


def grep_engine() -> str:
    """Which engine Deep Agents' grep uses in this process: ripgrep when ``rg`` is on PATH (its own test), else its
    Python walk."""
    return "ripgrep" if shutil.which("rg") else "python"


def repeats() -> int:
    """How many times to run a Deep Agents flow here: :data:`RIPGREP_RUNS` with ripgrep, once with the Python walk."""
    return RIPGREP_RUNS if grep_engine() == "ripgrep" else 1


def _median(values: list[Any]) -> Any:
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return statistics.median(values)
    if all(isinstance(v, Mapping) for v in values):
        keys = dict.fromkeys(k for v in values for k in v)
        return {k: _median([v[k] for v in values if k in v]) for k in keys}
    return values[0]


def median_summary(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One flow's summaries from several runs as one: every figure the median of the runs' (nested ones too, such as
    ``bytes_by_tool``), text as in the first run, plus ``runs`` and ``spread``: ``{figure: [min, max]}`` of
    :data:`SPREAD_KEYS`. A single summary comes back with ``runs: 1`` and no spread."""
    out = _median(list(summaries))
    out["runs"] = len(summaries)
    if len(summaries) > 1:
        out["spread"] = {k: [min(s[k] for s in summaries), max(s[k] for s in summaries)]
                         for k in SPREAD_KEYS if all(k in s for s in summaries)}
    return out


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
        runtime: ToolRuntime[None, dict[str, Any]] = ToolRuntime(
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


def grep_lines(grep_output: str) -> dict[str, list[tuple[int, str]]]:
    """The matching lines a content-mode grep output shows, per file: ``{"/<doc_id>.txt": [(line, text), ...]}``.

    Files in the order shown, lines as shown: grep's ``  <line>: `` prefix stripped, the rest of the row
    verbatim (a row cut by grep's output cap stays cut: it is what was shown). Rows are split on ``"\\n"``
    only, never ``splitlines()``: matched text may hold ``\\x0c``, ``\\u2028``, ...
    """
    out: dict[str, list[tuple[int, str]]] = {}
    current: list[tuple[int, str]] | None = None
    for row in grep_output.split("\n"):
        if row.startswith("  "):
            if current is not None and (m := _GREP_ROW.fullmatch(row)):
                current.append((int(m[1]), m[2]))
        elif m := _GREP_FILE.fullmatch(row):
            current = out.setdefault(m[1], [])
        else:
            current = None  # a note ("... [results truncated ...]") or a blank line ends the file's rows
    return out


def _runs(lines: Mapping[int, str]) -> list[str]:
    """The texts of runs of consecutive line numbers, each run's lines joined by ``"\\n"``."""
    runs: list[list[str]] = []
    last = None
    for n in sorted(lines):
        if last is not None and n == last + 1:
            runs[-1].append(lines[n])
        else:
            runs.append([lines[n]])
        last = n
    return ["\n".join(r) for r in runs]


def grep_visible(span: str, rows: Sequence[tuple[int, str]]) -> bool:
    """Is ``span`` visible in these grep rows of one file (``(line, text)``, prefix stripped)?

    Judged honestly: the span must appear verbatim inside the text of lines grep showed, and a span over
    several lines only when every one of those lines was shown, consecutively numbered (joined by ``"\\n"``).
    """
    return any(span in run for run in _runs(dict(rows)))


def _read_window(output: str) -> tuple[int | None, list[str], int | None, bool]:
    """A successful read_file result as ``(first line index, rows, advertised next offset, cut mid-line)``.

    Notices (truncation, offset clamp) sit above the ``@@ ... @@`` header; every row after the header is
    file content, the first one at 0-based index ``first line index``. No ``next offset`` field means the
    window reached the end of the file or was cut mid-line, and either way no further page exists.
    """
    if output.startswith("System reminder: "):  # the empty-file (or zero-line) reminder: no body
        return None, [], None, False
    rows = output.split("\n")
    for i, row in enumerate(rows):
        if m := _READ_HEADER.fullmatch(row):
            fields = m.group(1).split(" | ")
            offsets = [int(n.group(1)) for f in fields if (n := _NEXT_OFFSET.fullmatch(f))]
            spans = [int(n.group(1)) - 1 for f in fields if (n := _LINES.fullmatch(f))]
            return (spans[0] if spans else None), rows[i + 1:], (offsets[0] if offsets else None), \
                "truncated mid-line" in fields
    raise ValueError(
        "read_file output has no '@@ ... @@' status header; this flow parses the format of "
        f"deepagents >= 0.7.14 (installed: {deepagents_version()})"
    )


class _Seen:
    """What read_file showed of one file: rows by 0-based line index, plus pieces that cannot be joined."""

    def __init__(self) -> None:
        self.lines: dict[int, str] = {}
        self.pieces: list[str] = []

    def add(self, output: str) -> int | None:
        first, rows, nxt, cut = _read_window(output)
        if first is None or cut:  # a line cut mid-way joins nothing: it is checked on its own
            self.pieces.append("\n".join(rows))
        else:
            for k, row in enumerate(rows):
                self.lines[first + k] = row
        return nxt

    def visible(self, span: str) -> bool:
        return any(span in t for t in (*_runs(self.lines), *self.pieces))


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


def _doc_of(path: str) -> str:
    return path[1:].removesuffix(".txt")


def run_deepagents(
    docs: Mapping[str, str],
    items: Sequence[Mapping[str, Any]],
    workdir: Path,
    max_calls: int = 10,
    *,
    flow: str = "deepagents",
    chooser: str = DEFAULT_CHOOSER,
) -> list[dict[str, Any]]:
    """Answer each item with Deep Agents' grep and read_file; one result dict per item, in order.

    ``flow`` is ``"deepagents"`` (efficient) or ``"deepagents_default"`` (see the module docstring);
    ``chooser`` is ``"oracle"`` or ``"overlap"`` (:func:`evidence_lib.eval._flows.choose`).
    ``docs`` maps doc_id to text; each item has ``id, question, doc_id, answer_span, start, end,
    locate_term``. ``workdir`` must be empty, missing, or hold only ``<doc_id>.txt`` files (it
    becomes the backend's root). Each result is ``{"id", "answered", "calls", "bytes", "tokens",
    "calls_until_answer", "picked"}``; ``calls`` lists ``{"tool", "args", "utf8_bytes", "cl100k_tokens"}``
    with virtual paths (``"/<doc_id>.txt"``) in the args, ``bytes``/``tokens`` total every call made (the
    reader stops at the call that made the span visible), ``picked`` the chooser's doc_ids in order.
    """
    if flow not in DEEPAGENTS_FLOWS:
        raise ValueError(f"unknown Deep Agents flow {flow!r}; choose from {', '.join(DEEPAGENTS_FLOWS)}")
    if max_calls < 1:
        raise ValueError("max_calls must be at least 1 (the grep)")
    for item in items:
        _check_item(item, docs)
    workdir = Path(workdir)
    _write_docs(docs, workdir)
    tools = _DeepAgentsTools(workdir)
    results: list[dict[str, Any]] = []
    for item in items:
        calls: list[dict[str, Any]] = []

        def call(name: str, args: dict[str, Any], calls: list[dict[str, Any]] = calls) -> tuple[str, str]:
            content, status = tools.call(name, args)
            calls.append({
                "tool": name,
                "args": args,
                "utf8_bytes": len(content.encode("utf-8")),
                "cl100k_tokens": cl100k_tokens(content),
            })
            return content, status

        reader = _efficient if flow == "deepagents" else _default
        answered, picked = reader(call, partial(len, calls), item, max_calls, chooser)
        results.append({
            "id": item["id"],
            "answered": answered,
            "calls": calls,
            "bytes": sum(c["utf8_bytes"] for c in calls),
            "tokens": sum(c["cl100k_tokens"] for c in calls),
            "calls_until_answer": len(calls),
            "picked": picked,
        })
    return results


#: One tool call of a reader: the tool's name and arguments in, ``(content, status)`` of its reply out (counted).
Call = Callable[[str, dict[str, Any]], tuple[str, str]]


def _grep(call: Call, item: Mapping[str, Any], chooser: str) -> tuple[dict[str, list[tuple[int, str]]], list[str]]:
    """grep the term; the lines shown per file and the chooser's picks (doc_ids) among the files shown."""
    out, status = call("grep", {"pattern": item["locate_term"], "output_mode": GREP_OUTPUT_MODE})
    shown = grep_lines(out) if status == "success" else {}
    files = [f for f, rows in shown.items() if rows]
    texts = [(_doc_of(f), text) for f in files for _, text in shown[f]]
    return shown, choose(chooser, item, [_doc_of(f) for f in files], texts)


def _efficient(call: Call, made: Callable[[], int], item: Mapping[str, Any], max_calls: int, chooser: str) -> tuple[bool, list[str]]:
    """grep; the span in the answer file's grep lines? else per pick 10 lines around its first hit, then pages."""
    span, answer = item["answer_span"], f"/{item['doc_id']}.txt"
    shown, picked = _grep(call, item, chooser)
    if grep_visible(span, shown.get(answer, [])):
        return True, picked
    seen: dict[str, _Seen] = {}

    def reading(path: str) -> Iterator[None]:
        lines = seen.setdefault(path, _Seen())
        begin = max(min(n for n, _ in shown[path]) - 2, 0)
        out, status = call("read_file", {"file_path": path, "offset": begin, "limit": AROUND_HIT_LINES})
        nxt = lines.add(out) if status == "success" else None
        yield
        if status != "success":
            return
        wrapped = False
        while True:
            if nxt is None:  # the end of the file: once back to line 0, unless the window began there
                if wrapped or begin == 0:
                    return
                nxt, wrapped = 0, True
            if wrapped and nxt >= begin:
                return  # back where the first window began: the whole file was shown
            out, status = call("read_file", {"file_path": path, "offset": nxt, "limit": PAGE_LINES})
            nxt = lines.add(out) if status == "success" else None
            yield
            if status != "success":
                return

    readings = [reading(f"/{d}.txt") for d in picked]
    return read_in_turn(readings, lambda: made() < max_calls,
                        lambda: answer in seen and seen[answer].visible(span)), picked


def _default(call: Call, made: Callable[[], int], item: Mapping[str, Any], max_calls: int, chooser: str) -> tuple[bool, list[str]]:
    """grep (never counted as seen); per pick read_file from its first hit with the default limit, then onward."""
    span, answer = item["answer_span"], f"/{item['doc_id']}.txt"
    shown, picked = _grep(call, item, chooser)
    seen: dict[str, _Seen] = {}

    def reading(path: str) -> Iterator[None]:
        lines = seen.setdefault(path, _Seen())
        nxt: int | None = min(n for n, _ in shown[path]) - 1
        while nxt is not None:
            out, status = call("read_file", {"file_path": path, "offset": nxt})
            nxt = lines.add(out) if status == "success" else None
            yield

    readings = [reading(f"/{d}.txt") for d in picked]
    return read_in_turn(readings, lambda: made() < max_calls,
                        lambda: answer in seen and seen[answer].visible(span)), picked
