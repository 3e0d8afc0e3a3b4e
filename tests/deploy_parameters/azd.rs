//! What azd makes of the parameters file: its substitution of the environment's variables and
//! the values it hands the deployment.

use super::*;

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
pub(crate) fn envsubst(template: &str, mapping: &mut dyn FnMut(&str) -> String) -> String {
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
pub(crate) struct AzdEnvironment {
    pub(crate) dotenv: BTreeMap<String, String>,
    pub(crate) process: BTreeMap<String, String>,
    pub(crate) config: BTreeMap<String, Value>,
}

impl AzdEnvironment {
    fn lookup(&self, name: &str) -> Option<&String> {
        self.dotenv.get(name).or_else(|| self.process.get(name))
    }
}

/// azd's `Go strconv.ParseBool`.
pub(crate) fn go_parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// The parameters azd sends ARM for main.bicep, or the parameters it would stop at in
/// `--no-prompt` mode (bicep_provider.go: `loadParameters`, then `ensureParameters`).
pub(crate) fn azd_parameters(
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
pub(crate) fn deployed(
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
pub(crate) fn refusals(
    given: &BTreeMap<String, Value>,
    declared: &BTreeMap<String, Declared>,
) -> Vec<String> {
    given.iter().filter_map(|(name, value)| arm_refuses(name, &declared[name], value)).collect()
}
