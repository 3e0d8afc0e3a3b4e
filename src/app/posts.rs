//! C2 (create, edit post), C7 (delete post) and Q2 (get post), and what the lists of a post
//! share.

use super::{BadInput, Clash, Contended, NotAllowed};
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::cosmos::{
    Container, Page, PageRequest, QuerySpec, StoreError, Versioned, WriteOp, queries, retry_pause,
};
use crate::model::{
    self, ListVersions, MAX_CONTENT_CHARS, MAX_TITLE_CHARS, Post, PostStatus, StoredPost, User,
};
use crate::scripts::{DeleteOutcome, ScriptError, ScriptFailure, StoredProcedure};

use super::idempotency::{
    Committed, Once, commit, deleted_since, first_answer, record_argument, repeated_deletion,
    script_error,
};
use super::lists::{DEFAULT_PAGE_SIZE, ListPage, ListParams, OwnerKnown, wrap_token};
use super::{AppError, AppResult, AppState, Caller, post_not_found, valid_user_id, validate_text};

/// How often an edit is retried when a comment or like changed the post between its read and
/// its write.
const EDIT_ATTEMPTS: usize = 16;

pub(crate) fn validate_post_text(title: &str, content: &str) -> AppResult<()> {
    validate_text("title", title, MAX_TITLE_CHARS, false)?;
    validate_text("content", content, MAX_CONTENT_CHARS, true)
}

/// A post's tags as given, checked ([`model::tags::valid_tags`]): the refusal names the tag.
pub(crate) fn valid_tags(tags: Vec<String>) -> AppResult<Vec<String>> {
    model::tags::valid_tags(tags).map_err(|why| AppError::Invalid(BadInput::Tags(why)))
}

/// The parts of a keyed request that say what it writes: `parts`, then its tags where it has
/// any. A request without tags keeps the parts it had before posts had tags, so a key sent
/// before and repeated after an upgrade is still the same request.
fn with_tags<'a>(parts: &[&'a str], tags: Option<&'a [String]>) -> Vec<&'a str> {
    let mut all = parts.to_vec();
    if let Some(tags) = tags.filter(|tags| !tags.is_empty()) {
        all.push("tags");
        all.extend(tags.iter().map(String::as_str));
    }
    all
}

/// The status a write asks for, as the API's `status` and `publishAt` say it: `None` keeps the
/// post's (an edit), and a new post without one is published.
#[derive(Clone, Debug, Default)]
pub(crate) struct StatusAsked {
    pub status: Option<PostStatus>,
    /// For [`PostStatus::Scheduled`] only: when, as given (RFC 3339 with its offset).
    pub publish_at: Option<String>,
}

/// The furthest ahead a post may be scheduled: a year and a day, so a date typed a year off by
/// mistake is refused rather than kept waiting.
const SCHEDULE_HORIZON: time::Duration = time::Duration::days(366);

impl StatusAsked {
    /// The status and publication time to give the post, checked against `now`: a scheduled
    /// post needs a time in the future, within [`SCHEDULE_HORIZON`], and no other status takes
    /// one. The time is kept as `creationDate` is written (UTC, milliseconds), so it sorts.
    fn checked(&self, now: OffsetDateTime) -> AppResult<Option<(PostStatus, Option<String>)>> {
        let refused = |bad| Err(AppError::Invalid(bad));
        match (self.status, self.publish_at.as_deref()) {
            (None, None) => Ok(None),
            (Some(PostStatus::Scheduled), None) => refused(BadInput::ScheduleWithoutTime),
            (None | Some(PostStatus::Published | PostStatus::Draft), Some(_)) => {
                refused(BadInput::PublishAtWithoutSchedule)
            }
            (Some(status), None) => Ok(Some((status, None))),
            (Some(PostStatus::Scheduled), Some(given)) => {
                let Ok(at) = OffsetDateTime::parse(given, &Rfc3339) else {
                    return refused(BadInput::PublishAtUnreadable(given.to_owned()));
                };
                if at <= now {
                    return refused(BadInput::PublishAtPast(given.to_owned()));
                }
                if at > now + SCHEDULE_HORIZON {
                    return refused(BadInput::PublishAtFar(given.to_owned()));
                }
                Ok(Some((PostStatus::Scheduled, Some(model::creation_date(at)))))
            }
        }
    }

