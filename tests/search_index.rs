//! The search index that `PostsChangeFeed` keeps in `words`: a published post's postings under
//! each of its words, its record in its bucket's partition, the statistics; drafts never
//! indexed; edits write only the words that changed; deletes take everything out.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use blog::testing::cosmos::{Container, PageRequest, QuerySpec};
use common::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The partition of the totals (`model/search/index.rs`, `SUMMARY`).
const SUMMARY: &str = "§summary";
const STATS: &str = "§stats";

/// The partition of `post`'s record: its id's SHA-256, bytes 4 to 7 little-endian, modulo the
/// 256 buckets (`model/search/index.rs`, `record_bucket`).
fn docs(post: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(post.as_bytes());
    let bucket = u32::from_le_bytes([digest[4], digest[5], digest[6], digest[7]]) % 256;
    format!("§docs-{bucket:02x}")
}

/// An item of `words`, as stored (its `_etag` with it).
async fn item(app: &TestApp, partition: &str, id: &str) -> Option<Value> {
    app.state.store.read::<Value>(Container::Words, partition, id).await.unwrap()
}

/// Waits until `check` holds for the item (`None`: absent); 30 s ends a wait that would never end.
async fn until(app: &TestApp, partition: &str, id: &str, check: impl Fn(Option<&Value>) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = item(app, partition, id).await;
        if check(found.as_ref()) {
            return;
        }
        assert!(Instant::now() < deadline, "{partition}/{id} never satisfied the check: {found:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the post's record is written and finished (or, `false`, gone).
async fn indexed(app: &TestApp, post: &str, present: bool) {
    until(app, &docs(post), post, |doc| match doc {
        Some(doc) => present && doc.get("pending").is_none(),
        None => !present,
    })
    .await;
}

/// The post ids under a word, from its head or its chunks.
async fn posts_under(app: &TestApp, word: &str) -> Vec<String> {
    let query = QuerySpec { sql: "SELECT * FROM c".into(), parameters: vec![] };
    let page = PageRequest { size: 1000, continuation: None };
    let items =
        app.state.store.query_documents(Container::Words, word, query, page).await.unwrap().0;
    let mut posts: Vec<String> = items
        .iter()
        .flat_map(|item| item["postings"].as_array().cloned().unwrap_or_default())
        .map(|entry| entry[0].as_str().unwrap().to_owned())
        .collect();
    posts.sort();
    posts
}

async fn post(app: &TestApp, body: Value) -> String {
    let answer = app.post("/api/posts", body).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    answer.body["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_published_post_is_indexed_under_its_words_with_their_fields() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let id = post(
        &app,
        json!({"userId": alice, "title": "Kites in a storm", "content": "Flying kites is hard.", "tags": ["Weather"]}),
    )
    .await;
    indexed(&app, &id, true).await;
    let head = item(&app, "kite", "head").await.unwrap();
    assert_eq!(head["df"], 1);
    let entry = &head["postings"][0];
    assert_eq!(entry[0], json!(id));
    assert_eq!(entry[2], 1 | 4, "in the title and the body: {head}");
    assert_eq!(item(&app, "weather", "head").await.unwrap()["postings"][0][2], 2);
    assert!(item(&app, "the", "head").await.is_none());
    let stats = item(&app, SUMMARY, STATS).await.unwrap();
    assert_eq!((stats["posts"].clone(), stats["bodyWords"].clone()), (json!(1), json!(4)));
}

#[tokio::test]
async fn only_a_published_post_is_in_the_index() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let id = post(
        &app,
        json!({"userId": alice, "title": "Secret kites", "content": "Not yet.", "status": "draft"}),
    )
    .await;
    // The draft's copy in its author's list is made: by then the index has seen it too.
    app.eventually(&format!("/api/users/{alice}/drafts"), |_| true).await;
    let published = json!({"title": "Secret kites", "content": "Not yet.", "status": "published"});
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(item(&app, &docs(&id), &id).await.is_none(), "a draft has no record");
    assert!(item(&app, "kite", "head").await.is_none(), "nor postings");

    let answer = app.put(&format!("/api/posts/{id}"), published).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    indexed(&app, &id, true).await;
    assert_eq!(posts_under(&app, "kite").await, std::slice::from_ref(&id));

    let draft = json!({"title": "Secret kites", "content": "Not yet.", "status": "draft"});
    let answer = app.put(&format!("/api/posts/{id}"), draft).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    indexed(&app, &id, false).await;
    assert!(item(&app, "kite", "head").await.is_none());
    assert_eq!(item(&app, SUMMARY, STATS).await.unwrap()["posts"], 0);
}

#[tokio::test]
async fn an_edit_writes_only_the_words_that_changed() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let id = post(
        &app,
        json!({"userId": alice, "title": "Kites", "content": "Strings and tails and wind."}),
    )
    .await;
    indexed(&app, &id, true).await;
    let etag = |item: Option<Value>| item.unwrap()["_etag"].as_str().unwrap().to_owned();
    let (string_before, kite_before) =
        (etag(item(&app, "string", "head").await), etag(item(&app, "kite", "head").await));

    let edited = json!({"title": "Kites", "content": "Strings and tails and rain."});
    assert_eq!(app.put(&format!("/api/posts/{id}"), edited).await.status, StatusCode::OK);
    until(&app, "rain", "head", |head| head.is_some()).await;
    indexed(&app, &id, true).await;
    assert!(item(&app, "wind", "head").await.is_none(), "the word edited out is gone");
    assert_eq!(etag(item(&app, "string", "head").await), string_before, "untouched");
    assert_eq!(etag(item(&app, "kite", "head").await), kite_before, "untouched");
}

