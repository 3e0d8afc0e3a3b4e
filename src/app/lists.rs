//! Paged lists: `?limit=` and `?continuationToken=` in, `{items, continuationToken}` out.
//!
//! The continuation token a client sees wraps the SDK's token with the list and partition it
//! belongs to. It is signed (HMAC-SHA256 with the instance's [`TokenKey`]). So a token passed
//! to another list, or edited, is refused with 400 before it reaches Cosmos.

use super::BadInput;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq as _;
use utoipa::{IntoParams, ToSchema};

use super::AppError;
use crate::cosmos::PageRequest;

/// The page size of Q3, Q4 and Q5 when `?limit=` is absent.
pub(crate) const DEFAULT_PAGE_SIZE: u32 = 25;
/// The page size of Q6 when `?limit=` is absent ("the x most recent posts").
pub(crate) const DEFAULT_FEED_SIZE: u32 = 10;
/// The largest page any list serves; the feed holds only 100 posts anyway.
pub(crate) const MAX_PAGE_SIZE: u32 = 100;
/// The longest continuation token accepted, as sent by a client.
const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// The query string of every list.
#[derive(Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListParams {
    /// Page size, 1 to 100 (default 25; 10 for the feed).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    limit: Option<String>,
    /// The `continuationToken` of the previous page of the same list, unchanged.
    #[param(max_length = 8192, pattern = "^[A-Za-z0-9_-]+$")]
    continuation_token: Option<String>,
}

/// Whether the caller of a list reads the list's owner (the post of Q4 and Q5, the user of Q3)
/// anyway, and so tells a missing owner itself. Each list reads one partition only, so an empty
/// first page cannot tell "nothing yet" from "no such owner": then, and only then, a list that
/// does not know pays one point read to tell (1 RU).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum OwnerKnown {
    Yes,
    No,
}

/// One page of a list, as answered to the client.
#[derive(Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListPage<T> {
    /// This page's items.
    pub items: Vec<T>,
    /// Where the next page starts (`None`: this is the last page); opaque to the caller, signed.
    pub continuation_token: Option<String>,
}

/// Which list a token was issued for, in which partition, and the signature that binds them.
#[derive(Serialize, Deserialize, PartialEq)]
struct Token {
    list: String,
    key: String,
    sdk: String,
    mac: String,
}

/// The key continuation tokens are signed with. Every instance that may serve the next page must
/// have the same one: `BLOG_TOKEN_KEY` (azd generates it once for a deployment). Without it, a random
/// key of this process: fine for one process (`cargo run`), not for several instances.
#[derive(Clone)]
pub(crate) struct TokenKey(azure_core::credentials::Secret);

impl TokenKey {
    /// The key that signs continuation tokens: `setting`'s bytes as they are when given (any
    /// text of at least 16 characters, `Config` checks), else 32 random bytes for this process.
    /// (Held base64-encoded: the form the SDK's HMAC takes its key in.)
    pub(crate) fn new(setting: Option<&str>) -> TokenKey {
        let bytes = match setting {
            Some(text) => text.as_bytes().to_vec(),
            None => uuid::Uuid::new_v4()
                .as_bytes()
                .iter()
                .chain(uuid::Uuid::new_v4().as_bytes())
                .copied()
                .collect(),
        };
        TokenKey(azure_core::credentials::Secret::new(
            base64::engine::general_purpose::STANDARD.encode(bytes),
        ))
    }

    fn sign(&self, list: &str, key: &str, sdk: &str) -> String {
        // Lengths first, so that no two (list, key, sdk) share a signed text.
        let text = format!("{}:{list}{}:{key}{sdk}", list.len(), key.len());
        let signature = azure_core::hmac::hmac_sha256(&text, &self.0)
            .expect("the key is base64 by construction");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(signature)
            .expect("the signature is base64");
        URL_SAFE_NO_PAD.encode(bytes)
    }
}

impl ListParams {
    /// The page of default size that `continuation_token` (a token this list issued) starts.
    pub(crate) fn continuing(continuation_token: Option<String>) -> ListParams {
        ListParams { limit: None, continuation_token }
    }

    /// The `continuationToken` as given, unchecked.
    pub(crate) fn continuation(&self) -> Option<&str> {
        self.continuation_token.as_deref()
    }

    /// The `limit` as given, to carry it into the link to the next page.
    pub(crate) fn limit(&self) -> Option<&str> {
        self.limit.as_deref()
    }

    /// The page to read for the list named `list` in partition `key`.
    pub(crate) fn page_request(
        &self,
        tokens: &TokenKey,
        list: &str,
        key: &str,
        default_size: u32,
    ) -> Result<PageRequest, AppError> {
        let size = match &self.limit {
            None => default_size,
            // Digits only: Rust's parse would also take a sign ("+5"), which the OpenAPI
            // description's integer does not allow.
            Some(text) => match text.parse::<u32>() {
                Ok(n)
                    if (1..=MAX_PAGE_SIZE).contains(&n)
                        && text.bytes().all(|byte| byte.is_ascii_digit()) =>
                {
                    n
                }
                // (Under the Functions host a repeated `limit` arrives as one value with commas.)
                _ if text.contains(',') => {
                    return Err(AppError::Invalid(BadInput::LimitTwice(text.to_owned())));
                }
                _ => {
                    return Err(AppError::Invalid(BadInput::Limit(text.to_owned())));
                }
            },
        };
        let continuation = self
            .continuation_token
            .as_deref()
            .map(|token| unwrap_token(tokens, token, list, key))
            .transpose()?;
        Ok(PageRequest { size, continuation })
    }
}

