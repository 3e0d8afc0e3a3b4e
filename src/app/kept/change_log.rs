//! The blog's change log: one small item in `feed` naming the kept pages that changed lately, so
//! that an instance checks every page it keeps with one point read a second, not one a page.
//!
//! Each kept page has a name here ([`post`], [`FEED`], [`user`], [`user_posts`], [`tag`]).
//! After `PostsChangeFeed` has written a batch's copies and marks, it appends the names of what
//! the batch changed, each change numbered; `UsersChangeFeed` appends each user it delivers. An
//! instance reads the log at most once a [`FRESH_FOR`] (one read shared by every request
//! waiting on it) and keeps, with each page, the number of the last change it had seen when it
//! read or checked the page. A page older than the lifetime is then shown again at no cost when
//! the log still names every change since that number and none of them is the page. So a post
//! viewed once an hour costs nothing while nobody writes to it, where checking it by its etag
//! cost a read a view. A page the log names is read whole; one the log no longer covers (more
//! changes than it holds, or a log begun anew) is checked by its own mark, as before the log.
//!
//! So a change made through one instance is shown by another once the change feed has delivered
//! it, and a lifetime later at most: what the lists (Q3, Q6, Q7) already promised, and now the
//! post page too. The writer sees their own write at once ([`super::post_views::Freshness`]).
//!
//! The log is bounded: at most [`MAX_NAMES`] names and [`MAX_NAME_BYTES`] bytes of them, the
//! oldest dropped first, so it stays near a kilobyte and its point read about 1 RU.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::OnceCell;

use super::{FRESH_FOR, age, now};
use crate::app::{AppResult, AppState};
use crate::cosmos::{Container, StoreError, WriteOp};
use crate::model::{CHANGE_LOG_ID, CHANGE_LOG_PARTITION};

/// The most names the log holds. A write names three or four pages (the post, the feed, its
/// author's posts, its tags), so this is the last fifteen or so writes. That is minutes of a
/// busy blog, where an instance that serves views reads the log every second.
pub(crate) const MAX_NAMES: usize = 64;
/// The most bytes of names the log holds: ids and tags may be long, and a point read costs by
/// the item's size (1 RU up to about 1 KB).
pub(crate) const MAX_NAME_BYTES: usize = 1536;

/// The highest change number a log takes: JavaScript's largest exact integer, so the item reads
/// the same in the portal's Data Explorer; a log that would pass it (never, at a change a
/// millisecond for 285,000 years) or that says it has is begun anew.
const MAX_CHANGE: u64 = (1 << 53) - 1;

/// How often an append is tried again when another writer appended in between.
const ATTEMPTS: usize = 20;

/// A post's page (its views: Q2, Q4, Q5).
pub(crate) fn post(post_id: &str) -> String {
    format!("p/{post_id}")
}

/// The feed's pages (Q6), all of them: a post that entered or left the feed, or a change the
/// log cannot say more of.
pub(crate) const FEED: &str = "feed";

/// A post's short copy in the feed changed in place (its counters, its text, its author's
/// name): a kept page of the feed mends itself by reading that copy alone (`super::feed`).
/// Named under [`FEED`], so every check of the feed's pages sees it.
pub(crate) fn feed_post(post_id: &str) -> String {
    format!("{FEED}/{post_id}")
}

/// A user, as their page shows them (Q1).
pub(crate) fn user(user_id: &str) -> String {
    format!("u/{user_id}")
}

/// A user's pages of posts (Q3).
pub(crate) fn user_posts(user_id: &str) -> String {
    format!("up/{user_id}")
}

/// A tag's pages of posts (Q7).
pub(crate) fn tag(tag: &str) -> String {
    format!("t/{tag}")
}

/// The log as stored, and as an instance last read it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredLog {
    /// When this log was begun: a log begun anew (deleted, damaged) numbers its changes from 0
    /// again, so a number is only compared within one beginning.
    began: String,
    /// The number of the last change no longer named.
    since: u64,
    /// The changes after `since`, oldest first: the n-th (from 1) is change `since + n`.
    names: Vec<String>,
}