#[tokio::test]
async fn a_comment_leaves_the_index_alone() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let id = post(&app, json!({"userId": alice, "title": "Kites", "content": "Wind."})).await;
    indexed(&app, &id, true).await;
    let doc_before = item(&app, &docs(&id), &id).await.unwrap();
    let comment = json!({"userId": alice, "content": "Nice kites."});
    let answer = app.post(&format!("/api/posts/{id}/comments"), comment).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    app.eventually(&format!("/api/users/{alice}/posts"), |page| {
        page["items"][0]["commentCount"] == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(item(&app, &docs(&id), &id).await.unwrap()["_etag"], doc_before["_etag"]);
}

#[tokio::test]
async fn deleting_a_post_takes_every_posting_out() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let id =
        post(&app, json!({"userId": alice, "title": "Kites", "content": "Wind and rain."})).await;
    indexed(&app, &id, true).await;
    let answer = app.send(Method::DELETE, &format!("/api/posts/{id}"), None).await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT, "{}", answer.body);
    indexed(&app, &id, false).await;
    for word in ["kite", "wind", "rain"] {
        assert!(item(&app, word, "head").await.is_none(), "{word}");
    }
    assert_eq!(item(&app, SUMMARY, STATS).await.unwrap()["posts"], 0);
}

#[tokio::test]
async fn a_word_of_many_posts_keeps_its_count_in_chunks() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let mut ids = Vec::new();
    for n in 0..140 {
        let content = format!("Kite number {n}.");
        ids.push(
            post(&app, json!({"userId": alice, "title": format!("Post {n}"), "content": content}))
                .await,
        );
    }
    for id in &ids {
        indexed(&app, id, true).await;
    }
    let head = item(&app, "kite", "head").await.unwrap();
    assert_eq!(head["df"], 140);
    assert_eq!(head["spilled"], true);
    assert_eq!(head["postings"], json!([]));
    // One tier, past 128 postings: its first chunk was split (linear hashing).
    let spread = &head["tiers"].as_object().unwrap().values().next().unwrap().clone();
    assert!(spread["buckets"].as_u64().unwrap() + spread["split"].as_u64().unwrap() >= 2, "{head}");
    let mut expected = ids.clone();
    expected.sort();
    assert_eq!(posts_under(&app, "kite").await, expected);

    let gone = ids.pop().unwrap();
    app.send(Method::DELETE, &format!("/api/posts/{gone}"), None).await;
    indexed(&app, &gone, false).await;
    assert_eq!(item(&app, "kite", "head").await.unwrap()["df"], 139);
    ids.sort();
    assert_eq!(posts_under(&app, "kite").await, ids);
}

#[tokio::test]
async fn a_repeated_delivery_changes_nothing() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let id = post(&app, json!({"userId": alice, "title": "Kites", "content": "Wind."})).await;
    indexed(&app, &id, true).await;
    let before =
        (item(&app, &docs(&id), &id).await.unwrap(), item(&app, "kite", "head").await.unwrap());
    blog::testing::changefeed::processor::rebuild_copies(&app.state, &mut |_| {}).await.unwrap();
    let after =
        (item(&app, &docs(&id), &id).await.unwrap(), item(&app, "kite", "head").await.unwrap());
    assert_eq!(before, after);
}

