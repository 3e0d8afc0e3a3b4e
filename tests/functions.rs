//! The Functions host's view of the app: `host.json` and every `functions/*/function.json`
//! agree with the routes the handler serves, in both directions.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use blog::CONNECTION_SETTING;
use blog::ChangeFeedMode;
use blog::testing::changefeed::Function;
use blog::testing::http::HttpFunction;
use common::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The timer function's folder (`functions/PublishScheduled`).
const TIMER: &str = "PublishScheduled";

fn read_json(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|error| panic!("{} is not valid JSON: {error}", path.display()))
}

/// Every function folder with its function.json.
fn functions() -> Vec<(String, Value)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("functions");
    let mut functions: Vec<(String, Value)> = std::fs::read_dir(&root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .map(|path| {
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                read_json(&path.join("function.json")),
            )
        })
        .collect();
    functions.sort_by(|a, b| a.0.cmp(&b.0));
    functions
}

#[test]
fn host_json_runs_the_handler_with_forwarding_at_the_root() {
    let host = read_json(&Path::new(env!("CARGO_MANIFEST_DIR")).join("host.json"));
    assert_eq!(host["version"], "2.0");
    assert_eq!(host["customHandler"]["description"]["defaultExecutablePath"], "handler");
    assert_eq!(host["customHandler"]["enableForwardingHttpRequest"], true);
    // The pages live at the root and the JSON API under `api/`, both in the functions' routes.
    assert_eq!(host["extensions"]["http"]["routePrefix"], "");
    assert_eq!(host["extensionBundle"]["id"], "Microsoft.Azure.Functions.ExtensionBundle");
    assert_eq!(host["extensionBundle"]["version"], "[4.*, 5.0.0)");
}

#[test]
fn every_http_function_is_a_forwarded_route_of_the_handler() {
    let mut declared = BTreeSet::new();
    for (name, function) in functions() {
        let bindings = function["bindings"].as_array().unwrap();
        if bindings[0]["type"] != "httpTrigger" {
            continue;
        }
        // Forwarding needs exactly one httpTrigger and one http output.
        assert_eq!(bindings.len(), 2, "{name}");
        assert_eq!(
            bindings[1],
            json!({"type": "http", "direction": "out", "name": "res"}),
            "{name}"
        );
        let trigger = &bindings[0];
        assert_eq!(trigger["direction"], "in", "{name}");
        assert_eq!(
            trigger["authLevel"], "anonymous",
            "{name}: users sign in with App Service Authentication; a function key cannot tell them apart"
        );
        let methods: Vec<String> = trigger["methods"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap().to_uppercase())
            .collect();
        assert_eq!(methods.len(), 1, "{name}: one request of the article per function");
        declared.insert((name, methods[0].clone(), trigger["route"].as_str().unwrap().to_owned()));
    }
    let served: BTreeSet<(String, String, String)> = HttpFunction::ALL
        .iter()
        .map(|f| (f.name().to_string(), f.method().to_string(), f.route().to_string()))
        .collect();
    assert_eq!(
        declared, served,
        "functions/*/function.json and the handler's routes must be the same set"
    );
}

#[tokio::test]
async fn the_handler_answers_every_declared_method_of_each_route() {
    let app = TestApp::start_as_host().await;
    for (name, method, route) in HttpFunction::ALL.iter().map(|f| (f.name(), f.method(), f.route()))
    {
        let path = blog::testing::http::router_path(route)
            .replace("{userId}", "someone")
            .replace("{postId}", "something");
        let answer = app
            .raw(
                Method::from_bytes(method.as_bytes()).unwrap(),
                &path,
                Some("application/json"),
                "{}",
            )
            .await;
        assert_ne!(answer.status.as_u16(), 405, "{name}: {method} {path}");
        let detail = answer.body["detail"].as_str().unwrap_or_default();
        assert!(
            !detail.starts_with("There is no resource at"),
            "{name}: {method} {path} is not routed"
        );
        let page = answer.body.as_str().unwrap_or_default();
        assert!(!page.contains("There is no page at"), "{name}: {method} {path} is not routed");
    }
}

