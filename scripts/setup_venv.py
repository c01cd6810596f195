#!/usr/bin/env python3
"""Create or update the project's virtual environment with uv, showing progress all along (``make setup``).

``make setup`` (and so the first ``make lab`` or ``make test``) runs this with the system's Python:

1. ``python -m venv .venv`` (or reuse it);
2. install the installer: ``.venv/bin/python -m pip install 'uv>=0.5,<1'``. uv (a PyPI package with its binary
   inside, by Astral) downloads and installs in parallel: here several times faster than pip, which also printed
   nothing for minutes with ``-q``;
3. ``uv pip install --python .venv/bin/python -e '.[extras]'`` (or ``-r requirements.txt`` for the website's
   tools). uv ignores pip's configuration files, so this reads pip's own view of it (``pip config list``: the
   files under /etc, ~/.config/pip and the ``PIP_*`` variables) and passes the same index URLs, extra indexes,
   find-links folders, constraints, trusted hosts, CA bundle, proxy and timeout on to uv; with extra indexes it
   picks the best version across all of them as pip does (``--index-strategy unsafe-best-match``), so it installs
   what pip would, from the same places (local wheel folders and file:// indexes included);
4. if uv cannot be installed, or fails, pip does the install instead, after a line saying so (``INSTALLER=pip``
   chooses pip from the start).

Whatever the installer prints is shown, except uv's one line per installed package (a count replaces them); when
it is silent for 10 seconds a line says what is going on (elapsed time, MB downloaded and installed so far), so a
first run never looks stuck. Exits non-zero when the install failed; the Makefile then leaves its stamp alone.

Usage: ``python3 scripts/setup_venv.py --venv .venv -e '.[notebook,test]'`` or ``... --venv .venv -r FILE``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

#: The installer, from PyPI, into the venv. A floor with the options used below, a ceiling before a 1.0 that may
#: change them; outside it pip does the install.
UV_REQUIREMENT = "uv>=0.5,<1"
#: A progress line whenever the installer has printed nothing for this long (the README promises one every 15 s).
HEARTBEAT_S = 10.0
#: Lines of uv's output that list installed / removed packages one by one: counted, not shown.
PACKAGE_LINE_PREFIXES = (" + ", " - ", " ~ ")
INSTALLER_ENV = "INSTALLER"
#: What bench/bench_setup.py measured for a first run (the README quotes the same file).
MEASURED = Path(__file__).resolve().parents[1] / "bench" / "results" / "setup.json"


def say(text: str) -> None:
    print(text, flush=True)


def first_runs(installer: str, path: Path = MEASURED) -> dict | None:
    """What bench/results/setup.json says of this installer's first runs, in whole numbers (the README quotes them):
    {"low_s", "high_s", "silence_s", "venv_mb", "cache_mb", "cpus"}, or None without the file or such runs."""
    whole = lambda x: int(x + 0.5)  # noqa: E731 (half up: 42.5 s is 43 s)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        runs = [r for r in data["runs"] if r["installer"] == installer and r["exit"] == 0]
        cpus = data["machine"]["cpus"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not runs:
        return None
    return {"low_s": whole(min(r["seconds"] for r in runs)), "high_s": whole(max(r["seconds"] for r in runs)),
            "silence_s": whole(max(r["longest_silence_s"] for r in runs)), "venv_mb": max(r["venv_mb"] for r in runs),
            "cache_mb": max(r["download_cache_mb"] for r in runs), "cpus": cpus}


def measured(installer: str) -> str:
    """ " (measured ...)" for the progress line, from first_runs(), or "" without it."""
    m = first_runs(installer)
    if m is None:
        return ""
    return (f" (a first run took {m['low_s']} to {m['high_s']} s and {m['venv_mb']:,} MB on {m['cpus']} cores: "
            "bench/results/setup.json)")


def folder_mb(*folders: Path) -> int:
    """Disk use of ``folders`` in MB, each file counted once (uv hard-links its cache into the venv)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for folder in folders:
        for base, _dirs, files in os.walk(folder):
            for name in files:
                try:
                    st = os.lstat(os.path.join(base, name))
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_blocks * 512
    return round(total / 1e6)


