//! Offline checks of the Azure infrastructure in `infra/`.
//!
//! No Bicep compiler can run here, so this test does the part of its work that catches most
//! deployment failures: it parses every Bicep file with the tree-sitter Bicep grammar, and checks
//! every resource against the same type definitions the compiler uses (`tests/bicep-types/`,
//! generated data from Azure/bicep-types-az, kept in the repository): the type and API version exist, every property name
//! exists, enum values are allowed, read-only properties are not set, required ones are present.
//! Then it checks that the infrastructure matches the application: the containers and partition
//! keys of `src/cosmos/mod.rs`, the scripts of `src/scripts/`, Entra-ID-only Cosmos DB, and the
//! app settings the handler and the Functions host read.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

#[path = "common/yaml.rs"]
mod yaml;
use yaml::{yaml_block, yaml_items, yaml_mapping};

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use tree_sitter::{Node, Parser, Tree};

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` whose name ends with `.{extension}`, sorted so reports are stable.
fn files_with_extension(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let entries =
        fs::read_dir(dir).unwrap_or_else(|error| panic!("cannot read {}: {error}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            found.extend(files_with_extension(&path, extension));
        } else if path.extension().is_some_and(|ext| ext == extension) {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// The path relative to the repository, for messages.
fn shown(path: &Path) -> String {
    path.strip_prefix(repo_root()).unwrap_or(path).display().to_string()
}

/// Fails with every problem found, not just the first, so one run shows all there is to fix.
fn assert_no_problems(what: &str, problems: &[String]) {
    assert!(problems.is_empty(), "{what}:\n  - {}", problems.join("\n  - "));
}

// ---------------------------------------------------------------------------------------------
// Bicep syntax trees
// ---------------------------------------------------------------------------------------------

/// One parsed Bicep file.
struct BicepFile {
    path: PathBuf,
    source: String,
    tree: Tree,
    /// The `extension <alias>` statements of the file (see [`BicepFile::parse`]).
    extensions: Vec<String>,
}

/// The extensions `infra/bicepconfig.json` declares: alias → registry reference. The file is
/// JSON with comments (Bicep reads it so); whole-line `//` comments are left out here.
fn declared_extensions() -> BTreeMap<String, String> {
    let path = repo_root().join("infra/bicepconfig.json");
    let text = fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    let json: String = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let config: Value =
        serde_json::from_str(&json).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let extensions = config["extensions"].as_object().cloned().unwrap_or_default();
    extensions
        .into_iter()
        .map(|(alias, reference)| (alias, reference.as_str().unwrap_or_default().to_owned()))
        .collect()
}

impl BicepFile {
    /// Parses a Bicep file. The grammar (tree-sitter-bicep 1.1) predates `extension` statements
    /// and cannot parse them: a line `extension <alias>` whose alias `infra/bicepconfig.json`
    /// declares is recorded in [`BicepFile::extensions`] and blanked (kept as spaces, so that
    /// positions stay right) before parsing; any other `extension` line is left for the parser
    /// to refuse, so nothing is skipped unseen. `extensions_are_declared_and_typed` checks them.
    fn parse(path: &Path) -> BicepFile {
        let original = fs::read_to_string(path)
            .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
        let declared = declared_extensions();
        let mut extensions = Vec::new();
        let source: String = original
            .split_inclusive('\n')
            .map(|line| {
                let statement = line.trim_end();
                match statement.strip_prefix("extension ").map(str::trim) {
                    Some(alias)
                        if declared.contains_key(alias) && !alias.contains(char::is_whitespace) =>
                    {
                        extensions.push(alias.to_owned());
                        let blank: String = statement.chars().map(|_| ' ').collect();
                        format!("{blank}{}", &line[statement.len()..])
                    }
                    _ => line.to_owned(),
                }
            })
            .collect();
        let mut parser = Parser::new();
        parser.set_language(&tree_sitter_bicep::LANGUAGE.into()).expect("the Bicep grammar loads");
        let tree = parser.parse(&source, None).expect("the parser returns a tree");
        BicepFile { path: path.to_path_buf(), source, tree, extensions }
    }

    fn text(&self, node: Node) -> &str {
        &self.source[node.byte_range()]
    }

    /// Where a node is, as `file:line`, for messages.
    fn at(&self, node: Node) -> String {
        format!("{}:{}", shown(&self.path), node.start_position().row + 1)
    }

    /// The top-level statements of one kind (`parameter_declaration`, `variable_declaration`, …).
    fn statements<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = Node<'a>> + 'a {
        named_children(self.tree.root_node()).into_iter().filter(move |node| node.kind() == kind)
    }

    /// The value of `var <name> = …`, so that a property set from a variable is checked too.
    fn variable(&self, name: &str) -> Option<Node<'_>> {
        self.statements("variable_declaration")
            .find(|declaration| {
                first_child_of_kind(*declaration, "identifier")
                    .is_some_and(|id| self.text(id) == name)
            })
            .and_then(|declaration| named_children(declaration).last().copied())
    }

    /// The names of the `param`s this file declares, and whether each has a default value.
    fn parameters(&self) -> BTreeMap<String, bool> {
        self.statements("parameter_declaration")
            .filter_map(|declaration| {
                let name = first_child_of_kind(declaration, "identifier")?;
                let has_default = anonymous_child(declaration, "=").is_some();
                Some((self.text(name).to_string(), has_default))
            })
            .collect()
    }

    /// A string literal's value; `None` for anything else, interpolated strings included.
    fn string_literal(&self, node: Node) -> Option<String> {
        if node.kind() != "string" {
            return None;
        }
        let mut value = String::new();
        for part in named_children(node) {
            match part.kind() {
                "string_content" => value.push_str(self.text(part)),
                "escape_sequence" => value.push_str(&unescape(self.text(part))),
                _ => return None, // an interpolation: only known at deployment
            }
        }
        Some(value)
    }

    /// An object literal's properties: the key (`None` when computed, as `'${id}'`) and the value.
    fn object_entries<'a>(&'a self, object: Node<'a>) -> Vec<(Option<String>, Node<'a>)> {
        named_children(object)
            .into_iter()
            .filter(|child| child.kind() == "object_property")
            .filter_map(|property| {
                let parts = named_children(property);
                let (key, value) = (parts.first()?, parts.last()?);
                let key = match key.kind() {
                    "string" => self.string_literal(*key),
                    _ => Some(self.text(*key).to_string()),
                };
                Some((key, *value))
            })
            .collect()
    }

    /// The value of `key` in an object literal.
    fn property<'a>(&'a self, object: Node<'a>, key: &str) -> Option<Node<'a>> {
        self.object_entries(object)
            .into_iter()
            .find(|(name, _)| name.as_deref() == Some(key))
            .map(|(_, value)| value)
    }

    /// Follows a dotted path of properties through object literals (and variables).
    fn path<'a>(&'a self, object: Node<'a>, path: &[&str]) -> Option<Node<'a>> {
        path.iter().try_fold(object, |node, key| {
            let node = self.resolve(node);
            if node.kind() == "object" { self.property(node, key) } else { None }
        })
    }

    /// Sees through parentheses and variables to the expression that gives a value.
    fn resolve<'a>(&'a self, node: Node<'a>) -> Node<'a> {
        let mut node = node;
        for _ in 0..16 {
            node = match node.kind() {
                "parenthesized_expression" => match named_children(node).first() {
                    Some(inner) => *inner,
                    None => return node,
                },
                "identifier" => match self.variable(self.text(node)) {
                    Some(value) => value,
                    None => return node, // a parameter, a loop variable or a resource: not literal
                },
                _ => return node,
            };
        }
        node
    }

    /// The value `node` has on one hosting plan: `flex ? a : b` (infra/modules/functionapp.bicep)
    /// taken on that plan's branch, parentheses and variables followed.
    fn on_plan<'a>(&'a self, node: Node<'a>, plan: Hosting) -> Node<'a> {
        let mut node = self.resolve(node);
        while node.kind() == "ternary_expression"
            && node
                .child_by_field_name("condition")
                .is_some_and(|condition| self.text(condition) == "flex")
        {
            let branch = if plan == Hosting::Flex { "consequence" } else { "alternative" };
            node = self
                .resolve(node.child_by_field_name(branch).expect("a ternary has both branches"));
        }
        node
    }

    /// [`BicepFile::path`] on one hosting plan.
    fn path_on<'a>(&'a self, object: Node<'a>, path: &[&str], plan: Hosting) -> Option<Node<'a>> {
        path.iter()
            .try_fold(object, |node, key| {
                let node = self.on_plan(node, plan);
                if node.kind() == "object" { self.property(node, key) } else { None }
            })
            .map(|node| self.on_plan(node, plan))
    }

    /// The items of an array on one hosting plan: an array literal's, or those of each array
    /// `concat(…)` joins, in order.
    fn items_on<'a>(&'a self, node: Node<'a>, plan: Hosting) -> Vec<Node<'a>> {
        let node = self.on_plan(node, plan);
        match node.kind() {
            "array" => named_children(node),
            "call_expression"
                if node
                    .child_by_field_name("function")
                    .is_some_and(|function| self.text(function) == "concat") =>
            {
                let arguments =
                    node.child_by_field_name("arguments").map(named_children).unwrap_or_default();
                arguments.into_iter().flat_map(|argument| self.items_on(argument, plan)).collect()
            }
            _ => Vec::new(),
        }
    }

    /// A literal expression as JSON (variables followed); `None` where it depends on deployment.
    fn literal(&self, node: Node) -> Option<Value> {
        let node = self.resolve(node);
        match node.kind() {
            "string" => self.string_literal(node).map(Value::String),
            "number" => self.text(node).parse::<i64>().ok().map(Value::from),
            "boolean" => Some(Value::Bool(self.text(node) == "true")),
            "null" => Some(Value::Null),
            "array" => named_children(node)
                .into_iter()
                .map(|item| self.literal(item))
                .collect::<Option<Vec<_>>>()
                .map(Value::Array),
            "object" => {
                let mut object = Map::new();
                for (key, value) in self.object_entries(node) {
                    object.insert(key?, self.literal(value)?);
                }
                Some(Value::Object(object))
            }
            _ => None,
        }
    }

    /// Every `resource` declaration in the file, nested ones included.
    fn resources(&self) -> Vec<Resource<'_>> {
        descendants(self.tree.root_node())
            .into_iter()
            .filter(|node| node.kind() == "resource_declaration")
            .filter_map(|declaration| {
                let symbol = self.text(first_child_of_kind(declaration, "identifier")?).to_string();
                let type_and_version =
                    self.string_literal(first_child_of_kind(declaration, "string")?)?;
                let existing = anonymous_child(declaration, "existing").is_some();
                let body = resource_body(declaration)?;
                Some(Resource { file: self, declaration, symbol, type_and_version, existing, body })
            })
            .collect()
    }

    /// Every syntax error: tree-sitter marks what it could not parse as ERROR, and what it had
    /// to assume as MISSING.
    fn syntax_errors(&self) -> Vec<String> {
        descendants(self.tree.root_node())
            .into_iter()
            .filter(|node| node.is_error() || node.is_missing())
            .map(|node| {
                let what = if node.is_missing() { "missing" } else { "cannot parse" };
                format!(
                    "{}: {what} `{}`",
                    self.at(node),
                    self.text(node).chars().take(60).collect::<String>()
                )
            })
            .collect()
    }
}

fn unescape(sequence: &str) -> String {
    match sequence {
        "\\n" => "\n".into(),
        "\\r" => "\r".into(),
        "\\t" => "\t".into(),
        other => other.trim_start_matches('\\').into(), // \\ \' \$
    }
}

fn named_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

fn first_child_of_kind<'a>(node: Node<'a>, kind: &str) -> Option<Node<'a>> {
    named_children(node).into_iter().find(|child| child.kind() == kind)
}

/// A keyword or punctuation child (`existing`, `=`), which tree-sitter leaves unnamed.
fn anonymous_child<'a>(node: Node<'a>, kind: &str) -> Option<Node<'a>> {
    let mut cursor = node.walk();
    node.children(&mut cursor).find(|child| !child.is_named() && child.kind() == kind)
}

fn descendants(node: Node) -> Vec<Node> {
    let mut all = vec![node];
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        all.extend(descendants(child));
    }
    all
}

/// The object literal of a resource: `= {…}`, `= if (…) {…}` or `= [for … : {…}]`.
fn resource_body(declaration: Node) -> Option<Node> {
    let value = named_children(declaration).into_iter().last()?;
    let value = match value.kind() {
        "for_statement" => value.child_by_field_name("body")?,
        _ => value,
    };
    match value.kind() {
        "if_statement" => first_child_of_kind(value, "object"),
        "object" => Some(value),
        _ => None,
    }
}

/// A `resource` declaration.
struct Resource<'a> {
    file: &'a BicepFile,
    declaration: Node<'a>,
    symbol: String,
    /// `'Microsoft.X/y@2025-01-01'`, as written.
    type_and_version: String,
    existing: bool,
    body: Node<'a>,
}

impl Resource<'_> {
    fn type_name(&self) -> &str {
        self.type_and_version.split('@').next().unwrap_or_default()
    }

    fn at(&self) -> String {
        format!("{} ({})", self.file.at(self.declaration), self.symbol)
    }

    fn literal_at(&self, path: &[&str]) -> Option<Value> {
        self.file.path(self.body, path).and_then(|node| self.file.literal(node))
    }
}

/// Where the Function App runs: infra/modules/functionapp.bicep's `hostingPlan`, `flex` or a
/// dedicated plan's size, told apart in the template by `flex ? … : …`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Hosting {
    Flex,
    Dedicated,
}

/// The Function App's app settings on `plan`, each entry's node.
fn setting_entries<'a>(site: &Resource<'a>, plan: Hosting) -> Vec<Node<'a>> {
    site.file
        .path_on(site.body, &["properties", "siteConfig", "appSettings"], plan)
        .map(|array| site.file.items_on(array, plan))
        .unwrap_or_default()
}

/// The Function App's app settings on `plan`: name → value, where the value is a literal string.
fn literal_settings(site: &Resource, plan: Hosting) -> BTreeMap<String, Option<String>> {
    setting_entries(site, plan)
        .into_iter()
        .filter_map(|setting| {
            let name =
                site.file.literal(site.file.property(setting, "name")?)?.as_str()?.to_string();
            let value = site
                .file
                .property(setting, "value")
                .and_then(|value| site.file.literal(value)?.as_str().map(str::to_string));
            Some((name, value))
        })
        .collect()
}

/// Every `.bicep` file under `infra/`, parsed.
fn bicep_files() -> Vec<BicepFile> {
    let infra = repo_root().join("infra");
    let files: Vec<BicepFile> =
        files_with_extension(&infra, "bicep").iter().map(|path| BicepFile::parse(path)).collect();
    assert!(!files.is_empty(), "no .bicep files under {}", infra.display());
    files
}

fn resources_of_type<'a>(files: &'a [BicepFile], type_name: &str) -> Vec<Resource<'a>> {
    files
        .iter()
        .flat_map(BicepFile::resources)
        .filter(|resource| resource.type_name() == type_name)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Azure type definitions (tests/bicep-types/, see its README)
// ---------------------------------------------------------------------------------------------

const REQUIRED: u64 = 1;
const READ_ONLY: u64 = 2;

/// Properties a resource declaration may carry that are Bicep's, not the resource provider's.
const BICEP_RESOURCE_KEYWORDS: [&str; 3] = ["parent", "scope", "dependsOn"];

