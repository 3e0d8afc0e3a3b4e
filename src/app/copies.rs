//! The denormalization rules of the article's V3 model: what a change to a post or a user means
//! for the copies that let every read stay in one partition.
//!
//! - A post, in short form, is copied into its author's partition of `users` (Q3) and into
//!   `feed` (Q6); a deleted post's copies go ([`copy_posts`], [`remove_post_copies`]).
//! - A user's current username is written onto their items in `posts` (Q2, Q4, Q5); their
//!   posts' copies follow through the posts' own change feed ([`user_changed`]).
//!
//! The change feed is what delivers the changes (`crate::changefeed`, an adapter); the rules are
//! here, beside the use cases that write the originals, so that both are read in one place. Every
//! rule is idempotent and order-insensitive: a delivery repeated, late or out of order leaves the
//! same copies.

use std::borrow::Cow;
use std::collections::BTreeSet;

use futures::{StreamExt, TryStreamExt};
use serde::Deserialize;
use serde_json::{Value, json};

use super::kept::change_log;
use super::posts::{PostRemoval, remove_post};
use super::{AppError, AppResult, AppState, usernames};
use crate::cosmos::{Container, QuerySpec, StoreError, Versioned, WriteOp};
use crate::model::{
    self, CopyAction, FEED_PARTITION, Post, PostCopy, PostStatus, SourceVersion, User, validate_id,
};
use crate::scripts::{NOT_AMONG_NEWEST, PostTrigger, ScriptError, StoredProcedure};

/// How far ahead of this instance's clock a change's `_ts` may be. The `_ts` is the second
/// Cosmos DB stored the version at, and a copy never goes back to a version with a smaller
/// `_ts`. A version claiming to come from the future would freeze its copies for good, so it is
/// refused. Five minutes is far beyond the skew of NTP-synchronized clocks.
pub(crate) const MAX_CLOCK_SKEW_SECS: i64 = 300;

/// How often a copy is re-read and re-written when another writer changed it in between.
const ATTEMPTS: usize = 10;

/// How many posts' copies in `users` are refreshed at once.
const CONCURRENT_USER_COPIES: usize = 8;

/// How often `updateUsernames` is run in one post partition before giving up on the batch (each
/// run rewrites up to a transactional batch's worth of items: 100).
const MAX_RUNS_PER_POST: usize = 1_000;

/// A version of a post as `posts` stored it: the item with its system properties, which say how
/// new it is.
#[derive(Deserialize)]
pub(crate) struct PostVersion {
    #[serde(flatten)]
    pub post: Post,
    #[serde(rename = "_ts")]
    ts: i64,
    #[serde(rename = "_etag")]
    etag: String,
}

/// Why a stored post is not copied ([`PostVersion::from_document`]): `id` is the item's `id` as
/// it holds it (JSON, `null` where it has none), since the item may not be a post at all.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PostRefused {
    /// The item does not have a post's fields.
    #[error("post {id}: it is not a post")]
    Unreadable {
        id: Value,
        #[source]
        source: serde_json::Error,
    },
    /// Its `id` or `userId` cannot be an id.
    #[error("post {id}: its id or userId cannot be an id")]
    BadId {
        id: Value,
        #[source]
        source: model::IdError,
    },
    /// Its `postId` is not its `id`.
    #[error("post {id}: postId {post_id:?} differs from its id")]
    PostIdDiffers { id: Value, post_id: String },
    /// Its `_ts` is further ahead of this instance's clock than clocks drift.
    #[error(
        "post {id}: its _ts {ts} is more than {} s ahead of the clock ({now})",
        MAX_CLOCK_SKEW_SECS
    )]
    FromTheFuture { id: Value, ts: i64, now: i64 },
    /// A field is longer than the API lets anyone write.
    #[error("post {id}: its {field} is longer than the API allows ({max} characters)")]
    TooLong { id: Value, field: &'static str, max: usize },
    /// Its tags are what the API refuses: each would be a copy in `tags`.
    #[error("post {id}: its tags are not what the API allows")]
    BadTags {
        id: Value,
        /// Boxed: the refusal is rare, and every copy's result carries this enum's size.
        #[source]
        source: Box<model::tags::TagError>,
    },
}

