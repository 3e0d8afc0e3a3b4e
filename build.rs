//! The git commit `handler --version` names, as `BLOG_GIT_COMMIT`: `git rev-parse --short HEAD`
//! where the source is a git checkout and git runs (a clone, CI), else `unknown` (a source
//! tarball, a machine without git).
//!
//! Run again when HEAD moves: when `.git/HEAD` changes (a checkout of another branch or commit)
//! and when the ref it names changes (a commit on the branch; `packed-refs` for a ref packed by
//! `git gc`). Nothing else reruns it: without git it watches only this file.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    println!("cargo:rerun-if-changed=build.rs");
    let commit = git(&manifest_dir, &["rev-parse", "--short", "HEAD"])
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=BLOG_GIT_COMMIT={commit}");
    // The files that say where HEAD is, found by git itself (so a worktree's `.git` file works).
    // Only files that exist are named: cargo reruns a build script on every build while a file
    // it watches is missing.
    let mut watched = vec![git(&manifest_dir, &["rev-parse", "--git-path", "HEAD"])];
    if let Some(reference) = git(&manifest_dir, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&manifest_dir, &["rev-parse", "--git-path", &reference]));
        watched.push(git(&manifest_dir, &["rev-parse", "--git-path", "packed-refs"]));
    }
    for path in watched.into_iter().flatten() {
        let path = manifest_dir.join(path);
        if path.is_file() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}

/// What git prints for `args` in `dir`, trimmed; `None` when git is missing, fails (not a
/// checkout) or prints nothing.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).current_dir(dir).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (output.status.success() && !text.is_empty()).then_some(text)
}
