//! The library's public surface stays small enough to be chosen on purpose: at most
//! [`BOUND`] bare `pub` items in `src/` outside the binary. Everything else is `pub(crate)`, so
//! that the compiler's dead-code and `unreachable_pub` checks see it; an item is `pub` only
//! where the binary, the tests, the benchmarks or the fuzz targets name it (through the facade
//! in src/lib.rs), and declared `pub` once: a module re-exports inside the crate with
//! `pub(crate) use`, and src/lib.rs hands the item on from where it is defined.
//!
//! Counted as `git grep` counts it, one per line that declares a bare `pub` item:
//!
//! ```text
//! git grep -cE "^\s*pub (fn|struct|enum|trait|type|const|static|mod|use|async fn|unsafe fn) " \
//!     -- src ':!src/bin' | awk -F: '{s+=$2} END {print s}'
//! ```

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

/// The most bare `pub` items the library may declare: 300, as chosen when the surface was first
/// cut down. An item the binary or a test comes to need is paid for by one they no longer do;
/// a test that can go through the HTTP API does (the feed's cache test reads `GET /api/feed`,
/// not the use case), so the bound is not raised to fit the code.
const BOUND: usize = 300;

/// The item kinds counted, after `pub `: as the command in the module's documentation.
const KINDS: [&str; 11] = [
    "fn ",
    "struct ",
    "enum ",
    "trait ",
    "type ",
    "const ",
    "static ",
    "mod ",
    "use ",
    "async fn ",
    "unsafe fn ",
];

/// Every `.rs` file under `dir`, in a stable order.
fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).unwrap().map(|entry| entry.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
}

/// Whether `line` declares a bare `pub` item (not `pub(crate)`, not a field).
fn declares_pub_item(line: &str) -> bool {
    line.trim_start()
        .strip_prefix("pub ")
        .is_some_and(|rest| KINDS.iter().any(|kind| rest.starts_with(kind)))
}

#[test]
fn the_library_declares_at_most_300_bare_pub_items() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let binary = src.join("bin");
    let mut counted: Vec<(String, usize)> = Vec::new();
    for file in files.iter().filter(|file| !file.starts_with(&binary)) {
        let text = std::fs::read_to_string(file).unwrap();
        let count = text.lines().filter(|line| declares_pub_item(line)).count();
        if count > 0 {
            counted.push((file.strip_prefix(&src).unwrap().display().to_string(), count));
        }
    }
    let total: usize = counted.iter().map(|(_, count)| count).sum();
    counted.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
    let most: Vec<String> =
        counted.iter().take(10).map(|(file, count)| format!("{file}: {count}")).collect();
    assert!(
        total <= BOUND,
        "the library declares {total} bare `pub` items, more than {BOUND} (counted as tests/public_surface.rs's \
         documentation says). Make `pub(crate)` what nothing outside the library (src/bin, tests, benches, fuzz, \
         xtask) names, re-export inside the crate with `pub(crate) use`, and let src/lib.rs hand on an item from \
         where it is defined. The files with the most: {}",
        most.join(", ")
    );
}

#[test]
fn only_bare_pub_items_are_counted() {
    assert!(declares_pub_item("pub fn open() {}"));
    assert!(declares_pub_item("    pub async fn read(&self) {}"));
    assert!(declares_pub_item("pub use store::Store;"));
    assert!(!declares_pub_item("pub(crate) fn open() {}"));
    assert!(!declares_pub_item("    pub name: String,"));
    assert!(!declares_pub_item("// pub fn in a comment"));
}