impl PostVersion {
    /// Reads a stored post, refusing (with why) what a well-behaved writer of `posts` never
    /// writes: such a change is never copied.
    pub(crate) fn from_document(document: &Value) -> Result<PostVersion, PostRefused> {
        let id = document.get("id").cloned().unwrap_or(Value::Null);
        let version = match PostVersion::deserialize(document) {
            Ok(version) => version,
            Err(source) => return Err(PostRefused::Unreadable { id, source }),
        };
        let post = &version.post;
        if let Err(source) = validate_id(&post.id).and_then(|()| validate_id(&post.user_id)) {
            return Err(PostRefused::BadId { id, source });
        }
        if post.post_id != post.id {
            return Err(PostRefused::PostIdDiffers { id, post_id: post.post_id.clone() });
        }
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        if version.ts > now + MAX_CLOCK_SKEW_SECS {
            return Err(PostRefused::FromTheFuture { id, ts: version.ts, now });
        }
        let fields = [
            ("title", &post.title, model::MAX_TITLE_CHARS),
            ("content", &post.content, model::MAX_CONTENT_CHARS),
            ("userUsername", &post.user_username, model::MAX_USERNAME_CHARS),
        ];
        if let Some((field, _, max)) =
            fields.into_iter().find(|(_, text, max)| text.chars().count() > *max)
        {
            return Err(PostRefused::TooLong { id, field, max });
        }
        if let Err(source) = model::tags::stored_tags(post.tags.clone()) {
            return Err(PostRefused::BadTags { id, source: Box::new(source) });
        }
        Ok(version)
    }

    /// The same version, owned (the index keeps it past the delivery's borrow).
    pub(crate) fn clone_version(&self) -> PostVersion {
        PostVersion { post: self.post.clone(), ts: self.ts, etag: self.etag.clone() }
    }

    pub(crate) fn source(&self) -> SourceVersion {
        SourceVersion { source_ts: self.ts, source_etag: self.etag.clone() }
    }
}

/// Brings every copy of each post up to (at least) the given version. The copies in `users` are
/// in the authors' partitions and each is written conditionally, so they are refreshed
/// concurrently (their writes then share the embedded store's commits, or Cosmos DB's round
/// trips). The copies in `feed` all go to one partition through `truncateFeed`, which deletes
/// what falls out: one after the other, as the trigger assumes. Then the marks are written:
/// each author's posts mark, and the feed's change mark, where a copy of these posts is held.
/// Such a copy may have just been written, or written by a delivery that failed before its
/// mark, so a repeated delivery marks it too. This instance's kept pages of them are dropped at
/// once. Last, the change log names the posts and the lists marked, for every other instance.
pub(crate) async fn copy_posts(state: &AppState, posts: &[PostVersion]) -> AppResult<()> {
    // The futures made first: a stream mapping the posts through a closure would not be `Send`
    // for every lifetime, as the change-feed tasks need.
    let refreshes: Vec<_> =
        posts.iter().map(|post| refresh_copy(state, Target::UserPosts, post)).collect();
    let user_copies: Vec<Option<Refreshed>> = futures::stream::iter(refreshes)
        .buffer_unordered(CONCURRENT_USER_COPIES)
        .map_ok(Refresh::held)
        .try_collect()
        .await?;
    // The timer's list of scheduled posts follows the copies in `users`, as the tags do.
    for refreshed in user_copies.iter().flatten() {
        super::scheduled::list_if_scheduled(state, &refreshed.copy, refreshed.was_scheduled)
            .await?;
        let listed_before = refreshed.listed_before.as_deref();
        super::sitemap::follow_copy(state, &refreshed.copy, listed_before).await?;
    }
    let user_copies: Vec<Option<PostCopy>> =
        user_copies.into_iter().map(|found| found.map(|refreshed| refreshed.copy)).collect();
    // What changed, for the change log: each post's page, and each list marked.
    let mut changed: BTreeSet<String> =
        posts.iter().map(|post| change_log::post(&post.post.id)).collect();
    let authors: BTreeSet<&str> =
        user_copies.iter().flatten().map(|copy| copy.post.user_id.as_str()).collect();
    for author in authors {
        changed.insert(super::users::mark_user_posts_changed(state, author).await?);
    }
    // The copies under tags follow the copies in `users`, as they now are.
    super::tags::copy_tags(state, user_copies.into_iter().flatten(), &mut changed).await?;
    // A copy changed in place is named with its post, so that the other instances' kept pages
    // of the feed mend themselves with one point read (`super::feed`). A copy made anew enters
    // the feed (and may push its 101st out), which only a whole read shows.
    let (mut in_place, mut entered) = (BTreeSet::new(), false);
    for post in posts {
        match refresh_copy(state, Target::Feed, post).await? {
            Refresh::Held(refreshed) => {
                entered |= refreshed.created;
                in_place.insert(change_log::feed_post(&post.post.id));
            }
            // A post that left the feed (back to draft): only a whole read shows who moves up.
            Refresh::Left => entered = true,
            Refresh::Absent => {}
        }
    }
    if !in_place.is_empty() || entered {
        super::feed::mark_feed_changed(state).await?;
    }
    // The whole feed named covers its posts: the log keeps its room for other changes.
    if entered {
        changed.insert(change_log::FEED.to_owned());
    } else {
        changed.extend(in_place);
    }
    if !posts.is_empty() {
        state.feed.invalidate();
    }
    change_log::append(state, &changed).await
}

