#!/usr/bin/env bash
# Lighthouse's four scores (performance, accessibility, best practices, SEO) for the front page,
# a post and a tag's page, on a phone (Lighthouse's default, mobile emulation and throttling) and
# a desktop (`--preset=desktop`), against the handler as `cargo run` starts it, seeded through the
# API; the post measured shows a picture, which the lists show small beside its excerpt.
# Not a test: it prints the scores (the README records them). Needs Chromium
# (tests/browser/install.sh) and npm; Lighthouse is installed into tests/browser/node_modules.
#
#     cargo build --bin handler && tests/browser/lighthouse.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/browser
[ -x "$here/node_modules/.bin/lighthouse" ] || npm install --prefix "$here" --no-save --no-audit --no-fund --no-package-lock lighthouse@12 >/dev/null
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# The pages link to the blog at its public address: the one Lighthouse reaches it at.
BLOG_AUTH=development BLOG_DATA_DIR="$work/data" BLOG_LISTEN=127.0.0.1:7079 BLOG_PUBLIC_URL=http://127.0.0.1:7079 RUST_LOG=warn target/debug/handler &
base=http://127.0.0.1:7079
for _ in $(seq 100); do curl -fs -o /dev/null "$base/" && break; sleep 0.1; done
api() { curl -fs -H 'x-dev-user: ada' -H 'Content-Type: application/json' "$@"; }
api -X POST "$base/api/users" -d '{"username":"Ada Lovelace"}' >/dev/null
for n in 1 2 3 4 5; do
  post=$(api -X POST "$base/api/posts" -d "{\"userId\":\"ada\",\"title\":\"Notes $n\",\"tags\":[\"Engines\"],\"content\":\"The engine weaves **algebraic patterns** as the Jacquard loom weaves flowers.\\n\\n- one\\n- two\\n\\nSee [the notes](https://example.com).\"}" | sed 's/.*"id":"\([^"]*\)".*/\1/')
done
api -X POST "$base/api/posts/$post/comments" -d '{"userId":"ada","content":"A *comment*."}' >/dev/null
# A picture in the post measured: a 1600×900 PNG made here, uploaded, put in the text.
python3 - "$work/picture.png" <<'PY'
import struct, sys, zlib
w, h = 1600, 900
rows = b"".join(b"\0" + bytes(v for x in range(w) for v in (90 + x // 12, y * 255 // h, 200 - x // 10)) for y in range(h))
chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(rows, 6)) + chunk(b"IEND", b"")
open(sys.argv[1], "wb").write(png)
PY
markdown=$(curl -fs -H 'x-dev-user: ada' -H 'Content-Type: image/png' --data-binary "@$work/picture.png" "$base/api/posts/$post/pictures?alt=A%20gradient%20from%20violet%20to%20gold" | sed 's/.*"markdown":"\([^"]*\)".*/\1/')
api -X PUT "$base/api/posts/$post" -d "{\"title\":\"Notes 5\",\"content\":\"The engine weaves **algebraic patterns**.\\n\\n$markdown\\n\\nAs the Jacquard loom weaves flowers.\"}" >/dev/null
curl -fs "$base/posts/$post" | grep -q '<img src="/pictures/' || { echo "the post measured shows no picture" >&2; exit 1; }
# The change feed copies the posts into the feed and under their tag, with the picture.
for _ in $(seq 100); do curl -fs "$base/tags/engines" | grep 'class="thumb"' >/dev/null && curl -fs "$base/" | grep 'class="thumb"' >/dev/null && break; sleep 0.1; done
curl -fs "$base/tags/engines" | grep 'class="thumb"' >/dev/null || { echo "the tag's page shows no thumbnail" >&2; exit 1; }
for page in / "/posts/$post" /tags/engines; do
  for preset in mobile desktop; do
    flags=(); [ "$preset" = desktop ] && flags=(--preset=desktop)
    case "$page" in /) label="front page" ;; /tags/*) label="a tag" ;; *) label="a post" ;; esac
    CHROME_PATH=${CHROME_PATH:-/usr/bin/chromium} "$here/node_modules/.bin/lighthouse" "$base$page" "${flags[@]}" --quiet \
      --chrome-flags="--headless --no-sandbox --disable-gpu" --only-categories=performance,accessibility,best-practices,seo \
      --output=json --output-path="$work/report.json"
    python3 -c "
import json, sys
report = json.load(open('$work/report.json'))
scores = ', '.join(f\"{name} {round(category['score'] * 100)}\" for name, category in report['categories'].items())
print(f\"{sys.argv[1]:<12} {sys.argv[2]:<8} Lighthouse {report['lighthouseVersion']}: {scores}\")" "$label" "$preset"
  done
done
