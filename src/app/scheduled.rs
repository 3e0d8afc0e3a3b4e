//! Scheduled posts, published on time by a timer.
//!
//! While a post is scheduled, `feed` holds a small item for it in a partition of its own
//! (`type` = [`SCHEDULED_PARTITION`]): its id, author and `publishAt`. The change feed
//! (`PostsChangeFeed`) keeps it from the post's copy in `users`, as the other copies are kept.
//! So the timer finds every post due with one query on one partition, never a scan of `posts`.
//!
//! The timer ([`publish_due`]) reads that partition, then publishes each post whose time has
//! come with one write conditioned on the version it read. So two runs at once publish a post
//! once: the second write fails on the etag, and its read again finds the post published. And a
//! post edited, rescheduled or deleted after the read is not published from the stale read. A
//! run missed (the app asleep, an instance lost) is caught up by the next: it reads every post
//! due by then. The change feed then copies the published post, as any other.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;

use super::{AppResult, AppState};
use crate::cosmos::{Container, Meter, PageRequest, StoreError, WriteOp, queries};
use crate::model::{self, PostCopy, PostStatus, StoredPost};

/// The timer function's name: its folder under `functions/`, and the path the host invokes.
pub(crate) const TIMER_FUNCTION: &str = "PublishScheduled";

/// The partition of `feed` that lists the scheduled posts, apart from Q6's posts and the marks.
pub(crate) const SCHEDULED_PARTITION: &str = "scheduled";

/// How many times one post's publication is tried when the post changed between its read and
/// its write (a comment cannot land on a scheduled post; an edit can).
const ATTEMPTS: usize = 8;

/// A scheduled post, as the timer's partition lists it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DuePost {
    id: String,
    /// [`SCHEDULED_PARTITION`]: the partition key of `feed`.
    #[serde(rename = "type")]
    partition: String,
    user_id: String,
    publish_at: String,
    /// Its version, for a conditional delete (read, never written).
    #[serde(rename = "_etag", default, skip_serializing)]
    etag: Option<String>,
}

/// Brings the timer's list up to `copy`, the post's copy in `users` as the change feed just
/// left it (`was_scheduled`: the copy before it was scheduled). The post is listed while it is
/// scheduled, at its time, and taken off once it is not. A post never scheduled costs nothing.
pub(crate) async fn list_if_scheduled(
    state: &AppState,
    copy: &PostCopy,
    was_scheduled: bool,
) -> AppResult<()> {
    let post = &copy.post;
    match (&post.status, &post.publish_at) {
        (PostStatus::Scheduled, Some(publish_at)) => {
            let due = DuePost {
                id: post.id.clone(),
                partition: SCHEDULED_PARTITION.to_owned(),
                user_id: post.user_id.clone(),
                publish_at: publish_at.clone(),
                etag: None,
            };
            let document = serde_json::to_value(&due)
                .map_err(|error| StoreError::json("a scheduled post's listing", error))?;
            let upsert = WriteOp::Upsert { document, if_match: None };
            state.store.execute_write(Container::Feed, SCHEDULED_PARTITION, upsert).await?;
        }
        _ if was_scheduled => unlist(state, &post.id, None).await?,
        _ => {}
    }
    Ok(())
}

/// Takes post `post_id` off the timer's list; `if_match`: only the listing of that version.
async fn unlist(state: &AppState, post_id: &str, if_match: Option<String>) -> AppResult<()> {
    let delete = WriteOp::Delete { id: post_id.to_owned(), if_match };
    match state.store.execute_write(Container::Feed, SCHEDULED_PARTITION, delete).await {
        Ok(()) | Err(StoreError::NotFound | StoreError::PreconditionFailed) => Ok(()),
        Err(other) => Err(other.into()),
    }
}

/// What one timer run did.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Published {
    /// Posts published.
    pub published: usize,
    /// Listings taken off because their post is no longer scheduled at that time (published by
    /// another run, edited, rescheduled, deleted).
    pub stale: usize,
}

/// The timer's run at `now`: every post listed as due by then is published, with one query on
/// the timer's partition and, for each post due, a point read and a conditional replace.
pub(crate) async fn publish_due(state: &AppState, now: OffsetDateTime) -> AppResult<Published> {
    let started = std::time::Instant::now();
    let now = model::creation_date(now);
    let mut done = Published::default();
    let mut continuation = None;
    loop {
        let query = queries::due_posts(&now);
        let page = PageRequest { size: 100, continuation };
        let found = state
            .store
            .query_page::<Value>(Container::Feed, SCHEDULED_PARTITION, query, page)
            .await?;
        for document in found.items {
            // A listing of another shape is nobody's: left for `handler repair`'s eyes, not
            // acted on.
            let Ok(due) = serde_json::from_value::<DuePost>(document) else { continue };
            if publish_one(state, &due, &now).await? {
                done.published += 1;
            } else {
                done.stale += 1;
            }
        }
        continuation = found.continuation;
        if continuation.is_none() {
            break;
        }
    }
    // What the run cost, from the meter it runs under: the host invocation's request, or the
    // local timer's own (a run with nothing due is one query; said at debug level only).
    let (ru, operations) = Meter::current().map_or((0.0, 0), |meter| meter.totals());
    let ru = format_args!("{ru:.2}");
    let ms = format_args!("{:.1}", started.elapsed().as_secs_f64() * 1000.0);
    if done == Published::default() {
        tracing::debug!(target: "blog::scheduled", %ru, operations, %ms, "no scheduled post due");
    } else {
        tracing::info!(target: "blog::scheduled", published = done.published, stale = done.stale, %ru, operations, %ms, "scheduled posts");
    }
    Ok(done)
}

