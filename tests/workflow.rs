//! The GitHub workflow that deploys (`.github/workflows/azure-dev.yml`), its shell steps run as
//! GitHub runs them (`bash --noprofile --norc -eo pipefail`, the job's `env` and the step's), in
//! order, with stand-ins for the tools they call (`rustup`, `rustc`, `azd`, `./package.sh`) that
//! record their arguments and what they were given. The repository variables and secrets are
//! those `azd pipeline config` sets (azure-dev pkg/pipeline/pipeline.go and github_provider.go:
//! the same names as the environment's). `uses:` steps (checkout, the cargo cache, setup-azd) are
//! GitHub's and are not run. actionlint checks the file's syntax: tests/workflow/lint.sh.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

#[path = "common/yaml.rs"]
mod yaml;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

#[path = "common/workflow.rs"]
mod workflow;

use workflow::{evaluate, workflow_steps};

/// What `azd pipeline config` sets for an environment deployed from a person's machine who said
/// `azd env set BLOG_ALERT_EMAIL …` and `… BLOG_API_CLIENT_IDS …`.
fn configured() -> (BTreeMap<&'static str, &'static str>, BTreeMap<&'static str, &'static str>) {
    let vars = BTreeMap::from([
        ("AZURE_CLIENT_ID", "ci-client-id"),
        ("AZURE_TENANT_ID", "tenant-1"),
        ("AZURE_SUBSCRIPTION_ID", "subscription-1"),
        ("AZURE_ENV_NAME", "blog-prod"),
        ("AZURE_LOCATION", "westeurope"),
        ("BLOG_ALERT_EMAIL", "ops@example.com"),
        ("BLOG_API_CLIENT_IDS", "other-app"),
    ]);
    let secrets =
        BTreeMap::from([("BLOG_TOKEN_KEY", "k3y-made-by-azd-on-the-first-provision-0123456789")]);
    (vars, secrets)
}

/// Runs the job's shell steps in order until one fails; returns the steps run, the failed one's
/// output, and what the stand-ins recorded.
fn dry_run(
    vars: &BTreeMap<&str, &str>,
    secrets: &BTreeMap<&str, &str>,
) -> (Vec<String>, Option<String>, String) {
    dry_run_where_provision_fails(vars, secrets, None)
}

