#!/usr/bin/env bash
# The browser tests, in one command: installs Debian's chromium and chromium-driver when missing
# (tests/browser/install.sh), then runs them (they are ignored by a plain `cargo test`).
# BLOG_SCREENSHOTS=docs/screenshots tests/browser/run.sh also saves docs/pages.md's screenshots.
set -euo pipefail
cd "$(dirname "$0")/../.."
tests/browser/install.sh
cargo test --test browser -- --ignored "$@"