    /// The parts of a keyed request that say the status it asks, after `parts`. There are none
    /// where it asks none (an edit that keeps it, a new post published). So a key sent before
    /// posts had drafts is still the same request.
    fn parts<'a>(&'a self, mut parts: Vec<&'a str>) -> Vec<&'a str> {
        match self.status {
            Some(PostStatus::Draft) => parts.extend(["status", "draft"]),
            Some(PostStatus::Published) => parts.extend(["status", "published"]),
            Some(PostStatus::Scheduled) => parts.extend(["status", "scheduled"]),
            None => {}
        }
        if let Some(at) = &self.publish_at {
            parts.extend(["publishAt", at.as_str()]);
        }
        parts
    }
}

/// C2 create: validates, reads the author once, to copy their username into the post (the
/// article's V2 step: Q2 then needs no second read), creates the post: published, or a draft
/// its author alone reads (`status`), which the change feed copies into their partition of
/// `users` only.
pub(crate) async fn create_post(
    state: &AppState,
    caller: &Caller,
    user_id: &str,
    title: String,
    content: String,
    tags: Vec<String>,
    asked: StatusAsked,
) -> AppResult<Post> {
    valid_user_id(user_id)?;
    caller.must_be(user_id, "post as this user")?;
    validate_post_text(&title, &content)?;
    let tags = valid_tags(tags)?;
    let now = OffsetDateTime::now_utc();
    let (status, publish_at) = asked.checked(now)?.unwrap_or_default();
    // With a key, the post's id (its partition) is derived from it, so a request sent again
    // finds the key's record there. A new post published asks nothing: its parts are as before.
    let asked = if status.is_published() { StatusAsked::default() } else { asked };
    let parts = asked.parts(with_tags(&["createPost", user_id, &title, &content], Some(&tags)));
    let once = Once::claimed(&state.store, caller, &parts).await?;
    let post_id = once.as_ref().map_or_else(model::new_id, Once::item_id);
    if let Some(first) = &once
        && first.find(&state.store, Container::Posts, &post_id).await?.is_some()
    {
        return first_post(state, &post_id).await;
    }
    let author = existing_author(state, user_id).await?;
    let created = model::creation_date(now);
    let post = Post {
        tags,
        status,
        publish_at,
        ..model::new_post(post_id, &author, title, content, created)
    };
    let post =
        StoredPost { post, versions: ListVersions::new(), share_key: None, revision_count: 0 };
    let create = WriteOp::Create { document: to_document(&post)? };
    let post = post.post;
    match commit(
        &state.store,
        Container::Posts,
        &post.post_id,
        once.as_ref(),
        &post.id,
        vec![create],
    )
    .await
    {
        Ok(Committed::Written) => Ok(post),
        Ok(Committed::Repeated(post_id)) => first_post(state, &post_id).await,
        // The id is new (a random UUID, or the key's): taken, it is this request's own post,
        // written before the SDK sent the create again because its answer was lost.
        Err(AppError::Store(StoreError::Conflict)) => first_post(state, &post.id).await,
        Err(other) => Err(other),
    }
}

/// A repeated C2's first answer: the post as it is now. Deleted since, it is not found, as Q2
/// would answer: its tombstone (`deleted`, emptied) is no answer to show.
async fn first_post(state: &AppState, post_id: &str) -> AppResult<Post> {
    let post: Post = first_answer(&state.store, Container::Posts, post_id, post_id, "post").await?;
    if model::is_live(&post) { Ok(post) } else { Err(deleted_since("post", post_id)) }
}

