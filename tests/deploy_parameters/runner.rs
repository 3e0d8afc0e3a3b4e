//! The runner's side: the environment the workflow provisions with, in CI and on a person's
//! machine, and the blog settings it may set.

use super::*;

// ---------------------------------------------------------------------------------------------
// The runner
// ---------------------------------------------------------------------------------------------

/// The environment `azd provision` is started with by the workflow's provision step, given the
/// repository's variables and secrets: the step's script run by bash as GitHub runs it, with
/// `azd` a stand-in that writes down its environment.
pub(crate) fn provision_environment(
    vars: &BTreeMap<&str, &str>,
    secrets: &BTreeMap<&str, &str>,
) -> BTreeMap<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let dump = dir.path().join("azd-environment");
    let azd = bin.join("azd");
    std::fs::write(
        &azd,
        format!("#!/bin/sh\n[ \"$1\" = provision ] && env -0 > '{}'\nexit 0\n", dump.display()),
    )
    .unwrap();
    std::fs::set_permissions(&azd, std::fs::Permissions::from_mode(0o755)).unwrap();

    let (job_env, steps) = workflow_steps();
    let step = steps
        .iter()
        .find(|step| {
            step.run.as_deref().is_some_and(|run| run.contains("azd provision --no-prompt"))
        })
        .expect("the workflow has a step that runs azd provision");
    let mut command = Command::new("bash");
    command
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", step.run.as_deref().unwrap()])
        .current_dir(dir.path());
    command
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("HOME", dir.path());
    for (name, value) in job_env.iter().chain(step.env.iter()) {
        command.env(name, evaluate(value, vars, secrets));
    }
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "the provision step failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let written = std::fs::read(&dump).expect("the step ran azd provision");
    written
        .split(|byte| *byte == 0)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let entry = String::from_utf8(entry.to_vec()).unwrap();
            let (name, value) = entry.split_once('=').unwrap();
            (name.to_owned(), value.to_owned())
        })
        .collect()
}

/// The repository as `azd pipeline config` leaves it for an environment where `azd env set` said
/// `settings` (pkg/pipeline/pipeline.go, `mergeProjectVariablesAndSecrets`: an unset or empty
/// value is not copied, so the repository variable stays unset).
pub(crate) fn repository<'a>(
    settings: &BTreeMap<&'a str, &'a str>,
) -> (BTreeMap<&'a str, &'a str>, BTreeMap<&'a str, &'a str>) {
    let mut vars = BTreeMap::from([
        ("AZURE_CLIENT_ID", "ci-client-id"),
        ("AZURE_TENANT_ID", "tenant-1"),
        ("AZURE_SUBSCRIPTION_ID", "subscription-1"),
        ("AZURE_ENV_NAME", "blog-prod"),
        ("AZURE_LOCATION", "westeurope"),
    ]);
    vars.extend(
        settings.iter().filter(|(_, value)| !value.is_empty()).map(|(name, value)| (*name, *value)),
    );
    let secrets = BTreeMap::from([("BLOG_TOKEN_KEY", TOKEN_KEY)]);
    (vars, secrets)
}

pub(crate) const TOKEN_KEY: &str = "k3y-made-by-azd-on-the-first-provision-0123456789";

/// The parameters CI's `azd provision` deploys with, for a repository set up from `settings`.
pub(crate) fn ci_parameters(
    settings: &BTreeMap<&str, &str>,
    declared: &BTreeMap<String, Declared>,
) -> Result<BTreeMap<String, Value>, Vec<String>> {
    let (vars, secrets) = repository(settings);
    // A fresh runner has no `.azure/` folder: azd makes the environment from AZURE_ENV_NAME, and
    // its `.env` holds what the process's environment already says.
    let environment = AzdEnvironment {
        dotenv: BTreeMap::new(),
        process: provision_environment(&vars, &secrets),
        config: BTreeMap::new(),
    };
    azd_parameters(&environment, declared)
}

/// The parameters `azd provision` deploys with on the machine of the person whose environment
/// said `settings` (`azd env set` writes the `.env`; the generated key is in `config.json`).
pub(crate) fn local_parameters(
    settings: &BTreeMap<&str, &str>,
    declared: &BTreeMap<String, Declared>,
) -> Result<BTreeMap<String, Value>, Vec<String>> {
    let mut dotenv: BTreeMap<String, String> =
        settings.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())).collect();
    dotenv.extend(
        [
            ("AZURE_ENV_NAME", "blog-prod"),
            ("AZURE_LOCATION", "westeurope"),
            ("AZURE_SUBSCRIPTION_ID", "subscription-1"),
        ]
        .map(|(name, value)| (name.to_owned(), value.to_owned())),
    );
    let config = BTreeMap::from([("tokenSigningKey".to_owned(), json!(TOKEN_KEY))]);
    azd_parameters(&AzdEnvironment { dotenv, process: BTreeMap::new(), config }, declared)
}

/// main.parameters.json: the `BLOG_*` variable each parameter reads, by parameter.
pub(crate) fn blog_settings() -> BTreeMap<String, String> {
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("infra/main.parameters.json")).unwrap(),
    )
    .unwrap();
    file["parameters"]
        .as_object()
        .unwrap()
        .iter()
        .filter_map(|(parameter, value)| {
            let template = value["value"].as_str()?;
            let variable = template
                .strip_prefix("${")?
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .next()?;
            variable.starts_with("BLOG_").then(|| (parameter.clone(), variable.to_owned()))
        })
        .collect()
}

/// Values a person might `azd env set` for a parameter: each allowed one, else one ARM takes.
pub(crate) fn sample_values(parameter: &Declared) -> Vec<String> {
    if let Some(allowed) = &parameter.allowed {
        return allowed
            .iter()
            .map(|value| value.as_str().map_or_else(|| value.to_string(), str::to_owned))
            .collect();
    }
    match parameter.type_name.trim_end_matches('?') {
        "int" => vec![parameter.min_value.unwrap_or(1).max(1).to_string()],
        "bool" => vec!["true".to_owned(), "false".to_owned()],
        _ => vec!["a-value-someone-set".to_owned()],
    }
}
