#!/usr/bin/env bash
# The API's OpenAPI description, as a client's author uses it: fetched from the handler as
# `BLOG_AUTH=development cargo run` starts it, validated with openapi-spec-validator (OpenAPI
# 3.1), a Python client generated from it with openapi-python-client, and every operation called
# through that client against the same handler (drive.py). Prints "openapi client: ok".
#
# Both tools come from PyPI, pinned in requirements.txt, into a virtual environment under target/
# (target/tools/openapi-client, remade when requirements.txt changes), never the system Python.
# Needs python3 with venv (Debian: python3-venv).
set -euo pipefail
cd "$(dirname "$0")/../.."

tools="$PWD/target/tools"
venv="$tools/openapi-client"
requirements=tests/openapi_client/requirements.txt

if ! cmp -s "$requirements" "$venv/requirements.txt" 2>/dev/null; then
  echo "openapi client: installing openapi-python-client and openapi-spec-validator (PyPI) under target/tools" >&2
  rm -rf "$venv"
  mkdir -p "$tools"
  python3 -m venv "$venv" || {
    echo "openapi client: python3 -m venv failed; install Python's venv (Debian: apt-get install python3-venv)" >&2
    exit 1
  }
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$venv/requirements.txt"
fi

cargo build --quiet --bin handler
handler="${CARGO_TARGET_DIR:-target}/debug/handler"
work=$(mktemp -d)
mkdir "$work/data"
# Made before the handler starts: the background job opens it after this shell reads it.
: >"$work/handler.log"
BLOG_AUTH=development BLOG_DATA_DIR="$work/data" BLOG_LISTEN=127.0.0.1:0 BLOG_WRITES_PER_MINUTE=off NO_COLOR=1 RUST_LOG=info \
  "$handler" >"$work/handler.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
# Its port is the one it logs: "serving on http://127.0.0.1:PORT/" (src/bin/handler/main.rs).
base=""
for _ in $(seq 300); do
  base=$(sed -n 's|.*serving on \(http://[^/ ]*\)/.*|\1|p' "$work/handler.log" | head -n 1)
  [ -n "$base" ] && break
  kill -0 $server 2>/dev/null || { cat "$work/handler.log" >&2; echo "openapi client: the handler exited" >&2; exit 1; }
  sleep 0.1
done
[ -n "$base" ] || { cat "$work/handler.log" >&2; echo "openapi client: the handler did not say where it serves" >&2; exit 1; }

mkdir "$work/client"
PATH="$venv/bin:$PATH" "$venv/bin/python" tests/openapi_client/drive.py "$base" "$work/client" || {
  echo "openapi client: the handler's log:" >&2
  tail -n 40 "$work/handler.log" >&2
  exit 1
}
