//! What building for the Functions host needs beyond Rust itself, found or fetched without
//! touching the machine's own installations:
//!
//! - the Rust standard library for `x86_64-unknown-linux-gnu` (`rustup target add`);
//! - zig, the C compiler and linker for a Linux with glibc 2.28 from any machine: the one on
//!   PATH, or a pinned release fetched from PyPI's `ziglang` wheel into the tools folder. It is
//!   fetched with Python's standard library, never `pip install`: a system Python refuses that
//!   outside a virtual environment (PEP 668: Debian 12, Ubuntu 23.04 and later, Homebrew), and
//!   stock Ubuntu has no pip at all;
//! - cargo-zigbuild, which drives cargo with zig: the one on PATH, or a pinned version installed
//!   with `cargo install --root` into the tools folder.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub(crate) const TARGET: &str = "x86_64-unknown-linux-gnu";

/// The zig release fetched when none is on PATH, and the cargo-zigbuild it is used with. Both
/// are the versions the project's CI builds with.
const ZIG_VERSION: &str = "0.17.1";
const CARGO_ZIGBUILD_VERSION: &str = "0.24.1";

/// One platform's `ziglang` wheel: its address on PyPI's file host and its SHA-256, both as
/// PyPI's simple index (https://pypi.org/simple/ziglang/) lists them for ZIG_VERSION.
struct Wheel {
    os: &'static str,
    arch: &'static str,
    url: &'static str,
    sha256: &'static str,
}

const WHEELS: [Wheel; 6] = [
    Wheel {
        os: "linux",
        arch: "x86_64",
        url: "https://files.pythonhosted.org/packages/59/e3/2a34676370a11c36b7cd04ffb2439c1089c0530cf4b01408c77cf7f8d9c3/ziglang-0.17.1-py3-none-manylinux_2_12_x86_64.manylinux2010_x86_64.musllinux_1_1_x86_64.whl",
        sha256: "ea6cc5d87b033cf0aedfbc8f9549a908cae6c50ac31f1698188fa48a74524b54",
    },
    Wheel {
        os: "linux",
        arch: "aarch64",
        url: "https://files.pythonhosted.org/packages/91/72/bb7c4f098ba3e535fa2ebefd9f26327ba63fb0672562959255cb5dd37aff/ziglang-0.17.1-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64.whl",
        sha256: "b7c5f02fccd40f89b999ee16a1f5ddced56e6182370f8affe494bcf8a28cf07e",
    },
    Wheel {
        os: "macos",
        arch: "aarch64",
        url: "https://files.pythonhosted.org/packages/ea/e1/4a9a97324fcf2d292c14a2e0121ea0df86c01d0c307ea24fa35aebaccd15/ziglang-0.17.1-py3-none-macosx_13_0_arm64.whl",
        sha256: "09953b6af7f64168b915180a42774f520f92d86ef6331b28e33915c7e1f0bb23",
    },
    Wheel {
        os: "macos",
        arch: "x86_64",
        url: "https://files.pythonhosted.org/packages/17/f6/f4dfc8cf0e510980fda251a8edf99823b9446f5d7a2a6a24801e55e09c28/ziglang-0.17.1-py3-none-macosx_13_0_x86_64.whl",
        sha256: "4e0b4b9c02b8d0d220e9948010f860b62ff11d96abb39762eca5fa2ef3f7bc97",
    },
    Wheel {
        os: "windows",
        arch: "x86_64",
        url: "https://files.pythonhosted.org/packages/c8/6c/2013114fa780f0cf490cdc98bdd5bf7dce706a5dbd86e50ec4132cf7d4b1/ziglang-0.17.1-py3-none-win_amd64.whl",
        sha256: "69c3dfc3aff6a297ec4017aa904782c0e450eb988982d7f675d83edce27526fb",
    },
    Wheel {
        os: "windows",
        arch: "aarch64",
        url: "https://files.pythonhosted.org/packages/70/34/a1d775ceaf325b08c3aca909865e057919d0fe1355e2b59081500ef230a1/ziglang-0.17.1-py3-none-win_arm64.whl",
        sha256: "27a8da5f8eaa0e76ebbc7c2594130ed4646c1101ada2ce0aa86fe580c74154b9",
    },
];

/// Fetches a wheel, checks its SHA-256, and unpacks its `ziglang/` folder into a new folder
/// that is renamed into place only when whole (an interrupted fetch leaves nothing that looks
/// usable). Python's standard library only: urllib honours HTTPS_PROXY, zipfile unpacks.
const FETCH_WHEEL: &str = r#"
import hashlib, io, os, shutil, sys, urllib.request, zipfile
url, sha256, dest = sys.argv[1:4]
with urllib.request.urlopen(url, timeout=600) as answer:
    data = answer.read()
got = hashlib.sha256(data).hexdigest()
if got != sha256:
    sys.exit(f"{url}: SHA-256 {got}, expected {sha256}")
partial = dest + ".partial"
shutil.rmtree(partial, ignore_errors=True)
with zipfile.ZipFile(io.BytesIO(data)) as wheel:
    for entry in wheel.infolist():
        if entry.filename.startswith("ziglang/"):
            path = wheel.extract(entry, partial)
            mode = (entry.external_attr >> 16) & 0o777
            if mode:
                os.chmod(path, mode)
for name in ("zig", "zig.exe"):
    path = os.path.join(partial, "ziglang", name)
    if os.path.exists(path):
        os.chmod(path, 0o755)
shutil.rmtree(dest, ignore_errors=True)
os.rename(partial, dest)
"#;

/// Cargo's target folder: CARGO_TARGET_DIR, or `target` in the repository.
pub(crate) fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"))
}

