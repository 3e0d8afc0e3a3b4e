//! A post's page (Q2 + Q4 + Q5), deleting a post (C7), and the comment (C3, C6) and like (C4,
//! C5) buttons on the post's page. Writing and editing a post are in [`super::write`].

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, PreEscaped, html};
use serde::Deserialize;
use serde_json::json;

use super::short_posts::{count, tag_links, time};
use super::{
    Draft, Field, Form, Head, JsonLd, Page, PageId, PageIds, PageQuery, PageResult, Refusal,
    SameOrigin, Viewer, esc, form, json_ld, layout, one_time_key, page_layout, submit, url_part,
};
use crate::app::comments::{comment_to_delete, create_comment, delete_comment, page_of_comment};
use crate::app::idempotency::IdempotencyKey;
use crate::app::kept::{Freshness, PostPage, PostView, read_post_page};
use crate::app::likes::{create_like, delete_like};
use crate::app::lists::{ListPage, ListParams};
use crate::app::posts::{delete_post, get_post_for, previewed_post};
use crate::app::{AppResult, AppState, Caller};
use crate::http::auth::cookie;
use crate::model::first_picture::FirstPicture;
use crate::model::{
    Comment, Like, MAX_COMMENT_CHARS, Post, SHORT_CONTENT_CHARS, excerpt, truncate_chars,
};

// The hint says the limit the API applies; the assertion keeps it true.
const COMMENT_FIELDS: [Field; 1] = [Field {
    name: "content",
    label: "Your comment",
    hint: "Markdown, as in posts. Up to 2,000 characters.",
    multiline: true,
    max_chars: MAX_COMMENT_CHARS,
    optional: false,
}];
const _: () = assert!(MAX_COMMENT_CHARS == 2_000);

/// The refusals of a post's comment and edit forms that are an error page rather than the form
/// again: the post is gone (404). Anything else is about what was typed. (The server failing is
/// the error page on every form.)
pub(super) const POST_GONE: &[StatusCode] = &[StatusCode::NOT_FOUND];

/// A comment, as typed into the form.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CommentForm {
    #[serde(default)]
    content: String,
}

/// A like, an unlike or a deletion carries nothing but who clicked it, and that is the session's.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ButtonForm {}

/// What the post page shows besides the post: a comment being written, or a like refused.
#[derive(Default)]
struct PostPageState<'a> {
    comment: Draft<'a>,
    like_refused: Option<String>,
}

/// The cookie that tells the post page its viewer has just written to the post: set on the
/// redirect after the write, scoped to the post's address, for a few seconds. With it, the page
/// is read anew rather than taken from this instance's cache ([`Freshness::Read`]), so the writer
/// sees their write whichever instance answers.
const JUST_WROTE: &str = "blog_wrote";

/// `GET /posts/{postId}`: the post, who likes it and its comments (paged with
/// `?continuationToken=`): Q2, Q4 and Q5 run concurrently, or come from the last second's read
/// of them ([`read_post_page`]). Answered 304 to a matching `If-None-Match`.
pub(crate) async fn post_page(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    PageId(post_id): PageId,
    PageQuery(params): PageQuery<ListParams>,
) -> PageResult {
    let freshness =
        if cookie(&headers, JUST_WROTE).is_some() { Freshness::Read } else { Freshness::Cached };
    let page = render_post(
        &state,
        &viewer,
        &post_id,
        &params,
        freshness,
        PostPageState::default(),
        StatusCode::OK,
    )
    .await?;
    Ok(page.revalidated(&headers))
}

/// The redirect after a write to `post_id`, carrying [`JUST_WROTE`] for the post's address.
pub(super) fn wrote_to(post_id: &str, written: PageResult) -> PageResult {
    let mut response = written?;
    if response.status().is_redirection() {
        let cookie = format!(
            "{JUST_WROTE}=1; Path=/posts/{}; Max-Age=10; HttpOnly; SameSite=Lax",
            url_part(post_id)
        );
        response.headers_mut().append(
            header::SET_COOKIE,
            HeaderValue::from_str(&cookie).expect("an id in a link is a header value"),
        );
    }
    Ok(response)
}

