#!/usr/bin/env bash
# Installs Microsoft's Kusto (KQL) language parser, the Bridge.NET build of Kusto.Language that
# npm ships as @kusto/language-service-next, into tests/kql/node_modules for check.mjs. Does
# nothing when it is there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ -f "$here/node_modules/@kusto/language-service-next/Kusto.Language.Bridge.js" ]; then
    exit 0
fi
command -v npm >/dev/null || { echo "tests/kql/install.sh: needs npm (Node.js) to install Kusto.Language" >&2; exit 1; }
npm install --prefix "$here" --no-save --no-audit --no-fund --no-package-lock @kusto/language-service-next@12.4.1 >/dev/null
