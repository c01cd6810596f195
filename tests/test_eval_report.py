"""evidence_lib.course.eval_tables: the tables notebooks 08 and 08x print from the eval's JSON files (issue 26 item 1)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evidence_lib.course.eval_tables import (
    bytes_by_tool_table,
    every_set_table,
    flow_table,
    load_sets,
    ratio,
    runs_by_chooser,
)

ROOT = Path(__file__).resolve().parents[1]


def _flow(answered, median_bytes, median_tokens, p90_bytes, tools=None):
    return {"answered": answered, "questions": 10, "median_bytes": median_bytes, "p90_bytes": p90_bytes,
            "median_tokens": median_tokens, "p90_tokens": 2 * median_tokens, "median_calls": 3,
            "bytes_by_tool": tools or {}}


def _result(corpus, documents, compact, deepagents, overlap_compact=None, engine=None):
    overlap = {"chooser": "overlap", "flows": {"compact": overlap_compact or compact, "deepagents": deepagents}}
    out = {"corpus": corpus, "documents": documents, "questions": 10, "chooser": "oracle",
           "flows": {"compact": compact, "deepagents": deepagents}, "by_chooser": {"overlap": overlap},
           "deepagents_version": "9.9"}
    if engine:
        out["deepagents_grep_engine"] = engine
    return out


@pytest.fixture
def results(tmp_path):
    big = _result("big", 3000, _flow(9, 400, 100, 1_000, {"search_evidence": {"median_bytes": 300.5,
                                                                              "median_tokens": 80, "questions": 10}}),
                  _flow(8, 300, 75, 4_000, {"grep": {"median_bytes": 2_500, "median_tokens": 700, "questions": 10}}),
                  engine="ripgrep")
    small = _result("small", 7, _flow(10, 1_000, 300, 2_000), _flow(10, 2_000, 600, 5_000),
                    overlap_compact=_flow(7, 1_500, 450, 3_000))
    for name, data in (("big", big), ("small", small)):
        (tmp_path / f"eval_{name}.json").write_text(json.dumps(data), encoding="utf-8")
    (tmp_path / "store.json").write_text("{}", encoding="utf-8")  # not an eval result: never read
    return load_sets(tmp_path)


def _row(table, *cells):
    return next(line.split() for line in table.splitlines() if line.split()[:len(cells)] == list(cells))


def test_load_sets_reads_every_eval_file_smallest_corpus_first(results):
    assert list(results) == ["small", "big"]


def test_runs_by_chooser_gives_the_top_level_chooser_then_by_chooser(results):
    runs = runs_by_chooser(results["small"])
    assert list(runs) == ["oracle", "overlap"] and runs["overlap"]["flows"]["compact"]["answered"] == 7


def test_ratio_prints_two_decimals_so_1_33_is_not_1x():
    assert (ratio(4, 3), ratio(1, 3), ratio(3, 3)) == ("1.33x", "0.33x", "1.00x")


def test_ratio_without_a_peer_value_is_a_dash():
    assert ratio(5, None) == ratio(5, 0) == "-"


def test_every_set_table_has_one_row_per_set_chooser_and_flow_with_ratios_to_deep_agents(results):
    table = every_set_table(results)
    assert _row(table, "small", "overlap", "compact") == ["small", "overlap", "compact", "7/10", "1,500", "450",
                                                          "3,000", "0.75x", "0.75x", "0.60x"]
    assert _row(table, "big", "oracle", "compact")[3:] == ["9/10", "400", "100", "1,000", "1.33x", "1.33x", "0.25x"]
    assert _row(table, "big", "oracle", "deepagents")[-3:] == ["1.00x"] * 3
    assert sum(line.split()[:1] in (["small"], ["big"]) and len(line.split()) == 10 for line in table.splitlines()) == 8


def test_every_set_table_names_each_sets_size_and_grep_engine(results):
    table = every_set_table(results)
    assert "big: 3,000 documents, 10 questions, deepagents 9.9, grep engine ripgrep" in table
    assert "small: 7 documents, 10 questions, deepagents 9.9, grep engine not recorded" in table


def test_every_set_table_keeps_only_the_flows_asked_for(results):
    table = every_set_table(results, flows=("compact",))
    assert " deepagents " not in table.split("\n\n")[0] and _row(table, "small", "oracle", "compact")


def test_every_set_table_without_deep_agents_shows_a_dash_for_the_ratio(results):
    del results["small"]["flows"]["deepagents"]
    assert _row(every_set_table(results), "small", "oracle", "compact")[-3:] == ["-", "-", "-"]


def test_bytes_by_tool_table_shows_each_tools_median_and_question_count(results):
    table = bytes_by_tool_table(results)
    assert _row(table, "big", "oracle", "compact", "search_evidence") == [
        "big", "oracle", "compact", "search_evidence", "300.5", "80", "10"]
    assert _row(table, "big", "overlap", "deepagents", "grep")[-3:] == ["2,500", "700", "10"]


def test_flow_table_lists_the_flows_asked_for_in_the_files_order(results):
    lines = flow_table(results["small"], only=("deepagents", "compact")).splitlines()
    assert [line.split()[0] for line in lines] == ["flow", "compact", "deepagents"]
    assert lines[1].split() == ["compact", "10/10", "1,000", "2,000", "300", "600", "3"]


def test_every_committed_eval_set_appears_in_the_table():
    committed = sorted(p.stem.removeprefix("eval_") for p in (ROOT / "bench" / "results").glob("eval_*.json"))
    table = every_set_table(load_sets(ROOT / "bench" / "results"))
    assert committed and all(_row(table, name, "oracle", "compact") for name in committed)
    assert all(_row(table, name, "overlap", "compact") for name in committed)


def test_every_set_table_reports_both_grep_engines_when_a_file_holds_both():
    """Issue 25 item 3: Deep Agents with ripgrep and with its Python grep, side by side, ratios to the ripgrep run."""
    from evidence_lib.course.eval_tables import every_set_table

    summary = {"answered": 5, "questions": 6, "median_bytes": 100.0, "median_tokens": 40.0, "p90_bytes": 200.0}
    slower = {**summary, "answered": 4, "median_bytes": 150.0}
    result = {"chooser": "oracle", "documents": 3, "questions": 6, "deepagents_grep_engine": "ripgrep",
              "flows": {"compact": summary, "deepagents": summary},
              "deepagents_python_grep": {"oracle": {"flows": {"compact": summary, "deepagents": slower}}}}
    table = every_set_table({"s": result})
    row = next(line for line in table.splitlines() if "deepagents (python grep)" in line)
    assert "4/6" in row and "1.50x" in row
    assert sum("compact" in line for line in table.splitlines()) == 1  # compact is not repeated
    assert "grep engine ripgrep (and python grep, rows marked)" in table


def test_sets_at_a_glance_prints_one_line_per_set_with_size_answered_and_median_bytes_ratio(results):
    """Issue 34 (08x): the held-out sets were described in prose only; one line per set shows them from the files."""
    from evidence_lib.course.eval_tables import sets_at_a_glance

    lines = sets_at_a_glance(results).splitlines()
    assert lines[0].split()[:12] == ["set", "chooser", "documents", "questions", "compact", "answered", "DA",
                                     "answered", "median", "B", "/", "DA"]
    assert [line.split()[:7] for line in lines[1:]] == [["small", "overlap", "7", "10", "7", "10", "0.75x"],
                                                        ["big", "overlap", "3,000", "10", "9", "8", "1.33x"]]
    assert sets_at_a_glance(results, chooser="oracle").splitlines()[1].split()[:7] == ["small", "oracle", "7", "10",
                                                                                       "10", "10", "0.50x"]


def test_sets_at_a_glance_without_deep_agents_shows_dashes(results):
    from evidence_lib.course.eval_tables import sets_at_a_glance

    del results["small"]["by_chooser"]["overlap"]["flows"]["deepagents"]
    assert sets_at_a_glance({"small": results["small"]}).splitlines()[1].split()[-4:] == ["-", "-", "-", "-"]


def test_sets_at_a_glance_reads_the_committed_held_out_sets():
    from evidence_lib.course.eval_tables import sets_at_a_glance

    sets = load_sets(ROOT / "bench" / "results")
    held_out = {name: sets[name] for name in ("debian_mix", "debian_holdout")}
    for line, name in zip(sets_at_a_glance(held_out).splitlines()[1:], held_out):
        run = runs_by_chooser(sets[name])["overlap"]["flows"]
        assert line.split()[:5] == [name, "overlap", f"{sets[name]['documents']:,}", str(sets[name]["questions"]),
                                    str(run["compact"]["answered"])]


def test_every_set_table_without_its_footer_ends_at_the_last_row(results):
    """08x review item 17: the notebook cut the footer off with a brittle split."""
    table = every_set_table(results, flows=("compact",), footer=False)
    assert table == every_set_table(results, flows=("compact",)).split("\n\n", 1)[0]
    assert "documents" not in table.splitlines()[-1]


def _question(qid, answered, nbytes):
    return {"id": qid, "answered": answered, "bytes": nbytes}


def test_both_answered_takes_medians_over_the_questions_both_flows_answered_only():
    """08x review item 3: the summaries' medians count an unanswered question's bytes; this ratio does not."""
    from evidence_lib.course.eval_tables import both_answered, sets_at_a_glance

    run = {"flows": {"compact": _flow(2, 50, 20, 90), "deepagents": _flow(2, 500, 200, 900)},
           "per_question": {"compact": [_question("a", True, 10), _question("b", True, 30), _question("c", False, 90),
                                        _question("d", True, 50)],
                            "deepagents": [_question("a", True, 100), _question("b", True, 200),
                                           _question("c", True, 900), _question("d", False, 5)]}}
    assert both_answered(run, "compact") == (2, 20, 150)
    result = {"chooser": "overlap", "documents": 4, "questions": 4, **run}
    assert sets_at_a_glance({"s": result}).splitlines()[1].split()[-2:] == ["2", "0.13x"]
    assert both_answered({**run, "per_question": {"compact": run["per_question"]["compact"]}}, "compact") is None


def test_sets_at_a_glance_both_answered_column_matches_the_committed_per_question_records():
    from evidence_lib.course.eval_tables import sets_at_a_glance

    sets = load_sets(ROOT / "bench" / "results")
    for line, (name, result) in zip(sets_at_a_glance(sets).splitlines()[1:], sets.items(), strict=True):
        per = runs_by_chooser(result)["overlap"].get("per_question", {})
        if "deepagents" not in per:  # a set Deep Agents has not run on yet: no ratio to give
            assert line.split()[-2:] == ["-", "-"], name
            continue
        peer = {r["id"] for r in per["deepagents"] if r["answered"]}
        both = [r for r in per["compact"] if r["answered"] and r["id"] in peer]
        assert line.split()[-2] == (str(len(both)) if both else "-"), name


def test_grid_figure_draws_each_sets_answered_share_and_median_bytes_for_the_flow_and_deep_agents(results):
    """08x review item 11: the grid's own picture, drawn by the library rather than 16 lines in the notebook."""
    import matplotlib.pyplot as plt

    from evidence_lib.course.eval_tables import grid_figure

    fig = grid_figure(results)
    answered, median = fig.axes
    assert [t.get_text() for t in answered.get_xticklabels()] == ["small", "big"]
    assert [round(p.get_height(), 2) for p in answered.patches] == [0.7, 0.9, 1.0, 0.8]  # compact, then deepagents
    assert [p.get_height() for p in median.patches] == [1_500, 400, 2_000, 300] and median.get_yscale() == "log"
    plt.close(fig)