/// The post page: the post with its actions, who likes it, and a page of its comments with the
/// comment form; `extra` is what a refused write brings back to it, `status` its status.
async fn render_post(
    state: &AppState,
    viewer: &Viewer,
    post_id: &str,
    params: &ListParams,
    freshness: Freshness,
    extra: PostPageState<'_>,
    status: StatusCode,
) -> PageResult<Page> {
    // Likes are shown from their first page only; the comments are what `?continuationToken=` pages.
    let PostPage { view, liked } =
        read_post_page(state, post_id, params, freshness, viewer.id()).await?;
    let PostView { post, comments, likes, .. } = &*view;
    let rendered = view.rendered();
    // A draft: to its author alone (others are answered 404 before this), without what
    // readers do with a post, and told so.
    let draft = !post.status.is_published();
    let main = html! {
        @if draft {
            p class="notice" role="status" {
                @if let Some(at) = &post.publish_at {
                    "Scheduled for " (time(at)) ": only you can see it until then. "
                } @else {
                    "A draft: only you can see it. "
                }
                a href={ "/posts/" (url_part(&post.id)) "/edit" } { "Publish it" } " from its edit page."
            }
        }
        (post_article(post, &rendered.content, viewer, liked, extra.like_refused.as_deref()))
        @if !draft {
            (liked_by(post, likes))
            (comments_section(post, comments, &rendered.comments, viewer, &extra.comment))
        }
    };
    // Link previews and search results show the start of the post, as the front page does, and
    // its first picture, as the lists do.
    let (description, _) = excerpt(truncate_chars(&post.content, SHORT_CONTENT_CHARS));
    let head = Head {
        description: Some(description),
        article: true,
        picture: rendered.picture.as_ref(),
        noindex: draft,
        // What search engines read of a post readers can see; never of a draft.
        structured_data: (!draft).then(|| blog_posting(post, rendered.picture.as_ref())).flatten(),
        ..Head::default()
    };
    Ok(Page {
        status,
        html: page_layout(&post.title, viewer, head, main),
        private: viewer.id().is_some() || draft,
    })
}

/// The post as schema.org's `BlogPosting`, in JSON-LD: its title, author, dates and first
/// picture, each address absolute at the blog's public address. `None` outside a page request.
fn blog_posting(post: &Post, picture: Option<&FirstPicture>) -> Option<JsonLd> {
    let origin = super::page_origin()?;
    let origin = origin.as_str();
    let mut data = json!({
        "@context": "https://schema.org",
        "@type": "BlogPosting",
        "headline": post.title,
        "author": {
            "@type": "Person",
            "name": post.user_username,
            "url": format!("{origin}/users/{}", url_part(&post.user_id)),
        },
        "datePublished": post.creation_date,
        "dateModified": post.edited_at.as_deref().unwrap_or(&post.creation_date),
        "mainEntityOfPage": format!("{origin}/posts/{}", url_part(&post.id)),
    });
    if let Some(picture) = picture {
        data["image"] = json!([format!("{origin}{}", picture.url)]);
    }
    Some(json_ld(&data))
}

/// The post itself: its title, writer, dates and tags, its text (`content`, rendered) and its
/// counts. Then what the viewer may do with it (edit and delete it when it is theirs, like it
/// or take their like back), with why a like was refused.
fn post_article(
    post: &Post,
    content: &str,
    viewer: &Viewer,
    liked: bool,
    like_refused: Option<&str>,
) -> Markup {
    let id = url_part(&post.id);
    html! {
        article {
            h1 dir="auto" { (esc(&post.title)) }
            p class="meta" {
                "by " a href={ "/users/" (url_part(&post.user_id)) } { bdi { (esc(&post.user_username)) } }
                " · " (time(&post.creation_date))
                @if let Some(edited_at) = &post.edited_at {
                    " · edited " (time(edited_at))
                }
            }
            (tag_links(&post.tags))
            // Rendered once per view by `markdown::to_html` (`PostView::rendered`), which leaves no raw HTML of the text in it and escapes
            // the rest: safe as it is.
            div class="content" dir="auto" { (PreEscaped(content)) }
            p class="counts" {
                (count(post.comment_count, "comment", "comments")) " · " (count(post.like_count, "like", "likes"))
            }
            // Where a like or unlike sends the reader back to, rather than the top of a long post.
            div class="actions" id="actions" {
                @if viewer.is(&post.user_id) {
                    a href={ "/posts/" (id) "/edit" } { "Edit this post" }
                    a href={ "/posts/" (id) "/delete" } { "Delete this post" }
                }
                @match viewer.id() {
                    // A draft takes no likes: its author alone sees it.
                    _ if !post.status.is_published() => {}
                    Some(_) if liked => {
                        span { "You like this post." }
                        form method="post" action={ "/posts/" (id) "/unlike" } {
                            (one_time_key())
                            button type="submit" class="link" { "Take back your like" }
                        }
                    }
                    Some(_) => {
                        form method="post" action={ "/posts/" (id) "/likes" } { (one_time_key()) button type="submit" { "Like" } }
                    }
                    None => {
                        span { a href={ "/signin?return=/posts/" (id) } { "Sign in" } " to like or comment." }
                    }
                }
            }
            @if let Some(detail) = like_refused {
                p class="error" role="alert" id="like-error" { (esc(detail)) }
            }
        }
    }
}

