//! The change-feed functions where the host's trigger cannot deliver (the Linux emulator): the
//! handler's own processors read the account's change feed through the SDK
//! (`changefeed::account`). Here the account is the SDK's in-memory emulator behind the embedded
//! store, which serves the change feed as the service does (azure_data_cosmos_driver
//! `in_memory_emulator`); the processors are the ones `BLOG_CHANGE_FEED=local` starts on an
//! account, and nothing else delivers (the handler runs as under the host).

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use blog::testing::changefeed::Function;
use blog::testing::changefeed::account::{AccountProcessors, POSITION_ID_PREFIX};
use blog::testing::cosmos::Container;
use common::TestApp;
use serde_json::{Value, json};

fn ids(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn writes_reach_the_copies_through_the_sdk_change_feed() {
    let app = TestApp::start_as_host().await;
    let processors = AccountProcessors::start(&app.state);
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Through the SDK").await;
    app.eventually(&format!("/api/users/{alice}/posts"), |body| ids(body) == vec![post.clone()])
        .await;
    app.eventually("/api/feed", |body| ids(body) == vec![post.clone()]).await;

    app.put(&format!("/api/users/{alice}"), json!({"username": "alice2"})).await;
    app.eventually(&format!("/api/posts/{post}"), |body| body["userUsername"] == "alice2").await;
    app.eventually("/api/feed", |body| body["items"][0]["userUsername"] == "alice2").await;
    processors.stop().await;

    // Each processor's position is kept in `leases`, beside the trigger's leases and dead letters.
    for function in Function::ALL {
        let id = format!("{POSITION_ID_PREFIX}{}", function.name());
        let saved: Option<Value> = app.state.store.read(Container::Leases, &id, &id).await.unwrap();
        assert!(saved.is_some_and(|saved| saved["continuation"].is_string()), "{id} is saved");
    }
}

/// A restart goes on from the saved position: what was applied is not delivered again, and what
/// was written while no processor ran is.
#[tokio::test]
async fn a_restarted_processor_goes_on_from_its_saved_position() {
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    let processors = AccountProcessors::start(&app.state);
    let mut posts = Vec::new();
    for n in 0..5 {
        posts.push(app.post_by(&alice, &format!("post {n}")).await);
    }
    app.eventually("/api/feed", |body| ids(body).len() == 5).await;
    // A delivery is counted once it is done, after the copies (the search index comes last).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut before = processors.deliveries().of(Function::PostsChangeFeed);
    while before.items < 5 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        before = processors.deliveries().of(Function::PostsChangeFeed);
    }
    assert!(before.items >= 5, "{before:?}");
    processors.stop().await;

    let late = app.post_by(&alice, "written while stopped").await;
    let processors = AccountProcessors::start(&app.state);
    app.eventually("/api/feed", |body| ids(body).contains(&late)).await;
    // The one new post, not the five before it (counted once its delivery is done).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut after = processors.deliveries().of(Function::PostsChangeFeed);
    while after.items < 1 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        after = processors.deliveries().of(Function::PostsChangeFeed);
    }
    assert_eq!(after.items, 1, "delivered again from the start: {after:?} after {before:?}");
    processors.stop().await;
}

/// A change of the wrong shape is set aside as a dead letter, and the rest goes on.
#[tokio::test]
async fn a_malformed_change_does_not_stop_the_feed() {
    let app = TestApp::start_as_host().await;
    let processors = AccountProcessors::start(&app.state);
    let broken = json!({"id": "broken", "postId": "broken", "type": "post", "title": 42});
    app.state.store.upsert(Container::Posts, "broken", &broken).await.unwrap();
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "after the broken one").await;
    app.eventually("/api/feed", |body| ids(body) == vec![post.clone()]).await;
    let letters = blog::testing::changefeed::dead_letters::list(&app.state.store).await.unwrap();
    assert!(letters.iter().any(|letter| letter.payload.contains("\"broken\"")), "{letters:?}");
    processors.stop().await;
}

