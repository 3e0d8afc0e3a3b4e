//! The article's server-side JavaScript, and who runs it.
//!
//! The `.js` files beside this module are the scripts Bicep deploys to Cosmos DB. Where the
//! backend cannot run them (the embedded store, the Linux emulator), [`InProcessScripts`] runs
//! the very same files in an embedded JavaScript engine, committing their writes as one
//! transactional batch. Both are a [`ScriptExecutor`], so the handlers never know which ran.

pub mod engine;
pub(crate) mod failure;
pub(crate) mod in_process;
pub(crate) mod server_side;

use std::sync::LazyLock;

use async_trait::async_trait;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::cosmos::{Container, StoreError, WriteOp};

pub(crate) use failure::ScriptFailure;
pub(crate) use in_process::InProcessScripts;
pub(crate) use server_side::{ScriptCredential, ServerSideScripts};

/// The message a `truncateFeed` refusal starts with: the post is older than the newest 100.
pub const NOT_AMONG_NEWEST: &str = "notAmongNewest";

/// The stored procedures of the model, each deployed on one container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoredProcedure {
    /// C3: create a comment and increment the post's `commentCount`.
    CreateComment,
    /// C4: create a like and increment the post's `likeCount`.
    CreateLike,
    /// After a rename: rewrite `userUsername` on the user's items in one post partition.
    UpdateUsernames,
    /// C5: delete a like and decrement the post's `likeCount`.
    DeleteLike,
    /// C6: delete a comment and decrement the post's `commentCount`.
    DeleteComment,
    /// C7: make the post a tombstone, then delete its comments and likes, in bounded pieces.
    DeletePost,
}

impl StoredProcedure {
    /// Every stored procedure.
    pub const ALL: [StoredProcedure; 6] = [
        Self::CreateComment,
        Self::CreateLike,
        Self::UpdateUsernames,
        Self::DeleteLike,
        Self::DeleteComment,
        Self::DeletePost,
    ];

    /// The script's id in Cosmos DB, which is also its function's name and its file's stem.
    pub fn name(self) -> &'static str {
        match self {
            Self::CreateComment => "createComment",
            Self::CreateLike => "createLike",
            Self::UpdateUsernames => "updateUsernames",
            Self::DeleteLike => "deleteLike",
            Self::DeleteComment => "deleteComment",
            Self::DeletePost => "deletePost",
        }
    }

    /// The JavaScript source, compiled into the binary from the files Bicep deploys: for a
    /// keyed procedure, its file with [`KEYED_HELPERS`] in place of [`KEYED_HELPERS_MARKER`],
    /// joined as Bicep joins them.
    pub fn source(self) -> &'static str {
        static CREATE_COMMENT: LazyLock<String> =
            LazyLock::new(|| with_keyed_helpers(include_str!("createComment.js")));
        static CREATE_LIKE: LazyLock<String> =
            LazyLock::new(|| with_keyed_helpers(include_str!("createLike.js")));
        static DELETE_LIKE: LazyLock<String> =
            LazyLock::new(|| with_keyed_helpers(include_str!("deleteLike.js")));
        static DELETE_COMMENT: LazyLock<String> =
            LazyLock::new(|| with_keyed_helpers(include_str!("deleteComment.js")));
        static DELETE_POST: LazyLock<String> =
            LazyLock::new(|| with_keyed_helpers(include_str!("deletePost.js")));
        match self {
            Self::CreateComment => &CREATE_COMMENT,
            Self::CreateLike => &CREATE_LIKE,
            Self::UpdateUsernames => include_str!("updateUsernames.js"),
            Self::DeleteLike => &DELETE_LIKE,
            Self::DeleteComment => &DELETE_COMMENT,
            Self::DeletePost => &DELETE_POST,
        }
    }

    /// The container the procedure is registered on.
    pub(crate) fn container(self) -> Container {
        match self {
            Self::CreateComment
            | Self::CreateLike
            | Self::UpdateUsernames
            | Self::DeleteLike
            | Self::DeleteComment
            | Self::DeletePost => Container::Posts,
        }
    }

    /// The stored procedure's id, source and container.
    pub fn script(self) -> Script {
        Script { name: self.name(), source: self.source(), container: self.container() }
    }
}

