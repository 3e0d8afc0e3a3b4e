//! The parameters `azd provision` deploys `infra/main.bicep` with, from the GitHub workflow and
//! from a person's machine, checked against what ARM accepts for each parameter.
//!
//! Three parts, each modelled on its source:
//! - the runner: the workflow's provision step is run by bash with the job's `env` and the step's,
//!   an unset repository variable given as "" (tests/common/workflow.rs, `evaluate`), and `azd`
//!   a stand-in that records the environment it was started with;
//! - azd: `infra/main.parameters.json` substituted as azure-dev (commit ae35809) does it, in
//!   `cli/azd/pkg/infra/provisioning/bicep/bicep_provider.go`: `loadParameters` (each
//!   parameter's JSON through `evalParamEnvSubst`, whose mapping is `Environment.LookupEnv` of
//!   `pkg/environment/environment.go`, the `.env` then the process's environment), then
//!   `ensureParameters` with `armParameterFileValue`; the substitution itself is
//!   github.com/drone/envsubst v1.0.3 (azd's go.mod), `Template.evalFunc` and `lookupFunc`
//!   (template.go) and `toDefault` (funcs.go);
//! - ARM: each value against the parameter's declaration in main.bicep (type, `@allowed`,
//!   `@minValue`/`@maxValue`, `@minLength`/`@maxLength`), read with the Bicep grammar.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

#[path = "../common/yaml.rs"]
mod yaml;

#[path = "../common/workflow.rs"]
mod workflow;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};
use tree_sitter::{Node, Parser};

use workflow::{evaluate, workflow_steps};

mod azd;
mod bicep_parameters;
mod runner;
mod settings;

use azd::*;
use bicep_parameters::*;
use runner::*;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}
