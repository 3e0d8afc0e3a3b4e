//! The blog's use cases, below every way of reaching them: the article's commands and queries
//! (C1–C7, Q1–Q6), the copies that denormalize them, the unique usernames, the feed cache. Each
//! is a plain async function over [`AppState`] that answers its result or an [`AppError`]
//! saying what happened. Adapters translate to and from them: `http` (the JSON API and the
//! pages) and `changefeed` (the host's invocations and the local processors). Nothing here
//! knows about HTTP.

pub(crate) mod comments;
pub(crate) mod copies;
mod error;
pub(crate) mod feed;
pub(crate) mod idempotency;
pub(crate) mod kept;
pub(crate) mod likes;
pub(crate) mod lists;
pub(crate) mod pictures;
pub(crate) mod post_lists;
pub(crate) mod posts;
pub(crate) mod revisions;
pub(crate) mod scheduled;
pub(crate) mod search;
pub(crate) mod sitemap;
pub(crate) mod tags;
pub(crate) mod usernames;
pub(crate) mod users;
mod write_limit;

use std::sync::Arc;

pub(crate) use error::{AppError, BadInput, Clash, Contended, Missing, NotAllowed};

pub(crate) use error::AppResult;
pub(crate) use write_limit::WriteLimit;

use crate::config::AuthMode;
use crate::cosmos::Store;
use crate::model::validate_id;
use crate::scripts::ScriptExecutor;

/// What every use case shares (see [`Shared`]). The HTTP adapter's extractors and middleware
/// clone it on every request, so it is one `Arc`. That is one reference count to touch per
/// clone rather than one per field. The six counts, shared by both cores, were 5 % of the front
/// page's time.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    /// The state every handler shares.
    pub(crate) fn new(shared: Shared) -> AppState {
        AppState(Arc::new(shared))
    }

    /// A handle that does not keep the blog alive. The background tasks (the pictures' sweep,
    /// the lag reports) hold the state only while they work. So a blog that stops lets go of
    /// its store (and of the data directory's lock) at once.
    pub(crate) fn downgrade(&self) -> WeakAppState {
        WeakAppState(Arc::downgrade(&self.0))
    }

    /// What another instance of the blog shares with this one: the database, the scripts'
    /// engine and the keys; not the caches, nor the write limit, which are each instance's own.
    /// Tests serve it to stand for a second Functions instance on the same account (without a
    /// picture store: its memory budget and writers' turns are a process's own).
    pub fn another_instance(&self) -> AppState {
        AppState::new(Shared {
            store: self.store.clone(),
            scripts: self.scripts.clone(),
            auth: self.auth,
            tokens: self.tokens.clone(),
            feed: Default::default(),
            post_views: Default::default(),
            changes: Default::default(),
            users: Default::default(),
            user_posts: Arc::new(post_lists::PostLists::user_posts()),
            tag_posts: Arc::new(post_lists::PostLists::tag_posts()),
            pictures: None,
            write_limit: None,
        })
    }
}

/// [`AppState::downgrade`]'s handle.
pub(crate) struct WeakAppState(std::sync::Weak<Shared>);

