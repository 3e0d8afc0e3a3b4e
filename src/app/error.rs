//! What a use case answers when it does not do what was asked. The variants say what happened;
//! each adapter decides what that means to its caller (the HTTP API's statuses are in
//! `http/error.rs`, in one place).

use super::idempotency::KEY_REUSED;
use super::lists::MAX_PAGE_SIZE;
use super::search::MAX_RESULTS;
use crate::cosmos::StoreError;
use crate::model::ids::IdError;
use crate::model::search::QueryError;
use crate::model::tags::TagError;
use crate::scripts::ScriptError;

/// Why a use case did not do what it was asked; the HTTP layer turns each into its problem answer.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The request is not acceptable as given: which part, and why, in [`BadInput`].
    #[error("{0}")]
    Invalid(BadInput),
    /// What the request is about does not exist: which, in [`Missing`].
    #[error("{0}")]
    NotFound(Missing),
    /// The request is well-formed, but names a user that does not exist as its writer.
    #[error("`userId` {user_id:?} names no existing user; create the user first.")]
    NoSuchWriter {
        /// The id given.
        user_id: String,
    },
    /// The caller may not do this: what, in [`NotAllowed`].
    #[error("{0}")]
    Forbidden(NotAllowed),
    /// It contradicts what exists: what, in [`Clash`].
    #[error("{0}")]
    Conflict(Clash),
    /// The idempotency key was used before for another request: nothing was written.
    #[error(
        "{KEY_REUSED} (other inputs, another write, or another item): nothing was written. Send a new key with a \
         new request, and the same key only with the same request."
    )]
    KeyReused,
    /// Others kept changing the same thing meanwhile, or a deletion is unfinished: the same
    /// request succeeds later. Which, in [`Contended`].
    #[error("{0}")]
    Busy(Contended),
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
    #[error(
        "You keep {pictures} pictures of {bytes} bytes; a writer may keep {max_pictures} pictures of at most \
         {max_bytes} bytes in all. Nothing was stored: delete a post with pictures you no longer need, or add a \
         smaller picture."
    )]
    QuotaFull {
        /// The pictures the writer keeps.
        pictures: u64,
        /// Their bytes.
        bytes: u64,
        /// The most pictures a writer may keep.
        max_pictures: u64,
        /// The most bytes they may hold.
        max_bytes: u64,
    },
    /// The upload was declared a media type its bytes are not.
    #[error(
        "The upload was declared {declared}, but its bytes are a {} picture; send it as {media_type} or \
         application/octet-stream.",
        format.to_uppercase()
    )]
    WrongMediaType {
        /// The media type the upload was declared.
        declared: String,
        /// The format its bytes are, as a file extension says it (`jpg`).
        format: &'static str,
        /// That format's media type.
        media_type: &'static str,
    },
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
    /// A revision of a post.
    #[error("Post {post:?} keeps no revision {number}.")]
    Revision {
        /// The post.
        post: String,
        /// The revision's number.
        number: u64,
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

/// What of a request is not acceptable as given; its text is the answer's `detail`, which says
/// what to fix.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadInput {
    /// A text field that is blank.
    #[error("`{0}` must not be empty.")]
    Empty(&'static str),
    /// A text field longer than its limit.
    #[error("`{field}` must be at most {max_chars} characters long; it has {chars}.")]
    TooLong {
        /// The field.
        field: &'static str,
        /// Its limit, in characters.
        max_chars: usize,
        /// The characters it has.
        chars: usize,
    },
    /// A text field with a control character it may not hold.
    #[error("`{field}` must not contain the control character {bad:?}.")]
    Control {
        /// The field.
        field: &'static str,
        /// The first such character.
        bad: char,
    },
    /// A picture's `alt` text with a line break or another control character.
    #[error("`alt` must be one line, without the control character {0:?}.")]
    AltNotOneLine(char),
    /// A username with a bidirectional control, which would reorder the text around it.
    #[error(
        "`username` must not contain the bidirectional control {0:?}: it would reorder the text around the name."
    )]
    UsernameBidirectional(char),
    /// A username of only invisible characters.
    #[error("`username` must contain a visible character.")]
    UsernameInvisible,
    /// A `userId` that is not an id.
    #[error("`userId` is not valid: {0}")]
    UserId(IdError),
    /// A post's tags.
    #[error("`tags`: {0}")]
    Tags(TagError),
    /// A tag in an address.
    #[error("`tag`: {0}")]
    Tag(TagError),
    /// A search's query that is not searched.
    #[error("`q`: {0}")]
    Search(QueryError),
    /// A search's `limit` outside its bounds.
    #[error("`limit` must be a whole number from 1 to {MAX_RESULTS}; it was {0}.")]
    SearchLimit(u32),
    /// `limit` given more than once.
    #[error(
        "`limit` must be one whole number from 1 to {MAX_PAGE_SIZE}; it was {0:?}: give it once."
    )]
    LimitTwice(String),
    /// A `limit` that is not a whole number from 1 to the largest page.
    #[error("`limit` must be a whole number from 1 to {MAX_PAGE_SIZE}; it was {0:?}.")]
    Limit(String),
    /// A continuation token no list issued.
    #[error(
        "`continuationToken` is not a token this list issued; pass back the `continuationToken` of the previous \
         page unchanged."
    )]
    ContinuationToken,
    /// A continuation token another list issued.
    #[error("`continuationToken` was issued for another list; it belongs to {list} of {key:?}.")]
    TokenOfAnotherList {
        /// The list it was issued for.
        list: String,
        /// That list's key (a user, a tag, a post).
        key: String,
    },
    /// An `Idempotency-Key` header that is not a key.
    #[error(
        "The Idempotency-Key header is not valid: {0}. Send a new random value (a UUID) with each write, and the \
         same value when you repeat it."
    )]
    IdempotencyKey(String),
    /// `status` `scheduled` without `publishAt`.
    #[error(
        "A scheduled post needs `publishAt`: when to publish it, as 2026-12-07T09:00:00+01:00."
    )]
    ScheduleWithoutTime,
    /// `publishAt` with another status than `scheduled`.
    #[error(
        "`publishAt` is for a scheduled post: send it with `status` `scheduled`, or leave it out."
    )]
    PublishAtWithoutSchedule,
    /// A `publishAt` that is not a date and time with its offset from UTC.
    #[error(
        "`publishAt` {0:?} is not an RFC 3339 date and time with its offset from UTC, as 2026-12-07T09:00:00+01:00 \
         or 2026-12-07T08:00:00Z."
    )]
    PublishAtUnreadable(String),
    /// A `publishAt` that has passed.
    #[error(
        "`publishAt` {0:?} is not in the future: to publish the post now, send `status` `published`."
    )]
    PublishAtPast(String),
    /// A `publishAt` more than a year and a day ahead.
    #[error(
        "`publishAt` {0:?} is more than 366 days ahead; schedule it nearer, or keep it as a draft."
    )]
    PublishAtFar(String),
    /// A picture sent for a post not yet written, without the form's key that names it.
    #[error("A picture for a post not yet published needs the form's key.")]
    PictureWithoutFormKey,
}

