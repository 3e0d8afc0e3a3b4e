//! Revisions: every edit of a post keeps the version it replaced.
//!
//! A revision is an item of the post's partition of `posts` (`type` `revision`, id
//! `revision-<number>`). It is written in the edit's own transactional batch: the edit and its
//! revision commit together or not at all, as the article's stored procedures keep a counter
//! with its comment. The post counts its revisions (`revisionCount`, never answered), so two edits at once
//! cannot number two revisions alike: the second fails on the post's etag and is redone. A post
//! keeps its newest [`MAX_REVISIONS`]; the batch that keeps one more deletes the oldest.
//!
//! Revisions are its author's alone: never copied (`PostsChangeFeed` takes posts only), never
//! answered to anyone else, deleted with the post (`deletePost` deletes its partition's items).

use serde::Serialize;
use utoipa::ToSchema;

use super::lists::{DEFAULT_PAGE_SIZE, ListPage, ListParams, wrap_token};
use super::posts::{StatusAsked, edit_post, own_post, to_document};
use super::{AppError, AppResult, AppState, Caller, Missing};
use crate::cosmos::{Container, WriteOp, queries};
use crate::model::{self, Post, Revision};

/// The most revisions a post keeps: the newest; an edit past them drops the oldest.
pub(crate) const MAX_REVISIONS: u64 = 20;

/// The writes that keep `replaced` (the post as an edit at `now` replaces it; it has kept
/// `count` revisions so far) as a revision, and drop the oldest past [`MAX_REVISIONS`]: for
/// the edit's batch. Answers them with the post's count after.
pub(crate) fn keep(replaced: &Post, count: u64, now: &str) -> AppResult<(Vec<WriteOp>, u64)> {
    let revision = model::revision_of(replaced, count, now);
    let mut writes = vec![WriteOp::Create { document: to_document(&revision)? }];
    if count >= MAX_REVISIONS {
        let oldest = model::revision_id(count - MAX_REVISIONS);
        writes.push(WriteOp::Delete { id: oldest, if_match: None });
    }
    Ok((writes, count + 1))
}

/// The post `post_id`, for its author: someone else's draft is not found, someone else's
/// published post has revisions they may not read (403).
async fn authors_post(state: &AppState, caller: &Caller, post_id: &str) -> AppResult<Post> {
    Ok(own_post(state, caller, post_id, "read this post's revisions").await?.post)
}

/// The caller's post's revisions, newest first: a point read of the post, then
/// [`revisions_page`].
pub(crate) async fn revisions_of(
    state: &AppState,
    caller: &Caller,
    post_id: &str,
    params: &ListParams,
) -> AppResult<ListPage<Revision>> {
    authors_post(state, caller, post_id).await?;
    revisions_page(state, post_id, params).await
}

/// A page of the revisions of `post_id`, newest first, for a caller known to be its author:
/// one query on its partition.
pub(crate) async fn revisions_page(
    state: &AppState,
    post_id: &str,
    params: &ListParams,
) -> AppResult<ListPage<Revision>> {
    const LIST: &str = "revisions";
    let page = params.page_request(&state.tokens, LIST, post_id, DEFAULT_PAGE_SIZE)?;
    let query = queries::post_revisions();
    let found = state.store.query_page::<Revision>(Container::Posts, post_id, query, page).await?;
    let continuation_token = wrap_token(&state.tokens, found.continuation, LIST, post_id);
    Ok(ListPage { items: found.items, continuation_token })
}

/// One revision, and what changed from it to the post as it is now.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RevisionRead {
    pub revision: Revision,
    /// The post's title now, beside the revision's.
    pub title_now: String,
    /// The content from the revision's to the post's now, line by line (Myers' diff).
    pub changes: Vec<LineChange>,
}

/// A line of the content: kept, or only in the revision, or only in the post now.
#[derive(Debug, PartialEq, Eq, Serialize, ToSchema)]
pub(crate) struct LineChange {
    /// `same`, `removed` (in the revision, not now) or `added` (now, not in the revision).
    pub change: &'static str,
    /// The line, without its line break.
    pub line: String,
}

/// The revision `number` of the caller's post, and what changed since: two point reads.
pub(crate) async fn revision(
    state: &AppState,
    caller: &Caller,
    post_id: &str,
    number: u64,
) -> AppResult<RevisionRead> {
    let post = authors_post(state, caller, post_id).await?;
    let revision = read_revision(state, post_id, number).await?;
    let changes = changes(&revision.content, &post.content);
    Ok(RevisionRead { revision, title_now: post.title, changes })
}

async fn read_revision(state: &AppState, post_id: &str, number: u64) -> AppResult<Revision> {
    let id = model::revision_id(number);
    state
        .store
        .read::<Revision>(Container::Posts, post_id, &id)
        .await?
        .ok_or_else(|| AppError::NotFound(Missing::Revision { post: post_id.to_owned(), number }))
}

/// What changed from `before` to `after`, line by line.
pub(crate) fn changes(before: &str, after: &str) -> Vec<LineChange> {
    use similar::{ChangeTag, TextDiff};
    // Each text's last line ended as the others are, so that a line added after it does not
    // show it as changed.
    let ended =
        |text: &str| if text.ends_with('\n') { text.to_owned() } else { format!("{text}\n") };
    let (before, after) = (ended(before), ended(after));
    TextDiff::from_lines(&before, &after)
        .iter_all_changes()
        .map(|change| LineChange {
            change: match change.tag() {
                ChangeTag::Equal => "same",
                ChangeTag::Delete => "removed",
                ChangeTag::Insert => "added",
            },
            line: change.value().trim_end_matches(['\n', '\r']).to_owned(),
        })
        .collect()
}

/// Restores revision `number` of the caller's post: an edit back to its title, content and
/// tags (the status kept), which keeps the version it replaces as a revision too. An edit that
/// lands meanwhile is kept as well: the restore is made on it, on its etag.
pub(crate) async fn restore(
    state: &AppState,
    caller: &Caller,
    post_id: &str,
    number: u64,
) -> AppResult<Post> {
    authors_post(state, caller, post_id).await?;
    let revision = read_revision(state, post_id, number).await?;
    let Revision { title, content, tags, .. } = revision;
    edit_post(state, caller, post_id, title, content, Some(tags), StatusAsked::default()).await
}

#[cfg(test)]
mod tests {
    use super::{LineChange, changes};

    #[test]
    fn the_changes_say_each_line_kept_removed_or_added() {
        let line = |change, line: &str| LineChange { change, line: line.to_owned() };
        assert_eq!(
            changes("one\ntwo\nthree", "one\n2\nthree\nfour"),
            vec![
                line("same", "one"),
                line("removed", "two"),
                line("added", "2"),
                line("same", "three"),
                line("added", "four"),
            ]
        );
    }
}
