//! The Cosmos DB account against the application: its containers, partition keys, indexes,
//! time to live, scripts, Entra-ID-only access and backup.

use super::*;

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

pub(crate) fn load_text_content_calls(file: &BicepFile) -> Vec<(String, String)> {
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

/// The search index leaves its postings out of the index, as `Container::indexing_policy`
/// does: each posting indexed would make every write of a word dearer.
#[test]
fn the_search_index_leaves_its_postings_unindexed() {
    let files = bicep_files();
    let words = resources_of_type(&files, CONTAINER)
        .into_iter()
        .find(|container| {
            container.literal_at(&["properties", "resource", "id"]) == Some(json!("words"))
        })
        .expect("the container words in infra/");
    let policy = words.literal_at(&["properties", "resource", "indexingPolicy"]).unwrap();
    assert_eq!(policy["excludedPaths"], json!([{"path": "/postings/*"}]), "{policy}");
    assert_eq!(policy["includedPaths"], json!([{"path": "/*"}]), "{policy}");
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
