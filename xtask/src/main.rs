//! `cargo xtask <task>`: the blog's own build tasks, in Rust so that they behave the same on
//! every machine people deploy from (Linux on x86_64 or arm64, macOS, Windows), where shell tools
//! such as `objdump` or a system Python's `pip` may be missing or refuse to run.
//!
//! - `package [DIR]`: builds the handler for the Functions host's Linux and assembles the
//!   deployable app in DIR (default `dist/app`); azd's `prepackage` hook runs it (azure.yaml).

mod elf;
mod package;
mod tools;

use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask <task>

tasks:
  package [DIR]   build the handler for Azure Functions (Linux x86_64, glibc 2.28) and assemble
                  the deployable app in DIR (default dist/app): what `azd up` deploys

Environment:
  BLOG_PACKAGE_TOOLS   where the pinned zig and cargo-zigbuild are kept (default target/package-tools)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = args.first().map(String::as_str);
    let result = match task {
        Some("package") => package::run(&args[1..]),
        Some("-h" | "--help" | "help") | None => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some(other) => Err(format!("unknown task {other:?}\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{}: {message}", task.unwrap_or("xtask"));
            ExitCode::FAILURE
        }
    }
}