/// Where Azure's type definitions are known to be wrong: a top-level property the resource
/// provider requires although its type definition lacks it. The type check accepts exactly these;
/// `known_type_inaccuracies_are_still_needed_and_followed` holds each one to its resource in
/// `infra/` and fails once the vendored types are fixed (then the entry goes).
struct TypeInaccuracy {
    type_name: &'static str,
    property: &'static str,
    /// What Azure answers without it, and where that is reported.
    evidence: &'static str,
}

const KNOWN_TYPE_INACCURACIES: [TypeInaccuracy; 1] = [TypeInaccuracy {
    type_name: "Microsoft.Web/sites/basicPublishingCredentialsPolicies",
    property: "location",
    evidence: "App Service answers 400 'The parameter location has an invalid value' (ExtendedCode 51008) without it: \
               Azure/bicep-types-az issues 1317, 1526, 1529, 1571 (open, labelled inaccuracy), Azure/bicep 5531 and 7396; \
               Microsoft's AVM module avm/res/web/site/basic-publishing-credentials-policy sets it",
}];

fn known_inaccuracy(type_name: &str, property: &str) -> Option<&'static TypeInaccuracy> {
    KNOWN_TYPE_INACCURACIES
        .iter()
        .find(|known| known.type_name == type_name && known.property == property)
}

/// The type definitions of every provider in the folder: each file is one array of types that
/// refer to each other by index (`{"$ref": "#/12"}`), so a type is (file, index).
struct Schemas {
    files: Vec<Vec<Value>>,
    resources: BTreeMap<String, TypeRef>,
}

#[derive(Clone, Copy)]
struct TypeRef {
    file: usize,
    index: usize,
}

/// An object type's properties, with the base properties of a discriminated type merged in.
struct ObjectSchema<'a> {
    properties: Map<String, Value>,
    additional: Option<&'a Value>,
    file: usize,
}

impl Schemas {
    fn load() -> Schemas {
        let dir = repo_root().join("tests/bicep-types");
        assert!(dir.is_dir(), "the Azure type definitions are missing: expected {}", dir.display());
        let mut schemas = Schemas { files: Vec::new(), resources: BTreeMap::new() };
        for path in files_with_extension(&dir, "json") {
            let text = fs::read_to_string(&path).expect("readable type definitions");
            let types: Vec<Value> = serde_json::from_str(&text)
                .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            let file = schemas.files.len();
            for entry in types.iter().filter(|entry| entry["$type"] == "ResourceType") {
                let name = entry["name"].as_str().expect("a resource type has a name");
                let index = reference_index(&entry["body"]);
                schemas.resources.insert(name.to_string(), TypeRef { file, index });
            }
            schemas.files.push(types);
        }
        schemas
    }

    fn get(&self, type_ref: TypeRef) -> &Value {
        &self.files[type_ref.file][type_ref.index]
    }

    /// Follows a `{"$ref": "#/N"}` found in `file`.
    fn follow(&self, file: usize, reference: &Value) -> TypeRef {
        TypeRef { file, index: reference_index(reference) }
    }

    /// The properties an object literal may have under this type, if it is an object type we can
    /// resolve. A discriminated type (e.g. `sites/basicPublishingCredentialsPolicies`, chosen by
    /// `name`) resolves through the discriminator's literal value.
    fn object_schema(
        &self,
        type_ref: TypeRef,
        discriminator_value: &dyn Fn(&str) -> Option<String>,
    ) -> Option<ObjectSchema<'_>> {
        let definition = self.get(type_ref);
        match definition["$type"].as_str()? {
            "ObjectType" => Some(ObjectSchema {
                properties: definition["properties"].as_object().cloned().unwrap_or_default(),
                additional: definition.get("additionalProperties"),
                file: type_ref.file,
            }),
            "DiscriminatedObjectType" => {
                let discriminator = definition["discriminator"].as_str()?;
                let element = definition["elements"].get(discriminator_value(discriminator)?)?;
                let mut schema =
                    self.object_schema(self.follow(type_ref.file, element), &|_| None)?;
                for (name, property) in
                    definition["baseProperties"].as_object().into_iter().flatten()
                {
                    schema.properties.insert(name.clone(), property.clone());
                }
                Some(schema)
            }
            _ => None,
        }
    }

    /// The allowed values when the type is an enum: a string literal, or a union of string
    /// literals only. `None` when any string (or anything else) is accepted.
    fn allowed_strings(&self, type_ref: TypeRef) -> Option<Vec<String>> {
        let definition = self.get(type_ref);
        match definition["$type"].as_str()? {
            "StringLiteralType" => Some(vec![definition["value"].as_str()?.to_string()]),
            "UnionType" => definition["elements"]
                .as_array()?
                .iter()
                .map(|element| {
                    let element = self.get(self.follow(type_ref.file, element));
                    (element["$type"] == "StringLiteralType")
                        .then(|| element["value"].as_str().map(str::to_string))?
                })
                .collect(),
            _ => None,
        }
    }

    fn array_item(&self, type_ref: TypeRef) -> Option<TypeRef> {
        let definition = self.get(type_ref);
        (definition["$type"] == "ArrayType")
            .then(|| self.follow(type_ref.file, &definition["itemType"]))
    }
}

fn reference_index(reference: &Value) -> usize {
    reference["$ref"]
        .as_str()
        .and_then(|text| text.strip_prefix("#/"))
        .and_then(|index| index.parse().ok())
        .unwrap_or_else(|| panic!("not a type reference: {reference}"))
}

/// Checks Bicep expressions against the type definitions, collecting every problem.
struct TypeChecker<'a> {
    schemas: &'a Schemas,
    file: &'a BicepFile,
    /// The type of the resource being checked, for [`KNOWN_TYPE_INACCURACIES`].
    resource_type: String,
    problems: Vec<String>,
}