/// A change interrupted after its record was written (`pending`, the postings before kept as
/// `wordsBefore`) and before its words were mended: the next delivery of the post finishes it.
#[tokio::test]
async fn an_interrupted_change_is_finished_by_the_next_delivery() {
    use common::host::{self, Attempt};
    // No local processors: this test plays the host.
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    let id = post(&app, json!({"userId": alice, "title": "Kites", "content": "Wind."})).await;
    let deliver = |version: Value| {
        let body = host::cosmos_invocation("PostsChangeFeed", &[version], Attempt::Retry(0));
        let app = &app;
        async move {
            let answer = host::invoke(app, "PostsChangeFeed", &body).await;
            assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        }
    };
    let first = app.state.store.read::<Value>(Container::Posts, &id, &id).await.unwrap().unwrap();
    deliver(first).await;
    indexed(&app, &id, true).await;
    let record = item(&app, &docs(&id), &id).await.unwrap();

    let edit = json!({"title": "Kites", "content": "Rain."});
    assert_eq!(app.put(&format!("/api/posts/{id}"), edit).await.status, StatusCode::OK);
    let edited = app.state.store.read::<Value>(Container::Posts, &id, &id).await.unwrap().unwrap();
    // What the first step of the edit's change leaves: the record pending, its words before
    // kept, its source the edit's; no word mended yet.
    let mut pending = record.clone();
    pending.as_object_mut().unwrap().retain(|name, _| !name.starts_with('_'));
    pending["pending"] = json!(true);
    pending["wordsBefore"] = record["words"].clone();
    pending["words"] = json!([{"k": "kite", "i": 800, "f": 1}, {"k": "rain", "i": 500, "f": 4}]);
    pending["hash"] = json!("");
    pending["source"] = json!({"sourceTs": edited["_ts"], "sourceEtag": edited["_etag"]});
    app.state.store.upsert(Container::Words, &docs(&id), &pending).await.unwrap();
    assert!(item(&app, "rain", "head").await.is_none());

    deliver(edited).await;
    indexed(&app, &id, true).await;
    assert!(item(&app, "wind", "head").await.is_none(), "the word edited out is taken out");
    assert_eq!(posts_under(&app, "rain").await, std::slice::from_ref(&id));
    assert_eq!(posts_under(&app, "kite").await, std::slice::from_ref(&id));
    let finished = item(&app, &docs(&id), &id).await.unwrap();
    assert!(finished.get("wordsBefore").is_none(), "{finished}");
    assert_eq!(item(&app, SUMMARY, STATS).await.unwrap()["posts"], 1);
}

/// A post whose words are all stop words has nothing to index: no record, and a comment on it
/// writes nothing either.
#[tokio::test]
async fn a_post_of_stop_words_alone_has_no_record() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let id = post(&app, json!({"userId": alice, "title": "The", "content": "And so it is."})).await;
    let marker = post(&app, json!({"userId": alice, "title": "Kites", "content": "Wind."})).await;
    indexed(&app, &marker, true).await;
    assert!(item(&app, &docs(&id), &id).await.is_none());
    assert_eq!(item(&app, SUMMARY, STATS).await.unwrap()["posts"], 1);
}

/// Posts delivered together are indexed together: a word they share gets every one's posting,
/// here 60 new posts at once, past the head's 32 into chunks in one batch. (That the word is
/// written once for them is what `cargo bench --bench search` counts, its operations a post.)
#[tokio::test]
async fn sixty_posts_in_one_delivery_are_all_indexed_under_a_shared_word() {
    use common::host::{self, Attempt};
    // No local processors: this test plays the host, with one delivery of every post.
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    let mut ids = Vec::new();
    for n in 0..60 {
        let body = json!({"userId": alice, "title": format!("Kite {n}"), "content": "Wind."});
        ids.push(post(&app, body).await);
    }
    let mut versions = Vec::new();
    for id in &ids {
        versions
            .push(app.state.store.read::<Value>(Container::Posts, id, id).await.unwrap().unwrap());
    }
    let body = host::cosmos_invocation("PostsChangeFeed", &versions, Attempt::Retry(0));
    let answer = host::invoke(&app, "PostsChangeFeed", &body).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    for id in &ids {
        indexed(&app, id, true).await;
    }
    let head = item(&app, "kite", "head").await.unwrap();
    assert_eq!((head["df"].clone(), head["spilled"].clone()), (json!(60), json!(true)), "{head}");
    ids.sort();
    assert_eq!(posts_under(&app, "kite").await, ids);
    assert_eq!(posts_under(&app, "wind").await, ids);
    assert_eq!(item(&app, SUMMARY, STATS).await.unwrap()["posts"], 60);
}

