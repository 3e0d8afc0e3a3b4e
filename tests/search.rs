//! Q8, `GET /api/search`: posts found by their words in the article's four languages, ranked
//! title above tags above body, paged stably; bad queries refused with a clear 400.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use common::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The ids of a search's results, in order.
fn found(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a search page: {page}"))
        .iter()
        .map(|item| item["post"]["id"].as_str().unwrap().to_owned())
        .collect()
}

fn search(q: &str) -> String {
    let mut encoded = String::new();
    for byte in q.bytes() {
        if byte.is_ascii_alphanumeric() {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    format!("/api/search?q={encoded}")
}

async fn post(app: &TestApp, author: &str, title: &str, content: &str, tags: &[&str]) -> String {
    let body = json!({"userId": author, "title": title, "content": content, "tags": tags});
    let answer = app.post("/api/posts", body).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    answer.body["id"].as_str().unwrap().to_owned()
}

/// Waits until a search for `q` finds exactly `wanted`, in any order (equal scores are in the
/// posts' ids' order).
async fn finds_all(app: &TestApp, q: &str, wanted: &[&String]) {
    let mut wanted: Vec<String> = wanted.iter().map(|id| (*id).clone()).collect();
    wanted.sort();
    app.eventually(&search(q), |page| {
        let mut found = match page.get("items") {
            Some(_) => found(page),
            None => return false,
        };
        found.sort();
        found == wanted
    })
    .await;
}

/// Waits until a search for `q` finds exactly `wanted`, in order.
async fn finds(app: &TestApp, q: &str, wanted: &[&String]) {
    let wanted: Vec<String> = wanted.iter().map(|id| (*id).clone()).collect();
    app.eventually(&search(q), |page| page.get("items").is_some() && found(page) == wanted).await;
}

#[tokio::test]
async fn a_post_is_found_by_a_word_of_its_title_its_body_and_a_tag() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let id =
        post(&app, &alice, "Kites over the harbour", "Strings snapped in the gale.", &["Weather"])
            .await;
    finds_all(&app, "harbour", &[&id]).await;
    finds_all(&app, "gale", &[&id]).await;
    finds_all(&app, "weather", &[&id]).await;
    finds_all(&app, "KITE", &[&id]).await;
    let page = app.get(&search("gale")).await;
    assert_eq!(page.body["complete"], true);
    let snippet = &page.body["items"][0]["snippet"];
    let marked: Vec<&str> = snippet
        .as_array()
        .unwrap()
        .iter()
        .filter(|part| part["marked"] == true)
        .map(|part| part["text"].as_str().unwrap())
        .collect();
    assert_eq!(marked, ["gale"], "{snippet}");
    assert_eq!(page.body["items"][0]["post"]["userUsername"], "alice");
}

#[tokio::test]
async fn stemmed_forms_find_posts_in_each_of_the_four_languages() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let english = post(
        &app,
        &alice,
        "Flying a kite",
        "A kite needs wind, a long string and patience on the beach.",
        &[],
    )
    .await;
    let german = post(&app, &alice, "Die Partition", "Eine Partition in Cosmos DB wird durch den Partitionsschlüssel bestimmt, und jede Abfrage sollte nur eine Partition lesen.", &[]).await;
    let spanish = post(&app, &alice, "La partición", "Una partición lógica contiene todos los elementos con la misma clave de partición, y cada consulta debería leer una sola partición.", &[]).await;
    let russian = post(
        &app,
        &alice,
        "Модель данных",
        "Модель данных в Cosmos DB строится вокруг запросов, которые выполняет приложение.",
        &[],
    )
    .await;
    finds_all(&app, "kites", &[&english]).await;
    finds_all(&app, "Partitionen", &[&german]).await;
    finds_all(&app, "particiones", &[&spanish]).await;
    finds_all(&app, "модели", &[&russian]).await;
}

#[tokio::test]
async fn a_title_match_ranks_above_a_tag_match_above_a_body_match() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let body =
        post(&app, &alice, "Notes", "The lighthouse keeper wrote about the lighthouse twice.", &[])
            .await;
    let tag = post(&app, &alice, "Notes again", "Nothing of it here.", &["lighthouse"]).await;
    let title = post(&app, &alice, "The lighthouse", "Nothing of it here.", &[]).await;
    finds(&app, "lighthouse", &[&title, &tag, &body]).await;
}