#[tokio::test]
async fn every_change_feed_function_is_declared_as_the_handler_serves_it() {
    let declared: Vec<(String, Value)> = functions()
        .into_iter()
        .filter(|(_, function)| function["bindings"][0]["type"] == "cosmosDBTrigger")
        .collect();
    let names: BTreeSet<&str> = declared.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, Function::ALL.iter().map(|function| function.name()).collect());

    let mut prefixes = BTreeSet::new();
    let app = TestApp::start_as_host().await;
    for (name, function) in &declared {
        let served = Function::ALL.into_iter().find(|function| function.name() == name).unwrap();
        let bindings = function["bindings"].as_array().unwrap();
        assert_eq!(bindings.len(), 1, "{name}");
        let trigger = &bindings[0];
        assert_eq!(trigger["name"], "documents", "{name}: the handler reads Data.documents");
        assert_eq!(trigger["direction"], "in");
        assert_eq!(
            trigger["connection"], CONNECTION_SETTING,
            "{name}: the app and the trigger share one account setting"
        );
        assert_eq!(trigger["databaseName"], "%COSMOS_DATABASE%");
        assert_eq!(trigger["containerName"], served.container().name(), "{name}");
        assert_eq!(trigger["leaseContainerName"], "leases");
        assert_eq!(
            trigger["createLeaseContainerIfNotExists"], false,
            "{name}: the app's identity cannot create containers"
        );
        assert_eq!(
            trigger["startFromBeginning"], true,
            "{name}: a new deployment bootstraps the copies"
        );
        let batch = trigger["maxItemsPerInvocation"].as_u64().unwrap();
        assert!((1..=1000).contains(&batch), "{name}: bounded batches");
        assert!(
            prefixes.insert(trigger["leaseContainerPrefix"].as_str().unwrap().to_owned()),
            "{name}: lease prefixes are distinct"
        );
        assert!(
            function["retry"]["strategy"].is_string(),
            "{name}: a failed batch must be retried, not lost"
        );

        let invocation =
            common::host::cosmos_invocation(name, &[], common::host::Attempt::Retry(0));
        let answer = common::host::invoke(&app, name, &invocation).await;
        assert_eq!(answer.status.as_u16(), 200, "{name}: {}", answer.body);
    }
}

/// Core Tools cannot tell a custom handler's runtime from its files: `func azure functionapp
/// publish` stops with "Worker runtime cannot be 'None'" unless it is named (azure-functions-core-
/// tools `GlobalCoreToolsSettings.Init` reads `--custom`, else `FUNCTIONS_WORKER_RUNTIME` from the
/// environment or local.settings.json, which publish never uploads). Every publish
/// command in the README, ARCHITECTURE.md and `docs/` names it.
#[test]
fn every_documented_publish_command_names_the_worker_runtime() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut documents = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|extension| extension == "md") {
            documents.push(path);
        }
    }
    let mut publishes = 0;
    for document in documents {
        let text = std::fs::read_to_string(&document).unwrap();
        for line in text.lines().filter(|line| line.contains("func azure functionapp publish")) {
            assert!(
                line.contains("--custom"),
                "{}: publish without the runtime named: {line}",
                document.display()
            );
            publishes += 1;
        }
    }
    assert!(publishes > 0, "the documentation shows how to publish");
}

/// No HTTP function's route can forward a client's request to a change-feed function. With
/// host.json's empty route prefix, the host forwards `/{route}` with the request's path as it
/// came, and a change-feed function is `/{FunctionName}` on the same handler: so every route is
/// explicit (no catch-all `{*...}`), starts with a literal segment (or is the front page's
/// parameter that only the empty path matches), and that segment is no change-feed function's
/// name in any case (ASP.NET Core matches routes case-insensitively). The handler agrees: without
/// `BLOG_CHANGE_FEED=host` those paths are not routes at all.
#[tokio::test]
async fn no_http_route_reaches_a_change_feed_function() {
    let host = read_json(&Path::new(env!("CARGO_MANIFEST_DIR")).join("host.json"));
    assert_eq!(
        host["extensions"]["http"]["routePrefix"], "",
        "the checks below are for an empty prefix"
    );
    let mut front_pages = 0;
    for (name, function) in functions() {
        let trigger = &function["bindings"][0];
        if trigger["type"] != "httpTrigger" {
            continue;
        }
        let route = trigger["route"].as_str().unwrap();
        assert!(
            !route.contains("{*"),
            "{name}: a catch-all route {route} may reach /{{FunctionName}}"
        );
        let first = route.split('/').next().unwrap();
        if first.starts_with('{') {
            assert_eq!(
                route,
                blog::testing::http::FRONT_PAGE_ROUTE,
                "{name}: {route} starts with a parameter, which may match a function's name"
            );
            front_pages += 1;
            continue;
        }
        for invoked in Function::ALL.iter().map(|function| function.name()).chain([TIMER]) {
            assert!(!first.eq_ignore_ascii_case(invoked), "{name}: {route} reaches /{invoked}");
        }
    }
    assert_eq!(front_pages, 1, "one front page");

    let app = TestApp::start().await;
    for invoked in Function::ALL.iter().map(|function| function.name()).chain([TIMER]) {
        let answer =
            app.raw(Method::POST, &format!("/{invoked}"), Some("application/json"), "{}").await;
        assert_eq!(answer.status.as_u16(), 404, "{invoked}: only the host invokes it");
    }
}

