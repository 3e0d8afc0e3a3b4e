#!/usr/bin/env bash
# Checks the Kusto (KQL) queries in FILE, a JSON list of {"name", "query"}, with Microsoft's
# Kusto.Language parser (see check.mjs). Installs the parser first when it is not there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
[ $# -eq 1 ] || { echo "usage: tests/kql/check.sh QUERIES.json" >&2; exit 2; }
"$here/install.sh"
exec node "$here/check.mjs" "$1"
