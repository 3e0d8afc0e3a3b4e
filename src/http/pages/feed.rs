//! The front page: the newest posts (Q6), from the same cached feed pages as `GET /api/feed`.

use axum::extract::State;
use axum::http::HeaderMap;
use maud::html;

use super::short_posts::post_list;
use super::{Page, PageQuery, PageResult, Viewer, layout, page_address, url_part};
use crate::app::AppState;
use crate::app::feed::feed_page;
use crate::app::lists::ListParams;

/// `GET /`: the newest posts in short form, "More posts" pages on through the feed. One query
/// on `feed` at most once a second per instance; answered 304 to a matching `If-None-Match`.
pub(crate) async fn front_page(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    PageQuery(params): PageQuery<ListParams>,
) -> PageResult {
    let page = feed_page(&state, &params).await?;
    let render = || {
        let main = html! {
            h1 { "Newest posts" }
            @if page.list.items.is_empty() {
                p {
                    "No posts yet."
                    @if viewer.id().is_some() {
                        " " a href="/write" { "Write the first one" } "."
                    }
                }
            } @else {
                (post_list(&page.list.items, true))
            }
            @if let Some(token) = &page.list.continuation_token {
                nav class="more" aria-label="More posts" {
                    a rel="next" href={
                        "/?" @if let Some(limit) = params.limit() { "limit=" (url_part(limit)) "&" }
                        "continuationToken=" (url_part(token))
                    } { "More posts" }
                }
            }
        };
        layout("Newest posts", &viewer, main)
    };
    if viewer.id().is_some() {
        let html = render();
        return Ok(
            Page { status: axum::http::StatusCode::OK, html, private: true }.revalidated(&headers)
        );
    }
    // The page is the same for everyone who is not signed in (a CDN may share it): rendered once
    // per feed page read, for the address the blog is reached at and the page size asked for.
    let key =
        format!("{}\n{}", page_address().unwrap_or_default(), params.limit().unwrap_or_default());
    Ok(Page::shared(&page.rendering(&key, render), &headers))
}
