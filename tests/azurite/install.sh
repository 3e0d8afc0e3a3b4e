#!/usr/bin/env bash
# Installs Azurite, the Azure Storage emulator the pictures' Blob Storage tests run against, from
# npm into tests/azurite/node_modules. Does nothing when it is there. (3.37.0 declares Node 22,
# and runs its blob service on Node 20 as well.)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ -x "$here/node_modules/.bin/azurite-blob" ]; then
    exit 0
fi
command -v npm >/dev/null || { echo "tests/azurite/install.sh: needs npm (Node.js) to install Azurite" >&2; exit 1; }
npm install --prefix "$here" --no-save --no-audit --no-fund --no-package-lock azurite@3.37.0 >/dev/null
"$here/node_modules/.bin/azurite-blob" --version
