//! The blog in a browser: server-rendered HTML pages over the same functions as the JSON API.
//!
//! Each page handler calls the API's own functions (validation, model, store calls) and renders
//! the result; every form is post/redirect/get, and a refused write renders its form again with
//! the API's `detail` next to the field and what was typed kept. No JavaScript.
//!
//! - [`feed`]: the front page (Q6).
//! - [`posts`]: a post (Q2 + Q4 + Q5), new and edit forms (C2), comment (C3) and like (C4).
//! - [`users`]: a user (Q1 + Q3), create and rename (C1).
//! - [`session`]: sign in and out.

pub mod feed;
pub mod posts;
pub mod session;
pub mod users;

use std::fmt::{self, Display, Write as _};

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use super::auth::page_viewer;
use super::error::ApiError;
use super::extract::{Id, Ids, field_names, parse_query};
use crate::app::{AppError, AppState, Caller};

/// The stylesheet every page links, served at `/style.css`.
const STYLESHEET: &str = include_str!("style.css");

/// The stylesheet's address in the pages: versioned by its content, so browsers and CDNs may
/// keep it for good and a new build's pages ask for the new one.
static STYLESHEET_HREF: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let etag = crate::app::feed::etag_of(STYLESHEET.as_bytes());
    format!("/style.css?v={}", etag.trim_matches('"'))
});

/// `GET /style.css`: the same for everyone, and linked by a versioned address.
pub async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("text/css; charset=utf-8")),
            (header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable")),
        ],
        STYLESHEET,
    )
        .into_response()
}

/// Text made safe to put in HTML, between tags or in a quoted attribute.
pub struct Escaped<'a>(pub &'a str);

impl Display for Escaped<'_> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(['&', '<', '>', '"', '\'']) {
            out.write_str(&rest[..at])?;
            out.write_str(match rest.as_bytes()[at] {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                _ => "&#39;",
            })?;
            rest = &rest[at + 1..];
        }
        out.write_str(rest)
    }
}

/// Escapes `text` for HTML.
pub fn esc(text: &str) -> Escaped<'_> {
    Escaped(text)
}

/// Percent-encodes `text` for one path segment or query value of a link. Ids are printable
/// ASCII, but may hold characters a URL reads specially (`?`, `#`, `&`, `+`, ...).
pub fn url_part(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            encoded.push(byte as char);
        } else {
            let _ = write!(encoded, "%{byte:02X}");
        }
    }
    encoded
}

/// Who is looking at a page: the signed-in user's id, or nobody. Never refuses a request;
/// a write that needs a caller asks for one with [`Viewer::caller`].
pub struct Viewer(pub Option<String>);

impl FromRequestParts<AppState> for Viewer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        Ok(Viewer(page_viewer(parts, state.auth)))
    }
}

impl Viewer {
    pub fn id(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// The caller of a write from a form; 401 when nobody is signed in.
    pub fn caller(&self) -> Result<Caller, ApiError> {
        self.0.clone().map(Caller).ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, "Sign in to do this."))
    }

    pub fn is(&self, user_id: &str) -> bool {
        self.id() == Some(user_id)
    }
}

/// A rendered page.
pub struct Page {
    pub status: StatusCode,
    pub html: String,
    /// Pages that show a signed-in person's forms are theirs alone.
    pub private: bool,
}

