//! `UsersChangeFeed`: a batch of changes from `users`, handed to the copy rules
//! ([`crate::app::copies::user_changed`]): the user's current username is carried onto their
//! items in `posts`, and the reservations of usernames are kept tidy.

use serde::Deserialize;
use serde_json::Value;

use super::{BatchReport, FeedError};
use crate::app::{AppState, copies};
use crate::model::{User, validate_id};

/// Handles one batch of changes from `users`.
pub(crate) async fn users_changed(state: &AppState, documents: Vec<Value>) -> Result<BatchReport, FeedError> {
    let mut report = BatchReport::default();
    for document in documents {
        // (The users' post copies share the container.)
        let Some(document) = report.admit(document, "user") else { continue };
        match parse(&document) {
            Ok(user) => {
                copies::user_changed(state, user).await?;
                report.applied += 1;
            }
            Err(why) => report.refuse(format!("user {}: {why}", document.get("id").unwrap_or(&Value::Null)), document),
        }
    }
    Ok(report)
}

/// Reads a changed user, refusing what a well-behaved writer of `users` never writes.
fn parse(document: &Value) -> Result<User, String> {
    let user = User::deserialize(document).map_err(|error| error.to_string())?;
    validate_id(&user.user_id)?;
    if user.id != user.user_id {
        return Err("userId differs from id".into());
    }
    Ok(user)
}
