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
mod navigation;
mod on_azure;
mod refused_forms;
mod rendering;
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

fn escape(text: &str) -> String {
    blog::testing::http::esc(text).to_string()
}
