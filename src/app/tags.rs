//! Tags: the copy of a post under each of its tags, and Q7, the newest posts with a tag, one
//! query on the tag's partition. The copies follow the article's method for a new access
//! pattern: a container partitioned by what the query filters on, kept by the change feed.
//!
//! The copies under tags mirror the post's copy in its author's partition of `users`, never the
//! delivered version directly. That copy is already kept at the newest version delivered: a
//! late or repeated delivery never takes it back ([`super::copies`]). So the tag copies follow
//! it and inherit that order. Which tags to remove copies from is recorded on that copy too, as
//! `taggedBefore`: the tags of the copies it replaced (`model::tags::tagged_before`). It is
//! written in the same write that replaces the copy, and cleared only once those copies are
//! deleted. So a tag removed is found even when the change feed never delivered the version
//! that had it: in its latest-version mode, versions between two deliveries are never seen. And
//! a crash between two steps leaves the record to be finished by the next delivery. A query
//! across the partitions of `tags` for the post would find them too, but on every change of
//! every post (a comment moves its counter). That is a fan-out on the busiest write path. The
//! record costs nothing for a post without tags (its copy in `users`, just written or read,
//! says so), and for a tagged one a point read and a write per tag.

use super::BadInput;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use futures::TryStreamExt;

use crate::cosmos::{Container, StoreError, Versioned, WriteOp};
use crate::model::tags::{TagCopy, normalized, tag_in_address};
use crate::model::{self, Post, PostCopy};

use super::kept::MarkedPage;
use super::lists::{ListPage, ListParams};
use super::posts::to_document;
use super::{AppError, AppResult, AppState};

/// How often a copy is read and written again when another writer changed it in between.
const ATTEMPTS: usize = 10;

/// How many posts' tag copies are brought up to date at once.
const CONCURRENT_POSTS: usize = 8;

/// Brings the copies under tags of each post up to its copy in `users` (as
/// [`super::copies::copy_posts`] just wrote or found it): a copy under each of its tags, none
/// under a tag it no longer has. A post that has no tags and had none costs nothing more.
/// Idempotent: a delivery repeated or late finds the copies as they should be.
///
/// Then each tag whose copies were brought up to date is marked once for the whole batch, and
/// named in `changed` for the change log. So is each tag whose copies may have been, by a
/// delivery that failed before its mark: any tag the post has or had.
pub(crate) async fn copy_tags(
    state: &AppState,
    user_copies: impl Iterator<Item = PostCopy>,
    changed: &mut BTreeSet<String>,
) -> AppResult<()> {
    let touched = Mutex::new(BTreeSet::new());
    futures::stream::iter(user_copies.map(Ok))
        .try_for_each_concurrent(CONCURRENT_POSTS, |copy| sync_tags(state, copy, &touched))
        .await?;
    for tag in touched.into_inner().expect("never poisoned") {
        changed.insert(mark_tag_changed(state, &tag).await?);
    }
    Ok(())
}

/// One post's copies under tags, from its copy in `users`; the tags it touched are added to
/// `touched`.
async fn sync_tags(
    state: &AppState,
    mut copy: PostCopy,
    touched: &Mutex<BTreeSet<String>>,
) -> AppResult<()> {
    let (user_id, post_id) = (copy.post.user_id.clone(), copy.post.id.clone());
    for _ in 0..ATTEMPTS {
        let tags = normalized(model::shown_tags(&copy.post));
        touched
            .lock()
            .expect("never poisoned")
            .extend(tags.iter().chain(&copy.tagged_before).cloned());
        for tag in tags {
            refresh_tag_copy(state, &tag, &copy).await?;
        }
        if copy.tagged_before.is_empty() {
            return Ok(());
        }
        for tag in &copy.tagged_before {
            delete_tag_copy(state, tag, &post_id).await?;
        }
        // Those copies are gone. The record is cleared, on the copy as it is stored, if it is
        // still the one these tags were read from. If that copy changed since (a newer version
        // copied, its record grown), the copies are brought up to it instead.
        let Some(found) =
            state.store.read_versioned::<PostCopy>(Container::Users, &user_id, &post_id).await?
        else {
            return Ok(());
        };
        if found.item != copy {
            copy = found.item;
            continue;
        }
        let cleared = PostCopy { tagged_before: Vec::new(), ..found.item };
        let replace = WriteOp::Replace {
            id: post_id.clone(),
            document: to_document(&cleared)?,
            if_match: Some(found.etag),
        };
        match state.store.execute_write(Container::Users, &user_id, replace).await {
            Ok(()) | Err(StoreError::NotFound) => return Ok(()),
            Err(StoreError::PreconditionFailed) => {
                match state.store.read::<PostCopy>(Container::Users, &user_id, &post_id).await? {
                    Some(now) => copy = now,
                    None => return Ok(()),
                }
            }
            Err(other) => return Err(other.into()),
        }
    }
    Err(StoreError::CopyKeptChanging { post_id: post_id.to_owned(), container: Container::Tags }
        .into())
}

