//! Who is calling: reads are public; every write acts as an authenticated caller, and may touch
//! only what that caller owns.
//!
//! A user IS a principal: C1 creates the caller's own user, whose id is the caller's principal
//! id (the Entra ID object id with App Service Authentication), so "is this the caller's?" is an
//! equality of ids and needs no lookup.

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;

use super::error::ApiError;
use crate::app::idempotency::IdempotencyKey;
use crate::app::{AppState, Caller};
use crate::config::AuthMode;
use crate::model::validate_id;

/// The header App Service Authentication sets to the signed-in caller's id.
pub(crate) const PLATFORM_PRINCIPAL: &str = "x-ms-client-principal-id";
/// The header the local development scheme reads the caller from (development builds only).
#[cfg(feature = "embedded")]
pub(crate) const DEVELOPMENT_USER: &str = "x-dev-user";

/// The cookie the development sign-in form sets: the browser's stand-in for `x-dev-user`. Read
/// by the pages only (the JSON API keeps reading the header), and only in development builds.
#[cfg(feature = "embedded")]
pub(crate) const DEVELOPMENT_COOKIE: &str = "blog_dev_user";

/// The header App Service Authentication sets to the signed-in caller's name for people: an
/// email address or user principal name ("X-MS-CLIENT-PRINCIPAL-NAME", in "Work with user
/// identities in Azure App Service authentication").
pub(crate) const PLATFORM_PRINCIPAL_NAME: &str = "x-ms-client-principal-name";

/// Who is signed in: their principal id (their user id), and the name the pages show them as.
#[derive(Clone, Debug)]
pub(crate) struct SignedIn {
    /// The signed-in user's id: the principal's object id, or the development name.
    pub id: String,
    /// The identity provider's name for them on Azure; locally, the id they signed in as. Not
    /// their username on the blog, which would cost a read on every page they view.
    pub name: String,
}

/// Who is signed in on a page request, if anyone: App Service Authentication's headers on Azure,
/// the development cookie under `BLOG_AUTH=development`. An id that could not be a user id counts
/// as nobody.
pub(crate) fn page_viewer(parts: &Parts, mode: AuthMode) -> Option<SignedIn> {
    let header =
        |name: &str| parts.headers.get(name).and_then(|value| value.to_str().ok()).map(str::trim);
    let (id, name) = match mode {
        AuthMode::None => return None,
        AuthMode::Platform => (header(PLATFORM_PRINCIPAL)?, header(PLATFORM_PRINCIPAL_NAME)),
        #[cfg(feature = "embedded")]
        AuthMode::Development => (cookie(&parts.headers, DEVELOPMENT_COOKIE)?, None),
    };
    validate_id(id).ok()?;
    let name = name.filter(|name| !name.is_empty()).unwrap_or(id);
    Some(SignedIn { id: id.to_owned(), name: name.to_owned() })
}

/// The value of the cookie `name` the request carries, if it carries one.
pub(crate) fn cookie<'a>(headers: &'a axum::http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|cookies| cookies.split(';'))
        .filter_map(|cookie| cookie.trim().split_once('='))
        .find(|(found, _)| *found == name)
        .map(|(_, value)| value)
}

/// The header a client sends with a write to make it once (draft-ietf-httpapi-idempotency-key-header).
pub(crate) const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The authenticated caller of a write: their principal id, which is also their user id.
impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let principal = principal(parts, state.auth)?;
        // A write is counted against the caller's limit; a read that asks who the caller is
        // (`GET /api/me`) is not. Its key makes it once (`app::idempotency`).
        let caller = Caller::new(principal);
        if parts.method.is_safe() {
            return Ok(caller);
        }
        caller.count_write(state)?;
        let key = match parts.headers.get(IDEMPOTENCY_KEY) {
            Some(value) => Some(IdempotencyKey::parse(value.to_str().unwrap_or("\u{fffd}"))?),
            None => None,
        };
        Ok(caller.with_key(key))
    }
}

/// Who reads, where anyone may: the signed-in principal, or nobody (`None`). Never refused: a
/// read without an identity the sign-in scheme vouches for is anonymous, and shown only what
/// everyone is.
pub(crate) struct Reader(pub Option<String>);

impl FromRequestParts<AppState> for Reader {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, std::convert::Infallible> {
        Ok(Reader(principal(parts, state.auth).ok()))
    }
}

/// The API caller's principal id, from the header the sign-in scheme vouches for: 401 without
/// one, 403 for one that cannot be a user id. Read from the request's head alone, so the front
/// door asks it before it reads a write's body.
pub(crate) fn principal(parts: &Parts, mode: AuthMode) -> Result<String, ApiError> {
    let header = match mode {
        AuthMode::None => {
            return Err(unauthorized(
                "Writes need a signed-in caller, and this handler has no authentication configured \
                 (App Service Authentication on Azure; BLOG_AUTH=development locally).",
            ));
        }
        AuthMode::Platform => PLATFORM_PRINCIPAL,
        #[cfg(feature = "embedded")]
        AuthMode::Development => DEVELOPMENT_USER,
    };
    let principal = parts
        .headers
        .get(header)
        .map(|value| value.to_str().map(str::to_owned))
        .transpose()
        .map_err(|_| unauthorized("The caller's identity header is not valid text."))?
        .ok_or_else(|| {
            unauthorized(&format!("Sign in to write: the request carries no {header} header."))
        })?;
    validate_id(&principal).map_err(|why| {
        ApiError::new(
            StatusCode::FORBIDDEN,
            format!("Your principal id cannot be a user id: {why}"),
        )
    })?;
    Ok(principal)
}

/// A page's write from nobody signed in: 401.
pub(crate) fn sign_in_first() -> ApiError {
    unauthorized("Sign in to do this.")
}

fn unauthorized(detail: &str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, detail)
}
