//! C1 (create, edit user), Q1 (get user) and Q3 (a user's posts). Usernames are unique: the
//! steps that keep them so are in [`usernames`].

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use serde::Deserialize;
use utoipa::ToSchema;

use super::AppState;
use super::auth::Caller;
use super::extract::{Id, JsonBody, QueryParams, validate_text};
use super::lists::{DEFAULT_PAGE_SIZE, ListPage, ListParams, OwnerKnown, wrap_token};
use super::usernames;
use crate::cosmos::{Container, StoreError, queries, retry_pause};
use crate::error::{ApiError, ApiResult, PROBLEM, ProblemDetails, ReadProblems, WriteProblems};
use crate::model::usernames::{is_default_ignorable, released_name};
use crate::model::{self, MAX_USERNAME_CHARS, Post, User};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserBody {
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F\\u202A-\\u202E\\u2066-\\u2069]*[^\\s\\u0000-\\u001F\\u007F-\\u009F\\u202A-\\u202E\\u2066-\\u2069\\u00AD\\u034F\\u061C\\u115F\\u1160\\u17B4\\u17B5\\u180B-\\u180F\\u200B-\\u200F\\u2060-\\u206F\\u3164\\uFE00-\\uFE0F\\uFEFF\\uFFA0\\uFFF0-\\uFFF8][^\\u0000-\\u001F\\u007F-\\u009F\\u202A-\\u202E\\u2066-\\u2069]*$"
    )]
    username: String,
}

impl UserBody {
    fn username(self) -> ApiResult<String> {
        validate_text("username", &self.username, MAX_USERNAME_CHARS, false)?;
        validate_display_name(&self.username)?;
        Ok(self.username)
    }
}

/// A username is shown beside everything its user writes, so it must show as what it is: not
/// only invisible characters (Unicode's default-ignorable code points: zero-width spaces and
/// joiners, fillers, variation selectors, ...; the ones names are compared without), and no
/// bidirectional embedding, override or isolate (U+202A-U+202E, U+2066-U+2069), which would
/// reorder the text shown after it.
fn validate_display_name(name: &str) -> ApiResult<()> {
    if let Some(bad) = name.chars().find(|c| matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')) {
        return Err(ApiError::bad_request(format!(
            "`username` must not contain the bidirectional control {bad:?}: it would reorder the text around the name."
        )));
    }
    if name.chars().all(|c| c.is_whitespace() || is_default_ignorable(c)) {
        return Err(ApiError::bad_request("`username` must contain a visible character."));
    }
    Ok(())
}

/// C1 create: `POST /api/users`: the caller's own user (one per principal; 409 for a second),
/// with a username nobody else has (409 when taken).
#[utoipa::path(
    post,
    path = "/api/users",
    tag = "users",
    request_body = UserBody,
    responses(
        (status = 201, description = "C1: the user, created", body = User),
        (status = 409, description = "The caller already has a user, or another user has this username (compared ignoring case and Unicode form)", body = ProblemDetails, content_type = PROBLEM),
        WriteProblems,
    ),
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<UserBody>,
) -> ApiResult<impl IntoResponse> {
    let user = create_user(&state, &caller, body.username).await?;
    let location = format!("/api/users/{}", user.id);
    Ok((StatusCode::CREATED, [(header::LOCATION, location)], Json(user)))
}

/// C1 create, for the API and the pages: the caller's own user, whose id is their principal id.
/// Claims the name first (see [`usernames`]), then creates the user: a crash in between leaves
/// a claim that a retry reuses and that anyone else may take once it is old.
pub async fn create_user(state: &AppState, caller: &Caller, username: String) -> ApiResult<User> {
    let user = model::new_user(caller.0.clone(), UserBody { username }.username()?);
    while !usernames::claim(&state.store, &user.user_id, &user.username, None).await?.is_fresh() {}
    #[cfg(test)]
    usernames::crash::after(usernames::crash::Step::Claimed)?;
    match state.store.create(Container::Users, &user.user_id, &user).await {
        Ok(()) => Ok(user),
        Err(StoreError::Conflict) => {
            if let Err(error) = usernames::abandon(&state.store, &user.user_id, &user.username).await {
                tracing::warn!(%error, user = user.user_id, "a claim made for nothing stays until it is old");
            }
            Err(ApiError::conflict(format!("You already have a user, {:?}; rename it with PUT instead.", user.id)))
        }
        Err(other) => Err(other.into()),
    }
}

