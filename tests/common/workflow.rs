//! The GitHub workflow that deploys (`.github/workflows/azure-dev.yml`): its job's `env`, its
//! steps, and its `${{ … }}` expressions as the runner gives them to a step's process.
#![allow(dead_code)]

use std::collections::BTreeMap;

use super::yaml::{yaml_block, yaml_items, yaml_mapping};

/// One step of the job.
pub(crate) struct Step {
    pub name: String,
    pub env: BTreeMap<String, String>,
    pub run: Option<String>,
}

/// The job's `env` and its steps, in order.
pub(crate) fn workflow_steps() -> (BTreeMap<String, String>, Vec<Step>) {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/.github/workflows/azure-dev.yml"
    ))
    .unwrap();
    let job_env = yaml_mapping(&yaml_block(&text, &["jobs", "build", "env"]));
    let steps = yaml_items(&yaml_block(&text, &["jobs", "build", "steps"]))
        .into_iter()
        .map(|item| {
            let fields = yaml_mapping(&item);
            let run = match fields.get("run").map(String::as_str) {
                Some("|") => {
                    let lines = yaml_block(&item.join("\n"), &["run"]);
                    let indent = lines
                        .iter()
                        .map(|line| line.len() - line.trim_start().len())
                        .min()
                        .unwrap_or(0);
                    Some(lines.iter().map(|line| &line[indent..]).collect::<Vec<_>>().join("\n"))
                }
                Some(command) => Some(command.to_owned()),
                None => None,
            };
            let env = if item.iter().any(|line| line.trim() == "env:") {
                yaml_mapping(&yaml_block(&item.join("\n"), &["env"]))
            } else {
                BTreeMap::new()
            };
            Step { name: fields.get("name").cloned().unwrap_or_default(), env, run }
        })
        .collect();
    (job_env, steps)
}

/// `${{ vars.NAME }}` and `${{ secrets.NAME }}`, as GitHub gives them: an unset one is the empty
/// string, and the runner starts the step's process with it set to "" all the same
/// (actions/runner src/Runner.Sdk/ProcessInvoker.cs, ExecuteAsync: every pair of the step's
/// environment is copied to the process's, empty values included). Anything else in an
/// expression is refused, so that the workflow stays within what this reads.
pub(crate) fn evaluate(
    value: &str,
    vars: &BTreeMap<&str, &str>,
    secrets: &BTreeMap<&str, &str>,
) -> String {
    let Some(expression) = value.strip_prefix("${{").and_then(|rest| rest.strip_suffix("}}"))
    else {
        return value.to_owned();
    };
    let expression = expression.trim();
    if let Some(name) = expression.strip_prefix("vars.") {
        vars.get(name).copied().unwrap_or_default().to_owned()
    } else if let Some(name) = expression.strip_prefix("secrets.") {
        secrets.get(name).copied().unwrap_or_default().to_owned()
    } else {
        panic!("an expression this test does not read: {value}")
    }
}