/// C2 edit: read, change title and content, and replace on the etag that was read. The tags
/// change too where `tags` is given; `None` keeps them, so a client that knows nothing of tags
/// does not remove them. The status changes where `status` is given. A comment or like landing
/// in between moves a counter (and a list's version). The edit is then redone on the new
/// version instead of writing the old ones back. Someone else's draft is not found, as Q2
/// answers it.
pub(crate) async fn edit_post(
    state: &AppState,
    caller: &Caller,
    post_id: &str,
    title: String,
    content: String,
    tags: Option<Vec<String>>,
    asked: StatusAsked,
) -> AppResult<Post> {
    validate_post_text(&title, &content)?;
    let tags = tags.map(valid_tags).transpose()?;
    let status = asked.checked(OffsetDateTime::now_utc())?;
    // Removing every tag is another request than keeping them: it is marked apart.
    let mut parts = with_tags(&["editPost", post_id, &title, &content], tags.as_deref());
    if tags.as_ref().is_some_and(Vec::is_empty) {
        parts.push("no tags");
    }
    let parts = asked.parts(parts);
    let once = Once::claimed(&state.store, caller, &parts).await?;
    for attempt in 0..EDIT_ATTEMPTS {
        let current =
            state.store.read_versioned::<StoredPost>(Container::Posts, post_id, post_id).await?;
        let current = current
            .filter(|found| model::is_live(&found.item.post))
            .filter(|found| model::readable_by(&found.item.post, Some(&caller.id)))
            .ok_or_else(|| post_not_found(post_id))?;
        caller.must_be(&current.item.post.user_id, "edit this post")?;
        let post = &current.item.post;
        // Read with the post in this very version, so a comment or like that lands first makes
        // the replace below fail and this check run again: no draft ever has either.
        if status.as_ref().is_some_and(|(status, _)| !status.is_published())
            && post.status.is_published()
            && post.comment_count + post.like_count > 0
        {
            return Err(AppError::Conflict(Clash::Answered {
                post: post_id.to_owned(),
                comments: post.comment_count,
                likes: post.like_count,
            }));
        }
        let now = model::now();
        // The version replaced is kept as a revision, in the same transaction: both or neither.
        let (revision_writes, revision_count) =
            super::revisions::keep(&current.item.post, current.item.revision_count, &now)?;
        let mut edited = model::edited_post(
            current.item.post.clone(),
            title.clone(),
            content.clone(),
            now.clone(),
        );
        if let Some(tags) = &tags {
            edited.tags.clone_from(tags);
        }
        if let Some((status, publish_at)) = status.clone() {
            edited = model::with_status(edited, status, publish_at, &now);
        }
        // Its lists' versions kept: an edit changes neither list.
        let edited = StoredPost { post: edited, revision_count, ..current.item };
        let replace = WriteOp::Replace {
            id: post_id.to_owned(),
            document: to_document(&edited)?,
            if_match: Some(current.etag),
        };
        let writes = [vec![replace], revision_writes].concat();
        match commit(&state.store, Container::Posts, post_id, once.as_ref(), post_id, writes).await
        {
            Ok(Committed::Written) => {
                state.post_views.invalidate(post_id);
                return Ok(edited.post);
            }
            Ok(Committed::Repeated(_)) => return get_post(state, post_id).await,
            Err(AppError::Store(StoreError::PreconditionFailed)) => {
                tokio::time::sleep(retry_pause(attempt)).await
            }
            Err(AppError::Store(StoreError::NotFound)) => return Err(post_not_found(post_id)),
            Err(other) => return Err(other),
        }
    }
    Err(AppError::Busy(Contended::PostKeptChanging))
}

/// How many times `deletePost` is run for one request. Each run deletes what the database
/// accepts in one transaction (on the embedded store, 98 comments and likes). So this bounds a
/// post at about 6,000 of them per request; the change feed finishes a bigger one.
const MAX_DELETE_RUNS: usize = 64;

