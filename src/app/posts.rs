//! C2 (create, edit post), C7 (delete post) and Q2 (get post), and what the lists of a post
//! share.

use crate::cosmos::{Container, Page, PageRequest, QuerySpec, StoreError, queries, retry_pause};
use crate::model::{self, MAX_CONTENT_CHARS, MAX_TITLE_CHARS, Post, User};
use crate::scripts::{DeleteOutcome, ScriptError, StoredProcedure};

use super::lists::{DEFAULT_PAGE_SIZE, ListPage, ListParams, OwnerKnown, wrap_token};
use super::{AppError, AppResult, AppState, Caller, valid_user_id, validate_text};

/// How often an edit is retried when a comment or like changed the post between its read and
/// its write.
const EDIT_ATTEMPTS: usize = 16;

fn validate_post_text(title: &str, content: &str) -> AppResult<()> {
    validate_text("title", title, MAX_TITLE_CHARS, false)?;
    validate_text("content", content, MAX_CONTENT_CHARS, true)
}

/// C2 create: validates, reads the author once, to copy their username into the post (the
/// article's V2 step: Q2 then needs no second read), creates the post.
pub(crate) async fn create_post(
    state: &AppState,
    caller: &Caller,
    user_id: &str,
    title: String,
    content: String,
) -> AppResult<Post> {
    valid_user_id(user_id)?;
    caller.must_be(user_id, "post as this user")?;
    validate_post_text(&title, &content)?;
    let author = existing_author(state, user_id).await?;
    let post = model::new_post(model::new_id(), &author, title, content, model::now());
    state.store.create(Container::Posts, &post.post_id, &post).await?;
    Ok(post)
}

/// C2 edit: read, change title and content, replace on the etag that was read: a comment or
/// like landing in between moves a counter, and the edit is redone on the new version instead
/// of writing the old count back.
pub(crate) async fn edit_post(
    state: &AppState,
    caller: &Caller,
    post_id: &str,
    title: String,
    content: String,
) -> AppResult<Post> {
    validate_post_text(&title, &content)?;
    for attempt in 0..EDIT_ATTEMPTS {
        let current = state.store.read_versioned::<Post>(Container::Posts, post_id, post_id).await?;
        let current = current.filter(|found| model::is_live(&found.item)).ok_or_else(|| post_not_found(post_id))?;
        caller.must_be(&current.item.user_id, "edit this post")?;
        let edited = model::edited_post(current.item, title.clone(), content.clone(), model::now());
        match state.store.replace(Container::Posts, post_id, post_id, &edited, Some(&current.etag)).await {
            Ok(()) => {
                state.post_views.invalidate(post_id);
                return Ok(edited);
            }
            Err(StoreError::PreconditionFailed) => tokio::time::sleep(retry_pause(attempt)).await,
            Err(StoreError::NotFound) => return Err(post_not_found(post_id)),
            Err(other) => return Err(other.into()),
        }
    }
    Err(AppError::Busy("The post kept changing while it was being edited; retry in a moment.".to_owned()))
}

/// How many times `deletePost` is run for one request: each run deletes what the database
/// accepts in one transaction (on the embedded store, 98 comments and likes), so this bounds a
/// post at about 6,000 of them per request; a bigger one is finished by the change feed.
const MAX_DELETE_RUNS: usize = 64;

/// C7, by its author only. The stored procedure `deletePost` makes the post a tombstone (every
/// read then answers not found, and `PostsChangeFeed` removes its copies from `users` and
/// `feed`), then deletes its comments and likes in bounded pieces, run after run; Cosmos DB's
/// time to live removes the tombstone a day later. A repeated deletion of a post whose deletion
/// was cut short finishes it; of a post already wholly deleted, not found.
pub(crate) async fn delete_post(state: &AppState, caller: &Caller, post_id: &str) -> AppResult<()> {
    let removal = remove_post(state, post_id, &caller.0).await?;
    state.post_views.invalidate(post_id);
    match removal {
        PostRemoval::Removed => Ok(()),
        PostRemoval::NothingLeft | PostRemoval::NotFound => Err(post_not_found(post_id)),
        PostRemoval::Forbidden => {
            Err(AppError::Forbidden(format!("Only its author may delete this post; you are signed in as {:?}.", caller.0)))
        }
        PostRemoval::Unfinished => Err(AppError::Busy(
            "The post is deleted, but not all of its comments and likes yet; the change feed finishes it, or repeat the DELETE."
                .to_owned(),
        )),
    }
}

/// What [`remove_post`] did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PostRemoval {
    /// It deleted something (the post, or what a cut-short deletion left), and nothing is left.
    Removed,
    /// The post was a tombstone with nothing left to delete.
    NothingLeft,
    NotFound,
    Forbidden,
    /// Comments or likes are left after [`MAX_DELETE_RUNS`] runs.
    Unfinished,
}

/// Runs `deletePost` for `author` until the post's comments and likes are all deleted. Shared
/// by C7 and by `PostsChangeFeed`, which finishes a deletion whose request stopped early.
pub(crate) async fn remove_post(state: &AppState, post_id: &str, author: &str) -> Result<PostRemoval, ScriptError> {
    let mut removed_any = false;
    for _ in 0..MAX_DELETE_RUNS {
        let body =
            state.scripts.execute(StoredProcedure::DeletePost, post_id, (post_id, author, model::DELETED_POST_TTL_SECS)).await?;
        match DeleteOutcome::from_body(body)? {
            DeleteOutcome::Deleted { marked, removed, done } => {
                removed_any |= marked || removed > 0;
                if done {
                    return Ok(if removed_any { PostRemoval::Removed } else { PostRemoval::NothingLeft });
                }
            }
            DeleteOutcome::PostNotFound => return Ok(PostRemoval::NotFound),
            DeleteOutcome::Forbidden { .. } => return Ok(PostRemoval::Forbidden),
            other => return Err(ScriptError::Failed(format!("deletePost answered {other:?}"))),
        }
    }
    Ok(PostRemoval::Unfinished)
}

/// Q2: one point read returns the post with its author's username and both counters, all kept
/// on the post itself.
pub(crate) async fn get_post(state: &AppState, post_id: &str) -> AppResult<Post> {
    let post = state.store.read::<Post>(Container::Posts, post_id, post_id).await?;
    post.filter(model::is_live).ok_or_else(|| post_not_found(post_id))
}

/// The user who writes a post, comment or like; [`AppError::NoSuchWriter`] when there is no
/// such user.
pub(crate) async fn existing_author(state: &AppState, user_id: &str) -> AppResult<User> {
    state
        .store
        .read::<User>(Container::Users, user_id, user_id)
        .await?
        .ok_or_else(|| AppError::NoSuchWriter(format!("`userId` {user_id:?} names no existing user; create the user first.")))
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
    Ok(ListPage { items: found.items, continuation_token: wrap_token(&state.tokens, found.continuation, list.name(), post_id) })
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
        && !state.store.read::<Post>(Container::Posts, post_id, post_id).await?.is_some_and(|post| model::is_live(&post))
    {
        return Err(post_not_found(post_id));
    }
    Ok(found)
}

pub(crate) fn post_not_found(post_id: &str) -> AppError {
    AppError::NotFound(format!("There is no post with id {post_id:?}."))
}
