//! The blog in a browser: server-rendered HTML pages over the same functions as the JSON API.
//!
//! Each page handler calls the API's own functions (validation, model, store calls) and renders
//! the result. Every form is post/redirect/get. A refused write renders its form again, with
//! the API's `detail` next to the field and what was typed kept. No JavaScript.
//!
//! The markup is written with maud's `html!`, which escapes every value put in it: text goes in
//! unescaped only as `PreEscaped`, beside a comment that says why it is safe there.
//!
//! - [`feed`]: the front page (Q6); [`atom`]: the Atom feeds, of the blog and of a user.
//! - [`posts`]: a post (Q2 + Q4 + Q5), comment (C3, C6), like (C4, C5), delete (C7); [`write`]: new
//!   and edit forms (C2).
//! - [`users`]: a user (Q1 + Q3), create and rename (C1).
//! - [`session`]: sign in and out.
//! - [`search`]: the search page (Q8), whose box is in every page's header.
//! - [`extractors`]: what the pages take from a request; [`forms`]: the forms.

pub(crate) mod atom;
mod extractors;
pub(crate) mod feed;
pub(crate) mod forms;
pub(crate) mod multipart;
pub(crate) mod posts;
pub(crate) mod revisions;
pub(crate) mod search;
pub(crate) mod session;
mod short_posts;
pub(crate) mod sitemap;
pub(crate) mod tags;
pub(crate) mod users;
pub(crate) mod write;

use std::fmt::{self, Display, Write as _};

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, PreEscaped, Render, html};

pub(crate) use self::extractors::Viewer;

pub(crate) use self::extractors::PageQuery;

pub(crate) use self::extractors::PageId;

pub(crate) use self::extractors::{ChosenPicture, Form, FormWithPicture, PageIds, SameOrigin};
pub(crate) use self::forms::Draft;
pub(crate) use self::forms::Field;
pub(crate) use self::forms::Refusal;
pub(crate) use self::forms::{form, form_with, one_time_key, submit};
use super::auth::page_viewer;
use super::error::ApiError;
use crate::app::AppError;
use crate::app::kept::Rendering;
use crate::config::PublicUrl;
use crate::http::caching::{self, if_none_match};
use crate::model::first_picture::FirstPicture;

/// The stylesheet every page links, served at `/style.css`.
const STYLESHEET: &str = include_str!("style.css");

/// The stylesheet's address in the pages: versioned by its content, so browsers and CDNs may
/// keep it for good and a new build's pages ask for the new one.
static STYLESHEET_HREF: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let etag = crate::app::kept::etag_of(STYLESHEET.as_bytes());
    format!("/style.css?v={}", etag.trim_matches('"'))
});

/// `GET /style.css`: the same for everyone, and linked by a versioned address.
pub(crate) async fn stylesheet() -> Response {
    static_file("text/css; charset=utf-8", "public, max-age=31536000, immutable", STYLESHEET)
}

/// A file built into the handler, the same for everyone.
fn static_file(
    content_type: &'static str,
    cache_control: &'static str,
    body: &'static str,
) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::CACHE_CONTROL, HeaderValue::from_static(cache_control)),
        ],
        body,
    )
        .into_response()
}

/// The blog's icon, linked by every page (without one, browsers ask for `/favicon.ico` and log
/// the 404).
const FAVICON: &str = include_str!("favicon.svg");

/// `GET /favicon.svg`.
pub(crate) async fn favicon() -> Response {
    static_file("image/svg+xml", "public, max-age=86400", FAVICON)
}

/// What crawlers may visit: everything but the forms.
const ROBOTS: &str = include_str!("robots.txt");

/// `GET /robots.txt`: [`ROBOTS`], and where the sitemap is. Its address must be absolute (the
/// sitemaps protocol): the blog's public address, from configuration, never from the request.
pub(crate) async fn robots() -> Response {
    let origin = page_origin().map(|origin| origin.as_str().to_owned()).unwrap_or_default();
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8")),
            (header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=86400")),
        ],
        format!("{ROBOTS}\nSitemap: {origin}/sitemap.xml\n"),
    )
        .into_response()
}

/// The blog's name, in every page's title and the feeds'.
pub(crate) const SITE_NAME: &str = "Cosmos Blog";

/// What every page says of the blog to search engines and link previews (and the feed, to readers).
const SITE_DESCRIPTION: &str = "A blog on Azure Cosmos DB, built as Microsoft's article on modelling and partitioning data designs it.";

