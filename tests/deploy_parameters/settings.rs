//! Each blog setting reaches the deployment as set, in CI as on a person's machine, and an
//! unset one deploys main.bicep's default.

use super::*;

/// The model of drone/envsubst against its own test cases (eval_test.go, `TestExpand`: "default
/// not used", "default used", `${var:=xyz}`), plus the case that matters here, an empty value.
#[test]
fn the_substitution_model_gives_the_default_for_an_unset_or_empty_variable() {
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
/// model (runner.rs, azd.rs) covers every setting (`tests/infra/parameters.rs` checks the same
/// from azure.yaml's side).
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