/// An index of the layout before the records were spread over buckets (all of them in `§docs`,
/// beside the statistics) is emptied by `handler rebuild-copies`, then made anew: the old
/// records and the postings they alone could find are gone.
#[tokio::test]
async fn a_rebuild_makes_an_index_of_the_earlier_layout_anew() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let id = post(&app, json!({"userId": alice, "title": "Kites", "content": "Wind."})).await;
    indexed(&app, &id, true).await;
    // What the earlier layout left: its statistics and a record in `§docs`, and a posting of a
    // post since deleted under a word no post has now.
    let words = Container::Words;
    let old_stats =
        json!({"id": STATS, "word": "§docs", "type": "stats", "posts": 2, "bodyWords": 3});
    app.state.store.upsert(words, "§docs", &old_stats).await.unwrap();
    let old_record = json!({"id": "gone", "word": "§docs", "type": "doc", "words": []});
    app.state.store.upsert(words, "§docs", &old_record).await.unwrap();
    let stale = json!({"id": "head", "word": "storm", "type": "head", "df": 1, "postings": [["gone", 500, 4]]});
    app.state.store.upsert(words, "storm", &stale).await.unwrap();

    blog::testing::changefeed::processor::rebuild_copies(&app.state, &mut |_| {}).await.unwrap();
    assert!(item(&app, "storm", "head").await.is_none(), "the stale posting is gone");
    assert!(item(&app, "§docs", "gone").await.is_none());
    assert!(item(&app, "§docs", STATS).await.is_none(), "the old statistics last");
    indexed(&app, &id, true).await;
    assert_eq!(posts_under(&app, "kite").await, vec![id]);
    assert_eq!(item(&app, SUMMARY, STATS).await.unwrap()["posts"], 1);
}

/// A rebuild (as an import's) indexes its posts together, not a batch at a time: a word of
/// hundreds of them is spread over as many chunks as they need in one write, and a delivery
/// of hundreds more splits those chunks before its postings come.
#[tokio::test]
async fn a_rebuild_spreads_a_word_of_hundreds_of_posts_and_a_delivery_splits_it() {
    use common::host::{self, Attempt};
    // No local processors: the rebuild indexes the first posts, the test plays the host after.
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    let mut ids = Vec::new();
    for n in 0..300 {
        let body = json!({"userId": alice, "title": format!("Kite {n}"), "content": "Wind."});
        ids.push(post(&app, body).await);
    }
    blog::testing::changefeed::processor::rebuild_copies(&app.state, &mut |_| {}).await.unwrap();
    let head = item(&app, "kite", "head").await.unwrap();
    assert_eq!((head["df"].clone(), head["spilled"].clone()), (json!(300), json!(true)), "{head}");
    // Every post's posting of the word alike, so one tier: 300 postings need 4 chunks of 128.
    let tiers = head["tiers"].as_object().unwrap();
    assert_eq!(tiers.len(), 1, "{head}");
    let spread = tiers.values().next().unwrap();
    assert_eq!((spread["buckets"].as_u64(), spread["split"].as_u64()), (Some(4), Some(0)));
    let mut expected = ids.clone();
    expected.sort();
    assert_eq!(posts_under(&app, "kite").await, expected);

    let mut versions = Vec::new();
    for n in 300..500 {
        let body = json!({"userId": alice, "title": format!("Kite {n}"), "content": "Wind."});
        let id = post(&app, body).await;
        versions.push(
            app.state.store.read::<Value>(Container::Posts, &id, &id).await.unwrap().unwrap(),
        );
        ids.push(id);
    }
    let body = host::cosmos_invocation("PostsChangeFeed", &versions, Attempt::Retry(0));
    let answer = host::invoke(&app, "PostsChangeFeed", &body).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let head = item(&app, "kite", "head").await.unwrap();
    assert_eq!(head["df"], 500, "{head}");
    let spread = head["tiers"].as_object().unwrap().values().next().unwrap().clone();
    let chunks = spread["buckets"].as_u64().unwrap() + spread["split"].as_u64().unwrap();
    assert!(chunks * 128 >= 500, "split before the postings came: {head}");
    ids.sort();
    assert_eq!(posts_under(&app, "kite").await, ids);
    assert_eq!(item(&app, SUMMARY, STATS).await.unwrap()["posts"], 500);
}