/// Turns the SDK's continuation for `list` in partition `key` into the client's token.
pub(crate) fn wrap_token(
    tokens: &TokenKey,
    sdk: Option<String>,
    list: &str,
    key: &str,
) -> Option<String> {
    let sdk = sdk?;
    let mac = tokens.sign(list, key, &sdk);
    let token = Token { list: list.to_owned(), key: key.to_owned(), sdk, mac };
    Some(URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).expect("a token serializes")))
}

pub(crate) fn unwrap_token(
    tokens: &TokenKey,
    text: &str,
    list: &str,
    key: &str,
) -> Result<String, AppError> {
    let invalid = || AppError::Invalid(BadInput::ContinuationToken);
    if text.is_empty() || text.len() > MAX_TOKEN_BYTES {
        return Err(invalid());
    }
    let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| invalid())?;
    let token: Token = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    // Compared in a time that does not depend on where the two first differ. A comparison that
    // stops at the first differing byte would tell a forger, by its time, how much of a forged
    // MAC is right. `subtle` (already built for the SDK's HMAC) says so of `ct_eq`. Slices of
    // different lengths are unequal at once, and a MAC's length is no secret.
    if !bool::from(
        token.mac.as_bytes().ct_eq(tokens.sign(&token.list, &token.key, &token.sdk).as_bytes()),
    ) {
        return Err(invalid());
    }
    if token.list != list || token.key != key {
        return Err(AppError::Invalid(BadInput::TokenOfAnotherList {
            list: token.list,
            key: token.key,
        }));
    }
    Ok(token.sdk)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A token whose MAC is cut short, or differs in its last byte only, is not this list's.
    #[test]
    fn a_mac_must_be_exact() {
        let keys = TokenKey::new(Some("a key shared by every instance"));
        let token = wrap_token(&keys, Some("sdk-token".into()), "comments", "p1").unwrap();
        let parsed: Token =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&token).unwrap()).unwrap();
        let mut last_changed = parsed.mac.clone().into_bytes();
        let last = last_changed.len() - 1;
        last_changed[last] = if last_changed[last] == b'A' { b'B' } else { b'A' };
        for mac in [
            parsed.mac[..parsed.mac.len() - 1].to_owned(),
            String::from_utf8(last_changed).unwrap(),
            String::new(),
        ] {
            let forged = Token {
                mac,
                ..serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&token).unwrap()).unwrap()
            };
            let forged = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap());
            assert!(params(None, Some(&forged)).page_request(&keys, "comments", "p1", 25).is_err());
        }
    }

    fn params(limit: Option<&str>, token: Option<&str>) -> ListParams {
        ListParams { limit: limit.map(Into::into), continuation_token: token.map(Into::into) }
    }

    #[test]
    fn a_token_round_trips_only_to_its_own_list() {
        let keys = TokenKey::new(Some("a key shared by every instance"));
        let token = wrap_token(&keys, Some("sdk-token".into()), "comments", "p1").unwrap();
        let page = params(None, Some(&token)).page_request(&keys, "comments", "p1", 25).unwrap();
        assert_eq!(page.continuation.as_deref(), Some("sdk-token"));
        assert!(params(None, Some(&token)).page_request(&keys, "likes", "p1", 25).is_err());
        assert!(params(None, Some(&token)).page_request(&keys, "comments", "p2", 25).is_err());
        assert!(params(None, Some("garbage!")).page_request(&keys, "comments", "p1", 25).is_err());
        assert_eq!(wrap_token(&keys, None, "comments", "p1"), None);

        // Rewritten to name another list or partition (the wrapper is readable JSON): refused.
        let mut forged: Token =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&token).unwrap()).unwrap();
        forged.key = "p2".into();
        let forged = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap());
        assert!(params(None, Some(&forged)).page_request(&keys, "comments", "p2", 25).is_err());
        // Another instance with the same key takes it; one with another key does not.
        let same = TokenKey::new(Some("a key shared by every instance"));
        assert!(params(None, Some(&token)).page_request(&same, "comments", "p1", 25).is_ok());
        assert!(
            params(None, Some(&token))
                .page_request(&TokenKey::new(None), "comments", "p1", 25)
                .is_err()
        );
    }

    #[test]
    fn limit_is_bounded() {
        assert_eq!(
            params(None, None).page_request(&TokenKey::new(None), "feed", "post", 10).unwrap().size,
            10
        );
        assert_eq!(
            params(Some("100"), None)
                .page_request(&TokenKey::new(None), "feed", "post", 10)
                .unwrap()
                .size,
            100
        );
        for bad in ["0", "101", "-1", "+5", "05x", "ten", "", "5,6"] {
            assert!(
                params(Some(bad), None)
                    .page_request(&TokenKey::new(None), "feed", "post", 10)
                    .is_err(),
                "{bad}"
            );
        }
    }
}
