#!/usr/bin/env bash
# Fuzzes the running handler from its own OpenAPI description with Schemathesis (PyPI), bounded
# in time: every generated request, valid or not, must get an answer the description allows,
# and never a 5xx. Runs on the embedded store in a temporary directory, on loopback only.
#   fuzz/schemathesis.sh [SECONDS] [SCHEMATHESIS OPTION...]     (default 120 s)
# e.g. `fuzz/schemathesis.sh 60 --report har --report-dir /tmp/st` keeps every request and answer.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-120}"
shift || true
command -v schemathesis >/dev/null || python3 -m pip install --quiet schemathesis

cargo build --quiet --bin handler
data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Writes sign in as "fuzzer" with the development scheme, so they reach validation and storage.
# Without the per-user write limit: every write is one user's, and past its burst (20) most
# answers would be 429 before the body is read; the limit has its own tests.
BLOG_AUTH=development BLOG_WRITES_PER_MINUTE=off BLOG_DATA_DIR="$data" BLOG_LISTEN="127.0.0.1:$port" RUST_LOG=warn \
  target/debug/handler &
handler=$!
trap 'kill $handler 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.2; done

# The stateful phase chains requests along the description's links (a new post's id into its
# reads, comments, likes, pictures and deletion; src/http/openapi.rs), so it reaches real items
# rather than guessed ids. Left out, with its reason: positive_data_acceptance: a schema-valid
# request may still be refused by design: an opaque continuationToken the list did not issue
# (400), a userId that names no user (422) or another user than the caller (403).
schemathesis run "http://127.0.0.1:$port/api/openapi.json" --url "http://127.0.0.1:$port" \
  --header "x-dev-user: fuzzer" --checks all --exclude-checks positive_data_acceptance \
  --phases examples,coverage,fuzzing,stateful --max-time "$seconds" --generation-deterministic "$@"