/// C1 edit: `PUT /api/users/{userId}`. The new name reaches the user's posts, comments, likes
/// and post copies through the change feed; `renamedAt` tells it that there may be some to
/// update.
#[utoipa::path(
    put,
    path = "/api/users/{userId}",
    tag = "users",
    request_body = UserBody,
    params(("userId" = String, Path, description = "The user's id", max_length = 255, pattern = "^(?!\\.{1,2}$)[!\"$&-.0->@-\\[\\]-~]+$")),
    responses(
        (status = 200, description = "C1: the user, renamed", body = User),
        (status = 404, description = "No such user", body = ProblemDetails, content_type = PROBLEM),
        (status = 409, description = "Another user has this username (compared ignoring case and Unicode form)", body = ProblemDetails, content_type = PROBLEM),
        WriteProblems,
    ),
)]
pub async fn edit(
    State(state): State<AppState>,
    caller: Caller,
    Id(user_id): Id,
    JsonBody(body): JsonBody<UserBody>,
) -> ApiResult<Json<User>> {
    rename_user(&state, &caller, &user_id, body.username).await.map(Json)
}

/// How often a rename starts again because the user changed between its read and its write (a
/// concurrent rename of the same user).
const MAX_RENAME_ATTEMPTS: usize = 8;

/// C1 edit, for the API and the pages: the three steps of [`usernames`]. Claim the new name,
/// write the user (only if unchanged since read), release the old name. Renaming to another
/// form of one's own name (other case) claims it again and releases nothing.
pub async fn rename_user(state: &AppState, caller: &Caller, user_id: &str, username: String) -> ApiResult<User> {
    caller.must_be(user_id, "rename this user")?;
    let username = UserBody { username }.username()?;
    let store = &state.store;
    for attempt in 0..MAX_RENAME_ATTEMPTS {
        let current =
            store.read_versioned::<User>(Container::Users, user_id, user_id).await?.ok_or_else(|| user_not_found(user_id))?;
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
        #[cfg(test)]
        usernames::crash::after(usernames::crash::Step::Claimed)?;
        if !claim.is_fresh() {
            continue;
        }
        let user = model::renamed_user(user_id.to_owned(), username.clone(), model::now());
        match store.replace(Container::Users, user_id, user_id, &user, Some(&current.etag)).await {
            Ok(()) => {}
            // Renamed meanwhile by another request: start again from what it wrote.
            Err(StoreError::PreconditionFailed) => {
                tokio::time::sleep(retry_pause(attempt)).await;
                continue;
            }
            Err(StoreError::NotFound) => return Err(user_not_found(user_id)),
            Err(other) => return Err(other.into()),
        }
        #[cfg(test)]
        usernames::crash::after(usernames::crash::Step::UserWritten)?;
        for old in [old_reservation, left_behind].into_iter().flatten() {
            if let Err(error) = usernames::release(store, user_id, old).await {
                // The rename is done; UsersChangeFeed releases the old name.
                tracing::warn!(%error, user = user_id, "an old username is left for the change feed to release");
            }
        }
        #[cfg(test)]
        usernames::crash::after(usernames::crash::Step::Released)?;
        return Ok(user);
    }
    Err(ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "The user is being renamed by other requests right now; retry in a moment.",
    ))
}

