//! No secret is ever committed: the only account keys in the repository are the Cosmos DB
//! emulator's and Azurite's public, well-known ones, and local.settings.json stays out of git.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

/// Published in Microsoft's emulator documentation; it opens nothing but a local emulator.
const EMULATOR_KEY: &str =
    "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";

/// Azurite's development account key, published in Azurite's README; it opens nothing but a
/// local Azurite.
const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// What precedes a key in a connection string (spelled in two parts, so this file has none).
const NEEDLE: &str = concat!("Account", "Key=");

#[test]
fn the_only_account_keys_in_the_repository_are_the_emulators() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let listed = Command::new("git")
        .arg("ls-files")
        .current_dir(root)
        .output()
        .expect("git lists the tracked files");
    let files = String::from_utf8(listed.stdout).unwrap();
    assert!(files.lines().any(|file| file == "Cargo.toml"), "run inside the git checkout");
    for file in files.lines() {
        let Ok(text) = std::fs::read_to_string(root.join(file)) else { continue };
        for (at, _) in text.match_indices(NEEDLE) {
            let key: String = text[at + NEEDLE.len()..]
                .chars()
                .take_while(|c| !matches!(c, ';' | '"' | '\'' | '\n'))
                .collect();
            // A `{name}` is a format string's place for one of the two (the tests build connection strings).
            let placeholder = key.starts_with('{') && key.ends_with('}');
            assert!(
                key == EMULATOR_KEY || key == AZURITE_KEY || placeholder,
                "{file} holds an account key that is not an emulator's: {key}"
            );
        }
    }
}

#[test]
fn local_settings_stay_out_of_git() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ignored = Command::new("git")
        .args(["check-ignore", "-q", "local.settings.json"])
        .current_dir(root)
        .status()
        .unwrap();
    assert!(ignored.success(), "local.settings.json must be ignored by git");
    let example: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("local.settings.json.example")).unwrap(),
    )
    .unwrap();
    assert_eq!(example["Values"]["FUNCTIONS_WORKER_RUNTIME"], "Custom");
    assert_eq!(example["Values"]["AzureWebJobsStorage"], "UseDevelopmentStorage=true");
}
