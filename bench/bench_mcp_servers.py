#!/usr/bin/env python3
"""Three MCP document servers side by side on the same folder and questions (issue 27; notebook 13 prints the result).

    python bench/bench_mcp_servers.py                   # pydoc and kernel_en sets -> bench/results/mcp_servers.json
    python bench/bench_mcp_servers.py --sets pydoc --limit 3 --out /tmp/smoke.json

Every server runs as its own process and is driven through the official MCP Python SDK client (stdio), with the same
help: each question's ``locate_term`` and a chooser (:data:`evidence_lib.eval._flows.CHOOSERS`) picking the document
to read among those the server showed. At most :data:`~evidence_lib.eval._flows.MAX_CALLS` calls a question.

* ``evidence`` (``python -m evidence_lib mcp --corpus DIR``, compact profile): ``start_task``, then the eval's
  compact flow (:func:`evidence_lib.eval._flows.protocol_flow`'s steps, each call over MCP), then the answer in the
  one answer format sent to ``verify_citations``. The server's ``--corpus`` has the eval's BM25 retriever behind it
  (:func:`evidence_lib.eval._run.bm25_source`), so its locate ranks documents as the eval's does. Answered: the
  server said ``verified`` for a citation of the span.
* ``filesystem`` (npm ``@modelcontextprotocol/server-filesystem`` in build/mcp-node/peers/): its search
  (``search_files``, which matches file *names*, so it is tried with the term once), the folder's listing, then per
  picked file ``read_text_file(head=100)`` and, if the span is not in it, the whole file (head/tail are its only
  windows and give no position clue, so the middle of a file is reached only by reading it all). Answered: the span
  appeared verbatim in a reply; nothing can be verified (no revision, no hash, no range).
* ``fetch`` (PyPI ``mcp-server-fetch`` in build/mcp-fetch-venv/, ``--allow-private-ips`` to reach a loopback
  ``http.server`` over the folder): the folder's index page whole (``max_length`` at its maximum, one call), then per
  picked file windows of ``max_length`` 5,000 characters (its default) from ``start_index`` 0 onward. Answered: the span appeared verbatim in the windows read
  (consecutive windows joined); nothing can be verified.

Bytes and tokens count the text content blocks a client receives (UTF-8 bytes, cl100k tokens) up to and including the
call that made the answer visible (``evidence``: citable); the filesystem server's ``structuredContent`` repeats the
text and is not counted. A peer that is not installed is skipped with the reason.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import re
import shutil
import statistics
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.messages import ToolMessage

from evidence_lib._answers import format_answer
from evidence_lib._index import EvidenceIndex
from evidence_lib._toolkit import MAX_QUERY_CHARS
from evidence_lib.course.mcp_session import McpSession
from evidence_lib.eval._answered import answer_citation
from evidence_lib.eval._flows import MAX_CALLS, Run, choose, read_in_turn, read_located
from evidence_lib.eval._run import load_qa
from evidence_lib.profiles import COMPACT, excerpts
from evidence_lib.retrieval import BM25Retriever
from evidence_lib.retrieval._corpora import folder_corpus, pydoc_corpus

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "mcp_servers.json"
FILESYSTEM_BIN = ROOT / "build" / "mcp-node" / "peers" / "node_modules" / ".bin" / "mcp-server-filesystem"
FETCH_PYTHON = ROOT / "build" / "mcp-fetch-venv" / "bin" / "python"
SERVERS = ("evidence", "filesystem", "fetch")
#: Where a run writes its folders: a fresh temporary folder whose path has the same length in every run (the
#: filesystem server's search replies name full paths, so their bytes depend on it).
WORK_PREFIX = "evidence-mcp-bench-"
#: Lines the filesystem reader's first look reads (``read_text_file(head=...)``).
HEAD_LINES = 100
#: The fetch server's default window (``max_length``), in characters: how its reader reads a file.
FETCH_WINDOW = 5_000
#: The largest window it allows: how its reader reads the folder's index page, whole, in one call (windows of 5,000
#: would spend most of the 10 calls on the listing of a large folder, and each costs a page conversion).
LISTING_WINDOW = 999_999
#: The sets: name -> (QA file, how to get its folder).
SETS = {"pydoc": ROOT / "evidence_lib" / "eval" / "data" / "pydoc_qa.json",
        "kernel_en": ROOT / "bench" / "data" / "kernel_en_qa.json"}
ANSWERED = {
    "evidence": "verify_citations (the server) said verified for the answer citing the span: those bytes were served "
                "unchanged to this task and read",
    "filesystem": "the span appeared verbatim in a read_text_file reply; no revision, hash or range: nothing to verify",
    "fetch": "the span appeared verbatim in the fetch windows read (consecutive windows joined); no revision, hash or "
             "range: nothing to verify",
}
HOW = {
    "evidence": "start_task; locate_evidence(term, query=question); picks among located documents; pages around the "
                "best matches (the eval's compact flow, every call over MCP); then verify_citations on the answer",
    "filesystem": f"search_files(pattern=*term*) (names only); list_directory; picks among the listed files; "
                  f"read_text_file(head={HEAD_LINES}), then the whole file",
    "fetch": f"fetch(index page, max_length={LISTING_WINDOW:,}): the whole listing; picks among the listed files; "
             f"fetch(file, max_length={FETCH_WINDOW:,}, start_index=0, 5000, ...)",
}


@contextmanager
def client(command: str, args: Sequence[str], cwd: Path | None = None) -> Iterator[McpSession]:
    """A server process on stdio, through the SDK's client (:class:`~evidence_lib.course.mcp_session.McpSession`)."""
    session = McpSession.stdio(command, args, cwd=str(cwd) if cwd else None)
    try:
        yield session
    finally:
        session.close()


