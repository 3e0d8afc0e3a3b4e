//! `PostsChangeFeed`: a batch of changes from `posts`, handed to the copy rules
//! ([`crate::app::copies`]): each changed post is copied into `users` and `feed`, each deleted
//! post (its tombstone, C7) has its copies removed and its deletion finished.

use serde_json::Value;

use super::{BatchReport, FeedError};
use crate::app::AppState;
use crate::app::copies::{self, PostVersion};

/// Handles one batch of changes from `posts`.
pub async fn posts_changed(
    state: &AppState,
    documents: Vec<Value>,
) -> Result<BatchReport, FeedError> {
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
    Ok(report)
}
