#!/usr/bin/env python3
"""The first run, measured (issue 34 item 8): ``make setup`` in a fresh clone with empty caches, as root and as a
normal user, on this machine. Writes ``bench/results/setup.json``, whose figures the README quotes.

For each commit given (``--ref``; default: this checkout's HEAD) and each account (root, and ``--user`` if given,
created with ``useradd -m`` when missing), it

* clones this repository into a private folder (mode 700, owned by the account) and checks out the commit;
* runs ``make setup`` there as that account, with an empty download cache (``XDG_CACHE_HOME`` in the private
  folder: pip's and uv's caches both live under it) and, for the normal user, a login environment (``su -``:
  no variable of the caller's session, only the machine's configuration);
* records the wall time, the longest time without a line of output (the README promises one at least every
  15 s), the number of lines, which installer ran, the disk use of ``.venv`` and of the download cache (each
  file counted once: uv hard-links its cache into the venv), the time of a second ``make setup`` (the stamp: it
  installs nothing), and the load average around the run (the machine is shared: compare runs made back to back);
* with ``--newcomer``, for the normal user after the last first run: the time from ``make lab`` to the lab's
  address, and ``make test`` (time, exit, the longest stretch without a new line).

Every result file entry names the commit and account it measured; entries for other commits are kept, so the
"before" (the commit before uv, pip -q) and the "after" stand side by side. Needs root (it runs commands as the
other account with ``su``). Usage::

    python3 bench/bench_setup.py --ref <commit-before> --ref HEAD --user learner --repeat 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "setup.json"


def newcomer_path(path: Path = OUT) -> dict | None:
    """The normal user's ``make lab`` (seconds to the address) and ``make test`` (whole minutes) after a first run,
    from bench/results/setup.json (``bench_setup.py --newcomer``), or None."""
    try:
        runs = [r["newcomer"] for r in json.loads(path.read_text(encoding="utf-8"))["runs"] if "newcomer" in r]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not runs:
        return None
    last = runs[-1]
    return {"lab_s": int(last["lab_address_seconds"] + 0.5), "test_min": int(last["test_seconds"] / 60 + 0.5),
            "test_exit": last["test_exit"]}


def commit_of(ref: str) -> str:
    return subprocess.run(["git", "rev-parse", ref], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()


def disk_mb(*paths: Path) -> list[int]:
    """``du -sk`` of each path in one run (a file hard-linked into two of them counts in the first only), in MB."""
    present = [str(p) for p in paths if p.exists()]
    out = subprocess.run(["du", "-sk", *present], capture_output=True, text=True, check=True).stdout.split("\n")
    sizes = {line.split("\t", 1)[1]: int(line.split("\t", 1)[0]) for line in out if "\t" in line}
    return [round(sizes.get(str(p), 0) * 1024 / 1e6) for p in paths]


def as_account(user: str | None, command: str, env: dict[str, str]) -> list[str]:
    """``command`` in a shell as root (the caller's environment plus ``env``) or as ``user`` (a login shell)."""
    assigned = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    if user is None:
        return ["bash", "-c", f"export {assigned}; {command}" if assigned else command]
    return ["su", "-", user, "-c", f"export {assigned}; {command}" if assigned else command]


def timed_lines(cmd: list[str]) -> dict:
    """Run ``cmd``; its wall time, exit code, lines, and the longest stretch without a new line."""
    started = last = time.monotonic()
    gap, lines = 0.0, []
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    for line in proc.stdout:
        now = time.monotonic()
        gap, last = max(gap, now - last), now
        lines.append(line.rstrip("\n"))
        print(f"    [{now - started:6.1f} s] {line.rstrip()}", flush=True)
    code = proc.wait()
    end = time.monotonic()
    return {"seconds": round(end - started, 1), "exit": code, "lines": lines,
            "longest_silence_s": round(max(gap, end - last), 1)}


def ensure_user(user: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(user)
    except KeyError:
        subprocess.run(["useradd", "-m", "-s", "/bin/bash", user], check=True)
        return pwd.getpwnam(user)


def installer_of(lines: list[str]) -> str:
    text = "\n".join(lines)
    if " with uv" in text and "installing with pip instead" not in text:
        return "uv"
    return "pip"


def lab_address_seconds(clone: Path, user: str | None, env: dict[str, str]) -> float:
    """Seconds from ``make lab`` (setup done) to JupyterLab printing its address; the server is stopped after."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = f"--no-browser --port={port} --ServerApp.port_retries=0"
    pidfile = clone.parent / "lab.pid"  # su -c runs the command in a session of its own: make lab's group is that
    command = f"echo $$ > {shlex.quote(str(pidfile))}; cd {shlex.quote(str(clone))} && exec make lab LAB_ARGS={shlex.quote(args)}"
    started = time.monotonic()
    proc = subprocess.Popen(as_account(user, command, env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace", start_new_session=True)
    try:
        for line in proc.stdout:
            print(f"    [{time.monotonic() - started:6.1f} s] {line.rstrip()}", flush=True)
            if f":{port}/lab" in line:
                return round(time.monotonic() - started, 1)
        raise RuntimeError(f"make lab exited with {proc.wait()} before printing its address")
    finally:
        groups = [int(pidfile.read_text()), proc.pid] if pidfile.exists() else [proc.pid]
        for group in groups:  # make lab's process group (make, its shell, JupyterLab), then su's
            stop_group(group)
        proc.wait(timeout=30)


def stop_group(pgid: int) -> None:
    """SIGTERM to a process group this script started, SIGKILL if it is still there after 20 s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)


def newcomer(clone: Path, user: str | None, env: dict[str, str]) -> dict:
    """The newcomer's path after the first run: ``make lab`` to the lab's address, then ``make test``."""
    lab = lab_address_seconds(clone, user, env)
    test = timed_lines(as_account(user, f"cd {shlex.quote(str(clone))} && make test", env))
    return {"lab_address_seconds": lab, "test_seconds": test["seconds"], "test_exit": test["exit"],
            "test_longest_silence_s": test["longest_silence_s"], "test_last_line": test["lines"][-1:]}


def measure(ref: str, user: str | None, with_newcomer: bool = False) -> dict:
    commit = commit_of(ref)
    account = user or "root"
    base = Path(tempfile.mkdtemp(prefix="bench-setup-"))  # mode 700
    try:
        clone = base / "clone"
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "-c", "advice.detachedHead=false", "checkout", "--quiet", commit], cwd=clone,
                       check=True)
        cache = base / "cache"
        cache.mkdir()
        if user is not None:
            entry = ensure_user(user)
            subprocess.run(["chown", "-R", f"{entry.pw_uid}:{entry.pw_gid}", str(base)], check=True)
        env = {"XDG_CACHE_HOME": str(cache)}
        load_before = os.getloadavg()
        print(f"  {commit[:12]} as {account}: make setup in {clone}", flush=True)
        first = timed_lines(as_account(user, f"cd {shlex.quote(str(clone))} && make setup", env))
        load_after = os.getloadavg()
        venv_mb, cache_mb = disk_mb(clone / ".venv", cache)
        second = timed_lines(as_account(user, f"cd {shlex.quote(str(clone))} && make setup", env))
        python = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-V"], capture_output=True,
                                text=True).stdout.strip()
        packages = sum(1 for _ in (clone / ".venv").glob("lib/python*/site-packages/*.dist-info"))
        path = {"newcomer": newcomer(clone, user, env)} if with_newcomer else {}
        return {**path,
            "commit": commit, "account": account, "python": python, "installer": installer_of(first["lines"]),
            "exit": first["exit"], "seconds": first["seconds"], "longest_silence_s": first["longest_silence_s"],
            "output_lines": len(first["lines"]), "venv_mb": venv_mb, "download_cache_mb": cache_mb,
            "packages": packages, "second_run_seconds": second["seconds"], "second_run_exit": second["exit"],
            "load_average_1min": [round(load_before[0], 2), round(load_after[0], 2)],
        }
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", action="append", help="commit(s) to measure (default: HEAD)")
    parser.add_argument("--user", help="also measure as this normal user (created if missing)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per commit and account (default 1)")
    parser.add_argument("--newcomer", action="store_true",
                        help="as --user, after the first run of the last --ref: time make lab to the lab's address "
                             "and make test (about 10 more minutes)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit("bench_setup.py runs as root: it measures root and a normal user (su)")
    runs = []
    refs = args.ref or ["HEAD"]
    for trial in range(args.repeat):
        for ref in refs:
            for user in [None, *([args.user] if args.user else [])]:
                last = trial == args.repeat - 1 and ref == refs[-1] and user is not None
                runs.append(measure(ref, user, with_newcomer=args.newcomer and last))
                print(json.dumps(runs[-1]), flush=True)
    previous = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    measured = {(r["commit"], r["account"]) for r in runs}
    kept = [r for r in previous.get("runs", []) if (r["commit"], r["account"]) not in measured]
    result = {
        "what": "make setup in a fresh clone, empty download cache (XDG_CACHE_HOME), as root and as a normal user "
                "(su -); venv_mb and download_cache_mb from du -sk (hard links counted once)",
        "machine": {"cpus": os.cpu_count(), "system": f"{platform.system()} {platform.machine()}"},
        "runs": kept + runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
