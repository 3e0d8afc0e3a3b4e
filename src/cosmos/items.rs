//! What the store's callers hand it and get back: versioned items, pages, writes, queries, and
//! the embedded store's changes.

use std::borrow::Cow;
use std::time::Duration;

use serde_json::Value;

/// An item read together with its etag, for a later conditional write.
pub(crate) struct Versioned<T> {
    /// The item.
    pub item: T,
    /// Its entity tag, for a conditional write.
    pub etag: String,
}

/// Which page of a query to read.
#[derive(Clone, Debug, Default)]
pub struct PageRequest {
    /// How many items at most.
    pub size: u32,
    /// The SDK's continuation token from the previous page.
    pub continuation: Option<String>,
}

/// One page of a query.
pub(crate) struct Page<T> {
    pub items: Vec<T>,
    /// The SDK's token for the next page; `None` on the last page.
    pub continuation: Option<String>,
}

/// One write of a transactional batch.
#[derive(Clone, Debug, PartialEq)]
pub enum WriteOp {
    /// Creates `document`; refused (409) if its id is taken.
    Create {
        /// The new item.
        document: Value,
    },
    /// Replaces the item `id` with `document`, if its entity tag is still `if_match`.
    Replace {
        /// The item's id.
        id: String,
        /// What it becomes.
        document: Value,
        /// Its entity tag as read (`None`: whatever it is now).
        if_match: Option<String>,
    },
    /// Creates or replaces `document`, if the item's entity tag is still `if_match`.
    Upsert {
        /// The item.
        document: Value,
        /// Its entity tag as read (`None`: whatever it is now).
        if_match: Option<String>,
    },
    /// Deletes the item `id`, if its entity tag is still `if_match`.
    Delete {
        /// The item's id.
        id: String,
        /// Its entity tag as read (`None`: whatever it is now).
        if_match: Option<String>,
    },
}

/// A parameterized query. The application's queries are constants of [`queries`], and every
/// value from a request travels as a parameter, never as text; scripts bring their own SQL.
pub struct QuerySpec {
    /// The query's text, with `@name` parameters.
    pub sql: Cow<'static, str>,
    /// Each parameter's name (with its `@`) and value.
    pub parameters: Vec<(Cow<'static, str>, Value)>,
}

/// Items of the embedded store changed after a position in its write numbering, oldest change
/// first (what the local change-feed processors follow; the change index in `changes.rs` finds
/// them).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Changed {
    /// (partition key, id) of each item.
    pub items: Vec<(String, String)>,
    /// The position these items bring a reader to: every write numbered up to it is covered,
    /// because its item is listed here or was written again after `through`.
    pub through: u64,
}

/// The pause before attempt `attempt + 1` of an optimistic write that lost a race (412/409). It
/// is up to 1 ms, doubling per attempt up to 64 ms. A random factor scales it so that the
/// contenders spread out instead of colliding again.
pub(crate) fn retry_pause(attempt: usize) -> Duration {
    let ceiling_micros = 1_000u64 << attempt.min(6);
    let jitter = (uuid::Uuid::new_v4().as_u128() % 1_000) as u64;
    Duration::from_micros(ceiling_micros * (jitter + 1) / 1_000)
}
