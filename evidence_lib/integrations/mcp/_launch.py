"""Start ``python -m evidence_lib mcp`` over HTTP as a process and wait until it answers. Issue 34, notebook 13.

A server that is still importing on a busy machine does not listen yet, and one that failed (a port taken, a bad
tokens file) never will: a fixed sleep gets both wrong. :meth:`ServerProcess.start` waits until the port accepts a
connection, up to a generous bound, and if the process exits first it raises with the server's own stderr. The tests,
notebook 13 and the benchmarks start servers through it. No SDK import: it only runs a command and opens a socket.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ._config import host_port

__all__ = ["READY_SECONDS", "ServerProcess", "free_port"]

#: How long :meth:`ServerProcess.start` waits for the server to listen (a loaded 2-core machine needs tens of seconds).
READY_SECONDS = 120.0
#: Most characters of the server's stderr an error shows (its end: the traceback's last lines).
STDERR_SHOWN = 4_000
_POLL = 0.05  # seconds between two connection attempts


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on ``host`` now (the system's choice)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class ServerProcess:
    """One MCP server process over streamable HTTP: its ``url``, ``port`` and process; its stderr kept in a file (the
    one given, or a temporary one) so an error can show it. Stop it with :meth:`stop` (or ``with``). Notebook 13."""

    def __init__(self, proc: subprocess.Popen, host: str, port: int, stderr: IO[bytes]) -> None:
        self.proc, self.host, self.port, self._stderr = proc, host, port, stderr
        self.url = f"http://{host_port(host, port)}/mcp"

    @classmethod
    def start(cls, args: Sequence[str], *, host: str = "127.0.0.1", port: int | None = None,
              stderr: str | Path | None = None, cwd: str | Path | None = None, env: Mapping[str, str] | None = None,
              timeout: float = READY_SECONDS) -> ServerProcess:
        """``python -m evidence_lib mcp ARGS --transport http --host HOST --port PORT`` (a free port unless given),
        returned once it accepts connections. ``RuntimeError`` with the server's stderr if it exits first or does
        not listen within ``timeout`` seconds (then it is stopped)."""
        port = free_port(host) if port is None else port
        log = open(stderr, "w+b") if stderr is not None else tempfile.TemporaryFile()
        command = [sys.executable, "-m", "evidence_lib", "mcp", *args, "--transport", "http", "--host", host,
                   "--port", str(port)]
        try:
            proc = subprocess.Popen(command, cwd=cwd, env=dict(env) if env is not None else None,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        except BaseException:
            log.close()
            raise
        server = cls(proc, host, port, log)
        try:
            server.wait_ready(timeout)
        except BaseException:
            server.stop()
            raise
        return server

    def wait_ready(self, timeout: float = READY_SECONDS) -> None:
        """Until the port accepts a connection; ``RuntimeError`` with the server's stderr if the process exits first
        or ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        while True:
            code = self.proc.poll()
            if code is not None:
                raise RuntimeError(f"the MCP server exited (code {code}) before it listened:\n{self.stderr_text()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=1):
                    return
            except OSError:
                if time.monotonic() >= deadline:
                    raise RuntimeError(f"the MCP server did not listen within {timeout:g} s:\n"
                                       f"{self.stderr_text()}") from None
                time.sleep(_POLL)

    def stderr_text(self) -> str:
        """The end of what the server wrote to stderr so far."""
        if self._stderr.closed:
            return ""
        fd = self._stderr.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - 4 * STDERR_SHOWN)  # pread: the offset the server writes at stays where it is
        return os.pread(fd, size - start, start).decode("utf-8", "replace")[-STDERR_SHOWN:]

    def kill(self) -> None:
        """End it at once (SIGKILL): nothing is flushed or closed, as when a machine dies."""
        self.proc.kill()
        self.proc.wait()

    def stop(self) -> None:
        """Terminate it (then kill it after 30 s) and close its stderr file; safe to call twice."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        self._stderr.close()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.stop()
