//! The OpenAPI description served at /api/openapi.json describes exactly the routes the handler
//! serves.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use blog::testing::http::HttpFunction;
use common::TestApp;
use serde_json::{Value, json};

#[tokio::test]
async fn the_openapi_description_matches_the_router() {
    let app = TestApp::start_as_host().await;
    let answer = app.get("/api/openapi.json").await;
    assert_eq!(answer.status.as_u16(), 200);
    let document = answer.body;
    assert!(document["openapi"].as_str().unwrap().starts_with("3.1."), "{}", document["openapi"]);

    let mut described = BTreeSet::new();
    for (path, operations) in document["paths"].as_object().unwrap() {
        for (method, operation) in operations.as_object().unwrap() {
            described.insert((method.to_uppercase(), path.clone()));
            let responses = operation["responses"].as_object().unwrap();
            assert!(
                responses.keys().any(|status| status.starts_with('2')),
                "{method} {path}: a success response"
            );
            assert!(responses.contains_key("400"), "{method} {path}: bad input is described");
        }
    }
    let served: BTreeSet<(String, String)> = HttpFunction::ALL
        .iter()
        .map(|f| (f.name(), f.method(), f.route()))
        .filter(|(name, _, route)| {
            *name != "GetOpenApi" && blog::testing::http::is_api_route(route)
        })
        .map(|(_, method, route)| (method.to_string(), format!("/{route}")))
        .collect();
    assert_eq!(
        described, served,
        "every route of the JSON API is described, and nothing else (no page)"
    );

    // Every list takes the paging parameters.
    for path in [
        "/api/users/{userId}/posts",
        "/api/posts/{postId}/comments",
        "/api/posts/{postId}/likes",
        "/api/feed",
        "/api/tags/{tag}/posts",
    ] {
        let names: BTreeSet<&str> = document["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains("limit") && names.contains("continuationToken"),
            "{path}: {names:?}"
        );
    }
    // Every id taken, in a path or a body, is described by the one pattern.
    let mut patterns = BTreeSet::new();
    for operations in document["paths"].as_object().unwrap().values() {
        for operation in operations.as_object().unwrap().values() {
            for parameter in operation["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["in"] == "path")
            {
                // A tag is no id: it is described as the bodies' tags are.
                if parameter["name"] == "tag" {
                    assert_eq!(
                        parameter["schema"],
                        document["components"]["schemas"]["NewPostBody"]["properties"]["tags"]["items"]
                    );
                    assert_eq!(parameter["schema"]["maxLength"], 32, "{parameter}");
                    continue;
                }
                // A revision's number is no id either: a whole number.
                if parameter["name"] == "number" {
                    assert_eq!(parameter["schema"], json!({"type": "integer", "minimum": 0}));
                    continue;
                }
                assert_eq!(parameter["schema"]["maxLength"], 255, "{parameter}");
                patterns.insert(
                    parameter["schema"]["pattern"]
                        .as_str()
                        .expect("a path id's pattern")
                        .to_owned(),
                );
            }
        }
    }
    for body in ["NewPostBody", "NewCommentBody", "NewLikeBody"] {
        let user_id = &document["components"]["schemas"][body]["properties"]["userId"];
        patterns.insert(
            user_id["pattern"]
                .as_str()
                .unwrap_or_else(|| panic!("{body}.userId: {user_id}"))
                .to_owned(),
        );
    }
    assert_eq!(patterns.into_iter().collect::<Vec<_>>(), [blog::testing::http::ID_PATTERN]);
    for schema in ["User", "Post", "Comment", "Like", "ProblemDetails", "UserBody", "NewPostBody"] {
        assert!(document["components"]["schemas"][schema].is_object(), "schema {schema}");
    }
    // A C2 sent again with its Idempotency-Key after its post was deleted is not found (tests/idempotency.rs).
    assert!(document["paths"]["/api/posts"]["post"]["responses"]["404"].is_object());
    // A picture's upload is bytes, not a JSON array of numbers.
    let upload =
        &document["paths"]["/api/posts/{postId}/pictures"]["post"]["requestBody"]["content"];
    assert_eq!(upload["application/octet-stream"]["schema"]["format"], "binary", "{upload}");
}

/// Every operation has an operationId of its own (OpenAPI requires them unique): a client
/// generated from the document names its functions by them, and keeps one of each name.
#[tokio::test]
async fn every_operation_has_its_own_operation_id() {
    let app = TestApp::start_as_host().await;
    let document = app.get("/api/openapi.json").await.body;
    let mut ids = BTreeSet::new();
    let mut count = 0;
    for (path, operations) in document["paths"].as_object().unwrap() {
        for (method, operation) in operations.as_object().unwrap() {
            count += 1;
            let id = operation["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path} has no operationId"));
            assert!(
                ids.insert(id.to_owned()),
                "{method} {path}: operationId {id} is another operation's too"
            );
        }
    }
    assert_eq!(ids.len(), count);
}

