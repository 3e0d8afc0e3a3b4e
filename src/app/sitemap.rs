//! The sitemap (the sitemaps.org protocol): every published post, grouped by the month of its
//! `creationDate`, kept by the change feed so that each read is one query on one partition.
//!
//! - `feed`, partition `sitemap-YYYY-MM`: an entry per published post of that month (its id,
//!   `creationDate`, `lastmod`, and the version of the post it was made from), and the month's
//!   summary (how many entries, the latest change, a revision number).
//! - `feed`, partition [`INDEX_PARTITION`]: a copy of each month's summary, the sitemap index.
//!
//! An entry and its month's summary change in one transactional batch, conditioned on both
//! etags: two deliveries at once never count a post twice, and a failure leaves neither. The
//! index follows the summary by its revision, which only grows, so a late write never takes it
//! back. A month whose posts all left keeps its summary at zero, which the index's query skips.
//!
//! The entries follow the post's copy in `users`, as the timer's list does: that copy is the
//! newest version delivered. A draft, a scheduled post and a deleted post have no entry.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{AppResult, AppState};
use crate::cosmos::{Container, PageRequest, StoreError, Versioned, WriteOp, queries};
use crate::model::{self, CopyAction, Post, PostCopy, SourceVersion};

/// The partition of `feed` that holds the index: one item per month.
pub(crate) const INDEX_PARTITION: &str = "sitemaps";

/// What starts the name of a month's partition of `feed` (`sitemap-2026-12`).
const MONTH_PREFIX: &str = "sitemap-";

/// The id of a month's summary, in the month's own partition. It holds a space, which no
/// post id may (`model::validate_id`): it never meets a post's entry.
const SUMMARY_ID: &str = "month summary";

/// The most addresses a sitemap file may list (the protocol's bound).
pub(crate) const URLS_PER_FILE: u64 = 50_000;

/// How often an entry is read and written again when another writer changed it in between.
const ATTEMPTS: usize = 10;

/// A published post, as its month lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    id: String,
    /// The month's partition key (`sitemap-YYYY-MM`).
    #[serde(rename = "type")]
    partition: String,
    creation_date: String,
    /// Its last edit, or its creation.
    lastmod: String,
    #[serde(flatten)]
    source: SourceVersion,
}

/// A month's summary: in the month's partition, and copied into the index.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Month {
    /// [`SUMMARY_ID`] in the month's partition; the month (`2026-12`) in the index.
    id: String,
    #[serde(rename = "type")]
    partition: String,
    /// `YYYY-MM`.
    pub month: String,
    /// How many published posts it lists.
    pub posts: u64,
    /// The latest change of its list, as `creationDate` writes a time.
    pub lastmod: String,
    /// One more at every change of the month's entries.
    revision: u64,
}

/// An address of a month's file, as the file lists it.
#[derive(Debug, Deserialize)]
pub(crate) struct Listed {
    pub id: String,
    pub lastmod: String,
}

/// The month of a `creationDate` (`YYYY-MM`), if it starts as one.
fn month_of(creation_date: &str) -> Option<&str> {
    let month = creation_date.get(..7)?;
    let bytes = month.as_bytes();
    let digits = |range: std::ops::Range<usize>| bytes[range].iter().all(u8::is_ascii_digit);
    (digits(0..4) && bytes[4] == b'-' && digits(5..7)).then_some(month)
}

fn partition(month: &str) -> String {
    format!("{MONTH_PREFIX}{month}")
}

/// What a post's copy asks of the sitemap: its entry, where it is published and live.
fn entry_of(copy: &PostCopy) -> Option<Entry> {
    let post = &copy.post;
    if !(post.status.is_published() && model::is_live(post)) {
        return None;
    }
    let month = month_of(&post.creation_date)?;
    Some(Entry {
        id: post.id.clone(),
        partition: partition(month),
        creation_date: post.creation_date.clone(),
        lastmod: post.edited_at.clone().unwrap_or_else(|| post.creation_date.clone()),
        source: copy.source.clone(),
    })
}

