//! What the store's callers hand it and get back: versioned items, pages, writes, queries, and
//! the embedded store's changes.

use std::borrow::Cow;
use std::time::Duration;

use serde_json::Value;

/// An item read together with its etag, for a later conditional write.
pub struct Versioned<T> {
    pub item: T,
    pub etag: String,
}

/// Which page of a query to read.
#[derive(Clone, Debug, Default)]
pub struct PageRequest {
    pub size: u32,
    /// The SDK's continuation token from the previous page.
    pub continuation: Option<String>,
}

/// One page of a query.
pub struct Page<T> {
    pub items: Vec<T>,
    /// The SDK's token for the next page; `None` on the last page.
    pub continuation: Option<String>,
}

/// One write of a transactional batch.
#[derive(Clone, Debug, PartialEq)]
pub enum WriteOp {
    Create { document: Value },
    Replace { id: String, document: Value, if_match: Option<String> },
    Upsert { document: Value, if_match: Option<String> },
    Delete { id: String, if_match: Option<String> },
}

/// A parameterized query. The application's queries are constants of [`queries`], and every
/// value from a request travels as a parameter, never as text; scripts bring their own SQL.
pub struct QuerySpec {
    pub sql: Cow<'static, str>,
    pub parameters: Vec<(Cow<'static, str>, Value)>,
}

/// Items of the embedded store changed after a position in its write numbering, oldest change
/// first (what the local change-feed processors follow; the change index in `changes.rs` finds
/// them).
#[derive(Debug, PartialEq, Eq)]
pub struct Changed {
    /// (partition key, id) of each item.
    pub items: Vec<(String, String)>,
    /// The position these items bring a reader to: every write numbered up to it is covered,
    /// because its item is listed here or was written again after `through`.
    pub through: u64,
}

/// The pause before attempt `attempt + 1` of an optimistic write that lost a race (412/409):
/// up to 1 ms, doubling per attempt up to 64 ms, scaled by a random factor so that the
/// contenders spread out instead of colliding again.
pub fn retry_pause(attempt: usize) -> Duration {
    let ceiling_micros = 1_000u64 << attempt.min(6);
    let jitter = (uuid::Uuid::new_v4().as_u128() % 1_000) as u64;
    Duration::from_micros(ceiling_micros * (jitter + 1) / 1_000)
}