#[tokio::test]
async fn phrases_and_exclusions_narrow_what_is_found() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let hot = post(&app, &alice, "Partitions", "A hot partition slows every write.", &[]).await;
    let key =
        post(&app, &alice, "Partitions", "The partition key decides where a write goes.", &[])
            .await;
    finds_all(&app, "partition", &[&hot, &key]).await;
    finds_all(&app, "\"partition key\"", &[&key]).await;
    finds_all(&app, "partition -hot", &[&key]).await;
    finds_all(&app, "partition -\"hot partition\"", &[&key]).await;
}

#[tokio::test]
async fn a_post_is_no_longer_found_once_deleted_or_its_word_edited_out() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let edited = post(&app, &alice, "Seagulls", "Loud seagulls at dawn.", &[]).await;
    let deleted = post(&app, &alice, "More seagulls", "Seagulls again.", &[]).await;
    finds_all(&app, "seagulls", &[&deleted, &edited]).await;
    let answer = app
        .put(
            &format!("/api/posts/{edited}"),
            json!({"title": "Pigeons", "content": "Quiet pigeons."}),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    finds_all(&app, "seagulls", &[&deleted]).await;
    finds_all(&app, "pigeons", &[&edited]).await;
    let answer = app.send(Method::DELETE, &format!("/api/posts/{deleted}"), None).await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT, "{}", answer.body);
    finds_all(&app, "seagulls", &[]).await;
}

#[tokio::test]
async fn a_draft_is_not_found_by_anyone() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let body =
        json!({"userId": alice, "title": "Secret lagoon", "content": "Hidden.", "status": "draft"});
    assert_eq!(app.post("/api/posts", body).await.status, StatusCode::CREATED);
    let public = post(&app, &alice, "Public lagoon", "Open.", &[]).await;
    finds_all(&app, "lagoon", &[&public]).await;
}

#[tokio::test]
async fn pages_stay_stable_while_posts_are_written() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(post(&app, &alice, &format!("Harbour {n}"), "Boats.", &[]).await);
    }
    app.eventually(&search("harbour"), |page| {
        page["items"].as_array().is_some_and(|items| items.len() == 5)
    })
    .await;
    let first = app.get(&format!("{}&limit=2", search("harbour"))).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let mut seen = found(&first.body);
    let mut token = first.body["continuationToken"].as_str().unwrap().to_owned();
    // Written while a reader pages: a new post with the word.
    post(&app, &alice, "Harbour new", "Boats.", &[]).await;
    loop {
        let next =
            app.get(&format!("{}&limit=2&continuationToken={token}", search("harbour"))).await;
        assert_eq!(next.status, StatusCode::OK, "{}", next.body);
        seen.extend(found(&next.body));
        match next.body["continuationToken"].as_str() {
            Some(next) => token = next.to_owned(),
            None => break,
        }
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), seen.len(), "no post twice: {seen:?}");
    for id in &ids {
        assert!(seen.contains(id), "every post there was is found: {seen:?}");
    }
}

#[tokio::test]
async fn a_search_reads_single_partitions_only() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let id = post(&app, &alice, "Kites", "Wind.", &[]).await;
    finds_all(&app, "kites wind", &[&id]).await;
    let answer = app.get(&search("kites wind")).await;
    let partitions = answer.partitions();
    assert!(!partitions.contains('*'), "{partitions}");
    assert!(partitions.contains("words="), "{partitions}");
}

#[tokio::test]
async fn bad_queries_are_refused_with_a_problem_saying_why() {
    let app = TestApp::start().await;
    for (q, says) in [
        ("и в", "too common"),
        ("***", "no word"),
        ("kite\u{1}", "control character"),
        ("Сosmos", "mixes"),
        ("one two three four five six seven eight nine", "at most 8"),
    ] {
        let answer = app.get(&search(q)).await;
        let detail = answer.problem(400);
        assert!(detail.contains(says), "{q:?}: {detail}");
    }
    let thousand = vec!["kite"; 1000].join(" ");
    assert!(app.get(&search(&thousand)).await.problem(400).contains("bytes"));
    let long = "k".repeat(257);
    assert!(app.get(&search(&long)).await.problem(400).contains("257 bytes"));
    assert!(app.get("/api/search").await.problem(400).contains("`q`"));
    assert!(app.get("/api/search?q=kite&limit=26").await.problem(400).contains("limit"));
    assert!(
        app.get("/api/search?q=kite&continuationToken=abc").await.problem(400).contains("token")
    );
}

