//! A user's page (Q1 + Q3), and the forms that create (C1) and rename (C1 edit) the signed-in
//! person's own user.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use maud::html;
use serde::Deserialize;

use super::short_posts::post_list;
use super::{
    Draft, Field, Form, Head, Page, PageFeed, PageId, PageQuery, PageResult, Refusal, SITE_NAME,
    SameOrigin, Viewer, esc, form, layout, page_layout, submit, url_part,
};
use crate::app::idempotency::IdempotencyKey;
use crate::app::lists::{ListParams, OwnerKnown};
use crate::app::users::{create_user, drafts_of, posts_of, rename_user, shown_user};
use crate::app::{AppError, AppState, Missing};
use crate::http::error::ApiError;

// The hint says the limit the API applies; the assertion keeps it true.
const _: () = assert!(crate::model::MAX_USERNAME_CHARS == 64);
const USERNAME_FIELDS: [Field; 1] = [Field {
    name: "username",
    label: "Username",
    hint: "Shown beside everything you write; up to 64 characters, and yours alone: a name another user has, in any \
           case, is taken.",
    multiline: false,
    max_chars: crate::model::MAX_USERNAME_CHARS,
    optional: false,
}];

/// A username, as typed into the form.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UsernameForm {
    #[serde(default)]
    username: String,
}

/// `GET /users/{userId}`: the user and their posts, newest first (paged with
/// `?continuationToken=`); Q1 and Q3 run concurrently. The signed-in person's own page offers
/// to rename them, or, before they have a user, to create it. Answered 304 to a matching
/// `If-None-Match`.
pub(crate) async fn user_page(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    PageId(user_id): PageId,
    PageQuery(params): PageQuery<ListParams>,
) -> PageResult {
    render_user(
        &state,
        &viewer,
        &user_id,
        &params,
        Draft::default(),
        StatusCode::OK,
        Some(&headers),
    )
    .await
}

async fn render_user(
    state: &AppState,
    viewer: &Viewer,
    user_id: &str,
    params: &ListParams,
    draft: Draft<'_>,
    status: StatusCode,
    request: Option<&HeaderMap>,
) -> PageResult {
    let (user, posts) = tokio::join!(
        shown_user(state, user_id, viewer.is(user_id)),
        posts_of(state, user_id, params, OwnerKnown::Yes)
    );
    let user = match user {
        Ok(user) => user,
        // Signed in for the first time: their page is where they choose their name.
        Err(AppError::NotFound(Missing::User(_))) if viewer.is(user_id) => {
            let main = html! {
                h1 { "Welcome" }
                p { "Choose the name others will see beside your posts and comments." }
                (form("/users", "profile", &USERNAME_FIELDS, &draft, "Create my profile"))
            };
            return Ok(Page { status, html: layout("Welcome", viewer, main), private: true }
                .into_response());
        }
        Err(error) => return Err(error.into()),
    };
    let posts = posts?;
    // Their own page shows its owner their drafts, the newest first page of them: one query on
    // their partition, read anew (they have always just written).
    let drafts = match viewer.caller() {
        Ok(caller) if viewer.is(user_id) => {
            Some(drafts_of(state, &caller, user_id, &ListParams::default()).await?)
        }
        _ => None,
    };
    let draft = if draft.values.is_empty() {
        Draft { values: vec![("username", &user.username)], refusal: None, key: None }
    } else {
        draft
    };
    let main = html! {
        h1 dir="auto" { (esc(&user.username)) }
        @if viewer.is(user_id) {
            details open[draft.refusal.is_some()] {
                summary { "Rename" }
                (form(&format!("/users/{}", url_part(user_id)), "rename", &USERNAME_FIELDS, &draft, "Rename"))
            }
        }
        @if let Some(drafts) = drafts.as_ref().filter(|drafts| !drafts.items.is_empty()) {
            section aria-labelledby="drafts" {
                h2 id="drafts" { "Your drafts" }
                p class="hint" { "Only you can see these, until you publish them from their edit page." }
                (post_list(&drafts.items, false))
                @if drafts.continuation_token.is_some() {
                    p class="hint" { "These are the newest " (drafts.items.len()) "; GET /api/users/" (url_part(user_id)) "/drafts lists them all." }
                }
            }
        }
        section aria-labelledby="posts" {
            h2 id="posts" { "Posts" }
            @if posts.items.is_empty() {
                p { "No posts yet." }
            } @else {
                (post_list(&posts.items, false))
            }
            @if let Some(token) = &posts.continuation_token {
                nav class="more" aria-label="More posts" {
                    a rel="next" href={ "/users/" (url_part(user_id)) "?continuationToken=" (url_part(token)) } { "More posts" }
                }
            }
            p class="hint" {
                a href={ "/users/" (url_part(user_id)) "/feed.atom" } { "Follow " bdi { (esc(&user.username)) } "’s posts" } " (Atom feed)"
            }
        }
    };
    let feed_title = format!("{}: posts", user.username);
    let feed =
        PageFeed { title: &feed_title, href: format!("/users/{}/feed.atom", url_part(user_id)) };
    // A shared link to someone's page says whose it is, not what the blog is.
    let head = Head {
        description: Some(format!("Posts by {} on {SITE_NAME}.", user.username)),
        feed: Some(feed),
        ..Head::default()
    };
    let html = page_layout(&user.username, viewer, head, main);
    let page = Page { status, html, private: viewer.id().is_some() };
    // Viewed, it revalidates with its ETag; shown again with a refused form, it is new.
    Ok(match request {
        Some(request) => page.revalidated(request),
        None => page.into_response(),
    })
}