/// The helpers the keyed stored procedures share (the request record of an Idempotency-Key,
/// and the check that the database accepted an operation), kept once in `keyed_helpers.js`.
///
/// They go inside each procedure's function, where its [`KEYED_HELPERS_MARKER`] line is, not
/// beside it. Cosmos DB registers a stored procedure's body as its one function, and refuses a
/// body with other top-level functions. This was observed on DocumentDB (benoitpatra.com,
/// "Programming well structured Javascript stored procedures for DocumentDB", 2016): "you
/// cannot create other functions in the file otherwise DocumentDB will complain". Every sample
/// of Azure/azure-cosmosdb-js-server nests its helpers too. Nested, they also see the
/// procedure's arguments, as they did when each procedure carried its own copy.
///
/// infra/modules/cosmos.bicep deploys `replace(loadTextContent(<procedure>), <marker>,
/// loadTextContent(<helpers>))`, and [`StoredProcedure::source`] makes the same join, so the
/// deployed body and the one run in process are the same bytes (tests/infra/cosmos.rs checks
/// it).
pub const KEYED_HELPERS: &str = include_str!("keyed_helpers.js");

/// The line of a keyed procedure's file that [`KEYED_HELPERS`] take the place of.
///
/// A statement that does nothing, not a comment: the Bicep grammar tests/infra/bicep_reader.rs
/// parses with takes a `//` in a string for a comment.
pub(crate) const KEYED_HELPERS_MARKER: &str = "\"keyed_helpers.js\";";

/// A keyed procedure's file with the shared helpers in place of its marker: every occurrence,
/// as ARM's `replace` does (there is one).
fn with_keyed_helpers(file: &str) -> String {
    file.replace(KEYED_HELPERS_MARKER, KEYED_HELPERS)
}

/// The post-triggers of the model. A trigger runs only when a write names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostTrigger {
    /// Keeps `feed` at the newest 100 posts; refuses the write of a post older than those.
    TruncateFeed,
}

impl PostTrigger {
    /// Every trigger.
    pub const ALL: [PostTrigger; 1] = [Self::TruncateFeed];

    /// The trigger's id, source and container.
    pub fn script(self) -> Script {
        match self {
            Self::TruncateFeed => Script {
                name: "truncateFeed",
                source: include_str!("truncateFeed.js"),
                container: Container::Feed,
            },
        }
    }
}

/// A server-side script: its function's name, its source, and the container it runs on.
#[derive(Clone, Copy, Debug)]
pub struct Script {
    /// The script's id in Cosmos DB.
    pub name: &'static str,
    /// Its JavaScript.
    pub source: &'static str,
    /// The container it is registered on.
    pub container: Container,
}