/// Text made safe to put in HTML, between tags or in a quoted attribute: `&`, `<`, `>`, `"` and
/// `'` as character references.
///
/// maud escapes every value put in a template already, all but `'` (its attributes are all
/// double-quoted, where `'` is plain text). The pages put every value that does not come from
/// the code itself (stored, typed, an error's detail) through [`esc`] all the same. So such a
/// value reads the same on every page, `'` as `&#39;` included. In a link, [`url_part`] leaves
/// nothing to escape. A value put in without either is still escaped, by maud.
#[derive(Clone, Copy)]
pub(crate) struct Escaped<'a>(pub &'a str);

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

impl Render for Escaped<'_> {
    fn render_to(&self, buffer: &mut String) {
        // maud writes what `render_to` writes as it is: this is the escaped text of `Display`.
        let _ = write!(buffer, "{self}");
    }
}

/// Escapes `text` for HTML.
pub(crate) fn esc(text: &str) -> Escaped<'_> {
    Escaped(text)
}

/// Percent-encodes `text` for one path segment or query value of a link. Ids are printable
/// ASCII, but may hold characters a URL reads specially (`?`, `#`, `&`, `+`, ...).
pub(crate) fn url_part(text: &str) -> String {
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

/// Every page's `Content-Type`.
const HTML_CONTENT_TYPE: HeaderValue = HeaderValue::from_static("text/html; charset=utf-8");

/// A rendered page.
pub(crate) struct Page {
    pub status: StatusCode,
    pub html: String,
    /// Pages that show a signed-in person's forms are theirs alone.
    pub private: bool,
}

impl Page {
    /// The page with its `ETag`, or 304 without a body when `If-None-Match` names it. A page
    /// nobody is signed in to is the same for everyone, so a CDN may keep it for a few seconds
    /// ([`caching::SHARED`]); a signed-in one is theirs alone ([`caching::PRIVATE`]).
    pub(crate) fn revalidated(self, request: &HeaderMap) -> Response {
        let etag = crate::app::kept::etag_of(self.html.as_bytes());
        let private = self.private;
        with_etag(
            if_none_match(request, &etag).unwrap_or_else(|| self.into_response()),
            &etag,
            private,
        )
    }

    /// [`Page::revalidated`] for a page rendered once for every reader who is not signed in.
    pub(crate) fn shared(rendering: &Rendering, request: &HeaderMap) -> Response {
        let response = if_none_match(request, &rendering.etag).unwrap_or_else(|| {
            ([(header::CONTENT_TYPE, HTML_CONTENT_TYPE)], rendering.body.clone()).into_response()
        });
        with_etag(response, &rendering.etag, false)
    }
}

/// The page tagged ([`caching::tagged`]), and varying by `Cookie`: what a page shows depends on
/// who is signed in, which a browser's cache (and a CDN that reads `Vary`) must tell apart.
fn with_etag(response: Response, etag: &str, private: bool) -> Response {
    let mut response = caching::tagged(response, etag, private);
    response.headers_mut().insert(header::VARY, HeaderValue::from_static("Cookie"));
    response
}

/// The page's canonical address (see [`PageRequest`]); `None` outside a page request.
pub(crate) fn page_address() -> Option<String> {
    PAGE_REQUEST.try_with(|page| page.address.clone()).ok()
}

/// What the search page was asked for (its `q`), on the search page alone: the header's box
/// shows it there, on the error page of a refused query too.
fn page_search() -> Option<String> {
    PAGE_REQUEST.try_with(|page| page.search.clone()).ok().flatten()
}

/// The blog's public address (`http(s)://host[:port]`, see [`PageRequest`]); `None` outside a
/// page request.
pub(crate) fn page_origin() -> Option<PublicUrl> {
    PAGE_REQUEST.try_with(|page| page.origin.clone()).ok()
}

impl IntoResponse for Page {
    fn into_response(self) -> Response {
        let cache = if self.private { caching::PRIVATE } else { "no-cache" };
        (
            self.status,
            [
                (header::CONTENT_TYPE, HTML_CONTENT_TYPE),
                (header::CACHE_CONTROL, HeaderValue::from_static(cache)),
            ],
            self.html,
        )
            .into_response()
    }
}

/// Lays out a whole page: the site header with its navigation, `main`, and the footer.
pub(crate) fn layout(title: &str, viewer: &Viewer, main: Markup) -> String {
    page_layout(title, viewer, Head::default(), main)
}

/// What a page says of itself in its `<head>`, beyond its title: to search engines (the
/// description, the canonical address) and to link previews (OpenGraph).
#[derive(Default)]
pub(crate) struct Head<'a> {
    /// What the page shows, in a sentence or two; the blog's own description if `None`.
    pub description: Option<String>,
    /// A post (OpenGraph's `article`) rather than a list (`website`).
    pub article: bool,
    pub feed: Option<PageFeed<'a>>,
    /// The picture a link preview shows: a post's first.
    pub picture: Option<&'a FirstPicture>,
    /// A page search engines are not to index or follow (a draft, to its author).
    pub noindex: bool,
    /// What the page is, as schema.org's JSON-LD (a published post's `BlogPosting`): made by
    /// [`json_ld`], so safe inside its `<script>` element.
    pub structured_data: Option<JsonLd>,
}