/// C7, by its author only. The stored procedure `deletePost` makes the post a tombstone: every
/// read then answers not found, and `PostsChangeFeed` removes its copies from `users` and
/// `feed`. Then it deletes the post's comments and likes in bounded pieces, run after run.
/// Cosmos DB's time to live removes the tombstone a day later. A repeated deletion of a post
/// whose deletion was cut short finishes it. For a post already wholly deleted, it answers not
/// found.
pub(crate) async fn delete_post(state: &AppState, caller: &Caller, post_id: &str) -> AppResult<()> {
    let once = Once::claimed(&state.store, caller, &["deletePost", post_id]).await?;
    let request = record_argument(once.as_ref(), post_id, post_id);
    let removal = remove_post(state, post_id, &caller.id, request).await.map_err(script_error)?;
    state.post_views.invalidate(post_id);
    match removal {
        PostRemoval::Removed => {
            // The post is gone for every reader; its pictures follow now, and where this fails,
            // when `PostsChangeFeed` delivers the tombstone.
            if let Err(error) =
                super::pictures::remove_post_pictures(state, &caller.id, post_id).await
            {
                tracing::warn!(post_id, error = %crate::logging::with_causes(&error), "a deleted post's pictures are left for the change feed");
            }
            Ok(())
        }
        PostRemoval::Repeated(record) => repeated_deletion(once.as_ref(), record),
        PostRemoval::NothingLeft | PostRemoval::NotFound => Err(post_not_found(post_id)),
        // Someone else's draft is not found, as Q2 answers it: read only on this refusal.
        PostRemoval::Forbidden => match get_post(state, post_id).await {
            Ok(post) if model::readable_by(&post, Some(&caller.id)) => {
                Err(AppError::Forbidden(NotAllowed::PostOfAnother { caller: caller.id.clone() }))
            }
            Ok(_) | Err(AppError::NotFound(_)) => Err(post_not_found(post_id)),
            Err(other) => Err(other),
        },
        PostRemoval::Unfinished => Err(AppError::Busy(Contended::PostRemovalUnfinished)),
    }
}

/// What [`remove_post`] did.
#[derive(Debug, PartialEq)]
pub(crate) enum PostRemoval {
    /// It deleted something (the post, or what a cut-short deletion left), and nothing is left.
    Removed,
    /// The post was a tombstone with nothing left to delete.
    NothingLeft,
    NotFound,
    Forbidden,
    /// Comments or likes are left after [`MAX_DELETE_RUNS`] runs.
    Unfinished,
    /// A request sent again with its idempotency key: the record its first time left.
    Repeated(Value),
}

/// Runs `deletePost` for `author` until the post's comments and likes are all deleted. Shared
/// by C7 and by `PostsChangeFeed`, which finishes a deletion whose request stopped early.
/// `request`: the record of the caller's idempotency key, committed by the first run.
pub(crate) async fn remove_post(
    state: &AppState,
    post_id: &str,
    author: &str,
    mut request: Option<Value>,
) -> Result<PostRemoval, ScriptError> {
    let mut removed_any = false;
    for _ in 0..MAX_DELETE_RUNS {
        let ttl = model::DELETED_POST_TTL_SECS;
        let body = state
            .scripts
            .execute(StoredProcedure::DeletePost, post_id, (post_id, author, ttl, request.take()))
            .await?;
        match DeleteOutcome::from_body(StoredProcedure::DeletePost, body)? {
            DeleteOutcome::Repeated(record) => return Ok(PostRemoval::Repeated(record)),
            DeleteOutcome::Deleted { marked, removed, done } => {
                removed_any |= marked || removed > 0;
                if done {
                    return Ok(if removed_any {
                        PostRemoval::Removed
                    } else {
                        PostRemoval::NothingLeft
                    });
                }
            }
            DeleteOutcome::PostNotFound => return Ok(PostRemoval::NotFound),
            DeleteOutcome::Forbidden { .. } => return Ok(PostRemoval::Forbidden),
            other => {
                return Err(ScriptError::Failed(ScriptFailure::Answered {
                    script: StoredProcedure::DeletePost.name(),
                    post_id: Some(post_id.to_owned()),
                    answer: format!("{other:?}"),
                }));
            }
        }
    }
    Ok(PostRemoval::Unfinished)
}