/// A deleted post: its copies and its pictures go, and so does whatever its deletion left of
/// its comments and likes (a DELETE that stopped early: the tombstone is written first). The change feed never
/// delivers a deletion; it delivers the tombstone, and this is the only rule that sees it.
pub(crate) async fn remove_post_copies(state: &AppState, post: &Post) -> AppResult<()> {
    // First: the copy in `users` says which tags have copies, and goes below.
    let mut changed = BTreeSet::from([change_log::post(&post.id), change_log::FEED.to_owned()]);
    // The sitemap reads the copy in `users` (the month it may also be listed in) before it goes.
    super::sitemap::remove_post(state, post).await?;
    super::tags::remove_tag_copies(state, post, &mut changed).await?;
    for target in [Target::UserPosts, Target::Feed] {
        let delete = WriteOp::Delete { id: post.id.clone(), if_match: None };
        match state
            .store
            .execute_write(target.container(), target.partition_key(post), delete)
            .await
        {
            Ok(()) | Err(StoreError::NotFound) => {}
            Err(other) => return Err(other.into()),
        }
    }
    // Marked whether the deletes found the copies or not: a delivery repeated after a failure
    // between a delete and its mark finds nothing to delete.
    changed.insert(super::users::mark_user_posts_changed(state, &post.user_id).await?);
    super::feed::mark_feed_changed(state).await?;
    state.feed.invalidate();
    // The search index after the copies readers see, as for a change.
    super::search::unindex_post(state, post).await?;
    super::pictures::remove_post_pictures(state, &post.user_id, &post.id).await?;
    match remove_post(state, &post.id, &post.user_id, None).await? {
        PostRemoval::Removed | PostRemoval::NothingLeft | PostRemoval::NotFound => {
            change_log::append(state, &changed).await
        }
        other => Err(ScriptError::Failed(crate::scripts::ScriptFailure::Answered {
            script: StoredProcedure::DeletePost.name(),
            post_id: Some(post.id.clone()),
            answer: format!("{other:?}"),
        })
        .into()),
    }
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

    /// Whether this place holds a copy of `post`: the author's partition every post, drafts
    /// included (their list of drafts); the feed published posts only.
    fn holds(self, post: &Post) -> bool {
        match self {
            Target::UserPosts => true,
            Target::Feed => post.status.is_published(),
        }
    }
}

/// A copy as [`refresh_copy`] left it.
struct Refreshed {
    copy: PostCopy,
    /// Whether it was made just now, where there was none.
    created: bool,
    /// Whether the copy there was before was of a scheduled post (the timer's list follows the
    /// copy in `users`).
    was_scheduled: bool,
    /// The `creationDate` of the copy there was before, if published (the sitemap's month).
    listed_before: Option<String>,
}

/// Where [`refresh_copy`] left a post's place.
enum Refresh {
    /// The copy, as it now is (boxed: a post's copy is large, the other outcomes empty).
    Held(Box<Refreshed>),
    /// The copy there was is deleted: the post is no longer one the place holds.
    Left,
    /// There is no copy, and was none.
    Absent,
}

impl Refresh {
    fn held(self) -> Option<Refreshed> {
        match self {
            Refresh::Held(refreshed) => Some(*refreshed),
            Refresh::Left | Refresh::Absent => None,
        }
    }
}