/// Brings the sitemap up to `copy`, the post's copy in `users` as the change feed just left it.
/// `listed_before` is the `creationDate` of the copy it replaced, where that was published: a
/// draft published again is dated anew, and may move to another month.
pub(crate) async fn follow_copy(
    state: &AppState,
    copy: &PostCopy,
    listed_before: Option<&str>,
) -> AppResult<()> {
    let wanted = entry_of(copy);
    // Where an entry may be that is no longer wanted. A post sent back to draft keeps its
    // `creationDate`, so its month is where its entry was.
    let mut stale: BTreeSet<String> =
        listed_before.and_then(month_of).map(partition).into_iter().collect();
    if wanted.is_none()
        && let Some(month) = month_of(&copy.post.creation_date)
    {
        stale.insert(partition(month));
    }
    if let Some(entry) = wanted {
        stale.remove(&entry.partition);
        put(state, entry, &copy.post.user_id).await?;
    }
    for month in stale {
        take_off(state, &month, &copy.post.id, Some(&copy.source)).await?;
    }
    Ok(())
}

/// A deleted post (its tombstone, `post`) leaves the sitemap: from its month, and from the
/// month of its copy in `users`, read before that copy goes.
pub(crate) async fn remove_post(state: &AppState, post: &Post) -> AppResult<()> {
    let copy = state.store.read::<PostCopy>(Container::Users, &post.user_id, &post.id).await?;
    let months: BTreeSet<String> = [
        Some(post.creation_date.as_str()),
        copy.as_ref().map(|copy| copy.post.creation_date.as_str()),
    ]
    .into_iter()
    .flatten()
    .filter_map(month_of)
    .map(partition)
    .collect();
    for month in months {
        take_off(state, &month, &post.id, None).await?;
    }
    Ok(())
}

/// Whether a batch or a write failed because another writer got there first: read again.
fn raced(error: &StoreError) -> bool {
    matches!(error, StoreError::PreconditionFailed | StoreError::Conflict | StoreError::NotFound)
        || matches!(error.batch_cause(), Some(404 | 409 | 412))
}

/// Writes `entry` (of a post of `user_id`) in its month with the month's summary, unless the
/// entry there is as new, or shows the same.
async fn put(state: &AppState, entry: Entry, user_id: &str) -> AppResult<()> {
    for _ in 0..ATTEMPTS {
        let (found, summary) = read_month(state, &entry.partition, &entry.id).await?;
        let write = match found {
            Some(found) => match model::copy_action(Some(&found.item.source), &entry.source) {
                CopyAction::Keep => {
                    // A delivery repeated after a failure may find the batch written and the
                    // index not: the index is brought up to the summary again.
                    if found.item.source == entry.source
                        && let Some(summary) = summary
                    {
                        follow_summary(state, &summary.item).await?;
                    }
                    return Ok(());
                }
                // A like or a comment: nothing the sitemap shows has changed.
                _ if found.item.creation_date == entry.creation_date
                    && found.item.lastmod == entry.lastmod =>
                {
                    return Ok(());
                }
                _ => WriteOp::Replace {
                    id: entry.id.clone(),
                    document: to_document(&entry)?,
                    if_match: Some(found.etag),
                },
            },
            None => {
                // No entry yet: made only while the copy in `users` is still of this version.
                // A late delivery of an older version would otherwise list the post in a month
                // a newer version took it out of.
                let current =
                    state.store.read::<PostCopy>(Container::Users, user_id, &entry.id).await?;
                if current.is_none_or(|current| current.source != entry.source) {
                    return Ok(());
                }
                WriteOp::Create { document: to_document(&entry)? }
            }
        };
        let added = u64::from(matches!(write, WriteOp::Create { .. }));
        let summary_etag = summary.as_ref().map(|found| found.etag.clone());
        let month = changed_month(
            summary.map(|found| found.item),
            &entry.partition,
            &entry.lastmod,
            |posts| posts + added,
        );
        let batch = vec![write, summary_write(&month, summary_etag)?];
        match state.store.execute_batch(Container::Feed, &entry.partition, batch).await {
            Ok(()) => return follow_summary(state, &month).await,
            Err(error) if raced(&error) => continue,
            Err(other) => return Err(other.into()),
        }
    }
    Err(StoreError::CopyKeptChanging { post_id: entry.id, container: Container::Feed }.into())
}