# -- the folder and the questions -------------------------------------------------------------------------------

def pydoc_folder(root: Path) -> Path:
    """The pydoc topics (the QA set's corpus) written as ``<doc_id>.txt`` files: the folder all three servers read."""
    folder = root / "pydoc"
    folder.mkdir(parents=True, exist_ok=True)
    for d in pydoc_corpus():
        (folder / f"{d.doc_id}.txt").write_text(d.text, encoding="utf-8", newline="")
    return folder


def kernel_folder(root: Path) -> Path:
    """build/kernel/kernel_en (unpacked from bench/data/ the first time, bench/eval_compare.py), copied under
    ``root``."""
    sys.path.insert(0, str(ROOT / "bench"))
    from eval_compare import KERNEL, unpack_corpora

    unpack_corpora(["kernel_en"])
    folder = root / "kernel_en"
    if not folder.is_dir():
        shutil.copytree(KERNEL / "kernel_en", folder)
    return folder


FOLDERS: dict[str, Callable[[Path], Path]] = {"pydoc": pydoc_folder, "kernel_en": kernel_folder}


def questions(name: str, folder: Path, limit: int | None) -> tuple[list[dict[str, Any]], list]:
    """The set's QA items (checked against the folder's documents) and the folder's documents."""
    docs = folder_corpus(folder)
    qa_docs = pydoc_corpus() if name == "pydoc" else docs  # the pydoc set's hash names the pydoc corpus
    items = load_qa(SETS[name], qa_docs)
    return (items[:limit] if limit else items), docs


# -- the evidence server -----------------------------------------------------------------------------------------

def evidence_flow(c: McpSession, corpus: EvidenceIndex, item: Mapping[str, Any], chooser: str,
                  retriever: BM25Retriever) -> dict[str, Any]:
    """The eval's compact flow with every call over MCP, one task per question, then ``verify_citations``.
    ``retriever``: BM25 over the folder the server reads, for the question words common in it (the eval's reader
    asks its own retriever; the server's is the same BM25 over the same documents)."""
    run, seen = Run(item["id"]), []
    text, _ = c.call("start_task", {})
    run.record("start_task", {}, text)
    task = json.loads(text)["task"]

    def call(name: str, args: dict[str, Any]) -> ToolMessage:
        body, err = c.call(name, {"task": task, **args})
        run.record(name, args, body)
        msg = ToolMessage(content=body, tool_call_id=f"call-{len(run.calls)}", status="error" if err else "success")
        seen.append(msg)
        return msg

    def answered() -> bool:
        if answer_citation(corpus, item, excerpts(seen)) is not None:
            run.done()
            return True
        return False

    first = call("locate_evidence", {"term": item["locate_term"], "query": item["question"][:MAX_QUERY_CHARS]})
    if not answered():
        read_located(call, run, item, first, COMPACT, chooser, retriever, lambda: len(run.calls) < MAX_CALLS + 1,
                     answered)  # MAX_CALLS + 1: start_task
    row = run.as_dict()
    row["verified"], row["verify_reply"] = (_verify(c, task, corpus, item, seen) if run.answered
                                            else (False, None))
    return row


