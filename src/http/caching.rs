//! What a cache between the blog and its readers may keep: entity tags and 304s for every read
//! that has one, and the one rule ([`cache_control`]) that says who may keep an answer.
//!
//! A read that is the same for everyone who is not signed in (the pages such a reader sees, the
//! Atom feeds, the JSON API's reads) answers with a strong `ETag` of its bytes. It answers 304
//! to a matching `If-None-Match`. A shared cache (a CDN, Azure Front Door) may keep it for a
//! few seconds. One execution of the function then answers every reader of a popular page in
//! that time, instead of one each. Everything else (a signed-in reader's page, an answer that
//! sets a cookie, an answer to a request that carries a cookie or credentials) is the browser's
//! alone.

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::app::kept::Freshness;
use crate::app::kept::etag_of;

/// An anonymous answer's `Cache-Control`:
/// - `max-age=0`: a browser revalidates it every time (a 304 when unchanged, a few bytes), so a
///   reader who signs in, or writes, sees the page as it is now;
/// - `s-maxage`: a shared cache keeps it five seconds, the same order as the instance's own
///   one-second caches: a new post shows on the front page within seconds through a CDN;
/// - `stale-while-revalidate`: a CDN that supports it (Azure Front Door does not; it ignores
///   the directive) answers from its copy while it asks the blog again in the background.
///
/// Not `must-revalidate`: it would forbid the stale answer `stale-while-revalidate` allows.
pub(crate) const SHARED: &str = "public, max-age=0, s-maxage=5, stale-while-revalidate=30";

/// A signed-in reader's answer, or one that sets a cookie: kept by their browser only, and
/// revalidated on every use.
pub(crate) const PRIVATE: &str = "private, no-cache";

/// An answer no cache may keep: every error and redirect, and any answer whose route said
/// nothing of how long it may be kept. A cache applies its own rule to an answer that says
/// nothing: Azure Front Door keeps one for one to three days ("Caching with Azure Front Door").
/// So one overloaded second's 503 would otherwise be served for days.
pub(crate) const NOT_KEPT: &str = "no-store";

/// The request headers that carry who is signed in, or credentials: App Service
/// Authentication's (`x-ms-client-principal*`, which it sets for a signed-in caller, and the
/// bearer token an API client sends it), and the development scheme's.
const CREDENTIAL_HEADERS: &[&str] = &[
    "authorization",
    "x-ms-client-principal",
    super::auth::PLATFORM_PRINCIPAL,
    super::auth::PLATFORM_PRINCIPAL_NAME,
    #[cfg(feature = "embedded")]
    super::auth::DEVELOPMENT_USER,
];

/// Whether the answer to this request is the asker's alone: it carries credentials, or any
/// cookie. App Service Authentication's session cookie (`AppServiceAuthSession`) is how a
/// browser is signed in on Azure, and the development sign-in is a cookie. The post page reads
/// anew for a reader carrying the cookie a write set. What a cookie means to the answer is not
/// for a shared cache to guess, so no answer to a request with one is shared.
pub(crate) fn is_personal(request: &HeaderMap) -> bool {
    request.contains_key(header::COOKIE)
        || CREDENTIAL_HEADERS.iter().any(|name| request.contains_key(*name))
}

/// How fresh a read for this request must be. A personal one is read anew: a signed-in caller
/// may have just written, and sees their write whichever instance answers. Any other is read
/// from what the instance keeps, as a shared cache would keep the answer.
pub(crate) fn freshness(request: &HeaderMap) -> Freshness {
    if is_personal(request) { Freshness::Read } else { Freshness::Cached }
}

/// The rule, applied to every answer on its way out ([`super::front_door`]). An error, a
/// redirect, or an answer whose route chose nothing gets [`NOT_KEPT`]. Any other gets the
/// `Cache-Control` the route chose, unless the answer is personal (the request [`is_personal`],
/// or the answer sets a cookie). Then nothing in it may let a shared cache keep it.
///
/// Why here and not in each route: a shared cache (Azure Front Door among them) keys its copies
/// by URL alone and ignores `Vary: Cookie`, so one signed-in answer marked `public` under a
/// page's URL would be served to every anonymous reader of it, and a `Set-Cookie` kept with it
/// would sign them all in as that reader. One check on the way out holds every route to that,
/// including routes written later.
pub(crate) fn cache_control(personal_request: bool, response: &mut Response) {
    let status = response.status();
    let failed_or_elsewhere = status.is_client_error()
        || status.is_server_error()
        || (status.is_redirection() && status != axum::http::StatusCode::NOT_MODIFIED);
    let headers = response.headers_mut();
    if failed_or_elsewhere || !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(NOT_KEPT));
        return;
    }
    let sets_cookie = headers.contains_key(header::SET_COOKIE);
    if !(personal_request || sets_cookie) {
        return;
    }
    let chosen = headers
        .get(header::CACHE_CONTROL)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let kept = keep_private(chosen);
    if let Ok(value) = HeaderValue::from_str(&kept) {
        headers.insert(header::CACHE_CONTROL, value);
    } else {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(PRIVATE));
    }
}