/// Where in the log a page was last known true: the log's beginning and the number of its last
/// change then.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LogPlace {
    began: Arc<str>,
    change: u64,
}

impl LogPlace {
    /// Where a page read before this instance ever read the log was: nowhere any log can say
    /// anything of, so its first check is by its mark.
    pub(crate) fn unknown() -> LogPlace {
        LogPlace { began: Arc::from(""), change: u64::MAX }
    }
}

impl StoredLog {
    /// Where this log is now.
    pub(crate) fn place(&self) -> LogPlace {
        LogPlace { began: Arc::from(self.began.as_str()), change: self.last() }
    }

    fn last(&self) -> u64 {
        self.since.saturating_add(self.names.len() as u64)
    }

    /// Whether `name` is unchanged since `seen`: `Some(true)` when the log names every change
    /// since and none is `name` (or under it), `Some(false)` when one is, `None` when the log
    /// cannot say.
    pub(crate) fn unchanged_since(&self, seen: &LogPlace, name: &str) -> Option<bool> {
        self.changes_since(seen, name).map(|changes| changes.is_empty())
    }

    /// The changes to `name` since `seen`, oldest first: `name` itself, or a name under it
    /// (`feed/<postId>` under `feed`); `None` when the log cannot say.
    pub(crate) fn changes_since<'a>(&'a self, seen: &LogPlace, name: &str) -> Option<Vec<&'a str>> {
        if *seen.began != *self.began || seen.change < self.since || seen.change > self.last() {
            return None;
        }
        let after = usize::try_from(seen.change - self.since).ok()?;
        let of_name = |changed: &&String| {
            changed.as_str() == name
                || changed.strip_prefix(name).is_some_and(|under| under.starts_with('/'))
        };
        Some(self.names[after..].iter().filter(of_name).map(String::as_str).collect())
    }

    /// The log with `names` appended, its oldest names dropped past its bounds (begun anew first
    /// if their numbers would pass [`MAX_CHANGE`]).
    fn appended(mut self, names: &BTreeSet<String>) -> StoredLog {
        if self.last().saturating_add(names.len() as u64) > MAX_CHANGE {
            self = StoredLog::begun();
        }
        self.names.extend(names.iter().cloned());
        let mut bytes: usize = self.names.iter().map(String::len).sum();
        let mut dropped = 0;
        while self.names.len() - dropped > MAX_NAMES || bytes > MAX_NAME_BYTES {
            bytes -= self.names[dropped].len();
            dropped += 1;
        }
        self.names.drain(..dropped);
        self.since += dropped as u64;
        self
    }

    /// A log begun now, with nothing named.
    fn begun() -> StoredLog {
        StoredLog {
            began: format!("{}/{}", crate::model::now(), uuid::Uuid::new_v4()),
            since: 0,
            names: Vec::new(),
        }
    }

    /// The log as `document` holds it; a damaged one (unreadable, or numbered past
    /// [`MAX_CHANGE`]) is begun anew, which every instance then sees as a log that cannot say
    /// (each page checked by its own mark once).
    fn from_document(document: Value) -> StoredLog {
        serde_json::from_value::<StoredLog>(document)
            .ok()
            .filter(|log| {
                log.since.checked_add(log.names.len() as u64).is_some_and(|last| last <= MAX_CHANGE)
            })
            .unwrap_or_else(StoredLog::begun)
    }

    fn document(&self) -> Value {
        let mut document = serde_json::to_value(self).expect("a log serializes");
        document["id"] = CHANGE_LOG_ID.into();
        document["type"] = CHANGE_LOG_PARTITION.into();
        document
    }
}