/// What the caller may not do; its text is the answer's `detail`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAllowed {
    /// Act on what another user owns.
    #[error("Only its owner may {what}; you are signed in as {caller:?}.")]
    NotOwner {
        /// What was asked, as "edit this post".
        what: &'static str,
        /// The caller's user id.
        caller: String,
    },
    /// Delete another user's post.
    #[error("Only its author may delete this post; you are signed in as {caller:?}.")]
    PostOfAnother {
        /// The caller's user id.
        caller: String,
    },
    /// Delete a comment the caller neither wrote nor is on a post of theirs.
    #[error(
        "Only the comment's author{} or the post's author may delete it; you are signed in as {caller:?}.",
        author.as_ref().map_or_else(String::new, |author| format!(" ({author:?})"))
    )]
    CommentOfAnother {
        /// The comment's author, where it is known.
        author: Option<String>,
        /// The caller's user id.
        caller: String,
    },
}

/// What the request contradicts; its text is the answer's `detail`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Clash {
    /// The caller has a user already.
    #[error("You already have a user, {0:?}; rename it with PUT instead.")]
    UserExists(String),
    /// The user likes the post already.
    #[error("User {user:?} already likes post {post:?}; a post is liked once per user.")]
    AlreadyLiked {
        /// The user.
        user: String,
        /// The post.
        post: String,
    },
    /// Another user has the name, or one that folds to it.
    #[error(
        "`username` {0:?} is taken: another user has this name, or one that differs from it only in case or in \
         Unicode form (such as \"ＡＢＣ\" for \"abc\"). Choose another."
    )]
    UsernameTaken(String),
    /// A post readers have answered, sent back to draft: their comments and likes would be
    /// on a post nobody but its author reads.
    #[error(
        "Post {post:?} has {comments} comments and {likes} likes: a post readers have answered stays published. \
         Edit it, or delete it."
    )]
    Answered {
        /// The post.
        post: String,
        /// Its comments.
        comments: u64,
        /// Its likes.
        likes: u64,
    },
    /// A preview link asked for a published post, which its own address shares.
    #[error("Post {0:?} is published: its own address shares it, so it needs no preview link.")]
    AlreadyPublished(String),
    /// A comment or like on a draft, by its author: only a published post takes them.
    #[error("Post {0:?} is a draft: it takes comments and likes once it is published.")]
    NotPublished(String),
    /// The request with this idempotency key is being made.
    #[error(
        "A request with this Idempotency-Key is being made right now: wait for its answer, or send this again in \
         a moment to get it."
    )]
    KeyInProgress,
}

/// What others are doing meanwhile, that the same request outlasts; its text is the answer's
/// `detail`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Contended {
    /// The post changed under every try to edit it.
    #[error("The post kept changing while it was being edited; retry in a moment.")]
    PostKeptChanging,
    /// The post is deleted, its comments and likes not all yet.
    #[error(
        "The post is deleted, but not all of its comments and likes yet; the change feed finishes it, or repeat \
         the DELETE."
    )]
    PostRemovalUnfinished,
    /// Other requests are renaming the user.
    #[error("The user is being renamed by other requests right now; retry in a moment.")]
    UserBeingRenamed,
    /// Others are claiming the username.
    #[error("Others are claiming the username {0:?} right now; retry in a moment.")]
    UsernameClaimed(String),
    /// The request with this key expired between two reads.
    #[error("The request with this key just expired; send it again.")]
    KeyJustExpired,
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