impl IntoResponse for Page {
    fn into_response(self) -> Response {
        let cache = if self.private { "private, no-cache" } else { "no-cache" };
        (
            self.status,
            [
                (header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8")),
                (header::CACHE_CONTROL, HeaderValue::from_static(cache)),
            ],
            self.html,
        )
            .into_response()
    }
}

/// Lays out a whole page: the site header with its navigation, `main`, and the footer.
pub fn layout(title: &str, viewer: &Viewer, main: &str) -> String {
    let mut html = String::with_capacity(main.len() + 1500);
    let _ = write!(
        html,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{} · Cosmos Blog</title>\n<link rel=\"stylesheet\" href=\"{}\">\n</head>\n<body>\n\
         <a class=\"skip\" href=\"#main\">Skip to content</a>\n\
         <header class=\"site\"><div class=\"bar\"><a class=\"brand\" href=\"/\">Cosmos Blog</a>\n\
         <nav aria-label=\"Site\"><ul>",
        esc(title),
        *STYLESHEET_HREF
    );
    match viewer.id() {
        Some(id) => {
            let _ = write!(
                html,
                "<li><a href=\"/write\">Write</a></li><li><a href=\"/users/{}\">Your page</a></li>\
                 <li><form method=\"post\" action=\"/signout\"><button class=\"link\" type=\"submit\">Sign out</button></form></li>",
                url_part(id)
            );
        }
        None => html.push_str("<li><a href=\"/signin\">Sign in</a></li>"),
    }
    let _ = write!(
        html,
        "</ul></nav></div></header>\n<main id=\"main\">\n{main}\n</main>\n\
         <footer class=\"site\"><p>The same blog as JSON: <a href=\"/api/feed\">/api/feed</a> · \
         <a href=\"/api/openapi.json\">OpenAPI</a></p></footer>\n</body>\n</html>\n"
    );
    html
}

/// What an HTML page may load and who may frame it. The pages are server-rendered with one
/// stylesheet of their own and no script, so everything else is refused: an injected
/// `<script>` or inline style would not run even if escaping ever failed, and no other site may
/// frame the forms (clickjacking). Forms post to the blog itself; sign-in and sign-out leave it
/// by redirects, which `form-action` would also govern, so it is left out.
const CONTENT_SECURITY_POLICY: &str =
    "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The headers every answer carries (`nosniff`), and those of HTML pages: the
/// [`CONTENT_SECURITY_POLICY`], no framing for browsers older than `frame-ancestors`, and links
/// followed from a post that tell other sites no more than the blog's origin.
pub async fn security_headers(request: Request, next: axum::middleware::Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    let html = headers.get(header::CONTENT_TYPE).is_some_and(|value| value.as_bytes().starts_with(b"text/html"));
    if html {
        headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("strict-origin-when-cross-origin"));
    }
    response
}

tokio::task_local! {
    /// Who is signed in, for the request being answered: error pages are rendered where no
    /// handler asked (a refused extractor, an unknown path), and must still show who it is.
    static SIGNED_IN: Option<String>;
}

