//! The article's two change-feed functions, which keep every denormalized copy true. The rules
//! are in [`crate::app::copies`]; this is how changes reach them:
//!
//! - [`posts_changed`] (`PostsChangeFeed`, on `posts`): each changed post is copied, in short
//!   form, into its author's partition of `users` (Q3) and into `feed` (Q6).
//! - [`users_changed`] (`UsersChangeFeed`, on `users`): a user's current username is written
//!   onto their posts, comments and likes in `posts`; the rewritten posts then come back
//!   through `posts_changed`, which refreshes their copies.
//!
//! Under the Functions host, the Cosmos DB trigger delivers batches to [`host`]; locally,
//! [`processor`] follows the embedded store's writes, and [`account`] an account's change feed
//! through the SDK (where the host's trigger cannot: the Linux emulator). Both hand each batch to [`Function::deliver`].
//! Delivery is at least once, in any order: every step here is idempotent and never moves a
//! copy back to an older version. A change that can never be applied is set aside in
//! [`dead_letters`] rather than retried forever.

pub(crate) mod account;
pub mod dead_letters;
pub(crate) mod host;
mod invocation;
pub mod lag;
pub(crate) mod posts;
pub(crate) mod processor;
mod users;

pub(crate) use posts::posts_changed;
pub(crate) use users::users_changed;

use serde_json::Value;

use crate::app::{AppError, AppState};
use crate::cosmos::{Container, StoreError};
use crate::scripts::ScriptError;

/// The two change-feed functions and what they watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    /// Copies each changed post into `users` and `feed` (short form).
    PostsChangeFeed,
    /// Carries a changed username onto the user's posts, comments and likes.
    UsersChangeFeed,
}

impl Function {
    /// Both change-feed functions.
    pub const ALL: [Function; 2] = [Function::PostsChangeFeed, Function::UsersChangeFeed];

    /// The function's name: its folder under `functions/`, and its path on the handler.
    pub fn name(self) -> &'static str {
        match self {
            Function::PostsChangeFeed => "PostsChangeFeed",
            Function::UsersChangeFeed => "UsersChangeFeed",
        }
    }

    /// What its trigger's lease ids start with: the `leaseContainerPrefix` of its
    /// `function.json` (a test holds the two equal).
    pub fn lease_prefix(self) -> &'static str {
        match self {
            Function::PostsChangeFeed => "posts-",
            Function::UsersChangeFeed => "users-",
        }
    }

    /// The container whose change feed triggers it.
    pub fn container(self) -> Container {
        match self {
            Function::PostsChangeFeed => Container::Posts,
            Function::UsersChangeFeed => Container::Users,
        }
    }

    /// Applies one batch, as the host's trigger or a local processor delivers it, and sets
    /// aside the changes that can never be applied. `Err` means the whole batch must be
    /// delivered again. That is a passing failure: throttling, a timeout, the store
    /// unreachable.
    pub async fn deliver(
        self,
        state: &AppState,
        documents: Vec<Value>,
    ) -> Result<BatchReport, FeedError> {
        let mut report = self.apply(state, documents).await?;
        for (reason, document) in std::mem::take(&mut report.refused) {
            dead_letters::set_aside(
                &state.store,
                self.name(),
                "item",
                &reason,
                &document.to_string(),
            )
            .await?;
            report.set_aside += 1;
        }
        Ok(report)
    }

    /// Delivers a batch that failed [`ISOLATE_AFTER`] times in a row item by item, to find the
    /// change that keeps failing: each item that fails alone, while others apply, is set aside
    /// with its error. When every item fails alike, it is the store, not the items, that fails
    /// (an outage): the batch is delivered again later, and nothing is set aside. A passing
    /// failure (throttling, a timeout) also ends it, to be delivered again.
    pub(crate) async fn deliver_item_by_item(
        self,
        state: &AppState,
        documents: Vec<Value>,
    ) -> Result<BatchReport, FeedError> {
        let count = documents.len();
        let mut report = BatchReport::default();
        let mut failed = Vec::new();
        for document in documents {
            match self.deliver(state, vec![document.clone()]).await {
                Ok(one) => report.add(one),
                Err(error) if error.is_passing() => return Err(error),
                Err(error) => failed.push((error, document)),
            }
        }
        if count > 1 && failed.len() == count {
            return Err(failed.swap_remove(0).0);
        }
        for (error, document) in failed {
            let reason = format!(
                "failed {ISOLATE_AFTER} times in its batch and again alone: {}",
                crate::logging::with_causes(&error)
            );
            dead_letters::set_aside(
                &state.store,
                self.name(),
                "item",
                &reason,
                &document.to_string(),
            )
            .await?;
            report.set_aside += 1;
        }
        Ok(report)
    }

    /// Applies one batch; what it refuses is left in [`BatchReport::refused`].
    pub(crate) async fn apply(
        self,
        state: &AppState,
        documents: Vec<Value>,
    ) -> Result<BatchReport, FeedError> {
        match self {
            Function::PostsChangeFeed => posts_changed(state, documents).await,
            Function::UsersChangeFeed => users_changed(state, documents).await,
        }
    }

    /// The function called `name` (its folder under `functions/`), if there is one.
    pub(crate) fn named(name: &str) -> Option<Function> {
        Function::ALL.into_iter().find(|function| function.name() == name)
    }
}

