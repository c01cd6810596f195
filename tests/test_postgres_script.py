"""``scripts/postgres.sh`` from a checkout the ``postgres`` user cannot enter (issue 16, defect 21).

As root the server runs as the ``postgres`` system user, which cannot reach a clone in root's home or in a
``mktemp -d`` folder (mode 700). The script then keeps the cluster in a folder it can reach, under the system
temp dir, named after the checkout so ``dsn`` and ``down`` find it again, and says where on one stderr line.
Only runs as root with Debian's PostgreSQL binaries installed (what ``.ci/run`` has).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "postgres.sh"

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or not glob.glob("/usr/lib/postgresql/*/bin/initdb")
    or shutil.which("git") is None or not (ROOT / ".git").exists(),
    reason="needs root, a git checkout and Debian's PostgreSQL binaries (/usr/lib/postgresql/*/bin/initdb)")


def _script(clone: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVIDENCE_PG_", "PG"))}
    return subprocess.run(["bash", "scripts/postgres.sh", *args], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=300)


def test_postgres_script_runs_a_cluster_for_a_clone_in_a_private_folder():
    """Issue 16 defect 21: ``up`` from a clone in a mode-700 ``mkdtemp`` folder starts a server (it stopped with
    "user postgres cannot enter ..."), says where the cluster lives, and ``dsn`` and ``down`` find it."""
    psycopg = pytest.importorskip("psycopg")
    private = Path(tempfile.mkdtemp(prefix="evidence-clone-"))
    assert private.stat().st_mode & 0o777 == 0o700
    clone = private / "repo"
    cluster = None
    try:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, capture_output=True, timeout=300)
        shutil.copy2(SCRIPT, clone / "scripts" / "postgres.sh")  # the script under test, committed or not
        up = _script(clone, "up")
        assert up.returncode == 0, up.stderr
        where = [line for line in up.stderr.splitlines() if "cannot enter" in line]
        assert len(where) == 1, up.stderr
        found = re.search(r"cluster in (/\S+)", where[0])
        assert found, where[0]
        cluster = Path(found.group(1))
        assert not str(cluster).startswith(str(private))
        assert cluster.stat().st_mode & 0o777 == 0o700 and cluster.owner() == "postgres"
        dsn = up.stdout.strip().splitlines()[-1]
        with psycopg.connect(dsn, connect_timeout=10) as conn:
            assert conn.execute("SELECT current_database()").fetchone() == ("evidence",)
        again = _script(clone, "dsn")
        assert again.returncode == 0 and again.stdout.strip() == dsn, again.stderr
        down = _script(clone, "down")
        assert down.returncode == 0 and "stopped" in down.stderr, down.stderr
        assert _script(clone, "dsn").returncode == 1
    finally:
        if cluster is not None and (cluster / "data" / "PG_VERSION").exists():
            _script(clone, "down")  # only the server this test started
        shutil.rmtree(private, ignore_errors=True)
        if cluster is not None:
            shutil.rmtree(cluster, ignore_errors=True)
