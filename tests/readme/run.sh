#!/usr/bin/env bash
# The README's commands, as a newcomer runs them, against the handler started as
# `BLOG_AUTH=development cargo run` starts it: the "Try it" block (the fenced block after the
# `<!-- ci: try-it -->` marker), twice, then `handler smoke` against the same server.
#
# Every curl of the block must succeed: `curl -s` is run as `curl -sS --fail-with-body`, so an
# HTTP error status fails the line (and, under `set -euo pipefail`, the run), and the ids the
# block picks out with jq must be ids, not `null`. Needs curl and jq (installed from Debian's
# packages when missing). Port: 7071 as in the README, or README_PORT.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v jq >/dev/null; then
  echo "installing jq (Debian package)" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null
fi
command -v curl >/dev/null || { echo "curl is missing" >&2; exit 1; }

port=${README_PORT:-7071}
cargo build --quiet --bin handler
handler="${CARGO_TARGET_DIR:-target}/debug/handler"
data=$(mktemp -d)
log=$(mktemp)
BLOG_AUTH=development BLOG_DATA_DIR="$data" BLOG_LISTEN="127.0.0.1:$port" NO_COLOR=1 "$handler" >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$data" "$log"' EXIT
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$port/" && break
  kill -0 $server 2>/dev/null || { cat "$log" >&2; echo "the handler exited (is port $port taken? set README_PORT)" >&2; exit 1; }
  sleep 0.1
done

block=$(awk '/<!-- ci: try-it -->/ {marker=1; next} marker && /^```sh/ {inside=1; next} inside && /^```/ {exit} inside {print}' README.md)
[ -n "$block" ] || { echo "README.md has no sh block after <!-- ci: try-it -->" >&2; exit 1; }
# The same commands, failing on an HTTP error, against this server's port.
script=$(printf '%s\n' "$block" | sed -e 's/curl -s /curl -sS --fail-with-body /g' -e "s/localhost:7071/127.0.0.1:$port/g")
checks='for id in "$USER_ID" "$POST_ID" "$COMMENT_ID"; do [ -n "$id" ] && [ "$id" != null ] || { echo "an id came back as ${id:-nothing}" >&2; exit 1; }; done'

for run in 1 2; do
  echo "== the README's Try it block, run $run" >&2
  bash -euo pipefail -c "$script"$'\n'"$checks" >/dev/null
done
echo "== handler smoke" >&2
# (--wait 90: its scheduled post waits for the blog's own timer, once a minute as started here.)
"$handler" smoke "http://127.0.0.1:$port" --dev-user readme-smoke --wait 90
echo "README commands: ok" >&2
