"""The eval's choosers, the efficient Deep Agents flow and how grep output is judged (issue 17, items 1 and 2).

The chooser and grep-visibility tests need no Deep Agents; the end-to-end runs of the Deep Agents flows are
skipped (with the reason) when the optional ``deepagents`` extra is not installed.
"""

from __future__ import annotations

import json

import pytest

from evidence_lib.__main__ import main
from evidence_lib.eval import _deepagents_flow as deepagents_flow
from evidence_lib.eval._deepagents_flow import grep_lines, grep_visible, run_deepagents
from evidence_lib.eval._flows import CHOOSERS, choose, help_text, read_in_turn
from evidence_lib.eval._run import FLOWS, bytes_by_tool, evaluate, load_corpus, load_qa

needs_deepagents = pytest.mark.skipif(
    not deepagents_flow.available(),
    reason="the optional deepagents extra is not installed (make bench-eval, or pip install -e '.[deepagents]')")

QUESTION = "How often does the client retry a failed upload?"
FILLER = ("Chunks are sent in order and each chunk is acknowledged by the server before the next one is sent. "
          "The chunk size is chosen by the client from the measured bandwidth.\n")
GUIDE = ("Uploads\n\nThe uploader retries on error.\n\n" + FILLER * 2
         + "A failed upload is tried at most 7 times, then the client gives up.\n" + FILLER)
DECOY = ("Client questions\n\nHow often does the client retry a failed upload? The client retries a failed upload "
         "when the network is back.\n\n" + FILLER)
OTHER = "Colours\n\nThe palette has four colours and no upload settings.\n"
SPAN = "at most 7 times"


def _item(id_="q-1", term="retries", span=SPAN, doc="guide", text=GUIDE, question=QUESTION):
    start = text.index(span)
    return {"id": id_, "question": question, "doc_id": doc, "answer_span": span, "start": start,
            "end": start + len(span), "locate_term": term}


@pytest.fixture
def tiny(tmp_path):
    """Three documents: the answer (guide), a decoy whose excerpt repeats the question's words, and one without
    the term; one question whose locate term is in the answer and the decoy but far from the span."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in (("guide", GUIDE), ("decoy", DECOY), ("other", OTHER)):
        (corpus / f"{name}.txt").write_text(text, encoding="utf-8")
    qa = tmp_path / "qa.json"
    qa.write_text(json.dumps([_item()]), encoding="utf-8")
    return corpus, qa, tmp_path


# -- the overlap chooser ------------------------------------------------------------------------------------


def test_overlap_ranks_candidates_by_the_question_words_they_were_shown():
    """Issue 17 item 2: overlap ranks by distinct question words in each candidate's shown text, not by order."""
    item = {"doc_id": "b", "question": "Which hook runs after __set_name__ during class creation?"}
    shown = [("a", "the hook is called"), ("b", "after __set_name__ runs, class creation calls a hook"),
             ("c", "nothing in common")]
    assert choose("overlap", item, ["a", "b", "c"], shown) == ["b", "a", "c"]


def test_overlap_breaks_ties_by_first_shown_and_is_deterministic():
    """Issue 17 item 2: equal scores keep the order the candidates were first shown in, every time."""
    item = {"doc_id": "z", "question": "retry upload"}
    shown = [("y", "upload"), ("x", "retry"), ("z", "upload"), ("y", "nothing new")]
    first = choose("overlap", item, ["y", "x", "z", "x"], shown)
    assert first == ["y", "x", "z"]  # all score 1: first-shown order, a candidate shown twice counted once
    assert all(choose("overlap", item, ["y", "x", "z", "x"], shown) == first for _ in range(5))


def test_overlap_counts_the_doc_id_and_ignores_text_shown_for_non_candidates():
    """Issue 17 item 2: a candidate's doc_id is shown with it and counts; text of documents not among the
    candidates (e.g. manifest rows the locate did not show) counts for nothing."""
    item = {"doc_id": "upload", "question": "upload limits"}
    assert choose("overlap", item, ["misc", "upload"], [("misc", "nothing"), ("elsewhere", "upload limits")]) \
        == ["upload", "misc"]


def test_overlap_tokenizes_chinese_like_bm25():
    """Issue 17 item 2: question words are BM25 tokens: CJK characters and character bigrams."""
    item = {"doc_id": "d1", "question": "单批上限是多少？"}
    shown = [("d0", "上传说明"), ("d1", "单批上限为200条")]
    assert choose("overlap", item, ["d0", "d1"], shown) == ["d1", "d0"]


