//! What a use case answers when it does not do what was asked. The variants say what happened;
//! each adapter decides what that means to its caller (the HTTP API's statuses are in
//! `http/error.rs`, in one place).

use crate::cosmos::StoreError;
use crate::scripts::ScriptError;

/// Why a use case did not do what it was asked; the HTTP layer turns each into its problem answer.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The request is not acceptable as given (a field, an id, a limit, a continuation token):
    /// the message says what to fix.
    #[error("{0}")]
    Invalid(String),
    /// What the request is about does not exist: which, in [`Missing`].
    #[error("{0}")]
    NotFound(Missing),
    /// The request is well-formed, but names a user that does not exist as its writer.
    #[error("{0}")]
    NoSuchWriter(String),
    /// The caller may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// It contradicts what exists: the name is taken, the user exists, the post is liked already.
    #[error("{0}")]
    Conflict(String),
    /// The idempotency key was used before for another request: nothing was written.
    #[error("{0}")]
    KeyReused(String),
    /// Others kept changing the same thing meanwhile, or a deletion is unfinished: the same
    /// request succeeds later.
    #[error("{0}")]
    Busy(String),
    /// The caller sent more writes than their limit allows; the next is accepted after
    /// `retry_after`.
    #[error("too many writes: the next is accepted in {retry_after:?}")]
    TooManyWrites {
        /// How long until the next write is accepted.
        retry_after: std::time::Duration,
    },
    /// A script or a step answered what it never should: a bug, or a test's crash. The HTTP
    /// answer says only that the server failed; the log has `what` and its cause's chain.
    #[error("{what}")]
    Unexpected {
        /// What happened.
        what: String,
        /// What made it happen, where something did (a join error, a serializer's).
        #[source]
        cause: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The writer keeps as many pictures, or bytes of them, as a writer may: nothing was stored.
    #[error("{0}")]
    QuotaFull(String),
    /// The upload was declared a media type its bytes are not.
    #[error("{0}")]
    WrongMediaType(String),
    /// The memory for decoding pictures is held by others' uploads; the same upload is taken
    /// after `retry_after`, most likely.
    #[error("the pictures' memory is in use: retry in {retry_after:?}")]
    PicturesBusy {
        /// When to come back.
        retry_after: std::time::Duration,
    },
    /// A stored picture's bytes are not those its name (its address, given) says.
    #[error("the picture at {0} is damaged in its store")]
    DamagedPicture(String),
    /// This blog has no picture store configured.
    #[error("this blog keeps no pictures")]
    NoPictureStore,
    /// An upload is not taken as a picture.
    #[error(transparent)]
    Picture(#[from] crate::pictures::PictureError),
    /// The picture store failed.
    #[error(transparent)]
    PictureStore(#[from] crate::pictures::PictureStoreError),
    /// A Cosmos DB call failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored procedure or trigger failed.
    #[error(transparent)]
    Script(#[from] ScriptError),
}

pub(crate) type AppResult<T> = Result<T, AppError>;

/// What a request named that does not exist; its text is the answer's `detail`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Missing {
    /// A post, or a deleted one.
    #[error("There is no post with id {0:?}.")]
    Post(String),
    /// A user.
    #[error("There is no user with id {0:?}.")]
    User(String),
    /// A comment on a post.
    #[error("There is no comment with id {comment:?} on post {post:?}.")]
    Comment {
        /// The post.
        post: String,
        /// The comment's id.
        comment: String,
    },
    /// A user's like of a post.
    #[error("User {user:?} does not like post {post:?}; there is no like to take back.")]
    Like {
        /// The user.
        user: String,
        /// The post.
        post: String,
    },
    /// A picture, by its address.
    #[error("There is no picture at {0}.")]
    Picture(String),
    /// What a request made with an idempotency key wrote, deleted since.
    #[error(
        "This Idempotency-Key's request was made before, and the {what} it wrote ({item:?}) has been deleted since."
    )]
    DeletedSince {
        /// What it wrote: a post, a comment, a like, a user.
        what: String,
        /// Its id.
        item: String,
    },
}

impl AppError {
    /// [`AppError::Unexpected`] with nothing behind it: a script's answer no step expects.
    pub(crate) fn unexpected(what: impl Into<String>) -> AppError {
        AppError::Unexpected { what: what.into(), cause: None }
    }

    /// [`AppError::Unexpected`], made by `cause`, kept as its source.
    pub(crate) fn unexpected_from(
        what: impl Into<String>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> AppError {
        AppError::Unexpected { what: what.into(), cause: Some(Box::new(cause)) }
    }
}

/// A test stopped a use case between two steps, as a crash would (`test-support` only).
#[cfg(any(test, feature = "test-support"))]
impl From<crate::test_support::crash::Crashed> for AppError {
    fn from(crashed: crate::test_support::crash::Crashed) -> Self {
        AppError::unexpected_from("a test stopped the use case", crashed)
    }
}
