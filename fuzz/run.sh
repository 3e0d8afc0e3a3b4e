#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets, one `blog::fuzzing` function each) for SECONDS
# under its memory limit, from the seeds in fuzz/corpus/<target> and what earlier runs found
# (fuzz/work/<target>, not committed). An input that crashes, exceeds the memory limit or times
# out is copied into tests/fuzz_regressions/<target>/, which a plain `cargo test` runs on
# stable (tests/fuzz_regressions.rs), and the script fails once every target has run.
#   fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]     (default 30 s, every target)
# With nightly: cargo-fuzz (installed if missing), libFuzzer and AddressSanitizer. Without:
# the same targets and limits in a stable mutation loop (tests/fuzz_regressions.rs), without
# coverage guidance: a fallback, not a replacement.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(picture multipart markdown import_line change_log search)

# MB, for both -rss_limit_mb and -malloc_limit_mb. The same limits are in tests/fuzz_regressions.rs.
# picture: 1024. The target prepares an upload as the handler does, only where its plan fits
# the pictures' default memory (BLOG_PICTURE_MEMORY_MB, 256 MiB), then its output again; with
# libFuzzer's own (about 90 MB) and the sanitizer's quarantine (below), a few hundred MB. A
# hostile file that decodes past its plan (a GIF's 300 canvases of 144 MB, a colour profile
# inflated to 1 GiB) goes far past 1024 at once.
# The others: 512, a quarter of libFuzzer's default: parsing a few KB of text or form takes a
# few MB, and the rest is libFuzzer's and the sanitizer's.
memory_mb() {
  case "$1" in
    picture) echo 1024 ;;
    *) echo 512 ;;
  esac
}

regressions=tests/fuzz_regressions
failed=()
# AddressSanitizer keeps freed memory from reuse, to catch a use after free, up to 256 MB by
# default: that much resident memory would be counted against the limits above, most of the
# 512. 64 MB still spans many runs of these targets. (Options already set come after, and win.)
export ASAN_OPTIONS="quarantine_size_mb=64${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

# Keeps `artifact` as a regression case of `target`, unless a seed or a case already holds
# the same bytes (a seed that fails at once comes back as an artifact on every run).
keep() {
  local target="$1" artifact="$2" known
  for known in fuzz/corpus/"$target"/* "$regressions/$target"/*; do
    if [ -f "$known" ] && cmp -s "$known" "$artifact"; then
      echo "fuzz: $target: $(basename "$artifact") is $known" >&2
      return
    fi
  done
  mkdir -p "$regressions/$target"
  cp "$artifact" "$regressions/$target/"
  echo "fuzz: $target: kept $regressions/$target/$(basename "$artifact")" >&2
}

if cargo +nightly --version >/dev/null 2>&1; then
  command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
  started=$(date +%s)
  cargo +nightly fuzz build
  echo "fuzz: targets built in $(( $(date +%s) - started )) s" >&2
  for target in "${targets[@]}"; do
    mb=$(memory_mb "$target")
    mkdir -p "fuzz/work/$target" "fuzz/artifacts/$target"
    stamp=$(mktemp)
    # fuzz/work first: libFuzzer writes what it finds into the first folder, and leaves the
    # seeds as they are. -timeout: a picture may take seconds under the sanitizer, not 30.
    corpora=("fuzz/work/$target" "fuzz/corpus/$target")
    [ -d "$regressions/$target" ] && corpora+=("$regressions/$target")
    if ! cargo +nightly fuzz run "$target" "${corpora[@]}" -- \
      -max_total_time="$seconds" -rss_limit_mb="$mb" -malloc_limit_mb="$mb" -timeout=30 \
      -print_final_stats=1 2>"fuzz/artifacts/$target/last-run.log"; then
      failed+=("$target")
    fi
    # libFuzzer's log without its progress lines (all of it in last-run.log).
    grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|==[0-9]+==|stat::|SUMMARY|thread|MS:|artifact_prefix|Test unit|INFO: (Seed|A corpus))' \
      "fuzz/artifacts/$target/last-run.log" | sed "s/^/fuzz: $target: /" >&2 || true
    for artifact in $(find "fuzz/artifacts/$target" -maxdepth 1 -type f -newer "$stamp" ! -name last-run.log); do
      case "$(basename "$artifact")" in
        crash-* | oom-* | leak-* | timeout-*) keep "$target" "$artifact" ;;
        # Over 10 s (libFuzzer's -report_slow_units) but within the timeout: said, not kept.
        *) echo "fuzz: $target: slow, not a failure: $artifact" >&2 ;;
      esac
    done
    rm -f "$stamp"
  done
else
  echo "fuzz: no nightly toolchain: the stable mutation loop instead (no coverage guidance)" >&2
  BLOG_FUZZ_SECONDS="$seconds" cargo test --test fuzz_regressions -- --ignored --exact stable_mutation_loop --nocapture ||
    failed+=("stable loop")
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]} (cases in $regressions; run them with: cargo test --test fuzz_regressions)" >&2
  exit 1
fi