def _verify(c: McpSession, task: str, corpus: EvidenceIndex, item: Mapping[str, Any], seen: list) -> tuple[bool, dict]:
    """The answer citing exactly the span (revision as the replies showed it), checked by ``verify_citations``."""
    cite = answer_citation(corpus, item, excerpts(seen))
    answer = format_answer(item["question"], [(item["doc_id"], cite.revision, item["start"], item["end"],
                                               item["answer_span"])])
    body, err = c.call("verify_citations", {"task": task, "answer": answer})
    reply = json.loads(body) if not err else {"error": body}
    return bool(reply.get("verified")), {"utf8_bytes": len(body.encode()), "reply": reply}


# -- the reference servers ---------------------------------------------------------------------------------------

def _visible(item: Mapping[str, Any], texts: Sequence[str]) -> bool:
    return any(item["answer_span"] in t for t in texts)


def filesystem_flow(c: McpSession, folder: Path, item: Mapping[str, Any], chooser: str) -> dict[str, Any]:
    """Its name search with the term, the listing, then per picked file the first lines and the whole file."""
    run = Run(item["id"])

    def call(name: str, args: dict[str, Any]) -> str:
        text, _ = c.call(name, args)
        run.record(name, args, text)
        if _visible(item, [text]) and name == "read_text_file":
            run.done()
        return text

    found = call("search_files", {"path": str(folder), "pattern": f"**/*{item['locate_term']}*"})
    listing = found if item["doc_id"] + ".txt" in found else call("list_directory", {"path": str(folder)})
    names = re.findall(r"([^\s/\]]+)\.txt\b", found + "\n" + listing)
    run.picked = choose(chooser, item, names)

    def reading(doc_id: str) -> Iterator[None]:
        path = str(folder / f"{doc_id}.txt")
        call("read_text_file", {"path": path, "head": HEAD_LINES})
        yield
        call("read_text_file", {"path": path})
        yield

    read_in_turn([reading(d) for d in run.picked], lambda: len(run.calls) < MAX_CALLS, lambda: run.answered)
    return run.as_dict()


_FETCH_BODY = re.compile(r"Contents of [^\n]*:\n(.*?)(?:\n\n<error>Content truncated\..*</error>)?\Z", re.S)


def fetch_flow(c: McpSession, base: str, item: Mapping[str, Any], chooser: str) -> dict[str, Any]:
    """The folder's whole index page in one call, then windows of the picked files."""
    run = Run(item["id"])

    def call(args: dict[str, Any]) -> str:
        text, _ = c.call("fetch", args)
        run.record("fetch", args, text)
        return text

    listing = call({"url": base + "/", "max_length": LISTING_WINDOW})
    run.picked = choose(chooser, item, dict.fromkeys(re.findall(r"<([^<>\s]+)\.txt>", listing)))

    def reading(doc_id: str) -> Iterator[None]:
        body, at = "", 0
        while True:
            page = call({"url": f"{base}/{doc_id}.txt", "max_length": FETCH_WINDOW, "start_index": at})
            m = _FETCH_BODY.search(page)
            body += m.group(1) if m else ""
            if item["answer_span"] in body and doc_id == item["doc_id"]:
                run.done()
            yield
            more = re.search(r"start_index of (\d+)", page)
            if more is None:
                return
            at = int(more.group(1))

    read_in_turn([reading(d) for d in run.picked], lambda: len(run.calls) < MAX_CALLS, lambda: run.answered)
    return run.as_dict()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    extensions_map = {".txt": "text/plain; charset=utf-8", "": "application/octet-stream"}

    def log_message(self, *_args: Any) -> None:  # the bench prints its own summary
        pass


