//! The Bicep files read with the tree-sitter grammar: the syntax trees, their resources, and
//! the helpers the checks use to find a file, a resource, an expression or a decorator.

use super::*;

// ---------------------------------------------------------------------------------------------
// Bicep syntax trees
// ---------------------------------------------------------------------------------------------

/// One parsed Bicep file.
pub(crate) struct BicepFile {
    pub(crate) path: PathBuf,
    pub(crate) source: String,
    pub(crate) tree: Tree,
    /// The `extension <alias>` statements of the file (see [`BicepFile::parse`]).
    pub(crate) extensions: Vec<String>,
}

/// The extensions `infra/bicepconfig.json` declares: alias → registry reference. The file is
/// JSON with comments (Bicep reads it so); whole-line `//` comments are left out here.
pub(crate) fn declared_extensions() -> BTreeMap<String, String> {
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
    /// to refuse, so nothing is skipped unseen. `extensions_are_declared_with_their_types` checks them.
    pub(crate) fn parse(path: &Path) -> BicepFile {
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

    pub(crate) fn text(&self, node: Node) -> &str {
        &self.source[node.byte_range()]
    }

    /// Where a node is, as `file:line`, for messages.
    pub(crate) fn at(&self, node: Node) -> String {
        format!("{}:{}", shown(&self.path), node.start_position().row + 1)
    }

    /// The top-level statements of one kind (`parameter_declaration`, `variable_declaration`, …).
    pub(crate) fn statements<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = Node<'a>> + 'a {
        named_children(self.tree.root_node()).into_iter().filter(move |node| node.kind() == kind)
    }

    /// The value of `var <name> = …`, so that a property set from a variable is checked too.
    pub(crate) fn variable(&self, name: &str) -> Option<Node<'_>> {
        self.statements("variable_declaration")
            .find(|declaration| {
                first_child_of_kind(*declaration, "identifier")
                    .is_some_and(|id| self.text(id) == name)
            })
            .and_then(|declaration| named_children(declaration).last().copied())
    }

    /// The names of the `param`s this file declares, and whether each has a default value.
    pub(crate) fn parameters(&self) -> BTreeMap<String, bool> {
        self.statements("parameter_declaration")
            .filter_map(|declaration| {
                let name = first_child_of_kind(declaration, "identifier")?;
                let has_default = anonymous_child(declaration, "=").is_some();
                Some((self.text(name).to_string(), has_default))
            })
            .collect()
    }

    /// A string literal's value; `None` for anything else, interpolated strings included.
    pub(crate) fn string_literal(&self, node: Node) -> Option<String> {
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
    pub(crate) fn object_entries<'a>(
        &'a self,
        object: Node<'a>,
    ) -> Vec<(Option<String>, Node<'a>)> {
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
    pub(crate) fn property<'a>(&'a self, object: Node<'a>, key: &str) -> Option<Node<'a>> {
        self.object_entries(object)
            .into_iter()
            .find(|(name, _)| name.as_deref() == Some(key))
            .map(|(_, value)| value)
    }

    /// Follows a dotted path of properties through object literals (and variables).
    pub(crate) fn path<'a>(&'a self, object: Node<'a>, path: &[&str]) -> Option<Node<'a>> {
        path.iter().try_fold(object, |node, key| {
            let node = self.resolve(node);
            if node.kind() == "object" { self.property(node, key) } else { None }
        })
    }

    /// Sees through parentheses and variables to the expression that gives a value.
    pub(crate) fn resolve<'a>(&'a self, node: Node<'a>) -> Node<'a> {
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
    pub(crate) fn on_plan<'a>(&'a self, node: Node<'a>, plan: Hosting) -> Node<'a> {
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
    pub(crate) fn path_on<'a>(
        &'a self,
        object: Node<'a>,
        path: &[&str],
        plan: Hosting,
    ) -> Option<Node<'a>> {
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
    pub(crate) fn literal(&self, node: Node) -> Option<Value> {
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
    pub(crate) fn resources(&self) -> Vec<Resource<'_>> {
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
    pub(crate) fn syntax_errors(&self) -> Vec<String> {
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

pub(crate) fn named_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

pub(crate) fn first_child_of_kind<'a>(node: Node<'a>, kind: &str) -> Option<Node<'a>> {
    named_children(node).into_iter().find(|child| child.kind() == kind)
}

/// A keyword or punctuation child (`existing`, `=`), which tree-sitter leaves unnamed.
fn anonymous_child<'a>(node: Node<'a>, kind: &str) -> Option<Node<'a>> {
    let mut cursor = node.walk();
    node.children(&mut cursor).find(|child| !child.is_named() && child.kind() == kind)
}

pub(crate) fn descendants(node: Node) -> Vec<Node> {
    let mut all = vec![node];
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        all.extend(descendants(child));
    }
    all
}

