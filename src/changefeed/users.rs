//! `UsersChangeFeed`: a batch of changes from `users`, handed to the copy rules
//! ([`crate::app::copies::user_changed`]): the user's current username is carried onto their
//! items in `posts`, and the reservations of usernames are kept tidy.

use serde::Deserialize;
use serde_json::Value;

use super::{BatchReport, FeedError};
use crate::app::{AppState, copies};
use crate::model::{IdError, User, validate_id};

/// Handles one batch of changes from `users`.
pub(crate) async fn users_changed(
    state: &AppState,
    documents: Vec<Value>,
) -> Result<BatchReport, FeedError> {
    let mut report = BatchReport::default();
    for document in documents {
        // (The users' post copies share the container.)
        let Some(document) = report.admit(document, "user") else { continue };
        match parse(&document) {
            Ok(user) => {
                copies::user_changed(state, user).await?;
                report.applied += 1;
            }
            Err(why) => {
                let id = document.get("id").unwrap_or(&Value::Null);
                report
                    .refuse(format!("user {id}: {}", crate::logging::with_causes(&why)), document);
            }
        }
    }
    Ok(report)
}

/// Reads a changed user, refusing what a well-behaved writer of `users` never writes.
fn parse(document: &Value) -> Result<User, UserRefused> {
    let user = User::deserialize(document).map_err(UserRefused::Unreadable)?;
    validate_id(&user.user_id)?;
    if user.id != user.user_id {
        return Err(UserRefused::IdsDiffer { id: user.id, user_id: user.user_id });
    }
    Ok(user)
}

/// Why a change to `users` is not copied.
#[derive(Debug, thiserror::Error)]
enum UserRefused {
    /// The item does not have a user's fields.
    #[error("it is not a user")]
    Unreadable(#[source] serde_json::Error),
    /// Its `userId` cannot be an id.
    #[error(transparent)]
    Id(#[from] IdError),
    /// Its `userId` is not its `id`.
    #[error("userId {user_id:?} differs from id {id:?}")]
    IdsDiffer { id: String, user_id: String },
}

#[cfg(test)]
mod tests {
    use super::{UserRefused, parse};
    use crate::model::IdError;
    use serde_json::json;

    fn user(id: &str, user_id: &str) -> serde_json::Value {
        json!({"id": id, "userId": user_id, "type": "user", "username": "zoe", "postCount": 0, "commentCount": 0, "likeCount": 0})
    }

    #[test]
    fn a_user_a_writer_never_writes_is_refused_saying_why() {
        assert!(parse(&user("u1", "u1")).is_ok());
        assert!(
            matches!(parse(&user("u1", "u2")), Err(UserRefused::IdsDiffer { id, user_id }) if id == "u1" && user_id == "u2")
        );
        assert!(matches!(
            parse(&user("a/b", "a/b")),
            Err(UserRefused::Id(IdError::PathCharacter { character: '/', at: 1 }))
        ));
        assert!(matches!(
            parse(&json!({"id": "u1", "type": "user"})),
            Err(UserRefused::Unreadable(_))
        ));
    }
}