def test_load_sets_finds_the_held_out_near_set_beside_the_held_out_set():
    """08x review (third pass) item 6: Step 5 shows debian_holdout_near, found by load_sets from its committed file."""
    sets = load_sets(ROOT / "bench" / "results")
    assert {"debian_holdout", "debian_holdout_near"} <= set(sets)
    table = every_set_table({"debian_holdout_near": sets["debian_holdout_near"]}, flows=("article", "compact"))
    for chooser in ("oracle", "overlap"):
        assert re.search(rf"^debian_holdout_near\s+{chooser}\s+compact\s+\d+/60", table, flags=re.MULTILINE), chooser


def test_deep_agents_unanswered_questions_spend_every_call_under_overlap_on_every_committed_set():
    """08x review (third pass) item 9: Step 2 says the flow that gives up is the expensive one: under overlap Deep
    Agents' unanswered questions spend every call allowed, so the both-answered ratio is never below the all-questions
    one. Guards that sentence against a future result."""
    from evidence_lib.course.eval_tables import both_answered
    from evidence_lib.eval import MAX_CALLS

    for name, result in load_sets(ROOT / "bench" / "results").items():
        run = runs_by_chooser(result)["overlap"]
        assert all(len(r["calls"]) == MAX_CALLS for r in run["per_question"]["deepagents"] if not r["answered"]), name
        n, mine, peer = both_answered(run, "compact")
        flows = run["flows"]
        assert mine / peer >= flows["compact"]["median_bytes"] / flows["deepagents"]["median_bytes"], name