impl TypeChecker<'_> {
    /// Checks one value. Only literals can be checked: an expression computed at deployment
    /// (a parameter, a function call, a reference to another resource) is accepted as it is.
    fn check_value(&mut self, type_ref: TypeRef, node: Node, path: &str, require: bool) {
        let node = self.file.resolve(node);
        match node.kind() {
            // Both branches of `condition ? a : b` may be deployed.
            "ternary_expression" => {
                for field in ["consequence", "alternative"] {
                    if let Some(branch) = node.child_by_field_name(field) {
                        self.check_value(type_ref, branch, path, require);
                    }
                }
            }
            "object" => self.check_object(type_ref, node, path, require, false),
            "array" => {
                if let Some(item) = self.schemas.array_item(type_ref) {
                    for (index, element) in named_children(node).into_iter().enumerate() {
                        self.check_value(item, element, &format!("{path}[{index}]"), require);
                    }
                }
            }
            // `[for x in xs: {…}]`: the body is one item.
            "for_statement" => {
                if let (Some(item), Some(body)) =
                    (self.schemas.array_item(type_ref), node.child_by_field_name("body"))
                {
                    self.check_value(item, body, &format!("{path}[*]"), require);
                }
            }
            "string" => self.check_enum(type_ref, node, path),
            _ => {}
        }
    }

    fn check_enum(&mut self, type_ref: TypeRef, node: Node, path: &str) {
        let (Some(allowed), Some(value)) =
            (self.schemas.allowed_strings(type_ref), self.file.string_literal(node))
        else {
            return;
        };
        if !allowed.contains(&value) {
            let at = self.file.at(node);
            self.problems.push(format!("{at}: {path} = '{value}' is not one of {allowed:?}"));
        }
    }

    /// Checks an object literal: known names only, no read-only ones, the required ones present
    /// (`require` is false for `existing` resources, which only name what is already there).
    fn check_object(
        &mut self,
        type_ref: TypeRef,
        object: Node,
        path: &str,
        require: bool,
        resource_top: bool,
    ) {
        let file = self.file;
        let entries = file.object_entries(object);
        let discriminator_value = |name: &str| {
            entries
                .iter()
                .find(|(key, _)| key.as_deref() == Some(name))
                .and_then(|(_, value)| file.literal(*value)?.as_str().map(str::to_string))
        };
        let Some(schema) = self.schemas.object_schema(type_ref, &discriminator_value) else {
            return; // `any`, or a union we cannot resolve: nothing more to check
        };
        for (key, value) in &entries {
            let Some(key) = key else {
                continue; // a computed key (`'${identity.id}': {}`): only a map takes those
            };
            if resource_top && BICEP_RESOURCE_KEYWORDS.contains(&key.as_str()) {
                continue;
            }
            if resource_top
                && !schema.properties.contains_key(key)
                && known_inaccuracy(&self.resource_type, key).is_some()
            {
                continue;
            }
            let here = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
            let (property_type, flags) = match schema.properties.get(key) {
                Some(property) => (
                    self.schemas.follow(schema.file, &property["type"]),
                    property["flags"].as_u64().unwrap_or(0),
                ),
                None => match schema.additional {
                    Some(additional) => (self.schemas.follow(schema.file, additional), 0),
                    None => {
                        let known: Vec<&String> = schema.properties.keys().collect();
                        self.problems.push(format!(
                            "{}: unknown property {here} (known: {known:?})",
                            file.at(*value)
                        ));
                        continue;
                    }
                },
            };
            if flags & READ_ONLY != 0 && flags & REQUIRED == 0 {
                self.problems.push(format!("{}: {here} is read-only", file.at(*value)));
            }
            self.check_value(property_type, *value, &here, require);
        }
        if require {
            for (name, property) in &schema.properties {
                let flags = property["flags"].as_u64().unwrap_or(0);
                let present = entries.iter().any(|(key, _)| key.as_deref() == Some(name.as_str()));
                if flags & REQUIRED != 0 && !present {
                    let shown_path = if path.is_empty() { "the resource" } else { path };
                    self.problems.push(format!(
                        "{}: {shown_path} lacks required property {name}",
                        file.at(object)
                    ));
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Syntax
// ---------------------------------------------------------------------------------------------

#[test]
fn every_bicep_file_parses() {
    let problems: Vec<String> = bicep_files().iter().flat_map(BicepFile::syntax_errors).collect();
    assert_no_problems("Bicep syntax errors", &problems);
}

/// `infra/main.parameters.json`, the parameters azd deploys main.bicep with: each sets a
/// parameter main.bicep declares, from one environment variable (`${NAME}`, which azd substitutes
/// and leaves out when unset: azure-dev bicep_provider.go, loadParameters; or `${NAME=default}`),
/// and every parameter without a default is set there or generated by azd.
#[test]
fn parameters_file_sets_declared_parameters() {
    let infra = repo_root().join("infra");
    let main = BicepFile::parse(&infra.join("main.bicep"));
    let declared = main.parameters();
    let mapped = parameter_mappings();
    let mut problems = Vec::new();
    for name in mapped.keys() {
        if !declared.contains_key(name) {
            problems.push(format!("parameter {name} is not declared in main.bicep"));
        }
    }
    for (name, has_default) in &declared {
        let generated = parameter_decorators(&main, name)
            .unwrap_or_default()
            .iter()
            .any(|decorator| decorator.contains("type: 'generate'"));
        if !has_default && !mapped.contains_key(name) && !generated {
            problems.push(format!("parameter {name} has no default, and neither the parameters file nor azd gives it one"));
        }
    }
    assert_no_problems("infra/main.parameters.json", &problems);
    assert!(
        !infra.join("main.bicepparam").exists(),
        "azd prefers a .bicepparam, and then does not filter the region prompt"
    );
}

/// main.parameters.json: parameter → the environment variable its value names.
fn parameter_mappings() -> BTreeMap<String, String> {
    let path = repo_root().join("infra/main.parameters.json");
    let json: Value = serde_json::from_str(
        &fs::read_to_string(&path).expect("infra/main.parameters.json exists"),
    )
    .unwrap();
    let mut mappings = BTreeMap::new();
    for (name, parameter) in json["parameters"].as_object().expect("a parameters object") {
        let value = parameter["value"].as_str().unwrap_or_default();
        // `${NAME=default}`: the default where NAME is unset or empty (tests/deploy_parameters.rs).
        let variable = value
            .strip_prefix("${")
            .and_then(|rest| rest.strip_suffix('}'))
            .map(|inner| inner.split_once('=').map_or(inner, |(name, _)| name))
            .filter(|variable| variable.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or_else(|| panic!("parameter {name}: its value is one environment variable, ${{NAME}}, not {value:?}"));
        mappings.insert(name.clone(), variable.to_owned());
    }
    mappings
}

/// Every value `azd env set` gives a deployment here reaches the GitHub workflow's: azure.yaml's
/// `pipeline:` lists it, so that `azd pipeline config` copies it to the repository, and the
/// workflow hands it to `azd provision` (a repository variable is not in a job's environment
/// unless the workflow puts it there). Otherwise the next push deploys without it: after a
/// restore, CI would point the app back at the old account; alert mail would stop.
#[test]
fn every_value_the_parameters_read_reaches_ci() {
    let root = repo_root();
    let project = fs::read_to_string(root.join("azure.yaml")).unwrap();
    let listed = |key: &str| -> BTreeSet<String> {
        yaml_block(&project, &["pipeline", key])
            .iter()
            .filter_map(|line| line.trim().strip_prefix("- ").map(|item| item.trim().to_owned()))
            .collect()
    };
    let (variables, secrets) = (listed("variables"), listed("secrets"));
    let workflow = fs::read_to_string(root.join(".github/workflows/azure-dev.yml")).unwrap();
    let job_env = yaml_mapping(&yaml_block(&workflow, &["jobs", "build", "env"]));
    let provision = yaml_items(&yaml_block(&workflow, &["jobs", "build", "steps"]))
        .into_iter()
        .find(|step| step.iter().any(|line| line.contains("azd provision --no-prompt")))
        .expect("the workflow runs azd provision");
    let provision_env = yaml_mapping(&yaml_block(&provision.join("\n"), &["env"]));
    let mut problems = Vec::new();
    for (parameter, variable) in parameter_mappings() {
        // azd's own: `azd pipeline config` sets these, or they are the environment's name and place.
        if variable.starts_with("AZURE_") {
            // The pipeline's own principal is named on the machine that makes it an owner, not in CI.
            let kept_here = [
                "AZURE_PIPELINE_CLIENT_ID",
                "AZURE_PIPELINE_MSI_CLIENT_ID",
                "AZURE_RESOURCE_GROUP",
            ];
            if !kept_here.contains(&variable.as_str()) && !job_env.contains_key(&variable) {
                problems.push(format!("{parameter}: the workflow does not set {variable}"));
            }
            continue;
        }
        let secret = secrets.contains(&variable);
        if !secret && !variables.contains(&variable) {
            problems
                .push(format!("{parameter}: azure.yaml's pipeline section lists no {variable}"));
        }
        let given = if secret { provision_env.get(&variable) } else { job_env.get(&variable) };
        let expected =
            if secret { format!("secrets.{variable}") } else { format!("vars.{variable}") };
        if !given.is_some_and(|value| value.contains(&expected)) {
            problems.push(format!("{parameter}: the workflow does not give {variable} from {expected} to azd provision"));
        }
    }
    assert_no_problems("values reaching CI", &problems);
}

/// What the compiler checks for modules: the file exists, every given parameter is declared,
/// every parameter without a default is given.
#[test]
fn modules_exist_and_get_their_parameters() {
    let mut problems = Vec::new();
    for file in bicep_files() {
        for module in descendants(file.tree.root_node())
            .into_iter()
            .filter(|node| node.kind() == "module_declaration")
        {
            let (Some(target), Some(body)) = (
                first_child_of_kind(module, "string").and_then(|s| file.string_literal(s)),
                resource_body(module),
            ) else {
                problems
                    .push(format!("{}: module without a literal path and body", file.at(module)));
                continue;
            };
            let target_path = file.path.parent().expect("a file has a folder").join(&target);
            if !target_path.is_file() {
                problems.push(format!("{}: module file {target} does not exist", file.at(module)));
                continue;
            }
            let declared = BicepFile::parse(&target_path).parameters();
            let given: BTreeSet<String> = file
                .property(body, "params")
                .map(|params| {
                    file.object_entries(params).into_iter().filter_map(|(key, _)| key).collect()
                })
                .unwrap_or_default();
            for name in given.iter().filter(|name| !declared.contains_key(*name)) {
                problems.push(format!("{}: {target} has no param {name}", file.at(module)));
            }
            for (name, _) in declared
                .iter()
                .filter(|(name, has_default)| !**has_default && !given.contains(*name))
            {
                problems.push(format!("{}: {target} needs param {name}", file.at(module)));
            }
        }
    }
    assert_no_problems("module calls", &problems);
}

// ---------------------------------------------------------------------------------------------
// Resources against the Azure type definitions
// ---------------------------------------------------------------------------------------------

#[test]
fn every_resource_matches_its_azure_type_definition() {
    let schemas = Schemas::load();
    let files = bicep_files();
    let mut problems = Vec::new();
    for file in &files {
        let mut checker = TypeChecker {
            schemas: &schemas,
            file,
            resource_type: String::new(),
            problems: Vec::new(),
        };
        for resource in file.resources() {
            checker.resource_type = resource.type_name().to_owned();
            // Child resources are declared with `parent:` and their full type name; a nested
            // declaration's short type name would not be found here either.
            let Some(type_ref) = schemas.resources.get(&resource.type_and_version) else {
                checker.problems.push(format!(
                    "{}: unknown resource type or API version '{}'",
                    resource.at(),
                    resource.type_and_version
                ));
                continue;
            };
            checker.check_object(*type_ref, resource.body, "", !resource.existing, true);
        }
        problems.extend(checker.problems);
    }
    assert_no_problems("resources that do not match their Azure type definitions", &problems);
}

/// Each exception to the type check is still an exception (the vendored type definition still
/// lacks the property: when a refreshed file has it, the entry goes), and every resource of that
/// type in `infra/` sets the property, since Azure refuses it otherwise.
#[test]
fn known_type_inaccuracies_are_still_needed_and_followed() {
    let schemas = Schemas::load();
    let files = bicep_files();
    let mut problems = Vec::new();
    for known in &KNOWN_TYPE_INACCURACIES {
        let versions: Vec<&String> = schemas
            .resources
            .keys()
            .filter(|name| name.split('@').next() == Some(known.type_name))
            .collect();
        for version in &versions {
            let type_ref = schemas.resources[*version];
            let elements =
                schemas.get(type_ref)["elements"].as_object().cloned().unwrap_or_default();
            let mut names: Vec<String> = elements.keys().cloned().collect();
            if names.is_empty() {
                names.push(String::new());
            }
            for name in names {
                let schema = schemas
                    .object_schema(type_ref, &|_| Some(name.clone()))
                    .expect("an object type");
                if schema.properties.contains_key(known.property) {
                    problems.push(format!(
                        "{version} ({name}) now defines {}: remove it from KNOWN_TYPE_INACCURACIES",
                        known.property
                    ));
                }
            }
        }
        let resources = resources_of_type(&files, known.type_name);
        if resources.is_empty() {
            problems.push(format!(
                "no {} in infra/: remove it from KNOWN_TYPE_INACCURACIES",
                known.type_name
            ));
        }
        for resource in resources {
            if resource.file.property(resource.body, known.property).is_none() {
                problems.push(format!(
                    "{}: lacks {}, which Azure requires: {}",
                    resource.at(),
                    known.property,
                    known.evidence
                ));
            }
        }
    }
    assert_no_problems("known inaccuracies of Azure's type definitions", &problems);
}

/// Properties the type definitions let a resource set and the service refuses: no resource in
/// `infra/` sets them. Each with where it is reported. (The other open reports against the
/// Microsoft Graph types concern reads and writes with owners, not a property the modules set:
/// microsoftgraph/msgraph-bicep-types 174, `existing` service principals refused even to
/// administrators, which only `pipeline-principal.bicep` reads, from the operator's machine; 275,
/// service principals Forbidden in some tenants; 193, replication delays, since answered with
/// retries. The failures of the closed 271 and 301 come from a federated credential named without
/// `<uniqueName>/` or with no dependency on its application: `signin.bicep` names it
/// `${registration.uniqueName}/…`, as Microsoft's quickstart templates do.)
const REFUSED_PROPERTIES: [(&str, &str, &str); 2] = [
    (
        "Microsoft.Graph/applications",
        "disabledByMicrosoftStatus",
        "Graph answers 'Property disabledByMicrosoftStatus is read-only and cannot be set'; the v1.0 1.0.0 types \
         mark it writable: microsoftgraph/msgraph-bicep-types issue 260 (open, bug, triaged)",
    ),
    (
        "Microsoft.Graph/servicePrincipals",
        "disabledByMicrosoftStatus",
        "the same property, described the same in the same types (issue 260 names applications)",
    ),
];

/// No resource sets a property its type lets it set and the service refuses
/// ([`REFUSED_PROPERTIES`]); each such property is still in the vendored types (when a refreshed
/// file drops it, the entry goes).
#[test]
fn no_resource_sets_a_property_the_service_refuses() {
    let schemas = Schemas::load();
    let files = bicep_files();
    let mut problems = Vec::new();
    for (type_name, property, evidence) in REFUSED_PROPERTIES {
        let typed = schemas
            .resources
            .iter()
            .filter(|(name, _)| name.split('@').next() == Some(type_name))
            .any(|(_, type_ref)| {
                schemas
                    .object_schema(*type_ref, &|_| None)
                    .is_some_and(|schema| schema.properties.contains_key(property))
            });
        if !typed {
            problems.push(format!("no vendored {type_name} type defines {property} now: remove it from REFUSED_PROPERTIES"));
        }
        for resource in resources_of_type(&files, type_name) {
            if resource.file.property(resource.body, property).is_some() {
                problems.push(format!(
                    "{}: sets {property}, which the service refuses: {evidence}",
                    resource.at()
                ));
            }
        }
    }
    assert_no_problems("properties the service refuses", &problems);
}

/// FTP and the SCM site's user names and passwords are off: both policies, `allow: false`, and
/// each with the `location` Azure requires of them (see [`KNOWN_TYPE_INACCURACIES`]).
#[test]
fn publishing_with_passwords_is_off_and_the_policies_carry_location() {
    let files = bicep_files();
    let policies =
        resources_of_type(&files, "Microsoft.Web/sites/basicPublishingCredentialsPolicies");
    let mut problems = Vec::new();
    for name in ["scm", "ftp"] {
        let Some(policy) =
            policies.iter().find(|policy| policy.literal_at(&["name"]) == Some(json!(name)))
        else {
            problems.push(format!("no basicPublishingCredentialsPolicies '{name}'"));
            continue;
        };
        if policy.literal_at(&["properties", "allow"]) != Some(json!(false)) {
            problems.push(format!("{}: properties.allow must be false", policy.at()));
        }
        match policy.file.property(policy.body, "location") {
            Some(location) if expression(policy.file, location) == "location" => {}
            other => problems.push(format!(
                "{}: location must be the app's (the module's `location`), found {:?}",
                policy.at(),
                other.map(|node| expression(policy.file, node))
            )),
        }
    }
    assert_no_problems("publishing credentials policies", &problems);
}

// ---------------------------------------------------------------------------------------------
// The infrastructure against the application
// ---------------------------------------------------------------------------------------------

const STORED_PROCEDURE: &str =
    "Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers/storedProcedures";
const TRIGGER: &str = "Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers/triggers";
const CONTAINER: &str = "Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers";
const ACCOUNT: &str = "Microsoft.DocumentDB/databaseAccounts";
const SITE: &str = "Microsoft.Web/sites";

/// The containers and partition key paths the application uses: `Container::partition_key_path`
/// in src/cosmos/mod.rs. A container deployed with another key cannot be changed afterwards.
const APP_CONTAINERS: [(&str, &str); 5] = [
    ("users", "/userId"),
    ("posts", "/postId"),
    ("feed", "/type"),
    ("tags", "/tag"),
    ("leases", "/id"),
];

/// The containers whose lists sort by creationDate, then id (`Container::indexing_policy`).
const SORTED_CONTAINERS: [&str; 4] = ["users", "posts", "feed", "tags"];

/// Every `loadTextContent('…')` target, relative to the file that loads it, must exist:
/// the compiler would refuse the template otherwise.
#[test]
fn loaded_files_exist() {
    let mut problems = Vec::new();
    for file in bicep_files() {
        for (at, target) in load_text_content_calls(&file) {
            let path = file.path.parent().expect("a file has a folder").join(&target);
            if !path.is_file() {
                problems.push(format!("{at}: loadTextContent('{target}') does not exist"));
            }
        }
    }
    assert_no_problems("missing files", &problems);
}

fn load_text_content_calls(file: &BicepFile) -> Vec<(String, String)> {
    descendants(file.tree.root_node())
        .into_iter()
        .filter(|node| node.kind() == "call_expression")
        .filter(|call| {
            call.child_by_field_name("function")
                .is_some_and(|function| file.text(function) == "loadTextContent")
        })
        .filter_map(|call| {
            let argument = call
                .child_by_field_name("arguments")
                .and_then(|arguments| named_children(arguments).first().copied())?;
            Some((file.at(call), file.string_literal(argument)?))
        })
        .collect()
}

/// The deployed scripts are exactly the app's scripts, each deployed under its name (the one the
/// app calls it by) with the very bytes the in-process engine runs as its body: its file, joined
/// with the keyed procedures' shared helpers where it has their marker. Every `src/scripts/*.js`
/// is deployed, as a script or as those helpers.
#[test]
fn deployed_scripts_are_the_app_scripts() {
    let files = bicep_files();
    let mut problems = Vec::new();
    let mut deployed = BTreeSet::new();
    let mut loaded = BTreeSet::new();
    let app_scripts: BTreeMap<&str, &str> = blog::testing::scripts::StoredProcedure::ALL
        .into_iter()
        .map(|procedure| procedure.script())
        .chain(blog::testing::scripts::PostTrigger::ALL.into_iter().map(|trigger| trigger.script()))
        .map(|script| (script.name, script.source))
        .collect();
    for resource in resources_of_type(&files, STORED_PROCEDURE)
        .into_iter()
        .chain(resources_of_type(&files, TRIGGER))
    {
        let id = resource
            .literal_at(&["properties", "resource", "id"])
            .and_then(|id| id.as_str().map(str::to_string));
        let Some(id) = id else {
            problems.push(format!("{}: properties.resource.id is not a literal", resource.at()));
            continue;
        };
        if resource.literal_at(&["name"]) != Some(json!(id)) {
            problems.push(format!(
                "{}: name differs from properties.resource.id '{id}'",
                resource.at()
            ));
        }
        match (script_body(&resource, &mut loaded), app_scripts.get(id.as_str())) {
            (Some(body), Some(source)) if body == *source => {}
            (Some(_), Some(_)) => {
                problems.push(format!("{}: the deployed body differs from what the app runs as {id}", resource.at()))
            }
            (None, _) => problems.push(format!(
                "{}: body must be loadTextContent of a script file, or replace() of one with literals and loaded files",
                resource.at()
            )),
            (_, None) => problems.push(format!("{}: the app has no script {id}", resource.at())),
        }
        deployed.insert(id);
    }
    let app_names: BTreeSet<String> = app_scripts.keys().map(|name| name.to_string()).collect();
    if deployed != app_names {
        problems.push(format!("deployed scripts {deployed:?} differ from the app's {app_names:?}"));
    }
    let script_files: BTreeSet<PathBuf> =
        files_with_extension(&repo_root().join("src/scripts"), "js")
            .into_iter()
            .filter(|path| path.parent() == Some(repo_root().join("src/scripts").as_path()))
            .filter_map(|path| path.canonicalize().ok())
            .collect();
    for unused in script_files.difference(&loaded) {
        problems.push(format!("{} is deployed in no script's body", shown(unused)));
    }
    assert_no_problems("Cosmos DB scripts", &problems);
}

/// A script's `properties.resource.body` as ARM evaluates it, where it is made of string
/// literals, `loadTextContent('…')` and `replace(…, …, …)`; every file it loads (canonical path)
/// is added to `loaded`.
fn script_body(script: &Resource, loaded: &mut BTreeSet<PathBuf>) -> Option<String> {
    let file = script.file;
    let body = file.path(script.body, &["properties", "resource", "body"])?;
    evaluate_text(file, body, loaded)
}

fn evaluate_text(file: &BicepFile, node: Node, loaded: &mut BTreeSet<PathBuf>) -> Option<String> {
    if node.kind() != "call_expression" {
        return file.string_literal(node);
    }
    let function = file.text(node.child_by_field_name("function")?);
    let arguments = named_children(node.child_by_field_name("arguments")?);
    match (function, arguments.as_slice()) {
        ("loadTextContent", [path]) => {
            let path = file.path.parent()?.join(file.string_literal(*path)?).canonicalize().ok()?;
            let text = fs::read_to_string(&path).ok()?;
            loaded.insert(path);
            Some(text)
        }
        // ARM's replace: every occurrence, case-sensitive, as `str::replace`.
        ("replace", [text, old, new]) => {
            let text = evaluate_text(file, *text, loaded)?;
            Some(
                text.replace(
                    &evaluate_text(file, *old, loaded)?,
                    &evaluate_text(file, *new, loaded)?,
                ),
            )
        }
        _ => None,
    }
}

#[test]
fn containers_and_partition_keys_are_the_apps() {
    let files = bicep_files();
    let mut problems = Vec::new();
    let mut deployed = BTreeMap::new();
    for container in resources_of_type(&files, CONTAINER) {
        let name = container.literal_at(&["properties", "resource", "id"]);
        let partition_key = container.literal_at(&["properties", "resource", "partitionKey"]);
        let (Some(Value::String(name)), Some(partition_key)) = (name, partition_key) else {
            problems.push(format!(
                "{}: the container id and partition key must be literals",
                container.at()
            ));
            continue;
        };
        if partition_key["kind"] != "Hash" || partition_key["version"] != 2 {
            problems.push(format!(
                "{}: partition key of {name} should be kind 'Hash', version 2: {partition_key}",
                container.at()
            ));
        }
        deployed.insert(name, partition_key["paths"].clone());
    }
    let expected: BTreeMap<String, Value> =
        APP_CONTAINERS.iter().map(|(name, path)| (name.to_string(), json!([path]))).collect();
    if deployed != expected {
        problems.push(format!(
            "containers and partition key paths {deployed:?} differ from the app's {expected:?}"
        ));
    }
    assert_no_problems("Cosmos DB containers", &problems);
}

/// Time to live is on (`defaultTtl: -1`) exactly where the app writes items with a `ttl`
/// (`Container::expires_items` in src/cosmos/mod.rs): elsewhere Cosmos DB ignores an item's ttl,
/// and a deleted post's tombstone would stay forever.
#[test]
fn time_to_live_is_on_where_the_app_expires_items() {
    let files = bicep_files();
    let mut problems = Vec::new();
    for container in resources_of_type(&files, CONTAINER) {
        let name = container.literal_at(&["properties", "resource", "id"]).unwrap_or_default();
        let app_container =
            blog::testing::cosmos::Container::ALL.into_iter().find(|app| app.name() == name);
        let expected = app_container.filter(|app| app.expires_items()).map(|_| json!(-1));
        let deployed = container.literal_at(&["properties", "resource", "defaultTtl"]);
        if deployed != expected {
            problems.push(format!(
                "{}: {name} has defaultTtl {deployed:?}, the app needs {expected:?}",
                container.at()
            ));
        }
    }
    assert_no_problems("time to live", &problems);
}

/// Two-property ORDER BY (creationDate, id) fails on real Cosmos DB without this composite index.
#[test]
fn sorted_containers_have_the_composite_index() {
    let files = bicep_files();
    let mut problems = Vec::new();
    let wanted_composite = json!([{"path": "/creationDate", "order": "ascending"}, {"path": "/id", "order": "ascending"}]);
    for container in resources_of_type(&files, CONTAINER) {
        let name = container.literal_at(&["properties", "resource", "id"]).unwrap_or_default();
        if !SORTED_CONTAINERS.iter().any(|sorted| name == *sorted) {
            continue;
        }
        let policy =
            container.literal_at(&["properties", "resource", "indexingPolicy"]).unwrap_or_default();
        let includes_all = policy["includedPaths"]
            .as_array()
            .is_some_and(|paths| paths.iter().any(|path| path["path"] == "/*"));
        let has_composite = policy["compositeIndexes"]
            .as_array()
            .is_some_and(|indexes| indexes.contains(&wanted_composite));
        if policy["indexingMode"] != "consistent"
            || policy["automatic"] != true
            || !includes_all
            || !has_composite
        {
            problems.push(format!(
                "{}: {name} needs indexingMode consistent, automatic, includedPaths /* and the composite index {wanted_composite}; has {policy}",
                container.at()
            ));
        }
    }
    assert_no_problems("indexing policies", &problems);
}

/// The app authenticates with Entra ID only; keys must not work at all.
#[test]
fn cosmos_account_accepts_entra_id_only() {
    let files = bicep_files();
    let accounts = resources_of_type(&files, ACCOUNT);
    assert!(!accounts.is_empty(), "no Cosmos DB account in infra/");
    let problems: Vec<String> = accounts
        .iter()
        .filter(|account| {
            account.literal_at(&["properties", "disableLocalAuth"]) != Some(Value::Bool(true))
        })
        .map(|account| format!("{}: properties.disableLocalAuth must be true", account.at()))
        .collect();
    assert_no_problems("Cosmos DB local (key) authentication", &problems);
}

/// The settings the handler (src/config.rs) and the Functions host read, with identity-based
/// connections; and none of FUNCTIONS_WORKER_RUNTIME, which Flex Consumption refuses.
#[test]
fn function_app_settings_are_identity_based() {
    let files = bicep_files();
    let sites = resources_of_type(&files, SITE);
    assert_eq!(sites.len(), 1, "one Function App expected in infra/");
    let site = &sites[0];
    let mut problems = Vec::new();
    for plan in [Hosting::Flex, Hosting::Dedicated] {
        identity_based_settings(site, plan, &mut problems);
    }
    let runtime = site.file.path_on(
        site.body,
        &["properties", "functionAppConfig", "runtime"],
        Hosting::Flex,
    );
    if runtime.and_then(|runtime| site.file.literal(runtime))
        != Some(json!({"name": "custom", "version": "1.0"}))
    {
        problems.push(format!("{}: functionAppConfig.runtime must be custom 1.0", site.at()));
    }
    assert_no_problems("Function App settings", &problems);
}

/// The problems of the app settings on `plan`, for [`function_app_settings_are_identity_based`].
fn identity_based_settings(site: &Resource, plan: Hosting, problems: &mut Vec<String>) {
    let settings = literal_settings(site, plan);
    let required = [
        "AzureWebJobsStorage__accountName",
        "AzureWebJobsStorage__clientId",
        "CosmosDB__accountEndpoint",
        "CosmosDB__clientId",
        "COSMOS_DATABASE",
        // The pictures in posts, in Blob Storage with the identity.
        "BLOG_PICTURES__blobServiceUri",
        "BLOG_PICTURES__clientId",
        "BLOG_PICTURES_CONTAINER",
        // The pictures' memory, from the instance's.
        "BLOG_PICTURE_MEMORY_MB",
        "BLOG_TOKEN_KEY",
        // The address every absolute link of the pages and feeds names.
        "BLOG_PUBLIC_URL",
        "APPLICATIONINSIGHTS_CONNECTION_STRING",
        "APPLICATIONINSIGHTS_AUTHENTICATION_STRING",
        // The front page is served at the root, in place of the host's home page.
        "AzureWebJobsDisableHomepage",
    ];
    for name in required.iter().filter(|name| !settings.contains_key(**name)) {
        problems.push(format!("{} ({plan:?}): app setting {name} is missing", site.at()));
    }
    for name in ["AzureWebJobsStorage__credential", "CosmosDB__credential"] {
        if settings.get(name) != Some(&Some("managedidentity".to_string())) {
            problems.push(format!(
                "{} ({plan:?}): app setting {name} must be 'managedidentity'",
                site.at()
            ));
        }
    }
    for forbidden in ["AzureWebJobsStorage", "CosmosDB", "BLOG_PICTURES"] {
        if settings.contains_key(forbidden) {
            problems.push(format!(
                "{} ({plan:?}): app setting {forbidden} must not be set (no secrets)",
                site.at()
            ));
        }
    }
}

/// The pictures' storage is wired through resources.bicep, modules/storage.bicep (the account,
/// the container, the identity's role) and modules/functionapp.bicep (the settings the handler
/// reads); handed to `check` in that order.
fn pictures_storage(check: impl FnOnce(&[BicepFile], &BicepFile, &BicepFile, &BicepFile)) {
    let files = bicep_files();
    let (main, storage, app) = (
        infra_file(&files, "resources.bicep"),
        infra_file(&files, "modules/storage.bicep"),
        infra_file(&files, "modules/functionapp.bicep"),
    );
    check(&files, main, storage, app);
}

/// The pictures' container exists, private (the handler serves the pictures), named by
/// default as the handler names it.
#[test]
fn the_pictures_have_a_private_container_named_as_the_handler_names_it() {
    pictures_storage(|files, _, storage, _| {
        let containers =
            resources_of_type(files, "Microsoft.Storage/storageAccounts/blobServices/containers");
        let pictures = containers
            .iter()
            .find(|container| expression_at(container, &["name"]) == "picturesContainerName")
            .expect("modules/storage.bicep: a container named picturesContainerName");
        assert_eq!(
            pictures.literal_at(&["properties", "publicAccess"]),
            Some(json!("None")),
            "pictures are served by the handler"
        );
        let parameter = storage
            .statements("parameter_declaration")
            .find(|declaration| {
                first_child_of_kind(*declaration, "identifier")
                    .is_some_and(|id| storage.text(id) == "picturesContainerName")
            })
            .expect("param picturesContainerName");
        assert_eq!(
            expression(storage, *named_children(parameter).last().unwrap()),
            "'pictures'",
            "the handler's default container"
        );
    });
}

/// The app's identity has Storage Blob Data Contributor on the pictures' container, scoped to it.
#[test]
fn the_apps_identity_may_write_the_pictures_container_and_nothing_more() {
    pictures_storage(|_, main, storage, _| {
        let role = storage
            .resources()
            .into_iter()
            .find(|resource| {
                resource.type_name() == "Microsoft.Authorization/roleAssignments"
                    && expression_at(resource, &["scope"]) == "picturesContainer"
            })
            .expect("a role assignment scoped to the pictures' container");
        assert!(
            expression_at(&role, &["properties", "roleDefinitionId"]).contains("pictureRoleId")
        );
        assert_eq!(expression_at(&role, &["properties", "principalId"]), "principalId");
        assert_eq!(
            storage.literal(storage.variable("pictureRoleId").unwrap()),
            Some(json!("ba92f5b4-2d11-453d-a403-e96b0029c9fe")),
            "Storage Blob Data Contributor"
        );
        assert_eq!(
            module_argument(main, "modules/storage.bicep", "principalId"),
            "identity.properties.principalId"
        );
    });
}

/// The app settings the handler reads name the container and the account's blob endpoint,
/// reached with the identity, and give the pictures half the instance's memory on Flex
/// Consumption (a quarter of a dedicated plan's, whose host and extensions run in it too).
#[test]
fn the_app_settings_name_the_pictures_container_and_endpoint_reached_with_the_identity() {
    pictures_storage(|_, main, storage, app| {
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "picturesBlobEndpoint"),
            "storage.outputs.blobEndpoint"
        );
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "picturesContainerName"),
            "storage.outputs.picturesContainerName"
        );
        let outputs = outputs(storage);
        assert_eq!(
            outputs.get("blobEndpoint").map(String::as_str),
            Some("storage.properties.primaryEndpoints.blob")
        );
        let text = &app.source;
        for (setting, value) in [
            ("BLOG_PICTURES__blobServiceUri", "picturesBlobEndpoint"),
            ("BLOG_PICTURES__clientId", "identityClientId"),
            ("BLOG_PICTURES_CONTAINER", "picturesContainerName"),
            (
                "BLOG_PICTURE_MEMORY_MB",
                "string(flex ? instanceMemoryMB / 2 : dedicatedMemoryMB[hostingPlan] / 4)",
            ),
        ] {
            assert!(
                text.contains(&format!("name: '{setting}'\n          value: {value}")),
                "modules/functionapp.bicep: app setting {setting} = {value}"
            );
        }
        assert_eq!(
            blog::PICTURES_SETTING,
            "BLOG_PICTURES",
            "the settings' names are the handler's"
        );
    });
}

/// Every instance size the template allows gives the pictures a memory the handler takes.
#[test]
fn every_instance_size_allowed_gives_the_pictures_a_memory_the_handler_takes() {
    pictures_storage(|_, _, _, app| {
        let sizes =
            parameter_decorators(app, "instanceMemoryMB").expect("instanceMemoryMB is declared");
        let allowed: Vec<u64> = sizes
            .iter()
            .find(|decorator| decorator.starts_with("allowed"))
            .expect("instanceMemoryMB has @allowed")
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|number| number.parse().ok())
            .collect();
        assert!(allowed.contains(&512), "{allowed:?}");
        for megabytes in allowed {
            let memory = (megabytes / 4).to_string();
            let config = blog::Config::from_lookup(|name| {
                (name == "BLOG_PICTURE_MEMORY_MB")
                    .then(|| memory.clone())
                    .or_else(|| (name == "COSMOS_DATABASE").then(|| "blog".into()))
            });
            assert!(config.is_ok(), "instanceMemoryMB {megabytes}: {:?}", config.err());
        }
    });
}