/// Why a script produced no result. Nothing it wrote was committed.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The script threw: the message is the script's own.
    #[error("the script threw: {0}")]
    Thrown(String),
    /// The script threw [`IN_PROGRESS`]: the same request (its Idempotency-Key's record), sent
    /// twice at once, committed first, so this one wrote nothing. The message is the script's.
    #[error("the script threw: {0}")]
    InProgress(String),
    /// The script could not run to its end (time, memory, engine failure), or answered what its
    /// caller does not know: which, with its data.
    #[error("the script failed")]
    Failed(#[from] ScriptFailure),
    /// The script kept conflicting with concurrent writers and was given up.
    #[error("the script conflicted with concurrent writes too often")]
    Contention,
    /// A Cosmos DB call failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The number the keyed stored procedures throw with (`new Error(IN_PROGRESS, message)`, in
/// keyed_helpers.js) when their request record was created meanwhile. Cosmos DB answers a
/// stored procedure's `new Error(number, message)` as a 400 whose `x-ms-substatus` is the
/// number. The in-process engine keeps it as the error's `number`, so both engines tell it
/// apart without reading the message. Chosen apart from the substatuses the service documents
/// for its own 400s.
pub(crate) const IN_PROGRESS: i64 = 4090;

impl ScriptError {
    /// What a script threw, told apart by the number it threw with (the Error's `number` in
    /// process, the 400's substatus from Cosmos DB): the one place a throw is classified.
    pub(crate) fn thrown(number: Option<i64>, message: String) -> ScriptError {
        match number {
            Some(IN_PROGRESS) => ScriptError::InProgress(message),
            _ => ScriptError::Thrown(message),
        }
    }

    /// Whether the script threw (rather than failing to run, or its store failing).
    pub(crate) fn is_thrown(&self) -> bool {
        matches!(self, ScriptError::Thrown(_) | ScriptError::InProgress(_))
    }
}

/// Runs the server-side scripts: stored procedures, and writes that name a post-trigger.
#[async_trait]
pub trait ScriptExecutor: Send + Sync {
    /// Runs a stored procedure in one logical partition and returns the body it set.
    async fn execute_json(
        &self,
        procedure: StoredProcedure,
        partition_key: &str,
        args: Vec<Value>,
    ) -> Result<Value, ScriptError>;

    /// Makes `write` (a create, replace or upsert) with `trigger` run after it in the same
    /// transaction; a trigger that throws undoes the write.
    async fn write_with_trigger(
        &self,
        trigger: PostTrigger,
        partition_key: &str,
        write: WriteOp,
    ) -> Result<(), ScriptError>;
}

impl dyn ScriptExecutor {
    /// [`ScriptExecutor::execute_json`] with the arguments given as a tuple of serializable values.
    pub async fn execute(
        &self,
        procedure: StoredProcedure,
        partition_key: &str,
        args: impl Serialize,
    ) -> Result<Value, ScriptError> {
        let args = match serde_json::to_value(args) {
            Ok(Value::Array(args)) => args,
            Ok(single) => vec![single],
            Err(source) => {
                return Err(ScriptError::Failed(ScriptFailure::NotSerializable {
                    what: "the arguments",
                    source,
                }));
            }
        };
        self.execute_json(procedure, partition_key, args).await
    }
}

/// What `createComment` and `createLike` answer in their response body.
#[derive(Debug, PartialEq)]
pub(crate) enum CounterOutcome<T> {
    Created(T),
    PostNotFound,
    AlreadyLiked,
    /// The post is a draft, and the caller its author (to anyone else it is not found).
    NotPublished,
    /// A request sent again with its idempotency key: the record its first time left.
    Repeated(Value),
}

impl<T: DeserializeOwned> CounterOutcome<T> {
    pub(crate) fn from_body(procedure: StoredProcedure, body: Value) -> Result<Self, ScriptError> {
        let unexpected = || {
            ScriptError::Failed(ScriptFailure::Answered {
                script: procedure.name(),
                post_id: None,
                answer: body.to_string(),
            })
        };
        match body.get("outcome").and_then(Value::as_str) {
            Some("created") => {
                let item = body.get("item").cloned().ok_or_else(unexpected)?;
                serde_json::from_value(item).map(CounterOutcome::Created).map_err(|_| unexpected())
            }
            Some("postNotFound") => Ok(CounterOutcome::PostNotFound),
            Some("alreadyLiked") => Ok(CounterOutcome::AlreadyLiked),
            Some("notPublished") => Ok(CounterOutcome::NotPublished),
            Some("repeated") => {
                repeated(&body).map(CounterOutcome::Repeated).ok_or_else(unexpected)
            }
            _ => Err(unexpected()),
        }
    }
}

/// What `deleteLike`, `deleteComment` and `deletePost` answer in their response body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum DeleteOutcome {
    /// Deleted. For `deletePost`: whether this call made the tombstone, how many comments and
    /// likes it deleted, and whether none is left (else call it again).
    Deleted {
        marked: bool,
        removed: u64,
        done: bool,
    },
    PostNotFound,
    LikeNotFound,
    CommentNotFound,
    /// The caller may not delete it; `author` is the comment's author where there is one.
    Forbidden {
        author: Option<String>,
    },
    /// A request sent again with its idempotency key: the record its first time left.
    Repeated(Value),
}

