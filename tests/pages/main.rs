//! The pages over HTTP: what a browser sends and gets, without the browser (tests/browser.rs
//! drives a real one). Forms are post/redirect/get, refused writes keep what was typed, every
//! state change refuses another site's forms, and everything shown is escaped.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;

use std::time::Instant;

use blog::testing::http::HttpFunction;
use common::TestApp;
use common::forms::{self, Browser, Got, form_key};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;

mod caching;
mod deleting;
mod drafts;
mod navigation;
mod on_azure;
mod refused_forms;
mod rendering;
mod search;
mod writing;

use on_azure::*;

/// Alice, signed up on `app`'s pages, with her post "Hello, pages" written in the form: her
/// browser and the post page's path.
async fn alice_with_a_post(app: &TestApp) -> (Browser, String) {
    let mut alice = Browser::new(app);
    alice.sign_up("alice", "Alice").await;
    let post = alice.write("Hello, pages", "My first post,\nwritten in a form.").await;
    (alice, post)
}

/// `text` as the pages escape what they show: the five characters HTML reads specially, `'`
/// as `&#39;` too (written here, apart from the pages' own escaping, so that it checks it).
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}
