//! Paged lists: `?limit=` and `?continuationToken=` in, `{items, continuationToken}` out.
//!
//! The continuation token a client sees wraps the SDK's token with the list and partition it
//! belongs to, so a token passed to another list, or edited, is refused with 400 before it
//! reaches Cosmos.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::cosmos::PageRequest;
use crate::error::ApiError;

/// The page size of Q3, Q4 and Q5 when `?limit=` is absent.
pub const DEFAULT_PAGE_SIZE: u32 = 25;
/// The page size of Q6 when `?limit=` is absent ("the x most recent posts").
pub const DEFAULT_FEED_SIZE: u32 = 10;
/// The largest page any list serves; the feed holds only 100 posts anyway.
pub const MAX_PAGE_SIZE: u32 = 100;
/// The longest continuation token accepted, as sent by a client.
const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// The query string of every list.
#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Page size, 1 to 100 (default 25; 10 for the feed).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    limit: Option<String>,
    /// The `continuationToken` of the previous page of the same list, unchanged.
    #[param(max_length = 8192, pattern = "^[A-Za-z0-9_-]+$")]
    continuation_token: Option<String>,
}

/// One page of a list, as answered to the client.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListPage<T> {
    pub items: Vec<T>,
    pub continuation_token: Option<String>,
}

/// Which list a token was issued for, and in which partition.
#[derive(Serialize, Deserialize, PartialEq)]
struct Token {
    list: String,
    key: String,
    sdk: String,
}

impl ListParams {
    /// The page to read for the list named `list` in partition `key`.
    pub fn page_request(&self, list: &str, key: &str, default_size: u32) -> Result<PageRequest, ApiError> {
        let size = match &self.limit {
            None => default_size,
            // Digits only: Rust's parse would also take a sign ("+5"), which the OpenAPI
            // description's integer does not allow.
            Some(text) => match text.parse::<u32>() {
                Ok(n) if (1..=MAX_PAGE_SIZE).contains(&n) && text.bytes().all(|byte| byte.is_ascii_digit()) => n,
                // (Under the Functions host a repeated `limit` arrives as one value with commas.)
                _ if text.contains(',') => {
                    return Err(ApiError::bad_request(format!(
                        "`limit` must be one whole number from 1 to {MAX_PAGE_SIZE}; it was {text:?}: give it once."
                    )));
                }
                _ => {
                    return Err(ApiError::bad_request(format!(
                        "`limit` must be a whole number from 1 to {MAX_PAGE_SIZE}; it was {text:?}."
                    )));
                }
            },
        };
        let continuation = self.continuation_token.as_deref().map(|token| unwrap_token(token, list, key)).transpose()?;
        Ok(PageRequest { size, continuation })
    }
}

/// Turns the SDK's continuation for `list` in partition `key` into the client's token.
pub fn wrap_token(sdk: Option<String>, list: &str, key: &str) -> Option<String> {
    let token = Token { list: list.to_owned(), key: key.to_owned(), sdk: sdk? };
    Some(URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).expect("a token serializes")))
}

fn unwrap_token(text: &str, list: &str, key: &str) -> Result<String, ApiError> {
    let invalid = || {
        ApiError::bad_request(
            "`continuationToken` is not a token this list issued; pass back the `continuationToken` of the previous page unchanged.",
        )
    };
    if text.is_empty() || text.len() > MAX_TOKEN_BYTES {
        return Err(invalid());
    }
    let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| invalid())?;
    let token: Token = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    if token.list != list || token.key != key {
        return Err(ApiError::bad_request(format!(
            "`continuationToken` was issued for another list; it belongs to {} of {:?}.",
            token.list, token.key
        )));
    }
    Ok(token.sdk)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(limit: Option<&str>, token: Option<&str>) -> ListParams {
        ListParams { limit: limit.map(Into::into), continuation_token: token.map(Into::into) }
    }

    #[test]
    fn a_token_round_trips_only_to_its_own_list() {
        let token = wrap_token(Some("sdk-token".into()), "comments", "p1").unwrap();
        let page = params(None, Some(&token)).page_request("comments", "p1", 25).unwrap();
        assert_eq!(page.continuation.as_deref(), Some("sdk-token"));
        assert!(params(None, Some(&token)).page_request("likes", "p1", 25).is_err());
        assert!(params(None, Some(&token)).page_request("comments", "p2", 25).is_err());
        assert!(params(None, Some("garbage!")).page_request("comments", "p1", 25).is_err());
        assert_eq!(wrap_token(None, "comments", "p1"), None);
    }

    #[test]
    fn limit_is_bounded() {
        assert_eq!(params(None, None).page_request("feed", "post", 10).unwrap().size, 10);
        assert_eq!(params(Some("100"), None).page_request("feed", "post", 10).unwrap().size, 100);
        for bad in ["0", "101", "-1", "+5", "05x", "ten", "", "5,6"] {
            assert!(params(Some(bad), None).page_request("feed", "post", 10).is_err(), "{bad}");
        }
    }
}