/// The tools folder: BLOG_PACKAGE_TOOLS, or `package-tools` in cargo's target folder.
pub(crate) fn tools_dir(root: &Path) -> PathBuf {
    std::env::var_os("BLOG_PACKAGE_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir(root).join("package-tools"))
}

/// Whether a command runs and exits 0 (its output is not shown).
fn runs(command: &mut Command) -> bool {
    command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Runs a command that must succeed, saying what it was for when it does not.
pub(crate) fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|error| format!("{what}: cannot run {:?}: {error}", command.get_program()))?;
    if status.success() { Ok(()) } else { Err(format!("{what} failed ({status})")) }
}

/// Adds the target's standard library when rustup manages this toolchain and lacks it.
pub(crate) fn ensure_rust_target() -> Result<(), String> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .stderr(Stdio::inherit())
        .output();
    match installed {
        Ok(output) if output.status.success() => {
            if String::from_utf8_lossy(&output.stdout).lines().any(|line| line.trim() == TARGET) {
                return Ok(());
            }
            eprintln!(
                "package: adding the Rust standard library for {TARGET} (rustup target add {TARGET})"
            );
            run(
                Command::new("rustup").args(["target", "add", TARGET]),
                &format!("rustup target add {TARGET}"),
            )
        }
        // No rustup: a toolchain from a package manager ships its host's library only.
        _ => {
            let sysroot = Command::new("rustc")
                .args(["--print", "sysroot"])
                .output()
                .map_err(|error| format!("cannot run rustc: {error}"))?;
            let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
            if sysroot.join("lib/rustlib").join(TARGET).is_dir() {
                Ok(())
            } else {
                Err(format!(
                    "this Rust has no standard library for {TARGET}, and no rustup to add it: install Rust with rustup \
                     (https://rustup.rs), then `rustup target add {TARGET}`"
                ))
            }
        }
    }
}

/// The zig to build with: `zig` on PATH, else the pinned one in the tools folder, fetched when
/// missing.
pub(crate) fn zig(tools: &Path) -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("CARGO_ZIGBUILD_ZIG_PATH") {
        return Ok(PathBuf::from(path));
    }
    if runs(Command::new("zig").arg("version")) {
        return Ok(PathBuf::from("zig"));
    }
    let dir = tools.join(format!("zig-{ZIG_VERSION}"));
    let zig = dir.join("ziglang").join(if cfg!(windows) { "zig.exe" } else { "zig" });
    if runs(Command::new(&zig).arg("version")) {
        return Ok(zig);
    }
    let wheel = WHEELS.iter().find(|wheel| wheel.os == std::env::consts::OS && wheel.arch == std::env::consts::ARCH).ok_or_else(
        || {
            format!(
                "no zig release is pinned for {} {}: install zig {ZIG_VERSION} (https://ziglang.org/download) and put it on PATH",
                std::env::consts::OS,
                std::env::consts::ARCH
            )
        },
    )?;
    let python = python().ok_or_else(|| {
        format!(
            "zig is needed to build for the Functions host's Linux, and neither zig nor Python 3 (to fetch zig {ZIG_VERSION} from \
             PyPI) is on PATH: install one of them: zig from https://ziglang.org/download (`brew install zig`, \
             `snap install zig --classic --beta`), or python3"
        )
    })?;
    eprintln!(
        "package: fetching zig {ZIG_VERSION} (PyPI's ziglang wheel, {}) into {}",
        wheel.sha256,
        dir.display()
    );
    std::fs::create_dir_all(tools)
        .map_err(|error| format!("cannot create {}: {error}", tools.display()))?;
    let mut fetch = Command::new(python[0]);
    fetch.args(&python[1..]).args(["-c", FETCH_WHEEL, wheel.url, wheel.sha256]).arg(&dir);
    run(&mut fetch, &format!("fetching zig {ZIG_VERSION} from {}", wheel.url))?;
    if !runs(Command::new(&zig).arg("version")) {
        return Err(format!("the zig fetched into {} does not run", dir.display()));
    }
    Ok(zig)
}

/// A Python 3 that runs, as the command words that start it.
fn python() -> Option<Vec<&'static str>> {
    let candidates: [&[&'static str]; 3] = [&["python3"], &["python"], &["py", "-3"]];
    candidates
        .into_iter()
        .find(|words| {
            runs(
                Command::new(words[0])
                    .args(&words[1..])
                    .args(["-c", "import sys; sys.exit(sys.version_info < (3, 8))"]),
            )
        })
        .map(<[&str]>::to_vec)
}

/// The cargo-zigbuild to build with: the one on PATH, else the pinned one in the tools folder,
/// installed there when missing. The command words that start it.
pub(crate) fn cargo_zigbuild(cargo: &Path, tools: &Path) -> Result<Vec<PathBuf>, String> {
    if runs(Command::new("cargo-zigbuild").arg("--version")) {
        return Ok(vec!["cargo-zigbuild".into(), "zigbuild".into()]);
    }
    let root = tools.join(format!("cargo-zigbuild-{CARGO_ZIGBUILD_VERSION}"));
    let binary =
        root.join("bin").join(if cfg!(windows) { "cargo-zigbuild.exe" } else { "cargo-zigbuild" });
    if !binary.is_file() {
        eprintln!(
            "package: installing cargo-zigbuild {CARGO_ZIGBUILD_VERSION} into {}",
            root.display()
        );
        let mut install = Command::new(cargo);
        install
            .args([
                "install",
                "--locked",
                "--quiet",
                "cargo-zigbuild",
                "--version",
                &format!("={CARGO_ZIGBUILD_VERSION}"),
                "--root",
            ])
            .arg(&root);
        run(&mut install, "cargo install cargo-zigbuild")?;
    }
    // cargo-zigbuild is a cargo subcommand: its first argument is the subcommand's name.
    Ok(vec![binary, "zigbuild".into()])
}
