//! Scheduled posts: a draft its author alone reads until its time, then published by the timer
//! (the Functions host's timer trigger, or the blog's own where it follows the change feed),
//! once, whatever runs at the same time.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use blog::testing::cosmos::{Container, PageRequest, QuerySpec};
use common::TestApp;
use common::binary::Handler;
use common::host::{self, Attempt};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

fn ids(page: &Value) -> Vec<String> {
    let items = page["items"].as_array().unwrap();
    items.iter().map(|post| post["id"].as_str().unwrap().to_owned()).collect()
}

/// `now` plus `ahead`, as a writer in Paris would type it (the offset kept).
fn in_paris(ahead: Duration) -> String {
    paris(OffsetDateTime::now_utc() + ahead)
}

/// `at`, as a writer in Paris would type it.
fn paris(at: OffsetDateTime) -> String {
    at.to_offset(time::UtcOffset::from_hms(1, 0, 0).unwrap()).format(&Rfc3339).unwrap()
}

/// A blog whose own timer runs every 200 ms, so that a post scheduled a second ahead goes out
/// within the test.
async fn with_a_fast_timer() -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let config =
        blog::Config { publish_every: Duration::from_millis(200), ..TestApp::config(dir.path()) };
    let mut app = TestApp::start_configured(config).await;
    app.keep(dir);
    app
}

/// Alice's post, scheduled `ahead` from now.
async fn scheduled(app: &TestApp, ahead: Duration) -> (String, String, Value) {
    let alice = app.user("alice").await;
    let body = json!({"userId": alice, "title": "On Monday", "content": "At nine.",
        "status": "scheduled", "publishAt": in_paris(ahead)});
    let created = app.post("/api/posts", body).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["status"], "scheduled");
    let id = created.body["id"].as_str().unwrap().to_owned();
    (alice, id, created.body)
}