/// Appends `names` to the log: called after the changes they name are stored (copies and marks
/// written), never before, so an instance that reads a name reads a page with the change. A
/// conditional replace, tried again when another writer appended in between.
pub(crate) async fn append(state: &AppState, names: &BTreeSet<String>) -> AppResult<()> {
    if names.is_empty() {
        return Ok(());
    }
    for _ in 0..ATTEMPTS {
        let found = state
            .store
            .read_versioned::<Value>(Container::Feed, CHANGE_LOG_PARTITION, CHANGE_LOG_ID)
            .await?;
        let write = match found {
            Some(found) => WriteOp::Replace {
                id: CHANGE_LOG_ID.to_owned(),
                document: StoredLog::from_document(found.item).appended(names).document(),
                if_match: Some(found.etag),
            },
            None => WriteOp::Create { document: StoredLog::begun().appended(names).document() },
        };
        match state.store.execute_write(Container::Feed, CHANGE_LOG_PARTITION, write).await {
            Ok(()) => return Ok(()),
            Err(StoreError::PreconditionFailed | StoreError::Conflict | StoreError::NotFound) => {
                continue;
            }
            Err(other) => return Err(other.into()),
        }
    }
    Err(StoreError::ChangeLogKeptChanging { attempts: ATTEMPTS, names: names.len() }.into())
}

/// The invariants of an append to the log `stored` holds ([`crate::fuzzing::change_log`]). What
/// it writes is within the bounds and reads back the same. Every name appended reads as changed
/// since, or the log cannot say, to a page seen before it.
pub(crate) fn check_an_append(stored: Value, names: &BTreeSet<String>) {
    let before = StoredLog::from_document(stored);
    let seen = before.place();
    let after = before.clone().appended(names);
    assert!(after.names.len() <= MAX_NAMES, "{} names", after.names.len());
    assert!(after.names.iter().map(String::len).sum::<usize>() <= MAX_NAME_BYTES, "past the bytes");
    assert!(after.last() <= MAX_CHANGE, "numbered past {MAX_CHANGE}");
    assert_eq!(StoredLog::from_document(after.document()), after, "the log written reads back");
    if after.began == before.began {
        assert_eq!(after.last(), before.last() + names.len() as u64, "each name appended numbered");
    }
    for name in names {
        assert_ne!(
            after.unchanged_since(&seen, name),
            Some(true),
            "{name:?} appended, yet unchanged"
        );
    }
}

type Cell = Arc<OnceCell<Arc<StoredLog>>>;

/// The log as this instance last read it: read again at most once a [`FRESH_FOR`],
/// by the first request that needs it then, while the others wait on the same read.
#[derive(Default)]
pub(crate) struct ChangeLog {
    read: Mutex<Option<(Instant, Cell)>>,
    /// The last log read, however old.
    last: Mutex<Option<Arc<StoredLog>>>,
}

/// What kept pages are checked with ([`super::pages::KeptPages::page_with`]): the log as this
/// instance last read it, and a read of it no older than a lifetime, made only if awaited.
pub(crate) struct LogForChecks<R> {
    pub(crate) last: Option<Arc<StoredLog>>,
    pub(crate) recent: R,
}

#[cfg(test)]
impl LogForChecks<std::future::Ready<AppResult<Arc<StoredLog>>>> {
    /// An empty log, never written.
    pub(crate) fn none() -> Self {
        LogForChecks { last: None, recent: std::future::ready(Ok(Arc::default())) }
    }
}