/// Makes the copy of `changed` in `target` at least as new as `changed`, and never older than
/// it was. The copy is written conditionally on the etag it was read with, so a concurrent
/// writer of the same copy makes this start over rather than be overwritten. A version the
/// place does not hold ([`Target::holds`]: a draft, in the feed) deletes the copy there is.
/// Answers where the place is left.
async fn refresh_copy(
    state: &AppState,
    target: Target,
    changed: &PostVersion,
) -> AppResult<Refresh> {
    let (container, partition_key) = (target.container(), target.partition_key(&changed.post));
    for _ in 0..ATTEMPTS {
        let existing = state
            .store
            .read_versioned::<PostCopy>(container, partition_key, &changed.post.id)
            .await?;
        let copy = match model::copy_action(
            existing.as_ref().map(|found| &found.item.source),
            &changed.source(),
        ) {
            // The copy of this very version, made by rules that have changed since (a field
            // copies gained): made again. `handler rebuild-copies` delivers every post anew, and
            // so brings every copy up to the rules.
            CopyAction::Keep
                if existing.as_ref().is_some_and(|found| made_otherwise(&found.item, changed)) =>
            {
                model::post_copy(&changed.post, changed.source())
            }
            CopyAction::Keep => return Ok(kept(existing)),
            // No copy yet: made only while the post exists. A late or repeated delivery of a
            // version older than the post's deletion would otherwise bring back a copy that its
            // tombstone removed (nothing is left to compare versions with). One point read,
            // once per post and place; the current version is at least as new as the delivered.
            CopyAction::Write if existing.is_none() => {
                match current_post(state, &changed.post.id).await? {
                    Some(current) => model::post_copy(&current.post, current.source()),
                    None => return Ok(Refresh::Absent),
                }
            }
            CopyAction::Write => model::post_copy(&changed.post, changed.source()),
            CopyAction::WriteFromCurrent => match current_post(state, &changed.post.id).await? {
                Some(current)
                    if Some(&current.source())
                        != existing.as_ref().map(|found| &found.item.source) =>
                {
                    model::post_copy(&current.post, current.source())
                }
                _ => return Ok(kept(existing)),
            },
        };
        if !target.holds(&copy.post) {
            let Some(found) = existing else { return Ok(Refresh::Absent) };
            let delete =
                WriteOp::Delete { id: changed.post.id.clone(), if_match: Some(found.etag) };
            match state.store.execute_write(container, partition_key, delete).await {
                Ok(()) => return Ok(Refresh::Left),
                // Changed or deleted meanwhile: read again, and decide again.
                Err(StoreError::PreconditionFailed | StoreError::NotFound) => continue,
                Err(other) => return Err(other.into()),
            }
        }
        // The copy in `users` carries which tags may still have copies of the post, once the
        // tags it is replaced from are gone from it (see `super::tags`).
        let mut copy = copy;
        if let (Target::UserPosts, Some(found)) = (target, &existing) {
            // The tags shown: a draft's copies under its tags go, as its feed copy does.
            copy.tagged_before = model::tags::tagged_before(
                &found.item.tagged_before,
                model::shown_tags(&found.item.post),
                model::shown_tags(&copy.post),
            );
        }
        let created = existing.is_none();
        let was_scheduled =
            existing.as_ref().is_some_and(|found| found.item.post.status == PostStatus::Scheduled);
        let listed_before = existing.as_ref().and_then(|found| listed(&found.item));
        match write_copy(state, target, partition_key, copy.clone(), existing).await {
            Ok(()) => {
                let refreshed = Refreshed { copy, created, was_scheduled, listed_before };
                return Ok(Refresh::Held(Box::new(refreshed)));
            }
            Err(AppError::Store(StoreError::PreconditionFailed | StoreError::Conflict)) => continue,
            Err(AppError::Script(ScriptError::Store(
                StoreError::PreconditionFailed | StoreError::Conflict,
            ))) => continue,
            // `truncateFeed` refused the write: the post is older than the newest 100, so it has
            // no place in the feed (an edit or a new comment on an old post must not bring it back).
            Err(AppError::Script(ScriptError::Thrown(message)))
                if message.starts_with(NOT_AMONG_NEWEST) =>
            {
                return Ok(Refresh::Absent);
            }
            Err(other) => return Err(other),
        }
    }
    Err(StoreError::CopyKeptChanging { post_id: changed.post.id.clone(), container }.into())
}

/// The copy found, kept as it is.
fn kept(existing: Option<Versioned<PostCopy>>) -> Refresh {
    match existing {
        Some(found) => {
            let was_scheduled = found.item.post.status == PostStatus::Scheduled;
            let listed_before = listed(&found.item);
            let copy = found.item;
            Refresh::Held(Box::new(Refreshed {
                copy,
                created: false,
                was_scheduled,
                listed_before,
            }))
        }
        None => Refresh::Absent,
    }
}

/// The `creationDate` of a published copy: the month the sitemap lists it in.
fn listed(copy: &PostCopy) -> Option<String> {
    copy.post.status.is_published().then(|| copy.post.creation_date.clone())
}

/// Whether `copy` is of the version `delivered` is, yet not the copy the rules make of it now.
fn made_otherwise(copy: &PostCopy, delivered: &PostVersion) -> bool {
    copy.source == delivered.source() && copy.post != model::short_post(&delivered.post)
}

