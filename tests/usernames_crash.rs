//! C1 stopped after each of its steps, as a crash would stop it: every user still shows a name
//! they hold, a retry completes, and what is left over is freed by the change feed or taken
//! over by the next claimant. (The steps are stopped through the `test-support` feature's hooks,
//! `src/test_support/crash.rs`.)

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

use axum::http::StatusCode;
use serde_json::Value;

use blog::AppState;
use blog::test_support::crash::{CRASH_AFTER, Step};
use blog::test_support::embedded_config;
use blog::testing::app::Caller;
use blog::testing::app::{create_user, rename_user};
use blog::testing::changefeed::Function;
use blog::testing::cosmos::Container;
use blog::testing::http::{ApiError, ApiResult};
use blog::testing::model::usernames::{Reservation, normalize_username, reservation_id};
use blog::testing::model::{self, User};

/// The blog's state on an embedded store in a temporary directory, with no change-feed
/// processors: each test delivers the changes it means to, when it means to.
struct Blog {
    state: AppState,
    _dir: tempfile::TempDir,
}

async fn blog() -> Blog {
    let dir = tempfile::tempdir().unwrap();
    let config = embedded_config(dir.path());
    // As `main` connects, without the processors (`Blog::open` starts those).
    let state = blog::connect(&config).await.unwrap();
    Blog { state, _dir: dir }
}

impl Blog {
    async fn create(&self, user: &str, name: &str) -> ApiResult<User> {
        create_user(&self.state, &Caller::new(user), name.into()).await.map_err(ApiError::from)
    }

    async fn rename(&self, user: &str, name: &str) -> ApiResult<User> {
        rename_user(&self.state, &Caller::new(user), user, name.into())
            .await
            .map_err(ApiError::from)
    }

    async fn username(&self, user: &str) -> Option<String> {
        self.state
            .store
            .read::<User>(Container::Users, user, user)
            .await
            .unwrap()
            .map(|user| user.username)
    }

    async fn reservation(&self, name: &str) -> Option<Reservation> {
        let id = reservation_id(&normalize_username(name));
        self.state.store.read(Container::Users, &id, &id).await.unwrap()
    }

    /// Who holds `name`'s reservation.
    async fn holder(&self, name: &str) -> Option<String> {
        self.reservation(name).await.map(|reservation| reservation.owner_id)
    }

    /// Makes `name`'s claim an hour old, as if the grace period had passed.
    async fn age(&self, name: &str) {
        let mut reservation = self.reservation(name).await.expect("a reservation to age");
        reservation.claimed_at =
            model::creation_date(time::OffsetDateTime::now_utc() - time::Duration::hours(1));
        self.state
            .store
            .upsert(Container::Users, &reservation.id.clone(), &reservation)
            .await
            .unwrap();
    }

    /// Delivers `user` as it is now to `UsersChangeFeed`.
    async fn deliver(&self, user: &str) {
        let document =
            self.state.store.read::<Value>(Container::Users, user, user).await.unwrap().unwrap();
        let report = Function::UsersChangeFeed.deliver(&self.state, vec![document]).await.unwrap();
        assert_eq!(report.applied, 1, "{report:?}");
    }

    /// The invariant a crash must never break: the user shows a name, and holds it.
    async fn assert_holds_own_name(&self, user: &str) {
        let name = self.username(user).await.unwrap_or_else(|| panic!("{user} has no user"));
        assert_eq!(
            self.holder(&name).await.as_deref(),
            Some(user),
            "{user} shows {name:?} without holding it"
        );
    }
}

/// Runs `write` as if the process died right after `step`. (The use cases' errors are seen
/// through the API's statuses, as a client sees them.)
async fn crashing<T>(step: Step, write: impl Future<Output = ApiResult<T>>) {
    let crashed = CRASH_AFTER.scope(step, write).await;
    assert!(
        matches!(crashed, Err(ApiError { status, .. }) if status == StatusCode::INTERNAL_SERVER_ERROR),
        "no crash after {step:?}"
    );
}

fn status<T>(result: ApiResult<T>) -> StatusCode {
    match result {
        Ok(_) => StatusCode::OK,
        Err(error) => error.status,
    }
}