/// As `dry_run`, with `azd provision` failing, when `provision_says` is given, after writing it
/// to its standard error.
fn dry_run_where_provision_fails(
    vars: &BTreeMap<&str, &str>,
    secrets: &BTreeMap<&str, &str>,
    provision_says: Option<&str>,
) -> (Vec<String>, Option<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let calls = dir.path().join("calls");
    let stand_in = |path: &Path| {
        let body = format!(
            "#!/bin/sh\n{{ printf '%s' \"$(basename \"$0\") $*\"; for name in BLOG_TOKEN_KEY BLOG_ALERT_EMAIL BLOG_API_CLIENT_IDS AZURE_ENV_NAME AZURE_LOCATION; do eval \"value=\\${{$name:-}}\"; [ -n \"$value\" ] && printf ' [%s=%s]' \"$name\" \"$value\"; done; echo; }} >> '{}'\n",
            calls.display()
        );
        std::fs::write(path, body).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    for tool in ["rustup", "rustc", "azd"] {
        stand_in(&bin.join(tool));
    }
    if let Some(said) = provision_says {
        let said_file = dir.path().join("provision-says");
        std::fs::write(&said_file, said).unwrap();
        let azd = bin.join("azd");
        let mut script = std::fs::read_to_string(&azd).unwrap();
        script.push_str(&format!(
            "if [ \"$1\" = provision ]; then cat '{}' >&2; exit 1; fi\n",
            said_file.display()
        ));
        std::fs::write(&azd, script).unwrap();
    }
    let workspace = dir.path().join("workspace");
    std::fs::create_dir(&workspace).unwrap();
    stand_in(&workspace.join("package.sh"));

    let (job_env, steps) = workflow_steps();
    let mut ran = Vec::new();
    for step in steps {
        let Some(script) = step.run else { continue };
        let mut command = Command::new("bash");
        command
            .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
            .current_dir(&workspace)
            .env_clear();
        command.env("PATH", format!("{}:/usr/bin:/bin", bin.display())).env("HOME", dir.path());
        for (name, value) in job_env.iter().chain(step.env.iter()) {
            command.env(name, evaluate(value, vars, secrets));
        }
        let output = command.output().unwrap();
        ran.push(step.name.clone());
        if !output.status.success() {
            let said = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            return (ran, Some(said), std::fs::read_to_string(&calls).unwrap_or_default());
        }
    }
    (ran, None, std::fs::read_to_string(&calls).unwrap_or_default())
}

/// Configured as `azd pipeline config` leaves it, every shell step runs: the build, azd's
/// federated sign-in, then `azd provision` with what the environment said (the alert address,
/// the token key, the API's other clients and the pipeline's own), then `azd deploy`, which is
/// not given the secret.
#[test]
fn a_configured_repository_provisions_with_the_environments_values() {
    let (vars, secrets) = configured();
    let (ran, failed, calls) = dry_run(&vars, &secrets);
    assert_eq!(failed, None, "steps run: {ran:?}");
    let lines: Vec<&str> = calls.lines().collect();
    let position = |prefix: &str| {
        lines
            .iter()
            .position(|line| line.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} in:\n{calls}"))
    };
    assert!(
        position("package.sh") < position("azd auth login"),
        "the build before the sign-in, whose assertion is short-lived"
    );
    let login = lines[position("azd auth login")];
    assert!(
        login.contains(
            "--client-id ci-client-id --federated-credential-provider github --tenant-id tenant-1"
        ),
        "{login}"
    );
    let provision = lines[position("azd provision")];
    assert!(
        provision.contains("[BLOG_TOKEN_KEY=k3y-made-by-azd-on-the-first-provision-0123456789]"),
        "{provision}"
    );
    assert!(provision.contains("[BLOG_ALERT_EMAIL=ops@example.com]"), "{provision}");
    assert!(provision.contains("[BLOG_API_CLIENT_IDS=other-app,ci-client-id]"), "{provision}");
    assert!(
        provision.contains("[AZURE_ENV_NAME=blog-prod] [AZURE_LOCATION=westeurope]"),
        "{provision}"
    );
    assert!(provision.contains("--no-prompt"), "{provision}");
    let deploy = lines[position("azd deploy")];
    assert!(!deploy.contains("BLOG_TOKEN_KEY"), "a secret only where it is used: {deploy}");
    assert!(position("azd provision") < position("azd deploy"));
}

/// With no other client listed, the API allows the pipeline's own (and no empty entry).
#[test]
fn without_other_clients_the_pipelines_own_is_allowed() {
    let (mut vars, secrets) = configured();
    vars.remove("BLOG_API_CLIENT_IDS");
    let (_, failed, calls) = dry_run(&vars, &secrets);
    assert_eq!(failed, None);
    let provision = calls.lines().find(|line| line.starts_with("azd provision")).unwrap();
    assert!(provision.contains("[BLOG_API_CLIENT_IDS=ci-client-id]"), "{provision}");
}

/// A repository `azd pipeline config` has not set up stops at the first step, naming what is
/// missing and what to run, before anything is built or signed in.
#[test]
fn a_repository_not_set_up_stops_at_the_first_step_naming_what_is_missing() {
    let (mut vars, secrets) = configured();
    vars.remove("AZURE_LOCATION");
    let (ran, failed, calls) = dry_run(&vars, &secrets);
    assert_eq!(ran.len(), 1, "{ran:?}");
    let said = failed.expect("the check fails");
    assert!(said.contains("::error::repository variables not set: AZURE_LOCATION"), "{said}");
    assert!(said.contains("azd pipeline config"), "{said}");
    assert_eq!(calls, "", "nothing ran");
}

/// Without the token key's secret, azd would make a new key at every push and break every
/// reader's "next page": the job stops before it, saying how to carry the key over.
#[test]
fn a_repository_without_the_token_key_stops_before_provisioning() {
    let (vars, _) = configured();
    let (ran, failed, calls) = dry_run(&vars, &BTreeMap::new());
    assert_eq!(ran.len(), 1, "{ran:?}");
    let said = failed.expect("the check fails");
    assert!(said.contains("::error::the secret BLOG_TOKEN_KEY is not set"), "{said}");
    assert!(!calls.contains("azd provision"), "{calls}");
}

/// What a deployment by a principal that does not own the sign-in registration (or its service
/// principal) gets from Microsoft Graph through ARM (msgraph-bicep-types issue 174, as reported).
const GRAPH_REFUSES: &str = r#"ERROR: deployment failed: {"code":"DeploymentFailed","details":[{"code":"","message":"{\"error\":{\"code\":\"Forbidden\",\"target\":\"/resources/registration\",\"message\":\"Insufficient privileges to complete the operation. Graph client request id: 4581fe87-f05b-4191-b1a9-eca002d8c4b1.\"}}"}]}"#;

/// CI cannot make itself an owner of what a person made: where Graph refuses it, the provision
/// step fails with a message that says what the workflow's principal lacks and what a person
/// runs, beside azd's own output.
#[test]
fn a_provision_graph_refuses_says_who_must_run_what() {
    let (vars, secrets) = configured();
    let (ran, failed, calls) = dry_run_where_provision_fails(&vars, &secrets, Some(GRAPH_REFUSES));
    assert_eq!(ran.last().map(String::as_str), Some("Provision Infrastructure"), "{ran:?}");
    let said = failed.expect("the provision step fails");
    assert!(
        said.contains("Insufficient privileges to complete the operation"),
        "azd's own output is kept: {said}"
    );
    let error = said
        .lines()
        .find(|line| line.starts_with("::error::"))
        .unwrap_or_else(|| panic!("no ::error:: line in {said}"));
    for needed in [
        "ci-client-id",
        "Application.ReadWrite.OwnedBy",
        "owns",
        "`azd provision`",
        "blog-prod",
        "docs/deploy.md",
    ] {
        assert!(error.contains(needed), "{needed:?} missing from {error}");
    }
    assert!(!calls.contains("azd deploy"), "{calls}");
}

/// Any other failure of the provision is azd's to explain: no word about owners.
#[test]
fn another_provision_failure_is_left_to_azds_own_message() {
    let (vars, secrets) = configured();
    let (_, failed, _) = dry_run_where_provision_fails(
        &vars,
        &secrets,
        Some("ERROR: the location westeurope has no capacity"),
    );
    let said = failed.expect("the provision step fails");
    assert!(said.contains("no capacity"), "{said}");
    assert!(!said.contains("::error::"), "{said}");
}
