#!/bin/sh
# Assembles the deployable Functions app in one folder (default dist/app): the handler built for
# the Functions host's Linux (x86_64, glibc 2.28, without the embedded store), host.json, and one
# folder per function. The work is `cargo xtask package` (xtask/src/package.rs), in Rust so that it
# runs alike on Linux, macOS and Windows; this is the same, for those who look for a script.
# Then: func start --script-root dist/app
#       func azure functionapp publish <app> --script-root dist/app --custom
cd "$(dirname "$0")"
exec cargo xtask package "$@"
