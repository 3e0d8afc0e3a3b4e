//! `PostsChangeFeed`: copy each changed post, in short form, into `users` and `feed`; for a
//! deleted post (its tombstone, C7), remove the copies and finish deleting its comments and likes.

use futures::TryStreamExt;
use serde::Deserialize;
use serde_json::Value;

use super::{BatchReport, FeedError};
use crate::app::AppState;
use crate::app::posts::{PostRemoval, remove_post};
use crate::cosmos::{Container, StoreError, Versioned, WriteOp};
use crate::model::validate_id;
use crate::model::{self, CopyAction, FEED_PARTITION, Post, PostCopy, SourceVersion};
use crate::scripts::{NOT_AMONG_NEWEST, PostTrigger, ScriptError};

/// How far ahead of this instance's clock a change's `_ts` may be. `_ts` is the second Cosmos DB
/// stored the version at, and a copy never goes back to a version with a smaller `_ts`: a
/// version claiming to come from the future would freeze its copies for good, so it is refused.
/// Five minutes is far beyond the skew of NTP-synchronized clocks.
pub const MAX_CLOCK_SKEW_SECS: i64 = 300;

/// How often a copy is re-read and re-written when another writer changed it in between.
const ATTEMPTS: usize = 10;

/// A post as the change feed delivers it: the item with its system properties.
#[derive(Deserialize)]
struct ChangedPost {
    #[serde(flatten)]
    post: Post,
    #[serde(rename = "_ts")]
    ts: i64,
    #[serde(rename = "_etag")]
    etag: String,
}

impl ChangedPost {
    fn version(&self) -> SourceVersion {
        SourceVersion { source_ts: self.ts, source_etag: self.etag.clone() }
    }
}

/// How many posts' copies in `users` are refreshed at once.
const CONCURRENT_USER_COPIES: usize = 8;

/// Handles one batch of changes from `posts`.
pub async fn posts_changed(state: &AppState, documents: Vec<Value>) -> Result<BatchReport, FeedError> {
    let mut report = BatchReport::default();
    let mut changed_posts = Vec::new();
    let mut deleted_posts = Vec::new();
    for document in documents {
        // (Comments and likes share the container.)
        let Some(document) = report.admit(document, "post") else { continue };
        match parse(&document) {
            Ok(changed) if changed.post.deleted => deleted_posts.push(changed),
            Ok(changed) => changed_posts.push(changed),
            Err(why) => report.refuse(why, document),
        }
    }
    for deleted in &deleted_posts {
        remove_copies(state, &deleted.post).await?;
        report.applied += 1;
    }
    // The copies in `users` are in the authors' partitions and each is written conditionally,
    // so they are refreshed concurrently (their writes then share the embedded store's commits
    // and fsyncs, or Cosmos DB's round trips). The copies in `feed` all go to one partition through
    // `truncateFeed`, which deletes what falls out: one after the other, as the trigger assumes.
    futures::stream::iter(changed_posts.iter().map(Ok))
        .try_for_each_concurrent(CONCURRENT_USER_COPIES, |changed| refresh_copy(state, Target::UserPosts, changed))
        .await?;
    for changed in &changed_posts {
        refresh_copy(state, Target::Feed, changed).await?;
        report.applied += 1;
    }
    Ok(report)
}

/// Reads a changed post, refusing what a well-behaved writer of `posts` never writes.
fn parse(document: &Value) -> Result<ChangedPost, String> {
    let id = document.get("id").cloned().unwrap_or(Value::Null);
    let changed = ChangedPost::deserialize(document).map_err(|error| format!("post {id}: {error}"))?;
    let post = &changed.post;
    validate_id(&post.id).and_then(|()| validate_id(&post.user_id)).map_err(|why| format!("post {id}: {why}"))?;
    if post.post_id != post.id {
        return Err(format!("post {id}: postId {:?} differs from its id", post.post_id));
    }
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    if changed.ts > now + MAX_CLOCK_SKEW_SECS {
        return Err(format!("post {id}: its _ts {} is more than {MAX_CLOCK_SKEW_SECS} s ahead of the clock ({now})", changed.ts));
    }
    let too_long = |text: &str, max: usize| text.chars().count() > max;
    if too_long(&post.title, model::MAX_TITLE_CHARS)
        || too_long(&post.content, model::MAX_CONTENT_CHARS)
        || too_long(&post.user_username, model::MAX_USERNAME_CHARS)
    {
        return Err(format!("post {id}: a field is longer than the API allows"));
    }
    Ok(changed)
}

/// Where a post's short copy lives.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// The author's partition of `users` (Q3).
    UserPosts,
    /// The single partition of `feed` (Q6), kept at the newest 100 by `truncateFeed`.
    Feed,
}

impl Target {
    fn container(self) -> Container {
        match self {
            Target::UserPosts => Container::Users,
            Target::Feed => Container::Feed,
        }
    }

