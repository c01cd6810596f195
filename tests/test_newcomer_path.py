"""The newcomer's path (issue 26 item 8): what `make test` and `make bench` say, and what opening a notebook does.

* Opening a notebook in JupyterLab on another Python rewrites its ``metadata.language_info`` on autosave; the
  navigation check must not call that stale (tests/test_notebooks.py's check ignores that kernel-written field and
  names the fix for anything else).
* `make test` shows progress per test file from the start, and says in one line whether PostgreSQL was tested
  (host:port only, never a password) or how to test it and how many tests skipped for it.
* Building the student copies (tests/test_exercises.py) leaves no event loop unclosed: each one and its two
  sockets used to print a ResourceWarning traceback at the end of a green `make test`.
* `make help` and the README give `make bench` one duration, the one bench/results records.
* No test reads outside the repository (tests/test_sources_named.py looked for ../shared/seeds).
* Issue 34 item 7: a cell the learner ran twice and saved fails neither `make test`'s hygiene checks (they read the
  committed notebooks) nor its notebook part, which runs even when a library test failed; the commit check
  (`make check-notebooks`) names the fix. tests/browser/test_lab_learner_run.py does the same through JupyterLab.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_notebooks import stale_navigation  # noqa: E402  (the check `make test` runs)


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def recipe(target: str) -> list[str]:
    """The command lines of a Makefile target."""
    match = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", MAKEFILE, re.M)
    assert match, f"the Makefile has no {target} target"
    return [line.strip() for line in match.group(1).splitlines()]


# -- opening a notebook in the lab ---------------------------------------------------------------------------------

def _copy_checkout(tmp_path: Path) -> Path:
    """scripts/nbnav.py with what it reads (notebooks, pyproject.toml) in a scratch folder, so a test may edit it."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    for script in (ROOT / "scripts").glob("*.py"):  # nbnav.py and the sibling scripts it imports
        shutil.copy2(script, root / "scripts" / script.name)
    shutil.copy2(ROOT / "pyproject.toml", root / "pyproject.toml")
    shutil.copytree(ROOT / "notebooks", root / "notebooks",
                    ignore=shutil.ignore_patterns("workspace", ".ipynb_checkpoints"))
    return root


