#!/usr/bin/env bash
# Every benchmark, once, in its smallest mode, so that none stops running unnoticed (CI runs this
# from .ci/run). It shows that each one runs as BENCHMARKS.md says, not its figures: everything
# runs on debug builds, for a few requests each, and nothing is compared with anything.
#
#     benches/smoke.sh     # needs nginx, wrk, curl, jq, python3 with venv (Debian: nginx-light wrk curl jq python3-venv)
#
# - The Cargo benches (every [[bench]] of Cargo.toml) in the test profile, which reuses the build
#   of `cargo test` instead of a release build of the whole blog: `cargo test --bench NAME --
#   --smoke`, those that start the handler on `target/debug/handler` (the one `cargo test` builds
#   beside them; the target directory is cargo's, CARGO_TARGET_DIR included).
# - benches/nginx/compare.sh and pictures.sh: one round of 1 s against the same debug handler,
#   and the floor built in debug.
# Pillow comes from PyPI into a virtual environment (pictures.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in nginx wrk curl jq python3; do
  command -v "$tool" >/dev/null || { echo "smoke.sh needs $tool (Debian: apt-get install nginx-light wrk curl jq python3-venv)" >&2; exit 1; }
done
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
all_started=$(date +%s)

# Runs "$@" with its output in a log, which is shown only if it fails.
step() {
  local name="$1" log started
  shift
  log="$logs/${name//[^A-Za-z0-9]/_}.log"
  started=$(date +%s)
  if "$@" > "$log" 2>&1; then
    echo "smoke: $name ran in $(( $(date +%s) - started )) s" >&2
  else
    cat "$log" >&2
    echo "smoke: $name failed: $*" >&2
    exit 1
  fi
}

# The benches Cargo.toml declares, so that a new one is run here too (and fails here if it has
# no --smoke).
mapfile -t benches < <(awk '/^\[\[bench\]\]/ { in_bench = 1; next } /^\[/ { in_bench = 0 } in_bench && $1 == "name" { gsub(/"/, "", $3); print $3 }' Cargo.toml)
[ ${#benches[@]} -gt 0 ] || { echo "smoke.sh: no [[bench]] found in Cargo.toml" >&2; exit 1; }
bench_args=()
for bench in "${benches[@]}"; do bench_args+=(--bench "$bench"); done
step "build of the benches and the handler (test profile)" cargo test "${bench_args[@]}" --no-run
# target/ unless CARGO_TARGET_DIR or a cargo configuration says otherwise.
target=$(cargo metadata --format-version 1 --no-deps | jq -r .target_directory)
handler=$target/debug/handler
for bench in "${benches[@]}"; do
  case "$bench" in
    # In this process only: it starts no handler.
    faults) step "cargo bench $bench" cargo test --bench "$bench" -- --smoke ;;
    *) step "cargo bench $bench" cargo test --bench "$bench" -- --smoke --handler "$handler" ;;
  esac
done

step "build of the front page's floor (debug)" \
  cargo build --locked --manifest-path benches/nginx/floor/Cargo.toml --target-dir "$target"
step "benches/nginx/compare.sh" \
  env HANDLER="$handler" FLOOR="$target/debug/front-page-floor" bash benches/nginx/compare.sh 1 info 1
# The photos wider than 960 pixels, so that the handler makes their phones' copy.
step "benches/nginx/pictures.sh" env HANDLER="$handler" bash benches/nginx/pictures.sh 1 1 1024x768

echo "smoke: every benchmark ran (${#benches[@]} Cargo benches, 2 scripts) in $(( $(date +%s) - all_started )) s" >&2