/// `directives` with `private` and without anything addressed to a shared cache (`public`,
/// `s-maxage`, `proxy-revalidate`, `stale-while-revalidate`). What the browser may do is kept
/// as it was: an immutable stylesheet stays immutable for its reader. When nothing is left,
/// `private, no-cache`.
fn keep_private(directives: &str) -> String {
    let shared = ["public", "private", "s-maxage", "proxy-revalidate", "stale-while-revalidate"];
    let mut kept: Vec<&str> = vec!["private"];
    let mut no_store = false;
    for directive in directives.split(',').map(str::trim).filter(|directive| !directive.is_empty())
    {
        let name = directive.split('=').next().unwrap_or_default().trim();
        if shared.iter().any(|shared| name.eq_ignore_ascii_case(shared)) {
            continue;
        }
        no_store |= name.eq_ignore_ascii_case("no-store");
        kept.push(directive);
    }
    if kept.len() == 1 {
        return PRIVATE.to_owned();
    }
    if no_store {
        // Nothing keeps it at all: `private` adds nothing, and the route said exactly that.
        kept.remove(0);
    }
    kept.join(", ")
}

/// 304 Not Modified, without a body, when `If-None-Match` names `etag` (or `*`). A weak tag in
/// the request (`W/"…"`) matches by its opaque part: `If-None-Match` compares weakly (RFC 9110,
/// section 13.1.2).
pub(crate) fn if_none_match(headers: &HeaderMap, etag: &str) -> Option<Response> {
    let matches =
        headers.get_all(header::IF_NONE_MATCH).iter().filter_map(|value| value.to_str().ok()).any(
            |value| {
                value
                    .split(',')
                    .map(str::trim)
                    .any(|candidate| candidate == "*" || candidate.trim_start_matches("W/") == etag)
            },
        );
    matches.then(|| axum::http::StatusCode::NOT_MODIFIED.into_response())
}

/// `response` with its `ETag` and `Cache-Control`: [`SHARED`] for an answer the same for every
/// anonymous reader, [`PRIVATE`] for one that is the viewer's own.
pub(crate) fn tagged(mut response: Response, etag: &str, private: bool) -> Response {
    let headers = response.headers_mut();
    if let Ok(etag) = HeaderValue::from_str(etag) {
        headers.insert(header::ETAG, etag);
    }
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(if private { PRIVATE } else { SHARED }),
    );
    response
}

/// An answer of `content_type` with `body`, tagged with the strong ETag of its bytes, or 304
/// without a body when the request's `If-None-Match` names it: what the pages, the feeds and the
/// API's reads answer with.
pub(crate) fn revalidated(
    request: &HeaderMap,
    content_type: &'static str,
    body: impl Into<axum::body::Bytes>,
) -> Response {
    revalidated_for(request, content_type, body.into(), false)
}

/// [`revalidated`], [`PRIVATE`] where `private` (the answer is the reader's own).
fn revalidated_for(
    request: &HeaderMap,
    content_type: &'static str,
    body: axum::body::Bytes,
    private: bool,
) -> Response {
    let etag = etag_of(&body);
    let response = if_none_match(request, &etag).unwrap_or_else(|| {
        ([(header::CONTENT_TYPE, HeaderValue::from_static(content_type))], body).into_response()
    });
    tagged(response, &etag, private)
}

/// A JSON read of the API, [`revalidated`]. Whether the value changed is known only from the
/// value, so the read is made; a 304 then sends nothing of it.
pub(crate) fn json<T: Serialize>(request: &HeaderMap, value: &T) -> Response {
    json_for(request, value, false)
}

/// [`json`], [`PRIVATE`] where the answer is the reader's own (`private`: a draft, to its
/// author), whatever the request carries.
pub(crate) fn json_for<T: Serialize>(request: &HeaderMap, value: &T, private: bool) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => revalidated_for(request, "application/json", body.into(), private),
        Err(error) => {
            super::error::ApiError::internal(format!("an answer did not serialize: {error}"))
                .into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{PRIVATE, keep_private};

    #[test]
    fn a_personal_answer_drops_what_a_shared_cache_may_do() {
        assert_eq!(keep_private(super::SHARED), "private, max-age=0");
        assert_eq!(
            keep_private("public, max-age=31536000, immutable"),
            "private, max-age=31536000, immutable"
        );
        assert_eq!(keep_private(""), PRIVATE);
        assert_eq!(keep_private("public"), PRIVATE);
        assert_eq!(keep_private("private, no-cache"), "private, no-cache");
        assert_eq!(keep_private("no-store"), "no-store");
        assert_eq!(keep_private("Public, S-MaxAge=60, no-cache"), "private, no-cache");
    }
}