@contextmanager
def http_folder(folder: Path) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` serving ``folder`` (the fetch server's way to read local files)."""
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# -- running and summing up --------------------------------------------------------------------------------------

def skipped(server: str) -> str | None:
    """Why ``server`` cannot run here, or ``None``."""
    if server == "filesystem" and not (FILESYSTEM_BIN.exists() and shutil.which("node")):
        return ("not installed: npm install --prefix build/mcp-node/peers @modelcontextprotocol/server-filesystem "
                "(needs Node)")
    if server == "fetch" and not FETCH_PYTHON.exists():
        return "not installed: python -m venv build/mcp-fetch-venv && build/mcp-fetch-venv/bin/pip install mcp-server-fetch"
    return None


def run_server(server: str, folder: Path, docs: list, items: list, chooser: str) -> list[dict]:
    """Every question through one server process (``docs``: the folder's documents)."""
    if server == "evidence":
        corpus, retriever = EvidenceIndex.in_memory(docs), BM25Retriever.from_texts({d.doc_id: d.text for d in docs})
        with client(sys.executable, ["-m", "evidence_lib", "mcp", "--corpus", str(folder)], ROOT) as c:
            return [evidence_flow(c, corpus, item, chooser, retriever) for item in items]
    if server == "filesystem":
        with client(str(FILESYSTEM_BIN), [str(folder)]) as c:
            return [filesystem_flow(c, folder, item, chooser) for item in items]
    with http_folder(folder) as base, client(str(FETCH_PYTHON), ["-m", "mcp_server_fetch", "--allow-private-ips",
                                                                  "--ignore-robots-txt"]) as c:
        return [fetch_flow(c, base, item, chooser) for item in items]


def _median(values: list[int]) -> float | None:
    return statistics.median(values) if values else None


def summary(server: str, rows: list[dict]) -> dict[str, Any]:
    """Answered (and, for ours, verified) counts and medians over every question and over the answered ones."""
    answered = [r for r in rows if r["answered"]]
    out = {"questions": len(rows), "answered": len(answered), "answered_means": ANSWERED[server], "how": HOW[server],
           "median_bytes": _median([r["bytes"] for r in rows]), "median_tokens": _median([r["tokens"] for r in rows]),
           "median_bytes_answered": _median([r["bytes"] for r in answered]),
           "median_tokens_answered": _median([r["tokens"] for r in answered]),
           "median_calls": _median([r["calls_until_answer"] for r in rows])}
    out["verified"] = sum(1 for r in rows if r.get("verified")) if server == "evidence" else None
    if server == "evidence":
        out["median_verify_reply_bytes"] = _median([r["verify_reply"]["utf8_bytes"] for r in answered])
    return out


def run_set(name: str, work: Path, limit: int | None, chooser: str) -> dict[str, Any]:
    """One QA set on every server that runs here."""
    folder = FOLDERS[name](work)
    items, docs = questions(name, folder, limit)
    result: dict[str, Any] = {"set": name, "documents": len(docs), "folder_bytes": sum(len(d.text.encode()) for d in docs),
                              "questions": len(items), "chooser": chooser, "servers": {}, "skipped": {},
                              "per_question": {}}
    for server in SERVERS:
        why = skipped(server)
        if why:
            result["skipped"][server] = why
            continue
        print(f"{name}: {server} on {len(items)} questions", file=sys.stderr, flush=True)
        rows = run_server(server, folder, docs, items, chooser)
        result["servers"][server] = summary(server, rows)
        result["per_question"][server] = [{k: r[k] for k in ("id", "answered", "bytes", "tokens",
                                                             "calls_until_answer")} | (
            {"verified": r["verified"]} if server == "evidence" else {}) for r in rows]
    return result


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sets", nargs="+", choices=sorted(SETS), default=list(SETS))
    p.add_argument("--limit", type=int, help="the first N questions of each set (a smoke run)")
    p.add_argument("--chooser", choices=("oracle", "overlap"), default="oracle")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix=WORK_PREFIX) as work:
        sets = {name: run_set(name, Path(work), args.limit, args.chooser) for name in args.sets}
    report = {"what": __doc__.split("\n\n")[0], "measured": "text content blocks a client receives: UTF-8 bytes "
              "and cl100k tokens up to and including the call that made the answer visible (all calls if none did)",
              "max_calls": MAX_CALLS, "sets": sets}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    for name, s in sets.items():
        for server, row in s["servers"].items():
            verified = "" if row["verified"] is None else f" verified {row['verified']}"
            print(f"{name:10} {server:10} answered {row['answered']}/{row['questions']}{verified}"
                  f" median bytes {row['median_bytes']} tokens {row['median_tokens']}")
        for server, why in s["skipped"].items():
            print(f"{name:10} {server:10} skipped: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
