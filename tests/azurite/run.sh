#!/usr/bin/env bash
# The tests against Blob Storage as Azurite serves it (the pictures', and a blog with pictures
# moved by export and import), in one command: installs Azurite
# when missing (tests/azurite/install.sh), then runs them (ignored by a plain `cargo test`; each
# starts an Azurite of its own on a free port).
set -euo pipefail
cd "$(dirname "$0")/../.."
tests/azurite/install.sh
export AZURITE_BLOB="$PWD/tests/azurite/node_modules/.bin/azurite-blob"
cargo test --test pictures -- --ignored "$@"
cargo test --test transfer -- --ignored "$@"