def test_article_answers_more_than_compact_under_overlap_on_every_kernel_set():
    """08x review (third pass) item 3: Step 3 says so for all four kernel sets, not only kernel_zh."""
    sets = load_sets(ROOT / "bench" / "results")
    for name in ("kernel_zh", "kernel_zh_near", "kernel_en", "kernel_en_near"):
        flows = runs_by_chooser(sets[name])["overlap"]["flows"]
        assert flows["article"]["answered"] > flows["compact"]["answered"], name


def test_grid_figure_axis_labels_stay_below_its_title():
    """08x review (fourth pass) item 12: the bytes panel's y-label ran into the figure's title."""
    import matplotlib.pyplot as plt

    from evidence_lib.course.eval_tables import grid_figure

    fig = grid_figure(load_sets(ROOT / "bench" / "results"))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    title = fig._suptitle.get_window_extent(renderer)
    for ax in fig.axes:
        assert ax.yaxis.label.get_window_extent(renderer).y1 < title.y0, ax.get_ylabel()
    legend = fig.legends[0].get_window_extent(renderer)
    assert title.x1 < legend.x0 or title.y0 > legend.y1  # nor does the title run into the legend
    assert "all questions" in fig.axes[1].get_title()  # the median's population is still said
    plt.close(fig)


def test_unanswered_table_gives_each_flows_unanswered_questions_and_their_median_bytes():
    """08x review (fourth pass) item 4: Step 2 says Deep Agents gives up more often and its give-ups cost more."""
    from evidence_lib.course.eval_tables import unanswered_table

    sets = load_sets(ROOT / "bench" / "results")
    table = unanswered_table({name: sets[name] for name in ("pydoc", "kernel_zh")})
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["set", "chooser", "compact"]
    assert lines[1].split() == ["pydoc", "overlap", "9", "7,766", "10", "16", "21,561", "10"]
    assert lines[2].split() == ["kernel_zh", "overlap", "9", "10,997", "10", "13", "68,899", "10"]


