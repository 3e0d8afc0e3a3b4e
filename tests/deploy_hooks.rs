//! azd's hooks (azure.yaml, infra/hooks/) as azd runs them: a POSIX shell with azd's environment,
//! main.bicep's outputs among it (azure-dev pkg/ext/hooks_runner.go).

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::process::Command;

use blog::{AuthMode, Backend, ChangeFeedMode, Config, PictureStorage, ScriptsMode};

const ENDPOINT: &str = "https://cosmos-blog-abc123.documents.azure.com:443/";

fn local_settings_hook(outputs: &[(&str, &str)], file: &std::path::Path) -> std::process::Output {
    Command::new("sh")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/infra/hooks/local-settings.sh"))
        .env_remove("BLOG_COSMOS_ENDPOINT")
        .env_remove("BLOG_COSMOS_DATABASE")
        .env_remove("BLOG_PICTURES_BLOB_ENDPOINT")
        .env_remove("BLOG_PICTURES_CONTAINER")
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
            let (name, value) =
                line.split_once('=').unwrap_or_else(|| panic!("not NAME=value: {line:?}"));
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
    let output = local_settings_hook(
        &[
            ("BLOG_COSMOS_ENDPOINT", ENDPOINT),
            ("BLOG_COSMOS_DATABASE", "blog"),
            ("BLOG_PICTURES_BLOB_ENDPOINT", "https://stblogabc123.blob.core.windows.net/"),
            ("BLOG_PICTURES_CONTAINER", "pictures"),
        ],
        &file,
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let settings = settings(&std::fs::read_to_string(&file).unwrap());
    let config = Config::from_lookup(|name| settings.get(name).cloned())
        .expect("the handler takes these settings");
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
    assert_eq!(
        config.pictures,
        PictureStorage::Endpoint {
            service_uri: "https://stblogabc123.blob.core.windows.net/".into(),
            client_id: None,
            container: "pictures".into(),
        },
        "the deployed pictures, with the operator's own sign-in (the deployment gave them the app's role)"
    );
    assert!(!dir.path().join("local.azure.env.partial").exists(), "the file is put in place whole");
}

/// A deployment made before the pictures' outputs existed: the settings still run the blog,
/// without pictures (the handler says so at start), rather than failing the provision.
#[test]
fn the_postprovision_hook_without_the_pictures_outputs_leaves_pictures_off() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("local.azure.env");
    let output = local_settings_hook(
        &[("BLOG_COSMOS_ENDPOINT", ENDPOINT), ("BLOG_COSMOS_DATABASE", "blog")],
        &file,
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let settings = settings(&std::fs::read_to_string(&file).unwrap());
    let config = Config::from_lookup(|name| settings.get(name).cloned())
        .expect("the handler takes these settings");
    assert_eq!(config.pictures, PictureStorage::Off);
}

/// A directory of stand-ins for `azd`, `az` and the handler, each a shell script that records
/// its arguments (and the handler, the token it was given) in `calls`.
struct StandIns {
    dir: tempfile::TempDir,
}

impl StandIns {
    fn new() -> StandIns {
        StandIns { dir: tempfile::tempdir().unwrap() }
    }

    fn script(&self, name: &str, body: &str) {
        use std::os::unix::fs::PermissionsExt;
        let path = self.dir.path().join(name);
        let calls = self.dir.path().join("calls");
        std::fs::write(
            &path,
            format!("#!/bin/sh\necho \"{name} $*\" >> '{}'\n{body}\n", calls.display()),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn calls(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("calls")).unwrap_or_default()
    }

    /// infra/hooks/smoke.sh with only these stand-ins (and the shell's own tools) on PATH, as azd
    /// runs it after `azd deploy` with the deployment's outputs.
    fn smoke_hook(&self) -> std::process::Output {
        self.script(
            "handler",
            r#"echo "handler token=$BLOG_SMOKE_TOKEN" >> "$(dirname "$0")/calls""#,
        );
        Command::new("sh")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/infra/hooks/smoke.sh"))
            .env("PATH", format!("{}:/usr/bin:/bin", self.dir.path().display()))
            .env("BLOG_SMOKE_HANDLER", self.dir.path().join("handler"))
            .env("BLOG_URL", "https://func-blog-abc123.azurewebsites.net")
            .env("BLOG_SIGN_IN", "created")
            .env("BLOG_API_IDENTIFIER_URI", "api://tenant-1/blog-abc123")
            .env("BLOG_TENANT_ID", "tenant-1")
            .env_remove("BLOG_SMOKE_TOKEN")
            .output()
            .expect("sh runs the hook")
    }
}

/// The smoke test's token is azd's, asked for when the test runs (in CI, azd asks GitHub for a
/// fresh assertion then), for the blog's scope in the blog's tenant; `az` is not needed. The
/// stand-in answers as `azd auth token` does by default, the bare token on stdout (azure-dev
/// cmd/auth_token.go, `newAuthTokenCmd`: flags `--scope`, `--tenant-id`; no output format given).
#[test]
fn the_smoke_hook_gets_its_token_from_azd_when_it_runs() {
    let stand_ins = StandIns::new();
    stand_ins.script("azd", "echo token-from-azd");
    let output = stand_ins.smoke_hook();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let calls = stand_ins.calls();
    assert!(
        calls.contains(
            "azd auth token --tenant-id tenant-1 --scope api://tenant-1/blog-abc123/.default"
        ),
        "{calls}"
    );
    assert!(calls.contains("handler smoke https://func-blog-abc123.azurewebsites.net"), "{calls}");
    assert!(calls.contains("handler token=token-from-azd"), "{calls}");
}

/// By hand, with only the Azure CLI signed in, the CLI's token does.
#[test]
fn the_smoke_hook_falls_back_to_the_azure_cli() {
    let stand_ins = StandIns::new();
    stand_ins.script("azd", "echo 'ERROR: not logged in' >&2; exit 1");
    stand_ins.script("az", "echo token-from-az");
    let output = stand_ins.smoke_hook();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let calls = stand_ins.calls();
    assert!(
        calls.contains(
            "az account get-access-token --tenant tenant-1 --resource api://tenant-1/blog-abc123 --query accessToken -o tsv"
        ),
        "{calls}"
    );
    assert!(calls.contains("handler token=token-from-az"), "{calls}");
}

/// Signed in nowhere: it says how to sign in, and runs nothing.
#[test]
fn the_smoke_hook_without_a_sign_in_says_how_to_sign_in() {
    let stand_ins = StandIns::new();
    stand_ins.script("azd", "exit 1");
    stand_ins.script("az", "echo 'Please run az login' >&2; exit 1");
    let output = stand_ins.smoke_hook();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("azd auth login --tenant-id tenant-1"), "{stderr}");
    assert!(!stand_ins.calls().contains("handler smoke"), "{}", stand_ins.calls());
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