/// The post as it is now in `posts`, with its version; `None` once it is deleted (its copies
/// are removed when its tombstone is delivered, and none is made again).
pub(crate) async fn current_post(
    state: &AppState,
    post_id: &str,
) -> AppResult<Option<PostVersion>> {
    let document = state.store.read::<Value>(Container::Posts, post_id, post_id).await?;
    Ok(document
        .and_then(|document| PostVersion::from_document(&document).ok())
        .filter(|current| model::is_live(&current.post)))
}

/// Creates or replaces the copy; writes into `feed` run the `truncateFeed` trigger.
async fn write_copy(
    state: &AppState,
    target: Target,
    partition_key: &str,
    copy: PostCopy,
    existing: Option<Versioned<PostCopy>>,
) -> AppResult<()> {
    let document = serde_json::to_value(&copy)
        .map_err(|error| StoreError::json("a post's copy does not serialize", error))?;
    let write = match existing {
        Some(found) => {
            WriteOp::Replace { id: copy.post.id.clone(), document, if_match: Some(found.etag) }
        }
        None => WriteOp::Create { document },
    };
    match target {
        Target::Feed => Ok(state
            .scripts
            .write_with_trigger(PostTrigger::TruncateFeed, partition_key, write)
            .await?),
        Target::UserPosts => {
            Ok(state.store.execute_write(target.container(), partition_key, write).await?)
        }
    }
}

/// A version of `delivered` was stored: its name reservations are tidied and, if the user may
/// have written under another name, their current name is written onto every item of theirs in
/// `posts`. Then the change log names the user, for the instances that keep them.
pub(crate) async fn user_changed(state: &AppState, delivered: User) -> AppResult<()> {
    // A user never renamed has had one name: the delivered version shows the current one, with
    // no read. (Once renamed, every later version says so too.)
    let current = if model::may_show_other_names(&delivered) {
        state.store.read::<User>(Container::Users, &delivered.user_id, &delivered.user_id).await?
    } else {
        Some(delivered)
    };
    let Some(user) = current else { return Ok(()) };
    usernames::tidy_reservations(&state.store, &user).await?;
    // A new user has written nothing under another name: no query across partitions for them.
    if model::may_show_other_names(&user) {
        copy_username(state, &user).await?;
    }
    state.users.invalidate(&user.user_id);
    change_log::append(state, &BTreeSet::from([change_log::user(&user.user_id)])).await
}

/// Writes the user's username, as it is NOW (`user` was just read), onto every item of theirs
/// in `posts`. Using the current name (not the delivered one) makes an old or repeated delivery
/// harmless.
async fn copy_username(state: &AppState, user: &User) -> AppResult<()> {
    // Which posts hold items of this user that show another name. This is the one query across
    // partitions in the whole application. A rename is rare, and the article's design accepts
    // this fan-out on the write path so that every read stays in one partition. (Deduplicated
    // here: a cross-partition DISTINCT needs the SDK to buffer a bounded window.)
    let query = QuerySpec {
        sql: Cow::Borrowed(
            "SELECT VALUE c.postId FROM c WHERE c.userId = @userId AND c.userUsername != @username AND NOT IS_DEFINED(c.deleted)",
        ),
        parameters: vec![
            (Cow::Borrowed("@userId"), json!(user.user_id)),
            (Cow::Borrowed("@username"), json!(user.username)),
        ],
    };
    let post_ids: BTreeSet<String> = state
        .store
        .query_all_partitions(Container::Posts, query)
        .await?
        .into_iter()
        .filter_map(|id| id.as_str().map(str::to_owned))
        .collect();
    for post_id in &post_ids {
        update_post_partition(state, post_id, user).await?;
    }
    Ok(())
}

/// Runs `updateUsernames` in one post's partition until it reports that nothing is left.
async fn update_post_partition(state: &AppState, post_id: &str, user: &User) -> AppResult<()> {
    for _ in 0..MAX_RUNS_PER_POST {
        let body = state
            .scripts
            .execute(StoredProcedure::UpdateUsernames, post_id, (&user.user_id, &user.username))
            .await?;
        match body.get("done").and_then(Value::as_bool) {
            Some(true) => return Ok(()),
            Some(false) => continue,
            None => {
                return Err(ScriptError::Failed(crate::scripts::ScriptFailure::Answered {
                    script: StoredProcedure::UpdateUsernames.name(),
                    post_id: Some(post_id.to_owned()),
                    answer: body.to_string(),
                })
                .into());
            }
        }
    }
    Err(StoreError::ProcedureUnfinished {
        procedure: StoredProcedure::UpdateUsernames.name(),
        post_id: post_id.to_owned(),
    }
    .into())
}