/// Reads who is signed in once per page request, for [`PageError`]'s page. (The JSON API's
/// requests pass through untouched.)
pub async fn remember_viewer(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    if request.uri().path().starts_with("/api/") {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let viewer = page_viewer(&parts, state.auth);
    SIGNED_IN.scope(viewer, next.run(Request::from_parts(parts, body))).await
}

/// A page that failed: an HTML page with the status and what to do, never problem+json.
pub struct PageError(pub ApiError);

impl From<AppError> for PageError {
    fn from(error: AppError) -> Self {
        PageError(error.into())
    }
}

impl From<ApiError> for PageError {
    fn from(error: ApiError) -> Self {
        PageError(error)
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let ApiError { status, detail } = self.0;
        let (heading, advice) = match status {
            StatusCode::NOT_FOUND => ("Not found", "It may never have existed, or its link was mistyped."),
            StatusCode::FORBIDDEN => ("Not allowed", "Go back to the page you came from and try again from there."),
            StatusCode::UNAUTHORIZED => ("Sign in first", "Sign in, then try again."),
            StatusCode::SERVICE_UNAVAILABLE => ("Busy", "The blog is busy right now. Wait a moment, then reload the page."),
            status if status.is_server_error() => (
                "Something went wrong",
                "The blog could not finish this request; nothing you typed was lost on our side. \
                 Reload the page in a moment. If it keeps failing, tell the blog's operator the time it happened: \
                 the cause is in the log.",
            ),
            _ => ("That did not work", "Go back, correct it and try again."),
        };
        let main = format!(
            "<article class=\"notice\"><h1>{heading}</h1><p>{}</p><p>{advice}</p><p><a href=\"/\">Go to the front page</a></p></article>",
            esc(&detail)
        );
        let viewer = Viewer(SIGNED_IN.try_with(Clone::clone).ok().flatten());
        let private = viewer.id().is_some();
        Page { status, html: layout(heading, &viewer, &main), private }.into_response()
    }
}

pub type PageResult<T = Response> = Result<T, PageError>;

/// The HTML 404 for a path no route serves (paths under `/api/` keep answering problem+json).
pub fn not_found_page(path: &str) -> Response {
    PageError(ApiError::not_found(format!("There is no page at {path}."))).into_response()
}

/// A page's query string: the parameters the page knows are checked as the API checks them
/// (refused with an HTML page); the others are ignored, as every site ignores them: links are
/// shared with tracking parameters (`?utm_source=…`, `?fbclid=…`) that the reader did not add.
/// (The JSON API stays strict: a typo there is a client's bug to report.)
pub struct PageQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for PageQuery<T> {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, PageError> {
        let known = field_names::<T>();
        let params = parse_query(parts.uri.query().unwrap_or_default(), |key| known.contains(&key))?;
        Ok(PageQuery(params))
    }
}

/// The id in a page's path, checked as the API checks it, refused with an HTML page.
pub struct PageId(pub String);

impl<S: Send + Sync> FromRequestParts<S> for PageId {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, PageError> {
        let Id(id) = Id::from_request_parts(parts, state).await?;
        Ok(PageId(id))
    }
}

/// The two ids of a nested page path, checked as the API checks them.
pub struct PageIds(pub String, pub String);

impl<S: Send + Sync> FromRequestParts<S> for PageIds {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, PageError> {
        let Ids(first, second) = Ids::from_request_parts(parts, state).await?;
        Ok(PageIds(first, second))
    }
}

/// Refuses a state-changing request that another site made the browser send (cross-site
/// request forgery): its `Sec-Fetch-Site` says it did not come from a page of this blog, or,
/// from a browser that sends no fetch metadata, its `Origin` is not this blog. A request with
/// neither header did not come from a browser page, which is the only thing a forger controls.
pub struct SameOrigin;

impl<S: Send + Sync> FromRequestParts<S> for SameOrigin {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, PageError> {
        check_same_origin(&parts.headers).map(|()| SameOrigin).map_err(|why| {
            PageError(ApiError::new(
                StatusCode::FORBIDDEN,
                format!("This form was sent from another site ({why}), so it was refused: nothing was changed."),
            ))
        })
    }
}

fn check_same_origin(headers: &HeaderMap) -> Result<(), String> {
    let text = |name: &str| headers.get(name).map(|value| value.to_str().unwrap_or("?").to_owned());
    if let Some(site) = text("sec-fetch-site") {
        // `none`: the person typed or bookmarked the request; `same-origin`: a page of this blog.
        return if site == "same-origin" || site == "none" { Ok(()) } else { Err(format!("Sec-Fetch-Site: {site}")) };
    }
    let Some(origin) = text("origin") else { return Ok(()) };
    let authority = origin.split_once("://").map(|(_, authority)| authority);
    let own = ["x-forwarded-host", "host"].into_iter().filter_map(text).any(|host| authority == Some(host.as_str()));
    if own { Ok(()) } else { Err(format!("Origin: {origin}")) }
}

/// A form body (`application/x-www-form-urlencoded`), parsed strictly; anything else is an
/// HTML error page.
pub struct Form<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Form<T> {
    type Rejection = PageError;

    async fn from_request(request: Request, state: &S) -> Result<Self, PageError> {
        let content_type =
            request.headers().get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).unwrap_or("").to_owned();
        let bytes = axum::body::Bytes::from_request(request, state)
            .await
            .map_err(|rejection| PageError(ApiError::new(rejection.status(), rejection.body_text())))?;
        // A form with no fields (the like button, sign out) has an empty body, which the
        // Functions host forwards without its Content-Type: there is nothing to misread.
        if !bytes.is_empty() && !content_type.trim_start().to_ascii_lowercase().starts_with("application/x-www-form-urlencoded") {
            return Err(PageError(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "This address takes a form sent from the blog's pages (application/x-www-form-urlencoded).",
            )));
        }
        let unreadable =
            |error: &dyn std::fmt::Display| PageError(ApiError::bad_request(format!("The form could not be read: {error}.")));
        let fields: Vec<(String, String)> = serde_urlencoded::from_bytes(&bytes).map_err(|error| unreadable(&error))?;
        let fields: Vec<(String, String)> =
            fields.into_iter().map(|(name, value)| (name, normalize_line_breaks(value))).collect();
        let fields = serde_urlencoded::to_string(&fields).map_err(|error| unreadable(&error))?;
        serde_urlencoded::from_str(&fields).map(Form).map_err(|error| unreadable(&error))
    }
}