#[tokio::test]
async fn query_syntax_of_the_store_is_searched_as_words() {
    let app = TestApp::start().await;
    for q in ["SELECT * FROM c", "\" OR 1=1 --", "c.id = '1'", "kite*", "ARRAY_CONTAINS(c.ids, 1)"]
    {
        let answer = app.get(&search(q)).await;
        assert!(
            answer.status == StatusCode::OK || answer.status == StatusCode::BAD_REQUEST,
            "{q}: {}",
            answer.body
        );
        if answer.status == StatusCode::OK {
            assert_eq!(found(&answer.body), Vec::<String>::new(), "{q}");
        }
    }
}

/// A thousand hostile queries against the handler binary, as `main` starts it: each is
/// answered 200 or 400 (a query too long for the request line before it reaches the handler:
/// 414 or 431), never a 5xx, and the handler serves on.
#[tokio::test]
async fn hostile_queries_are_answered_or_refused_by_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let mut handler = common::binary::Handler::start(dir.path(), &[]);
    let client = reqwest::Client::new();
    let writer = "hostile-writer";
    let body = json!({"username": writer});
    let user = client.post(format!("{}/api/users", handler.base)).header("x-dev-user", writer);
    assert_eq!(user.json(&body).send().await.unwrap().status(), StatusCode::CREATED);
    let post = json!({"userId": writer, "title": "Kites and storms", "content": "Kites fly."});
    let created = client.post(format!("{}/api/posts", handler.base)).header("x-dev-user", writer);
    assert_eq!(created.json(&post).send().await.unwrap().status(), StatusCode::CREATED);
    let pieces = [
        "\"",
        "-",
        "*",
        "?",
        "OR",
        "SELECT",
        "c.id",
        "=",
        "'",
        "\\",
        "(",
        ")",
        ":",
        "%",
        "kite",
        "kites",
        "storm",
        "the",
        "und",
        "и",
        "\u{202E}",
        "\u{FEFF}",
        "\u{200B}",
        "Ω",
        "ﬁ",
        "２０２４",
        "Сosmos",
        "é",
        "e\u{301}",
        "🪁",
        "\u{1}",
        "\u{7F}",
        "--",
        "/*",
        "*/",
        "ARRAY_CONTAINS(",
    ];
    let long_word = "a".repeat(300);
    let long_cyrillic = "я".repeat(100);
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for n in 0..1000 {
        let words = 1 + next() % 40;
        let mut q = String::new();
        for _ in 0..words {
            let piece = match next() % 50 {
                0 => long_word.as_str(),
                1 => long_cyrillic.as_str(),
                pick => pieces[pick as usize % pieces.len()],
            };
            q.push_str(piece);
            if next() % 3 != 0 {
                q.push(' ');
            }
        }
        let answer = client.get(format!("{}{}", handler.base, search(&q))).send().await.unwrap();
        let status = answer.status();
        let text = answer.text().await.unwrap();
        assert!(
            status == StatusCode::OK || status == StatusCode::BAD_REQUEST,
            "query {n} {q:?}: {status} {text}"
        );
        if status == StatusCode::BAD_REQUEST {
            assert!(text.contains("\"detail\""), "query {n}: a problem with a detail: {text}");
        }
    }
    // A query of a megabyte: no client library builds such an address, so it goes on the wire.
    let megabyte = search(&"kite ".repeat(200_000));
    let mut stream = tokio::net::TcpStream::connect(handler.address()).await.unwrap();
    let head = format!("GET {megabyte} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    // The server may answer and close before it has read it all: a failed write is fine.
    let _ = stream.write_all(head.as_bytes()).await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let status_line = String::from_utf8_lossy(&answer).lines().next().unwrap_or("").to_owned();
    assert!(
        ["414", "431", "400"].iter().any(|status| status_line.contains(status)),
        "a megabyte's query: {status_line:?}"
    );
    assert!(handler.is_alive(), "the handler serves on");
    let after = client.get(format!("{}{}", handler.base, search("kites"))).send().await.unwrap();
    assert_eq!(after.status(), StatusCode::OK);
}
