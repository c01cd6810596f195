"""evidence_lib.course.workspace: one fresh folder per notebook run, and printed paths that never show a machine's tmp dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from evidence_lib.course.workspace import display_path, notebook_workspace, workspace_root


def test_workspace_goes_under_evidence_workspace_when_set(tmp_path, monkeypatch):
    monkeypatch.setenv("EVIDENCE_WORKSPACE", str(tmp_path))
    path = notebook_workspace("02")
    assert path == tmp_path / "workspace" / "02" and path.is_dir() and list(path.iterdir()) == []


def test_workspace_defaults_to_workspace_folder_beside_the_notebook(tmp_path, monkeypatch):
    monkeypatch.delenv("EVIDENCE_WORKSPACE", raising=False)
    monkeypatch.chdir(tmp_path)  # a kernel's working directory is the notebook's folder
    path = notebook_workspace("02")
    assert path == Path("workspace/02") and (tmp_path / "workspace" / "02").is_dir()


def test_empty_evidence_workspace_means_unset(tmp_path, monkeypatch):
    monkeypatch.setenv("EVIDENCE_WORKSPACE", "")
    monkeypatch.chdir(tmp_path)
    assert workspace_root() == Path(".") and notebook_workspace("x") == Path("workspace/x")


def test_rerunning_empties_the_workspace_but_leaves_its_neighbours(tmp_path, monkeypatch):
    monkeypatch.setenv("EVIDENCE_WORKSPACE", str(tmp_path))
    (notebook_workspace("02") / "d03.txt").write_text("edited", encoding="utf-8")
    (notebook_workspace("03") / "keep.txt").write_text("other notebook", encoding="utf-8")
    assert list(notebook_workspace("02").iterdir()) == []
    assert (tmp_path / "workspace" / "03" / "keep.txt").exists()


def test_two_runs_with_their_own_roots_never_share_files(tmp_path, monkeypatch):
    monkeypatch.setenv("EVIDENCE_WORKSPACE", str(tmp_path / "run-a"))
    (notebook_workspace("04") / "store.txt").write_text("a", encoding="utf-8")
    monkeypatch.setenv("EVIDENCE_WORKSPACE", str(tmp_path / "run-b"))
    notebook_workspace("04")  # run b starts (and wipes) its own copy
    assert (tmp_path / "run-a" / "workspace" / "04" / "store.txt").read_text(encoding="utf-8") == "a"


@pytest.mark.parametrize("use_env", [True, False], ids=["EVIDENCE_WORKSPACE", "beside-the-notebook"])
def test_display_path_is_the_same_on_every_machine(tmp_path, monkeypatch, use_env):
    monkeypatch.chdir(tmp_path)
    if use_env:
        monkeypatch.setenv("EVIDENCE_WORKSPACE", str(tmp_path / "some" / "tmp" / "dir"))
    else:
        monkeypatch.delenv("EVIDENCE_WORKSPACE", raising=False)
    store = notebook_workspace("04") / "store"
    assert display_path(store / "d03.txt") == "workspace/04/store/d03.txt"
    assert display_path(store.resolve()) == "workspace/04/store"


def test_display_path_refuses_paths_outside_the_workspace_root(tmp_path, monkeypatch):
    monkeypatch.setenv("EVIDENCE_WORKSPACE", str(tmp_path / "root"))
    with pytest.raises(ValueError):
        display_path(tmp_path / "elsewhere" / "d03.txt")


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../02", "a\\b"])
def test_workspace_name_is_one_folder_name(tmp_path, monkeypatch, name):
    monkeypatch.setenv("EVIDENCE_WORKSPACE", str(tmp_path))
    with pytest.raises(ValueError):
        notebook_workspace(name)
    assert list(tmp_path.iterdir()) == []