/// The decorators (`@minValue(40)`, …) on `param <name>`, as text without the `@`.
fn parameter_decorators(file: &BicepFile, name: &str) -> Option<Vec<String>> {
    let declaration = file.statements("parameter_declaration").find(|declaration| {
        first_child_of_kind(*declaration, "identifier").is_some_and(|id| file.text(id) == name)
    })?;
    let mut decorators = Vec::new();
    for node in descendants(declaration)
        .into_iter()
        .chain(declaration.prev_named_sibling().map(descendants).unwrap_or_default())
    {
        if node.kind() == "decorator" {
            decorators.push(file.text(node).trim_start_matches('@').to_string());
        }
    }
    Some(decorators)
}

/// What Flex Consumption refuses is absent: `siteConfig` holds only what the plan takes
/// (`ftpsState` is refused with ARM error 51021; the runtime and its versions live in
/// `functionAppConfig`), no app setting of Microsoft's list of Flex Consumption deprecations
/// (learn.microsoft.com/azure/azure-functions/functions-app-settings, "Flex Consumption plan
/// deprecations"), and `maximumInstanceCount` is bounded as the plan bounds it, 40 to 1000.
#[test]
fn nothing_flex_consumption_refuses() {
    let files = bicep_files();
    let sites = resources_of_type(&files, SITE);
    let site = &sites[0];
    let mut problems = Vec::new();
    let site_config = site.file.path_on(site.body, &["properties", "siteConfig"], Hosting::Flex);
    let allowed = ["appSettings", "minTlsVersion", "cors", "http20Enabled"];
    for (key, value) in
        site_config.map(|object| site.file.object_entries(object)).unwrap_or_default()
    {
        let key = key.unwrap_or_default();
        // `flex ? null : …`: left out on Flex Consumption.
        let absent = site.file.on_plan(value, Hosting::Flex).kind() == "null";
        if !allowed.contains(&key.as_str()) && !absent {
            problems.push(format!(
                "{}: siteConfig.{key} is not taken on Flex Consumption (allowed here: {allowed:?})",
                site.at()
            ));
        }
    }
    let deprecated = [
        "FUNCTIONS_EXTENSION_VERSION",
        "FUNCTIONS_WORKER_RUNTIME",
        "FUNCTIONS_WORKER_RUNTIME_VERSION",
        "FUNCTIONS_MAX_HTTP_CONCURRENCY",
        "FUNCTIONS_WORKER_PROCESS_COUNT",
        "FUNCTIONS_WORKER_DYNAMIC_CONCURRENCY_ENABLED",
        "SCM_DO_BUILD_DURING_DEPLOYMENT",
        "WEBSITE_CONTENTAZUREFILECONNECTIONSTRING",
        "WEBSITE_CONTENTOVERVNET",
        "WEBSITE_CONTENTSHARE",
        "WEBSITE_MAX_DYNAMIC_APPLICATION_SCALE_OUT",
        "WEBSITE_NODE_DEFAULT_VERSION",
        "WEBSITE_RUN_FROM_PACKAGE",
        "WEBSITE_SKIP_CONTENTSHARE_VALIDATION",
        "WEBSITE_VNET_ROUTE_ALL",
    ];
    for setting in setting_entries(site, Hosting::Flex) {
        let name = site.file.property(setting, "name").and_then(|name| site.file.literal(name));
        if let Some(Value::String(name)) = name
            && deprecated.contains(&name.as_str())
        {
            problems
                .push(format!("{}: app setting {name} is refused on Flex Consumption", site.at()));
        }
    }
    for file in &files {
        let Some(decorators) = parameter_decorators(file, "maximumInstanceCount") else { continue };
        for bound in ["minValue(40)", "maxValue(1000)"] {
            if !decorators.iter().any(|decorator| decorator == bound) {
                problems.push(format!(
                    "{}: param maximumInstanceCount needs @{bound} (found {decorators:?})",
                    shown(&file.path)
                ));
            }
        }
    }
    assert_no_problems("Flex Consumption", &problems);
}