impl WeakAppState {
    /// The state, while the blog runs.
    pub(crate) fn upgrade(&self) -> Option<AppState> {
        self.0.upgrade().map(AppState)
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The store, whoever runs the server-side scripts, and the caches.
pub struct Shared {
    /// The database.
    pub store: Arc<Store>,
    /// Where the article's stored procedures and trigger run: in Cosmos DB, or in-process.
    pub scripts: Arc<dyn ScriptExecutor>,
    /// How callers are identified (the HTTP adapter reads it; the pages show sign-in with it).
    pub auth: AuthMode,
    /// Signs and checks the lists' continuation tokens.
    pub(crate) tokens: lists::TokenKey,
    /// The feed pages kept and checked by the change log (or the feed's mark), shared by the front page, the Atom
    /// feed and `GET /api/feed`.
    pub feed: Arc<feed::FeedCache>,
    /// The post pages' reads, kept and checked by the change log (or the post's etag), by post.
    pub(crate) post_views: Arc<kept::PostViewCache>,
    /// The blog's change log as this instance last read it: what lets every kept page be checked
    /// by one point read a second.
    pub(crate) changes: Arc<kept::ChangeLog>,
    /// Users as their pages show them (Q1), kept and checked by the change log.
    pub(crate) users: Arc<users::UserCache>,
    /// Users' pages of posts (Q3), kept and checked by the change log (or each user's posts mark).
    pub(crate) user_posts: Arc<post_lists::PostLists>,
    /// Tags' pages of posts (Q7), kept and checked by the change log (or each tag's mark).
    pub tag_posts: Arc<post_lists::PostLists>,
    /// Where pictures are kept (`None`: nowhere configured; uploads are refused).
    pub pictures: Option<pictures::Pictures>,
    /// How many writes each user may still send (`None`: no limit).
    pub(crate) write_limit: Option<write_limit::WriteLimit>,
}

/// Who asks for a write: their principal id, which is also their user id, and the key that
/// makes the write once ([`idempotency`]), if they sent one. The adapters authenticate; the use
/// cases decide what the caller may do.
pub struct Caller {
    /// The principal id: the user id.
    pub id: String,
    /// The `Idempotency-Key` of the request, or the one-time key of the form.
    pub(crate) key: Option<idempotency::IdempotencyKey>,
}

impl Caller {
    /// A caller who sent no key.
    pub fn new(id: impl Into<String>) -> Caller {
        Caller { id: id.into(), key: None }
    }

    /// The caller, with the key of this request.
    pub(crate) fn with_key(self, key: Option<idempotency::IdempotencyKey>) -> Caller {
        Caller { key, ..self }
    }

    /// Counts a write the caller sends against their limit; over it, [`AppError::TooManyWrites`]
    /// saying when the next is accepted. Reads are never counted.
    pub(crate) fn count_write(&self, state: &AppState) -> AppResult<()> {
        let Some(limit) = &state.write_limit else { return Ok(()) };
        limit
            .admit(&self.id, std::time::Instant::now())
            .map_err(|retry_after| AppError::TooManyWrites { retry_after })
    }

    /// [`AppError::Forbidden`] unless `owner` is the caller.
    pub(crate) fn must_be(&self, owner: &str, what: &'static str) -> AppResult<()> {
        if self.id == owner {
            Ok(())
        } else {
            Err(AppError::Forbidden(NotAllowed::NotOwner { what, caller: self.id.clone() }))
        }
    }
}

/// What a request about a post that does not exist (or is deleted) is answered.
pub(crate) fn post_not_found(post_id: &str) -> AppError {
    AppError::NotFound(Missing::Post(post_id.to_owned()))
}

/// Checks a user id given in a body (`userId`).
fn valid_user_id(user_id: &str) -> AppResult<()> {
    validate_id(user_id).map_err(|why| AppError::Invalid(BadInput::UserId(why)))
}

/// Checks one text field of a body: not blank, at most `max_chars` characters, and no control
/// characters other than line breaks and tabs (allowed only where `multiline`).
pub(crate) fn validate_text(
    field: &'static str,
    value: &str,
    max_chars: usize,
    multiline: bool,
) -> AppResult<()> {
    // Blank means only whitespace, as JavaScript's `\s` counts it (U+FEFF too), so that the
    // OpenAPI description's patterns say exactly what is accepted.
    if value.chars().all(|c| c.is_whitespace() || c == '\u{feff}') {
        return Err(AppError::Invalid(BadInput::Empty(field)));
    }
    let chars = value.chars().count();
    if chars > max_chars {
        return Err(AppError::Invalid(BadInput::TooLong { field, max_chars, chars }));
    }
    let allowed = |c: char| multiline && matches!(c, '\n' | '\r' | '\t');
    if let Some(bad) = value.chars().find(|&c| c.is_control() && !allowed(c)) {
        return Err(AppError::Invalid(BadInput::Control { field, bad }));
    }
    Ok(())
}
