#!/usr/bin/env bash
# Install what the real-browser tests (tests/browser, `make test-browser`: the live explorers, Chinese in JupyterLab) need:
#   1. Debian's `chromium` package at /usr/bin/chromium (apt-get; needs root), unless already there;
#   2. Playwright for Python into the project's virtual environment (pip; its browser download is never used).
# Usage: scripts/install_browser.sh [VENV]   (default: .venv next to this script's parent)
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-${VENV:-$here/.venv}}"
chromium="${EVIDENCE_CHROMIUM:-/usr/bin/chromium}"

if [ -x "$chromium" ]; then
    echo "chromium: found $chromium ($("$chromium" --version 2>/dev/null | head -n1 || echo 'version unknown'))"
else
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "error: $chromium is missing and apt-get is not available on this machine." >&2
        echo "       Install Chromium with your system's package manager, or set EVIDENCE_CHROMIUM to its path." >&2
        exit 1
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "error: $chromium is missing and installing it needs root." >&2
        echo "       Run: sudo apt-get update && sudo apt-get install -y chromium" >&2
        exit 1
    fi
    echo "chromium: installing Debian's chromium package (apt-get update first)..."
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends chromium >/dev/null
    if [ ! -x "$chromium" ]; then
        echo "error: apt-get installed chromium but $chromium is still missing." >&2
        exit 1
    fi
    echo "chromium: installed $("$chromium" --version 2>/dev/null | head -n1 || true)"
fi

if [ ! -x "$venv/bin/python" ]; then
    echo "error: no virtual environment at $venv (run \`make setup\` first)." >&2
    exit 1
fi
if "$venv/bin/python" -c "import playwright" 2>/dev/null; then
    echo "playwright: already in $venv"
else
    echo "playwright: installing into $venv (Python package only; no browser download)..."
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "playwright>=1.40"
fi
echo "ready: EVIDENCE_BROWSER_TEST=1 $venv/bin/python -m pytest -q tests/browser"
