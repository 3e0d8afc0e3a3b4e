//! The forms to write a post and to edit one (C2).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Deserialize;

use super::posts::{POST_GONE, wrote_to};
use super::{Draft, Field, Form, Page, PageId, PageResult, Refusal, SameOrigin, Viewer, form, layout, submit, url_part};
use crate::app::AppState;
use crate::app::idempotency::IdempotencyKey;
use crate::app::posts::{create_post, edit_post, get_post};
use crate::http::error::ApiError;
use crate::model::{MAX_CONTENT_CHARS, MAX_TITLE_CHARS};

// The hints say the limits the API applies; the assertion keeps them true.
const POST_FIELDS: [Field; 2] = [
    Field { name: "title", label: "Title", hint: "Up to 200 characters.", multiline: false, max_chars: MAX_TITLE_CHARS },
    Field {
        name: "content",
        label: "Text",
        hint: "Markdown: **bold**, *italic*, [a link](https://…), # a heading, ``` for code. Up to 20,000 characters.",
        multiline: true,
        max_chars: MAX_CONTENT_CHARS,
    },
];
const _: () = assert!(MAX_TITLE_CHARS == 200 && MAX_CONTENT_CHARS == 20_000);

/// A post's title and text, as typed into the form.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PostForm {
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: String,
}

/// `GET /write`: the form for a new post.
pub(crate) async fn new_post_page(viewer: Viewer) -> Response {
    post_form_page(&viewer, None, Draft::default(), StatusCode::OK)
}

/// `POST /write`: C2, then the new post's own page (a point read: it shows the post at once,
/// while its copies in the feed and the author's list follow through the change feed).
pub(crate) async fn submit_new_post(
    State(state): State<AppState>,
    _: SameOrigin,
    viewer: Viewer,
    Form(typed, key): Form<PostForm>,
) -> PageResult {
    submit(
        &state,
        &viewer,
        key.as_ref(),
        async |caller| create_post(&state, caller, &caller.id, typed.title.clone(), typed.content.clone()).await,
        |post| format!("/posts/{}", url_part(&post.id)),
        &[],
        async |error| Ok(post_form_page(&viewer, None, post_draft(&typed, &error, key.as_ref()), error.status)),
    )
    .await
}

/// `GET /posts/{postId}/edit`: the form to edit a post, filled with it; only its author's.
pub(crate) async fn edit_post_page(State(state): State<AppState>, viewer: Viewer, PageId(post_id): PageId) -> PageResult {
    let post = get_post(&state, &post_id).await?;
    viewer.caller()?.must_be(&post.user_id, "edit this post")?;
    let draft = Draft { values: vec![("title", &post.title), ("content", &post.content)], refusal: None, key: None };
    Ok(post_form_page(&viewer, Some(&post_id), draft, StatusCode::OK))
}

/// `POST /posts/{postId}/edit`: C2 edit, then the post.
pub(crate) async fn submit_post_edit(
    State(state): State<AppState>,
    _: SameOrigin,
    viewer: Viewer,
    PageId(post_id): PageId,
    Form(typed, key): Form<PostForm>,
) -> PageResult {
    let written = submit(
        &state,
        &viewer,
        key.as_ref(),
        async |caller| edit_post(&state, caller, &post_id, typed.title.clone(), typed.content.clone()).await,
        |post| format!("/posts/{}", url_part(&post.id)),
        POST_GONE,
        async |error| Ok(post_form_page(&viewer, Some(&post_id), post_draft(&typed, &error, key.as_ref()), error.status)),
    )
    .await;
    wrote_to(&post_id, written)
}

fn post_draft<'a>(typed: &'a PostForm, error: &ApiError, key: Option<&'a IdempotencyKey>) -> Draft<'a> {
    Draft {
        values: vec![("title", &typed.title), ("content", &typed.content)],
        refusal: Some(Refusal::of(error, &["title", "content"])),
        key,
    }
}

/// The new-post form (`editing` is `None`) or the edit form of the post `editing`.
fn post_form_page(viewer: &Viewer, editing: Option<&str>, draft: Draft, status: StatusCode) -> Response {
    let (heading, action, submit) = match editing {
        None => ("Write a post".to_owned(), "/write".to_owned(), "Publish"),
        Some(id) => ("Edit your post".to_owned(), format!("/posts/{}/edit", url_part(id)), "Save"),
    };
    let main = html! {
        h1 { (heading) }
        // Signed out with nothing typed: where to sign in. Signed out with a refused draft (the
        // sign-in ended while they wrote): the form, with what they typed and why.
        @if viewer.id().is_none() && draft.refusal.is_none() {
            p { a href={ "/signin?return=" (url_part(&action)) } { "Sign in" } " to write." }
        } @else {
            (form(&action, "post", &POST_FIELDS, &draft, submit))
            // Leaving the edit changes nothing: back to the post as it is.
            @if let Some(id) = editing {
                p { a href={ "/posts/" (url_part(id)) } { "Cancel" } }
            }
        }
    };
    Page { status, html: layout(&heading, viewer, main), private: true }.into_response()
}