def run_with_progress(cmd: list[str], *, label: str, watch: list[Path], env: dict[str, str] | None = None,
                      quiet_prefixes: tuple[str, ...] = ()) -> tuple[int, list[str], int]:
    """Run ``cmd``, echo its lines, and print ``label: still working ...`` after HEARTBEAT_S of silence.
    Returns (exit code, the last lines it printed, how many lines matched ``quiet_prefixes``)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=env, text=True, errors="replace", bufsize=1)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    started = last = time.monotonic()
    tail: list[str] = []
    hidden = 0
    try:
        while True:
            try:
                line = lines.get(timeout=max(0.1, HEARTBEAT_S - (time.monotonic() - last)))
            except queue.Empty:
                mb = folder_mb(*[p for p in watch if p.exists()])
                say(f"{label}: still working, {time.monotonic() - started:.0f} s so far ({mb:,} MB downloaded and "
                    "installed)")
                last = time.monotonic()
                continue
            if line is None:
                break
            tail = (tail + [line])[-15:]
            if line.startswith(quiet_prefixes):
                hidden += 1
                continue
            if line.strip():
                say(f"  {line.strip()}")
                last = time.monotonic()
        return proc.wait(), tail, hidden
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait()
        raise


# -- pip's configuration, for uv -----------------------------------------------------------------------------------

def pip_config(python: Path, environ: dict[str, str] | None = None) -> dict[str, str]:
    """pip's effective settings as ``pip config list`` prints them (files and PIP_* variables), by option name;
    a variable overrides the files as it does for pip, an ``install`` section overrides ``global``."""
    env = {**(os.environ if environ is None else environ), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    out = subprocess.run([str(python), "-m", "pip", "config", "list"], capture_output=True, text=True,
                         env=env).stdout
    rank = {"global": 0, "install": 1, ":env:": 2}
    found: dict[str, tuple[int, str]] = {}
    for line in out.splitlines():
        key, sep, raw = line.partition("=")
        section, _, option = key.rpartition(".")
        if not sep or section not in rank:
            continue
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            value = raw.strip("'\"")
        if option not in found or rank[section] >= found[option][0]:
            found[option] = (rank[section], str(value))
    return {option: value for option, (_, value) in found.items()}


def truthy(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


def uv_options(config: dict[str, str], environ: dict[str, str]) -> tuple[list[str], dict[str, str], list[str]]:
    """uv's arguments and environment for pip's ``config``: (args, env additions, what was carried over)."""
    args: list[str] = []
    env: dict[str, str] = {}
    said: list[str] = []
    words = lambda option: config.get(option, "").split()  # noqa: E731 (pip splits these on whitespace)
    if truthy(config.get("no-index", "")):
        args.append("--no-index")
        said.append("no index")
    elif config.get("index-url"):
        args += ["--index-url", config["index-url"]]
        said.append("its index URL")
    extra = words("extra-index-url")
    for url in extra:
        args += ["--extra-index-url", url]
    if extra:
        args += ["--index-strategy", "unsafe-best-match"]  # pip takes the best version across every index
        said.append(f"{len(extra)} extra index{'es' if len(extra) > 1 else ''}")
    links = words("find-links")
    for link in links:
        args += ["--find-links", link]
    if links:
        said.append(f"{len(links)} find-links location{'s' if len(links) > 1 else ''}")
    constraints = words("constraint")
    for path in constraints:
        args += ["--constraint", path]
    if constraints:
        said.append(f"{len(constraints)} constraints file{'s' if len(constraints) > 1 else ''}")
    for host in words("trusted-host"):
        args += ["--allow-insecure-host", host]
    if config.get("cert") and "SSL_CERT_FILE" not in environ:
        env["SSL_CERT_FILE"] = config["cert"]
    if config.get("cert"):
        said.append("its CA bundle")
    if config.get("client-cert"):
        env.setdefault("SSL_CLIENT_CERT", config["client-cert"])
    if config.get("proxy"):
        for name in ("HTTPS_PROXY", "HTTP_PROXY"):
            if name not in environ:
                env[name] = config["proxy"]
        said.append("its proxy")
    timeout = config.get("timeout") or config.get("default-timeout")
    if timeout and "UV_HTTP_TIMEOUT" not in environ:
        env["UV_HTTP_TIMEOUT"] = str(int(float(timeout)))
    if truthy(config.get("no-cache-dir", "")):
        args.append("--no-cache")
    return args, env, said


# -- the steps -----------------------------------------------------------------------------------------------------

def create_venv(venv: Path, total: int, label: str) -> Path:
    python = venv / "bin" / "python"
    if python.exists():
        say(f"{label} 1/{total}: reusing the virtual environment {venv}")
        return python
    say(f"{label} 1/{total}: creating the virtual environment {venv} with Python {sys.version.split()[0]}")
    made = subprocess.run([sys.executable, "-m", "venv", str(venv)])
    if made.returncode != 0 or not python.exists():
        shutil.rmtree(venv, ignore_errors=True)
        sys.exit(f"setup: could not create {venv} (Debian/Ubuntu: apt-get install python3-venv)")
    return python


def pip_install(python: Path, what: list[str], *, label: str, venv: Path) -> int:
    cmd = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off", "-q", *what]
    code, tail, _ = run_with_progress(cmd, label=label, watch=[venv])
    if code != 0:
        say("\n".join(f"  {line}" for line in tail))
    return code


def get_uv(python: Path, venv: Path, total: int, label: str) -> Path | None:
    """The venv's uv, installed with pip if missing; None (after saying why) when it cannot be had."""
    uv = venv / "bin" / "uv"
    if uv.exists():
        say(f"{label} 2/{total}: the installer uv is in {venv}")
        return uv
    say(f"{label} 2/{total}: installing the installer uv into {venv} (pip install '{UV_REQUIREMENT}')")
    code = pip_install(python, [UV_REQUIREMENT], label=f"{label} 2/{total}", venv=venv)
    if code == 0 and uv.exists():
        return uv
    say(f"{label}: could not install uv (see above); installing with pip instead, which is slower (minutes, not "
        "seconds) and prints a line every 10 s")
    return None


