#!/usr/bin/env bash
# Pictures in posts (issue 32), measured on this machine against the release `handler` as
# `cargo run` starts it (embedded store, pictures in its data directory):
#
# 1. the upload of a phone's photo (4032×3024 JPEG of about 4 MB, with EXIF), end to end:
#    `POST /api/posts/{postId}/pictures` until its 201 (decoded, turned upright, encoded anew,
#    the phones' 960-pixel JPEG made, both written durably), five photos;
# 2. the store operations of a post page whose post shows ten pictures, against one with none
#    (`x-cosmos-operations` of the first view, before the page's one-second cache);
# 3. a picture served, the phones' copy of the first photo (about 50 KB), the photo as stored
#    (about 5 MB) and its screens' copy (1,440 pixels wide, about 270 KB): the handler's `GET /pictures/...` against nginx serving the same stored
#    file with the same Content-Type and Cache-Control, alternately, each round; wrk, 2 threads,
#    16 connections, 10 s each. With BEFORE naming another build, that build serves the same
#    photo from a data directory of its own, in each round between the two: before and after
#    in the same minutes of a shared machine.
#
#     cargo build --release --bin handler
#     [BEFORE=/tmp/handler-before] bash benches/nginx/pictures.sh [rounds] [seconds] [WIDTHxHEIGHT]     # needs nginx, wrk, curl, jq, python3 (Debian: nginx-light wrk curl jq python3-venv)
#
# Defaults: 3 rounds of wrk runs of 10 s, photos of 4032x3024. HANDLER names another build
# (benches/smoke.sh runs the script in CI with one round of 1 s and photos of 1024x768 on the debug
# build: that it runs, not its figures). The photos must be wider than 960 pixels, the width of
# the phones' copy the handler makes.
#
# The photos are made by Pillow (from PyPI, into a virtual environment of the run): a gradient
# with noise, as much detail as a photo has, so that JPEG cannot make it small.
set -euo pipefail
rounds=${1:-3}
seconds=${2:-10}
size=${3:-4032x3024}
width=${size%x*}
height=${size#*x}
root=$(cd "$(dirname "$0")/../.." && pwd)
handler=${HANDLER:-$root/target/release/handler}
for tool in nginx wrk curl jq python3; do
  command -v "$tool" >/dev/null || { echo "pictures.sh needs $tool (Debian: apt-get install nginx-light wrk curl jq python3-venv)" >&2; exit 1; }
done
[ -x "$handler" ] || { echo "no $handler: cargo build --release --bin handler" >&2; exit 1; }
before=${BEFORE:-}
[ -z "$before" ] || [ -x "$before" ] || { echo "BEFORE=$before is not an executable handler" >&2; exit 1; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true; rm -rf "$work"' EXIT

python3 -m venv "$work/venv" && "$work/venv/bin/pip" install -q --disable-pip-version-check pillow
"$work/venv/bin/python" - "$work" "$width" "$height" <<'PY'
import random, sys
from PIL import Image
work, size = sys.argv[1], (int(sys.argv[2]), int(sys.argv[3]))
for n in range(1, 6):
    random.seed(n)
    gradient = Image.linear_gradient("L").resize(size)
    noise = Image.effect_noise(size, 16)
    photo = Image.merge("RGB", (gradient, noise, gradient.rotate(180)))
    exif = Image.Exif()
    exif[0x0112] = 1                    # Orientation
    exif[0x010F] = "A phone"            # Make
    photo.save(f"{work}/photo-{n}.jpg", quality=90 - n, exif=exif.tobytes())
PY
echo "photos: $(for n in 1 2 3 4 5; do printf '%s ' "$(wc -c < "$work/photo-$n.jpg")"; done)bytes, $width×$height"

# A handler (`$1`) on port `$2` with the data directory `$3`, answering.
start_handler() {
  BLOG_AUTH=development BLOG_DATA_DIR="$3" BLOG_LISTEN="127.0.0.1:$2" BLOG_WRITES_PER_MINUTE=off RUST_LOG=warn "$1" > "$3.log" 2>&1 &
  for _ in $(seq 100); do curl -fs -o /dev/null "http://127.0.0.1:$2/" && break; sleep 0.1; done
  curl -fs -o /dev/null "http://127.0.0.1:$2/" || { echo "$1 did not answer within 10 s:" >&2; cat "$3.log" >&2; exit 1; }
  curl -fs -H 'x-dev-user: writer' -H 'Content-Type: application/json' -X POST "http://127.0.0.1:$2/api/users" -d '{"username":"writer"}' >/dev/null
}
start_handler "$handler" 7071 "$work/data"
base=http://127.0.0.1:7071
api() { curl -fs -H 'x-dev-user: writer' -H 'Content-Type: application/json' "$@"; }
new_post() { api -X POST "${2:-$base}/api/posts" -d "{\"userId\":\"writer\",\"title\":\"$1\",\"content\":\"Text.\"}" | jq -r .id; }
upload() { curl -fs -H 'x-dev-user: writer' -H 'Content-Type: application/octet-stream' --data-binary "@$2" -o "$3" -w '%{time_total}' "${4:-$base}/api/posts/$1/pictures?alt=A%20photo"; }

post=$(new_post "Photos")
printf 'upload of a %s×%s photo, s:' "$width" "$height"
for n in 1 2 3 4 5; do printf ' %s' "$(upload "$post" "$work/photo-$n.jpg" "$work/up-$n.json")"; done
echo

# Ten pictures in one post, against none; the first view of each reads the store.
tenth=$(new_post "Ten pictures")
markdown=""
for n in $(seq 10); do
  "$work/venv/bin/python" -c "from PIL import Image; Image.new('RGB', (1200 + $n, 800), ($n * 20, 90, 160)).save('$work/small-$n.png')"
  upload "$tenth" "$work/small-$n.png" "$work/small-$n.json" >/dev/null
  markdown="$markdown\\n\\n$(jq -r .markdown "$work/small-$n.json")"
done
api -X PUT "$base/api/posts/$tenth" -d "{\"title\":\"Ten pictures\",\"content\":\"Text.$markdown\"}" >/dev/null
none=$(new_post "No pictures")
operations() { curl -fs -o "$work/page.html" -D - "$base/posts/$1" | tr -d '\r' | awk -F': ' 'tolower($1) == "x-cosmos-operations" {print $2}'; }
echo "post page, store operations of its first view: no pictures $(operations "$none"), ten pictures $(operations "$tenth") ($(grep -o '<img ' "$work/page.html" | wc -l) <img> on the page)"

# The pictures of the first photo (its phones' JPEG, which a post page loads on a phone and in
# the 44rem column of a desktop, and the whole photo), served by the handler and by nginx from
# the same files.
phone=$(jq -r .phoneUrl "$work/up-1.json")
[ "$phone" != null ] || { echo "no phones' copy: the handler makes one of photos wider than 960 pixels only" >&2; exit 1; }
whole=$(jq -r .url "$work/up-1.json")
# Its screens' copy (1,440 pixels wide, what a 2x screen's post page loads), where it is wider:
# named as the handler names it (src/model/picture.rs, screen_size), so that a build that does not
# answer `screenUrl` is asked for the same file.
screen=
if [ "$width" -gt 1440 ]; then
  screen=$(echo "$phone" | sed "s/-960x[0-9]*\.jpg\$/-1440x$(( (height * 1440 + width / 2) / width )).jpg/")
fi
for url in "$phone" "$whole" $screen; do
  mkdir -p "$work/www$(dirname "$url")"
  cp "$work/data$url" "$work/www$url"
done
# nginx's workers run as nobody: the files must be theirs to read.
chmod a+x "$work" && chmod -R a+rX "$work/www"
cat > "$work/nginx.conf" <<CONF
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  types { image/jpeg jpg; image/png png; image/gif gif; }
  server {
    listen 127.0.0.1:8081;
    location /pictures/ { root $work/www; add_header Cache-Control "public, max-age=31536000, immutable"; }
  }
}
CONF
nginx -c "$work/nginx.conf"
sleep 0.3
# The build before, if any: the same first photo, stored by it in a data directory of its own
# (the same bytes under the same name: pictures are encoded anew the same way by both).
if [ -n "$before" ]; then
  start_handler "$before" 7072 "$work/before"
  before_base=http://127.0.0.1:7072
  upload "$(new_post "Photos" "$before_base")" "$work/photo-1.jpg" "$work/before-1.json" "$before_base" >/dev/null
  before_url() { jq -r "$1" "$work/before-1.json"; }
  cmp "$work/data$phone" "$work/before$(before_url .phoneUrl)" && cmp "$work/data$whole" "$work/before$(before_url .url)"
fi
run() { wrk -t2 -c16 -d"${seconds}s" "$1" | awk '/Requests\/sec/ {print $2}'; }
for url in "$phone" "$whole" $screen; do
  # The same picture on the build before: the same name, under its own post.
  before_path() { echo "$(dirname "$(before_url .url)")/$(basename "$url")"; }
  cmp <(curl -fs "$base$url") <(curl -fs "http://127.0.0.1:8081$url")
  echo "$(basename "$url"): $(curl -fs "$base$url" | wc -c) bytes, the same from both$([ -z "$before" ] || echo " and from $before")"
  for round in $(seq "$rounds"); do
    line="  round $round: handler $(run "$base$url") req/s"
    [ -z "$before" ] || line="$line, before $(run "$before_base$(before_path)") req/s"
    echo "$line, nginx $(run "http://127.0.0.1:8081$url") req/s ($(cut -d' ' -f1-3 /proc/loadavg) load)"
  done
done
