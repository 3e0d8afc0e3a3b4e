#!/usr/bin/env bash
# Lighthouse's four scores (performance, accessibility, best practices, SEO) for the front page,
# a post, a tag's page and a search that finds the ten posts, and the first three for a writer's
# pages (a draft's preview link, their own page, the write page, a draft's edit page, all
# `noindex` or private), on a phone (Lighthouse's default, mobile emulation and throttling) and
# a desktop (`--preset=desktop`), against the handler as `cargo run` starts it, seeded through the
# API: ten posts, each with a photo of its own (the lists show each small beside its excerpt),
# the last with a comment. With each score, the page's weight as Lighthouse loaded it
# (`total-byte-weight`: below the fold, `loading="lazy"` pictures are not loaded) and, for the
# lists, the bytes of every thumbnail the page names, at 1× and 2× (what a reader who scrolls
# down loads). Not a test: it prints the figures (README and BENCHMARKS.md record them). Needs
# Chromium (tests/browser/install.sh) and npm; Lighthouse is installed into
# tests/browser/node_modules. HANDLER names another build to measure (default target/debug/handler);
# SCREENSHOT a PNG to save the front page in.
#
#     cargo build --bin handler && tests/browser/lighthouse.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/browser
handler=${HANDLER:-target/debug/handler}
[ -x "$here/node_modules/.bin/lighthouse" ] || npm install --prefix "$here" --no-save --no-audit --no-fund --no-package-lock lighthouse@12 >/dev/null
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# The pages link to the blog at its public address: the one Lighthouse reaches it at.
BLOG_AUTH=development BLOG_DATA_DIR="$work/data" BLOG_LISTEN=127.0.0.1:7079 BLOG_PUBLIC_URL=http://127.0.0.1:7079 RUST_LOG=warn "$handler" &
base=http://127.0.0.1:7079
for _ in $(seq 100); do curl -fs -o /dev/null "$base/" && break; sleep 0.1; done
api() { curl -fs -H 'x-dev-user: ada' -H 'Content-Type: application/json' "$@"; }
api -X POST "$base/api/users" -d '{"username":"Ada Lovelace"}' >/dev/null
# A photo for each post: 1600×1200 PNGs made here, gradients with grain as the benches' photos
# (benches/pictures.rs, `photo_jpeg`), so that they encode as a photo does, not as flat colour.
python3 - "$work" <<'PY'
import random, struct, sys, zlib
w, h = 1600, 1200
chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
for n in range(1, 11):
    rng = random.Random(n)
    rows = bytearray()
    for y in range(h):
        rows.append(0)
        grain = rng.randbytes(w)
        for x in range(w):
            noise = grain[x] % 20
            rows += bytes((min(255, (x * 255 // w + 25 * n) % 256 + noise), min(255, y * 255 // h + noise), min(255, (x + y + 40 * n) % 256 + noise)))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(bytes(rows), 6)) + chunk(b"IEND", b"")
    open(f"{sys.argv[1]}/picture-{n}.png", "wb").write(png)
PY
for n in $(seq 10); do
  post=$(api -X POST "$base/api/posts" -d "{\"userId\":\"ada\",\"title\":\"Notes $n\",\"tags\":[\"Engines\"],\"content\":\"Soon.\"}" | sed 's/.*"id":"\([^"]*\)".*/\1/')
  markdown=$(curl -fs -H 'x-dev-user: ada' -H 'Content-Type: image/png' --data-binary "@$work/picture-$n.png" "$base/api/posts/$post/pictures?alt=Gradient%20number%20$n" | sed 's/.*"markdown":"\([^"]*\)".*/\1/')
  api -X PUT "$base/api/posts/$post" -d "{\"title\":\"Notes $n\",\"content\":\"The engine weaves **algebraic patterns**.\\n\\n$markdown\\n\\nAs the Jacquard loom weaves flowers.\\n\\n- one\\n- two\\n\\nSee [the notes](https://example.com).\"}" >/dev/null
done
api -X POST "$base/api/posts/$post/comments" -d '{"userId":"ada","content":"A *comment*."}' >/dev/null
curl -fs "$base/posts/$post" | grep -q '<img src="/pictures/' || { echo "the post measured shows no picture" >&2; exit 1; }
# The change feed copies the posts into the feed and under their tag, with their pictures.
thumbs() { curl -fs "$base$1" | grep -o 'class="thumb"' | wc -l; }
# The search index too: a search for "loom" finds the ten posts.
for _ in $(seq 200); do [ "$(thumbs /tags/engines)" = 10 ] && [ "$(thumbs /)" = 10 ] && [ "$(thumbs '/search?q=loom')" = 10 ] && break; sleep 0.1; done
[ "$(thumbs /)" = 10 ] || { echo "the front page shows $(thumbs /) thumbnails, not 10" >&2; exit 1; }
# Every thumbnail the front page names, at each density its markup offers (`src`, then each
# `srcset` entry): their bytes, as served.
curl -fs "$base/" > "$work/front.html"
python3 - "$work/front.html" "$base" <<'PY'
import re, sys, urllib.request
html = open(sys.argv[1]).read()
imgs = re.findall(r'<img class="thumb"[^>]*>', html)
one, two = [], []
for img in imgs:
    src = re.search(r' src="([^"]+)"', img).group(1)
    srcset = re.search(r' srcset="([^"]+)"', img)
    one.append(src)
    two.append(srcset.group(1).split(", ")[1].split(" ")[0] if srcset else src)
size = lambda url: len(urllib.request.urlopen(sys.argv[2] + url).read())
a, b = [size(url) for url in one], [size(url) for url in two]
print(f"front page, {len(imgs)} thumbnails: 1x {sum(a)} bytes ({min(a)} to {max(a)} each), 2x {sum(b)} bytes ({min(b)} to {max(b)} each); its HTML {len(html.encode())} bytes uncompressed")
PY
# SCREENSHOT=file.png: the front page as headless Chromium shows it on a desktop, to look at.
if [ -n "${SCREENSHOT:-}" ]; then
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,2200 --virtual-time-budget=10000 --screenshot="$SCREENSHOT" "$base/" 2>/dev/null
fi
# A writer's pages: a draft, scheduled for tomorrow, its share link, and the writer signed in
# (the development sign-in's cookie) on their own page, the write page and the draft's edit page.
tomorrow=$(python3 -c "import datetime; print((datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)).strftime('%Y-%m-%dT09:00:00+00:00'))")
draft=$(api -X POST "$base/api/posts" -d "{\"userId\":\"ada\",\"title\":\"Notes on the loom\",\"content\":\"A draft, **scheduled**.\",\"status\":\"scheduled\",\"publishAt\":\"$tomorrow\"}" | sed 's/.*"id":"\([^"]*\)".*/\1/')
preview=$(api -X POST "$base/api/posts/$draft/preview" | sed 's/.*"path":"\([^"]*\)".*/\1/')
for page in / "/posts/$post" /tags/engines "/search?q=loom" "$preview" /users/ada /write "/posts/$draft/edit"; do
  for preset in mobile desktop; do
    flags=(); [ "$preset" = desktop ] && flags=(--preset=desktop)
    # The writer's pages are `noindex` (a draft is nobody else's): SEO is not asked of them.
    categories=performance,accessibility,best-practices,seo
    case "$page" in /) label="front page" ;; /tags/*) label="a tag" ;; /search*) label="a search" ;;
      /preview/*) label="a preview"; categories=performance,accessibility,best-practices ;;
      /users/*) label="own page"; categories=performance,accessibility,best-practices; flags+=(--extra-headers='{"Cookie":"blog_dev_user=ada"}') ;;
      /write) label="write"; categories=performance,accessibility,best-practices; flags+=(--extra-headers='{"Cookie":"blog_dev_user=ada"}') ;;
      */edit) label="a draft's edit"; categories=performance,accessibility,best-practices; flags+=(--extra-headers='{"Cookie":"blog_dev_user=ada"}') ;;
      *) label="a post" ;; esac
    CHROME_PATH=${CHROME_PATH:-/usr/bin/chromium} "$here/node_modules/.bin/lighthouse" "$base$page" "${flags[@]}" --quiet \
      --chrome-flags="--headless --no-sandbox --disable-gpu" --only-categories="$categories" \
      --output=json --output-path="$work/report.json"
    python3 -c "
import json, sys
report = json.load(open('$work/report.json'))
scores = ', '.join(f\"{name} {round(category['score'] * 100)}\" for name, category in report['categories'].items())
weight = report['audits']['total-byte-weight']['numericValue']
print(f\"{sys.argv[1]:<15} {sys.argv[2]:<8} Lighthouse {report['lighthouseVersion']}: {scores}; total-byte-weight {weight:.0f} bytes\")" "$label" "$preset"
  done
done
