//! `UsersChangeFeed`: carry a user's current username onto their items in `posts`.

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{BatchReport, FeedError};
use crate::cosmos::{Container, QuerySpec, StoreError};
use crate::http::{AppState, validate_id};
use crate::model::{self, User};
use crate::scripts::{ScriptError, StoredProcedure};

/// How often `updateUsernames` is run in one post partition before giving up on the batch (each
/// run rewrites up to a transactional batch's worth of items: 100).
const MAX_RUNS_PER_POST: usize = 1_000;

/// Handles one batch of changes from `users`.
pub async fn users_changed(state: &AppState, documents: Vec<Value>) -> Result<BatchReport, FeedError> {
    let mut report = BatchReport::default();
    for document in documents {
        // (The users' post copies share the container.)
        let Some(document) = report.admit(document, "user") else { continue };
        let user = User::deserialize(&document)
            .map_err(|error| error.to_string())
            .and_then(|user| validate_id(&user.user_id).map(|()| user))
            .and_then(|user| if user.id == user.user_id { Ok(user) } else { Err("userId differs from id".into()) });
        match user {
            Ok(user) => {
                // A new user has written nothing under another name: no query across
                // partitions for them. (Once renamed, every later version says so too.)
                if model::may_show_other_names(&user) {
                    propagate_username(state, &user.user_id).await?;
                }
                report.applied += 1;
            }
            Err(why) => report.refuse(format!("user {}: {why}", document.get("id").unwrap_or(&Value::Null)), document),
        }
    }
    Ok(report)
}

/// Writes the user's username, as it is NOW, onto every item of theirs in `posts`. Reading the
/// current name (not the delivered one) makes an old or repeated delivery harmless.
async fn propagate_username(state: &AppState, user_id: &str) -> Result<(), FeedError> {
    let Some(user) = state.store.read::<User>(Container::Users, user_id, user_id).await? else {
        return Ok(());
    };

    // Which posts hold items of this user that show another name: the one query across
    // partitions in the whole application; a rename is rare, and the article's design accepts
    // this fan-out on the write path so that every read stays in one partition.
    // (Deduplicated here: a cross-partition DISTINCT needs the SDK to buffer a bounded window.)
    let query = QuerySpec {
        sql: Cow::Borrowed(
            "SELECT VALUE c.postId FROM c WHERE c.userId = @userId AND c.userUsername != @username AND NOT IS_DEFINED(c.deleted)",
        ),
        parameters: vec![(Cow::Borrowed("@userId"), json!(user.user_id)), (Cow::Borrowed("@username"), json!(user.username))],
    };
    let post_ids: BTreeSet<String> = state
        .store
        .query_all_partitions(Container::Posts, query)
        .await?
        .into_iter()
        .filter_map(|id| id.as_str().map(str::to_owned))
        .collect();
    for post_id in &post_ids {
        update_post_partition(state, post_id, &user).await?;
    }
    Ok(())
}

/// Runs `updateUsernames` in one post's partition until it reports that nothing is left.
async fn update_post_partition(state: &AppState, post_id: &str, user: &User) -> Result<(), FeedError> {
    for _ in 0..MAX_RUNS_PER_POST {
        let body = state.scripts.execute(StoredProcedure::UpdateUsernames, post_id, (&user.user_id, &user.username)).await?;
        match body.get("done").and_then(Value::as_bool) {
            Some(true) => return Ok(()),
            Some(false) => continue,
            None => return Err(ScriptError::Failed(format!("updateUsernames answered {body}")).into()),
        }
    }
    Err(StoreError::Other(format!("updateUsernames did not finish in post {post_id}")).into())
}
