//! The change-feed functions where the host's trigger cannot deliver (the Linux emulator): the
//! handler's own processors read the account's change feed through the SDK
//! (`changefeed::account`). Here the account is the SDK's in-memory emulator behind the embedded
//! store, which serves the change feed as the service does (azure_data_cosmos_driver
//! `in_memory_emulator`); the processors are the ones `BLOG_CHANGE_FEED=local` starts on an
//! account, and nothing else delivers (the handler runs as under the host).

mod common;

use blog::changefeed::Function;
use blog::changefeed::account::{AccountProcessors, POSITION_ID_PREFIX};
use blog::cosmos::Container;
use common::TestApp;
use serde_json::{Value, json};

fn ids(list: &Value) -> Vec<String> {
    list["items"].as_array().unwrap().iter().map(|item| item["id"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn posts_and_renames_reach_the_copies_through_the_sdk_change_feed() {
    let app = TestApp::start_as_host().await;
    let processors = AccountProcessors::start(&app.state);
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Through the SDK").await;
    app.eventually(&format!("/api/users/{alice}/posts"), |body| ids(body) == vec![post.clone()]).await;
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
    let before = processors.deliveries().of(Function::PostsChangeFeed);
    assert!(before.items >= 5, "{before:?}");
    processors.stop().await;

    let late = app.post_by(&alice, "written while stopped").await;
    let processors = AccountProcessors::start(&app.state);
    app.eventually("/api/feed", |body| ids(body).contains(&late)).await;
    // The one new post, not the five before it.
    let after = processors.deliveries().of(Function::PostsChangeFeed);
    assert_eq!(after.items, 1, "delivered again from the start: {after:?} after {before:?}");
    processors.stop().await;
}

/// A change of the wrong shape is set aside as a dead letter, and the rest goes on.
#[tokio::test]
async fn a_malformed_change_is_set_aside_and_the_feed_goes_on() {
    let app = TestApp::start_as_host().await;
    let processors = AccountProcessors::start(&app.state);
    let broken = json!({"id": "broken", "postId": "broken", "type": "post", "title": 42});
    app.state.store.upsert(Container::Posts, "broken", &broken).await.unwrap();
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "after the broken one").await;
    app.eventually("/api/feed", |body| ids(body) == vec![post.clone()]).await;
    let letters = blog::changefeed::dead_letters::list(&app.state.store).await.unwrap();
    assert!(letters.iter().any(|letter| letter.payload.contains("\"broken\"")), "{letters:?}");
    processors.stop().await;
}

/// Issue 33: `handler lag` on an account with `BLOG_CHANGE_FEED=local`: the changes after each
/// account processor's saved position are counted by reading them, as the processor will, and
/// none are once it has run.
#[tokio::test]
async fn the_lag_is_counted_from_the_account_processors_positions() {
    use blog::changefeed::lag::{Followed, measure};
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