/// JSON-LD made safe to put in a `<script type="application/ld+json">` element ([`json_ld`]).
pub(crate) struct JsonLd(String);

/// `value` as JSON fit for a script element. `<`, `>` and `&` are written as JSON's `\u003c`,
/// `\u003e` and `\u0026`, which read back the same: no `</script>` or `<!--` in a value can end
/// the element early. A data block is not run, so the page's policy does not refuse it.
pub(crate) fn json_ld(value: &serde_json::Value) -> JsonLd {
    let mut safe = String::new();
    for c in value.to_string().chars() {
        match c {
            '<' => safe.push_str("\\u003c"),
            '>' => safe.push_str("\\u003e"),
            '&' => safe.push_str("\\u0026"),
            c => safe.push(c),
        }
    }
    JsonLd(safe)
}

/// A feed of what a page shows, beside the blog's: its title and address.
pub(crate) struct PageFeed<'a> {
    pub title: &'a str,
    pub href: String,
}

/// Lays out a page with its [`Head`]. A page's own feed is linked beside the blog's: feed
/// readers and browsers find both in the `<head>` (`rel="alternate"`, the HTML Standard's feed
/// autodiscovery). The canonical address (and OpenGraph's `og:url`) is the page's path without
/// its query, so a shared link with tracking parameters counts as the page itself, at the blog's
/// public address (see [`PageRequest`]).
pub(crate) fn page_layout(title: &str, viewer: &Viewer, head: Head<'_>, main: Markup) -> String {
    let description = head.description.as_deref().unwrap_or(SITE_DESCRIPTION);
    let address = page_address();
    let feed = head.feed;
    html! {
        // maud's constant `<!DOCTYPE html>`: its own text, nothing of the page's.
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="description" content=(esc(description));
                meta name="color-scheme" content="light dark";
                @if head.noindex {
                    meta name="robots" content="noindex, nofollow";
                }
                title { (esc(title)) " · " (SITE_NAME) }
                @if let Some(address) = &address {
                    link rel="canonical" href=(esc(address));
                    meta property="og:url" content=(esc(address));
                }
                meta property="og:site_name" content=(SITE_NAME);
                meta property="og:title" content=(esc(title));
                meta property="og:description" content=(esc(description));
                meta property="og:type" content=(if head.article { "article" } else { "website" });
                @if let (Some(picture), Some(origin)) = (head.picture, page_origin()) {
                    (preview_picture(picture, origin.as_str()))
                }
                link rel="stylesheet" href=(STYLESHEET_HREF.as_str());
                link rel="icon" type="image/svg+xml" href="/favicon.svg";
                link rel="alternate" type="application/atom+xml" title={ (SITE_NAME) ": newest posts" } href="/feed.atom";
                @if let Some(feed) = feed {
                    link rel="alternate" type="application/atom+xml" title=(esc(feed.title)) href=(feed.href);
                }
                @if let Some(data) = &head.structured_data {
                    // JSON with every `<`, `>` and `&` escaped by `json_ld`: it cannot close the element.
                    script type="application/ld+json" { (PreEscaped(&data.0)) }
                }
            }
            body {
                a class="skip" href="#main" { "Skip to content" }
                header class="site" {
                    div class="bar" {
                        a class="brand" href="/" { "Cosmos Blog" }
                        (search_box(page_search().as_deref()))
                        nav aria-label="Site" {
                            ul {
                                @if let (Some(id), Some(name)) = (viewer.id(), viewer.name()) {
                                    li class="who" { "Signed in as " bdi { (esc(name)) } }
                                    li { a href="/write" { "Write" } }
                                    li { a href={ "/users/" (url_part(id)) } { "Your page" } }
                                    li {
                                        form method="post" action="/signout" {
                                            button class="link" type="submit" { "Sign out" }
                                        }
                                    }
                                } @else {
                                    li { a href="/signin" { "Sign in" } }
                                }
                            }
                        }
                    }
                }
                main id="main" { (main) }
                footer class="site" {
                    p {
                        "The same blog as JSON: " a href="/api/feed" { "/api/feed" } " · "
                        a href="/api/openapi.json" { "OpenAPI" } " · "
                        a href="/feed.atom" { "Atom feed" }
                    }
                }
            }
        }
    }
    .into_string()
}