def test_set_inputs_reads_an_archived_corpus_as_the_committed_eval_ran_it():
    """08x review (fourth pass) item 1: Step 7's cell runs on any set; kernel_zh's archive gives the corpus the
    committed result was computed on (same corpus_sha256, same questions), and a near set reads its base corpus."""
    from evidence_lib.course.eval_tables import set_inputs
    from evidence_lib.eval._qa_check import corpus_sha256

    committed = json.loads((ROOT / "bench" / "results" / "eval_kernel_zh.json").read_text(encoding="utf-8"))
    for name in ("kernel_zh", "kernel_zh_near"):
        corpus, docs, items = set_inputs(name, ROOT / "bench" / "data")
        assert corpus == "kernel_zh" and len(docs) == committed["documents"]
        assert corpus_sha256({d.doc_id: d.text for d in docs}) == committed["corpus_sha256"]
        assert len(items) == 45, name
    assert set_inputs("pydoc")[0] == "pydoc" and len(set_inputs("zh")[2]) == 29


def test_first_reply_gives_the_reply_a_committed_first_call_was_measured_on():
    """08x review (fourth pass) item 3: Step 3 prints compact's first locate for kernel-zh-016; the reply is the one
    the committed record measured (its UTF-8 bytes), so the notebook shows what the flow saw."""
    from evidence_lib.course.eval_tables import first_reply, set_inputs

    _, docs, _ = set_inputs("kernel_zh", ROOT / "bench" / "data")
    records = runs_by_chooser(load_sets(ROOT / "bench" / "results")["kernel_zh"])["overlap"]["per_question"]
    for flow in ("compact", "article"):
        for record in records[flow][:8]:
            reply = first_reply(docs, record, profile=flow)
            assert len(reply.encode("utf-8")) == record["calls"][0]["utf8_bytes"], (flow, record["id"])
    record = next(r for r in records["compact"] if r["id"] == "kernel-zh-016")
    assert first_reply(docs, record).splitlines()[2].startswith('[5283,5409) "')
