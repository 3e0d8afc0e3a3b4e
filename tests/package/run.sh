#!/usr/bin/env bash
# The packaging (`./package.sh`, that is `cargo xtask package`) on a machine like the ones people
# deploy from, not like ours: its Python refuses `pip install` as an externally managed
# environment (PEP 668: Debian 12, Ubuntu 23.04 and later, Homebrew), and no zig is installed.
#
# 1. With Debian's own python3 (whose pip refuses, checked here first: the refusal is pip's own,
#    not a stand-in), no zig on PATH and an empty tools folder: the package is built, the zig it
#    needed fetched into the tools folder, and the package checks itself (glibc, no SQLite, no
#    emulator, the folder's shape).
# 2. A local.settings.json put in the folder for `func start` survives repackaging.
# 3. With neither Python nor zig: it fails, naming what to install.
#
# Run by .ci/run. Installs Debian's python3-pip when missing (so that pip is there to refuse).
set -euo pipefail
cd "$(dirname "$0")/../.."

fail() { echo "package test: $*" >&2; exit 1; }

system_python=/usr/bin/python3
[ -x "$system_python" ] || fail "$system_python is missing (Debian's python3): apt-get install python3"
if ! "$system_python" -m pip --version >/dev/null 2>&1; then
  echo "installing python3-pip (Debian package, so that pip is there to refuse)" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pip >/dev/null
fi
if refusal=$("$system_python" -m pip install --dry-run --no-index ziglang 2>&1); then
  fail "$system_python accepted pip install: it is not an externally managed environment"
fi
grep -q "externally-managed-environment" <<<"$refusal" || fail "pip refused for another reason: $refusal"
echo "package test: $system_python refuses pip install (externally-managed-environment)"

# A PATH with cargo and rustup, Debian's python3, cargo-zigbuild when an earlier run installed
# it (it is no system tool; building it again would only take time), and no zig.
bin=$(mktemp -d)
tools=$(mktemp -d)
out=$(mktemp -d)/app
trap 'rm -rf "$bin" "$tools" "$tools.log" "${out%/app}"' EXIT
ln -s "$system_python" "$bin/python3"
for tool in cargo rustup rustc dirname; do
  ln -s "$(command -v "$tool")" "$bin/$tool"
done
zigbuild=$(ls -d "${CARGO_TARGET_DIR:-$PWD/target}"/package-tools/cargo-zigbuild-*/bin 2>/dev/null | tail -n 1 || true)
path="$bin${zigbuild:+:$zigbuild}:/usr/bin:/bin"
if PATH="$path" command -v zig >/dev/null; then
  fail "zig is on $path: the test needs a machine without it"
fi

# 1. Builds, fetching zig without pip.
PATH="$path" BLOG_PACKAGE_TOOLS="$tools" ./package.sh "$out" | tee "$tools.log"
grep -q "^package: .*needs glibc >= 2\.[0-9]*, [0-9]* functions)" "$tools.log" || fail "no package line"
ls "$tools"/zig-*/ziglang/zig >/dev/null || fail "zig was not fetched into the tools folder"
[ -x "$out/handler" ] || fail "$out/handler is not executable"

# 2. local.settings.json survives.
echo '{"kept": true}' > "$out/local.settings.json"
PATH="$path" BLOG_PACKAGE_TOOLS="$tools" ./package.sh "$out" >/dev/null
grep -q '"kept": true' "$out/local.settings.json" || fail "package.sh lost $out/local.settings.json"

# 3. Neither Python nor zig: refused, saying what to install.
rm "$bin/python3"
empty=$(mktemp -d)
if message=$(PATH="$bin" BLOG_PACKAGE_TOOLS="$empty" ./package.sh "$out" 2>&1); then
  rm -rf "$empty"
  fail "built without zig or Python"
fi
rm -rf "$empty"
grep -q "install one of them: zig from https://ziglang.org/download" <<<"$message" || fail "the refusal does not say what to install: $message"
echo "package test: without zig or Python: $(tail -n 1 <<<"$message")"
echo "package test: ok"