/// Q1: `GET /api/users/{userId}`, one point read.
#[utoipa::path(
    get,
    path = "/api/users/{userId}",
    tag = "users",
    params(("userId" = String, Path, description = "The user's id", max_length = 255, pattern = "^(?!\\.{1,2}$)[!\"$&-.0->@-\\[\\]-~]+$")),
    responses(
        (status = 200, description = "Q1: the user", body = User),
        (status = 404, description = "No such user", body = ProblemDetails, content_type = PROBLEM),
        ReadProblems,
    ),
)]
pub async fn get(State(state): State<AppState>, Id(user_id): Id) -> ApiResult<Json<User>> {
    get_user(&state, &user_id).await.map(Json)
}

/// Q1, for the API and the pages.
pub async fn get_user(state: &AppState, user_id: &str) -> ApiResult<User> {
    state.store.read::<User>(Container::Users, user_id, user_id).await?.ok_or_else(|| user_not_found(user_id))
}

/// Who the caller is, as the handler sees them.
#[derive(serde::Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Me {
    /// The caller's principal id, which is their user's id (C1 creates it with this id).
    pub user_id: String,
}

/// `GET /api/me`: the signed-in caller's user id, no store operation. A user IS a principal, and
/// a client with a token knows its token, not the id the platform derives from it (App Service
/// Authentication's `X-MS-CLIENT-PRINCIPAL-ID`): this says which `userId` its writes must name,
/// and where its user is (`GET /api/users/{userId}`, 404 until C1 created it).
#[utoipa::path(
    get,
    path = "/api/me",
    tag = "users",
    responses(
        (status = 200, description = "The caller's user id", body = Me),
        (status = 401, description = "Nobody is signed in", body = ProblemDetails, content_type = PROBLEM),
        (status = 403, description = "The caller's principal id cannot be a user id", body = ProblemDetails, content_type = PROBLEM),
        ReadProblems,
    ),
)]
pub async fn me(caller: Caller, QueryParams(NoParams {}): QueryParams<NoParams>) -> Json<Me> {
    Json(Me { user_id: caller.0 })
}

/// The query string of a request that takes no parameters: any is refused, as everywhere in the API.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// Q3: `GET /api/users/{userId}/posts`, newest first: one query on the user's own partition of
/// `users`, which holds the short copies of their posts.
#[utoipa::path(
    get,
    path = "/api/users/{userId}/posts",
    tag = "users",
    params(("userId" = String, Path, description = "The user's id", max_length = 255, pattern = "^(?!\\.{1,2}$)[!\"$&-.0->@-\\[\\]-~]+$"), ListParams),
    responses(
        (status = 200, description = "Q3: the user's short posts, newest first", body = ListPage<Post>),
        (status = 404, description = "No such user", body = ProblemDetails, content_type = PROBLEM),
        ReadProblems,
    ),
)]
pub async fn list_posts(
    State(state): State<AppState>,
    Id(user_id): Id,
    QueryParams(params): QueryParams<ListParams>,
) -> ApiResult<Json<ListPage<Post>>> {
    posts_of(&state, &user_id, &params, OwnerKnown::No).await.map(Json)
}

/// Q3, for the API and the pages; 404 when the user does not exist ([`OwnerKnown`]). The user
/// page reads the user itself (Q1) alongside, so it passes `OwnerKnown::Yes`.
pub async fn posts_of(state: &AppState, user_id: &str, params: &ListParams, known: OwnerKnown) -> ApiResult<ListPage<Post>> {
    const LIST: &str = "userPosts";
    let page = params.page_request(&state.tokens, LIST, user_id, DEFAULT_PAGE_SIZE)?;
    let first_page = page.continuation.is_none();
    let found = state.store.query_page::<Post>(Container::Users, user_id, queries::user_posts(), page).await?;
    if known == OwnerKnown::No && first_page && found.items.is_empty() {
        get_user(state, user_id).await?;
    }
    Ok(ListPage { items: found.items, continuation_token: wrap_token(&state.tokens, found.continuation, LIST, user_id) })
}

pub fn user_not_found(user_id: &str) -> ApiError {
    ApiError::not_found(format!("There is no user with id {user_id:?}."))
}