#[tokio::test]
async fn a_sign_up_that_stopped_after_its_claim_is_finished_by_a_retry() {
    let blog = blog().await;
    crashing(Step::Claimed, blog.create("u", "alice")).await;
    assert_eq!(blog.username("u").await, None, "no user yet");
    assert_eq!(blog.holder("alice").await.as_deref(), Some("u"), "the claim");
    let refused = blog.create("v", "Alice").await.unwrap_err();
    assert_eq!(
        refused.status,
        StatusCode::CONFLICT,
        "a claim in progress is held: {}",
        refused.detail
    );

    blog.create("u", "alice").await.unwrap();
    blog.assert_holds_own_name("u").await;
}

#[tokio::test]
async fn a_sign_up_that_stopped_after_its_claim_leaves_the_name_to_the_next_claimant_once_old() {
    let blog = blog().await;
    crashing(Step::Claimed, blog.create("u", "alice")).await;
    blog.age("alice").await;
    blog.create("v", "ALICE").await.unwrap();
    blog.assert_holds_own_name("v").await;
    assert_eq!(status(blog.create("u", "alice").await), StatusCode::CONFLICT, "too late: v has it");
    assert_eq!(blog.username("u").await, None);
}

#[tokio::test]
async fn a_second_sign_up_frees_the_name_it_claimed() {
    let blog = blog().await;
    blog.create("u", "alice").await.unwrap();
    let again = blog.create("u", "Alice").await.unwrap_err();
    assert!(again.detail.contains("already have a user"), "{}", again.detail);
    blog.assert_holds_own_name("u").await;
    assert_eq!(status(blog.create("u", "bob").await), StatusCode::CONFLICT);
    assert_eq!(blog.holder("bob").await, None, "the claim made for nothing is released");
}

#[tokio::test]
async fn a_rename_that_stopped_after_its_claim_keeps_the_old_name_until_a_retry() {
    let blog = blog().await;
    blog.create("u", "alice").await.unwrap();
    crashing(Step::Claimed, blog.rename("u", "bob")).await;
    assert_eq!(blog.username("u").await.as_deref(), Some("alice"));
    blog.assert_holds_own_name("u").await;
    assert_eq!(blog.holder("bob").await.as_deref(), Some("u"), "the claim");
    assert_eq!(
        status(blog.create("v", "bob").await),
        StatusCode::CONFLICT,
        "a claim in progress is held"
    );
    // The change feed has nothing to undo: the user holds their name.
    blog.deliver("u").await;
    assert_eq!(blog.holder("bob").await.as_deref(), Some("u"));

    assert_eq!(blog.rename("u", "bob").await.unwrap().username, "bob");
    blog.assert_holds_own_name("u").await;
    assert_eq!(blog.holder("alice").await, None, "the retry released the old name");
    blog.create("v", "alice").await.unwrap();
}

#[tokio::test]
async fn a_rename_that_stopped_after_its_claim_leaves_the_name_to_the_next_claimant_once_old() {
    let blog = blog().await;
    blog.create("u", "alice").await.unwrap();
    crashing(Step::Claimed, blog.rename("u", "bob")).await;
    blog.age("bob").await;
    blog.create("v", "Bob").await.unwrap();
    blog.assert_holds_own_name("v").await;
    assert_eq!(status(blog.rename("u", "bob").await), StatusCode::CONFLICT);
    assert_eq!(blog.username("u").await.as_deref(), Some("alice"));
    blog.assert_holds_own_name("u").await;
}

#[tokio::test]
async fn a_rename_that_stopped_after_writing_the_user_leaves_the_old_name_to_the_change_feed() {
    let blog = blog().await;
    blog.create("u", "alice").await.unwrap();
    blog.age("alice").await; // a name held for a while
    crashing(Step::UserWritten, blog.rename("u", "bob")).await;
    assert_eq!(blog.username("u").await.as_deref(), Some("bob"));
    blog.assert_holds_own_name("u").await;
    assert_eq!(blog.holder("alice").await.as_deref(), Some("u"), "left behind");
    assert_eq!(
        blog.reservation("bob").await.unwrap().releases.as_deref(),
        Some("alice"),
        "and recorded"
    );

    blog.deliver("u").await;
    assert_eq!(blog.holder("alice").await, None, "released by the change feed");
    blog.deliver("u").await; // again: nothing to do
    blog.create("v", "alice").await.unwrap();
    blog.assert_holds_own_name("u").await;
}

#[tokio::test]
async fn a_rename_that_stopped_after_writing_the_user_is_finished_by_a_retry() {
    let blog = blog().await;
    blog.create("u", "alice").await.unwrap();
    crashing(Step::UserWritten, blog.rename("u", "bob")).await;
    assert_eq!(blog.rename("u", "bob").await.unwrap().username, "bob");
    assert_eq!(blog.holder("alice").await, None, "the retry released what the first attempt left");
    blog.assert_holds_own_name("u").await;
}