#[tokio::test]
async fn a_scheduled_post_is_its_authors_alone_until_the_local_timer_publishes_it() {
    let app = with_a_fast_timer().await;
    let (alice, post, created) = scheduled(&app, Duration::from_secs(2)).await;
    let publish_at = created["publishAt"].as_str().unwrap().to_owned();
    assert!(publish_at.ends_with('Z') && publish_at.len() == 24, "kept in UTC: {publish_at}");
    let path = format!("/api/posts/{post}");
    app.send_as(None, Method::GET, &path, None).await.problem(404);
    let drafts = format!("/api/users/{alice}/drafts");
    assert_eq!(app.send_as(Some(&alice), Method::GET, &drafts, None).await.status, StatusCode::OK);
    // Her page lists it among her drafts with its time, once the change feed has copied it
    // (well within the two seconds before its time).
    let mut page = String::new();
    for _ in 0..30 {
        page = reqwest::Client::new()
            .get(format!("{}/users/{alice}", app.base))
            .header("cookie", format!("blog_dev_user={alice}"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if page.contains("scheduled for") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(page.contains("Your drafts") && page.contains("scheduled for"), "{page}");

    let published = app.eventually(&path, |post| post["title"] == "On Monday").await.body;
    assert!(
        published.get("status").is_none() && published.get("publishAt").is_none(),
        "{published}"
    );
    assert!(
        published["creationDate"].as_str().unwrap() >= publish_at.as_str(),
        "dated when published, at its time or after: {published}"
    );
    app.eventually("/api/feed", |feed| ids(feed) == [post.clone()]).await;
    app.eventually(&format!("/api/users/{alice}/posts"), |page| ids(page) == [post.clone()]).await;
}

#[tokio::test]
async fn the_hosts_timer_publishes_each_post_due_once_under_two_runs_at_once() {
    let app = TestApp::start_as_host().await;
    let (_, post, _) = scheduled(&app, Duration::from_millis(1_500)).await;
    // The host's change feed delivers the post: the timer's list now holds it.
    let stored: Value =
        app.state.store.read(blog::Container::Posts, &post, &post).await.unwrap().unwrap();
    let delivered = host::invoke(
        &app,
        "PostsChangeFeed",
        &host::cosmos_invocation("PostsChangeFeed", &[stored], Attempt::Retry(0)),
    )
    .await;
    assert_eq!(delivered.status, StatusCode::OK, "{}", delivered.body);

    // Before its time: nothing.
    let early = host::invoke(&app, "PublishScheduled", &host::timer_invocation(false)).await;
    assert_eq!(early.status, StatusCode::OK, "{}", early.body);
    assert!(early.body["Logs"][0].as_str().unwrap().contains("0 published"), "{}", early.body);
    app.send_as(None, Method::GET, &format!("/api/posts/{post}"), None).await.problem(404);

    tokio::time::sleep(Duration::from_millis(1_600)).await;
    let timer = host::timer_invocation(true);
    let (first, second) = tokio::join!(
        host::invoke(&app, "PublishScheduled", &timer),
        host::invoke(&app, "PublishScheduled", &timer)
    );
    let published: usize = [&first, &second]
        .iter()
        .map(|run| {
            assert_eq!(run.status, StatusCode::OK, "{}", run.body);
            let line = run.body["Logs"][0].as_str().unwrap().to_owned();
            assert!(line.starts_with("PublishScheduled (past due): "), "{line}");
            usize::from(line.contains(": 1 published"))
        })
        .sum();
    assert_eq!(published, 1, "published once: {} {}", first.body, second.body);
    let read = app.send_as(None, Method::GET, &format!("/api/posts/{post}"), None).await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);

    // An invocation not of the host's shape is set aside, not retried.
    let odd = host::invoke(&app, "PublishScheduled", br#"{"Data":{"timer":"soon"}}"#).await;
    assert_eq!(odd.status, StatusCode::OK, "{}", odd.body);
    assert!(odd.body["Logs"][0].as_str().unwrap().contains("set aside"), "{}", odd.body);
}

#[tokio::test]
async fn a_post_rescheduled_or_sent_back_to_draft_is_not_published_from_its_old_time() {
    let app = with_a_fast_timer().await;
    let (alice, post, _) = scheduled(&app, Duration::from_secs(1)).await;
    let path = format!("/api/posts/{post}");
    let later = json!({"title": "On Monday", "content": "At nine.", "status": "scheduled",
        "publishAt": in_paris(Duration::from_secs(3600))});
    assert_eq!(app.put(&path, later).await.status, StatusCode::OK);
    let (_, other, _) = {
        let body = json!({"userId": alice, "title": "Soon", "content": "Then not.",
            "status": "scheduled", "publishAt": in_paris(Duration::from_secs(1))});
        let created = app.post("/api/posts", body).await;
        ((), created.body["id"].as_str().unwrap().to_owned(), ())
    };
    let back = json!({"title": "Soon", "content": "Then not.", "status": "draft"});
    assert_eq!(app.put(&format!("/api/posts/{other}"), back).await.status, StatusCode::OK);
    tokio::time::sleep(Duration::from_secs(3)).await;
    app.send_as(None, Method::GET, &path, None).await.problem(404);
    app.send_as(None, Method::GET, &format!("/api/posts/{other}"), None).await.problem(404);
    let own = app.send_as(Some(&alice), Method::GET, &path, None).await.body;
    assert_eq!(own["status"], "scheduled", "{own}");
}

#[tokio::test]
async fn a_publication_time_that_is_not_one_is_refused_and_nothing_is_written() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let hour = Duration::from_secs(3600);
    let cases = [
        (json!("scheduled"), Value::Null, "needs `publishAt`"),
        (json!("scheduled"), json!("2026-12-07T09:00:00"), "offset from UTC"),
        (json!("scheduled"), json!("next monday"), "is not an RFC 3339"),
        (
            json!("scheduled"),
            json!(paris(OffsetDateTime::now_utc() - hour)),
            "is not in the future",
        ),
        (json!("scheduled"), json!(in_paris(hour * 24 * 400)), "more than 366 days ahead"),
        (json!("draft"), json!(in_paris(hour)), "is for a scheduled post"),
        (Value::Null, json!(in_paris(hour)), "is for a scheduled post"),
    ];
    for (status, publish_at, said) in cases {
        let mut body = json!({"userId": alice, "title": "T", "content": "C"});
        if !status.is_null() {
            body["status"] = status.clone();
        }
        if !publish_at.is_null() {
            body["publishAt"] = publish_at.clone();
        }
        let detail = app.post("/api/posts", body).await.problem(400);
        assert!(detail.contains(said), "{status} {publish_at}: {detail}");
    }
    let drafts = format!("/api/users/{alice}/drafts");
    assert!(ids(&app.send_as(Some(&alice), Method::GET, &drafts, None).await.body).is_empty());
}

/// `GET path` of the real binary at `base` as `user` (`None`: anonymous): status and body.
async fn get(base: &str, user: Option<&str>, path: &str) -> (StatusCode, Value) {
    let mut request = reqwest::Client::new().get(format!("{base}{path}"));
    if let Some(user) = user {
        request = request.header("x-dev-user", user);
    }
    let answer = request.send().await.unwrap();
    let status = answer.status();
    (status, answer.json().await.unwrap_or(Value::Null))
}

/// `GET path` until `holds` is true of the body, for at most 20 s.
async fn until(
    base: &str,
    user: Option<&str>,
    path: &str,
    holds: impl Fn(StatusCode, &Value) -> bool,
) -> Value {
    for _ in 0..400 {
        let (status, body) = get(base, user, path).await;
        if holds(status, &body) {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{path} never answered as expected");
}

/// The real binary killed (`kill -9`) while a post waits for its time, and again right after
/// the timer published one: started again, the first is published at once (the missed run
/// caught up at the start) and the second is not published a second time; both are copied.
#[tokio::test]
async fn a_scheduled_post_is_published_once_across_kill_9() {
    let data = tempfile::tempdir().unwrap();
    let every_second = [("BLOG_PUBLISH_EVERY", "1")];
    let handler = Handler::start(data.path(), &[]);
    let base = handler.base.clone();
    let client = reqwest::Client::new();
    let write = |method: reqwest::Method, path: &str, body: Value| {
        client
            .request(method, format!("{base}{path}"))
            .header("x-dev-user", "ada")
            .json(&body)
            .send()
    };
    write(reqwest::Method::POST, "/api/users", json!({"username": "ada"})).await.unwrap();
    let schedule = |title: &str, ahead: Duration| json!({"userId": "ada", "title": title, "content": "Then.", "status": "scheduled", "publishAt": in_paris(ahead)});
    let asleep: Value =
        write(reqwest::Method::POST, "/api/posts", schedule("Asleep", Duration::from_secs(2)))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    let asleep = asleep["id"].as_str().unwrap().to_owned();
    // Listed for the timer by the change feed (the drafts list is the same delivery's copy).
    until(&base, Some("ada"), "/api/users/ada/drafts", |_, page| ids(page) == [asleep.clone()])
        .await;
    handler.kill_9();
    tokio::time::sleep(Duration::from_secs(3)).await;

    // Started again, its timer a minute apart: its first run, at the start, publishes what was
    // due while it was down (the 20 s waited for it are well within the minute).
    let handler = Handler::start(data.path(), &[]);
    let base = handler.base.clone();
    let path = format!("/api/posts/{asleep}");
    let published = until(&base, None, &path, |status, _| status == StatusCode::OK).await;
    until(&base, None, "/api/feed", |_, feed| ids(feed) == [asleep.clone()]).await;
    handler.stop();
    let handler = Handler::start(data.path(), &every_second);
    let base = handler.base.clone();

    // Killed right after the timer published a second post, maybe before its copies.
    let client = reqwest::Client::new();
    let body = schedule("Killed after", Duration::from_secs(1));
    let second: Value = client
        .post(format!("{base}/api/posts"))
        .header("x-dev-user", "ada")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let second = second["id"].as_str().unwrap().to_owned();
    let second_path = format!("/api/posts/{second}");
    let first_seen = until(&base, None, &second_path, |status, _| status == StatusCode::OK).await;
    handler.kill_9();
    let handler = Handler::start(data.path(), &every_second);
    let base = handler.base.clone();
    let feed = until(&base, None, "/api/feed", |_, feed| ids(feed).len() == 2).await;
    assert_eq!(ids(&feed), [second.clone(), asleep.clone()], "each once, newest first");
    let (_, after) = get(&base, None, &second_path).await;
    assert_eq!(after["creationDate"], first_seen["creationDate"], "published once: {after}");
    assert_eq!(get(&base, None, &path).await.1["creationDate"], published["creationDate"]);
    // And neither is a draft any more.
    until(&base, Some("ada"), "/api/users/ada/drafts", |_, page| ids(page).is_empty()).await;
}

/// A scheduled post deleted before its time: the timer's run finds its listing, reads the post
/// gone, and takes the listing off; nothing is published.
#[tokio::test]
async fn a_scheduled_post_deleted_before_its_time_is_never_published() {
    let app = with_a_fast_timer().await;
    let (alice, post, _) = scheduled(&app, Duration::from_secs(1)).await;
    let listed = || async {
        let query = QuerySpec { sql: "SELECT * FROM c".into(), parameters: vec![] };
        let page = PageRequest { size: 10, continuation: None };
        app.state.store.query_documents(Container::Feed, "scheduled", query, page).await.unwrap().0
    };
    for _ in 0..40 {
        if !listed().await.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(listed().await.len(), 1, "listed for the timer");
    let path = format!("/api/posts/{post}");
    let deleted = app.send_as(Some(&alice), Method::DELETE, &path, None).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    tokio::time::sleep(Duration::from_secs(2)).await;
    app.send_as(None, Method::GET, &path, None).await.problem(404);
    assert!(ids(&app.get("/api/feed").await.body).is_empty());
    assert!(listed().await.is_empty(), "the listing taken off");
}
