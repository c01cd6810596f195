"""What the MCP tests share (issue 27): a small folder corpus, a tokens file, a server on a free loopback port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALICE_TOKEN = "alice-token-0123456789"
BOB_TOKEN = "bob-token-0123456789ab"
LIMITS = "Batch limit\nThe batch limit is 200 rows per call. Timeout is 30 seconds.\n"
PAYROLL = "工资单\n单批上限为200条，超时设为30秒。只有财务组可以读。\n"


def write_corpus(folder: Path) -> Path:
    """Two documents: ``limits`` (open) and ``payroll`` (finance only, by the tokens file)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "limits.txt").write_text(LIMITS, encoding="utf-8")
    (folder / "payroll.txt").write_text(PAYROLL, encoding="utf-8")
    return folder


def write_tokens(path: Path) -> Path:
    """Alice (finance) may read ``payroll``; Bob, same tenant, may not."""
    path.write_text(json.dumps({
        "tokens": {ALICE_TOKEN: {"tenant": "acme", "user": "alice", "groups": ["finance"]},
                   BOB_TOKEN: {"tenant": "acme", "user": "bob"}},
        "documents": {"payroll": {"tenant": "acme", "read": ["group:finance"]}}}), encoding="utf-8")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "evidence_lib", "mcp", *args]


@contextmanager
def http_server(corpus: Path, tokens: Path) -> Iterator[str]:
    """``python -m evidence_lib mcp --transport http`` in a subprocess on a free loopback port; its URL. Torn down
    (terminated, then killed) when the block ends."""
    port = free_port()
    proc = subprocess.Popen(server_command("--corpus", str(corpus), "--transport", "http", "--port", str(port),
                                           "--tokens", str(tokens)),
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        _wait_for(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def _wait_for(port: int, proc: subprocess.Popen) -> None:
    for _ in range(300):
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the server did not listen")