def _open_in_lab_on_another_python(path: Path) -> None:
    """What JupyterLab's autosave writes after opening ``path`` with a kernel on another Python patch version."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    nb["metadata"]["language_info"]["version"] = "3.11.2"
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")


@pytest.mark.parametrize("opened", ["00_index.ipynb", "01_baseline-dump.ipynb"])
def test_opening_a_notebook_in_jupyterlab_does_not_make_navigation_stale(tmp_path, opened):
    """Issue 26 item 8: the index's language_info follows notebook 01's, so opening either in the lab on another
    Python made `make test` fail with "stale navigation" and no hint of a fix."""
    root = _copy_checkout(tmp_path)
    nbnav = load(root / "scripts" / "nbnav.py", f"nbnav_copy_{opened[:2]}")
    before = stale_navigation(nbnav)
    _open_in_lab_on_another_python(root / "notebooks" / opened)
    assert stale_navigation(nbnav) == before


# -- make test -----------------------------------------------------------------------------------------------------

def _library_pytest_args() -> list[str]:
    """The options `make test` gives pytest for the library tests (its LIB_TESTS command, `... -m pytest ... tests`)."""
    line = re.search(r"^LIB_TESTS\s*:?=\s*(.*-m pytest .*\btests)$", MAKEFILE, re.M).group(1)
    assert any("$(LIB_TESTS)" in cmd for cmd in recipe("test")), "make test does not run LIB_TESTS"
    return line.split("-m pytest", 1)[1].split()[:-1]


def _make_test(lib: str, notebooks: str, lint: str = "true") -> subprocess.CompletedProcess:
    """`make test` with its three parts stood in for by commands that exit as told (setup not remade)."""
    return subprocess.run(["make", "--no-print-directory", "-o", "setup", "test", f"LIB_TESTS={lib}",
                           f"RUN_NBVAL={notebooks}", f"LINT={lint}"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("lib, notebooks, verdict", [
    (1, 0, "library tests FAILED (pytest exit 1: its summary above lists them); notebooks passed"),
    (0, 1, "library tests passed; notebooks FAILED (pytest exit 1: its summary above lists them)"),
    (2, 1, "library tests FAILED (pytest exit 2: its summary above lists them); "
           "notebooks FAILED (pytest exit 1: its summary above lists them)"),
    (0, 0, "library tests passed; notebooks passed"),
])
def test_make_test_runs_the_notebooks_even_when_a_library_test_failed_and_reports_both(lib, notebooks, verdict):
    """Issue 34 item 7: a library failure ended `make test` before the notebook tests ever ran."""
    if shutil.which("make") is None:
        pytest.skip("no make on PATH")
    run = _make_test(f"echo library-ran; sh -c 'exit {lib}'", f"echo notebooks-ran; sh -c 'exit {notebooks}'")
    lines = run.stdout.splitlines()
    assert "library-ran" in lines and "notebooks-ran" in lines, run.stdout + run.stderr
    assert f"test: lint passed; {verdict}" in lines, run.stdout
    assert (run.returncode == 0) == (verdict == "library tests passed; notebooks passed"), run.stderr


def _pytest(args: list[str], env: dict[str, str], cwd: Path = ROOT) -> str:
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    return proc.stdout + proc.stderr


# -- a learner's runs in the lab and the hygiene checks ------------------------------------------------------------

def git_copy(tmp_path: Path) -> Path:
    """This checkout's tracked files as they are now (uncommitted edits included), committed in a new repository: a
    learner's clone that a test may change (the repository's own notebooks are never touched)."""
    repo = tmp_path / "repo"
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, text=True, check=True)
    for rel in filter(None, listed.stdout.split("\0")):
        if (ROOT / rel).is_file():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, repo / rel)
    git = ["git", "-C", str(repo), "-c", "user.name=test", "-c", "user.email=test@example.invalid"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the learner's clone"]):
        subprocess.run(git + args, check=True, capture_output=True, timeout=300)
    return repo


def hygiene(repo: Path, *, worktree: bool = False) -> tuple[bool, str]:
    """The hygiene part of the learner's `make test` (its LIB_TESTS options, tests/test_notebooks.py) in ``repo``, or
    with ``worktree`` what `make check-notebooks` runs: (passed, output)."""
    env = {**os.environ, "EVIDENCE_NOTEBOOK_CHECKS": "worktree" if worktree else ""}
    out = _pytest([*_library_pytest_args(), "tests/test_notebooks.py"], env, cwd=repo)
    return bool(re.search(r"^=+ \d+ passed", out, re.M)) and " failed" not in out, out


def run_cell_1_then_cell_2_twice(path: Path) -> list:
    """The notebook as JupyterLab saves it after a fresh kernel ran its first code cell, then its second twice (the
    review's steps; tests/browser/test_lab_learner_run.py does them in the lab itself). Returns the new counts."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    code[0]["execution_count"], code[1]["execution_count"] = 1, 3
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    return [c["execution_count"] for c in code]


LEARNER_NOTEBOOK = "notebooks/01_baseline-dump.ipynb"


def test_a_cell_run_twice_in_the_lab_does_not_fail_make_test_and_the_commit_check_names_the_fix(tmp_path):
    """Issue 34 item 7: after a learner ran cell 1, then cell 2 twice, and autosave wrote it, `make test` failed in
    the library tests (``[1, 3, 3, 4, ...] == [1, 2, 3, ...]``) and named no fix. `make test` checks the committed
    versions now; `make check-notebooks` (CI, before a commit) checks the file and names both fixes."""
    repo = git_copy(tmp_path)
    assert run_cell_1_then_cell_2_twice(repo / LEARNER_NOTEBOOK)[:4] == [1, 3, 3, 4]
    passed, out = hygiene(repo)
    assert passed, out[-3000:]
    passed, out = hygiene(repo, worktree=True)
    assert not passed and "execution counts [1, 3, 3, 4," in out, out[-3000:]
    assert f"`make execute NB={LEARNER_NOTEBOOK}`" in out and f"`git checkout -- {LEARNER_NOTEBOOK}`" in out
    subprocess.run(["git", "-C", str(repo), "checkout", "--", LEARNER_NOTEBOOK], check=True)
    passed, out = hygiene(repo, worktree=True)
    assert passed, out[-3000:]


def test_make_test_names_each_test_file_as_it_runs():
    """Issue 26 item 8: `make test` printed dots only (-q), nothing to say what was running; now pytest's line per
    test file."""
    files = ["tests/test_errors.py", "tests/test_spans.py"]
    out = _pytest([*_library_pytest_args(), *files], os.environ.copy())
    for name in files:
        assert re.search(rf"^{re.escape(name)} [.sx]+", out, re.M), out[-2000:]


def _without_dsn() -> dict[str, str]:
    env = os.environ.copy()
    env.pop("EVIDENCE_PG_DSN", None)
    return env


def test_make_test_says_how_many_tests_skipped_for_postgresql_and_how_to_run_them():
    out = _pytest(["tests/test_ids.py", "-k", "postgres or sqlite"], _without_dsn())
    line = [ln for ln in out.splitlines() if ln.startswith("PostgreSQL:")]
    assert len(line) == 1, out[-2000:]
    assert re.fullmatch(r"PostgreSQL: not tested \(EVIDENCE_PG_DSN is not set\): [1-9]\d* tests? skipped for it; "
                        r"`make test-store` runs them on a local server, or export EVIDENCE_PG_DSN "
                        r"\(`make postgres-up` prints it\)\.", line[0]), line[0]


def test_make_test_names_the_postgresql_server_without_its_password():
    env = {**_without_dsn(), "EVIDENCE_PG_DSN": "postgresql://evidence:s3cret-pw@db.example.org:6543/evidence"}
    out = _pytest(["tests/test_ids.py", "-k", "no_such_test"], env)
    line = [ln for ln in out.splitlines() if ln.startswith("PostgreSQL:")]
    assert line == ["PostgreSQL: tested on db.example.org:6543 (EVIDENCE_PG_DSN)."], out[-2000:]
    assert "s3cret-pw" not in out


def test_building_the_student_copies_leaves_no_event_loop_unclosed(monkeypatch):
    """Issue 26 item 8: a green `make test` ended with about 100 lines of ResourceWarning tracebacks (an unclosed
    event loop and its two sockets per student copy): jupyter_core's run_sync leaves a loop on each pool thread."""
    msc = load(ROOT / "scripts" / "make_student_copies.py", "make_student_copies_loops")
    first = msc.solution_notebooks()[0]
    monkeypatch.setattr(msc, "solution_notebooks", lambda: [first])  # one kernel is enough to see it
    gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        assert list(msc.build_all()) == [msc.student_path(first)]
        gc.collect()
    unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert not unclosed, unclosed


def test_answers_a_learner_saves_in_a_student_copy_do_not_fail_make_test(tmp_path):
    """A learner writes an answer into a workshop student copy and saves it: the up-to-date check of the student
    copies failed and named scripts/make_student_copies.py, which would overwrite the answer."""
    repo = git_copy(tmp_path)
    copy = repo / "notebooks" / "exercises" / "workshop_part1.ipynb"
    nb = json.loads(copy.read_text(encoding="utf-8"))
    answer = next(c for c in nb["cells"] if "answer" in c["metadata"].get("tags", []))
    answer["source"] = "".join(answer["source"]).replace("____", "156982", 1)
    copy.write_text(json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    out = _pytest([*_library_pytest_args(), "tests/test_exercises.py", "-k", "student_copies_are_up_to_date"],
                  os.environ.copy(), cwd=repo)
    assert re.search(r"^=+ 1 passed", out, re.M), out[-3000:]


# -- make bench ----------------------------------------------------------------------------------------------------

def _bench_minutes(text: str, where: str) -> int:
    match = re.search(r"make bench\b.*?about (\d+) min", text)
    assert match, f"{where} gives `make bench` no duration in minutes"
    return int(match.group(1))


def test_make_help_and_readme_give_make_bench_one_duration_that_bench_results_record():
    """Issue 26 item 8: "about 40 min" in the README, "about an hour" in `make help`. The store's 1 GB run alone is
    bench/results/store.json's elapsed_s; the other two parts (bench/run_all.py, make bench-offload) take minutes."""
    help_line = next(line for line in recipe("help") if "make bench " in line)
    readme_line = next(line for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
                       if line.startswith("make bench "))
    stated = _bench_minutes(help_line, "make help")
    assert _bench_minutes(readme_line, "README.md") == stated
    store_minutes = json.loads((ROOT / "bench" / "results" / "store.json").read_text())["elapsed_s"] / 60
    assert store_minutes <= stated <= store_minutes + 10, (stated, round(store_minutes, 1))


# -- nothing outside the repository --------------------------------------------------------------------------------

#: A pytest plugin recording every file or folder opened or listed beside the repository (under its parent folder
#: but not inside it), through Python's audit hooks ("open", "os.listdir", "os.scandir").
AUDIT_PLUGIN = """
import os, sys, sysconfig, tempfile
from pathlib import Path
ROOT = os.environ["AUDIT_ROOT"]
BESIDE = os.path.dirname(ROOT) + os.sep
TEMP = os.path.realpath(tempfile.gettempdir()) + os.sep  # a clone in /tmp has the temporary files beside it
# a clone in a home folder has the Python installation beside it (pyenv's ~/.pyenv): its files are the interpreter's
PYTHON = tuple({os.path.realpath(p) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                                        *sysconfig.get_paths().values()) if p})
seen = set()
def hook(event, args):
    if event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.path.abspath(os.fsdecode(args[0]))
        if (path.startswith(BESIDE) and not (path + os.sep).startswith(ROOT + os.sep)
                and not os.path.realpath(path).startswith((TEMP, *PYTHON))):
            seen.add(path)
sys.addaudithook(hook)
def pytest_unconfigure(config):
    Path(os.environ["AUDIT_OUT"]).write_text("\\n".join(sorted(seen)), encoding="utf-8")
"""


def test_the_source_title_tests_read_nothing_outside_the_repository(tmp_path):
    """Issue 26 item 8: tests/test_sources_named.py read the seeds from ../shared/seeds, beside the repository."""
    (tmp_path / "audit_outside.py").write_text(AUDIT_PLUGIN, encoding="utf-8")
    out = tmp_path / "outside.txt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])),
           "AUDIT_ROOT": str(ROOT), "AUDIT_OUT": str(out)}
    report = _pytest(["-p", "audit_outside", "tests/test_sources_named.py"], env)
    assert re.search(r"\d+ passed", report), report[-2000:]  # it ran (its own verdicts are its own)
    assert out.read_text(encoding="utf-8") == "", "read outside the repository: " + out.read_text(encoding="utf-8")


def test_no_test_module_points_beside_the_repository():
    """Every path a test module builds from its own location stays inside the repository."""
    beside = re.compile(r"__file__\)\.resolve\(\)\.parents\[(\d+)\]|ROOT\.parent\b")
    problems = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        depth = len(path.relative_to(ROOT).parts) - 1  # parents[depth] is the repository
        for m in beside.finditer(path.read_text(encoding="utf-8")):
            if m.group(1) is None or int(m.group(1)) > depth:
                problems.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
    assert not problems, problems


def test_make_test_runs_lint_first_and_the_tests_even_when_lint_failed():
    """Issue 32 item 6: mypy and ruff run in `make test` (as `make lint`); a lint failure is reported on the last
    line and fails make test, and the library tests and notebooks still run."""
    if shutil.which("make") is None:
        pytest.skip("no make on PATH")
    assert "$(LINT)" in " ".join(recipe("test")) and re.search(r"^LINT\s*:?=.*\blint$", MAKEFILE, re.M)
    assert any("mypy" in cmd for cmd in recipe("lint")) and any("ruff check" in cmd for cmd in recipe("lint"))
    run = _make_test("echo library-ran", "echo notebooks-ran", "echo lint-ran; sh -c 'exit 1'")
    lines = run.stdout.splitlines()
    assert lines.index("lint-ran") < lines.index("library-ran") < lines.index("notebooks-ran"), run.stdout
    assert "test: lint FAILED (its lint: line above says which); library tests passed; notebooks passed" in lines
    assert run.returncode != 0