/// Q2: one point read returns the post with its author's username and both counters, all kept
/// on the post itself.
pub(crate) async fn get_post(state: &AppState, post_id: &str) -> AppResult<Post> {
    Ok(get_post_versioned(state, post_id).await?.item.post)
}

/// Q2 for `reader` (`None`: nobody signed in): someone else's draft is not found, never
/// forbidden, which would say that it exists.
pub(crate) async fn get_post_for(
    state: &AppState,
    post_id: &str,
    reader: Option<&str>,
) -> AppResult<Post> {
    let post = get_post(state, post_id).await?;
    if model::readable_by(&post, reader) { Ok(post) } else { Err(post_not_found(post_id)) }
}

/// Q2 with the post's etag and its lists' versions. The etag changes with every write to the
/// post: an edit, and every comment and like added or deleted (their stored procedures update
/// its counters in the same transaction). The lists' versions say which of those writes changed
/// a list.
pub(crate) async fn get_post_versioned(
    state: &AppState,
    post_id: &str,
) -> AppResult<Versioned<StoredPost>> {
    let post = state.store.read_versioned::<StoredPost>(Container::Posts, post_id, post_id).await?;
    post.filter(|found| model::is_live(&found.item.post)).ok_or_else(|| post_not_found(post_id))
}

/// The user who writes a post, comment or like; [`AppError::NoSuchWriter`] when there is no
/// such user.
pub(crate) async fn existing_author(state: &AppState, user_id: &str) -> AppResult<User> {
    state
        .store
        .read::<User>(Container::Users, user_id, user_id)
        .await?
        .ok_or_else(|| AppError::NoSuchWriter { user_id: user_id.to_owned() })
}

/// The lists kept in a post's partition: Q4 and Q5.
#[derive(Clone, Copy)]
pub(crate) enum PostList {
    Comments,
    Likes,
}

impl PostList {
    /// The list's name in its continuation tokens (a token works only on the list it came from).
    fn name(self) -> &'static str {
        match self {
            PostList::Comments => "comments",
            PostList::Likes => "likes",
        }
    }

    fn query(self) -> QuerySpec {
        match self {
            PostList::Comments => queries::post_comments(),
            PostList::Likes => queries::post_likes(),
        }
    }
}

/// A page of one of a post's lists, with the client's continuation token: one query on the
/// post's partition.
pub(crate) async fn page_of_post<T: serde::de::DeserializeOwned + Send + 'static>(
    state: &AppState,
    post_id: &str,
    list: PostList,
    params: &ListParams,
    known: OwnerKnown,
) -> AppResult<ListPage<T>> {
    let page = params.page_request(&state.tokens, list.name(), post_id, DEFAULT_PAGE_SIZE)?;
    let found = list_of_post::<T>(state, post_id, list.query(), page, known).await?;
    Ok(ListPage {
        items: found.items,
        continuation_token: wrap_token(&state.tokens, found.continuation, list.name(), post_id),
    })
}