def test_the_oracle_is_handed_the_answer_only_when_it_was_shown():
    """Issue 17 item 2: oracle returns the answer's doc_id if it is among the candidates, else nothing."""
    item = {"doc_id": "b", "question": "q"}
    assert choose("oracle", item, ["a", "b"]) == ["b"]
    assert choose("oracle", item, ["a", "c"]) == []
    with pytest.raises(ValueError, match="unknown chooser"):
        choose("magic", item, ["a"])


def test_read_in_turn_gives_every_candidate_a_first_look_then_reads_on_in_the_same_order():
    """Issue 17 item 2: after a wrong pick the flow goes on to the next candidate within the call budget."""
    log: list[str] = []

    def reading(name: str, steps: int):
        for k in range(steps):
            log.append(f"{name}{k}")
            yield

    found = read_in_turn([reading("a", 4), reading("b", 3), reading("c", 1)], lambda: len(log) < 7,
                         lambda: False)
    assert not found and log == ["a0", "a1", "b0", "b1", "c0", "a2", "a3"]
    log.clear()
    assert read_in_turn([reading("a", 4), reading("b", 3)], lambda: True, lambda: log[-1] == "b1")
    assert log == ["a0", "a1", "b0", "b1"]


# -- judging grep output ------------------------------------------------------------------------------------

GREP = ("/a.txt:\n"
        "  3: The uploader retries on error.\n"
        "  7: it retries at most 7 times,\n"
        "  8: then it retries no more.\n"
        "  12:   indented: retries\n"
        "/b.txt:\n"
        "  1: b retries once\n"
        "\n"
        "... [results truncated, try being more specific with your parameters]")


def test_grep_lines_strip_the_line_prefix_and_keep_files_apart():
    """Issue 17 item 1: each shown row is (line, text) with grep's '  <line>: ' prefix stripped, per file."""
    rows = grep_lines(GREP)
    assert list(rows) == ["/a.txt", "/b.txt"]
    assert rows["/a.txt"][0] == (3, "The uploader retries on error.")
    assert rows["/a.txt"][3] == (12, "  indented: retries")  # only the prefix is stripped: indentation is text
    assert rows["/b.txt"] == [(1, "b retries once")]  # the truncation note is no row
    assert grep_lines("No matches found") == {}


def test_a_span_on_one_line_is_visible_in_grep_output():
    """Issue 17 item 1: a span inside the text of one shown line is visible; the prefix never is."""
    rows = grep_lines(GREP)["/a.txt"]
    assert grep_visible("retries at most 7", rows)
    assert not grep_visible("7: it retries", rows)  # the line number prefix is not document text
    assert not grep_visible("retries on error.\nit", rows)  # lines 3 and 7 are not consecutive


def test_a_two_line_span_is_visible_only_when_both_lines_are_shown_consecutively():
    """Issue 17 item 1: a span over two lines is visible only if grep showed both, joined by a newline."""
    both = grep_lines(GREP)["/a.txt"]
    assert grep_visible("at most 7 times,\nthen it", both)  # lines 7 and 8 both shown
    only_first = [r for r in both if r[0] != 8]
    assert not grep_visible("at most 7 times,\nthen it", only_first)
    gap = [(7, "it retries at most 7 times,"), (9, "then it retries no more.")]
    assert not grep_visible("at most 7 times,\nthen it", gap)  # shown, but not consecutive lines


# -- end to end on a tiny corpus ------------------------------------------------------------------------------


def test_the_eval_records_the_chooser_and_where_the_bytes_go(tiny, capsys):
    """Issue 17 item 2: --chooser is recorded; the default is the oracle; every flow says what it proves."""
    corpus, qa, tmp = tiny
    flows = "dump_top5,article,compact,no_help"
    for chooser in (None, *CHOOSERS):
        out = tmp / f"{chooser}.json"
        extra = ["--chooser", chooser] if chooser else []
        assert main(["eval", "--corpus", str(corpus), "--qa", str(qa), "--out", str(out), "--flows", flows,
                     *extra]) == 0
        result = json.loads(out.read_text(encoding="utf-8"))
        assert result["chooser"] == (chooser or "oracle")
        for flow, s in result["flows"].items():
            assert s["chooser"] == result["chooser"] and s["help"] == help_text(flow, result["chooser"])
            assert s["proves"] and "cannot" in s["proves"]
            assert sum(v["questions"] for v in s["bytes_by_tool"].values()) >= 1
        if chooser == "oracle":
            assert "handed the answer's doc_id" in result["flows"]["compact"]["help"]
    assert "chooser oracle" in capsys.readouterr().out