/// Makes the copy of `copy` under `tag` the same version as `copy`. A copy under a tag is only
/// ever written from the post's copy in `users`, which never goes back to an older version, so
/// any other version there is older.
async fn refresh_tag_copy(state: &AppState, tag: &str, copy: &PostCopy) -> AppResult<()> {
    for _ in 0..ATTEMPTS {
        let existing =
            state.store.read_versioned::<TagCopy>(Container::Tags, tag, &copy.post.id).await?;
        // (The same version made by rules since changed is made again, as in `users`.)
        if existing
            .as_ref()
            .is_some_and(|found| found.item.source == copy.source && found.item.post == copy.post)
        {
            return Ok(());
        }
        // No copy yet: made only while the post exists with this tag, as the copies in `users`
        // and `feed` are (a late delivery must not bring back what a deletion removed).
        if existing.is_none() && !has_tag_now(state, &copy.post.id, tag).await? {
            return Ok(());
        }
        let tag_copy =
            TagCopy { post: copy.post.clone(), source: copy.source.clone(), tag: tag.to_owned() };
        let document = to_document(&tag_copy)?;
        let write = match existing {
            Some(Versioned { etag, .. }) => {
                WriteOp::Replace { id: copy.post.id.clone(), document, if_match: Some(etag) }
            }
            None => WriteOp::Create { document },
        };
        match state.store.execute_write(Container::Tags, tag, write).await {
            Ok(()) => return Ok(()),
            Err(StoreError::PreconditionFailed | StoreError::Conflict | StoreError::NotFound) => {
                continue;
            }
            Err(other) => return Err(other.into()),
        }
    }
    Err(StoreError::CopyKeptChanging { post_id: copy.post.id.clone(), container: Container::Tags }
        .into())
}

/// Whether the post exists now and shows `tag` (normal form): published, with it.
async fn has_tag_now(state: &AppState, post_id: &str, tag: &str) -> AppResult<bool> {
    let current = state.store.read::<Post>(Container::Posts, post_id, post_id).await?;
    Ok(current.is_some_and(|post| {
        model::is_live(&post) && normalized(model::shown_tags(&post)).iter().any(|own| own == tag)
    }))
}

async fn delete_tag_copy(state: &AppState, tag: &str, post_id: &str) -> AppResult<()> {
    let delete = WriteOp::Delete { id: post_id.to_owned(), if_match: None };
    match state.store.execute_write(Container::Tags, tag, delete).await {
        Ok(()) | Err(StoreError::NotFound) => Ok(()),
        Err(other) => Err(other.into()),
    }
}

/// A deleted post's copies under tags: every tag its copy in `users` has or recorded (the
/// tombstone keeps no tags). Run before that copy is deleted, so that a crash in between
/// leaves the record for the tombstone's next delivery. The tags are named in `changed`.
pub(crate) async fn remove_tag_copies(
    state: &AppState,
    post: &Post,
    changed: &mut BTreeSet<String>,
) -> AppResult<()> {
    let Some(copy) =
        state.store.read::<PostCopy>(Container::Users, &post.user_id, &post.id).await?
    else {
        return Ok(());
    };
    let tags: BTreeSet<String> =
        normalized(&copy.post.tags).into_iter().chain(copy.tagged_before).collect();
    for tag in &tags {
        delete_tag_copy(state, tag, &post.id).await?;
    }
    for tag in tags {
        changed.insert(mark_tag_changed(state, &tag).await?);
    }
    Ok(())
}

/// Q7: the newest posts with `tag` (any form of it: it is compared in normal form), in short
/// form, newest first: one query on the tag's partition of `tags`. A tag nobody used is an
/// empty page: a tag is not a resource that can be missing.
///
/// Pages are kept by the instance and checked as the front page's are ([`super::post_lists`]): by
/// the change log, or the tag's mark; a tag page costs nothing while nothing with the tag changes.
pub(crate) async fn posts_with_tag(
    state: &AppState,
    tag: &str,
    params: &ListParams,
) -> AppResult<Arc<MarkedPage<ListPage<Post>>>> {
    let tag = tag_in_address(tag).map_err(|why| AppError::Invalid(BadInput::Tag(why)))?;
    state.tag_posts.page(state, &tag, params).await
}

/// Writes the mark of `tag` (normal form) again, forgetting this instance's pages of it; answers
/// what the change log calls its pages.
async fn mark_tag_changed(state: &AppState, tag: &str) -> AppResult<String> {
    state.tag_posts.mark_changed(state, tag).await
}
