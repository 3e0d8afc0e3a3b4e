//! azd's hooks (azure.yaml, infra/hooks/) as azd runs them: a POSIX shell with azd's environment,
//! main.bicep's outputs among it (azure-dev pkg/ext/hooks_runner.go).

use std::collections::HashMap;
use std::process::Command;

use blog::config::{AuthMode, Backend, ChangeFeedMode, Config, ScriptsMode};

const ENDPOINT: &str = "https://cosmos-blog-abc123.documents.azure.com:443/";

fn local_settings_hook(outputs: &[(&str, &str)], file: &std::path::Path) -> std::process::Output {
    Command::new("sh")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/infra/hooks/local-settings.sh"))
        .env_remove("BLOG_COSMOS_ENDPOINT")
        .env_remove("BLOG_COSMOS_DATABASE")
        .envs(outputs.iter().copied())
        .env("BLOG_LOCAL_SETTINGS_FILE", file)
        .output()
        .expect("sh runs the hook")
}

/// The KEY=value lines of the file, as `set -a && . ./local.azure.env` exports them (the hook
/// writes no quotes, so none is read).
fn settings(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let (name, value) = line.split_once('=').unwrap_or_else(|| panic!("not NAME=value: {line:?}"));
            (name.to_owned(), value.to_owned())
        })
        .collect()
}

/// After `azd provision`, the postprovision hook writes what `cargo run` needs to serve the blog
/// against the deployed account with the operator's `az login`: read as the handler reads its
/// environment, that is the account by Entra ID, the deployment's database, the stored
/// procedures run by the account, the copies left to the deployed app's triggers, and the
/// development sign-in.
#[test]
fn the_postprovision_hook_writes_settings_that_run_the_handler_against_the_deployed_account() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("local.azure.env");
    let output = local_settings_hook(&[("BLOG_COSMOS_ENDPOINT", ENDPOINT), ("BLOG_COSMOS_DATABASE", "blog")], &file);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let settings = settings(&std::fs::read_to_string(&file).unwrap());
    let config = Config::from_lookup(|name| settings.get(name).cloned()).expect("the handler takes these settings");
    match &config.backend {
        Backend::Endpoint { endpoint, client_id } => {
            assert_eq!(endpoint, ENDPOINT);
            assert_eq!(client_id, &None, "the operator's own sign-in, not a managed identity");
        }
        other => panic!("not the deployed account: {other:?}"),
    }
    assert_eq!(config.database, "blog");
    assert_eq!(config.scripts, ScriptsMode::Server);
    assert_eq!(config.change_feed, ChangeFeedMode::Host, "the deployed triggers make the copies");
    assert!(!config.create_containers, "Bicep made them; the data role cannot");
    assert_eq!(config.auth, AuthMode::Development);
    assert!(!dir.path().join("local.azure.env.partial").exists(), "the file is put in place whole");
}

/// Run by hand before a provision, it names what is missing and writes nothing.
#[test]
fn the_postprovision_hook_without_the_outputs_says_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("local.azure.env");
    let output = local_settings_hook(&[("BLOG_COSMOS_DATABASE", "blog")], &file);
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("BLOG_COSMOS_ENDPOINT"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!file.exists());
}
