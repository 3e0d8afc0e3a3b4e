//! The OpenAPI description served at /api/openapi.json describes exactly the routes the handler
//! serves.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use blog::testing::http::HttpFunction;
use common::TestApp;

#[tokio::test]
async fn the_openapi_description_matches_the_router() {
    let app = TestApp::start_as_host().await;
    let answer = app.get("/api/openapi.json").await;
    assert_eq!(answer.status.as_u16(), 200);
    let document = answer.body;
    assert!(document["openapi"].as_str().unwrap().starts_with("3."), "{}", document["openapi"]);

    let mut described = BTreeSet::new();
    for (path, operations) in document["paths"].as_object().unwrap() {
        for (method, operation) in operations.as_object().unwrap() {
            described.insert((method.to_uppercase(), path.clone()));
            let responses = operation["responses"].as_object().unwrap();
            assert!(responses.keys().any(|status| status.starts_with('2')), "{method} {path}: a success response");
            assert!(responses.contains_key("400"), "{method} {path}: bad input is described");
        }
    }
    let served: BTreeSet<(String, String)> = HttpFunction::ALL
        .iter()
        .map(|f| (f.name(), f.method(), f.route()))
        .filter(|(name, _, route)| *name != "GetOpenApi" && blog::testing::http::is_api_route(route))
        .map(|(_, method, route)| (method.to_string(), format!("/{route}")))
        .collect();
    assert_eq!(described, served, "every route of the JSON API is described, and nothing else (no page)");

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
        assert!(names.contains("limit") && names.contains("continuationToken"), "{path}: {names:?}");
    }
    // Every id taken, in a path or a body, is described by the one pattern.
    let mut patterns = BTreeSet::new();
    for operations in document["paths"].as_object().unwrap().values() {
        for operation in operations.as_object().unwrap().values() {
            for parameter in operation["parameters"].as_array().into_iter().flatten().filter(|p| p["in"] == "path") {
                // A tag is no id: it is described as the bodies' tags are.
                if parameter["name"] == "tag" {
                    assert_eq!(
                        parameter["schema"],
                        document["components"]["schemas"]["NewPostBody"]["properties"]["tags"]["items"]
                    );
                    assert_eq!(parameter["schema"]["maxLength"], 32, "{parameter}");
                    continue;
                }
                assert_eq!(parameter["schema"]["maxLength"], 255, "{parameter}");
                patterns.insert(parameter["schema"]["pattern"].as_str().expect("a path id's pattern").to_owned());
            }
        }
    }
    for body in ["NewPostBody", "NewCommentBody", "NewLikeBody"] {
        let user_id = &document["components"]["schemas"][body]["properties"]["userId"];
        patterns.insert(user_id["pattern"].as_str().unwrap_or_else(|| panic!("{body}.userId: {user_id}")).to_owned());
    }
    assert_eq!(patterns.into_iter().collect::<Vec<_>>(), [blog::testing::http::ID_PATTERN]);
    for schema in ["User", "Post", "Comment", "Like", "ProblemDetails", "UserBody", "NewPostBody"] {
        assert!(document["components"]["schemas"][schema].is_object(), "schema {schema}");
    }
}
