//! A tag's page (Q7): the newest posts with the tag, paged, with its Atom feed.

use axum::extract::{FromRequestParts, State};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use maud::html;

use super::short_posts::{post_list, tag_address};
use super::{
    Head, Page, PageError, PageFeed, PageQuery, PageResult, SITE_NAME, Viewer, esc, page_address,
    page_layout, url_part,
};
use crate::app::AppState;
use crate::app::lists::ListParams;
use crate::app::tags::posts_with_tag;
use crate::http::tags::TagInPath;
use crate::model::Post;
use crate::model::tags::normalize_tag;

/// The tag in a page's path, as given; refused with an HTML page where it cannot be read.
pub(crate) struct PageTag(pub String);

impl<S: Send + Sync> FromRequestParts<S> for PageTag {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, PageError> {
        let TagInPath(tag) = TagInPath::from_request_parts(parts, state).await?;
        Ok(PageTag(tag))
    }
}

/// The tag as the newest post with it shows it (as its writer typed it), else as given.
pub(crate) fn shown_tag(posts: &[Post], given: &str) -> String {
    let normal = normalize_tag(given);
    posts
        .iter()
        .flat_map(|post| &post.tags)
        .find(|tag| normalize_tag(tag) == normal)
        .cloned()
        .unwrap_or_else(|| given.trim().to_owned())
}

/// `GET /tags/{tag}`: the newest posts with the tag (Q7, one query on the tag's partition),
/// "More posts" pages on. A tag nobody used is a page that says so (200): a tag is not a
/// resource that can be missing. Answered 304 to a matching `If-None-Match`.
pub(crate) async fn tag_page(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    PageTag(given): PageTag,
    PageQuery(params): PageQuery<ListParams>,
) -> PageResult {
    let posts = posts_with_tag(&state, &given, &params).await?;
    let render = || {
        let tag = shown_tag(&posts.items, &given);
        let address = tag_address(&given);
        let main = html! {
            h1 { "Posts tagged " bdi { (esc(&tag)) } }
            @if posts.items.is_empty() {
                p { "No posts with this tag yet." }
            } @else {
                (post_list(&posts.items, true))
            }
            @if let Some(token) = &posts.continuation_token {
                nav class="more" aria-label="More posts" {
                    a rel="next" href={
                        (address) "?" @if let Some(limit) = params.limit() { "limit=" (url_part(limit)) "&" }
                        "continuationToken=" (url_part(token))
                    } { "More posts" }
                }
            }
            p class="hint" {
                a href={ (address) "/feed.atom" } { "Follow " bdi { (esc(&tag)) } " (Atom feed)" }
            }
        };
        let title = format!("Posts tagged {tag}");
        let feed = PageFeed { title: &title, href: format!("{address}/feed.atom") };
        let description = Some(format!("The newest posts tagged {tag} on {SITE_NAME}."));
        page_layout(
            &title,
            &viewer,
            Head { description, feed: Some(feed), ..Head::default() },
            main,
        )
    };
    if viewer.id().is_some() {
        return Ok(Page { status: axum::http::StatusCode::OK, html: render(), private: true }
            .revalidated(&headers));
    }
    // The same for everyone who is not signed in, as the front page is. It is rendered once per
    // page read, for the page's address as requested and the page size asked for. That address
    // is the blog's, and the path with the tag as typed, which an empty page shows; the tag
    // again where the request gave no address.
    let key = format!(
        "{}\n{}\n{given}",
        page_address().unwrap_or_default(),
        params.limit().unwrap_or_default()
    );
    Ok(Page::shared(&posts.rendering(&key, render), &headers))
}
