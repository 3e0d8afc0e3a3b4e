//! The article's two change-feed functions, which keep every denormalized copy true:
//!
//! - [`posts_changed`] (`PostsChangeFeed`, on `posts`): each changed post is copied, in short
//!   form, into its author's partition of `users` (Q3) and into `feed` (Q6).
//! - [`users_changed`] (`UsersChangeFeed`, on `users`): a user's current username is written
//!   onto their posts, comments and likes in `posts`; the rewritten posts then come back
//!   through `posts_changed`, which refreshes their copies.
//!
//! Under the Functions host, the Cosmos DB trigger delivers batches to [`host`]; locally,
//! [`processor`] reads the change feed itself and delivers batches to the same functions.
//! Delivery is at least once, in any order: every step here is idempotent and never moves a
//! copy back to an older version.

pub mod host;
mod posts;
pub mod processor;
mod users;

pub use posts::posts_changed;
pub use users::users_changed;

use serde_json::Value;

use crate::cosmos::StoreError;
use crate::scripts::ScriptError;

/// What a batch did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct BatchReport {
    /// Items the function acted on.
    pub applied: usize,
    /// Items of another type in the same container (the function's business is one type).
    pub ignored: usize,
    /// Items that do not have the expected shape: logged and skipped, never retried.
    pub poison: usize,
}

impl BatchReport {
    /// Lets through a changed document that is an item of type `wanted`; counts any other as
    /// of another type (containers hold several), or as malformed when it is no item at all.
    fn admit(&mut self, function: &str, document: Value, wanted: &str) -> Option<Value> {
        if !document.is_object() {
            tracing::warn!(target: "blog::changefeed", function, "skipping a change that is not an item");
            self.poison += 1;
            return None;
        }
        if document.get("type").and_then(Value::as_str) != Some(wanted) {
            self.ignored += 1;
            return None;
        }
        Some(document)
    }
}

/// A failure that makes the whole batch fail, so that it is delivered again.
#[derive(Debug)]
pub enum FeedError {
    Store(StoreError),
    Script(ScriptError),
}

impl std::fmt::Display for FeedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FeedError::Store(error) => write!(f, "{error}"),
            FeedError::Script(error) => write!(f, "{error}"),
        }
    }
}

impl From<StoreError> for FeedError {
    fn from(error: StoreError) -> Self {
        FeedError::Store(error)
    }
}

impl From<ScriptError> for FeedError {
    fn from(error: ScriptError) -> Self {
        FeedError::Script(error)
    }
}