/// The links lead where they say: each to an operation of the document, each parameter one the
/// operation takes in its path and each request body field one of its body's, each value an
/// expression into a field the answer always has. And every operation that takes an item's id
/// is led to, so that a stateful fuzzer reaches real items rather than guessed ids.
#[tokio::test]
async fn the_links_lead_to_real_items() {
    let app = TestApp::start_as_host().await;
    let document = app.get("/api/openapi.json").await.body;
    let operations: Vec<(&String, &String, &Value)> = document["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .iter()
                .map(move |(method, operation)| (path, method, operation))
        })
        .collect();
    let by_id = |id: &str| {
        operations
            .iter()
            .find(|(_, _, operation)| operation["operationId"] == id)
            .map(|(_, _, o)| *o)
    };
    let mut led_to = BTreeSet::new();
    let mut links = 0;
    for (path, method, operation) in &operations {
        for (status, response) in operation["responses"].as_object().unwrap() {
            let Some(response_links) = response["links"].as_object() else { continue };
            let schema = &response["content"]["application/json"]["schema"];
            for (name, link) in response_links {
                links += 1;
                let at = format!("{method} {path} {status} link {name}");
                assert_eq!(
                    link.as_object()
                        .unwrap()
                        .keys()
                        .filter(|key| key.as_str() != "operationId"
                            && key.as_str() != "parameters"
                            && key.as_str() != "requestBody")
                        .count(),
                    0,
                    "{at}: {link}"
                );
                let target_id =
                    link["operationId"].as_str().unwrap_or_else(|| panic!("{at}: no operationId"));
                let target =
                    by_id(target_id).unwrap_or_else(|| panic!("{at}: no operation {target_id}"));
                led_to.insert(target_id.to_owned());
                for (parameter, expression) in link["parameters"].as_object().into_iter().flatten()
                {
                    let taken = target["parameters"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|p| p["name"] == **parameter && p["in"] == "path");
                    assert!(taken, "{at}: {target_id} takes no path parameter {parameter}");
                    assert_answer_has(&document, schema, expression, &at);
                }
                for (field, expression) in link["requestBody"].as_object().into_iter().flatten() {
                    let body = resolve(
                        &document,
                        &target["requestBody"]["content"]["application/json"]["schema"],
                    );
                    assert!(
                        body["properties"][field].is_object(),
                        "{at}: {target_id}'s body has no field {field}"
                    );
                    assert_answer_has(&document, schema, expression, &at);
                }
            }
        }
    }
    assert!(links > 40, "{links} links");
    let taking_ids: BTreeSet<String> = operations
        .iter()
        .filter(|(_, _, operation)| {
            operation["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|p| p["in"] == "path" && p["name"] != "tag")
        })
        .map(|(_, _, operation)| operation["operationId"].as_str().unwrap().to_owned())
        .collect();
    let not_led_to: Vec<&String> = taking_ids.difference(&led_to).collect();
    assert!(not_led_to.is_empty(), "no link leads to {not_led_to:?}");
    for writes_as_a_user in ["createPost", "createComment", "createLike"] {
        assert!(led_to.contains(writes_as_a_user), "no link leads to {writes_as_a_user}");
    }
}

/// A schema, its `$ref` followed into the document's components.
fn resolve<'a>(document: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(reference) => {
            let name = reference
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("{reference}"));
            resolve(document, &document["components"]["schemas"][name])
        }
        None => schema,
    }
}

/// `expression` is `$response.body#/pointer`, and the answer's schema has a required string at
/// that pointer (a list's `/items/0` is its first item, when there is one).
fn assert_answer_has(document: &Value, schema: &Value, expression: &Value, at: &str) {
    let pointer = expression
        .as_str()
        .and_then(|e| e.strip_prefix("$response.body#/"))
        .unwrap_or_else(|| panic!("{at}: {expression}"));
    let mut schema = resolve(document, schema);
    for segment in pointer.split('/') {
        schema = if segment.parse::<usize>().is_ok() {
            assert_eq!(schema["type"], "array", "{at}: {pointer} indexes a non-array");
            resolve(document, &schema["items"])
        } else {
            let required = schema["required"]
                .as_array()
                .unwrap_or_else(|| panic!("{at}: {pointer}: {schema}"));
            assert!(
                required.iter().any(|name| name == segment),
                "{at}: {pointer}: {segment} is not always in the answer"
            );
            resolve(document, &schema["properties"][segment])
        };
    }
    // (A revision's number fills a `{number}`, a whole number; everything else, an id.)
    let expected = if pointer.ends_with("/number") { "integer" } else { "string" };
    assert_eq!(schema["type"], expected, "{at}: {pointer} is no id");
}
