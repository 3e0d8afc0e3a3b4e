//! main.bicep's parameters as declared, and what ARM refuses of the values given them.

use super::*;

// ---------------------------------------------------------------------------------------------
// main.bicep's parameters
// ---------------------------------------------------------------------------------------------

/// A `param` of main.bicep: what ARM checks a given value against, and the default it uses
/// when none is given.
#[derive(Debug)]
pub(crate) struct Declared {
    /// `string`, `int`, `bool`, `object` or `array`; `?` at the end when nullable.
    pub(crate) type_name: String,
    /// The default when it is a literal; `Some(None)` when it is an expression (`deployer()…`).
    pub(crate) default: Option<Option<Value>>,
    pub(crate) allowed: Option<Vec<Value>>,
    pub(crate) min_value: Option<i64>,
    max_value: Option<i64>,
    min_length: Option<i64>,
    max_length: Option<i64>,
    /// `@metadata({azd: {type: 'generate'}})`: azd makes a value once and keeps it in config.
    pub(crate) generated: bool,
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
pub(crate) fn declared_parameters() -> BTreeMap<String, Declared> {
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
pub(crate) fn arm_refuses(name: &str, parameter: &Declared, value: &Value) -> Option<String> {
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