/// A page of a post's comments or likes, or not found when the post does not exist
/// ([`OwnerKnown`]). A post with items costs nothing more; a later page (it has a continuation
/// token) was issued for an existing post. The post page reads the post itself (Q2) alongside,
/// so it passes `OwnerKnown::Yes` and never pays for that read.
async fn list_of_post<T: serde::de::DeserializeOwned + Send + 'static>(
    state: &AppState,
    post_id: &str,
    query: QuerySpec,
    page: PageRequest,
    known: OwnerKnown,
) -> AppResult<Page<T>> {
    let first_page = page.continuation.is_none();
    let found = state.store.query_page::<T>(Container::Posts, post_id, query, page).await?;
    if known == OwnerKnown::No
        && first_page
        && found.items.is_empty()
        && !state
            .store
            .read::<Post>(Container::Posts, post_id, post_id)
            .await?
            .is_some_and(|post| model::is_live(&post) && post.status.is_published())
    {
        // A draft's lists are empty (it takes no comments or likes), and not found, as the
        // draft is to anyone but its author.
        return Err(post_not_found(post_id));
    }
    Ok(found)
}

/// An item as the JSON document a batch writes.
pub(crate) fn to_document(item: &impl serde::Serialize) -> AppResult<Value> {
    serde_json::to_value(item)
        .map_err(|error| AppError::unexpected_from("an item does not serialize", error))
}

/// How many times sharing or unsharing a preview is tried when the post changed between its
/// read and its write (an edit landing in between).
const SHARE_ATTEMPTS: usize = 8;

/// Shares a preview of the caller's unpublished post: a new key, which revokes any before it,
/// kept with the post in one conditional replace. Answers the key (`share`), or takes it off
/// (`None`: the link stops working).
pub(crate) async fn set_preview_key(
    state: &AppState,
    caller: &Caller,
    post_id: &str,
    share: bool,
) -> AppResult<Option<String>> {
    for attempt in 0..SHARE_ATTEMPTS {
        let current = get_post_versioned(state, post_id).await?;
        let post = &current.item.post;
        if !model::readable_by(post, Some(&caller.id)) {
            return Err(post_not_found(post_id));
        }
        caller.must_be(&post.user_id, "share this post")?;
        if share && post.status.is_published() {
            return Err(AppError::Conflict(Clash::AlreadyPublished(post_id.to_owned())));
        }
        // 122 random bits (a version 4 UUID, from the system's generator): not guessed.
        let key = share.then(|| uuid::Uuid::new_v4().simple().to_string());
        let shared = StoredPost { share_key: key.clone(), ..current.item };
        let replace = WriteOp::Replace {
            id: post_id.to_owned(),
            document: to_document(&shared)?,
            if_match: Some(current.etag),
        };
        match state.store.execute_write(Container::Posts, post_id, replace).await {
            Ok(()) => return Ok(key),
            Err(StoreError::PreconditionFailed) => tokio::time::sleep(retry_pause(attempt)).await,
            Err(StoreError::NotFound) => return Err(post_not_found(post_id)),
            Err(other) => return Err(other.into()),
        }
    }
    Err(AppError::Busy(Contended::PostKeptChanging))
}

/// The caller's own post as stored (with its preview link's key, if one is shared), for what
/// its author alone does with it (`what`, as "edit this post"). Someone else's draft is not
/// found; someone else's post is theirs (403).
pub(crate) async fn own_post(
    state: &AppState,
    caller: &Caller,
    post_id: &str,
    what: &'static str,
) -> AppResult<StoredPost> {
    let current = get_post_versioned(state, post_id).await?.item;
    if !model::readable_by(&current.post, Some(&caller.id)) {
        return Err(post_not_found(post_id));
    }
    caller.must_be(&current.post.user_id, what)?;
    Ok(current)
}

/// The post a preview link shows, to whoever has it: one point read, and the key compared in a
/// time that does not depend on where a guess first differs. Not found for a wrong key, or
/// for a post that shares none.
pub(crate) async fn previewed_post(state: &AppState, post_id: &str, key: &str) -> AppResult<Post> {
    use subtle::ConstantTimeEq;
    let current = get_post_versioned(state, post_id).await?;
    let shared = current.item.share_key.as_deref().unwrap_or_default();
    if shared.is_empty() || !bool::from(shared.as_bytes().ct_eq(key.as_bytes())) {
        return Err(post_not_found(post_id));
    }
    Ok(current.item.post)
}