#[tokio::test]
async fn the_name_a_stopped_rename_left_behind_goes_to_the_next_claimant_once_old() {
    let blog = blog().await;
    blog.create("u", "alice").await.unwrap();
    crashing(Step::UserWritten, blog.rename("u", "bob")).await;
    // Claimed a moment ago: it may be a rename back in progress, so the change feed keeps it...
    blog.deliver("u").await;
    assert_eq!(blog.holder("alice").await.as_deref(), Some("u"));
    // ...and anyone may take it once the claim is old, change feed or not.
    blog.age("alice").await;
    blog.create("v", "alice").await.unwrap();
    blog.assert_holds_own_name("v").await;
    blog.assert_holds_own_name("u").await;
}

#[tokio::test]
async fn a_rename_that_stopped_after_releasing_is_done() {
    let blog = blog().await;
    blog.create("u", "alice").await.unwrap();
    crashing(Step::Released, blog.rename("u", "bob")).await;
    assert_eq!(blog.holder("alice").await, None);
    blog.assert_holds_own_name("u").await;
    assert_eq!(blog.rename("u", "bob").await.unwrap().username, "bob");
    blog.assert_holds_own_name("u").await;
    assert_eq!(blog.holder("alice").await, None);
}

#[tokio::test]
async fn a_change_of_case_keeps_the_name() {
    let blog = blog().await;
    blog.create("u", "alice").await.unwrap();
    let before = blog.reservation("alice").await.unwrap();
    assert_eq!(blog.rename("u", "ALICE").await.unwrap().username, "ALICE");
    blog.assert_holds_own_name("u").await;
    assert_eq!(
        blog.reservation("alice").await.unwrap().id,
        before.id,
        "one reservation for both forms"
    );
    assert_eq!(status(blog.create("v", "Alice").await), StatusCode::CONFLICT);

    blog.rename("u", "bob").await.unwrap();
    blog.rename("u", "Alice").await.unwrap();
    blog.assert_holds_own_name("u").await;
    assert_eq!(blog.holder("bob").await, None);
}

#[tokio::test]
async fn the_change_feed_reserves_the_name_of_a_user_from_before_reservations() {
    let blog = blog().await;
    // As written by a handler before names were unique: two users with one name.
    for user in ["u", "v"] {
        blog.state
            .store
            .create(Container::Users, user, &model::new_user(user.into(), "Alice".into()))
            .await
            .unwrap();
    }
    blog.deliver("u").await;
    blog.deliver("v").await;
    blog.assert_holds_own_name("u").await;
    assert_eq!(blog.holder("alice").await.as_deref(), Some("u"), "the first delivered holds it");
    assert_eq!(status(blog.create("w", "alice").await), StatusCode::CONFLICT);
    // v keeps the name they show until they rename, and then cannot release u's reservation.
    blog.rename("v", "vera").await.unwrap();
    blog.assert_holds_own_name("v").await;
    blog.assert_holds_own_name("u").await;
}

#[tokio::test]
async fn a_taken_name_writes_nothing() {
    let blog = blog().await;
    blog.create("u", "alice").await.unwrap();
    blog.create("v", "bob").await.unwrap();
    let refused = blog.rename("v", "Ａｌｉｃｅ").await.unwrap_err();
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert!(refused.detail.starts_with("`username` \"Ａｌｉｃｅ\" is taken"), "{}", refused.detail);
    assert_eq!(blog.username("v").await.as_deref(), Some("bob"));
    blog.assert_holds_own_name("v").await;
    blog.assert_holds_own_name("u").await;
    assert_eq!(status(blog.create("w", "a\u{200B}lice").await), StatusCode::CONFLICT);
    assert_eq!(blog.username("w").await, None);
}

#[tokio::test]
async fn a_late_delivery_of_an_older_name_reserves_nothing() {
    let blog = blog().await;
    blog.create("u", "alice").await.unwrap();
    let old = blog.state.store.read::<Value>(Container::Users, "u", "u").await.unwrap().unwrap();
    blog.rename("u", "bob").await.unwrap();
    assert_eq!(blog.holder("alice").await, None);
    Function::UsersChangeFeed.deliver(&blog.state, vec![old]).await.unwrap();
    assert_eq!(blog.holder("alice").await, None, "the name u gave up stays free");
    blog.assert_holds_own_name("u").await;
}
