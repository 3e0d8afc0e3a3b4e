#!/usr/bin/env bash
# Assembles the deployable Functions app in one folder (default dist/app):
#   handler            the custom handler, release build WITHOUT the embedded store (no
#                      `embedded` feature), linked against glibc 2.28 so it runs on the
#                      Functions Linux image (older than a current build machine)
#   host.json
#   <Function>/function.json   one folder per function, at the root as the host expects
# Then: func start --script-root dist/app
#       func azure functionapp publish <app> --script-root dist/app
# Needs cargo-zigbuild and zig (installed here from crates.io and PyPI when missing).
set -euo pipefail
cd "$(dirname "$0")"
out="${1:-dist/app}"
glibc="2.28"
target="x86_64-unknown-linux-gnu"

if ! python3 -m ziglang version >/dev/null 2>&1 && ! command -v zig >/dev/null; then
  python3 -m pip install --quiet ziglang
fi
if ! command -v cargo-zigbuild >/dev/null; then
  cargo install --locked cargo-zigbuild
fi

cargo zigbuild --release --locked --no-default-features --bin handler --target "$target.$glibc"

# A local.settings.json put in the folder for `func start` (docs/local.md) survives repackaging;
# everything else is built anew. It is never deployed: Core Tools does not upload it, and azd
# leaves it out of a function app's package (azure-dev pkg/project/project_utils.go).
kept=""
if [ -f "$out/local.settings.json" ]; then
  kept=$(mktemp)
  cp "$out/local.settings.json" "$kept"
fi
rm -rf "$out"
mkdir -p "$out"
if [ -n "$kept" ]; then
  mv "$kept" "$out/local.settings.json"
fi
install -m 0755 "target/$target/release/handler" "$out/handler"
cp host.json "$out/"
for function in functions/*/; do
  cp -r "$function" "$out/"
done

# The binary must not need a newer glibc than the one it was built for...
newest=$(objdump -T "$out/handler" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1)
if [ "$(printf '%s\n%s\n' "$newest" "$glibc" | sort -V | tail -n 1)" != "$glibc" ]; then
  echo "package: handler needs GLIBC_$newest, newer than $glibc" >&2
  exit 1
fi
# ...and must not contain the SDK's in-memory emulator (the embedded store is for local use).
if grep -q "in_memory_emulator" "$out/handler"; then
  echo "package: handler contains the in-memory emulator; it must be built without the embedded feature" >&2
  exit 1
fi
# ...and the folder must have the shape the host reads: the executable host.json names, and
# every function folder with its function.json at the root.
[ -x "$out/handler" ] && [ -f "$out/host.json" ] || { echo "package: $out lacks handler or host.json" >&2; exit 1; }
for function in functions/*/; do
  name=$(basename "$function")
  [ -f "$out/$name/function.json" ] || { echo "package: $out/$name/function.json is missing" >&2; exit 1; }
done
echo "package: $out ($(du -h "$out/handler" | cut -f1) handler, needs glibc >= $newest, $(ls -d "$out"/*/ | wc -l) functions)"