/// The timer function: its folder's one binding is the timer trigger, once a minute at second
/// 0 (NCRONTAB, six fields: the Functions host's `CronSchedule`), named `timer` (the key of
/// `Data` the handler reads), monitored so that a run missed while the app slept is run late
/// (`IsPastDue`); no retry policy: the next minute's run is the retry. The host's invocation is
/// answered where the host runs the triggers.
#[tokio::test]
async fn the_timer_function_is_declared_as_the_handler_serves_it() {
    let timers: Vec<(String, Value)> = functions()
        .into_iter()
        .filter(|(_, function)| function["bindings"][0]["type"] == "timerTrigger")
        .collect();
    assert_eq!(timers.len(), 1, "one timer");
    let (name, function) = &timers[0];
    assert_eq!(name, TIMER);
    assert_eq!(
        function,
        &json!({"bindings": [{"type": "timerTrigger", "direction": "in", "name": "timer",
            "schedule": "0 * * * * *", "useMonitor": true, "runOnStartup": false}]})
    );
    let app = TestApp::start_as_host().await;
    let answer = common::host::invoke(&app, TIMER, &common::host::timer_invocation(false)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
}

/// The local settings for the Linux emulator (vNext), whose change feed the host's Cosmos DB
/// trigger cannot serve: the trigger functions are switched off by the setting the WebJobs SDK
/// reads (`AzureWebJobs.<FunctionName>.Disabled`, azure-webjobs-sdk `HostListenerFactory.
/// IsDisabled`: no listener is created for them), the handler follows the change feed itself,
/// runs the scripts in process, and reads the connection string the trigger's .NET SDK reads
/// (with `DisableServerCertificateValidation=True`, which the Rust driver ignores: it relaxes
/// certificate checks for a local emulator endpoint on its own).
#[test]
fn the_linux_emulator_settings_hand_the_processors_to_the_handler() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (file, vnext) in
        [("local.settings.json.example", false), ("local.settings.vnext.json.example", true)]
    {
        let settings = read_json(&root.join(file));
        let values = settings["Values"].as_object().unwrap_or_else(|| panic!("{file}: Values"));
        let value =
            |name: &str| values.get(name).and_then(|value| value.as_str()).map(str::to_owned);
        let config =
            blog::Config::from_lookup(value).unwrap_or_else(|error| panic!("{file}: {error}"));
        assert!(matches!(config.backend, blog::Backend::ConnectionString(_)), "{file}");
        let connection: azure_data_cosmos_driver::models::ConnectionString =
            value("CosmosDB").unwrap().parse().unwrap_or_else(|error| panic!("{file}: {error}"));
        assert_eq!(connection.account_endpoint(), "https://localhost:8081/", "{file}");
        assert_eq!(
            config.scripts,
            blog::ScriptsMode::InProcess,
            "{file}: no emulator runs the scripts unregistered"
        );
        let expected = if vnext { ChangeFeedMode::Local } else { ChangeFeedMode::Host };
        assert_eq!(config.change_feed, expected, "{file}");
        // Pictures in Azurite, beside the host's own storage.
        let azurite = blog::PictureStorage::ConnectionString {
            connection_string: "UseDevelopmentStorage=true".into(),
            container: "pictures".into(),
        };
        assert_eq!(config.pictures, azurite, "{file}");
        // The handler is the timer too where it follows the change feed itself.
        for function in Function::ALL.iter().map(|function| function.name()).chain([TIMER]) {
            assert!(root.join("functions").join(function).join("function.json").is_file());
            let disabled = value(&format!("AzureWebJobs.{function}.Disabled"));
            assert_eq!(disabled.as_deref() == Some("true"), vnext, "{file}: {function} trigger");
        }
    }
}