def test_an_unknown_chooser_is_refused_by_the_command_line(tiny, capsys):
    """Issue 17 item 2: --chooser takes oracle or overlap only."""
    corpus, qa, tmp = tiny
    with pytest.raises(SystemExit) as e:
        main(["eval", "--corpus", str(corpus), "--qa", str(qa), "--out", str(tmp / "x.json"), "--chooser", "magic"])
    assert e.value.code == 2 and "invalid choice" in capsys.readouterr().err
    assert not (tmp / "x.json").exists()


@pytest.mark.parametrize("flow", ["article", "compact"])
def test_overlap_picks_the_decoy_first_then_reads_the_answer(tiny, flow):
    """Issue 17 item 2: overlap, not handed the answer, picks the document whose excerpt shares the most question
    words (the decoy), finds nothing there and goes on to the answer's document within 10 calls; the oracle reads
    the answer's document directly."""
    corpus, qa, _ = tiny
    name, docs = load_corpus(str(corpus))
    items = load_qa(qa, docs)
    oracle = evaluate(name, docs, items, flows=(flow,), chooser="oracle")["per_question"][flow][0]
    overlap = evaluate(name, docs, items, flows=(flow,), chooser="overlap")["per_question"][flow][0]
    assert oracle["answered"] and oracle["picked"] == ["guide"]
    assert overlap["answered"] and overlap["picked"][:2] == ["decoy", "guide"]
    read = [c["args"].get("doc_id") for c in overlap["calls"] if c["args"].get("doc_id")]
    assert read.index("decoy") < read.index("guide")
    assert overlap["bytes"] > oracle["bytes"] and len(overlap["calls"]) <= 10


