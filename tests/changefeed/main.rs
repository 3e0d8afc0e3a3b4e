//! The change-feed functions keep every denormalized copy true: end to end on the embedded
//! store with the local processors, and as the Functions host invokes them.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;

use blog::ChangeFeedMode;
use blog::testing::changefeed::Function;
use blog::testing::changefeed::dead_letters;
use blog::testing::cosmos::{Container, PageRequest, QuerySpec};
use blog::testing::model::SHORT_CONTENT_CHARS;
use common::TestApp;
use common::host::{self, Attempt};
use reqwest::StatusCode;
use serde_json::{Value, json};

mod copies;
mod processors;
mod redelivery;
mod set_aside;

fn ids(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Every application document of one partition, system properties included; not the in-process
/// scripts' fence item, nor a user's posts mark (written again by every delivery that finds a
/// copy, repeated or not, so that no instance keeps a page it made old).
async fn partition(app: &TestApp, container: Container, key: &str) -> Vec<Value> {
    let query = QuerySpec {
        sql: "SELECT * FROM c WHERE NOT IS_DEFINED(c.scriptFence) AND c.type != 'postsMark' ORDER BY c.id".into(),
        parameters: vec![],
    };
    let page = PageRequest { size: 1000, continuation: None };
    app.state.store.query_documents(container, key, query, page).await.unwrap().0
}

/// The documents of a partition without what the store adds, for comparing states.
async fn contents(app: &TestApp, container: Container, key: &str) -> Vec<Value> {
    let mut documents = partition(app, container, key).await;
    for document in &mut documents {
        document.as_object_mut().unwrap().retain(|name, _| !name.starts_with('_'));
    }
    documents
}

/// Delivers `documents` to `function` exactly as the Functions host would (see common/host.rs).
async fn deliver(app: &TestApp, function: &str, documents: &[Value]) -> common::Answer {
    let body = host::cosmos_invocation(function, documents, Attempt::Retry(0));
    let answer = host::invoke(app, function, &body).await;
    assert_eq!(
        answer.header("content-type"),
        Some("application/json"),
        "the host reads only a JSON answer"
    );
    answer
}