/// Publishes the post `due` lists, if it is still scheduled at that time, which has come:
/// `true` once published by this write. A post that is not (published already, edited to
/// another time, back to draft, deleted) only has its listing taken off.
async fn publish_one(state: &AppState, due: &DuePost, now: &str) -> AppResult<bool> {
    for _ in 0..ATTEMPTS {
        let current =
            state.store.read_versioned::<StoredPost>(Container::Posts, &due.id, &due.id).await?;
        let Some(current) = current.filter(|found| {
            let post = &found.item.post;
            model::is_live(post)
                && post.status == PostStatus::Scheduled
                && post.publish_at.as_deref() == Some(due.publish_at.as_str())
                && due.publish_at.as_str() <= now
        }) else {
            unlist(state, &due.id, due.etag.clone()).await?;
            return Ok(false);
        };
        let post = model::with_status(current.item.post, PostStatus::Published, None, now);
        let published = StoredPost { post, ..current.item };
        let replace = WriteOp::Replace {
            id: due.id.clone(),
            document: super::posts::to_document(&published)?,
            if_match: Some(current.etag),
        };
        match state.store.execute_write(Container::Posts, &due.id, replace).await {
            Ok(()) => {
                state.post_views.invalidate(&due.id);
                return Ok(true);
            }
            // Changed since the read (an edit, another run's publication): read again.
            Err(StoreError::PreconditionFailed) => continue,
            Err(StoreError::NotFound) => return Ok(false),
            Err(other) => return Err(other.into()),
        }
    }
    Err(StoreError::CopyKeptChanging { post_id: due.id.clone(), container: Container::Posts }
        .into())
}

/// Runs [`publish_due`] at once, so that a run missed while the blog was stopped is caught up
/// at its start, then at every whole multiple of `every` since the Unix epoch: once a minute,
/// that is at second 0 of each minute, as `functions/PublishScheduled`'s NCRONTAB `0 * * * * *`
/// runs it under the host. So a post scheduled for 9:00 goes out at 9:00 here too, not up to a
/// minute later. This is the timer of a blog whose change feed runs in this process, where no
/// Functions host triggers it. It holds the blog's state only while it runs, so a blog that
/// stops lets go of its store; it ends at its next wake.
pub(crate) fn spawn_local_timer(state: &AppState, every: std::time::Duration) {
    let blog = state.downgrade();
    tokio::spawn(async move {
        let mut next = tokio::time::Instant::now();
        loop {
            tokio::time::sleep_until(next).await;
            let Some(state) = blog.upgrade() else { return };
            let run = publish_due(&state, OffsetDateTime::now_utc());
            if let Err(error) = Arc::new(Meter::default()).measure(run).await {
                tracing::warn!(target: "blog::scheduled", error = %crate::logging::with_causes(&error), "the scheduled posts' run failed; the next runs at the next tick");
            }
            drop(state);
            next = tokio::time::Instant::now() + until_next_tick(OffsetDateTime::now_utc(), every);
        }
    });
}

/// How long from `now` to the next whole multiple of `every` since the Unix epoch (a whole
/// `every` when `now` is one).
fn until_next_tick(now: OffsetDateTime, every: std::time::Duration) -> std::time::Duration {
    let every_ns = every.as_nanos().max(1);
    let since_epoch = u128::try_from(now.unix_timestamp_nanos()).unwrap_or(0);
    let left = every_ns - since_epoch % every_ns;
    std::time::Duration::from_nanos(u64::try_from(left).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use time::macros::datetime;

    use super::until_next_tick;

    #[test]
    fn the_local_timer_ticks_at_second_0_of_each_minute() {
        let minute = Duration::from_secs(60);
        assert_eq!(
            until_next_tick(datetime!(2026-12-07 08:59:59.250 UTC), minute),
            Duration::from_millis(750)
        );
        assert_eq!(until_next_tick(datetime!(2026-12-07 09:00:00 UTC), minute), minute);
        assert_eq!(
            until_next_tick(datetime!(2026-12-07 09:00:01 UTC), minute),
            Duration::from_secs(59)
        );
    }

    #[test]
    fn a_timer_of_seconds_ticks_at_each_whole_second() {
        let second = Duration::from_secs(1);
        assert_eq!(
            until_next_tick(datetime!(2026-12-07 09:00:00.9 UTC), second),
            Duration::from_millis(100)
        );
    }
}
