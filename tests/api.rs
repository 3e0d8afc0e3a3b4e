//! Every request of the article's table through HTTP, on the embedded store.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use common::TestApp;
use reqwest::StatusCode;
use serde_json::{Value, json};

fn is_creation_date(value: &Value) -> bool {
    let text = value.as_str().unwrap_or_default();
    // 2026-11-22T06:05:04.007Z: RFC 3339, UTC, milliseconds.
    text.len() == 24
        && text.ends_with('Z')
        && text.as_bytes()[19] == b'.'
        && time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).is_ok()
}

#[tokio::test]
async fn c1_q1_a_user_is_created_edited_then_read() {
    let app = TestApp::start().await;

    let created = app.post("/api/users", json!({"username": "alice"})).await;
    assert_eq!(created.status, StatusCode::CREATED);
    let id = created.body["id"].as_str().unwrap().to_owned();
    assert_eq!(created.body, json!({"id": id, "type": "user", "userId": id, "username": "alice"}));
    assert_eq!(created.header("location"), Some(format!("/api/users/{id}").as_str()));

    let read = app.get(&format!("/api/users/{id}")).await;
    assert_eq!(read.status, StatusCode::OK);
    assert_eq!(read.body, created.body);
    assert_eq!(read.operations(), 1, "Q1 is one point read");
    assert_eq!(read.partitions(), "users=1");

    let edited = app.put(&format!("/api/users/{id}"), json!({"username": "alice2"})).await;
    assert_eq!(edited.status, StatusCode::OK);
    assert_eq!(edited.body["username"], "alice2");
    assert_eq!(app.get(&format!("/api/users/{id}")).await.body["username"], "alice2");

    app.put("/api/users/nobody", json!({"username": "x"})).await.problem(404);
    app.get("/api/users/nobody").await.problem(404);
}

#[tokio::test]
async fn c1_usernames_are_unique_ignoring_case_or_unicode_form() {
    let app = TestApp::start().await;
    let alice = app.user("Alice").await;
    for same in ["alice", "ALICE", "Ａｌｉｃｅ", " alice", "al\u{200B}ice"] {
        let detail = app.post("/api/users", json!({"username": same})).await.problem(409);
        assert!(detail.starts_with(&format!("`username` {same:?} is taken")), "{detail}");
    }
    let bob = app.user("bob").await;
    let detail =
        app.put(&format!("/api/users/{bob}"), json!({"username": "ALICE"})).await.problem(409);
    assert!(detail.contains("\"ALICE\" is taken"), "{detail}");
    assert_eq!(
        app.get(&format!("/api/users/{bob}")).await.body["username"],
        "bob",
        "a refused rename changes nothing"
    );

    // Another form of one's own name is fine, and keeps it.
    let recased = app.put(&format!("/api/users/{alice}"), json!({"username": "ALICE"})).await;
    assert_eq!(
        (recased.status, recased.body["username"].as_str()),
        (StatusCode::OK, Some("ALICE")),
        "{}",
        recased.body
    );
    app.post("/api/users", json!({"username": "alice"})).await.problem(409);

    // A rename frees the old name at once.
    let renamed = app.put(&format!("/api/users/{alice}"), json!({"username": "Alicia"})).await;
    assert_eq!(
        (renamed.operations(), renamed.partitions()),
        (5, "users=3"),
        "the user and the old name's reservation read, the new name claimed, the user written, the old name released"
    );
    app.user("alice").await;
    let detail =
        app.put(&format!("/api/users/{bob}"), json!({"username": "alicia"})).await.problem(409);
    assert!(detail.contains("alicia"), "{detail}");
}

