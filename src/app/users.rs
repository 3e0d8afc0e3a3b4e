//! C1 (create, edit user), Q1 (get user) and Q3 (a user's posts). Usernames are unique: the
//! steps that keep them so are in [`usernames`].

use super::{BadInput, Clash, Contended};
use std::sync::Arc;

use crate::cosmos::{Container, StoreError, WriteOp, queries, retry_pause};
use crate::model::usernames::{is_default_ignorable, released_name};
use crate::model::{self, MAX_USERNAME_CHARS, Post, User};

use super::idempotency::{Committed, Once, commit};
use super::kept::change_log;
use super::kept::{KeptPages, LogCheckedRead, MarkedPage};
use super::lists::{DEFAULT_PAGE_SIZE, ListPage, ListParams, OwnerKnown, wrap_token};
use super::posts::to_document;
use super::usernames;
use super::{AppError, AppResult, AppState, Caller, Missing, validate_text};

/// A username as given, checked: a visible, single-line name of at most
/// [`MAX_USERNAME_CHARS`] characters.
pub(crate) fn valid_username(username: String) -> AppResult<String> {
    validate_text("username", &username, MAX_USERNAME_CHARS, false)?;
    validate_display_name(&username)?;
    Ok(username)
}

/// A username is shown beside everything its user writes, so it must show as what it is. It
/// must not be only invisible characters: Unicode's default-ignorable code points (zero-width
/// spaces and joiners, fillers, variation selectors, ...), the ones names are compared without.
/// And it must hold no bidirectional embedding, override or isolate (U+202A-U+202E,
/// U+2066-U+2069), which would reorder the text shown after it.
fn validate_display_name(name: &str) -> AppResult<()> {
    if let Some(bad) =
        name.chars().find(|c| matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
    {
        return Err(AppError::Invalid(BadInput::UsernameBidirectional(bad)));
    }
    if name.chars().all(|c| c.is_whitespace() || is_default_ignorable(c)) {
        return Err(AppError::Invalid(BadInput::UsernameInvisible));
    }
    Ok(())
}

/// C1 create: the caller's own user (one per principal), whose id is their principal id, with
/// a username nobody else has. Claims the name first (see [`usernames`]), then creates the
/// user: a crash in between leaves a claim that a retry reuses and that anyone else may take
/// once it is old.
///
/// A create answered conflict whose user has the very name asked is answered as created. That
/// user is this request's own write, when the SDK sent it again after its answer was lost (or
/// the same request sent twice). Nothing is written twice.
pub async fn create_user(state: &AppState, caller: &Caller, username: String) -> AppResult<User> {
    let user = model::new_user(caller.id.clone(), valid_username(username)?);
    let once = Once::claimed(&state.store, caller, &["createUser", &user.username]).await?;
    if let Some(first) = &once
        && first.find(&state.store, Container::Users, &user.user_id).await?.is_some()
    {
        return get_user(state, &user.user_id).await;
    }
    while !usernames::claim(&state.store, &user.user_id, &user.username, None).await?.is_fresh() {}
    #[cfg(any(test, feature = "test-support"))]
    crate::test_support::crash::after(crate::test_support::crash::Step::Claimed)?;
    let create = WriteOp::Create { document: to_document(&user)? };
    match commit(
        &state.store,
        Container::Users,
        &user.user_id,
        once.as_ref(),
        &user.user_id,
        vec![create],
    )
    .await
    {
        Ok(Committed::Written) => Ok(user),
        Ok(Committed::Repeated(_)) => get_user(state, &user.user_id).await,
        Err(AppError::Store(StoreError::Conflict)) => {
            let existing = get_user(state, &user.user_id).await?;
            if existing.username == user.username {
                return Ok(existing);
            }
            if let Err(error) =
                usernames::abandon(&state.store, &user.user_id, &user.username).await
            {
                tracing::warn!(error = %crate::logging::with_causes(&error), user = user.user_id, "a claim made for nothing stays until it is old");
            }
            Err(AppError::Conflict(Clash::UserExists(user.id)))
        }
        Err(other) => Err(other),
    }
}

/// How often a rename starts again because the user changed between its read and its write (a
/// concurrent rename of the same user).
const MAX_RENAME_ATTEMPTS: usize = 8;

/// C1 edit: the three steps of [`usernames`]. Claim the new name, write the user (only if
/// unchanged since read), release the old name. Renaming to another form of one's own name
/// (other case) claims it again and releases nothing. The new name reaches the user's posts,
/// comments, likes and post copies through the change feed; `renamedAt` tells it that there may
/// be some to update.
pub async fn rename_user(
    state: &AppState,
    caller: &Caller,
    user_id: &str,
    username: String,
) -> AppResult<User> {
    caller.must_be(user_id, "rename this user")?;
    let username = valid_username(username)?;
    let store = &state.store;
    let once = Once::claimed(&state.store, caller, &["renameUser", user_id, &username]).await?;
    if let Some(first) = &once
        && first.find(store, Container::Users, user_id).await?.is_some()
    {
        return get_user(state, user_id).await;
    }
    for attempt in 0..MAX_RENAME_ATTEMPTS {
        let current = store
            .read_versioned::<User>(Container::Users, user_id, user_id)
            .await?
            .ok_or_else(|| user_not_found(user_id))?;
        let released = released_name(&current.item.username, &username);
        let (old_reservation, claim) = tokio::join!(
            async {
                match &released {
                    Some(old) => usernames::reservation_of(store, old).await,
                    None => Ok(None),
                }
            },
            usernames::claim(store, user_id, &username, released.clone()),
        );
        let (old_reservation, claim) = (old_reservation?, claim?);
        // A claim of one's own name (a retry, a change of case) may still carry a name an
        // earlier attempt gave up and stopped before releasing: released here too.
        let left_behind = match (&released, &claim.releases) {
            (None, Some(earlier)) => usernames::reservation_of(store, earlier).await?,
            _ => None,
        };
        #[cfg(any(test, feature = "test-support"))]
        crate::test_support::crash::after(crate::test_support::crash::Step::Claimed)?;
        if !claim.is_fresh() {
            continue;
        }
        let user = model::renamed_user(user_id.to_owned(), username.clone(), model::now());
        let replace = WriteOp::Replace {
            id: user_id.to_owned(),
            document: to_document(&user)?,
            if_match: Some(current.etag),
        };
        match commit(store, Container::Users, user_id, once.as_ref(), user_id, vec![replace]).await
        {
            Ok(Committed::Written) => {}
            Ok(Committed::Repeated(_)) => return get_user(state, user_id).await,
            // Renamed meanwhile by another request: start again from what it wrote.
            Err(AppError::Store(StoreError::PreconditionFailed)) => {
                tokio::time::sleep(retry_pause(attempt)).await;
                continue;
            }
            Err(AppError::Store(StoreError::NotFound)) => return Err(user_not_found(user_id)),
            Err(other) => return Err(other),
        }
        state.users.invalidate(user_id);
        #[cfg(any(test, feature = "test-support"))]
        crate::test_support::crash::after(crate::test_support::crash::Step::UserWritten)?;
        for old in [old_reservation, left_behind].into_iter().flatten() {
            if let Err(error) = usernames::release(store, user_id, old).await {
                // The rename is done; UsersChangeFeed releases the old name.
                tracing::warn!(error = %crate::logging::with_causes(&error), user = user_id, "an old username is left for the change feed to release");
            }
        }
        #[cfg(any(test, feature = "test-support"))]
        crate::test_support::crash::after(crate::test_support::crash::Step::Released)?;
        return Ok(user);
    }
    Err(AppError::Busy(Contended::UserBeingRenamed))
}

/// Q1: one point read.
pub(crate) async fn get_user(state: &AppState, user_id: &str) -> AppResult<User> {
    state
        .store
        .read::<User>(Container::Users, user_id, user_id)
        .await?
        .ok_or_else(|| user_not_found(user_id))
}

/// Q1 as the user page shows it: kept by the instance and checked by the change log. The change
/// feed (`UsersChangeFeed`) names the user in that log after each change
/// (`x-cosmos-operations: 0` while nothing changed; one point read where the log cannot say).
/// With `fresh` it is read anew: the user viewing their own page sees their rename at once,
/// whichever instance answers.
pub(crate) async fn shown_user(state: &AppState, user_id: &str, fresh: bool) -> AppResult<User> {
    const PER_USER: usize = 300;
    let kept = state
        .users
        .users
        .page_with(
            user_id.to_owned(),
            &change_log::user(user_id),
            fresh,
            state.changes.for_pages(state),
            |_| async {
                let user = get_user(state, user_id).await?;
                let weight = PER_USER + user.username.len() + user.user_id.len();
                Ok(LogCheckedRead::new(user, weight))
            },
        )
        .await?;
    Ok(kept.value.clone())
}

/// The most users one instance keeps, and the bytes they may hold (each a few hundred).
const MAX_KEPT_USERS: usize = 4096;
const MAX_KEPT_USER_BYTES: usize = 2 * 1024 * 1024;

/// The users one instance keeps for their pages.
pub(crate) struct UserCache {
    users: KeptPages<String, LogCheckedRead<User>>,
}

impl Default for UserCache {
    fn default() -> Self {
        UserCache { users: KeptPages::within(MAX_KEPT_USERS, MAX_KEPT_USER_BYTES) }
    }
}

impl UserCache {
    /// Forgets the user: they changed.
    pub(crate) fn invalidate(&self, user_id: &str) {
        self.users.forget(|kept| kept == user_id);
    }
}

/// Q3, newest first: one query on the user's own partition of `users`, which holds the short
/// copies of their posts. It is kept and checked by the user's posts mark
/// ([`super::post_lists`]), and not found when the user does not exist ([`OwnerKnown`]). The
/// user page reads the user itself (Q1) alongside, so it passes `OwnerKnown::Yes`.
pub(crate) async fn posts_of(
    state: &AppState,
    user_id: &str,
    params: &ListParams,
    known: OwnerKnown,
) -> AppResult<Arc<MarkedPage<ListPage<Post>>>> {
    let found = state.user_posts.page(state, user_id, params).await?;
    if known == OwnerKnown::No && params.continuation().is_none() && found.items.is_empty() {
        get_user(state, user_id).await?;
    }
    Ok(found)
}

/// A page of the caller's drafts, newest first: one query on their own partition of `users`,
/// where the change feed copies every post, drafts with their `status`. Read anew each time
/// (its one reader, the author, has always just written), so not kept.
pub(crate) async fn drafts_of(
    state: &AppState,
    caller: &Caller,
    user_id: &str,
    params: &ListParams,
) -> AppResult<ListPage<Post>> {
    caller.must_be(user_id, "read these drafts")?;
    const LIST: &str = "drafts";
    let page = params.page_request(&state.tokens, LIST, user_id, DEFAULT_PAGE_SIZE)?;
    let found = state
        .store
        .query_page::<Post>(Container::Users, user_id, queries::user_drafts(), page)
        .await?;
    let continuation_token = wrap_token(&state.tokens, found.continuation, LIST, user_id);
    Ok(ListPage { items: found.items, continuation_token })
}

/// Writes the user's posts mark again, forgetting this instance's pages of their posts; answers
/// what the change log calls those pages.
pub(crate) async fn mark_user_posts_changed(state: &AppState, user_id: &str) -> AppResult<String> {
    state.user_posts.mark_changed(state, user_id).await
}

pub(crate) fn user_not_found(user_id: &str) -> AppError {
    AppError::NotFound(Missing::User(user_id.to_owned()))
}