/// The age in seconds of the oldest change in a batch, by its `_ts` (when it was written): how
/// far behind the function is as it delivers. `None` when no change carries a `_ts`.
pub(crate) fn oldest_age_s(documents: &[Value]) -> Option<u64> {
    lag::oldest_ts(documents).map(|written| lag::age(written).as_secs())
}

/// A delivered batch's log line, the same whether the host's trigger or a local processor
/// delivered it: the workbook and the alerts read its fields (`infra/queries/`; a test in
/// `tests/telemetry.rs` holds them to this line). `invocation_id` is the host's.
pub(crate) struct Delivery<'a> {
    pub function: Function,
    pub count: usize,
    pub report: &'a BatchReport,
    /// Request units and operations the delivery cost.
    pub cost: (f64, u64),
    pub oldest_age_s: Option<u64>,
    pub invocation_id: Option<&'a str>,
    pub attempt: Option<i64>,
}

impl Delivery<'_> {
    pub(crate) fn log(&self) {
        let (charge, operations) = self.cost;
        tracing::info!(
            target: "blog::changefeed",
            function = self.function.name(),
            count = self.count,
            applied = self.report.applied,
            ignored = self.report.ignored,
            set_aside = self.report.set_aside,
            ru = format_args!("{charge:.2}"),
            operations,
            oldest_age_s = self.oldest_age_s,
            invocation_id = self.invocation_id,
            attempt = self.attempt,
            "delivered"
        );
    }
}

/// After how many failed deliveries in a row a batch is delivered item by item
/// ([`Function::deliver_item_by_item`]).
pub const ISOLATE_AFTER: u32 = 5;

/// What a batch did.
#[derive(Debug, Default, PartialEq)]
pub struct BatchReport {
    /// Items the function acted on.
    pub applied: usize,
    /// Items of another type in the same container (the function's business is one type).
    pub ignored: usize,
    /// Items that do not have the expected shape, and why: never retried, set aside by
    /// [`Function::deliver`].
    pub refused: Vec<(String, Value)>,
    /// How many of them were set aside as dead letters.
    pub set_aside: usize,
}

impl BatchReport {
    /// Lets through a changed document that is an item of type `wanted`; counts any other as
    /// of another type (containers hold several), or as malformed when it is no item at all.
    fn admit(&mut self, document: Value, wanted: &str) -> Option<Value> {
        if !document.is_object() {
            self.refuse("the change is not an item (a JSON object)".into(), document);
            return None;
        }
        if document.get("type").and_then(Value::as_str) != Some(wanted) {
            self.ignored += 1;
            return None;
        }
        Some(document)
    }

    fn add(&mut self, other: BatchReport) {
        self.applied += other.applied;
        self.ignored += other.ignored;
        self.refused.extend(other.refused);
        self.set_aside += other.set_aside;
    }

    /// Counts a change that can never be applied; it is set aside, not retried.
    fn refuse(&mut self, reason: String, document: Value) {
        self.refused.push((reason, document));
    }
}

/// A failure that makes the whole batch fail, so that it is delivered again.
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    /// A Cosmos DB call failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored procedure failed.
    #[error(transparent)]
    Script(#[from] ScriptError),
    /// A copy rule's answer other than the store's or a script's (see [`From<AppError>`]).
    #[error(transparent)]
    App(AppError),
}

/// The copy rules answer [`AppError`]; the store's and the scripts' errors are taken out of it,
/// so that [`FeedError::is_passing`] sees them as it sees the feed's own.
impl From<AppError> for FeedError {
    fn from(error: AppError) -> Self {
        match error {
            AppError::Store(error) => FeedError::Store(error),
            AppError::Script(error) => FeedError::Script(error),
            other => FeedError::App(other),
        }
    }
}

impl FeedError {
    /// Whether delivering the same batch again later may well succeed: the store throttled,
    /// did not answer in time or was unavailable, scripts kept conflicting, or the picture store
    /// could not be reached.
    pub(crate) fn is_passing(&self) -> bool {
        matches!(
            self,
            FeedError::App(AppError::Busy(_)) | FeedError::Script(ScriptError::Contention)
        ) || matches!(self, FeedError::App(AppError::PictureStore(error)) if error.is_passing())
            || matches!(self, FeedError::Store(error) | FeedError::Script(ScriptError::Store(error)) if error.is_passing())
    }
}