/// `POST /users`: C1, the signed-in person's own user, then their page.
pub(crate) async fn submit_new_user(
    State(state): State<AppState>,
    _: SameOrigin,
    viewer: Viewer,
    Form(typed, key): Form<UsernameForm>,
) -> PageResult {
    submit(
        &state,
        &viewer,
        key.as_ref(),
        async |caller| create_user(&state, caller, typed.username.clone()).await,
        |user| format!("/users/{}", url_part(&user.id)),
        // Nobody signed in has no page of their own to show the form on.
        &[StatusCode::UNAUTHORIZED],
        async |error| {
            // Refused to someone signed in (nobody signed in is the error page): their own page.
            let own = viewer.id().unwrap_or_default();
            render_user(
                &state,
                &viewer,
                own,
                &ListParams::default(),
                username_draft(&typed, &error, key.as_ref()),
                error.status,
                None,
            )
            .await
        },
    )
    .await
}

/// `POST /users/{userId}`: C1 edit, then the user's page (the new name reaches their posts
/// through the change feed a moment later).
pub(crate) async fn submit_rename(
    State(state): State<AppState>,
    _: SameOrigin,
    viewer: Viewer,
    PageId(user_id): PageId,
    Form(typed, key): Form<UsernameForm>,
) -> PageResult {
    submit(
        &state,
        &viewer,
        key.as_ref(),
        async |caller| rename_user(&state, caller, &user_id, typed.username.clone()).await,
        |user| format!("/users/{}", url_part(&user.id)),
        // Nobody signed in, or someone else: the user's page shows them no rename form.
        &[StatusCode::UNAUTHORIZED, StatusCode::FORBIDDEN],
        async |error| {
            render_user(
                &state,
                &viewer,
                &user_id,
                &ListParams::default(),
                username_draft(&typed, &error, key.as_ref()),
                error.status,
                None,
            )
            .await
        },
    )
    .await
}

fn username_draft<'a>(
    typed: &'a UsernameForm,
    error: &ApiError,
    key: Option<&'a IdempotencyKey>,
) -> Draft<'a> {
    Draft {
        values: vec![("username", &typed.username)],
        refusal: Some(Refusal::of(error, &["username"])),
        key,
    }
}
