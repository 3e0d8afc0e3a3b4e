#!/usr/bin/env bash
# Installs what the browser tests drive: Debian's chromium and chromium-driver packages
# (/usr/bin/chromium, /usr/bin/chromedriver), from the machine's own apt sources and nowhere
# else; and axe-core, the accessibility engine the tests run in the pages, from npm into
# tests/browser/node_modules. Does nothing for what is already there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -f "$here/node_modules/axe-core/axe.min.js" ]; then
    command -v npm >/dev/null || { echo "tests/browser/install.sh: needs npm (Node.js) to install axe-core" >&2; exit 1; }
    npm install --prefix "$here" --no-save --no-audit --no-fund --no-package-lock axe-core@4 >/dev/null
fi
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    exit 0
fi
if ! command -v apt-get >/dev/null; then
    echo "tests/browser/install.sh: needs apt-get (Debian or Ubuntu) to install chromium and chromium-driver;" >&2
    echo "elsewhere, install Chromium and its matching chromedriver and put both on PATH." >&2
    exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium chromium-driver
chromium --version
chromedriver --version