/// On a dedicated plan (`hostingPlan` other than `flex`) the app has what Flex Consumption takes
/// from `functionAppConfig` and refuses elsewhere: the host's version and the custom runtime as
/// app settings, the package run as azd's zip deploy leaves it, Always On (an idle app on a
/// dedicated plan is woken by HTTP alone, and the change-feed functions would stop), an empty
/// `linuxFxVersion` (Microsoft's stack data for a custom handler on Linux); no
/// `functionAppConfig`. The plan is Linux, one instance of the size asked for. The sizes offered
/// are the same in every file, and `handler cost --hosting-plan` prices each of them.
#[test]
fn a_dedicated_plan_has_what_flex_consumption_takes_elsewhere() {
    let files = bicep_files();
    let app_file = infra_file(&files, "modules/functionapp.bicep");
    let site = only_resource(app_file, SITE);
    let settings = literal_settings(&site, Hosting::Dedicated);
    for (name, value) in [
        ("FUNCTIONS_EXTENSION_VERSION", "~4"),
        ("FUNCTIONS_WORKER_RUNTIME", "custom"),
        ("WEBSITE_RUN_FROM_PACKAGE", "1"),
    ] {
        assert_eq!(settings.get(name), Some(&Some(value.to_owned())), "{name} on a dedicated plan");
    }
    let dedicated = |path: &[&str]| {
        site.file
            .path_on(site.body, path, Hosting::Dedicated)
            .and_then(|node| site.file.literal(node))
    };
    assert_eq!(dedicated(&["properties", "siteConfig", "alwaysOn"]), Some(json!(true)));
    assert_eq!(dedicated(&["properties", "siteConfig", "linuxFxVersion"]), Some(json!("")));
    assert_eq!(dedicated(&["properties", "functionAppConfig"]), Some(Value::Null));
    let plan = only_resource(app_file, "Microsoft.Web/serverfarms");
    let on = |path: &[&str], hosting| {
        plan.file.path_on(plan.body, path, hosting).map(|node| expression(plan.file, node))
    };
    assert_eq!(on(&["kind"], Hosting::Dedicated).as_deref(), Some("'linux'"));
    assert_eq!(on(&["sku", "name"], Hosting::Dedicated).as_deref(), Some("hostingPlan"));
    assert_eq!(on(&["sku", "capacity"], Hosting::Dedicated).as_deref(), Some("1"));
    assert_eq!(on(&["sku", "tier"], Hosting::Flex).as_deref(), Some("'FlexConsumption'"));
    assert_eq!(plan.literal_at(&["properties", "reserved"]), Some(json!(true)), "Linux");

    let mut offered = Vec::new();
    for file in ["main.bicep", "resources.bicep", "modules/functionapp.bicep"] {
        let decorators = parameter_decorators(infra_file(&files, file), "hostingPlan")
            .expect("hostingPlan is declared");
        let allowed = decorators
            .iter()
            .find(|decorator| decorator.starts_with("allowed"))
            .expect("hostingPlan has @allowed");
        let sizes: Vec<String> =
            allowed.split('\'').skip(1).step_by(2).map(str::to_owned).collect();
        offered.push((file, sizes));
    }
    assert!(
        offered.iter().all(|(_, sizes)| sizes == &offered[0].1),
        "the same sizes everywhere: {offered:?}"
    );
    assert_eq!(
        parameter_mappings().get("hostingPlan").map(String::as_str),
        Some("BLOG_HOSTING_PLAN")
    );
    for size in &offered[0].1 {
        let priced = std::process::Command::new(env!("CARGO_BIN_EXE_handler"))
            .args(["cost", "--views-per-day", "1000", "--hosting-plan", size])
            .output()
            .expect("handler runs");
        assert!(
            priced.status.success(),
            "handler cost --hosting-plan {size}: {}",
            String::from_utf8_lossy(&priced.stderr)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Sign-in, the operator, and what the deployment hands on (issue: one command deploys a blog
// people can sign in to)
// ---------------------------------------------------------------------------------------------

/// The regions where Flex Consumption is offered, as Microsoft's azd samples for the plan allow
/// them (Azure-Samples/functions-quickstart-dotnet-azd, infra/main.bicep at 9633052, 2026-02-21;
/// the same list in mcp-sdk-functions-hosting-python at 42f632c), without the canary region
/// eastus2euap that ordinary subscriptions cannot use. `az functionapp
/// list-flexconsumption-locations` gives today's list.
const FLEX_CONSUMPTION_REGIONS: [&str; 31] = [
    "australiaeast",
    "australiasoutheast",
    "brazilsouth",
    "canadacentral",
    "centralindia",
    "centralus",
    "eastasia",
    "eastus",
    "eastus2",
    "francecentral",
    "germanywestcentral",
    "italynorth",
    "japaneast",
    "koreacentral",
    "northcentralus",
    "northeurope",
    "norwayeast",
    "southafricanorth",
    "southcentralus",
    "southeastasia",
    "southindia",
    "spaincentral",
    "swedencentral",
    "uaenorth",
    "uksouth",
    "ukwest",
    "westcentralus",
    "westeurope",
    "westus",
    "westus2",
    "westus3",
];

/// `location` takes only a Flex Consumption region: anywhere else the deployment would fail at
/// the plan, after the account and the app registration were already made.
#[test]
fn location_is_a_flex_consumption_region() {
    let files = bicep_files();
    let (main, resources) =
        (infra_file(&files, "main.bicep"), infra_file(&files, "resources.bicep"));
    let decorators = parameter_decorators(main, "location").expect("main.bicep: param location");
    let allowed = decorators
        .iter()
        .find(|decorator| decorator.starts_with("allowed("))
        .expect("param location has @allowed");
    let regions: Vec<String> = allowed
        .trim_start_matches("allowed(")
        .trim_end_matches(')')
        .split_whitespace()
        .filter(|word| word.starts_with('\''))
        .map(|word| word.trim_matches('\'').to_owned())
        .collect();
    assert_eq!(
        regions, FLEX_CONSUMPTION_REGIONS,
        "the allowed regions are the Flex Consumption list"
    );
    assert!(
        decorators.iter().any(|decorator| decorator.contains("type: 'location'")),
        "azd's location prompt: {decorators:?}"
    );
    for module in [
        "modules/functionapp.bicep",
        "modules/cosmos.bicep",
        "modules/storage.bicep",
        "modules/monitoring.bicep",
    ] {
        assert_eq!(
            module_argument(resources, module, "location"),
            "location",
            "{module} is deployed in the guarded region"
        );
    }
    assert_eq!(module_argument(main, "resources.bicep", "location"), "location");
    // azd filters its region prompt by @allowed only for a subscription-scoped template deployed
    // with a parameters file whose `location` is AZURE_LOCATION and has no default (azure-dev
    // bicep_provider.go: EnsureEnv, ensureParameters, locationParameterFilterImpl); and a region
    // refused there stops the deployment before the resource group, part of it, exists.
    assert!(
        main.source.contains("targetScope = 'subscription'"),
        "main.bicep is subscription-scoped"
    );
    assert_eq!(
        main.parameters().get("location"),
        Some(&false),
        "location has no default: azd asks for it"
    );
    assert_eq!(parameter_mappings().get("location").map(String::as_str), Some("AZURE_LOCATION"));
    let group = only_resource(main, "Microsoft.Resources/resourceGroups");
    assert_eq!(
        expression_at(&group, &["location"]),
        "location",
        "the group is made in the guarded region"
    );
    assert!(
        main.source.contains("module blog 'resources.bicep' = {")
            && main.source.contains("scope: group"),
        "everything else is deployed into that group"
    );
}

/// The parsed file `infra/<relative>`.
fn infra_file<'a>(files: &'a [BicepFile], relative: &str) -> &'a BicepFile {
    let path = repo_root().join("infra").join(relative);
    files.iter().find(|file| file.path == path).unwrap_or_else(|| panic!("infra/{relative} exists"))
}

/// The one resource of `type_name` in `file`.
fn only_resource<'a>(file: &'a BicepFile, type_name: &str) -> Resource<'a> {
    let mut found: Vec<Resource> =
        file.resources().into_iter().filter(|resource| resource.type_name() == type_name).collect();
    assert_eq!(found.len(), 1, "one {type_name} in {}", shown(&file.path));
    found.remove(0)
}

/// The expression at `path` in a resource's body, variables followed, as written (whitespace
/// collapsed): for values known only at deployment, what they are made of.
fn expression_at(resource: &Resource, path: &[&str]) -> String {
    let node = resource
        .file
        .path(resource.body, path)
        .unwrap_or_else(|| panic!("{}: no {}", resource.at(), path.join(".")));
    expression(resource.file, node)
}

fn expression(file: &BicepFile, node: Node) -> String {
    file.text(file.resolve(node)).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first item of the array at `path`.
fn first_item<'a>(resource: &Resource<'a>, path: &[&str]) -> Node<'a> {
    let array = resource
        .file
        .path(resource.body, path)
        .unwrap_or_else(|| panic!("{}: no {}", resource.at(), path.join(".")));
    *named_children(resource.file.resolve(array))
        .first()
        .unwrap_or_else(|| panic!("{}: {} is empty", resource.at(), path.join(".")))
}

/// The expression `main.bicep` passes to a module's parameter.
fn module_argument(main: &BicepFile, module_path: &str, parameter: &str) -> String {
    let module = descendants(main.tree.root_node())
        .into_iter()
        .filter(|node| node.kind() == "module_declaration")
        .find(|module| {
            first_child_of_kind(*module, "string")
                .and_then(|path| main.string_literal(path))
                .as_deref()
                == Some(module_path)
        })
        .unwrap_or_else(|| panic!("{} calls {module_path}", shown(&main.path)));
    let body = resource_body(module).expect("a module has a body");
    let argument = main
        .path(body, &["params", parameter])
        .unwrap_or_else(|| panic!("{module_path}: no param {parameter}"));
    expression(main, argument)
}

/// The output declarations of a file: name → expression.
fn outputs(file: &BicepFile) -> BTreeMap<String, String> {
    file.statements("output_declaration")
        .filter_map(|declaration| {
            let name = first_child_of_kind(declaration, "identifier")?;
            let value = named_children(declaration).last().copied()?;
            Some((file.text(name).to_owned(), expression(file, value)))
        })
        .collect()
}

/// The Graph extension is used where Graph resources are, declared in bicepconfig.json, and its
/// version is the one whose types are vendored here (so that the type check above is the
/// compiler's).
#[test]
fn extensions_are_declared_and_typed() {
    let declared = declared_extensions();
    let mut problems = Vec::new();
    for file in bicep_files() {
        let uses_graph = file
            .resources()
            .iter()
            .any(|resource| resource.type_name().starts_with("Microsoft.Graph/"));
        if uses_graph != file.extensions.iter().any(|alias| alias == "microsoftGraphV1") {
            problems.push(format!(
                "{}: Graph resources and `extension microsoftGraphV1` go together",
                shown(&file.path)
            ));
        }
    }
    let reference =
        declared.get("microsoftGraphV1").expect("bicepconfig.json declares microsoftGraphV1");
    let version = reference
        .strip_prefix("br:mcr.microsoft.com/bicep/extensions/microsoftgraph/v1.0:")
        .unwrap_or_else(|| panic!("microsoftGraphV1 is the Graph v1.0 extension, not {reference}"));
    let types = repo_root().join(format!("tests/bicep-types/microsoft.graph@v1.0-{version}.json"));
    if !types.is_file() {
        problems.push(format!(
            "the Graph types of extension version {version} are not vendored: {}",
            shown(&types)
        ));
    }
    assert_no_problems("Bicep extensions", &problems);
}

/// What Entra ID and App Service Authentication need for the pages' "Sign in" and for API
/// tokens is wired through three files: resources.bicep, modules/signin.bicep (the registration,
/// its credential) and modules/functionapp.bicep (the app's authentication settings,
/// `sites/config`). The tests below check one link each.
struct SignIn<'a> {
    main: &'a BicepFile,
    signin: &'a BicepFile,
    app: &'a BicepFile,
    registration: Resource<'a>,
    auth: Resource<'a>,
}

/// Hands the sign-in's files, parsed, to `check`.
fn sign_in(check: impl FnOnce(&SignIn<'_>)) {
    let files = bicep_files();
    let (main, signin, app) = (
        infra_file(&files, "resources.bicep"),
        infra_file(&files, "modules/signin.bicep"),
        infra_file(&files, "modules/functionapp.bicep"),
    );
    let registration = only_resource(signin, "Microsoft.Graph/applications");
    let auth = only_resource(app, "Microsoft.Web/sites/config");
    check(&SignIn { main, signin, app, registration, auth });
}

/// The tenant's own v2.0 issuer, as Bicep says it.
const V2_ISSUER: &str = "'${environment().authentication.loginEndpoint}${tenant().tenantId}/v2.0'";

/// A web redirect URI is App Service Authentication's callback on each host people sign in at:
/// the app's own host name, and the Front Door endpoint's when there is one; the registration
/// issues ID tokens.
#[test]
fn sign_in_redirects_to_app_service_authentications_callback_on_the_apps_host() {
    sign_in(|SignIn { main, signin, registration, .. }| {
        let redirects =
            registration.file.path(registration.body, &["web", "redirectUris"]).unwrap();
        assert_eq!(
            expression(signin, redirects),
            "[for hostName in hostNames: 'https://${hostName}/.auth/login/aad/callback']",
            "one callback per host"
        );
        assert_eq!(
            module_argument(main, "modules/signin.bicep", "hostNames"),
            "frontDoor ? [appHostName, edge.outputs.hostName] : [appHostName]"
        );
        assert_eq!(
            expression(main, main.variable("appHostName").unwrap()),
            "'${names.functionApp}.azurewebsites.net'"
        );
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "appName"),
            "names.functionApp"
        );
        assert_eq!(
            registration.literal_at(&["web", "implicitGrantSettings", "enableIdTokenIssuance"]),
            Some(json!(true))
        );
    });
}

/// The identifier URI, of a form Entra accepts, is an allowed audience; so is the client id,
/// the audience of v2.0 tokens, which are what the registration asks for; the app's client id
/// is the registration's.
#[test]
fn sign_in_audiences_are_the_identifier_uri_and_the_client_id() {
    sign_in(|SignIn { main, signin, registration, auth, .. }| {
        assert_eq!(
            expression(signin, first_item(registration, &["identifierUris"])),
            "'api://${tenant().tenantId}/${uniqueName}'"
        );
        assert_eq!(outputs(signin)["identifierUri"], "'api://${tenant().tenantId}/${uniqueName}'");
        assert_eq!(
            registration.literal_at(&["api", "requestedAccessTokenVersion"]),
            Some(json!(2))
        );
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "authAudiences"),
            "filter([signInClientId, signInIdentifierUri], audience => !empty(audience))"
        );
        let main_variable = |name: &str| {
            expression(
                main,
                main.variable(name).unwrap_or_else(|| panic!("resources.bicep: var {name}")),
            )
        };
        assert!(main_variable("signInIdentifierUri").contains("signIn.outputs.identifierUri"));
        assert!(main_variable("signInClientId").contains("signIn.outputs.clientId"));
        assert_eq!(outputs(signin)["clientId"], "registration.appId");
        assert_eq!(
            expression_at(
                auth,
                &[
                    "properties",
                    "identityProviders",
                    "azureActiveDirectory",
                    "validation",
                    "allowedAudiences"
                ]
            ),
            "authAudiences"
        );
        assert_eq!(
            expression_at(
                auth,
                &[
                    "properties",
                    "identityProviders",
                    "azureActiveDirectory",
                    "registration",
                    "clientId"
                ]
            ),
            "authClientId"
        );
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "authClientId"),
            "createSignIn ? signIn.outputs.clientId : authClientId"
        );
    });
}

/// The issuer is the tenant's own v2.0 one, or `organizations` when other tenants may sign in.
#[test]
fn sign_in_issuer_is_the_tenants_or_organizations_when_other_tenants_may_sign_in() {
    sign_in(|SignIn { main, registration, auth, .. }| {
        assert_eq!(
            expression_at(
                auth,
                &[
                    "properties",
                    "identityProviders",
                    "azureActiveDirectory",
                    "registration",
                    "openIdIssuer"
                ]
            ),
            format!(
                "authMultipleTenants ? '${{environment().authentication.loginEndpoint}}organizations/v2.0' : {V2_ISSUER}"
            )
        );
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "authMultipleTenants"),
            "createSignIn && signInAudience == 'AzureADMultipleOrgs'"
        );
        assert_eq!(expression_at(registration, &["signInAudience"]), "signInAudience");
        assert_eq!(
            module_argument(main, "modules/signin.bicep", "signInAudience"),
            "signInAudience"
        );
    });
}

