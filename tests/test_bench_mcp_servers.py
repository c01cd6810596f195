"""bench/bench_mcp_servers.py (issue 27): a smoke run of 3 pydoc questions through the real servers and SDK client.

The reference servers run when installed (build/mcp-node/peers/, build/mcp-fetch-venv/); otherwise the run must say
they were skipped and why.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'evidence-lib[mcp]')")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import bench_mcp_servers as bench  # noqa: E402


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("bench") / "mcp_servers.json"
    assert bench.main(["--sets", "pydoc", "--limit", "3", "--out", str(out)]) == 0
    return json.loads(out.read_text(encoding="utf-8"))["sets"]["pydoc"]


def test_every_server_is_measured_or_skipped_with_a_reason(smoke: dict) -> None:
    assert smoke["questions"] == 3
    assert set(smoke["servers"]) | set(smoke["skipped"]) == set(bench.SERVERS)
    assert "evidence" in smoke["servers"]
    for server, why in smoke["skipped"].items():
        assert why.startswith("not installed: ") and bench.skipped(server) == why


def test_our_server_answers_with_citations_its_verify_citations_accepts(smoke: dict) -> None:
    ours = smoke["servers"]["evidence"]
    assert (ours["answered"], ours["verified"]) == (3, 3)
    assert ours["median_verify_reply_bytes"] > 0
    assert all(row["verified"] for row in smoke["per_question"]["evidence"])


def test_each_row_says_what_answered_means_and_counts_what_the_client_received(smoke: dict) -> None:
    for server, row in smoke["servers"].items():
        assert row["answered_means"] == bench.ANSWERED[server] and row["how"] == bench.HOW[server]
        per = smoke["per_question"][server]
        assert len(per) == 3 and all(q["bytes"] >= q["tokens"] > 0 for q in per)
        assert row["median_bytes"] == sorted(q["bytes"] for q in per)[1]
        if server != "evidence":
            assert row["verified"] is None  # nothing to verify against: no revision, hash or range


def test_a_peer_that_is_not_installed_is_skipped_with_how_to_install_it(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Path) -> None:
    monkeypatch.setattr(bench, "FILESYSTEM_BIN", tmp_path / "missing" / "mcp-server-filesystem")
    monkeypatch.setattr(bench, "FETCH_PYTHON", tmp_path / "missing" / "python")
    assert "npm install" in bench.skipped("filesystem")
    assert "pip install mcp-server-fetch" in bench.skipped("fetch")
    assert bench.skipped("evidence") is None


def test_the_kernel_set_gets_its_folder_of_documents(tmp_path: Path) -> None:
    """The kernel_en set's folder comes from the archive the eval unpacks (a renamed helper once broke it)."""
    folder = bench.kernel_folder(tmp_path)
    assert folder == tmp_path / "kernel_en" and len(list(folder.glob("*.txt"))) > 2_000