/// A browser sends every line break of a form's text as CR LF (the HTML standard's form data
/// set encoding: "newline normalization"), so a comment of 1,000 short lines would count twice
/// against its limit and be stored in another form than the API's: each CR LF, and any lone
/// CR, becomes LF, as a `textarea`'s value and its `maxlength` count them.
fn normalize_line_breaks(value: String) -> String {
    if !value.contains('\r') {
        return value;
    }
    value.replace("\r\n", "\n").replace('\r', "\n")
}

/// Why a write from a form was refused: the API's `detail`, and the field it is about, if it
/// names one of the form's fields (the API's details start with the field's name in backticks).
pub struct Refusal {
    pub field: Option<&'static str>,
    pub detail: String,
}

impl Refusal {
    pub fn of(error: &ApiError, fields: &[&'static str]) -> Refusal {
        let field = fields.iter().copied().find(|field| error.detail.starts_with(&format!("`{field}`")));
        Refusal { field, detail: error.detail.clone() }
    }

    /// The refusal's detail when it is about no field in particular.
    fn general(refusal: Option<&Refusal>) -> Option<&str> {
        refusal.filter(|refusal| refusal.field.is_none()).map(|refusal| refusal.detail.as_str())
    }
}

/// What a form shows: the values typed (or stored), and why it was refused, if it was.
#[derive(Default)]
pub struct Draft<'a> {
    pub values: Vec<(&'static str, &'a str)>,
    pub refusal: Option<Refusal>,
}

impl Draft<'_> {
    fn value(&self, field: &str) -> &str {
        self.values.iter().find(|(name, _)| *name == field).map_or("", |(_, value)| value)
    }
}

/// One labelled field of a form, with its error under the label when the write was refused
/// because of it.
pub struct Field {
    pub name: &'static str,
    pub label: &'static str,
    pub hint: &'static str,
    pub multiline: bool,
    /// The API's limit, as the field's `maxlength`, so that the browser stops the typing there.
    /// (A browser counts UTF-16 code units, the API characters: a text of emoji is stopped
    /// early, never let through too long.)
    pub max_chars: usize,
}

/// Renders a form: a general error first, then each field, then the submit button.
pub fn form(out: &mut String, action: &str, id: &str, fields: &[Field], draft: &Draft, submit: &str) {
    let _ = write!(out, "<form class=\"write\" method=\"post\" action=\"{}\" id=\"{id}\">", esc(action));
    if let Some(detail) = Refusal::general(draft.refusal.as_ref()) {
        let _ = write!(out, "<p class=\"error\" role=\"alert\" id=\"{id}-error\">{}</p>", esc(detail));
    }
    for field in fields {
        let input_id = format!("{id}-{}", field.name);
        let error = draft.refusal.as_ref().filter(|refusal| refusal.field == Some(field.name));
        let _ = write!(out, "<p class=\"field\"><label for=\"{input_id}\">{}</label>", field.label);
        if !field.hint.is_empty() {
            let _ = write!(out, "<span class=\"hint\" id=\"{input_id}-hint\">{}</span>", field.hint);
        }
        let mut described = if field.hint.is_empty() { String::new() } else { format!("{input_id}-hint") };
        if let Some(error) = error {
            let _ = write!(out, "<span class=\"error\" role=\"alert\" id=\"{input_id}-error\">{}</span>", esc(&error.detail));
            described = format!("{input_id}-error {described}");
        }
        let invalid = if error.is_some() { " aria-invalid=\"true\"" } else { "" };
        let described = if described.is_empty() { String::new() } else { format!(" aria-describedby=\"{}\"", described.trim()) };
        let value = esc(draft.value(field.name));
        if field.multiline {
            let _ = write!(
                out,
                "<textarea id=\"{input_id}\" name=\"{}\" rows=\"8\" maxlength=\"{}\" required{invalid}{described}>{value}</textarea></p>",
                field.name, field.max_chars
            );
        } else {
            let _ = write!(
                out,
                "<input id=\"{input_id}\" name=\"{}\" type=\"text\" value=\"{value}\" maxlength=\"{}\" required{invalid}{described}></p>",
                field.name, field.max_chars
            );
        }
    }
    let _ = write!(out, "<p><button type=\"submit\">{submit}</button></p></form>");
}

