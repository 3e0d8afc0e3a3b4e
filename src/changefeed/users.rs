//! `UsersChangeFeed`: carry a user's current username onto their items in `posts`, and keep
//! the reservations of usernames tidy: the current name reserved, a name given up released.

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{BatchReport, FeedError};
use crate::app::{AppState, usernames};
use crate::cosmos::{Container, QuerySpec, StoreError};
use crate::model::usernames::{Reservation, is_left_behind, new_reservation, normalize_username, reservation_id};
use crate::model::validate_id;
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
            Ok(delivered) => {
                // A user never renamed has had one name: the delivered version shows the current
                // one, with no read. (Once renamed, every later version says so too.)
                let current = if model::may_show_other_names(&delivered) {
                    state.store.read::<User>(Container::Users, &delivered.user_id, &delivered.user_id).await?
                } else {
                    Some(delivered)
                };
                if let Some(user) = current {
                    tidy_reservations(state, &user).await?;
                    // A new user has written nothing under another name: no query across
                    // partitions for them.
                    if model::may_show_other_names(&user) {
                        propagate_username(state, &user).await?;
                    }
                }
                report.applied += 1;
            }
            Err(why) => report.refuse(format!("user {}: {why}", document.get("id").unwrap_or(&Value::Null)), document),
        }
    }
    Ok(report)
}

/// Finishes what a C1 write may have left undone (see `src/app/usernames.rs`): reserves the
/// user's current name if nobody has (a crash, or a user from before reservations: `handler
/// rebuild-copies` replays every user through here), and deletes the reservation of the name
/// the current one replaced if the user still holds it. One point read when all is in order
/// (two for a renamed user: the name it gave up is looked at again).
async fn tidy_reservations(state: &AppState, user: &User) -> Result<(), FeedError> {
    let store = &state.store;
    let name = normalize_username(&user.username);
    let id = reservation_id(&name);
    match store.read::<Reservation>(Container::Users, &id, &id).await? {
        None => {
            // Only the name the user shows now: a late delivery of an older version must not
            // reserve a name given up since. (A read only on this rare path.)
            let current = store.read::<User>(Container::Users, &user.user_id, &user.user_id).await?;
            if current.is_none_or(|current| normalize_username(&current.username) != name) {
                return Ok(());
            }
            let reservation = new_reservation(name, &user.user_id, model::now(), None);
            match store.create(Container::Users, &id, &reservation).await {
                // Claimed meanwhile: by the user (a rename), or by another, who was first.
                Ok(()) | Err(StoreError::Conflict) => {}
                Err(other) => return Err(other.into()),
            }
        }
        Some(reservation) if reservation.owner_id == user.user_id => {
            if let Some(released) = reservation.releases {
                release_left_behind(state, user, &released).await?;
            }
        }
        // Two users with one name, from before names were unique: the other holds it; this
        // user keeps showing it until they rename.
        Some(reservation) => {
            tracing::warn!(user = user.user_id, holder = reservation.owner_id, "a user shows a username another user holds")
        }
    }
    Ok(())
}

/// Deletes the reservation of the normalized name `released` if `user` left it behind, only if
/// unchanged since read (a claim of it made meanwhile changes its etag).
async fn release_left_behind(state: &AppState, user: &User, released: &str) -> Result<(), FeedError> {
    let Some(found) = usernames::reservation_of(&state.store, released).await? else { return Ok(()) };
    if is_left_behind(&found.item, &user.user_id, &user.username, time::OffsetDateTime::now_utc()) {
        usernames::release(&state.store, &user.user_id, found).await?;
    }
    Ok(())
}

/// Writes the user's username, as it is NOW (`user` was just read), onto every item of theirs
/// in `posts`. Using the current name (not the delivered one) makes an old or repeated delivery
/// harmless.
async fn propagate_username(state: &AppState, user: &User) -> Result<(), FeedError> {
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
        update_post_partition(state, post_id, user).await?;
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
    Err(StoreError::Unfinished(format!("updateUsernames did not finish in post {post_id}")).into())
}
