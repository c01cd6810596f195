#!/usr/bin/env bash
# Install a CJK font for the website's browser test (`make test-site`), so Chromium draws the Chinese corpus text
# instead of empty boxes in the screenshots: Debian's fonts-noto-cjk (apt-get; needs root), unless fontconfig
# already knows a Chinese font. The site itself ships no font: a reader's system font draws the text.
set -euo pipefail

if command -v fc-list >/dev/null 2>&1 && [ -n "$(fc-list :lang=zh family 2>/dev/null | head -n1)" ]; then
    echo "fonts: Chinese font found ($(fc-list :lang=zh family | head -n1))"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" -ne 0 ]; then
    echo "warning: no Chinese font found; Chinese text in the site screenshots will show as boxes." >&2
    echo "         Install one, e.g.: sudo apt-get update && sudo apt-get install -y fonts-noto-cjk" >&2
    exit 0
fi
echo "fonts: installing Debian's fonts-noto-cjk (apt-get update first)..."
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends fonts-noto-cjk fontconfig >/dev/null
echo "fonts: installed ($(fc-list :lang=zh family | head -n1))"