/// A post's time, readable, with the exact time for machines (`2026-11-22T06:05:04.007Z` shows
/// as `22 Nov 2026, 06:05 UTC`).
pub fn time(creation_date: &str) -> String {
    let format = time::macros::format_description!("[day padding:none] [month repr:short] [year], [hour]:[minute] UTC");
    let shown = time::OffsetDateTime::parse(creation_date, &time::format_description::well_known::Rfc3339)
        .ok()
        .and_then(|at| at.format(&format).ok())
        .unwrap_or_else(|| creation_date.to_owned());
    format!("<time datetime=\"{}\">{}</time>", esc(creation_date), esc(&shown))
}

/// "1 comment", "2 comments".
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped_in_text_and_attributes() {
        assert_eq!(
            esc("<script>alert('x') & \"y\"</script>").to_string(),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
        assert_eq!(esc("plain é").to_string(), "plain é");
        assert_eq!(url_part("a b?c#d&e/f"), "a%20b%3Fc%23d%26e%2Ff");
    }

    #[test]
    fn only_the_blog_itself_may_send_a_form() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut map = HeaderMap::new();
            for (name, value) in pairs {
                map.insert(*name, HeaderValue::from_static(value));
            }
            map
        };
        assert!(check_same_origin(&headers(&[("sec-fetch-site", "same-origin")])).is_ok());
        assert!(check_same_origin(&headers(&[("sec-fetch-site", "none")])).is_ok());
        assert!(check_same_origin(&headers(&[("sec-fetch-site", "cross-site")])).is_err());
        assert!(check_same_origin(&headers(&[("sec-fetch-site", "same-site")])).is_err(), "a sibling subdomain is not the blog");
        assert!(check_same_origin(&headers(&[("origin", "https://blog.example"), ("host", "blog.example")])).is_ok());
        assert!(check_same_origin(&headers(&[("origin", "https://evil.example"), ("host", "blog.example")])).is_err());
        assert!(check_same_origin(&headers(&[("origin", "null"), ("host", "blog.example")])).is_err());
        assert!(check_same_origin(&headers(&[("host", "blog.example")])).is_ok(), "no browser page sent it");
    }

    #[tokio::test]
    async fn an_unexpected_failure_is_a_page_that_says_what_to_do_and_hides_the_cause() {
        let response = PageError(ApiError::internal("connection to https://secret.documents.azure.com refused")).into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "text/html; charset=utf-8");
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let html = String::from_utf8(body.to_vec()).unwrap();
        assert!(html.contains("<h1>Something went wrong</h1>") && html.contains("Reload the page in a moment"), "{html}");
        assert!(!html.contains("secret"), "the cause stays in the log: {html}");
    }

    #[test]
    fn a_refusal_finds_the_field_its_detail_names() {
        let refusal = Refusal::of(&ApiError::bad_request("`title` must not be empty."), &["title", "content"]);
        assert_eq!(refusal.field, Some("title"));
        let refusal = Refusal::of(&ApiError::unprocessable("`userId` names no user"), &["title", "content"]);
        assert_eq!(refusal.field, None);
    }
}
