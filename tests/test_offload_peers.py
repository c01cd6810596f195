"""bench/offload_peers.py: the benchmark's two peer baselines (issue 19 item 3), offline with scripted models.

The measuring helpers run everywhere; each peer's smoke test is skipped when its package is not installed (they
are benchmark-only extras: ``make bench-eval`` installs both into ``.venv-bench``). Run them with
``.venv-bench/bin/python -m pytest -q tests/test_offload_peers.py -p no:cacheprovider``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from evidence_lib._measure import cl100k_tokens

REPO = Path(__file__).resolve().parents[1]
ANSWER = "2026-11-30T12:00:00Z ERROR payment-7 timeout after 30s"
TERM = "payment-7"


def _load():
    spec = importlib.util.spec_from_file_location("offload_peers", REPO / "bench" / "offload_peers.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("offload_peers", module)
    spec.loader.exec_module(module)
    return module


peers = _load()


def synthetic_log(size: int = 200 * 1024, at: int = 2345) -> tuple[str, int]:
    """About ``size`` bytes of INFO lines with the one answer line at 0-based line ``at``; (text, its 1-based line)."""
    lines, total, i = [], 0, 0
    while total < size:
        line = f"2026-11-30T11:{i // 60 % 60:02}:{i % 60:02}Z INFO svc-{i % 13} request ok id={i:06}"
        lines.append(line)
        total += len(line) + 1
        i += 1
    lines[at] = ANSWER
    return "\n".join(lines), at + 1


def found(text: str) -> bool:
    return ANSWER in text


RUNNERS = {"deepagents": "run_deepagents", "strands": "run_strands"}


@pytest.fixture(params=sorted(RUNNERS))
def run(request):
    pytest.importorskip({"deepagents": "deepagents", "strands": "strands"}[request.param])
    pytest.importorskip("langchain.agents")
    return getattr(peers, RUNNERS[request.param])


# -- no package needed ------------------------------------------------------------------------------
def test_call_context_counts_text_args_and_schemas_in_bytes_and_cl100k_tokens():
    msgs = [HumanMessage("find it"), AIMessage("", tool_calls=[{"name": "grep", "args": {"pattern": "x"}, "id": "c1"}]),
            ToolMessage("line 1: x", tool_call_id="c1")]
    got = peers.call_context(msgs, [{"type": "function", "function": {"name": "grep"}}])
    text = 'find it\n\n{"pattern": "x"}\nline 1: x'
    assert got["messages"] == {"utf8_bytes": len(text.encode()), "cl100k_tokens": cl100k_tokens(text)}
    assert got["prompt"]["cl100k_tokens"] == got["messages"]["cl100k_tokens"] + got["schemas"]["cl100k_tokens"]
    st = peers.strands_call_context([{"role": "user", "content": [{"toolResult": {"content": [{"text": "abc"}]}}]}],
                                    [], "sys")
    assert st["messages"]["utf8_bytes"] == len("sys\nabc")


def test_quote_line_keeps_the_term_when_it_clips():
    line = "x" * 1000 + TERM + "y" * 1000
    q = peers.quote_line(line, TERM, width=100)
    assert len(q) == 100 and TERM in q
    assert peers.quote_line("  short  ", TERM) == "short"


# -- each peer, on a 200 KB log ---------------------------------------------------------------------
def test_a_200_kb_log_is_offloaded_searched_and_quoted_in_three_calls(run):
    log, line = synthetic_log()
    assert len(log.encode()) >= 200 * 1024
    r = run("fetch_logs", log, TERM, found)
    assert r["offloaded"] and r["handle"]
    assert r["answered"] and r["answer_visible"] and r["calls_to_answer"] == 3 == r["model_calls"]
    assert f"line {line}" in r["answer"]  # the line number came from the search reply
    assert [c["returned"] for c in r["calls"]][-1] == "final answer"
    full = cl100k_tokens(log)
    for c in r["calls"]:  # the log never entered the context: every prompt is a small fraction of it
        assert c["prompt"]["cl100k_tokens"] < full // 10
        assert c["prompt"]["cl100k_tokens"] == c["messages"]["cl100k_tokens"] + c["schemas"]["cl100k_tokens"]
    assert r["total"]["cl100k_tokens"] == sum(c["prompt"]["cl100k_tokens"] for c in r["calls"])
    assert all("not found" not in p["source"] and ":" in p["source"] for p in r["properties"].values())


def test_the_reader_decides_from_what_it_sees_a_moved_line_and_a_missing_term(run):
    log, line = synthetic_log(at=77)
    r = run("fetch_logs", log, TERM, found, probes=False)
    assert r["answered"] and f"line {line}" in r["answer"]
    missing = run("fetch_logs", log.replace(ANSWER, "2026-11-30T12:00:00Z INFO all good"), TERM, found, probes=False)
    assert missing["offloaded"] and not missing["answered"] and not missing["answer_visible"]
    assert missing["answer"].startswith("Not enough evidence")


def test_a_small_result_is_not_offloaded_and_answered_from_the_whole_result(run):
    log, line = synthetic_log(size=2_000, at=5)
    r = run("fetch_logs", log, TERM, found, probes=False)
    assert not r["offloaded"] and r["handle"] is None
    assert r["answered"] and r["calls_to_answer"] == 2


def test_need_context_reads_the_window_around_the_hit(run):
    log, line = synthetic_log()
    r = run("fetch_logs", log, TERM, found, probes=False, need_context=True)
    assert r["answered"] and r["model_calls"] == 4 and f"line {line}" in r["answer"]
    assert r["calls"][2]["returned"] in ("read_file", "retrieve_offloaded_content")


def test_deepagents_probes_the_evicted_file_stays_in_its_thread_and_never_expires():
    pytest.importorskip("deepagents")
    log, _ = synthetic_log()
    r = peers.run_deepagents("fetch_logs", log, TERM, found)
    p = r["probes"]
    assert p["same_thread_after_turns"]["term_visible"] and p["same_thread_after_turns"]["turns"] == peers.PROBE_TURNS
    assert not p["other_thread"]["term_visible"] and "not found" in p["other_thread"]["reply"]
    assert r["settings"]["evict_over_chars"] == 80_000


def test_strands_probes_another_agent_reads_it_and_it_expires_after_the_cycles():
    pytest.importorskip("strands")
    log, _ = synthetic_log()
    r = peers.run_strands("fetch_logs", log, TERM, found)
    p = r["probes"]
    assert p["other_agent_same_storage"]["term_visible"]  # no owner check
    later = p["same_agent_after_cycles"]
    assert not later["term_visible"] and "reference not found" in later["reply"]
    assert later["files_left_in_storage"] == []
    assert r["settings"]["preview_chars"] == 4_000
