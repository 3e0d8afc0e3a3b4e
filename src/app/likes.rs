//! C4 (like a post), C5 (unlike it) and Q5 (a post's likes).

use super::Clash;
use crate::cosmos::Container;
use crate::model::{self, Like};
use crate::scripts::{CounterOutcome, DeleteOutcome, StoredProcedure};

use super::idempotency::{
    Once, record_argument, repeated_creation, repeated_deletion, script_error,
};
use super::lists::{ListPage, ListParams, OwnerKnown};
use super::posts::{PostList, existing_author, page_of_post};
use super::{AppError, AppResult, AppState, Caller, Missing, post_not_found, valid_user_id};

/// C4: the stored procedure `createLike` creates the like (its id is the liker's, so a post
/// is liked once per user) and increments `likeCount`, in one transaction.
pub(crate) async fn create_like(
    state: &AppState,
    caller: &Caller,
    post_id: &str,
    user_id: &str,
) -> AppResult<Like> {
    valid_user_id(user_id)?;
    caller.must_be(user_id, "like as this user")?;
    let author = existing_author(state, user_id).await?;
    let once = Once::claimed(&state.store, caller, &["createLike", post_id, user_id]).await?;
    let like = model::new_like(post_id, &author, model::now());
    let request = record_argument(once.as_ref(), post_id, &like.id);
    let body = state
        .scripts
        .execute(StoredProcedure::CreateLike, post_id, (post_id, &like, request))
        .await
        .map_err(script_error)?;
    // (Its page shows the write to the next viewer on this instance: `post_view`.)
    state.post_views.invalidate(post_id);
    match CounterOutcome::<Like>::from_body(StoredProcedure::CreateLike, body)? {
        CounterOutcome::Created(created) => Ok(created),
        CounterOutcome::Repeated(record) => {
            repeated_creation(&state.store, once.as_ref(), post_id, record, "like").await
        }
        CounterOutcome::PostNotFound => Err(post_not_found(post_id)),
        CounterOutcome::NotPublished => {
            Err(AppError::Conflict(Clash::NotPublished(post_id.to_owned())))
        }
        CounterOutcome::AlreadyLiked => Err(AppError::Conflict(Clash::AlreadyLiked {
            user: author.user_id.clone(),
            post: post_id.to_owned(),
        })),
    }
}

/// C5, by the liker only. The stored procedure `deleteLike` deletes the like and decrements
/// `likeCount` in one transaction; a second unlike is not found and changes nothing.
pub(crate) async fn delete_like(
    state: &AppState,
    caller: &Caller,
    post_id: &str,
    user_id: &str,
) -> AppResult<()> {
    caller.must_be(user_id, "take back this like")?;
    let once = Once::claimed(&state.store, caller, &["deleteLike", post_id, user_id]).await?;
    let request = record_argument(once.as_ref(), post_id, &model::like_id(user_id));
    let body = state
        .scripts
        .execute(StoredProcedure::DeleteLike, post_id, (post_id, user_id, request))
        .await
        .map_err(script_error)?;
    // (Its page shows the write to the next viewer on this instance: `post_view`.)
    state.post_views.invalidate(post_id);
    match DeleteOutcome::from_body(StoredProcedure::DeleteLike, body)? {
        DeleteOutcome::Deleted { .. } => Ok(()),
        DeleteOutcome::Repeated(record) => repeated_deletion(once.as_ref(), record),
        DeleteOutcome::PostNotFound => Err(post_not_found(post_id)),
        DeleteOutcome::LikeNotFound => Err(AppError::NotFound(Missing::Like {
            user: user_id.to_owned(),
            post: post_id.to_owned(),
        })),
        other => Err(AppError::unexpected(format!("deleteLike answered {other:?}"))),
    }
}

/// Q5, oldest first: one query on the post's partition.
pub(crate) async fn likes_of(
    state: &AppState,
    post_id: &str,
    params: &ListParams,
    known: OwnerKnown,
) -> AppResult<ListPage<Like>> {
    page_of_post(state, post_id, PostList::Likes, params, known).await
}

/// Whether `me` likes `post`: seen on the first page of its likes when it is there. Past it (a
/// post with more likes than one page), it takes one point read of the like in the post's
/// partition. The like's id is derived from the user (`like-<userId>`).
pub(crate) async fn viewer_likes(
    state: &AppState,
    post: &model::Post,
    first_page: &[Like],
    me: &str,
) -> AppResult<bool> {
    if first_page.iter().any(|like| like.user_id == me) {
        return Ok(true);
    }
    if post.like_count as usize <= first_page.len() {
        return Ok(false);
    }
    let like = state.store.read::<Like>(Container::Posts, &post.id, &model::like_id(me)).await?;
    Ok(like.is_some())
}
