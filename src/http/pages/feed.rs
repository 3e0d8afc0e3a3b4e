//! The front page: the newest posts (Q6), from the same cached feed pages as `GET /api/feed`.

use axum::extract::State;
use axum::http::HeaderMap;
use maud::{Markup, html};

use super::{Page, PageQuery, PageResult, Viewer, count, esc, layout, page_address, time, url_part};
use crate::app::AppState;
use crate::app::feed::feed_page;
use crate::app::lists::ListParams;
use crate::model::picture::FirstPicture;
use crate::model::{Post, excerpt};

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
        return Ok(Page { status: axum::http::StatusCode::OK, html, private: true }.revalidated(&headers));
    }
    // The page is the same for everyone who is not signed in (a CDN may share it): rendered once
    // per feed page read, for the address the blog is reached at and the page size asked for.
    let key = format!("{}\n{}", page_address().unwrap_or_default(), params.limit().unwrap_or_default());
    Ok(Page::shared(&page.rendering(&key, render), &headers))
}

/// Posts in short form: title (a link to the post) with the post's first picture small beside
/// them, author (a link to them, unless the list is theirs), time, the start of the content, and
/// the counts.
pub(crate) fn post_list(posts: &[Post], show_author: bool) -> Markup {
    html! {
        ol class="posts" {
            @for post in posts {
                li {
                    article {
                        h2 {
                            a href={ "/posts/" (url_part(&post.id)) } {
                                @if let Some(picture) = post.picture.as_ref().filter(|picture| picture.is_of(post)) {
                                    (thumbnail(picture))
                                }
                                bdi { (esc(&post.title)) }
                            }
                        }
                        p class="meta" {
                            @if show_author {
                                "by " a href={ "/users/" (url_part(&post.user_id)) } { bdi { (esc(&post.user_username)) } } " · "
                            }
                            (time(&post.creation_date))
                        }
                        (super::tags::tag_links(&post.tags))
                        @let (excerpt, cut) = excerpt(&post.content);
                        p class="excerpt" dir="auto" { (esc(&excerpt)) }
                        @if cut {
                            p class="more" {
                                a href={ "/posts/" (url_part(&post.id)) } { "Continue reading " bdi { (esc(&post.title)) } }
                            }
                        }
                        p class="counts" {
                            (count(post.comment_count, "comment", "comments")) " · " (count(post.like_count, "like", "likes"))
                        }
                    }
                }
            }
        }
    }
}

/// A post's first picture, small beside its excerpt: its phones' copy, at its size (the
/// stylesheet sets the box, so nothing moves as it loads), loaded as it comes near the screen.
/// It sits in the title's link, which leads where a click on it is expected to: so its alt text
/// is empty (decorative, as WCAG's technique H2 for an image and text in one link), and the link
/// is read as the title alone, rather than as the picture's description and then the title
/// (the post's page shows the picture with its description).
fn thumbnail(picture: &FirstPicture) -> Markup {
    html! {
        img class="thumb" src=(esc(&picture.url)) alt="" width=(picture.width) height=(picture.height) loading="lazy" decoding="async";
    }
}