impl DeleteOutcome {
    pub(crate) fn from_body(procedure: StoredProcedure, body: Value) -> Result<Self, ScriptError> {
        let unexpected = || {
            ScriptError::Failed(ScriptFailure::Answered {
                script: procedure.name(),
                post_id: None,
                answer: body.to_string(),
            })
        };
        let flag = |name: &str| body.get(name).and_then(Value::as_bool);
        match body.get("outcome").and_then(Value::as_str) {
            // (deleteLike and deleteComment delete in one piece, so they send no counts.)
            Some("deleted") => Ok(DeleteOutcome::Deleted {
                marked: flag("marked").unwrap_or(false),
                removed: body.get("removed").and_then(Value::as_u64).unwrap_or(0),
                done: flag("done").unwrap_or(true),
            }),
            Some("postNotFound") => Ok(DeleteOutcome::PostNotFound),
            Some("likeNotFound") => Ok(DeleteOutcome::LikeNotFound),
            Some("commentNotFound") => Ok(DeleteOutcome::CommentNotFound),
            Some("repeated") => repeated(&body).map(DeleteOutcome::Repeated).ok_or_else(unexpected),
            Some("forbidden") => Ok(DeleteOutcome::Forbidden {
                author: body.get("author").and_then(Value::as_str).map(str::to_owned),
            }),
            _ => Err(unexpected()),
        }
    }
}

/// The record in a `repeated` answer.
fn repeated(body: &Value) -> Option<Value> {
    body.get("request").filter(|record| record.is_object()).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each keyed procedure's file names the helpers' place once, and its source has them there,
    /// inside its function (which the source ends by closing).
    #[test]
    fn the_keyed_procedures_carry_the_shared_helpers_inside_their_function() {
        let keyed = [
            (StoredProcedure::CreateComment, include_str!("createComment.js")),
            (StoredProcedure::CreateLike, include_str!("createLike.js")),
            (StoredProcedure::DeleteLike, include_str!("deleteLike.js")),
            (StoredProcedure::DeleteComment, include_str!("deleteComment.js")),
            (StoredProcedure::DeletePost, include_str!("deletePost.js")),
        ];
        for (procedure, file) in keyed {
            assert_eq!(file.matches(KEYED_HELPERS_MARKER).count(), 1, "{procedure:?}");
            let source = procedure.source();
            assert!(
                !source.contains(KEYED_HELPERS_MARKER) && source.contains(KEYED_HELPERS),
                "{procedure:?}"
            );
            let helpers_at = source.find(KEYED_HELPERS).unwrap();
            assert!(
                source[..helpers_at].contains(&format!("function {}(", procedure.name())),
                "{procedure:?}"
            );
            assert_eq!(
                source[helpers_at + KEYED_HELPERS.len()..].trim(),
                "}",
                "{procedure:?}: inside its function"
            );
        }
        assert!(!StoredProcedure::UpdateUsernames.source().contains("function firstTime"));
    }

    /// The helpers throw "in progress" with the number the callers classify it by.
    #[test]
    fn the_helpers_throw_in_progress_with_its_number() {
        let thrown = format!(
            "throw new Error({IN_PROGRESS}, procedure + \": a request with this key is in progress\")"
        );
        assert_eq!(KEYED_HELPERS.matches(&thrown).count(), 1, "{thrown}");
    }
}