/// Deletes post `id`'s entry from the month partition `partition`, with the month's summary.
/// `newer_than`: only an entry older than that version (`None`: any, the post is deleted).
async fn take_off(
    state: &AppState,
    partition: &str,
    id: &str,
    newer_than: Option<&SourceVersion>,
) -> AppResult<()> {
    for _ in 0..ATTEMPTS {
        let (found, summary) = read_month(state, partition, id).await?;
        let Some(found) = found else { return Ok(()) };
        if let Some(version) = newer_than
            && model::copy_action(Some(&found.item.source), version) == CopyAction::Keep
        {
            return Ok(());
        }
        // Its removal changed the file now.
        let now = model::now();
        let summary_etag = summary.as_ref().map(|found| found.etag.clone());
        let month = changed_month(summary.map(|found| found.item), partition, &now, |posts| {
            posts.saturating_sub(1)
        });
        let delete = WriteOp::Delete { id: id.to_owned(), if_match: Some(found.etag) };
        let batch = vec![delete, summary_write(&month, summary_etag)?];
        match state.store.execute_batch(Container::Feed, partition, batch).await {
            Ok(()) => return follow_summary(state, &month).await,
            Err(error) if raced(&error) => continue,
            Err(other) => return Err(other.into()),
        }
    }
    Err(StoreError::CopyKeptChanging { post_id: id.to_owned(), container: Container::Feed }.into())
}

/// A post's entry and its month's summary, each with its etag: two point reads.
async fn read_month(
    state: &AppState,
    partition: &str,
    id: &str,
) -> AppResult<(Option<Versioned<Entry>>, Option<Versioned<Month>>)> {
    let (entry, summary) = futures::try_join!(
        state.store.read_versioned::<Entry>(Container::Feed, partition, id),
        state.store.read_versioned::<Month>(Container::Feed, partition, SUMMARY_ID),
    )?;
    Ok((entry, summary))
}

/// The summary after a change of the month's entries at `at`: counted anew by `count`, its
/// latest change the later of its own and `at`, and its revision one more.
fn changed_month(
    summary: Option<Month>,
    partition: &str,
    at: &str,
    count: impl FnOnce(u64) -> u64,
) -> Month {
    let month = partition.trim_start_matches(MONTH_PREFIX).to_owned();
    let summary = summary.unwrap_or_else(|| Month {
        id: SUMMARY_ID.to_owned(),
        partition: partition.to_owned(),
        month,
        posts: 0,
        lastmod: String::new(),
        revision: 0,
    });
    // Times written as `creationDate` writes them: the greater text is the later time.
    let lastmod = if summary.lastmod.as_str() < at { at.to_owned() } else { summary.lastmod };
    Month { posts: count(summary.posts), lastmod, revision: summary.revision + 1, ..summary }
}

/// The write of `month`'s summary: a replace conditioned on the etag read, or a create.
fn summary_write(month: &Month, etag: Option<String>) -> AppResult<WriteOp> {
    let document = to_document(month)?;
    Ok(match etag {
        Some(etag) => {
            WriteOp::Replace { id: SUMMARY_ID.to_owned(), document, if_match: Some(etag) }
        }
        None => WriteOp::Create { document },
    })
}