impl ChangeLog {
    /// The log as last read, and a read of it no older than a lifetime for the pages to await
    /// when they check one they keep.
    pub(crate) fn for_pages<'a>(
        &'a self,
        state: &'a AppState,
    ) -> LogForChecks<impl Future<Output = AppResult<Arc<StoredLog>>> + 'a> {
        LogForChecks {
            last: self.last.lock().expect("never poisoned").clone(),
            recent: self.recent(state),
        }
    }

    /// The log, as read in the last [`FRESH_FOR`]. A log never written is an empty one:
    /// nothing was delivered since the blog began logging; the first delivery begins it, and a page
    /// seen before is then checked by its own mark once.
    pub(crate) async fn recent(&self, state: &AppState) -> AppResult<Arc<StoredLog>> {
        let cell = {
            let mut read = self.read.lock().expect("never poisoned");
            match &*read {
                Some((born, cell)) if age(*born) < FRESH_FOR => cell.clone(),
                _ => {
                    let cell = Cell::default();
                    *read = Some((now(), cell.clone()));
                    cell
                }
            }
        };
        let recent = cell
            .get_or_try_init(|| async {
                let found = state
                    .store
                    .read::<Value>(Container::Feed, CHANGE_LOG_PARTITION, CHANGE_LOG_ID)
                    .await?;
                let recent = Arc::new(found.map(StoredLog::from_document).unwrap_or_default());
                *self.last.lock().expect("never poisoned") = Some(recent.clone());
                AppResult::Ok(recent)
            })
            .await?;
        Ok(recent.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn a_page_is_unchanged_until_the_log_names_it() {
        let log = StoredLog::begun().appended(&names(&["p/a"]));
        let seen = log.place();
        let log = log.appended(&names(&["p/b", "feed"]));
        assert_eq!(log.unchanged_since(&seen, "p/a"), Some(true));
        assert_eq!(log.unchanged_since(&seen, "p/b"), Some(false));
        assert_eq!(log.unchanged_since(&seen, "feed"), Some(false));
        assert_eq!(log.unchanged_since(&log.place(), "p/b"), Some(true), "seen after the change");
    }

    /// A post's copy changed in the feed is a change of the feed, said with the post.
    #[test]
    fn a_name_under_a_page_is_a_change_of_it() {
        let log = StoredLog::begun();
        let seen = log.place();
        let log = log.appended(&names(&["p/a", "feed/a", "feedx"]));
        assert_eq!(log.unchanged_since(&seen, FEED), Some(false));
        assert_eq!(log.changes_since(&seen, FEED), Some(vec!["feed/a"]), "feedx is another page");
        assert_eq!(log.changes_since(&log.place(), FEED), Some(vec![]));
    }

    #[test]
    fn a_log_that_dropped_changes_or_began_anew_cannot_say() {
        let log = StoredLog::begun();
        let seen = log.place();
        let many: Vec<String> = (0..MAX_NAMES + 1).map(|n| post(&n.to_string())).collect();
        let log = log.appended(&many.into_iter().collect());
        assert_eq!(log.names.len(), MAX_NAMES, "the oldest name dropped");
        assert_eq!(
            log.unchanged_since(&seen, "p/other"),
            None,
            "a change since is no longer named"
        );
        let anew = StoredLog::begun();
        assert_eq!(anew.unchanged_since(&log.place(), "p/other"), None);
        assert_eq!(
            StoredLog::default().unchanged_since(&StoredLog::default().place(), "p/a"),
            Some(true)
        );
    }

    #[test]
    fn the_log_keeps_within_its_bytes() {
        let long = "x".repeat(500);
        let mut log = StoredLog::begun();
        for n in 0..10 {
            log = log.appended(&names(&[&format!("p/{n}{long}")]));
            assert!(log.names.iter().map(String::len).sum::<usize>() <= MAX_NAME_BYTES);
        }
        assert_eq!(log.last(), 10, "every change is numbered, named or dropped");
        assert_eq!(log.names.len(), 3);
    }

    #[test]
    fn a_damaged_log_is_begun_anew() {
        let log = StoredLog::from_document(serde_json::json!({"id": CHANGE_LOG_ID, "names": 7}));
        assert!(log.names.is_empty() && !log.began.is_empty());
        let at_the_end = serde_json::json!({"began": "b", "since": u64::MAX, "names": ["p/a"]});
        let log = StoredLog::from_document(at_the_end);
        assert!(log.began != "b" && log.last() == 0, "numbered past what it can take: {log:?}");
        let near_the_end = StoredLog { began: "b".into(), since: MAX_CHANGE, names: Vec::new() };
        let log = near_the_end.appended(&names(&["p/a"]));
        assert!(log.began != "b" && log.last() == 1, "{log:?}");
        let stored = StoredLog::begun().appended(&names(&["feed"]));
        assert_eq!(StoredLog::from_document(stored.document()), stored);
    }
}