/// The search box in every page's header: a plain GET form, so it works without script. Its
/// label is hidden (the button says what the box is for) but read by screen readers. On the
/// search page it holds the query, and that page has no form of its own.
fn search_box(query: Option<&str>) -> Markup {
    // A control character refused in a query is left out of the box: it cannot be typed there.
    let shown: Option<String> =
        query.map(|query| query.chars().filter(|c| !c.is_control()).collect());
    html! {
        form class="search" role="search" method="get" action="/search" {
            label class="visually-hidden" for="site-search" { "Search posts" }
            input type="search" id="site-search" name="q" maxlength=(search::MAX_QUERY_CHARS)
                value=[shown.as_deref().map(esc)];
            button type="submit" { "Search" }
        }
    }
}

/// A link preview's picture (OpenGraph's `og:image` and its size and description), shown large
/// (X's `summary_large_image` card; without a picture, X shows its `summary` card). A preview is
/// made by a site that fetched the page, which needs the picture's absolute address: at the
/// blog's public address, as the canonical address and the Atom feeds have it.
fn preview_picture(picture: &FirstPicture, origin: &str) -> Markup {
    html! {
        meta property="og:image" content={ (origin) (esc(&picture.url)) };
        meta property="og:image:width" content=(picture.width);
        meta property="og:image:height" content=(picture.height);
        meta name="twitter:card" content="summary_large_image";
        // An empty description says nothing: a picture its writer did not describe has none. X
        // reads its own name for it (its card takes the picture from `og:image`).
        @if !picture.alt.is_empty() {
            meta property="og:image:alt" content=(esc(&picture.alt));
            meta name="twitter:image:alt" content=(esc(&picture.alt));
        }
    }
}

/// What an HTML page may load and who may frame it. The pages are server-rendered with one
/// stylesheet of their own and no script, so everything else is refused. An injected `<script>`
/// or inline style would not run even if escaping ever failed, and no other site may frame the
/// forms (clickjacking). Forms post to the blog itself; sign-in and sign-out leave it by
/// redirects, which `form-action` would also govern, so it is left out. The
/// `connect-src 'self'` directive grants nothing to the pages, which run no script. But it lets
/// tools that fetch from inside a page read the blog's own files. Lighthouse reads
/// `/robots.txt` that way, and under `default-src 'none'` alone it reported "unable to download
/// a robots.txt file" (GoogleChrome/lighthouse#4386).
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The headers every answer carries (`nosniff`), and those of HTML pages: the
/// [`CONTENT_SECURITY_POLICY`], no framing for browsers older than `frame-ancestors`, and links
/// followed from a post that tell other sites no more than the blog's origin. They are added on
/// the way out by [`crate::http::front_door`].
pub(crate) fn add_security_headers(headers: &mut HeaderMap) {
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    let html = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"text/html"));
    if html {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        );
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        headers.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("strict-origin-when-cross-origin"),
        );
    }
}

/// What a page request says of itself, read once on the way in (by [`crate::http::front_door`])
/// and current while its page is rendered. Error pages are rendered where no handler asked (a
/// refused extractor, an unknown path), and must still show who is signed in and where they
/// are.
pub(crate) struct PageRequest {
    viewer: Option<super::auth::SignedIn>,
    /// The blog's public address, from configuration ([`PublicUrl`]), never from the request's
    /// headers: a page a shared cache keeps is the same for every reader it is handed to.
    origin: PublicUrl,
    /// The page's canonical address (`origin` + path, no query): every page's `<head>` gives it.
    address: String,
    /// The search page's `q`, as given (see [`page_search`]).
    search: Option<String>,
}

