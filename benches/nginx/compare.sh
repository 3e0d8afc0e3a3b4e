#!/usr/bin/env bash
# The front page served by the release `handler` against nginx serving the same bytes from a
# file, on this machine, alternately (issue 21: the front page's target is 0.8x nginx); and
# against the floor under any handler on axum and Tokio: floor/, the same bytes from memory with
# no middleware.
#
#     cargo build --release --bin handler
#     cargo build --release --manifest-path benches/nginx/floor/Cargo.toml --target-dir target
#     bash benches/nginx/compare.sh [rounds] [RUST_LOG] [seconds]   # needs nginx and wrk (Debian: nginx-light wrk)
#
# Defaults: 3 rounds, info, 10 s. HANDLER and FLOOR name other builds of the two (benches/smoke.sh
# runs the script in CI with one round of 1 s on the debug builds: that it runs, not its figures).
#
# The handler runs as `cargo run` does (embedded store, development sign-in), without the per-user
# write limit (BLOG_WRITES_PER_MINUTE=off: the seeding writes faster than a person), seeded with 30
# posts by one user through the API; nginx gets the page the handler answered, saved to a file,
# with the same Content-Type; a second nginx server also sends the handler's response headers and
# writes an access log line per request, as the handler does. wrk: 2 threads, 16 connections,
# 10 s, no Accept-Encoding (none compresses). Each line is one round of wrk runs.
set -euo pipefail
rounds=${1:-3}
log=${2:-info}
seconds=${3:-10}
root=$(cd "$(dirname "$0")/../.." && pwd)
handler=${HANDLER:-$root/target/release/handler}
floor=${FLOOR:-$root/target/release/front-page-floor}
for tool in nginx wrk curl; do
  command -v "$tool" >/dev/null || { echo "compare.sh needs $tool (Debian: apt-get install nginx-light wrk curl)" >&2; exit 1; }
done
[ -x "$handler" ] || { echo "no $handler: cargo build --release --bin handler" >&2; exit 1; }
[ -x "$floor" ] || { echo "no $floor: cargo build --release --manifest-path benches/nginx/floor/Cargo.toml --target-dir target" >&2; exit 1; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true; rm -rf "$work"' EXIT

BLOG_AUTH=development BLOG_DATA_DIR="$work/data" BLOG_LISTEN=127.0.0.1:7071 BLOG_WRITES_PER_MINUTE=off RUST_LOG=$log \
  "$handler" > "$work/handler.log" 2>&1 &
for _ in $(seq 100); do curl -fs -o /dev/null http://127.0.0.1:7071/ && break; sleep 0.1; done
curl -fs -o /dev/null http://127.0.0.1:7071/ || { echo "the handler did not answer within 10 s:" >&2; cat "$work/handler.log" >&2; exit 1; }
api() { curl -fs -o /dev/null -H 'x-dev-user: writer' -H 'Content-Type: application/json' "$@"; }
api -X POST http://127.0.0.1:7071/api/users -d '{"username":"writer"}'
paragraph='Cosmos DB serves every read of this blog from one logical partition, because each post carries its author name and its counts, and the feed holds a short copy of the newest posts.'
for n in $(seq 30); do
  api -X POST http://127.0.0.1:7071/api/posts -d "{\"userId\":\"writer\",\"title\":\"Post number $n\",\"content\":\"$paragraph\\n\\n$paragraph $paragraph\"}"
done
# The change feed copies the posts into the feed: the page is taken once it shows a full page
# of them (10), or after 30 s as it is.
for _ in $(seq 300); do
  curl -fs -D "$work/headers" http://127.0.0.1:7071/ > "$work/index.html"
  [ "$(grep -o '<article' "$work/index.html" | wc -l)" -ge 10 ] && break
  sleep 0.1
done
echo "front page: $(wc -c < "$work/index.html") bytes, $(grep -o '<article' "$work/index.html" | wc -l) posts"

cat > "$work/nginx.conf" <<CONF
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  server {
    listen 127.0.0.1:8081;
    location = / { root $work; default_type "text/html; charset=utf-8"; try_files /index.html =404; }
  }
  # The same page with the work the handler does beside it: its response headers, and a line
  # per request in a log (nginx's default: written as it happens).
  server {
    listen 127.0.0.1:8083;
    access_log $work/access.log;
    location = / {
      root $work; default_type "text/html; charset=utf-8"; try_files /index.html =404;
$(grep -iv '^\(content-type\|content-length\|date\|vary\|http/\)' "$work/headers" | tr -d '\r' | awk -F': ' 'NF == 2 { gsub(/"/, "\\\"", $2); printf "      add_header %s \"%s\" always;\n", $1, $2 }')
    }
  }
}
CONF
nginx -c "$work/nginx.conf"
"$floor" "$work/index.html" 127.0.0.1:8082 &
sleep 0.5
headers() { curl -fsI "$1" | grep -c ':'; }
echo "headers sent: handler $(headers http://127.0.0.1:7071/), nginx $(headers http://127.0.0.1:8081/), axum floor $(headers http://127.0.0.1:8082/), nginx with the handler's $(headers http://127.0.0.1:8083/)"
run() { wrk -t2 -c16 -d"${seconds}s" "$1" | awk '/Requests\/sec/ {print $2}'; }
for round in $(seq "$rounds"); do
  echo "round $round: handler $(run http://127.0.0.1:7071/) req/s, nginx $(run http://127.0.0.1:8081/) req/s, axum floor $(run http://127.0.0.1:8082/) req/s, nginx with the handler's headers and an access log $(run http://127.0.0.1:8083/) req/s"
done