    fn partition_key(self, post: &Post) -> &str {
        match self {
            Target::UserPosts => &post.user_id,
            Target::Feed => FEED_PARTITION,
        }
    }
}

/// Makes the copy of `changed` in `target` at least as new as `changed`, and never older than
/// it was. The copy is written conditionally on the etag it was read with, so a concurrent
/// writer of the same copy makes this start over rather than be overwritten.
async fn refresh_copy(state: &AppState, target: Target, changed: &ChangedPost) -> Result<(), FeedError> {
    let (container, partition_key) = (target.container(), target.partition_key(&changed.post));
    for _ in 0..ATTEMPTS {
        let existing = state.store.read_versioned::<PostCopy>(container, partition_key, &changed.post.id).await?;
        let copy = match model::copy_action(existing.as_ref().map(|found| &found.item.source), &changed.version()) {
            CopyAction::Keep => return Ok(()),
            // No copy yet: made only while the post exists. A late or repeated delivery of a
            // version older than the post's deletion would otherwise bring back a copy that its
            // tombstone removed (nothing is left to compare versions with). One point read,
            // once per post and place; the current version is at least as new as the delivered.
            CopyAction::Write if existing.is_none() => match current_post(state, &changed.post.id).await? {
                Some(current) => model::post_copy(&current.post, current.version()),
                None => return Ok(()),
            },
            CopyAction::Write => model::post_copy(&changed.post, changed.version()),
            CopyAction::WriteFromCurrent => match current_post(state, &changed.post.id).await? {
                Some(current) if Some(&current.version()) != existing.as_ref().map(|found| &found.item.source) => {
                    model::post_copy(&current.post, current.version())
                }
                _ => return Ok(()),
            },
        };
        match write_copy(state, target, partition_key, copy, existing).await {
            Ok(()) => return Ok(()),
            Err(FeedError::Store(StoreError::PreconditionFailed | StoreError::Conflict)) => continue,
            Err(FeedError::Script(ScriptError::Store(StoreError::PreconditionFailed | StoreError::Conflict))) => continue,
            // `truncateFeed` refused the write: the post is older than the newest 100, so it has
            // no place in the feed (an edit or a new comment on an old post must not bring it back).
            Err(FeedError::Script(ScriptError::Thrown(message))) if message.starts_with(NOT_AMONG_NEWEST) => return Ok(()),
            Err(other) => return Err(other),
        }
    }
    Err(StoreError::Unfinished(format!("the copy of post {} in {} kept changing", changed.post.id, container.name())).into())
}

/// A deleted post: its copies go, and so does whatever its deletion left of its comments and
/// likes (a DELETE that stopped early: the tombstone is written first). The change feed never
/// delivers a deletion; it delivers the tombstone, and this is the only place that sees it.
async fn remove_copies(state: &AppState, post: &Post) -> Result<(), FeedError> {
    for target in [Target::UserPosts, Target::Feed] {
        let delete = WriteOp::Delete { id: post.id.clone(), if_match: None };
        match state.store.execute_write(target.container(), target.partition_key(post), delete).await {
            Ok(()) | Err(StoreError::NotFound) => {}
            Err(other) => return Err(other.into()),
        }
    }
    match remove_post(state, &post.id, &post.user_id).await? {
        PostRemoval::Removed | PostRemoval::NothingLeft | PostRemoval::NotFound => Ok(()),
        other => Err(ScriptError::Failed(format!("post {}: deletePost answered {other:?}", post.id)).into()),
    }
}

/// The post as it is now in `posts`, with its version; `None` once it is deleted (its copies
/// are removed when its tombstone is delivered, and none is made again).
async fn current_post(state: &AppState, post_id: &str) -> Result<Option<ChangedPost>, FeedError> {
    let document = state.store.read::<Value>(Container::Posts, post_id, post_id).await?;
    Ok(document.and_then(|document| parse(&document).ok()).filter(|current| model::is_live(&current.post)))
}

/// Creates or replaces the copy; writes into `feed` run the `truncateFeed` trigger.
async fn write_copy(
    state: &AppState,
    target: Target,
    partition_key: &str,
    copy: PostCopy,
    existing: Option<Versioned<PostCopy>>,
) -> Result<(), FeedError> {
    let document = serde_json::to_value(&copy).map_err(|error| StoreError::json("a post's copy does not serialize", error))?;
    let write = match existing {
        Some(found) => WriteOp::Replace { id: copy.post.id.clone(), document, if_match: Some(found.etag) },
        None => WriteOp::Create { document },
    };
    match target {
        Target::Feed => Ok(state.scripts.write_with_trigger(PostTrigger::TruncateFeed, partition_key, write).await?),
        Target::UserPosts => Ok(state.store.execute_write(target.container(), partition_key, write).await?),
    }
}