tokio::task_local! {
    static PAGE_REQUEST: PageRequest;
}

impl PageRequest {
    /// Who is signed in and where the page is; `None` for the JSON API's requests, which render
    /// no page.
    pub(crate) fn of(
        parts: &axum::http::request::Parts,
        auth: crate::config::AuthMode,
        public_url: &PublicUrl,
    ) -> Option<PageRequest> {
        if parts.uri.path().starts_with("/api/") {
            return None;
        }
        let viewer = page_viewer(parts, auth);
        let mut address = String::with_capacity(public_url.as_str().len() + parts.uri.path().len());
        address.push_str(public_url.as_str());
        address.push_str(parts.uri.path());
        let search = (parts.uri.path() == search::PATH)
            .then(|| search::query_of(parts.uri.query().unwrap_or_default()))
            .flatten();
        Some(PageRequest { viewer, origin: public_url.clone(), address, search })
    }

    /// Runs `page` with this request current.
    pub(crate) async fn scope<F: Future>(self, page: F) -> F::Output {
        PAGE_REQUEST.scope(self, page).await
    }

    /// Who is signed in on the page request being answered, as read on its way in; `None`
    /// outside one.
    pub(super) fn current_viewer() -> Option<Option<super::auth::SignedIn>> {
        PAGE_REQUEST.try_with(|page| page.viewer.clone()).ok()
    }
}

/// A page that failed: an HTML page with the status and what to do, never problem+json.
pub(crate) struct PageError(pub ApiError);

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
        let retry_after = self.0.retry_after_header();
        let ApiError { status, detail, .. } = self.0;
        let (heading, advice) = match status {
            StatusCode::NOT_FOUND => {
                ("Not found", "It may never have existed, or its link was mistyped.")
            }
            StatusCode::FORBIDDEN => {
                ("Not allowed", "Go back to the page you came from and try again from there.")
            }
            StatusCode::UNAUTHORIZED => ("Sign in first", "Sign in, then try again."),
            StatusCode::SERVICE_UNAVAILABLE => {
                ("Busy", "The blog is busy right now. Wait a moment, then reload the page.")
            }
            status if status.is_server_error() => (
                "Something went wrong",
                "The blog could not finish this request; nothing you typed was lost on our side. \
                 Reload the page in a moment. If it keeps failing, tell the blog's operator the time it happened: \
                 the cause is in the log.",
            ),
            _ => ("That did not work", "Go back, correct it and try again."),
        };
        let main = html! {
            article class="notice" {
                h1 { (heading) }
                p { (esc(&detail)) }
                p { (advice) }
                p { a href="/" { "Go to the front page" } }
            }
        };
        let viewer = Viewer(PageRequest::current_viewer().flatten());
        let private = viewer.id().is_some();
        let mut response =
            Page { status, html: layout(heading, &viewer, main), private }.into_response();
        // A busy page says when to come back, as the API's answer does.
        if let Some(retry_after) = retry_after {
            response.headers_mut().insert(axum::http::header::RETRY_AFTER, retry_after);
        }
        response
    }
}

pub(crate) type PageResult<T = Response> = Result<T, PageError>;

/// The HTML 404 for a path no route serves (paths under `/api/` keep answering problem+json).
pub(crate) fn not_found_page(path: &str) -> Response {
    PageError(ApiError::not_found(format!("There is no page at {path}."))).into_response()
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
    fn json_ld_cannot_close_its_script_element() {
        let value = serde_json::json!({"headline": "</script><!-- & more"});
        let JsonLd(safe) = json_ld(&value);
        assert!(!safe.contains('<') && !safe.contains('>') && !safe.contains('&'), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
    }

    #[tokio::test]
    async fn an_unexpected_failure_page_hides_the_cause() {
        let response = PageError(ApiError::internal(
            "connection to https://secret.documents.azure.com refused",
        ))
        .into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "text/html; charset=utf-8");
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let html = String::from_utf8(body.to_vec()).unwrap();
        assert!(
            html.contains("<h1>Something went wrong</h1>")
                && html.contains("Reload the page in a moment"),
            "{html}"
        );
        assert!(!html.contains("secret"), "the cause stays in the log: {html}");
    }
}
