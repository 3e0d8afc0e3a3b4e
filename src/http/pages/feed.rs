//! The front page: the newest posts (Q6), from the same cached feed pages as `GET /api/feed`.

use std::fmt::Write as _;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::IntoResponse;

use super::{Page, PageQuery, PageResult, Viewer, count, esc, layout, time, url_part};
use crate::app::AppState;
use crate::app::feed::{etag_of, feed_page};
use crate::app::lists::ListParams;
use crate::http::feed::{FEED_CACHE_CONTROL, if_none_match};
use crate::model::Post;

/// `GET /`: the newest posts in short form, "More posts" pages on through the feed. One query
/// on `feed` at most once a second per instance; answered 304 to a matching `If-None-Match`.
pub async fn front_page(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    PageQuery(params): PageQuery<ListParams>,
) -> PageResult {
    let page = feed_page(&state, &params).await?;
    let mut main = String::with_capacity(4096);
    main.push_str("<h1>Newest posts</h1>");
    if page.list.items.is_empty() {
        main.push_str("<p>No posts yet.");
        if viewer.id().is_some() {
            main.push_str(" <a href=\"/write\">Write the first one</a>.");
        }
        main.push_str("</p>");
    } else {
        post_list(&mut main, &page.list.items, true);
    }
    if let Some(token) = &page.list.continuation_token {
        let limit = params.limit().map(|limit| format!("limit={}&", url_part(limit))).unwrap_or_default();
        let _ = write!(
            main,
            "<nav class=\"more\" aria-label=\"More posts\"><a rel=\"next\" href=\"/?{limit}continuationToken={}\">More posts</a></nav>",
            url_part(token)
        );
    }
    let html = layout("Newest posts", &viewer, &main);
    // The page is the same for everyone who is not signed in: a CDN may share it.
    let signed_in = viewer.id().is_some();
    let etag = etag_of(html.as_bytes());
    let mut response = if_none_match(&headers, &etag)
        .unwrap_or_else(|| Page { status: axum::http::StatusCode::OK, html, private: signed_in }.into_response());
    let headers = response.headers_mut();
    headers.insert(header::ETAG, HeaderValue::from_str(&etag).expect("an etag is a header value"));
    let cache = if signed_in { "private, no-cache" } else { FEED_CACHE_CONTROL };
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    headers.insert(header::VARY, HeaderValue::from_static("Cookie"));
    Ok(response)
}

/// Posts in short form: title (a link to the post), author (a link to them, unless the list is
/// theirs), time, the start of the content, and the counts.
pub fn post_list(out: &mut String, posts: &[Post], show_author: bool) {
    out.push_str("<ol class=\"posts\">");
    for post in posts {
        let _ = write!(
            out,
            "<li><article><h2><a href=\"/posts/{}\"><bdi>{}</bdi></a></h2><p class=\"meta\">",
            url_part(&post.id),
            esc(&post.title)
        );
        if show_author {
            let _ =
                write!(out, "by <a href=\"/users/{}\"><bdi>{}</bdi></a> · ", url_part(&post.user_id), esc(&post.user_username));
        }
        let _ = write!(
            out,
            "{}</p><p class=\"excerpt\" dir=\"auto\">{}</p><p class=\"counts\">{} · {}</p></article></li>",
            time(&post.creation_date),
            esc(&post.content),
            count(post.comment_count, "comment", "comments"),
            count(post.like_count, "like", "likes"),
        );
    }
    out.push_str("</ol>");
}
