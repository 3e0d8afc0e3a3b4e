//! The OpenAPI description served at /api/openapi.json describes exactly the routes the handler
//! serves.

mod common;

use std::collections::BTreeSet;

use blog::http::HttpFunction;
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
        .filter(|(name, _, route)| *name != "GetOpenApi" && blog::http::is_api_route(route))
        .map(|(_, method, route)| (method.to_string(), format!("/{route}")))
        .collect();
    assert_eq!(described, served, "every route of the JSON API is described, and nothing else (no page)");

    // Every list takes the paging parameters.
    for path in ["/api/users/{userId}/posts", "/api/posts/{postId}/comments", "/api/posts/{postId}/likes", "/api/feed"] {
        let names: BTreeSet<&str> = document["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert!(names.contains("limit") && names.contains("continuationToken"), "{path}: {names:?}");
    }
    for schema in ["User", "Post", "Comment", "Like", "ProblemDetails", "UserBody", "NewPostBody"] {
        assert!(document["components"]["schemas"][schema].is_object(), "schema {schema}");
    }
}
