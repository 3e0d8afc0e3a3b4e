//! Every resource against the Azure type definitions of `tests/bicep-types/`: types, API
//! versions, properties and extensions, and the inaccuracies and refusals the definitions miss.

use super::*;

// ---------------------------------------------------------------------------------------------
// Azure type definitions (tests/bicep-types/, see its README)
// ---------------------------------------------------------------------------------------------

const REQUIRED: u64 = 1;
const READ_ONLY: u64 = 2;

/// Properties a resource declaration may carry that are Bicep's, not the resource provider's.
const BICEP_RESOURCE_KEYWORDS: [&str; 3] = ["parent", "scope", "dependsOn"];

/// Where Azure's type definitions are known to be wrong: a top-level property the resource
/// provider requires although its type definition lacks it. The type check accepts exactly these;
/// `known_type_inaccuracies_are_still_needed` holds each one to its resource in
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
fn known_type_inaccuracies_are_still_needed() {
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

/// The Graph extension is used where Graph resources are, declared in bicepconfig.json, and its
/// version is the one whose types are vendored here (so that the type check above is the
/// compiler's).
#[test]
fn extensions_are_declared_with_their_types() {
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