/// Who likes the post, from the first page of its likes ("and 3 more" past it); nothing when
/// nobody does.
fn liked_by(post: &Post, likes: &ListPage<Like>) -> Markup {
    let more_likes = post.like_count.saturating_sub(likes.items.len() as u64);
    html! {
        @if !likes.items.is_empty() {
            section aria-labelledby="likes" {
                h2 id="likes" { "Liked by" }
                p {
                    @for (n, like) in likes.items.iter().enumerate() {
                        @if n > 0 { ", " }
                        a href={ "/users/" (url_part(&like.user_id)) } { bdi { (esc(&like.user_username)) } }
                    }
                    @if more_likes > 0 && likes.continuation_token.is_some() {
                        " and " (more_likes) " more"
                    }
                }
            }
        }
    }
}

/// A page of the post's comments (`texts`: each rendered), each with its delete link for who may
/// delete it, the link to the next page, and the comment form (`comment`: what was typed).
fn comments_section(
    post: &Post,
    comments: &ListPage<Comment>,
    texts: &[String],
    viewer: &Viewer,
    comment: &Draft<'_>,
) -> Markup {
    let id = url_part(&post.id);
    html! {
        section aria-labelledby="comments" {
            h2 id="comments" { "Comments" }
            @if comments.items.is_empty() {
                p { "No comments yet." }
            } @else {
                ol class="comments" {
                    @for (comment, text) in comments.items.iter().zip(texts) {
                        li id={ "comment-" (esc(&comment.id)) } {
                            p class="meta" {
                                a href={ "/users/" (url_part(&comment.user_id)) } { bdi { (esc(&comment.user_username)) } }
                                " · " (time(&comment.creation_date))
                            }
                            // As the post's text: safe as `to_html` renders it; under the "Comments" heading (h2).
                            div class="content" dir="auto" { (PreEscaped(text)) }
                            // Its author, and the post's author, who moderates the comments under the post (C6).
                            // A deletion cannot be undone: the link asks first (`delete_comment_page`).
                            @if viewer.is(&comment.user_id) || viewer.is(&post.user_id) {
                                a class="danger" href={ "/posts/" (id) "/comments/" (url_part(&comment.id)) "/delete" } {
                                    "Delete this comment"
                                }
                            }
                        }
                    }
                }
            }
            @if let Some(token) = &comments.continuation_token {
                nav class="more" aria-label="More comments" {
                    a rel="next" href={ "/posts/" (id) "?continuationToken=" (url_part(token)) "#comments" } { "More comments" }
                }
            }
            // Also to someone whose sign-in ended while they wrote: what they typed, and why it
            // was not sent.
            @if viewer.id().is_some() || comment.refusal.is_some() {
                (form(&format!("/posts/{id}/comments"), "comment", &COMMENT_FIELDS, comment, "Comment"))
            }
        }
    }
}