/// The object literal of a resource: `= {…}`, `= if (…) {…}` or `= [for … : {…}]`.
pub(crate) fn resource_body(declaration: Node) -> Option<Node> {
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
pub(crate) struct Resource<'a> {
    pub(crate) file: &'a BicepFile,
    pub(crate) declaration: Node<'a>,
    pub(crate) symbol: String,
    /// `'Microsoft.X/y@2025-01-01'`, as written.
    pub(crate) type_and_version: String,
    pub(crate) existing: bool,
    pub(crate) body: Node<'a>,
}

impl Resource<'_> {
    pub(crate) fn type_name(&self) -> &str {
        self.type_and_version.split('@').next().unwrap_or_default()
    }

    pub(crate) fn at(&self) -> String {
        format!("{} ({})", self.file.at(self.declaration), self.symbol)
    }

    pub(crate) fn literal_at(&self, path: &[&str]) -> Option<Value> {
        self.file.path(self.body, path).and_then(|node| self.file.literal(node))
    }
}

/// Where the Function App runs: infra/modules/functionapp.bicep's `hostingPlan`, `flex` or a
/// dedicated plan's size, told apart in the template by `flex ? … : …`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Hosting {
    Flex,
    Dedicated,
}

/// The Function App's app settings on `plan`, each entry's node.
pub(crate) fn setting_entries<'a>(site: &Resource<'a>, plan: Hosting) -> Vec<Node<'a>> {
    site.file
        .path_on(site.body, &["properties", "siteConfig", "appSettings"], plan)
        .map(|array| site.file.items_on(array, plan))
        .unwrap_or_default()
}

/// The Function App's app settings on `plan`: name → value, where the value is a literal string.
pub(crate) fn literal_settings(site: &Resource, plan: Hosting) -> BTreeMap<String, Option<String>> {
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
pub(crate) fn bicep_files() -> Vec<BicepFile> {
    let infra = repo_root().join("infra");
    let files: Vec<BicepFile> =
        files_with_extension(&infra, "bicep").iter().map(|path| BicepFile::parse(path)).collect();
    assert!(!files.is_empty(), "no .bicep files under {}", infra.display());
    files
}

pub(crate) fn resources_of_type<'a>(files: &'a [BicepFile], type_name: &str) -> Vec<Resource<'a>> {
    files
        .iter()
        .flat_map(BicepFile::resources)
        .filter(|resource| resource.type_name() == type_name)
        .collect()
}

/// The decorators (`@minValue(40)`, …) on `param <name>`, as text without the `@`.
pub(crate) fn parameter_decorators(file: &BicepFile, name: &str) -> Option<Vec<String>> {
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

/// The parsed file `infra/<relative>`.
pub(crate) fn infra_file<'a>(files: &'a [BicepFile], relative: &str) -> &'a BicepFile {
    let path = repo_root().join("infra").join(relative);
    files.iter().find(|file| file.path == path).unwrap_or_else(|| panic!("infra/{relative} exists"))
}

/// The one resource of `type_name` in `file`.
pub(crate) fn only_resource<'a>(file: &'a BicepFile, type_name: &str) -> Resource<'a> {
    let mut found: Vec<Resource> =
        file.resources().into_iter().filter(|resource| resource.type_name() == type_name).collect();
    assert_eq!(found.len(), 1, "one {type_name} in {}", shown(&file.path));
    found.remove(0)
}

/// The expression at `path` in a resource's body, variables followed, as written (whitespace
/// collapsed): for values known only at deployment, what they are made of.
pub(crate) fn expression_at(resource: &Resource, path: &[&str]) -> String {
    let node = resource
        .file
        .path(resource.body, path)
        .unwrap_or_else(|| panic!("{}: no {}", resource.at(), path.join(".")));
    expression(resource.file, node)
}

pub(crate) fn expression(file: &BicepFile, node: Node) -> String {
    file.text(file.resolve(node)).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first item of the array at `path`.
pub(crate) fn first_item<'a>(resource: &Resource<'a>, path: &[&str]) -> Node<'a> {
    let array = resource
        .file
        .path(resource.body, path)
        .unwrap_or_else(|| panic!("{}: no {}", resource.at(), path.join(".")));
    *named_children(resource.file.resolve(array))
        .first()
        .unwrap_or_else(|| panic!("{}: {} is empty", resource.at(), path.join(".")))
}

/// The expression `main.bicep` passes to a module's parameter.
pub(crate) fn module_argument(main: &BicepFile, module_path: &str, parameter: &str) -> String {
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
pub(crate) fn outputs(file: &BicepFile) -> BTreeMap<String, String> {
    file.statements("output_declaration")
        .filter_map(|declaration| {
            let name = first_child_of_kind(declaration, "identifier")?;
            let value = named_children(declaration).last().copied()?;
            Some((file.text(name).to_owned(), expression(file, value)))
        })
        .collect()
}
