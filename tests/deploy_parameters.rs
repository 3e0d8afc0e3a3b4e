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

#[path = "common/yaml.rs"]
mod yaml;

#[path = "common/workflow.rs"]
mod workflow;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};
use tree_sitter::{Node, Parser};

use workflow::{evaluate, workflow_steps};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------------------------
// main.bicep's parameters
// ---------------------------------------------------------------------------------------------

/// A `param` of main.bicep: what ARM checks a given value against, and the default it uses
/// when none is given.
#[derive(Debug)]
struct Declared {
    /// `string`, `int`, `bool`, `object` or `array`; `?` at the end when nullable.
    type_name: String,
    /// The default when it is a literal; `Some(None)` when it is an expression (`deployer()…`).
    default: Option<Option<Value>>,
    allowed: Option<Vec<Value>>,
    min_value: Option<i64>,
    max_value: Option<i64>,
    min_length: Option<i64>,
    max_length: Option<i64>,
    /// `@metadata({azd: {type: 'generate'}})`: azd makes a value once and keeps it in config.
    generated: bool,
}

fn named_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// A literal: strings, numbers (a leading `-` included), booleans and arrays of them.
fn literal(source: &str, node: Node) -> Option<Value> {
    let text = &source[node.byte_range()];
    match node.kind() {
        "string" => {
            let mut value = String::new();
            for part in named_children(node) {
                match part.kind() {
                    "string_content" => value.push_str(&source[part.byte_range()]),
                    "escape_sequence" => match &source[part.byte_range()] {
                        "\\'" => value.push('\''),
                        "\\\\" => value.push('\\'),
                        "\\$" => value.push('$'),
                        "\\n" => value.push('\n'),
                        other => panic!("an escape this test does not read: {other}"),
                    },
                    _ => return None, // an interpolation
                }
            }
            Some(Value::String(value))
        }
        "number" | "unary_expression" => text.parse::<i64>().ok().map(Value::from),
        "boolean" => Some(Value::Bool(text == "true")),
        "array" => named_children(node)
            .into_iter()
            .map(|item| literal(source, item))
            .collect::<Option<Vec<_>>>()
            .map(Value::Array),
        _ => None,
    }
}

/// main.bicep's parameters by name.
fn declared_parameters() -> BTreeMap<String, Declared> {
    let path = repo_root().join("infra/main.bicep");
    let source = std::fs::read_to_string(&path).unwrap();
    let mut parser = Parser::new();
    parser.set_language(&tree_sitter_bicep::LANGUAGE.into()).unwrap();
    let tree = parser.parse(&source, None).unwrap();
    let text = |node: Node| source[node.byte_range()].to_owned();
    let mut parameters = BTreeMap::new();
    for declaration in named_children(tree.root_node())
        .into_iter()
        .filter(|node| node.kind() == "parameter_declaration")
    {
        let children = named_children(declaration);
        let name = text(*children.iter().find(|child| child.kind() == "identifier").unwrap());
        let type_name = text(*children.iter().find(|child| child.kind() == "type").unwrap());
        let mut cursor = declaration.walk();
        let has_default =
            declaration.children(&mut cursor).any(|child| !child.is_named() && child.kind() == "=");
        let default = has_default.then(|| literal(&source, *children.last().unwrap()));
        let mut declared = Declared {
            type_name,
            default,
            allowed: None,
            min_value: None,
            max_value: None,
            min_length: None,
            max_length: None,
            generated: false,
        };
        let decorators = declaration
            .prev_named_sibling()
            .filter(|sibling| sibling.kind() == "decorators")
            .into_iter()
            .chain(children.iter().copied().filter(|child| child.kind() == "decorators"))
            .flat_map(named_children);
        for decorator in decorators {
            let call = named_children(decorator)[0];
            let parts = named_children(call);
            let function = text(parts[0]);
            let arguments = named_children(*parts.last().unwrap());
            let number = || literal(&source, arguments[0]).and_then(|value| value.as_i64());
            match function.trim_start_matches("sys.") {
                "allowed" => {
                    declared.allowed =
                        literal(&source, arguments[0]).and_then(|list| list.as_array().cloned())
                }
                "minValue" => declared.min_value = number(),
                "maxValue" => declared.max_value = number(),
                "minLength" => declared.min_length = number(),
                "maxLength" => declared.max_length = number(),
                "metadata" => declared.generated = text(arguments[0]).contains("type: 'generate'"),
                _ => {}
            }
        }
        parameters.insert(name, declared);
    }
    assert!(parameters.len() > 10, "main.bicep's parameters are read: {parameters:?}");
    parameters
}