/// The Azure CLI is pre-authorized for the one scope, a delegated one, by the scope's own id.
#[test]
fn sign_in_pre_authorizes_the_azure_cli_for_its_one_scope() {
    sign_in(|SignIn { main, signin, registration, .. }| {
        let scope = first_item(registration, &["api", "oauth2PermissionScopes"]);
        let pre_authorized = registration.file.resolve(
            registration
                .file
                .path(registration.body, &["api", "preAuthorizedApplications"])
                .unwrap(),
        );
        assert_eq!(pre_authorized.kind(), "for_statement", "one pre-authorization per client");
        let pre_authorized = pre_authorized.child_by_field_name("body").unwrap();
        let scope_id = signin.property(scope, "id").map(|id| signin.text(id).to_owned());
        let permitted = signin
            .path(pre_authorized, &["delegatedPermissionIds"])
            .map(|ids| signin.text(named_children(ids)[0]).to_owned());
        assert_eq!(scope_id, permitted, "the pre-authorization names the scope's id");
        assert_eq!(
            module_argument(main, "modules/signin.bicep", "preAuthorizedAppIds"),
            "[ azureCliAppId ]"
        );
        assert_eq!(
            main.literal(main.variable("azureCliAppId").unwrap()),
            Some(json!("04b07795-8ddb-461a-bbee-02f9e1bf7b46"))
        );
        assert_eq!(
            signin.literal(signin.property(scope, "type").unwrap()),
            Some(json!("User")),
            "a delegated scope"
        );
    });
}

/// The sign-in's OpenID Connect scopes are declared, for an administrator's one consent.
#[test]
fn sign_in_declares_the_openid_connect_scopes() {
    sign_in(|SignIn { signin, registration, .. }| {
        let graph = first_item(registration, &["requiredResourceAccess"]);
        assert_eq!(
            signin.literal(signin.property(graph, "resourceAppId").unwrap()),
            Some(json!("00000003-0000-0000-c000-000000000000"))
        );
        assert_eq!(
            signin.literal(signin.property(graph, "resourceAccess").unwrap()),
            Some(json!([
                {"id": "37f7f235-527c-4136-accd-4a02d197296e", "type": "Scope"},
                {"id": "14dad69e-099b-42c9-810b-d002981feec1", "type": "Scope"},
                {"id": "64a6cdd6-aab1-4aaf-94b8-3cc8405e90d0", "type": "Scope"}
            ])),
            "openid, profile, email"
        );
    });
}

/// Only the blog's own sign-in, the Azure CLI and the applications the operator names may
/// call with a token: without the policy, any application of the tenant could.
#[test]
fn only_the_sign_in_the_azure_cli_and_named_applications_may_call_with_a_token() {
    sign_in(|SignIn { main, auth, .. }| {
        let policy = [
            "properties",
            "identityProviders",
            "azureActiveDirectory",
            "validation",
            "defaultAuthorizationPolicy",
        ];
        assert_eq!(
            expression_at(auth, &[&policy[..], &["allowedApplications"]].concat()),
            "authAllowedApplications"
        );
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "authAllowedApplications"),
            "union([signInClientId, azureCliAppId], apiClientApplicationIds, pipelineAppIds)"
        );
        assert_eq!(
            expression(
                main,
                main.variable("pipelineAppIds").expect("resources.bicep: var pipelineAppIds")
            ),
            "!empty(pipelineIdentityId) ? [pipelineIdentity.outputs.clientId] : !empty(pipelineClientId) ? [pipelineClientId] : []",
            "the pipeline's client id, whichever kind of principal azd made"
        );
    });
}

/// The managed identity is the registration's credential (issuer, subject and audience), the
/// registration has a service principal and no client secret.
#[test]
fn sign_in_credential_is_the_managed_identity_and_no_secret() {
    sign_in(|SignIn { main, signin, registration, .. }| {
        let credential =
            only_resource(signin, "Microsoft.Graph/applications/federatedIdentityCredentials");
        assert_eq!(expression_at(&credential, &["issuer"]), V2_ISSUER);
        assert_eq!(expression_at(&credential, &["subject"]), "credentialPrincipalId");
        assert_eq!(
            module_argument(main, "modules/signin.bicep", "credentialPrincipalId"),
            "signInIdentity.properties.principalId"
        );
        assert_eq!(
            credential.literal_at(&["audiences"]),
            Some(json!(["api://AzureADTokenExchange"]))
        );
        assert!(
            expression_at(&credential, &["name"]).starts_with("'${registration.uniqueName}/"),
            "a child is named <app>/<credential>"
        );
        only_resource(signin, "Microsoft.Graph/servicePrincipals");
        assert!(
            registration.file.path(registration.body, &["passwordCredentials"]).is_none(),
            "no client secret"
        );
    });
}

/// `clientSecretSettingName` names an app setting holding the credential identity's client id;
/// the app's own identity's client id is passed apart.
#[test]
fn sign_in_secret_setting_holds_the_credential_identitys_client_id() {
    sign_in(|SignIn { main, app, auth, .. }| {
        let setting = auth.literal_at(&[
            "properties",
            "identityProviders",
            "azureActiveDirectory",
            "registration",
            "clientSecretSettingName",
        ]);
        assert_eq!(setting, Some(json!("OVERRIDE_USE_MI_FIC_ASSERTION_CLIENTID")));
        let site = only_resource(app, "Microsoft.Web/sites");
        let holds_client_id = setting_entries(&site, Hosting::Flex).into_iter().any(|entry| {
            app.property(entry, "name").and_then(|name| app.literal(name)) == setting
                && app.property(entry, "value").map(|value| expression(app, value)).as_deref()
                    == Some("signInIdentityClientId")
        });
        assert!(holds_client_id, "an app setting named {setting:?} holds signInIdentityClientId");
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "signInIdentityClientId"),
            "signInIdentity.properties.clientId"
        );
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "identityClientId"),
            "identity.properties.clientId"
        );
    });
}

/// azd deploys the service to the site with its tag.
#[test]
fn azd_deploys_the_service_to_the_site_its_tag_names() {
    sign_in(|SignIn { app, .. }| {
        let site = only_resource(app, "Microsoft.Web/sites");
        assert!(
            expression_at(&site, &["tags"]).contains("'azd-service-name': 'blog'"),
            "{}",
            expression_at(&site, &["tags"])
        );
    });
}

/// The registration's credential is an identity of its own ("Use a managed identity instead of a
/// secret" asks that it be used for nothing else): assigned to the app beside the app's identity,
/// named by the sign-in setting only, and given no role, so a token it gets opens no data.
#[test]
fn the_sign_in_credential_is_an_identity_used_for_nothing_else() {
    let files = bicep_files();
    let (main, app) =
        (infra_file(&files, "resources.bicep"), infra_file(&files, "modules/functionapp.bicep"));
    let mut identities =
        resources_of_type(&files, "Microsoft.ManagedIdentity/userAssignedIdentities");
    identities.retain(|identity| !identity.existing); // the pipeline's, read only
    let symbols: BTreeSet<&str> =
        identities.iter().map(|identity| identity.symbol.as_str()).collect();
    assert_eq!(
        symbols,
        BTreeSet::from(["identity", "signInIdentity"]),
        "two identities: the app's, and the credential"
    );
    let name_of = |symbol: &str| {
        identities
            .iter()
            .find(|identity| identity.symbol == symbol)
            .map(|i| expression_at(i, &["name"]))
    };
    assert_eq!(
        name_of("signInIdentity").as_deref(),
        Some("names.signInIdentity"),
        "a name of its own"
    );
    assert_eq!(name_of("identity").as_deref(), Some("names.identity"));
    let names = main.variable("names").expect("resources.bicep: var names");
    assert!(main.path(names, &["signInIdentity"]).is_some(), "names.signInIdentity is defined");

    let site = only_resource(app, SITE);
    assert_eq!(
        expression_at(&site, &["identity", "userAssignedIdentities"]),
        "{ '${identityId}': {} '${signInIdentityId}': {} }",
        "both identities are the app's"
    );
    assert_eq!(
        module_argument(main, "modules/functionapp.bicep", "signInIdentityId"),
        "signInIdentity.id"
    );

    // Its principal id goes to the federated credential and nowhere else: every role this
    // deployment assigns is given through a module parameter that takes a principal id.
    let mut given_to = Vec::new();
    for module in descendants(main.tree.root_node())
        .into_iter()
        .filter(|node| node.kind() == "module_declaration")
    {
        let path = first_child_of_kind(module, "string")
            .and_then(|path| main.string_literal(path))
            .unwrap_or_default();
        let body = resource_body(module).expect("a module has a body");
        let Some(params) = main.path(body, &["params"]) else { continue };
        for (name, value) in main.object_entries(main.resolve(params)) {
            let name = name.unwrap_or_default();
            if name.to_lowercase().ends_with("principalid")
                && expression(main, value).contains("signInIdentity")
            {
                given_to.push(format!("{path}: {name}"));
            }
        }
    }
    assert_eq!(
        given_to,
        ["modules/signin.bicep: credentialPrincipalId"],
        "the sign-in identity's principal id is the credential's only"
    );
}

/// The operator who deploys may run `handler rebuild-copies` and `dead-letters`: the account
/// takes Entra ID only, so they need the data-plane role, given to `deployer().objectId` unless
/// the parameter says otherwise.
#[test]
fn the_operator_gets_the_cosmos_db_data_role() {
    let files = bicep_files();
    let (main, cosmos) =
        (infra_file(&files, "resources.bicep"), infra_file(&files, "modules/cosmos.bicep"));
    let parameter = main
        .statements("parameter_declaration")
        .find(|declaration| {
            first_child_of_kind(*declaration, "identifier")
                .is_some_and(|id| main.text(id) == "operatorPrincipalId")
        })
        .expect("resources.bicep: param operatorPrincipalId");
    assert_eq!(expression(main, *named_children(parameter).last().unwrap()), "deployer().objectId");
    assert_eq!(
        module_argument(main, "modules/cosmos.bicep", "operatorPrincipalId"),
        "operatorPrincipalId"
    );
    let assignments: Vec<Resource> = cosmos
        .resources()
        .into_iter()
        .filter(|resource| {
            resource.type_name() == "Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments"
        })
        .collect();
    let operator = assignments
        .iter()
        .find(|assignment| {
            expression_at(assignment, &["properties", "principalId"]) == "operatorPrincipalId"
        })
        .expect("a role assignment for the operator");
    assert!(
        expression_at(operator, &["properties", "roleDefinitionId"])
            .ends_with("/sqlRoleDefinitions/${dataContributorRoleId}'")
    );
    assert_eq!(
        cosmos.literal(cosmos.variable("dataContributorRoleId").unwrap()),
        Some(json!("00000000-0000-0000-0000-000000000002"))
    );
    assert!(
        cosmos.text(operator.declaration).contains("if (!empty(operatorPrincipalId))"),
        "an empty operator skips it"
    );
}

