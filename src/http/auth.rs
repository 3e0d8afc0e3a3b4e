//! Who is calling: reads are public; every write acts as an authenticated caller, and may touch
//! only what that caller owns.
//!
//! A user IS a principal: C1 creates the caller's own user, whose id is the caller's principal
//! id (the Entra ID object id with App Service Authentication), so "is this the caller's?" is an
//! equality of ids and needs no lookup.

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;

use super::AppState;
use super::extract::validate_id;
use crate::config::AuthMode;
use crate::error::ApiError;

/// The header App Service Authentication sets to the signed-in caller's id.
pub const PLATFORM_PRINCIPAL: &str = "x-ms-client-principal-id";
/// The header the local development scheme reads the caller from.
pub const DEVELOPMENT_USER: &str = "x-dev-user";

/// The authenticated caller of a write: their principal id, which is also their user id.
pub struct Caller(pub String);

impl Caller {
    /// 403 unless `owner` is the caller.
    pub fn must_be(&self, owner: &str, what: &str) -> Result<(), ApiError> {
        if self.0 == owner {
            Ok(())
        } else {
            Err(ApiError::new(StatusCode::FORBIDDEN, format!("Only its owner may {what}; you are signed in as {:?}.", self.0)))
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let header = match state.auth {
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
            .ok_or_else(|| unauthorized(&format!("Sign in to write: the request carries no {header} header.")))?;
        validate_id(&principal)
            .map_err(|why| ApiError::new(StatusCode::FORBIDDEN, format!("Your principal id cannot be a user id: {why}")))?;
        Ok(Caller(principal))
    }
}

fn unauthorized(detail: &str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, detail)
}
