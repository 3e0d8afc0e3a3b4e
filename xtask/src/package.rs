//! `cargo xtask package [DIR]`: the deployable Functions app, in one folder (default `dist/app`):
//!
//! ```text
//! handler                    the custom handler: release build WITHOUT the embedded store (no
//!                            `embedded` feature, so no SQLite and no in-memory emulator), linked
//!                            against glibc 2.28 so it runs on the Functions Linux image
//! host.json
//! <Function>/function.json   one folder per function, at the root as the host expects
//! ```
//!
//! Then `func start --script-root dist/app`, `func azure functionapp publish <app> --script-root
//! dist/app`, or azd, which runs this in its `prepackage` hook and zips the folder (azure.yaml).
//! The folder is checked before it is called done: the executable's machine and glibc, what it
//! must not contain, and the shape the host reads.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::elf::{self, GlibcVersion};
use crate::tools::{self, TARGET};

/// The oldest glibc of the Functions host's Linux images we build for (the platform's images
/// are older than a current build machine; a binary linked here would ask for a newer glibc).
const GLIBC: GlibcVersion = GlibcVersion(2, 28, 0);

/// Byte strings whose presence means the wrong build was packaged: the SDK's in-memory emulator
/// (a module path it compiles in) and SQLite (its file header, which the library embeds).
const MUST_NOT_CONTAIN: [(&str, &str); 2] =
    [("in_memory_emulator", "the SDK's in-memory emulator"), ("SQLite format 3", "SQLite")];

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let out = match args {
        [] => PathBuf::from("dist/app"),
        [flag] if flag == "-h" || flag == "--help" => {
            println!("usage: cargo xtask package [DIR]   (default DIR: dist/app)");
            return Ok(());
        }
        [dir] if !dir.starts_with('-') => PathBuf::from(dir),
        _ => return Err(format!("usage: cargo xtask package [DIR], not {args:?}")),
    };
    let root = repo_root();
    let out = if out.is_absolute() { out } else { root.join(out) };
    let cargo = PathBuf::from(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    let tools_dir = tools::tools_dir(&root);

    tools::ensure_rust_target()?;
    let zig = tools::zig(&tools_dir)?;
    let zigbuild = tools::cargo_zigbuild(&cargo, &tools_dir)?;
    build(&root, &zigbuild, &zig)?;
    let functions = function_names(&root)?;
    assemble(&root, &out, &functions)?;
    let report = check(&root, &out, &functions)?;
    println!("package: {}", report);
    Ok(())
}

/// The repository: xtask/ is one of its folders.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask/ sits in the repository")
        .to_path_buf()
}

fn build(root: &Path, zigbuild: &[PathBuf], zig: &Path) -> Result<(), String> {
    let mut command = Command::new(&zigbuild[0]);
    command
        .args(&zigbuild[1..])
        .args(["--release", "--locked", "--no-default-features", "--bin", "handler", "--target"])
        .arg(format!("{TARGET}.{}", GLIBC))
        .current_dir(root)
        // cargo-zigbuild takes zig from this variable before it looks on PATH.
        .env("CARGO_ZIGBUILD_ZIG_PATH", zig);
    tools::run(&mut command, "the release build of the handler (cargo zigbuild)")
}

/// Builds the folder anew. A `local.settings.json` put there for `func start` (docs/local.md)
/// survives: it is never deployed (Core Tools does not upload it, and azd leaves it out of a
/// function app's package, azure-dev pkg/project/project_utils.go).
fn assemble(root: &Path, out: &Path, functions: &[String]) -> Result<(), String> {
    let settings = out.join("local.settings.json");
    let kept = fs::read(&settings).ok();
    if out.exists() {
        fs::remove_dir_all(out).map_err(io("cannot empty", out))?;
    }
    fs::create_dir_all(out).map_err(io("cannot create", out))?;
    if let Some(kept) = kept {
        fs::write(&settings, kept).map_err(io("cannot write", &settings))?;
    }
    let built = tools::target_dir(root).join(TARGET).join("release").join("handler");
    let handler = out.join("handler");
    fs::copy(&built, &handler).map_err(io("cannot copy the handler from", &built))?;
    make_executable(&handler)?;
    fs::copy(root.join("host.json"), out.join("host.json"))
        .map_err(io("cannot copy", &root.join("host.json")))?;
    for function in functions {
        let dir = out.join(function);
        fs::create_dir_all(&dir).map_err(io("cannot create", &dir))?;
        let source = root.join("functions").join(function).join("function.json");
        fs::copy(&source, dir.join("function.json")).map_err(io("cannot copy", &source))?;
    }
    Ok(())
}