/// `POST /posts/{postId}/comments`: C3, then back to the post's comments; refused, the post
/// page again with the comment kept and the reason next to it.
pub(crate) async fn submit_comment(
    State(state): State<AppState>,
    _: SameOrigin,
    viewer: Viewer,
    PageId(post_id): PageId,
    Form(typed, key): Form<CommentForm>,
) -> PageResult {
    let written = submit(
        &state,
        &viewer,
        key.as_ref(),
        async |caller| {
            let comment = create_comment(&state, caller, &post_id, &caller.id, typed.content.clone()).await?;
            // On a long post the new comment is on a later page than the first: back to that one.
            let page = page_of_comment(&state, &post_id, &comment.id).await.unwrap_or_else(|error| {
                tracing::warn!(error = %crate::logging::with_causes(&error), post = post_id, "the page of a new comment was not found; back to the first");
                None
            });
            Ok((comment, page))
        },
        |(comment, page)| match page {
            Some(token) => {
                format!("/posts/{}?continuationToken={}#comment-{}", url_part(&post_id), url_part(&token), url_part(&comment.id))
            }
            None => format!("/posts/{}#comment-{}", url_part(&post_id), url_part(&comment.id)),
        },
        POST_GONE,
        async |error| {
            let refusal = Some(Refusal::of(&error, &["content"]));
            let comment = Draft { values: vec![("content", &typed.content)], refusal, key: key.as_ref() };
            let extra = PostPageState { comment, like_refused: None };
            Ok(render_post(&state, &viewer, &post_id, &ListParams::default(), Freshness::Read, extra, error.status)
                .await?
                .into_response())
        },
    )
    .await;
    wrote_to(&post_id, written)
}

/// `GET /posts/{postId}/comments`: the post's comments. A refused comment renders the post page
/// at the form's address; this is what that address shows when it is reloaded or bookmarked.
pub(crate) async fn post_comments(PageId(post_id): PageId) -> Response {
    Redirect::to(&format!("/posts/{}#comments", url_part(&post_id))).into_response()
}

/// `POST /posts/{postId}/likes`: C4, then back to the post; refused (a second like), the post
/// page again with the reason.
pub(crate) async fn submit_like(
    State(state): State<AppState>,
    _: SameOrigin,
    viewer: Viewer,
    PageId(post_id): PageId,
    Form(ButtonForm {}, key): Form<ButtonForm>,
) -> PageResult {
    back_to_post(&state, &viewer, key, &post_id, async |caller| {
        create_like(&state, caller, &post_id, &caller.id).await
    })
    .await
}

/// `POST /posts/{postId}/unlike`: C5, then back to the post; refused, the post page again with
/// the reason.
pub(crate) async fn submit_unlike(
    State(state): State<AppState>,
    _: SameOrigin,
    viewer: Viewer,
    PageId(post_id): PageId,
    Form(ButtonForm {}, key): Form<ButtonForm>,
) -> PageResult {
    back_to_post(&state, &viewer, key, &post_id, async |caller| {
        delete_like(&state, caller, &post_id, &caller.id).await
    })
    .await
}

/// After the like or unlike button: back to the post, at the button; refused (a second like, a like already
/// taken back in another tab), the post page again with the reason. A post that is gone is the
/// 404 page, which rendering it answers.
async fn back_to_post<T>(
    state: &AppState,
    viewer: &Viewer,
    key: Option<IdempotencyKey>,
    post_id: &str,
    write: impl AsyncFnOnce(&Caller) -> AppResult<T>,
) -> PageResult {
    let written = submit(
        state,
        viewer,
        key.as_ref(),
        write,
        |_| format!("/posts/{}#actions", url_part(post_id)),
        &[],
        async |error| {
            let extra = PostPageState { like_refused: Some(error.detail), ..Default::default() };
            Ok(render_post(
                state,
                viewer,
                post_id,
                &ListParams::default(),
                Freshness::Read,
                extra,
                error.status,
            )
            .await?
            .into_response())
        },
    )
    .await;
    wrote_to(post_id, written)
}

/// `GET /posts/{postId}/comments/{commentId}/delete`: asks the comment's author (or the post's)
/// to confirm, showing the comment, since a deletion cannot be undone.
pub(crate) async fn delete_comment_page(
    State(state): State<AppState>,
    viewer: Viewer,
    PageIds(post_id, comment_id): PageIds,
) -> PageResult {
    let (post, comment) =
        comment_to_delete(&state, &viewer.caller()?, &post_id, &comment_id).await?;
    let id = url_part(&post.id);
    let main = html! {
        h1 { "Delete this comment?" }
        p class="meta" {
            "On " a href={ "/posts/" (id) } { bdi { (esc(&post.title)) } } ", by "
            bdi { (esc(&comment.user_username)) } " · " (time(&comment.creation_date))
        }
        blockquote dir="auto" { (esc(&comment.content)) }
        p { "It is deleted for good." }
        div class="actions" {
            form method="post" action={ "/posts/" (id) "/comments/" (url_part(&comment.id)) "/delete" } {
                (one_time_key())
                button type="submit" class="danger" { "Delete" }
            }
            a href={ "/posts/" (id) "#comment-" (url_part(&comment.id)) } { "Keep it" }
        }
    };
    Ok(Page {
        status: StatusCode::OK,
        html: layout("Delete this comment", &viewer, main),
        private: true,
    }
    .into_response())
}