/// Every output that azure.yaml, its hooks, the README, ARCHITECTURE.md or docs/ name exists in
/// main.bicep: `properties.outputs.<name>` (az deployment group show --query), `${<name>:?…}` in
/// the hooks, and `azd env get-value <name>`.
#[test]
fn every_output_the_documentation_names_exists() {
    let files = bicep_files();
    let declared = outputs(infra_file(&files, "main.bicep"));
    for name in outputs(infra_file(&files, "resources.bicep")).keys() {
        assert_eq!(
            declared.get(name).map(String::as_str),
            Some(format!("blog.outputs.{name}").as_str()),
            "main.bicep passes resources.bicep's output {name} on to azd"
        );
    }
    let root = repo_root();
    let mut documents =
        vec![root.join("README.md"), root.join("ARCHITECTURE.md"), root.join("azure.yaml")];
    documents.extend(files_with_extension(&root.join("docs"), "md"));
    documents.extend(files_with_extension(&root.join("infra/hooks"), "sh"));
    let mut named = 0;
    let mut problems = Vec::new();
    for document in documents {
        let text = fs::read_to_string(&document).unwrap_or_default();
        let mut names = Vec::new();
        for marker in ["properties.outputs.", "azd env get-value ", "${"] {
            for (at, _) in text.match_indices(marker) {
                let name: String = text[at + marker.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let hook_check =
                    marker != "${" || text[at + marker.len() + name.len()..].starts_with(":?");
                if !name.is_empty() && name.starts_with("BLOG_") && hook_check {
                    names.push(name);
                }
            }
        }
        for name in names {
            named += 1;
            if !declared.contains_key(&name) {
                problems.push(format!(
                    "{} names output {name}, which main.bicep does not declare",
                    shown(&document)
                ));
            }
        }
    }
    assert!(named > 0, "the documentation reads the deployment's outputs somewhere");
    assert_no_problems("outputs", &problems);
}

/// API versions whose type definitions exist but which Azure does not serve: a deployment that
/// uses one fails with `NoRegisteredProviderFound`. Each with where that is reported.
const UNSERVED_API_VERSIONS: [(&str, &str); 1] = [(
    "Microsoft.Insights/scheduledQueryRules@2023-12-01",
    "'No registered resource provider found for location … and API version 2023-12-01 for type scheduledqueryrules' \
     (the served versions end at 2022-06-15 for GA): Azure/bicep-types-az issues 2185 (labelled inaccuracy) and 2318, \
     Azure/bicep 15192, all open",
)];

#[test]
fn no_resource_uses_an_api_version_azure_does_not_serve() {
    let mut problems = Vec::new();
    for file in bicep_files() {
        for resource in file.resources() {
            if let Some((_, evidence)) = UNSERVED_API_VERSIONS
                .iter()
                .find(|(unserved, _)| *unserved == resource.type_and_version)
            {
                problems.push(format!(
                    "{}: {} is not served: {evidence}",
                    resource.at(),
                    resource.type_and_version
                ));
            }
        }
    }
    assert_no_problems("API versions Azure does not serve", &problems);
}

/// The operator's workbook and alerts. Every query the workbook shows is a file of
/// `infra/queries` (where `tests/telemetry.rs` holds each one to the handler's real lines), the
/// workbook and the alerts read the Application Insights component the host writes to, each
/// alert's measure is a column its query makes, and alerts go to an address only when one is
/// given. The alerts' operators avoid `Equals`, which the type definitions offer and the service
/// refuses (it wants `Equal`: Azure/bicep-types-az issues 2308 and 2643, open). The tests below
/// check one of these each, on the files handed to `check`: all, resources.bicep and
/// modules/operations.bicep.
fn operations(check: impl FnOnce(&[BicepFile], &BicepFile, &BicepFile)) {
    let files = bicep_files();
    let (main, operations) =
        (infra_file(&files, "resources.bicep"), infra_file(&files, "modules/operations.bicep"));
    check(&files, main, operations);
}

/// The operations read the Application Insights component the host writes to, and alert the
/// address given, or the deployer's.
#[test]
fn the_operations_read_the_hosts_application_insights_and_alert_the_address_given() {
    operations(|files, main, _| {
        assert_eq!(
            module_argument(main, "modules/operations.bicep", "appInsightsId"),
            "monitoring.outputs.appInsightsId"
        );
        assert_eq!(
            outputs(infra_file(files, "modules/monitoring.bicep"))
                .get("appInsightsId")
                .map(String::as_str),
            Some("appInsights.id")
        );
        assert_eq!(
            module_argument(main, "modules/operations.bicep", "alertEmail"),
            "empty(alertEmail) ? deployerMailbox : alertEmail"
        );
        assert_eq!(
            parameter_mappings().get("alertEmail").map(String::as_str),
            Some("BLOG_ALERT_EMAIL")
        );
    });
}

/// The workbook, shared and named the same each deployment, shows every query file of
/// `infra/queries` that is no alert's; every query file is shown or alerted on.
#[test]
fn the_workbook_shows_every_query_of_infra_queries() {
    operations(|_, _, operations| {
        let workbook = only_resource(operations, "Microsoft.Insights/workbooks");
        assert_eq!(workbook.literal_at(&["kind"]), Some(json!("shared")));
        assert!(
            expression_at(&workbook, &["name"]).starts_with("guid("),
            "a workbook's name is a GUID, the same each deployment"
        );
        assert_eq!(expression_at(&workbook, &["properties", "sourceId"]), "appInsightsId");
        let loaded: BTreeSet<String> =
            load_text_content_calls(operations).into_iter().map(|(_, target)| target).collect();
        let queries: BTreeSet<String> =
            files_with_extension(&repo_root().join("infra/queries"), "kql")
                .iter()
                .map(|path| format!("../queries/{}", path.file_name().unwrap().to_string_lossy()))
                .collect();
        assert_eq!(loaded, queries, "every query file is shown or alerted on, and only those");
        let serialized = expression_at(&workbook, &["properties", "serializedData"]);
        for query in queries.iter().filter(|query| !query.contains("/alert-")) {
            assert!(
                serialized.contains(&format!("loadTextContent('{query}')")),
                "the workbook shows {query}"
            );
        }
    });
}

/// Each alert is a log alert on the component, to the action group, on a query file of
/// `infra/queries` that neither bins nor dates its rows, with an operator the service takes and
/// a measure its query makes.
#[test]
fn each_alert_is_a_log_alert_on_a_query_file_with_a_measure_it_makes() {
    operations(|files, _, operations| {
        let alerts = resources_of_type(files, "Microsoft.Insights/scheduledQueryRules");
        assert_eq!(alerts.len(), 3, "dead letters, 5xx, lag");
        for alert in &alerts {
            assert_eq!(alert.literal_at(&["kind"]), Some(json!("LogAlert")), "{}", alert.at());
            assert_eq!(
                expression_at(alert, &["properties", "scopes"]),
                "[ appInsightsId ]",
                "{}",
                alert.at()
            );
            assert_eq!(
                expression_at(alert, &["properties", "actions"]),
                "{ actionGroups: [ actionGroup.id ] }",
                "{}",
                alert.at()
            );
            // The component has no line yet at the first deployment, and a query over a table that
            // does not exist yet fails Azure's validation of the rule (azure-resource-manager-schemas
            // issue 567; mspnp/aks-baseline pull request 422).
            assert_eq!(
                alert.literal_at(&["properties", "skipQueryValidation"]),
                Some(json!(true)),
                "{}",
                alert.at()
            );
            let condition = first_item(alert, &["properties", "criteria", "allOf"]);
            let field = |name: &str| {
                operations.path(condition, &[name]).map(|node| expression(operations, node))
            };
            let query = field("query").unwrap_or_default();
            let file = query
                .strip_prefix("loadTextContent('")
                .and_then(|rest| rest.strip_suffix("')"))
                .unwrap_or_else(|| {
                    panic!("{}: the query is a file of infra/queries: {query}", alert.at())
                });
            let text = fs::read_to_string(repo_root().join("infra/modules").join(file)).unwrap();
            // The rule keeps the rows of its window itself; bins by the clock would cut a sliding
            // window in two halves judged apart (Azure Monitor, "Create a log search alert rule").
            let code: String =
                text.lines().filter(|line| !line.trim_start().starts_with("//")).collect();
            assert!(
                !code.contains("bin(") && !code.contains("ago("),
                "{}: {file} bins or dates its rows",
                alert.at()
            );
            let operator = field("operator").unwrap_or_default();
            assert!(
                [
                    "'GreaterThan'",
                    "'GreaterThanOrEqual'",
                    "'LessThan'",
                    "'LessThanOrEqual'",
                    "'Equal'"
                ]
                .contains(&operator.as_str()),
                "{}: operator {operator}",
                alert.at()
            );
            if let Some(column) = field("metricMeasureColumn") {
                let column = column.trim_matches('\'');
                assert!(
                    text.contains(&format!("{column} =")) || text.contains(&format!(", {column}")),
                    "{}: the query {file} makes no column {column}",
                    alert.at()
                );
            }
        }
    });
}

/// The action group is global, with a short name Azure takes.
#[test]
fn the_alerts_action_group_is_global_with_a_short_name_azure_takes() {
    operations(|_, _, operations| {
        let group = only_resource(operations, "Microsoft.Insights/actionGroups");
        assert_eq!(group.literal_at(&["location"]), Some(json!("global")));
        let short = group.literal_at(&["properties", "groupShortName"]).unwrap();
        assert!(
            short.as_str().unwrap().len() <= 12,
            "groupShortName is at most 12 characters: {short}"
        );
    });
}

/// Every alert reaches someone by default: the address given, else the person who deployed (by
/// their sign-in name, unless they are a guest or a service principal), else the subscription's
/// Owners; and the receiver a person's deployment chose is an output azd keeps and `azd pipeline
/// config` carries, so that CI deploys the same one.
#[test]
fn the_alerts_reach_someone_by_default() {
    let files = bicep_files();
    let (resources, operations) =
        (infra_file(&files, "resources.bicep"), infra_file(&files, "modules/operations.bicep"));
    let variable = |name: &str| {
        expression(
            resources,
            resources.variable(name).unwrap_or_else(|| panic!("resources.bicep: var {name}")),
        )
    };
    assert_eq!(variable("alertReceiver"), "empty(alertEmail) ? deployerMailbox : alertEmail");
    // A service principal's deployer() has no userPrincipalName: read safely, never dereferenced.
    assert_eq!(variable("deployerName"), "deployer().?userPrincipalName ?? ''");
    assert_eq!(variable("deployerMailbox"), "contains(deployerName, '#EXT#') ? '' : deployerName");
    assert_eq!(
        outputs(resources).get("BLOG_ALERT_EMAIL").map(String::as_str),
        Some("empty(alertEmail) ? deployerMailbox : alertEmail")
    );
    assert_eq!(
        parameter_mappings().get("alertEmail").map(String::as_str),
        Some("BLOG_ALERT_EMAIL")
    );

    let group = only_resource(operations, "Microsoft.Insights/actionGroups");
    assert!(!operations.text(group.declaration).contains("if ("), "the action group always exists");
    assert_eq!(
        expression_at(&group, &["properties", "emailReceivers"]).split(" ? ").next(),
        Some("empty(alertEmail)")
    );
    let owners = expression_at(&group, &["properties", "armRoleReceivers"]);
    assert!(owners.starts_with("!empty(alertEmail) ? [] :"), "{owners}");
    assert!(
        owners.contains("roleId: '8e3af657-a8ff-443c-a75c-2fe8c4bcb635'"),
        "the built-in Owner role: {owners}"
    );
    for alert in resources_of_type(&files, "Microsoft.Insights/metricAlerts") {
        assert_eq!(
            expression_at(&alert, &["properties", "actions"]),
            "[ { actionGroupId: actionGroup.id } ]",
            "{}",
            alert.at()
        );
    }
}

/// The blog being down fires an alert that does not depend on the handler's own lines: a
/// standard availability test of the front page from five places (Microsoft's recommended
/// least), with its metric alert at five minus two failed places.
#[test]
fn an_availability_test_watches_the_front_page() {
    let files = bicep_files();
    let (resources, operations) =
        (infra_file(&files, "resources.bicep"), infra_file(&files, "modules/operations.bicep"));
    assert_eq!(
        module_argument(resources, "modules/operations.bicep", "frontPageUrl"),
        "'https://${functionApp.outputs.defaultHostName}/'"
    );
    let test = only_resource(operations, "Microsoft.Insights/webtests");
    assert_eq!(test.literal_at(&["kind"]), Some(json!("standard")));
    assert_eq!(test.literal_at(&["properties", "Kind"]), Some(json!("standard")));
    assert_eq!(expression_at(&test, &["properties", "Request", "RequestUrl"]), "frontPageUrl");
    assert_eq!(
        test.literal_at(&["properties", "ValidationRules", "ExpectedHttpStatusCode"]),
        Some(json!(200))
    );
    // Without the hidden-link tag the test is not shown under the component (AVM
    // avm/res/insights/webtest).
    assert!(expression_at(&test, &["tags"]).contains("'hidden-link:${appInsightsId}': 'Resource'"));
    let locations = operations.path(test.body, &["properties", "Locations"]).expect("Locations");
    let count = named_children(locations).iter().filter(|node| node.kind() == "object").count();
    assert_eq!(count, 5, "five places, Microsoft's recommended least");

    let alert = resources_of_type(&files, "Microsoft.Insights/metricAlerts")
        .into_iter()
        .find(|alert| {
            expression_at(alert, &["properties", "criteria"])
                .contains("WebtestLocationAvailabilityCriteria")
        })
        .expect("a metric alert on the availability test");
    assert_eq!(
        expression_at(&alert, &["properties", "scopes"]),
        "[ frontPageTest.id appInsightsId ]"
    );
    assert_eq!(
        alert.literal_at(&["properties", "criteria", "failedLocationCount"]),
        Some(json!(3)),
        "five places minus two"
    );
    assert_eq!(expression_at(&alert, &["properties", "criteria", "webTestId"]), "frontPageTest.id");
    assert_eq!(expression_at(&alert, &["properties", "criteria", "componentId"]), "appInsightsId");
    // The window holds at least one run of each place: the test's largest frequency is 900 s.
    assert_eq!(alert.literal_at(&["properties", "windowSize"]), Some(json!("PT15M")));
}

/// The request-unit budget counts the account's own metric (every request unit: the change-feed
/// functions', the scripts', the operator's), not only the handler's lines; a day's total,
/// evaluated each hour.
#[test]
fn the_request_unit_budget_reads_the_accounts_metric() {
    let files = bicep_files();
    let (resources, operations) =
        (infra_file(&files, "resources.bicep"), infra_file(&files, "modules/operations.bicep"));
    assert_eq!(
        module_argument(resources, "modules/operations.bicep", "cosmosAccountId"),
        "cosmos.outputs.accountId"
    );
    assert_eq!(
        outputs(infra_file(&files, "modules/cosmos.bicep")).get("accountId").map(String::as_str),
        Some("account.id")
    );
    let budget = resources_of_type(&files, "Microsoft.Insights/metricAlerts")
        .into_iter()
        .find(|alert| operations.text(alert.declaration).contains("budgetAlert"))
        .expect("the budget alert");
    assert_eq!(expression_at(&budget, &["properties", "scopes"]), "[ cosmosAccountId ]");
    assert_eq!(budget.literal_at(&["properties", "windowSize"]), Some(json!("P1D")));
    assert_eq!(budget.literal_at(&["properties", "evaluationFrequency"]), Some(json!("PT1H")));
    let criterion = first_item(&budget, &["properties", "criteria", "allOf"]);
    let field =
        |name: &str| operations.path(criterion, &[name]).and_then(|node| operations.literal(node));
    assert_eq!(field("metricNamespace"), Some(json!("Microsoft.DocumentDB/databaseAccounts")));
    assert_eq!(field("metricName"), Some(json!("TotalRequestUnits")));
    assert_eq!(field("timeAggregation"), Some(json!("Total")));
}

/// The workspace takes at most a day's cap of logs (a parameter, from the environment), so that a
/// flood of requests cannot write a month's bill in a day.
#[test]
fn the_logs_have_a_daily_cap() {
    let files = bicep_files();
    let (main, resources, monitoring) = (
        infra_file(&files, "main.bicep"),
        infra_file(&files, "resources.bicep"),
        infra_file(&files, "modules/monitoring.bicep"),
    );
    let workspace = only_resource(monitoring, "Microsoft.OperationalInsights/workspaces");
    assert_eq!(
        expression_at(&workspace, &["properties", "workspaceCapping", "dailyQuotaGb"]),
        "dailyCapGb"
    );
    assert_eq!(
        module_argument(resources, "modules/monitoring.bicep", "dailyCapGb"),
        "logsDailyCapGb"
    );
    assert_eq!(module_argument(main, "resources.bicep", "logsDailyCapGb"), "logsDailyCapGb");
    assert_eq!(main.parameters().get("logsDailyCapGb"), Some(&true), "a default cap");
    assert_eq!(
        parameter_mappings().get("logsDailyCapGb").map(String::as_str),
        Some("BLOG_LOGS_DAILY_CAP_GB")
    );
}

/// The continuation tokens' key stays the same across deployments, from a person's machine and
/// from CI: azd generates it once and keeps it (no `newGuid()`, which made a new key at each
/// deployment and broke every reader's "next page"), and the workflow gives CI the same one.
#[test]
fn the_token_key_changes_only_when_asked() {
    let files = bicep_files();
    let (main, resources) =
        (infra_file(&files, "main.bicep"), infra_file(&files, "resources.bicep"));
    for file in [main, resources] {
        assert!(
            !file.source.contains("newGuid()"),
            "{}: a key made anew at each deployment",
            shown(&file.path)
        );
    }
    let decorators =
        parameter_decorators(main, "tokenSigningKey").expect("main.bicep: param tokenSigningKey");
    assert!(decorators.iter().any(|decorator| decorator == "secure()"), "{decorators:?}");
    assert!(
        decorators.iter().any(|decorator| decorator.contains("type: 'generate'")),
        "azd generates it once: {decorators:?}"
    );
    assert_eq!(
        main.parameters().get("tokenSigningKey"),
        Some(&false),
        "no default: azd's generated value, or the environment's"
    );
    assert_eq!(
        parameter_mappings().get("tokenSigningKey").map(String::as_str),
        Some("BLOG_TOKEN_KEY")
    );
    assert_eq!(module_argument(main, "resources.bicep", "tokenSigningKey"), "tokenSigningKey");
    assert_eq!(
        module_argument(resources, "modules/functionapp.bicep", "tokenSigningKey"),
        "tokenSigningKey"
    );
}

/// CI may update the sign-in registration and its service principal a person made: the person's
/// deployment adds the pipeline's principal as an owner of both, appending, so that neither
/// deployer removes the other; the principal is found on either of `azd pipeline config`'s
/// paths, the managed identity (by the resource id it keeps) taken first as azd takes it, else
/// the service principal (by its client id).
#[test]
fn the_pipelines_principal_owns_the_registration_and_its_service_principal() {
    let files = bicep_files();
    let (main, resources, signin) = (
        infra_file(&files, "main.bicep"),
        infra_file(&files, "resources.bicep"),
        infra_file(&files, "modules/signin.bicep"),
    );
    assert_eq!(
        parameter_mappings().get("pipelineClientId").map(String::as_str),
        Some("AZURE_PIPELINE_CLIENT_ID")
    );
    assert_eq!(
        parameter_mappings().get("pipelineIdentityId").map(String::as_str),
        Some("AZURE_PIPELINE_MSI_CLIENT_ID")
    );
    assert_eq!(module_argument(main, "resources.bicep", "pipelineClientId"), "pipelineClientId");
    assert_eq!(
        module_argument(main, "resources.bicep", "pipelineIdentityId"),
        "pipelineIdentityId"
    );
    assert_eq!(
        module_argument(resources, "modules/pipeline-principal.bicep", "clientId"),
        "pipelineClientId"
    );
    assert_eq!(
        module_argument(resources, "modules/pipeline-identity.bicep", "resourceId"),
        "pipelineIdentityId"
    );
    assert_eq!(
        module_argument(resources, "modules/signin.bicep", "additionalOwnerIds"),
        "!createSignIn ? [] : !empty(pipelineIdentityId) ? [pipelineIdentity.outputs.principalId] : \
         !empty(pipelineClientId) ? [pipelinePrincipal.outputs.objectId] : []"
    );
    let lookup = infra_file(&files, "modules/pipeline-principal.bicep");
    assert!(
        lookup
            .source
            .contains("resource principal 'Microsoft.Graph/servicePrincipals@v1.0' existing = {")
    );
    let identity = only_resource(
        infra_file(&files, "modules/pipeline-identity.bicep"),
        "Microsoft.ManagedIdentity/userAssignedIdentities",
    );
    assert!(identity.existing, "the pipeline's identity is read, not made");
    assert_eq!(expression_at(&identity, &["scope"]), "resourceGroup(parts[2], parts[4])");
    assert_eq!(expression_at(&identity, &["name"]), "parts[8]");

    let owners = signin.variable("owners").expect("signin.bicep: var owners");
    assert_eq!(
        signin.literal(signin.path(owners, &["relationshipSemantics"]).unwrap()),
        Some(json!("append"))
    );
    assert_eq!(
        expression(signin, signin.path(owners, &["relationships"]).unwrap()),
        "union(empty(ownerObjectId) ? [] : [ownerObjectId], additionalOwnerIds)"
    );
    for type_name in ["Microsoft.Graph/applications", "Microsoft.Graph/servicePrincipals"] {
        let owners = expression_at(&only_resource(signin, type_name), &["owners"]);
        assert!(
            owners.contains("relationships: union(empty(ownerObjectId) ? [] : [ownerObjectId], additionalOwnerIds)"),
            "{type_name}: {owners}"
        );
    }
    let workflow = fs::read_to_string(repo_root().join(".github/workflows/azure-dev.yml")).unwrap();
    assert!(
        workflow.contains("Application.ReadWrite.OwnedBy"),
        "the workflow's setup names the Graph permission"
    );
}

/// The account keeps continuous backup, the 7-day tier (no charge for its storage),
/// which docs/deploy.md's restore relies on; periodic backup, Azure's default, only when asked
/// (an account deployed before, not moved yet).
#[test]
fn the_cosmos_account_keeps_seven_days_of_continuous_backup() {
    let files = bicep_files();
    let (main, cosmos) =
        (infra_file(&files, "resources.bicep"), infra_file(&files, "modules/cosmos.bicep"));
    let account = only_resource(cosmos, "Microsoft.DocumentDB/databaseAccounts");
    assert_eq!(
        expression(cosmos, cosmos.path(account.body, &["properties", "backupPolicy"]).unwrap()),
        "continuousBackup ? continuousBackupPolicy : periodicBackupPolicy"
    );
    let continuous = cosmos.literal(cosmos.variable("continuousBackupPolicy").unwrap()).unwrap();
    assert_eq!(
        continuous,
        json!({"type": "Continuous", "continuousModeProperties": {"tier": "Continuous7Days"}})
    );
    let periodic = cosmos.literal(cosmos.variable("periodicBackupPolicy").unwrap()).unwrap();
    assert_eq!(periodic["type"], "Periodic");
    assert_eq!(
        module_argument(main, "modules/cosmos.bicep", "continuousBackup"),
        "cosmosContinuousBackup"
    );
    let top = infra_file(&files, "main.bicep");
    assert_eq!(
        module_argument(top, "resources.bicep", "cosmosContinuousBackup"),
        "cosmosBackup == 'continuous'"
    );
    assert_eq!(
        top.parameters().get("cosmosBackup"),
        Some(&true),
        "continuous unless BLOG_COSMOS_BACKUP=periodic"
    );
    assert_eq!(
        parameter_mappings().get("cosmosBackup").map(String::as_str),
        Some("BLOG_COSMOS_BACKUP")
    );
    let deploy = fs::read_to_string(repo_root().join("docs/deploy.md")).unwrap();
    for said in
        ["az cosmosdb restore", "--restore-timestamp", "BLOG_COSMOS_ACCOUNT_NAME", "rebuild-copies"]
    {
        assert!(deploy.contains(said), "docs/deploy.md says how to restore: {said}");
    }
}

/// The Front Door (modules/frontdoor.bicep) is off unless asked for, with one parameter; when
/// on, it caches what the handler's `Cache-Control` lets a shared cache keep (caching on, each
/// query string its own page, no rule that overrides the origin's durations), and it bypasses
/// its cache for a request that carries a sign-in: Front Door ignores `Vary` (Microsoft Learn,
/// "Caching with Azure Front Door"), so without the bypass a signed-in reader could be served
/// the anonymous copy of a page. The bypass names the cookies the handler sets and App Service
/// Authentication's session cookie. The tests below check one of these each.
///
/// The open reports of wrong Microsoft.Cdn type definitions (Azure/bicep-types-az 1932:
/// `azureOrigin` refused on an origin; 2178: `secrets` on a classic CDN profile) concern what
/// the modules do not use: they name the origin by host name and have no secret. The profile
/// and endpoint are modules/frontdoor-endpoint.bicep's, deployed before the app.
fn front_door(check: impl FnOnce(&[BicepFile], &BicepFile)) {
    let files = bicep_files();
    check(&files, infra_file(&files, "modules/frontdoor.bicep"));
}

/// Off unless `BLOG_FRONT_DOOR` says standard; deployed only when on, in front of the app,
/// its address handed on.
#[test]
fn the_front_door_is_off_by_default_and_deployed_only_when_asked_for() {
    front_door(|files, front_door| {
        let (main, resources) =
            (infra_file(files, "main.bicep"), infra_file(files, "resources.bicep"));
        let text = |file: &BicepFile| fs::read_to_string(&file.path).unwrap();
        assert!(
            text(main).contains("param frontDoor string = 'none'"),
            "off unless BLOG_FRONT_DOOR says standard"
        );
        assert_eq!(
            parameter_mappings().get("frontDoor").map(String::as_str),
            Some("BLOG_FRONT_DOOR")
        );
        assert_eq!(
            module_argument(main, "resources.bicep", "frontDoor"),
            "frontDoor == 'standard'"
        );
        assert!(text(resources).contains("param frontDoor bool = false"));
        assert!(
            text(resources)
                .contains("module edge 'modules/frontdoor-endpoint.bicep' = if (frontDoor)"),
            "deployed only when on"
        );
        assert!(
            text(resources).contains("module cdn 'modules/frontdoor.bicep' = if (frontDoor)"),
            "deployed only when on"
        );
        assert_eq!(
            module_argument(resources, "modules/frontdoor.bicep", "originHostName"),
            "functionApp.outputs.defaultHostName"
        );
        assert_eq!(
            module_argument(resources, "modules/frontdoor.bicep", "profileName"),
            "edge.outputs.profileName"
        );
        assert_eq!(
            module_argument(resources, "modules/frontdoor.bicep", "endpointName"),
            "edge.outputs.endpointName"
        );
        assert_eq!(
            outputs(resources).get("BLOG_FRONT_DOOR_URL").map(String::as_str),
            Some("frontDoor ? 'https://${edge.outputs.hostName}' : ''")
        );
        let endpoint_module = infra_file(files, "modules/frontdoor-endpoint.bicep");
        assert_eq!(
            outputs(endpoint_module).get("hostName").map(String::as_str),
            Some("endpoint.properties.hostName")
        );
        let existing: Vec<String> = front_door
            .resources()
            .iter()
            .filter(|resource| resource.existing)
            .map(|resource| resource.symbol.clone())
            .collect();
        assert_eq!(
            existing,
            ["profile", "endpoint"],
            "the route's module names the profile and endpoint, made before"
        );
    });
}

/// A Standard profile whose origin is the app, reached by its own host name, and whose route
/// caches each query string as its own page, through the bypass rules.
#[test]
fn the_front_door_routes_to_the_app_by_its_host_name_and_caches_by_query_string() {
    front_door(|files, front_door| {
        let profile = only_resource(
            infra_file(files, "modules/frontdoor-endpoint.bicep"),
            "Microsoft.Cdn/profiles",
        );
        assert_eq!(profile.literal_at(&["sku", "name"]), Some(json!("Standard_AzureFrontDoor")));
        assert_eq!(profile.literal_at(&["location"]), Some(json!("global")));
        let origin = only_resource(front_door, "Microsoft.Cdn/profiles/originGroups/origins");
        assert_eq!(expression_at(&origin, &["properties", "hostName"]), "originHostName");
        assert_eq!(
            expression_at(&origin, &["properties", "originHostHeader"]),
            "originHostName",
            "App Service routes by Host"
        );
        let route = only_resource(front_door, "Microsoft.Cdn/profiles/afdEndpoints/routes");
        assert_eq!(
            route.literal_at(&["properties", "cacheConfiguration", "queryStringCachingBehavior"]),
            Some(json!("UseQueryString"))
        );
        assert_eq!(
            expression_at(&route, &["properties", "ruleSets"]),
            "[ { id: bypassSignedIn.id } ]"
        );
        assert!(
            expression_at(&route, &["dependsOn"]).contains("origin"),
            "a route to an origin group without an origin is refused"
        );
    });
}

/// The conditions of the Front Door's rules, as `name:selector` (`UrlPath:` with its values),
/// each rule checked to turn caching off for its request and to do nothing else.
fn bypassed_by_rules(front_door: &BicepFile) -> BTreeSet<String> {
    let rules = resources_of_type(
        std::slice::from_ref(front_door),
        "Microsoft.Cdn/profiles/ruleSets/rules",
    );
    let mut bypassed = BTreeSet::new();
    for rule in &rules {
        let actions = rule.literal_at(&["properties", "actions"]).unwrap();
        assert_eq!(
            actions,
            json!([{"name": "RouteConfigurationOverride", "parameters": {"typeName": "DeliveryRuleRouteConfigurationOverrideActionParameters"}}]),
            "{}: a route override without cacheConfiguration is caching disabled",
            rule.at()
        );
        let conditions = rule.literal_at(&["properties", "conditions"]).unwrap();
        for condition in conditions.as_array().unwrap() {
            let parameters = &condition["parameters"];
            match condition["name"].as_str().unwrap() {
                "Cookies" | "RequestHeader" => {
                    assert_eq!(parameters["operator"], "Any", "{}", rule.at());
                    bypassed.insert(format!(
                        "{}:{}",
                        condition["name"].as_str().unwrap(),
                        parameters["selector"].as_str().unwrap()
                    ));
                }
                "UrlPath" => {
                    bypassed.insert(format!("UrlPath:{}", parameters["matchValues"]));
                }
                other => panic!("{}: an unexpected condition {other}", rule.at()),
            }
        }
    }
    bypassed
}

/// Every rule turns caching off for its request, and nothing else: for a sign-in (App Service
/// Authentication's session cookie, a token, `/.auth/`) and for a writer just back from a write
/// (the handler's own cookie, which the bypass names as the handler spells it).
#[test]
fn the_front_door_bypasses_its_cache_for_a_sign_in_and_a_writer() {
    front_door(|_, front_door| {
        let bypassed = bypassed_by_rules(front_door);
        for expected in
            ["Cookies:AppServiceAuthSession", "Cookies:blog_wrote", "RequestHeader:Authorization"]
        {
            assert!(bypassed.contains(expected), "no bypass for {expected}: {bypassed:?}");
        }
        assert!(
            bypassed
                .iter()
                .any(|condition| condition.starts_with("UrlPath:") && condition.contains(".auth/")),
            "{bypassed:?}"
        );
        let posts = fs::read_to_string(repo_root().join("src/http/pages/posts.rs")).unwrap();
        assert!(posts.contains("const JUST_WROTE: &str = \"blog_wrote\";"));
    });
}

/// No instance affinity: App Service's ARRAffinity cookie on every returning reader would make
/// each answer personal to the handler, and nothing would be cached.
#[test]
fn the_app_sets_no_instance_affinity_cookie_that_would_defeat_the_cache() {
    front_door(|files, _| {
        let app =
            only_resource(infra_file(files, "modules/functionapp.bicep"), "Microsoft.Web/sites");
        assert_eq!(app.literal_at(&["properties", "clientAffinityEnabled"]), Some(json!(false)));
    });
}

/// The app's own app setting, `name` → the expression of its value.
fn app_settings(site: &Resource) -> BTreeMap<String, String> {
    setting_entries(site, Hosting::Flex)
        .into_iter()
        .filter_map(|entry| {
            let name = site.file.literal(site.file.property(entry, "name")?)?.as_str()?.to_owned();
            Some((name, expression(site.file, site.file.property(entry, "value")?)))
        })
        .collect()
}

/// BLOG_PUBLIC_URL, the address every absolute link of the pages and feeds names (src/config.rs
/// reads it before WEBSITE_HOSTNAME): the Front Door endpoint's host when there is one, read from
/// the endpoint itself, which is deployed before the app and depends on nothing of it (else the
/// app and the origin would wait on each other); without, the app's own host name, computed
/// from its name, which holds only while the app does not opt in to a hashed default host name.
#[test]
fn the_public_url_is_the_front_door_endpoints_when_there_is_one_and_the_apps_own_otherwise() {
    let files = bicep_files();
    let (resources, app, endpoint_module) = (
        infra_file(&files, "resources.bicep"),
        infra_file(&files, "modules/functionapp.bicep"),
        infra_file(&files, "modules/frontdoor-endpoint.bicep"),
    );
    let site = only_resource(app, SITE);
    assert_eq!(app_settings(&site).get("BLOG_PUBLIC_URL").map(String::as_str), Some("publicUrl"));
    assert_eq!(
        module_argument(resources, "modules/functionapp.bicep", "publicUrl"),
        "frontDoor ? 'https://${edge.outputs.hostName}' : 'https://${appHostName}'"
    );

    // The endpoint is made in the module whose output that is, from nothing the app gives.
    let endpoint = only_resource(endpoint_module, "Microsoft.Cdn/profiles/afdEndpoints");
    assert!(!endpoint.existing, "{}: the endpoint is made here", endpoint.at());
    assert_eq!(
        outputs(endpoint_module).get("hostName").map(String::as_str),
        Some("endpoint.properties.hostName")
    );
    assert_eq!(
        endpoint_module.parameters().keys().map(String::as_str).collect::<Vec<_>>(),
        ["name", "tags"],
        "the endpoint's module takes nothing of the app"
    );
    assert!(
        descendants(endpoint_module.tree.root_node())
            .iter()
            .all(|node| node.kind() != "module_declaration"),
        "nothing else is deployed with the endpoint"
    );

    // Without Front Door: the host name App Service gives an app that does not opt in, at
    // creation, to `<name>-<hash>.<region>-01.azurewebsites.net`.
    assert_eq!(
        expression(resources, resources.variable("appHostName").unwrap()),
        "'${names.functionApp}.azurewebsites.net'"
    );
    assert_eq!(
        module_argument(resources, "modules/functionapp.bicep", "appName"),
        "names.functionApp"
    );
    assert!(
        site.file.path(site.body, &["properties", "autoGeneratedDomainNameLabelScope"]).is_none(),
        "{}: with autoGeneratedDomainNameLabelScope the app's host name is hashed, and appHostName (BLOG_PUBLIC_URL, \
         the sign-in's redirect URI) no longer names it",
        site.at()
    );
}

/// Behind Front Door, App Service Authentication builds its redirects from the host Front Door
/// forwards (`forwardProxy` `Standard`, no custom header names: Front Door sets the standard
/// X-Forwarded-Host), and the registration takes the sign-in's callback there; without Front
/// Door, from the request's own Host.
#[test]
fn sign_in_through_the_front_door_redirects_to_the_front_doors_host() {
    sign_in(|SignIn { main, auth, .. }| {
        assert_eq!(
            expression_at(auth, &["properties", "httpSettings", "forwardProxy"]),
            "{ convention: behindFrontDoor ? 'Standard' : 'NoProxy' }"
        );
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "behindFrontDoor"),
            "frontDoor"
        );
        assert!(
            module_argument(main, "modules/signin.bicep", "hostNames")
                .starts_with("frontDoor ? [appHostName, edge.outputs.hostName]"),
            "the Front Door's callback is registered when there is one"
        );
    });
}
