//! `handler smoke` against the real binary, started as `cargo run` starts it: it passes on a
//! working blog (twice in a row: its user stays, what it wrote goes), and fails, naming the
//! missing copy, when nothing delivers the change feed.

mod common;

use std::process::{Command, Output};

use common::binary::Handler;

/// `handler smoke <args>`, run to its end.
fn smoke(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_handler"))
        .arg("smoke")
        .args(args)
        .env_remove(blog::smoke::TOKEN_VARIABLE)
        .env("NO_COLOR", "1")
        .output()
        .expect("the handler binary runs")
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[tokio::test]
async fn the_smoke_test_passes_on_a_working_blog_and_again_on_the_next_run() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    for run in 1..=2 {
        let output = tokio::task::spawn_blocking({
            let base = handler.base.clone();
            move || smoke(&[&base, "--dev-user", "smoke-principal", "--wait", "20"])
        })
        .await
        .unwrap();
        let shown = text(&output);
        assert!(output.status.success(), "run {run}:\n{shown}");
        for step in ["Q6 ", "C2 ", "C3 ", "C4 ", "Q2 ", "Q4 ", "Q5 ", "Q1 ", "C5 ", "C6 ", "C7 "] {
            assert!(shown.lines().any(|line| line.starts_with(step)), "run {run}: no line for {step}:\n{shown}");
        }
        assert!(shown.contains("copied into users after") && shown.contains("copied into feed after"), "{shown}");
        assert!(shown.contains("gone from users after") && shown.contains("gone from feed after"), "{shown}");
        // C1 only the first time: the user stays for the next run.
        assert_eq!(shown.lines().any(|line| line.starts_with("C1 ")), run == 1, "run {run}:\n{shown}");
    }
    // What it wrote is gone: no post of its user is left in the feed.
    let feed: serde_json::Value = reqwest::get(format!("{}/api/feed", handler.base)).await.unwrap().json().await.unwrap();
    assert_eq!(feed["items"], serde_json::json!([]), "{feed}");

    let reads_only = tokio::task::spawn_blocking({
        let base = handler.base.clone();
        move || smoke(&[&base])
    })
    .await
    .unwrap();
    assert!(reads_only.status.success(), "{}", text(&reads_only));
    assert!(text(&reads_only).contains("reads only"), "{}", text(&reads_only));
}

/// A blog whose change feed nobody delivers (`BLOG_CHANGE_FEED=host` with no Functions host):
/// every request answers, but the post never reaches `users`: the smoke test fails and says so.
#[tokio::test]
async fn the_smoke_test_fails_naming_the_copy_that_never_arrives() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[("BLOG_CHANGE_FEED", "host")]);
    let output = tokio::task::spawn_blocking({
        let base = handler.base.clone();
        move || smoke(&[&base, "--dev-user", "smoke-principal", "--wait", "2"])
    })
    .await
    .unwrap();
    let shown = text(&output);
    assert!(!output.status.success(), "{shown}");
    assert!(shown.contains("smoke test failed at Q3: not copied into users within 2 s"), "{shown}");
    assert!(shown.contains("change feed"), "{shown}");
}

#[test]
fn bad_arguments_are_refused_with_what_to_do() {
    for (args, says) in [
        (&[][..], "the blog's base URL is missing"),
        (&["localhost:7071"][..], "not an http or https URL"),
        (&["http://127.0.0.1:9", "--token", "t", "--dev-user", "d"][..], "not both"),
        (&["http://127.0.0.1:9", "--colour"][..], "unknown option"),
    ] {
        let output = smoke(args);
        assert!(!output.status.success(), "{args:?}");
        assert!(text(&output).contains(says) && text(&output).contains("usage: handler smoke"), "{args:?}: {}", text(&output));
    }
    // Nothing listens on port 9: the first step says it got no answer.
    let output = smoke(&["http://127.0.0.1:9"]);
    assert!(!output.status.success());
    assert!(text(&output).contains("smoke test failed at Q6: GET /api/feed?limit=100 got no answer"), "{}", text(&output));
}
