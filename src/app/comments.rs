//! C3 (comment on a post), C6 (delete a comment) and Q4 (a post's comments).

use super::{Clash, NotAllowed};
use serde_json::Value;

use crate::cosmos::Container;
use crate::model::{self, Comment, MAX_COMMENT_CHARS, Post};
use crate::scripts::{CounterOutcome, DeleteOutcome, StoredProcedure};

use super::idempotency::{
    Once, record_argument, repeated_creation, repeated_deletion, script_error,
};
use super::lists::{ListPage, ListParams, OwnerKnown};
use super::posts::{PostList, existing_author, get_post, page_of_post};
use super::{
    AppError, AppResult, AppState, Caller, Missing, post_not_found, valid_user_id, validate_text,
};

/// C3: the stored procedure `createComment` creates the comment and increments the post's
/// `commentCount` in one transaction.
pub(crate) async fn create_comment(
    state: &AppState,
    caller: &Caller,
    post_id: &str,
    user_id: &str,
    content: String,
) -> AppResult<Comment> {
    valid_user_id(user_id)?;
    caller.must_be(user_id, "comment as this user")?;
    validate_text("content", &content, MAX_COMMENT_CHARS, true)?;
    let once =
        Once::claimed(&state.store, caller, &["createComment", post_id, user_id, &content]).await?;
    let author = existing_author(state, user_id).await?;
    let comment = model::new_comment(model::new_id(), post_id, &author, content, model::now());
    let request = record_argument(once.as_ref(), post_id, &comment.id);
    let body = state
        .scripts
        .execute(StoredProcedure::CreateComment, post_id, (post_id, &comment, request))
        .await
        .map_err(script_error)?;
    // (Its page shows the write to the next viewer on this instance: `post_view`.)
    state.post_views.invalidate(post_id);
    match CounterOutcome::<Comment>::from_body(StoredProcedure::CreateComment, body)? {
        CounterOutcome::Created(created) => Ok(created),
        CounterOutcome::PostNotFound => Err(post_not_found(post_id)),
        CounterOutcome::NotPublished => {
            Err(AppError::Conflict(Clash::NotPublished(post_id.to_owned())))
        }
        CounterOutcome::Repeated(record) => {
            repeated_creation(&state.store, once.as_ref(), post_id, record, "comment").await
        }
        CounterOutcome::AlreadyLiked => {
            Err(AppError::unexpected("createComment answered alreadyLiked"))
        }
    }
}

/// C6, by the comment's author or the post's author (who moderates the comments under their
/// post). The stored procedure `deleteComment` checks who may, deletes the comment and
/// decrements `commentCount`, in one transaction.
pub(crate) async fn delete_comment(
    state: &AppState,
    caller: &Caller,
    post_id: &str,
    comment_id: &str,
) -> AppResult<()> {
    let once = Once::claimed(&state.store, caller, &["deleteComment", post_id, comment_id]).await?;
    let request = record_argument(once.as_ref(), post_id, comment_id);
    let body = state
        .scripts
        .execute(
            StoredProcedure::DeleteComment,
            post_id,
            (post_id, comment_id, &caller.id, request),
        )
        .await
        .map_err(script_error)?;
    // (Its page shows the write to the next viewer on this instance: `post_view`.)
    state.post_views.invalidate(post_id);
    match DeleteOutcome::from_body(StoredProcedure::DeleteComment, body)? {
        DeleteOutcome::Deleted { .. } => Ok(()),
        DeleteOutcome::Repeated(record) => repeated_deletion(once.as_ref(), record),
        DeleteOutcome::PostNotFound => Err(post_not_found(post_id)),
        DeleteOutcome::CommentNotFound => Err(AppError::NotFound(Missing::Comment {
            post: post_id.to_owned(),
            comment: comment_id.to_owned(),
        })),
        DeleteOutcome::Forbidden { author } => {
            Err(AppError::Forbidden(NotAllowed::CommentOfAnother {
                author,
                caller: caller.id.clone(),
            }))
        }
        other => Err(AppError::unexpected(format!("deleteComment answered {other:?}"))),
    }
}

/// A comment and the post it is on, for whoever may delete it (C6: its author or the post's):
/// two point reads in the post's partition, at once.
pub(crate) async fn comment_to_delete(
    state: &AppState,
    caller: &Caller,
    post_id: &str,
    comment_id: &str,
) -> AppResult<(Post, Comment)> {
    // Read as any item: the post's partition holds the post and its likes under other ids.
    let (post, item) = tokio::join!(
        get_post(state, post_id),
        state.store.read::<Value>(Container::Posts, post_id, comment_id)
    );
    let post = post?;
    let comment = item?
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("comment"))
        .and_then(|item| serde_json::from_value::<Comment>(item).ok())
        .ok_or_else(|| {
            AppError::NotFound(Missing::Comment {
                post: post_id.to_owned(),
                comment: comment_id.to_owned(),
            })
        })?;
    if caller.id != comment.user_id && caller.id != post.user_id {
        return Err(AppError::Forbidden(NotAllowed::CommentOfAnother {
            author: None,
            caller: caller.id.clone(),
        }));
    }
    Ok((post, comment))
}

/// Where on the post's pages of comments (Q4 at its default page size, as the post page reads
/// them) `comment_id` is: the `continuationToken` of its page, `None` for the first. Comments
/// are listed oldest first, so a new one is on the last page: this walks the pages from the
/// first, one query each, until the comment's. The writer pays it once after commenting, so
/// the page they are sent back to shows their comment; readers never do. A comment not found
/// (deleted meanwhile) is the first page's.
pub(crate) async fn page_of_comment(
    state: &AppState,
    post_id: &str,
    comment_id: &str,
) -> AppResult<Option<String>> {
    let mut token = None;
    loop {
        let page =
            comments_of(state, post_id, &ListParams::continuing(token.clone()), OwnerKnown::Yes)
                .await?;
        if page.items.iter().any(|comment| comment.id == comment_id) {
            return Ok(token);
        }
        match page.continuation_token {
            Some(next) => token = Some(next),
            None => return Ok(None),
        }
    }
}

/// Q4, oldest first: one query on the post's partition.
pub(crate) async fn comments_of(
    state: &AppState,
    post_id: &str,
    params: &ListParams,
    known: OwnerKnown,
) -> AppResult<ListPage<Comment>> {
    page_of_post(state, post_id, PostList::Comments, params, known).await
}