/// Brings the index's item for `summary`'s month up to it, unless it is there already (its
/// revision is as high).
async fn follow_summary(state: &AppState, summary: &Month) -> AppResult<()> {
    let copy = Month {
        id: summary.month.clone(),
        partition: INDEX_PARTITION.to_owned(),
        ..summary.clone()
    };
    for _ in 0..ATTEMPTS {
        let found =
            state.store.read_versioned::<Month>(Container::Feed, INDEX_PARTITION, &copy.id).await?;
        let document = to_document(&copy)?;
        let write = match found {
            Some(found) if found.item.revision >= copy.revision => return Ok(()),
            Some(found) => {
                WriteOp::Replace { id: copy.id.clone(), document, if_match: Some(found.etag) }
            }
            None => WriteOp::Create { document },
        };
        match state.store.execute_write(Container::Feed, INDEX_PARTITION, write).await {
            Ok(()) => return Ok(()),
            Err(error) if raced(&error) => continue,
            Err(other) => return Err(other.into()),
        }
    }
    Err(StoreError::CopyKeptChanging { post_id: copy.id, container: Container::Feed }.into())
}

fn to_document<T: Serialize>(item: &T) -> AppResult<serde_json::Value> {
    serde_json::to_value(item)
        .map_err(|error| StoreError::json("a sitemap item does not serialize", error).into())
}

/// The sitemap index: each month that lists a post, oldest first (one query on one partition).
pub(crate) async fn months(state: &AppState) -> AppResult<Vec<Month>> {
    let mut months = Vec::new();
    let mut continuation = None;
    loop {
        let page = PageRequest { size: 1_000, continuation };
        let found = state
            .store
            .query_page::<Month>(Container::Feed, INDEX_PARTITION, queries::sitemap_months(), page)
            .await?;
        months.extend(found.items);
        continuation = found.continuation;
        if continuation.is_none() {
            return Ok(months);
        }
    }
}

/// The `part`th file (from 1) of `month`'s addresses, oldest post first: one query on the
/// month's partition. Empty when the month has no post there.
pub(crate) async fn month_file(state: &AppState, month: &str, part: u64) -> AppResult<Vec<Listed>> {
    let offset = (part - 1) * URLS_PER_FILE;
    let mut listed = Vec::new();
    let mut continuation = None;
    loop {
        let page = PageRequest { size: 5_000, continuation };
        let query = queries::sitemap_entries(offset, URLS_PER_FILE);
        let found = state
            .store
            .query_page::<Listed>(Container::Feed, &partition(month), query, page)
            .await?;
        listed.extend(found.items);
        continuation = found.continuation;
        if continuation.is_none() {
            return Ok(listed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_month_is_read_from_a_creation_date() {
        assert_eq!(month_of("2026-12-07T09:00:00.000Z"), Some("2026-12"));
        assert_eq!(month_of("2026"), None);
        assert_eq!(month_of("20x6-12-07"), None);
        assert_eq!(month_of("2026/12/07"), None);
    }

    #[test]
    fn a_change_counts_and_moves_the_latest_time_forward_only() {
        let first = changed_month(None, "sitemap-2026-12", "2026-12-02T00:00:00.000Z", |n| n + 1);
        assert_eq!((first.posts, first.revision, first.month.as_str()), (1, 1, "2026-12"));
        let second =
            changed_month(Some(first), "sitemap-2026-12", "2026-12-01T00:00:00.000Z", |n| n + 1);
        assert_eq!((second.posts, second.revision), (2, 2));
        assert_eq!(second.lastmod, "2026-12-02T00:00:00.000Z");
        let emptied =
            changed_month(Some(second), "sitemap-2026-12", "2027-01-01T00:00:00.000Z", |n| {
                n.saturating_sub(3)
            });
        assert_eq!((emptied.posts, emptied.lastmod.as_str()), (0, "2027-01-01T00:00:00.000Z"));
    }
}
