//! `PostsChangeFeed`: a batch of changes from `posts`, handed to the copy rules
//! ([`crate::app::copies`]): each changed post is copied into `users` and `feed`, each deleted
//! post (its tombstone, C7) has its copies removed and its deletion finished.

use serde_json::Value;

use super::{BatchReport, FeedError};
use crate::app::AppState;
use crate::app::copies::{self, PostVersion};
use crate::app::search;

/// Handles one batch of changes from `posts`: the copies, then the search index.
pub async fn posts_changed(
    state: &AppState,
    documents: Vec<Value>,
) -> Result<BatchReport, FeedError> {
    let (report, changed_posts) = copy_changed_posts(state, documents).await?;
    // The search index last: the copies readers see first never wait for it.
    search::index_posts(state, &changed_posts).await?;
    Ok(report)
}

/// The copies of one batch of changes from `posts`, made; the changed posts (not deleted)
/// answered for the search index, which [`posts_changed`] brings up to them at once and a
/// rebuild for many batches together.
pub(super) async fn copy_changed_posts(
    state: &AppState,
    documents: Vec<Value>,
) -> Result<(BatchReport, Vec<PostVersion>), FeedError> {
    let mut report = BatchReport::default();
    let mut changed_posts = Vec::new();
    let mut deleted_posts = Vec::new();
    for document in documents {
        // (Comments and likes share the container.)
        let Some(document) = report.admit(document, "post") else { continue };
        match PostVersion::from_document(&document) {
            Ok(version) if version.post.deleted => deleted_posts.push(version),
            Ok(version) => changed_posts.push(version),
            Err(why) => report.refuse(crate::logging::with_causes(&why), document),
        }
    }
    for deleted in &deleted_posts {
        copies::remove_post_copies(state, &deleted.post).await?;
    }
    copies::copy_posts(state, &changed_posts).await?;
    report.applied += deleted_posts.len() + changed_posts.len();
    Ok((report, changed_posts))
}