#[tokio::test]
async fn c2_q2_a_post_is_created_edited_then_read() {
    let app = TestApp::start().await;
    let author = app.user("alice").await;

    let created = app
        .post("/api/posts", json!({"userId": author, "title": "Hello", "content": "First post."}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(
        created.partitions(),
        "users=1, posts=1",
        "the author's name, then the post's partition"
    );
    let post = created.body.clone();
    let id = post["id"].as_str().unwrap().to_owned();
    assert_eq!(created.header("location"), Some(format!("/api/posts/{id}").as_str()));
    assert_eq!(post["type"], "post");
    assert_eq!(post["postId"], id.as_str());
    assert_eq!(post["userId"], author.as_str());
    assert_eq!(post["userUsername"], "alice");
    assert_eq!((post["commentCount"].clone(), post["likeCount"].clone()), (json!(0), json!(0)));
    assert!(is_creation_date(&post["creationDate"]), "{}", post["creationDate"]);
    let fields: Vec<&str> = post.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(fields.len(), 10, "exactly the article's post fields: {fields:?}");

    let read = app.get(&format!("/api/posts/{id}")).await;
    assert_eq!(read.status, StatusCode::OK);
    assert_eq!(read.body, post);
    assert_eq!(read.operations(), 1, "Q2 is one point read");
    assert_eq!(read.partitions(), "posts=1");
    assert!(read.charge() > 0.0);

    // An edit changes title and content only; counters stay what the scripts made them.
    let commenter = app.user("bob").await;
    app.post(&format!("/api/posts/{id}/comments"), json!({"userId": commenter, "content": "Nice"}))
        .await;
    let edited = app
        .put(&format!("/api/posts/{id}"), json!({"title": "Hello again", "content": "Edited."}))
        .await;
    assert_eq!(edited.status, StatusCode::OK, "{}", edited.body);
    assert_eq!(edited.body["title"], "Hello again");
    assert_eq!(edited.body["content"], "Edited.");
    assert_eq!(edited.body["commentCount"], 1);
    assert_eq!(edited.body["creationDate"], post["creationDate"]);
    // (An edited post says when it was edited; a post never edited has no editedAt.)
    assert!(is_creation_date(&edited.body["editedAt"]), "{}", edited.body);
    assert_eq!(edited.body["userUsername"], "alice");
    assert_eq!(app.get(&format!("/api/posts/{id}")).await.body, edited.body);

    app.put("/api/posts/missing", json!({"title": "t", "content": "c"})).await.problem(404);
    app.get("/api/posts/missing").await.problem(404);
    let detail = app
        .post("/api/posts", json!({"userId": "ghost", "title": "t", "content": "c"}))
        .await
        .problem(422);
    assert!(detail.contains("ghost"), "{detail}");
}

#[tokio::test]
async fn c3_q4_comments_are_listed_oldest_first() {
    let app = TestApp::start().await;
    let author = app.user("alice").await;
    let commenter = app.user("bob").await;
    let post = app.post_by(&author, "Hello").await;

    let mut ids = Vec::new();
    for n in 0..3 {
        let comment = app
            .post(
                &format!("/api/posts/{post}/comments"),
                json!({"userId": commenter, "content": format!("comment {n}")}),
            )
            .await;
        assert_eq!(comment.status, StatusCode::CREATED, "{}", comment.body);
        assert_eq!(
            comment.partitions(),
            "users=1, posts=1",
            "the commenter's name, then the post's partition"
        );
        assert_eq!(comment.body["type"], "comment");
        assert_eq!(comment.body["postId"], post.as_str());
        assert_eq!(comment.body["userId"], commenter.as_str());
        assert_eq!(comment.body["userUsername"], "bob");
        assert!(is_creation_date(&comment.body["creationDate"]));
        assert_eq!(
            comment.body.as_object().unwrap().len(),
            7,
            "exactly the article's comment fields: {}",
            comment.body
        );
        ids.push(comment.body["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body["commentCount"], 3);

    let list = app.get(&format!("/api/posts/{post}/comments")).await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(list.operations(), 1, "Q4 is one single-partition query");
    assert_eq!(list.partitions(), "posts=1");
    let listed: Vec<&str> =
        list.body["items"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(listed, ids, "oldest first");
    assert_eq!(list.body["continuationToken"], Value::Null);

    app.post("/api/posts/missing/comments", json!({"userId": commenter, "content": "x"}))
        .await
        .problem(404);
    app.post(&format!("/api/posts/{post}/comments"), json!({"userId": "ghost", "content": "x"}))
        .await
        .problem(422);
    assert_eq!(
        app.get(&format!("/api/posts/{post}")).await.body["commentCount"],
        3,
        "refused comments are not counted"
    );
}

#[tokio::test]
async fn c4_q5_a_post_is_liked_once_per_user() {
    let app = TestApp::start().await;
    let author = app.user("alice").await;
    let fan = app.user("bob").await;
    let post = app.post_by(&author, "Hello").await;

    let like = app.post(&format!("/api/posts/{post}/likes"), json!({"userId": fan})).await;
    assert_eq!(like.status, StatusCode::CREATED, "{}", like.body);
    assert_eq!(
        like.partitions(),
        "users=1, posts=1",
        "the liker's name, then the post's partition"
    );
    assert_eq!(like.body["type"], "like");
    assert_eq!(like.body["userUsername"], "bob");
    assert_eq!(
        like.body.as_object().unwrap().len(),
        6,
        "exactly the article's like fields: {}",
        like.body
    );

    let again = app.post(&format!("/api/posts/{post}/likes"), json!({"userId": fan})).await;
    again.problem(409);
    assert_eq!(
        app.get(&format!("/api/posts/{post}")).await.body["likeCount"],
        1,
        "a second like does not count"
    );

    let list = app.get(&format!("/api/posts/{post}/likes")).await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(list.operations(), 1, "Q5 is one single-partition query");
    assert_eq!(list.partitions(), "posts=1");
    assert_eq!(list.body["items"], json!([like.body]));

    app.post("/api/posts/missing/likes", json!({"userId": fan})).await.problem(404);
}

#[tokio::test]
async fn q3_q6_read_the_copies_in_one_query_each() {
    let app = TestApp::start().await;
    let author = app.user("alice").await;

    // A user without posts: the empty page alone cannot tell "no posts yet" from "no such
    // user", so one point read of the user tells, in the same partition.
    let none_yet = app.get(&format!("/api/users/{author}/posts")).await;
    assert_eq!(none_yet.status, StatusCode::OK);
    assert_eq!(none_yet.body["items"], json!([]));
    assert_eq!(
        none_yet.operations(),
        3,
        "the user's posts mark, Q3's query, then the user's point read"
    );
    assert_eq!(none_yet.partitions(), "users=1");
    let detail = app.get("/api/users/nobody/posts").await.problem(404);
    assert!(detail.contains("\"nobody\""), "{detail}");

    let post = app.post_by(&author, "Hello").await;
    let posts = app
        .eventually(&format!("/api/users/{author}/posts"), |body| {
            body["items"][0]["id"] == post.as_str()
        })
        .await;
    assert_eq!(posts.status, StatusCode::OK);
    assert_eq!(posts.operations(), 2, "the user's posts mark, then Q3: one single-partition query");
    assert_eq!(posts.partitions(), "users=1", "the mark is in the user's partition");

    let feed = app.get("/api/feed?limit=5").await;
    assert_eq!(feed.status, StatusCode::OK);
    assert_eq!(feed.operations(), 2, "the feed's mark, then Q6: one single-partition query");
    assert_eq!(
        feed.partitions(),
        "feed=2",
        "the mark has a partition of its own, Q6 reads the posts'"
    );
    assert!(feed.body["items"].is_array());
    assert!(feed.body.as_object().unwrap().contains_key("continuationToken"));
}

#[tokio::test]
async fn lists_page_with_continuation_tokens() {
    let app = TestApp::start().await;
    let author = app.user("alice").await;
    let post = app.post_by(&author, "Popular").await;
    let other_post = app.post_by(&author, "Other").await;
    let mut created = Vec::new();
    for n in 0..23 {
        let answer = app
            .post(
                &format!("/api/posts/{post}/comments"),
                json!({"userId": author, "content": format!("c{n}")}),
            )
            .await;
        created.push(answer.body["id"].as_str().unwrap().to_owned());
    }

    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut path = format!("/api/posts/{post}/comments?limit=10");
        if let Some(token) = &token {
            path.push_str(&format!("&continuationToken={}", urlencode(token)));
        }
        let page = app.get(&path).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        assert_eq!(page.operations(), 1, "one query per page");
        let items = page.body["items"].as_array().unwrap();
        assert!(items.len() <= 10);
        seen.extend(items.iter().map(|c| c["id"].as_str().unwrap().to_owned()));
        pages += 1;
        match page.body["continuationToken"].as_str() {
            Some(next) => token = Some(next.to_owned()),
            None => break,
        }
        assert!(pages < 10, "paging must end");
    }
    assert_eq!(seen, created, "every comment exactly once, oldest first");
    assert!(pages >= 3);

    // A token is refused anywhere but its own list, and when forged.
    let first = app.get(&format!("/api/posts/{post}/comments?limit=10")).await;
    let token = first.body["continuationToken"].as_str().unwrap().to_owned();
    app.get(&format!("/api/posts/{other_post}/comments?continuationToken={}", urlencode(&token)))
        .await
        .problem(400);
    app.get(&format!("/api/posts/{post}/likes?continuationToken={}", urlencode(&token)))
        .await
        .problem(400);
    app.get(&format!("/api/posts/{post}/comments?continuationToken=forged")).await.problem(400);
    app.get(&format!("/api/posts/{post}/comments?limit=0")).await.problem(400);
    app.get(&format!("/api/posts/{post}/comments?limit=101")).await.problem(400);
    app.get("/api/feed?limit=abc").await.problem(400);
    app.get("/api/feed?color=red").await.problem(400);
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test]
async fn every_response_reports_its_cosmos_cost() {
    let app = TestApp::start().await;
    let created = app.post("/api/users", json!({"username": "alice"})).await;
    assert_eq!(
        created.operations(),
        2,
        "C1 create is two writes: the name's reservation, then the user"
    );
    assert_eq!(created.partitions(), "users=2");
    assert!(created.charge() > 0.0);
    assert_eq!(created.header("x-cosmos-queries"), Some("0"), "writes, no query");
    let user = created.body["id"].as_str().unwrap();
    let posts = app.get(&format!("/api/users/{user}/posts")).await;
    assert_eq!(
        (posts.operations(), posts.header("x-cosmos-queries")),
        (3, Some("1")),
        "Q3, its mark and, the page empty, Q1"
    );
    let missing = app.get("/api/nothing-here").await;
    assert_eq!(missing.operations(), 0);
    assert_eq!(missing.charge(), 0.0);
    assert_eq!(missing.header("x-cosmos-partitions"), None, "no partition touched, no header");
    assert_eq!(missing.header("x-cosmos-queries"), None);
}

#[tokio::test]
async fn readiness_answers_the_host_only_once_the_blog_can_serve() {
    // A store with something to load, so that opening it takes a while.
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    for n in 0..60 {
        app.post_by(&alice, &format!("post {n}")).await;
    }
    let newest = app.post_by(&alice, "newest").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == newest.as_str()).await;
    let data = app.stop().await.unwrap();

    // The real binary, started as the host starts it: its port in FUNCTIONS_CUSTOMHANDLER_PORT.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut handler = std::process::Command::new(env!("CARGO_BIN_EXE_handler"))
        .env("FUNCTIONS_CUSTOMHANDLER_PORT", port.to_string())
        .env("BLOG_DATA_DIR", data.path())
        .env("RUST_LOG", "warn")
        .env_remove("CosmosDB")
        .env_remove("CosmosDB__accountEndpoint")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The host's probe (azure-functions-host, src/WebJobs.Script/Workers/Http/DefaultHttpWorkerService.cs,
    // `IsWorkerReady`): `GET http://127.0.0.1:{port}/` every few milliseconds; a refused
    // connection (a SocketException) means "not yet", any HTTP answer means "ready", and the
    // host then forwards invocations at once.
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let started = std::time::Instant::now();
    let probe = loop {
        match client.get(format!("{base}/")).send().await {
            Ok(answer) => break answer,
            Err(error) if error.is_connect() => {
                assert!(started.elapsed().as_secs() < 60, "the handler did not listen within 60 s");
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            Err(error) => panic!("the probe got no HTTP answer: {error}"),
        }
    };
    assert_eq!(probe.status(), StatusCode::OK, "the probe's answer is the front page");
    assert!(
        probe.text().await.unwrap().contains("newest"),
        "the front page shows what the store holds"
    );
    // The first invocations after the probe: everything the store held is served.
    let feed = client.get(format!("{base}/api/feed?limit=100")).send().await.unwrap();
    assert_eq!(feed.status(), StatusCode::OK);
    let feed: Value = feed.json().await.unwrap();
    assert_eq!(feed["items"].as_array().unwrap().len(), 61, "{feed}");
    let post = client.get(format!("{base}/api/posts/{newest}")).send().await.unwrap();
    assert_eq!(post.status(), StatusCode::OK);
    handler.kill().unwrap();
    handler.wait().unwrap();
}

/// Opening a blog is a future tokio can spawn on its worker threads: nothing that cannot move
/// between threads (a SQLite connection, borrowed) is held across its awaits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blog_can_be_opened_on_a_spawned_task() {
    let dir = tempfile::tempdir().unwrap();
    let config = blog::test_support::embedded_config(dir.path());
    let opened =
        tokio::spawn(async move { blog::Blog::open(&config).await }).await.expect("the task ran");
    assert!(opened.is_ok(), "the blog opened on a spawned task");
}

/// The per-user write limit: past the burst, a user's write is 429 with `Retry-After` and
/// writes nothing; another user is not limited, and reads never are.
#[tokio::test]
async fn a_user_past_the_write_limit_is_told_when_to_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let limit = blog::WriteLimitSetting { per_minute: 6, burst: 3 };
    let app = TestApp::start_configured(blog::Config {
        write_limit: Some(limit),
        ..TestApp::config(dir.path())
    })
    .await;
    let alice = app.user("alice").await;
    // Reads as the signed-in caller take nothing from the burst.
    for _ in 0..5 {
        assert_eq!(
            app.send_as(Some(&alice), reqwest::Method::GET, "/api/me", None).await.status,
            StatusCode::OK
        );
    }
    let first = app.post_by(&alice, "first").await;
    app.post_by(&alice, "second").await;
    let refused = app
        .post(
            &format!("/api/posts/{first}/comments"),
            json!({"userId": alice, "content": "a fourth write"}),
        )
        .await;
    let detail = refused.problem(429);
    assert!(
        detail.contains("the next is accepted in")
            && detail.contains("Nothing of this one was written"),
        "{detail}"
    );
    let retry_after: u64 = refused.header("retry-after").expect("Retry-After").parse().unwrap();
    assert!((1..=10).contains(&retry_after), "one write every 10 s: {retry_after}");
    assert_eq!(
        app.get(&format!("/api/posts/{first}")).await.body["commentCount"],
        0,
        "nothing was written"
    );
    assert_eq!(
        app.get(&format!("/api/posts/{first}/comments")).await.status,
        StatusCode::OK,
        "reads are not limited"
    );
    let bob = app
        .send_as(Some("bob"), reqwest::Method::POST, "/api/users", Some(json!({"username": "bob"})))
        .await;
    assert_eq!(bob.status, StatusCode::CREATED, "another user is not limited: {}", bob.body);
}