/// `POST /posts/{postId}/comments/{commentId}/delete`: C6, then back to the comments.
pub(crate) async fn submit_comment_delete(
    State(state): State<AppState>,
    _: SameOrigin,
    viewer: Viewer,
    PageIds(post_id, comment_id): PageIds,
    Form(ButtonForm {}, key): Form<ButtonForm>,
) -> PageResult {
    let caller = viewer.writer(&state, key)?;
    delete_comment(&state, &caller, &post_id, &comment_id).await?;
    wrote_to(
        &post_id,
        Ok(Redirect::to(&format!("/posts/{}#comments", url_part(&post_id))).into_response()),
    )
}

/// `GET /preview/{postId}/{key}`: an unpublished post as readers will see it, to whoever has
/// its author's preview link: marked as a preview, `noindex`, private (never kept by a shared
/// cache). A wrong key, or none shared, is not found; a post published since is at its own
/// address.
pub(crate) async fn preview_page(
    State(state): State<AppState>,
    viewer: Viewer,
    PageIds(post_id, key): PageIds,
) -> PageResult {
    let post = previewed_post(&state, &post_id, &key).await?;
    if post.status.is_published() {
        return Ok(Redirect::to(&format!("/posts/{}", url_part(&post_id))).into_response());
    }
    let content = crate::model::markdown::to_html(
        &post.content,
        crate::model::markdown::Pictures::Of { owner: &post.user_id, post: &post.id },
        2,
    );
    let main = html! {
        p class="notice" role="status" {
            "A preview: this post is not published yet. Whoever has this link can read it, until its writer stops sharing it."
        }
        (post_article(&post, &content, &viewer, false, None))
    };
    let head = Head { article: true, noindex: true, ..Head::default() };
    let html = page_layout(&post.title, &viewer, head, main);
    // Its links tell another site the blog's origin alone, never this address with its key
    // (every page's `Referrer-Policy`, `strict-origin-when-cross-origin`).
    Ok(Page { status: StatusCode::OK, html, private: true }.into_response())
}

/// `GET /posts/{postId}/delete`: asks its author to confirm, since a deletion cannot be undone.
pub(crate) async fn delete_post_page(
    State(state): State<AppState>,
    viewer: Viewer,
    PageId(post_id): PageId,
) -> PageResult {
    let post = get_post_for(&state, &post_id, viewer.id()).await?;
    viewer.caller()?.must_be(&post.user_id, "delete this post")?;
    let id = url_part(&post.id);
    let main = html! {
        h1 { "Delete “" bdi { (esc(&post.title)) } "”?" }
        p {
            "The post, its " (count(post.comment_count, "comment", "comments")) " and its "
            (count(post.like_count, "like", "likes")) " are deleted for good."
        }
        div class="actions" {
            form method="post" action={ "/posts/" (id) "/delete" } {
                (one_time_key())
                button type="submit" class="danger" { "Delete" }
            }
            a href={ "/posts/" (id) } { "Keep it" }
        }
    };
    Ok(Page {
        status: StatusCode::OK,
        html: layout("Delete this post", &viewer, main),
        private: true,
    }
    .into_response())
}

/// `POST /posts/{postId}/delete`: C7, then the author's page (where the post's copy goes with
/// the change feed, as it came).
pub(crate) async fn submit_post_delete(
    State(state): State<AppState>,
    _: SameOrigin,
    viewer: Viewer,
    PageId(post_id): PageId,
    Form(ButtonForm {}, key): Form<ButtonForm>,
) -> PageResult {
    let caller = viewer.writer(&state, key)?;
    delete_post(&state, &caller, &post_id).await?;
    Ok(Redirect::to(&format!("/users/{}", url_part(&caller.id))).into_response())
}
