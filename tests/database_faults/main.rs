//! Cosmos DB's own faults, injected by the SDK's fault injection (`azure_data_cosmos`, feature
//! `fault_injection`) between the SDK's client and its in-memory emulator, below the SDK's
//! retries, on the path the deployed build takes: the blog started as `main` starts it
//! (`Blog::start` on the state `connect` builds, served by `Blog::serve`).

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;

use std::sync::Arc;

use blog::Blog;
use blog::test_support::sdk_faults::{
    CustomResponseBuilder, FaultInjectionConditionBuilder, FaultInjectionErrorType,
    FaultInjectionResultBuilder, FaultInjectionRuleBuilder, FaultOperationType,
};
use blog::test_support::{FaultInjectionRule, SdkFaults, embedded_config, store_with_sdk_faults};
use common::forms::Browser;
use serde_json::{Value, json};

mod idempotency_keys;
mod random_faults;
mod slow_database;
mod unavailable;

/// What stops a served blog: dropped, it asks the blog to stop; [`Stop::now`] also waits
/// until it has (its requests finished, its processors stopped, its store closed), so that a
/// test can open the same data directory again.
struct Stop {
    asked: Option<tokio::sync::oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<()>>,
}

impl Stop {
    async fn now(mut self) {
        drop(self.asked.take());
        self.served.take().expect("not yet awaited").await.unwrap();
    }
}

impl Drop for Stop {
    fn drop(&mut self) {
        drop(self.asked.take());
    }
}

/// A blog whose SDK reaches its store through `faults`, served; its base URL, what stops it,
/// and its state (to read the dead letters).
async fn serve_with_state(
    dir: &std::path::Path,
    faults: SdkFaults,
) -> (String, Stop, blog::AppState) {
    serve_config(embedded_config(dir), faults).await
}

/// A blog on `config` whose SDK reaches its store through `faults`, served as `main` serves it.
async fn serve_config(config: blog::Config, faults: SdkFaults) -> (String, Stop, blog::AppState) {
    let store = store_with_sdk_faults(&config, faults).await.unwrap();
    let blog = Blog::start(&config, blog::state_on(&config, store).await.unwrap());
    let state = blog.state.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/api", listener.local_addr().unwrap());
    let (asked, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(async move {
        blog.serve(listener, async move { drop(stopped.await) }).await.unwrap()
    });
    (base, Stop { asked: Some(asked), served: Some(served) }, state)
}

/// [`serve_with_state`], without the state.
async fn serve(dir: &std::path::Path, faults: SdkFaults) -> (String, Stop) {
    let (base, stop, _) = serve_with_state(dir, faults).await;
    (base, stop)
}

/// `url` with `query`, encoded.
fn with(url: &str, query: &[(&str, &str)]) -> reqwest::Url {
    reqwest::Url::parse_with_params(url, query).unwrap()
}

/// A caller of the JSON API signed in as `user`, sending `Idempotency-Key` when given one.
struct Writer {
    api: String,
    user: &'static str,
    client: reqwest::Client,
}

impl Writer {
    fn new(api: &str, user: &'static str) -> Writer {
        Writer { api: api.to_owned(), user, client: reqwest::Client::new() }
    }

    /// Sends a write; its status and body (`null` for none).
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        key: Option<&str>,
    ) -> (u16, Value) {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.api))
            .header("x-dev-user", self.user);
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer = request.send().await.unwrap();
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> Value {
        let answer = self.client.get(format!("{}{path}", self.api)).send().await.unwrap();
        assert_eq!(answer.status(), 200, "GET {path}");
        answer.json().await.unwrap()
    }
}

use reqwest::Method;

/// Sends a keyed write until it is answered as done, as a client following docs/api.md does:
/// 503 (with `Retry-After`) and 409 "in progress" are sent again with the same key; any other
/// answer is final. Every answer is checked to be one docs/api.md's table lists.
async fn until_done(
    writer: &Writer,
    method: Method,
    path: &str,
    body: Option<Value>,
    key: &str,
) -> (u16, Value) {
    for _ in 0..200 {
        let (status, answer) = writer.send(method.clone(), path, body.clone(), Some(key)).await;
        match status {
            503 => assert!(answer["detail"].is_string(), "{method} {path}: {answer}"),
            409 if answer["detail"]
                .as_str()
                .is_some_and(|detail| detail.contains("being made right now")) => {}
            200 | 201 | 204 => return (status, answer),
            other => {
                panic!("{method} {path} answered {other}, which the table does not list: {answer}")
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("{method} {path} was never done");
}