/// What ARM says of `value` for `parameter`: `None` when it takes it.
fn arm_refuses(name: &str, parameter: &Declared, value: &Value) -> Option<String> {
    let type_name = parameter.type_name.trim_end_matches('?');
    let typed = match type_name {
        "string" => value.is_string(),
        "int" => value.is_i64(),
        "bool" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        other => panic!("{name}: a type this test does not read: {other}"),
    };
    if !typed {
        return Some(format!("{name}: {value} is not of type {type_name}"));
    }
    if let Some(allowed) = &parameter.allowed
        && !allowed.contains(value)
    {
        return Some(format!("{name}: {value} is not one of the allowed values {allowed:?}"));
    }
    if let Some(number) = value.as_i64()
        && (parameter.min_value.is_some_and(|min| number < min)
            || parameter.max_value.is_some_and(|max| number > max))
    {
        return Some(format!(
            "{name}: {number} is outside [{:?}, {:?}]",
            parameter.min_value, parameter.max_value
        ));
    }
    if let Some(text) = value.as_str() {
        let length = i64::try_from(text.chars().count()).unwrap();
        if parameter.min_length.is_some_and(|min| length < min)
            || parameter.max_length.is_some_and(|max| length > max)
        {
            return Some(format!(
                "{name}: {text:?} has a length outside [{:?}, {:?}]",
                parameter.min_length, parameter.max_length
            ));
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// azd
// ---------------------------------------------------------------------------------------------

/// github.com/drone/envsubst v1.0.3, `Eval`, for what a parameters file may hold: `${NAME}`, and
/// `${NAME=word}`, `${NAME:=word}`, `${NAME-word}`, `${NAME:-word}`. Its parser turns each of
/// these into a function node (parse/parse.go, `parseDefaultFunc`), `Template.evalFunc`
/// (template.go) calls the mapping for NAME whatever follows, and `lookupFunc` gives `toDefault`
/// for all four operators, which returns the word when the mapped value "is empty" (funcs.go:
/// `len(s) == 0`): the mapping returns only a string, so an empty variable and an unset one
/// are the same to it, and `=` covers both, as `:=` and `:-` do. Anything else in a `${…}` (or
/// a bare `$NAME`) is refused here rather than guessed at.
fn envsubst(template: &str, mapping: &mut dyn FnMut(&str) -> String) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let inner_end = after.find('}').filter(|_| after.starts_with('{'));
        let Some(end) = inner_end else {
            panic!("a `$` this model does not read, in {template:?}")
        };
        let inner = &after[1..end];
        let name_end =
            inner.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(inner.len());
        let (name, operator_and_word) = inner.split_at(name_end);
        assert!(!name.is_empty(), "an empty name in {template:?}");
        let value = mapping(name);
        let word = ["=", ":=", "-", ":-"]
            .iter()
            .find_map(|operator| operator_and_word.strip_prefix(operator));
        match (operator_and_word, word) {
            ("", _) => out.push_str(&value),
            (_, Some(word)) => {
                assert!(
                    !word.contains(['$', '{']),
                    "a nested expression this model does not read: {template:?}"
                );
                out.push_str(if value.is_empty() { word } else { &value });
            }
            (other, None) => {
                panic!("an operator this model does not read: {other:?} in {template:?}")
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Where azd finds a name: `Environment.LookupEnv` (pkg/environment/environment.go), the
/// environment's `.env` first, then the process's environment; and the environment's
/// `config.json` (`infra.parameters.<name>`, where generated values are kept).
struct AzdEnvironment {
    dotenv: BTreeMap<String, String>,
    process: BTreeMap<String, String>,
    config: BTreeMap<String, Value>,
}

impl AzdEnvironment {
    fn lookup(&self, name: &str) -> Option<&String> {
        self.dotenv.get(name).or_else(|| self.process.get(name))
    }
}

/// azd's `Go strconv.ParseBool`.
fn go_parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// The parameters azd sends ARM for main.bicep, or the parameters it would stop at in
/// `--no-prompt` mode (bicep_provider.go: `loadParameters`, then `ensureParameters`).
fn azd_parameters(
    environment: &AzdEnvironment,
    declared: &BTreeMap<String, Declared>,
) -> Result<BTreeMap<String, Value>, Vec<String>> {
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("infra/main.parameters.json")).unwrap(),
    )
    .unwrap();
    // loadParameters: each parameter's own JSON (`{"value": …}`) through evalParamEnvSubst
    // (path B: no parameter here is an object or an array given as a string).
    let mut resolved = BTreeMap::new();
    for (name, parameter) in file["parameters"].as_object().unwrap() {
        let type_name = declared
            .get(name)
            .map(|declared| declared.type_name.trim_end_matches('?'))
            .unwrap_or_default();
        assert!(
            !["object", "array"].contains(&type_name),
            "{name}: path A of loadParameters is not modelled"
        );
        let mut has_unset = false;
        let replaced =
            envsubst(&parameter.to_string(), &mut |variable| match environment.lookup(variable) {
                Some(value) => value.clone(),
                None => {
                    has_unset = true;
                    String::new()
                }
            });
        let resolved_parameter: Value = serde_json::from_str(&replaced).unwrap();
        let value = resolved_parameter.get("value").cloned().unwrap_or(Value::Null);
        // "ignore parameters that are not set", and an empty string mapped to an unset variable.
        if value.is_null() || (value == json!("") && has_unset) {
            continue;
        }
        resolved.insert(name.clone(), value);
    }
    // ensureParameters, parameter by parameter.
    let mut configured = BTreeMap::new();
    let mut missing = Vec::new();
    for (name, parameter) in declared {
        let type_name = parameter.type_name.trim_end_matches('?');
        if let Some(value) = resolved.get(name) {
            // armParameterFileValue: strings made booleans or numbers where they parse; an empty
            // string for a string parameter only when its default differs.
            let given = match (value.as_str(), type_name) {
                (None, _) => Some(value.clone()),
                (Some(text), "bool") => go_parse_bool(text).map(Value::Bool),
                (Some(text), "int") => text.parse::<i64>().ok().map(Value::from),
                (Some(text), "string") => {
                    // ARM's template holds an expression default as a string too ("[deployer()…]").
                    let default = match &parameter.default {
                        Some(Some(Value::String(text))) => Some(text.as_str()),
                        Some(None) => Some("[an expression]"),
                        _ => None,
                    };
                    (!text.is_empty() || default.is_some_and(|default| default != text))
                        .then(|| value.clone())
                }
                (Some(_), _) => Some(value.clone()),
            };
            if let Some(given) = given {
                configured.insert(name.clone(), given);
                continue;
            }
        }
        if parameter.default.is_some() || parameter.type_name.ends_with('?') {
            continue; // ARM's default, or null
        }
        if let Some(saved) = environment.config.get(name) {
            configured.insert(name.clone(), saved.clone());
            continue;
        }
        if parameter.generated {
            configured
                .insert(name.clone(), json!("generated-once-by-azd-and-kept-in-config-000000"));
            continue;
        }
        missing.push(format!("{name}: no value and no default, which --no-prompt refuses"));
    }
    if missing.is_empty() { Ok(configured) } else { Err(missing) }
}

/// What the deployment runs with: each parameter's value given, else its literal default.
fn deployed(
    given: &BTreeMap<String, Value>,
    declared: &BTreeMap<String, Declared>,
) -> BTreeMap<String, Option<Value>> {
    declared
        .iter()
        .map(|(name, parameter)| {
            let value = given.get(name).cloned().or_else(|| parameter.default.clone().flatten());
            (name.clone(), value)
        })
        .collect()
}

/// ARM's answer to the parameters given: every refusal.
fn refusals(given: &BTreeMap<String, Value>, declared: &BTreeMap<String, Declared>) -> Vec<String> {
    given.iter().filter_map(|(name, value)| arm_refuses(name, &declared[name], value)).collect()
}

// ---------------------------------------------------------------------------------------------
// The runner
// ---------------------------------------------------------------------------------------------

/// The environment `azd provision` is started with by the workflow's provision step, given the
/// repository's variables and secrets: the step's script run by bash as GitHub runs it, with
/// `azd` a stand-in that writes down its environment.
fn provision_environment(
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
fn repository<'a>(
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

const TOKEN_KEY: &str = "k3y-made-by-azd-on-the-first-provision-0123456789";

/// The parameters CI's `azd provision` deploys with, for a repository set up from `settings`.
fn ci_parameters(
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
fn local_parameters(
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
fn blog_settings() -> BTreeMap<String, String> {
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
fn sample_values(parameter: &Declared) -> Vec<String> {
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

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

/// The model of drone/envsubst against its own test cases (eval_test.go, `TestExpand`: "default
/// not used", "default used", `${var:=xyz}`), plus the case that matters here, an empty value.
#[test]
fn the_substitution_model_gives_the_default_for_an_unset_and_an_empty_variable() {
    let with = |pairs: &[(&str, &str)], template: &str| {
        let map: BTreeMap<String, String> =
            pairs.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())).collect();
        envsubst(template, &mut |name| map.get(name).cloned().unwrap_or_default())
    };
    assert_eq!(with(&[("var", "abc")], "${var=xyz}"), "abc");
    assert_eq!(with(&[], "${var=xyz}"), "xyz");
    assert_eq!(with(&[], "${var:=xyz}"), "xyz");
    assert_eq!(with(&[("var", "")], "${var=xyz}"), "xyz");
    assert_eq!(with(&[("var", "")], "{\"value\":\"${var}\"}"), "{\"value\":\"\"}");
}

/// A repository whose `BLOG_*` variables were never set (the default deployment, and what
/// `azd pipeline config` leaves when the environment set none): the runner gives azd each as
/// "", and every parameter azd then sends is one ARM takes, each unset setting deployed at
/// main.bicep's default.
#[test]
fn ci_with_no_blog_variable_set_deploys_main_bicep_defaults() {
    let declared = declared_parameters();
    let given =
        ci_parameters(&BTreeMap::new(), &declared).unwrap_or_else(|missing| panic!("{missing:?}"));
    let refused = refusals(&given, &declared);
    assert!(refused.is_empty(), "ARM refuses:\n  {}", refused.join("\n  "));
    let deployed = deployed(&given, &declared);
    for (parameter, variable) in blog_settings() {
        if variable == "BLOG_TOKEN_KEY" || variable == "BLOG_API_CLIENT_IDS" {
            continue; // a secret always set; CI adds its own client id (below)
        }
        let default = declared[&parameter].default.clone().flatten();
        assert_eq!(
            deployed[&parameter], default,
            "{parameter} ({variable} unset) is deployed at its default"
        );
    }
    assert_eq!(
        given.get("apiClientIds"),
        Some(&json!("ci-client-id")),
        "the pipeline's own client id, alone"
    );
    assert_eq!(given.get("tokenSigningKey"), Some(&json!(TOKEN_KEY)));
}

/// Each `BLOG_*` setting, set alone to each value ARM allows (or one it takes), reaches the
/// deployment as it was set, in CI as on the machine of the person who set it: a default
/// written for the unset case never overrides a value given.
#[test]
fn each_blog_setting_reaches_the_deployment_as_set_in_ci_as_on_the_persons_machine() {
    let declared = declared_parameters();
    let settings = blog_settings();
    assert!(settings.values().any(|variable| variable == "BLOG_COSMOS_BACKUP"), "{settings:?}");
    let mut configurations: Vec<BTreeMap<&str, &str>> = vec![BTreeMap::new()];
    let samples: BTreeMap<&str, Vec<String>> = settings
        .iter()
        .filter(|(_, variable)| *variable != "BLOG_TOKEN_KEY")
        .map(|(parameter, variable)| (variable.as_str(), sample_values(&declared[parameter])))
        .collect();
    for (variable, values) in &samples {
        for value in values {
            configurations.push(BTreeMap::from([(*variable, value.as_str())]));
        }
    }
    let mut problems = Vec::new();
    for configuration in &configurations {
        let ci = ci_parameters(configuration, &declared)
            .unwrap_or_else(|missing| panic!("{configuration:?}: {missing:?}"));
        let local = local_parameters(configuration, &declared)
            .unwrap_or_else(|missing| panic!("{configuration:?}: {missing:?}"));
        for refused in refusals(&ci, &declared) {
            problems.push(format!("{configuration:?}, CI: ARM refuses {refused}"));
        }
        for refused in refusals(&local, &declared) {
            problems
                .push(format!("{configuration:?}, on the person's machine: ARM refuses {refused}"));
        }
        let (ci, local) = (deployed(&ci, &declared), deployed(&local, &declared));
        for (parameter, variable) in &settings {
            if variable == "BLOG_API_CLIENT_IDS" {
                continue; // CI adds its own client id: the next test
            }
            if ci[parameter] != local[parameter] {
                problems.push(format!(
                    "{configuration:?}: {parameter} is {:?} from CI but {:?} from the person's machine",
                    ci[parameter], local[parameter]
                ));
            }
            if let Some(set) = configuration.get(variable.as_str()) {
                let expected = match declared[parameter].type_name.as_str() {
                    "int" => json!(set.parse::<i64>().unwrap()),
                    "bool" => json!(go_parse_bool(set).unwrap()),
                    _ => json!(set),
                };
                if ci[parameter].as_ref() != Some(&expected) {
                    problems.push(format!(
                        "{configuration:?}: {parameter} is deployed as {:?}, not as set",
                        ci[parameter]
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{} problems:\n  {}", problems.len(), problems.join("\n  "));
}

/// The API's other clients reach the deployment with the pipeline's own added, and no empty
/// entry when there is none.
#[test]
fn ci_adds_its_own_client_id_to_the_apis_other_clients() {
    let declared = declared_parameters();
    let set = BTreeMap::from([("BLOG_API_CLIENT_IDS", "other-app")]);
    assert_eq!(
        ci_parameters(&set, &declared).unwrap().get("apiClientIds"),
        Some(&json!("other-app,ci-client-id"))
    );
    assert_eq!(
        ci_parameters(&BTreeMap::new(), &declared).unwrap().get("apiClientIds"),
        Some(&json!("ci-client-id"))
    );
}

/// Every `BLOG_*` variable the parameters file reads is one the workflow gives azd, so that the
/// model above covers every setting (`tests/infra.rs` checks the same from azure.yaml's side).
#[test]
fn the_workflow_gives_azd_every_blog_variable_the_parameters_read() {
    let (vars, secrets) = repository(&BTreeMap::new());
    let given: BTreeSet<String> = provision_environment(&vars, &secrets).into_keys().collect();
    let read: BTreeSet<String> = blog_settings().into_values().collect();
    let missing: Vec<&String> = read.difference(&given).collect();
    assert!(missing.is_empty(), "the provision step's environment lacks {missing:?}");
}

/// Each `BLOG_*` setting whose parameter has a default other than "" names it in the parameters
/// file (`${NAME=default}`), the same as main.bicep's, so that an empty variable deploys what an
/// unset one does without depending on how azd treats each type's empty string.
#[test]
fn the_parameters_file_names_main_bicep_defaults_for_the_blog_settings() {
    let declared = declared_parameters();
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("infra/main.parameters.json")).unwrap(),
    )
    .unwrap();
    let mut problems = Vec::new();
    for (parameter, variable) in blog_settings() {
        let template = file["parameters"][&parameter]["value"].as_str().unwrap();
        let written = template
            .strip_prefix(&format!("${{{variable}="))
            .and_then(|rest| rest.strip_suffix('}'));
        let default = match declared[&parameter].default.clone().flatten() {
            Some(Value::String(text)) if text.is_empty() => None,
            Some(Value::String(text)) => Some(text),
            Some(other) => Some(other.to_string()),
            None => None,
        };
        if written.map(str::to_owned) != default {
            problems.push(format!(
                "{parameter}: the file says {template:?}, main.bicep's default is {default:?}"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