/// `handler lag` on an account with `BLOG_CHANGE_FEED=local`: the changes after each
/// account processor's saved position are counted by reading them, as the processor will, and
/// none are once it has run.
#[tokio::test]
async fn the_lag_is_counted_from_the_account_processors_positions() {
    use blog::testing::changefeed::lag::{COUNTED_AT_MOST, Followed};
    let measure =
        |state, followed| blog::testing::changefeed::lag::measure(state, followed, COUNTED_AT_MOST);
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    for n in 0..3 {
        app.post_by(&alice, &format!("post {n}")).await;
    }
    let behind = measure(&app.state, &Followed::Account).await.unwrap();
    let posts = behind.iter().find(|lag| lag.function == Function::PostsChangeFeed).unwrap();
    assert_eq!(posts.pending, 3, "{behind:?}");
    assert!(!posts.at_least && posts.oldest.is_some(), "{behind:?}");
    let users = behind.iter().find(|lag| lag.function == Function::UsersChangeFeed).unwrap();
    assert!(users.pending >= 1, "alice's user item: {behind:?}");

    let processors = AccountProcessors::start(&app.state);
    app.eventually("/api/feed", |body| ids(body).len() == 3).await;
    // The copies are written before the position is saved: wait for the position too.
    let started = std::time::Instant::now();
    loop {
        let lags = measure(&app.state, &Followed::Account).await.unwrap();
        if lags.iter().all(|lag| lag.pending == 0 && lag.oldest.is_none()) {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "still behind: {lags:?}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    processors.stop().await;
}

/// A lease as the Functions host's Cosmos DB trigger writes it (azure-cosmos-dotnet-v3,
/// `DocumentServiceLeaseCoreEpk`, its feed range by `FeedRangeInternalConverter` and
/// `RangeJsonConverter`, its id by `CosmosContainerExtensions.GetLeasePrefixAsync` and
/// `DocumentServiceLeaseManagerCosmos.GetDocumentId`): the position of one feed range.
fn trigger_lease(prefix: &str, range: &blog::testing::cosmos::RangePosition) -> Value {
    let token = format!("{}-{}", range.min_epk, range.max_epk);
    json!({
        "id": format!("{prefix}localhost_AAAAAA==_AAAAAYAAAAI=..{token}"),
        "version": 1,
        "LeaseToken": token,
        "FeedRange": {"Range": {"min": range.min_epk, "max": range.max_epk, "isMinInclusive": true, "isMaxInclusive": false}},
        "Owner": "0b9d8e1c-8a53-4a8f-9d0e-3c2f1a7b6e55",
        "ContinuationToken": range.etag,
        "properties": {},
        "Mode": "Incremental feed",
        "timestamp": "2026-11-26T19:30:00.0000000Z",
    })
}

/// On an account under the Functions host, `handler lag` and the minute's `lag` line
/// read the trigger's leases: the changes after each lease's position are the ones not
/// delivered. The leases here say "delivered up to where the feed ended" after three posts, as
/// the trigger's would; two posts later, two are behind. A store without leases (the trigger never
/// ran) is behind by everything, since the trigger starts from the beginning.
#[tokio::test]
async fn the_lag_under_the_host_is_counted_from_the_triggers_leases() {
    use blog::testing::changefeed::lag::{COUNTED_AT_MOST, Followed};
    let measure =
        |state, followed| blog::testing::changefeed::lag::measure(state, followed, COUNTED_AT_MOST);
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    for n in 0..3 {
        app.post_by(&alice, &format!("post {n}")).await;
    }
    let lag_of = |lags: &[blog::testing::changefeed::lag::Lag]| {
        lags.iter().find(|lag| lag.function == Function::PostsChangeFeed).unwrap().pending
    };
    assert_eq!(
        lag_of(&measure(&app.state, &Followed::Trigger).await.unwrap()),
        3,
        "no leases yet: from the beginning"
    );

    let end = app.state.store.change_feed_end(Container::Posts).await.unwrap();
    assert!(!end.is_empty() && end.iter().all(|range| range.etag.is_some()), "{end:?}");
    for range in &end {
        let lease = trigger_lease(Function::PostsChangeFeed.lease_prefix(), range);
        let id = lease["id"].as_str().unwrap().to_owned();
        app.state.store.upsert(Container::Leases, &id, &lease).await.unwrap();
    }
    // The store's own items, beside the leases, are no leases.
    let info = json!({"id": "posts-localhost_AAAAAA==_AAAAAYAAAAI=.info"});
    app.state
        .store
        .upsert(Container::Leases, "posts-localhost_AAAAAA==_AAAAAYAAAAI=.info", &info)
        .await
        .unwrap();
    let caught_up = measure(&app.state, &Followed::Trigger).await.unwrap();
    assert_eq!(lag_of(&caught_up), 0, "{caught_up:?}");

    app.post_by(&alice, "late 1").await;
    app.post_by(&alice, "late 2").await;
    let behind = measure(&app.state, &Followed::Trigger).await.unwrap();
    assert_eq!(lag_of(&behind), 2, "{behind:?}");
    let posts = behind.iter().find(|lag| lag.function == Function::PostsChangeFeed).unwrap();
    assert!(
        posts.oldest.is_some_and(|age| age.as_secs() < 3600),
        "written now, not at the epoch: {posts:?}"
    );
}

/// The leases are found by the prefix each function's trigger is given in its `function.json`.
#[test]
fn each_functions_lease_prefix_is_its_triggers() {
    for function in Function::ALL {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("functions/{}/function.json", function.name()));
        let json: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(
            json["bindings"][0]["leaseContainerPrefix"],
            function.lease_prefix(),
            "{}",
            function.name()
        );
    }
}