/// An I/O error's message: what was being done, to which path.
fn io<'a>(what: &'a str, path: &'a Path) -> impl FnOnce(std::io::Error) -> String + 'a {
    move |error| format!("{what} {}: {error}", path.display())
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .map_err(|error| format!("cannot chmod {}: {error}", path.display()))
}

/// Windows has no executable bit to set; see docs/deploy.md for what that means for azd's zip.
#[cfg(not(unix))]
fn make_executable(_: &Path) -> Result<(), String> {
    Ok(())
}

/// The functions of the app: every folder of `functions/` holding a `function.json`.
fn function_names(root: &Path) -> Result<Vec<String>, String> {
    let dir = root.join("functions");
    let entries =
        fs::read_dir(&dir).map_err(|error| format!("cannot read {}: {error}", dir.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("function.json").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(format!("{} holds no function", dir.display()));
    }
    Ok(names)
}

/// Checks the assembled folder; the line it returns says what was made.
fn check(root: &Path, out: &Path, functions: &[String]) -> Result<String, String> {
    let handler = out.join("handler");
    let bytes = fs::read(&handler)
        .map_err(|error| format!("cannot read {}: {error}", handler.display()))?;
    let needs = elf::needs(&bytes).map_err(|error| format!("{}: {error}", handler.display()))?;
    if needs.machine != elf::X86_64 {
        return Err(format!(
            "{} is built for ELF machine {}, not x86_64 ({})",
            handler.display(),
            needs.machine,
            elf::X86_64
        ));
    }
    let newest = needs
        .newest_glibc
        .ok_or_else(|| format!("{} needs no glibc: not the gnu build", handler.display()))?;
    if newest > GLIBC {
        return Err(format!(
            "{} needs GLIBC_{newest}, newer than the {GLIBC} it is built for",
            handler.display()
        ));
    }
    for (marker, what) in MUST_NOT_CONTAIN {
        if contains(&bytes, marker.as_bytes()) {
            return Err(format!(
                "{} contains {what}: it must be built without the `embedded` feature",
                handler.display()
            ));
        }
    }
    let host = out.join("host.json");
    let host_json = fs::read_to_string(&host)
        .map_err(|error| format!("cannot read {}: {error}", host.display()))?;
    if !host_json.contains("\"defaultExecutablePath\": \"handler\"") {
        return Err(format!(
            "{} does not start `handler` (customHandler.description.defaultExecutablePath)",
            host.display()
        ));
    }
    for function in functions {
        if !out.join(function).join("function.json").is_file() {
            return Err(format!("{} lacks {function}/function.json", out.display()));
        }
    }
    Ok(format!(
        "{} ({} MB handler, needs glibc >= {newest}, {} functions)",
        out.strip_prefix(root).unwrap_or(out).display(),
        megabytes(bytes.len()),
        functions.len()
    ))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

/// A size in MB with one decimal, as the README states it.
fn megabytes(bytes: usize) -> String {
    format!("{:.1}", bytes as f64 / 1_000_000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_function_folder_of_the_repository_is_packaged() {
        let names = function_names(&repo_root()).unwrap();
        assert!(
            names.contains(&"FrontPage".to_owned())
                && names.contains(&"PostsChangeFeed".to_owned()),
            "{names:?}"
        );
    }

    #[test]
    fn markers_are_found_anywhere_in_the_file() {
        assert!(contains(b"..SQLite format 3\0..", b"SQLite format 3"));
        assert!(!contains(b"SQLite format", b"SQLite format 3"));
        assert_eq!(megabytes(14_260_000), "14.3");
    }
}