def install(venv: Path, what: list[str], description: str, installer: str, label: str) -> int:
    total = 3
    python = create_venv(venv, total, label)
    started = time.monotonic()
    uv = get_uv(python, venv, total, label) if installer == "uv" else None
    if installer != "uv":
        say(f"{label} 2/{total}: {INSTALLER_ENV}={installer}: installing with pip, not uv")
    step = f"{label} 3/{total}"
    first_run = what[0] == "-e"  # bench/results/setup.json measured the project's install, not a requirements file
    code = 1
    if uv is not None:
        args, env, said = uv_options(pip_config(python), dict(os.environ))
        env = {**os.environ, **env}
        cache = subprocess.run([str(uv), "cache", "dir"], capture_output=True, text=True, env=env).stdout.strip()
        say(f"{step}: installing {description} with uv{measured('uv') if first_run else ''}"
            + (f"; with pip's settings: {', '.join(said)}" if said else ""))
        cmd = [str(uv), "pip", "install", "--python", str(python), *args, *what]
        code, _, installed = run_with_progress(cmd, label=step, watch=[venv, *([Path(cache)] if cache else [])],
                                               env=env, quiet_prefixes=PACKAGE_LINE_PREFIXES)
        if code == 0:
            say(f"  ({installed} package{'s' if installed != 1 else ''} added or changed)")
        else:
            say(f"{label}: uv failed (exit {code}, see above); installing with pip instead, which is slower and "
                "prints a line every 10 s")
    if code != 0:
        say(f"{step}: installing {description} with pip{measured('pip') if first_run else ''}")
        code = pip_install(python, what, label=step, venv=venv)
    if code == 0:
        say(f"{label}: installed in {time.monotonic() - started:.0f} s ({venv} now {folder_mb(venv):,} MB)")
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, required=True)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("-e", "--editable", help="install this project editable, e.g. '.[notebook,test]'")
    target.add_argument("-r", "--requirements", help="install a requirements file")
    parser.add_argument("--describe", default="", help="what is installed, for the progress lines")
    parser.add_argument("--label", default="setup", help="the progress lines' first word (default: setup)")
    args = parser.parse_args(argv)
    installer = os.environ.get(INSTALLER_ENV, "uv").strip() or "uv"
    if installer not in ("uv", "pip"):
        sys.exit(f"setup: {INSTALLER_ENV}={installer!r}: use uv (the default) or pip")
    what = ["-e", args.editable] if args.editable else ["-r", args.requirements]
    try:
        return install(args.venv, what, args.describe or " ".join(what), installer, args.label)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
