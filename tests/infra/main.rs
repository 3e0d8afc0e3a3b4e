//! Offline checks of the Azure infrastructure in `infra/`.
//!
//! No Bicep compiler can run here, so this test does the part of its work that catches most
//! deployment failures: it parses every Bicep file with the tree-sitter Bicep grammar, and checks
//! every resource against the same type definitions the compiler uses (`tests/bicep-types/`,
//! generated data from Azure/bicep-types-az, kept in the repository): the type and API version exist, every property name
//! exists, enum values are allowed, read-only properties are not set, required ones are present.
//! Then it checks that the infrastructure matches the application: the containers and partition
//! keys of `src/cosmos/mod.rs`, the scripts of `src/scripts/`, Entra-ID-only Cosmos DB, and the
//! app settings the handler and the Functions host read.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

#[path = "../common/yaml.rs"]
mod yaml;
use yaml::{yaml_block, yaml_items, yaml_mapping};

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use tree_sitter::{Node, Parser, Tree};

mod bicep_reader;
mod cosmos;
mod deployment;
mod front_door;
mod hosting_plan;
mod operations;
mod parameters;
mod pictures_storage;
mod sign_in;
mod type_definitions;

use bicep_reader::*;
use cosmos::*;
use parameters::*;
use sign_in::*;

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` whose name ends with `.{extension}`, sorted so reports are stable.
fn files_with_extension(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let entries =
        fs::read_dir(dir).unwrap_or_else(|error| panic!("cannot read {}: {error}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            found.extend(files_with_extension(&path, extension));
        } else if path.extension().is_some_and(|ext| ext == extension) {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// The path relative to the repository, for messages.
fn shown(path: &Path) -> String {
    path.strip_prefix(repo_root()).unwrap_or(path).display().to_string()
}

/// Fails with every problem found, not just the first, so one run shows all there is to fix.
fn assert_no_problems(what: &str, problems: &[String]) {
    assert!(problems.is_empty(), "{what}:\n  - {}", problems.join("\n  - "));
}

// ---------------------------------------------------------------------------------------------
// The infrastructure against the application
// ---------------------------------------------------------------------------------------------

const STORED_PROCEDURE: &str =
    "Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers/storedProcedures";
const TRIGGER: &str = "Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers/triggers";
const CONTAINER: &str = "Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers";
const ACCOUNT: &str = "Microsoft.DocumentDB/databaseAccounts";
const SITE: &str = "Microsoft.Web/sites";

/// The containers and partition key paths the application uses: `Container::partition_key_path`
/// in src/cosmos/mod.rs. A container deployed with another key cannot be changed afterwards.
const APP_CONTAINERS: [(&str, &str); 6] = [
    ("users", "/userId"),
    ("posts", "/postId"),
    ("feed", "/type"),
    ("tags", "/tag"),
    ("leases", "/id"),
    ("words", "/word"),
];

/// The containers whose lists sort by creationDate, then id (`Container::indexing_policy`).
const SORTED_CONTAINERS: [&str; 4] = ["users", "posts", "feed", "tags"];