def test_bytes_by_tool_counts_calls_up_to_the_answer_per_tool():
    """Issue 17 item 2: bytes_by_tool is the median, over the questions that made such a call, of the bytes of
    that tool's calls up to the answer; a doc-restricted locate is counted apart from the whole-snapshot one."""
    def c(tool, b, **args):
        return {"tool": tool, "args": args, "utf8_bytes": b, "cl100k_tokens": b // 4}
    runs = [{"calls": [c("search_evidence", 100), c("locate_evidence", 40, term="x"),
                       c("locate_evidence", 30, term="x", doc_id="d"), c("read_evidence", 500, doc_id="d")],
             "calls_until_answer": 3},
            {"calls": [c("search_evidence", 120), c("locate_evidence", 60, term="x"),
                       c("read_evidence", 200, doc_id="d"), c("read_evidence", 300, doc_id="d")],
             "calls_until_answer": 4}]
    got = bytes_by_tool(runs)
    assert got["search_evidence"] == {"median_bytes": 110, "median_tokens": 27.5, "questions": 2}
    assert got["locate_evidence"]["median_bytes"] == 50 and got["locate_evidence(doc_id)"]["questions"] == 1
    assert got["read_evidence"] == {"median_bytes": 500, "median_tokens": 125, "questions": 1}  # run 1's is after


def test_both_deep_agents_flows_are_listed_and_skipped_with_a_reason_without_the_extra(tiny):
    """Issue 17 item 1: the eval knows deepagents and deepagents_default; without the extra both are skipped."""
    assert {"deepagents", "deepagents_default"} <= set(FLOWS)
    if deepagents_flow.available():
        pytest.skip("deepagents is installed here: the flows run (see the tests below)")
    corpus, qa, _ = tiny
    name, docs = load_corpus(str(corpus))
    result = evaluate(name, docs, load_qa(qa, docs), flows=("deepagents", "deepagents_default"))
    assert set(result["skipped"]) == {"deepagents", "deepagents_default"}
    assert all("pip install" in why for why in result["skipped"].values())


# -- the Deep Agents flows, for real ----------------------------------------------------------------------------

DOCS = {"guide": GUIDE, "decoy": DECOY, "other": OTHER}


def _run(tmp_path, items, docs=DOCS, **kw):
    return run_deepagents(docs, items, tmp_path / "work", **kw)


@needs_deepagents
def test_a_span_on_the_grep_line_is_answered_by_the_grep_alone(tmp_path):
    """Issue 17 item 1: the efficient flow counts a span visible in grep's lines, with grep's bytes counted; the
    default flow never counts grep output and reads the file."""
    item = _item(term="at most")
    [eff] = _run(tmp_path, [item])
    assert eff["answered"] and [c["tool"] for c in eff["calls"]] == ["grep"]
    assert eff["bytes"] == eff["calls"][0]["utf8_bytes"] > 0 and eff["tokens"] > 0
    [default] = run_deepagents(DOCS, [item], tmp_path / "work2", flow="deepagents_default")
    assert default["answered"] and [c["tool"] for c in default["calls"]] == ["grep", "read_file"]
    assert default["calls"][1]["args"] == {"file_path": "/guide.txt", "offset": 6}  # first hit, 1-based line 7


@needs_deepagents
def test_the_efficient_flow_reads_ten_lines_around_the_first_hit(tmp_path):
    """Issue 17 item 1: not visible in grep -> read_file(offset=max(hit_line - 2, 0), limit=10)."""
    [r] = _run(tmp_path, [_item()])
    assert r["answered"] and [c["tool"] for c in r["calls"]] == ["grep", "read_file"]
    assert r["calls"][1]["args"] == {"file_path": "/guide.txt", "offset": 1, "limit": 10}  # hit on line 3
    assert r["bytes"] == sum(c["utf8_bytes"] for c in r["calls"])


@needs_deepagents
def test_the_efficient_flow_pages_on_and_wraps_to_line_zero_once(tmp_path):
    """Issue 17 item 1: after the window, pages of 100 lines from the advertised next offset; at the end of the
    file it goes back to line 0 once, and finds a span that comes before the first hit."""
    text = "the answer is forty-two\n" + "".join(f"filler line {n}\n" for n in range(1, 150)) + "the term\n" + \
        "".join(f"tail line {n}\n" for n in range(60))
    item = _item(term="the term", span="the answer is forty-two", doc="long", text=text, question="what answer?")
    [r] = _run(tmp_path, [item], docs={"long": text})
    args = [c["args"] for c in r["calls"]]
    assert r["answered"] and args[1] == {"file_path": "/long.txt", "offset": 149, "limit": 10}
    assert args[2] == {"file_path": "/long.txt", "offset": 159, "limit": 100}
    assert args[-1] == {"file_path": "/long.txt", "offset": 0, "limit": 100} and len(args) == 4
    [stuck] = _run(tmp_path, [item], docs={"long": text}, max_calls=3)  # no call left for the wrap
    assert not stuck["answered"] and len(stuck["calls"]) == 3


@needs_deepagents
def test_the_overlap_chooser_reads_the_decoy_file_first_then_the_answer(tmp_path):
    """Issue 17 item 2: with overlap, grep lines pick the decoy file first (its line repeats the question); the
    flow goes on to the answer's file within 10 calls. The oracle opens the answer's file directly."""
    [oracle] = _run(tmp_path, [_item()], chooser="oracle")
    [overlap] = run_deepagents(DOCS, [_item()], tmp_path / "work2", chooser="overlap")
    assert oracle["picked"] == ["guide"] and overlap["picked"][:2] == ["decoy", "guide"]
    files = [c["args"].get("file_path") for c in overlap["calls"][1:]]
    assert overlap["answered"] and files[0] == "/decoy.txt" and "/guide.txt" in files
    assert overlap["bytes"] > oracle["bytes"]


@needs_deepagents
def test_the_eval_runs_both_deep_agents_flows_with_both_choosers(tiny):
    """Issue 17 items 1 and 2: end to end, both Deep Agents flows with both choosers, next to the protocol flows."""
    corpus, qa, _ = tiny
    name, docs = load_corpus(str(corpus))
    items = load_qa(qa, docs)
    for chooser in CHOOSERS:
        result = evaluate(name, docs, items, flows=("compact", "deepagents", "deepagents_default"), chooser=chooser)
        assert not result["skipped"] and result["deepagents_version"]
        for flow in ("deepagents", "deepagents_default"):
            s = result["flows"][flow]
            assert s["answered"] == 1 and s["chooser"] == chooser and "grep" in s["bytes_by_tool"]
