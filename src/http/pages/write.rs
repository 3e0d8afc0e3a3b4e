//! The forms to write a post and to edit one (C2).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::extractors::PICTURE_FIELD;
use super::posts::{ButtonForm, POST_GONE, wrote_to};
use super::{
    ChosenPicture, Draft, Field, Form, FormWithPicture, Page, PageId, PageResult, Refusal,
    SameOrigin, Viewer, esc, form_with, forms::Submit, layout, one_time_key, submit, url_part,
};
use crate::app::AppState;
use crate::app::idempotency::IdempotencyKey;
use crate::app::lists::ListParams;
use crate::app::pictures::{self, AddedPicture, PictureTarget, Quota, add_picture, destination};
use crate::app::posts::{
    StatusAsked, create_post, edit_post, get_post, get_post_for, own_post, set_preview_key,
};
use crate::app::revisions::revisions_page;
use crate::http::error::ApiError;
use crate::model::tags::{MAX_TAG_CHARS, MAX_TAGS, split_typed};
use crate::model::{MAX_CONTENT_CHARS, MAX_TITLE_CHARS, PostStatus};
use crate::pictures::Usage;

// The hints say the limits the API applies; the assertion keeps them true.
const POST_FIELDS: [Field; 4] = [
    Field {
        name: "title",
        label: "Title",
        hint: "Up to 200 characters.",
        multiline: false,
        max_chars: MAX_TITLE_CHARS,
        optional: false,
    },
    Field {
        name: "content",
        label: "Text",
        hint: "Markdown: **bold**, *italic*, [a link](https://…), # a heading, ``` for code. Up to 20,000 characters.",
        multiline: true,
        max_chars: MAX_CONTENT_CHARS,
        optional: false,
    },
    Field {
        name: "tags",
        label: "Tags",
        hint: "Optional: up to 5, separated by commas, each up to 32 characters (rust, Cosmos DB).",
        multiline: false,
        // Every tag at its longest, with a comma and a space between each two.
        max_chars: MAX_TAGS * (MAX_TAG_CHARS + 2),
        optional: true,
    },
    Field {
        name: "publishAt",
        label: "Publish at (UTC)",
        hint: "For Schedule: a date and time in UTC, as 2026-12-07 08:00. Only you see the post until then.",
        multiline: false,
        max_chars: 40,
        optional: true,
    },
];
const _: () = assert!(
    MAX_TITLE_CHARS == 200 && MAX_CONTENT_CHARS == 20_000 && MAX_TAGS == 5 && MAX_TAG_CHARS == 32
);

/// A post's title and text, as typed into the form, and the picture's description and which
/// button sent it (`add-picture`: add the chosen picture to the text and show the form again).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PostForm {
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: String,
    /// The tags, separated by commas.
    #[serde(default)]
    tags: String,
    #[serde(default)]
    alt: String,
    /// When to publish it, for Schedule: UTC, as the field's label says.
    #[serde(default, rename = "publishAt")]
    publish_at: String,
    #[serde(default)]
    action: String,
}

/// The value of the button that adds the chosen picture and shows the form again.
const ADD_PICTURE: &str = "add-picture";
/// The value of the button that keeps the post as a draft: saved for its writer alone.
const SAVE_DRAFT: &str = "draft";
/// The value of the button that publishes a draft.
const PUBLISH: &str = "publish";
/// The value of the button that schedules the post at the form's time.
const SCHEDULE: &str = "schedule";

impl PostForm {
    /// The status the button pressed asks for the post: none keeps it (an edit's Save). The
    /// time is the form's, in UTC as its label says; written as a date and a time of day
    /// (`2026-12-07 08:00`, or as a browser's `datetime-local` sends it), or in RFC 3339 whole.
    fn asked(&self) -> StatusAsked {
        let status = match self.action.as_str() {
            SAVE_DRAFT => Some(PostStatus::Draft),
            PUBLISH => Some(PostStatus::Published),
            SCHEDULE => Some(PostStatus::Scheduled),
            _ => None,
        };
        let typed = self.publish_at.trim();
        let publish_at = (status == Some(PostStatus::Scheduled)).then(|| {
            let (date, time) = typed.split_once([' ', 'T']).unwrap_or((typed, ""));
            let is_minute = time.len() == 5 && time.as_bytes()[2] == b':' && date.len() == 10;
            if is_minute { format!("{date}T{time}:00Z") } else { typed.to_owned() }
        });
        StatusAsked { status, publish_at: publish_at.filter(|at| !at.is_empty()) }
    }
}

/// `GET /write`: the form for a new post.
pub(crate) async fn new_post_page(State(state): State<AppState>, viewer: Viewer) -> Response {
    let form = PostFormPage { editing: None, draft: Draft::default(), added: None, status: None };
    form.render(&state, &viewer, StatusCode::OK).await
}

/// `POST /write`: C2, then the new post's own page (a point read: it shows the post at once,
/// while its copies in the feed and the author's list follow through the change feed). With a
/// picture, the picture is stored first and its Markdown added to the end of the text; with
/// the "Add the picture" button, the form comes back with it, not yet published.
pub(crate) async fn submit_new_post(
    State(state): State<AppState>,
    _: SameOrigin,
    viewer: Viewer,
    FormWithPicture(mut typed, key, picture): FormWithPicture<PostForm>,
) -> PageResult {
    if let Some(form_again) =
        picture_first(&state, &viewer, None, key.as_ref(), &mut typed, picture).await
    {
        return Ok(form_again);
    }
    submit(
        &state,
        &viewer,
        key.as_ref(),
        async |caller| {
            create_post(
                &state,
                caller,
                &caller.id,
                typed.title.clone(),
                typed.content.clone(),
                split_typed(&typed.tags),
                typed.asked(),
            )
            .await
        },
        |post| format!("/posts/{}", url_part(&post.id)),
        &[],
        async |error| {
            let draft = post_draft(&typed, &error, key.as_ref());
            Ok(PostFormPage { editing: None, draft, added: None, status: None }
                .render(&state, &viewer, error.status)
                .await)
        },
    )
    .await
}

/// `GET /posts/{postId}/edit`: the form to edit a post, filled with it; only its author's.
pub(crate) async fn edit_post_page(
    State(state): State<AppState>,
    viewer: Viewer,
    PageId(post_id): PageId,
) -> PageResult {
    let (post, preview, revisions) = match viewer.caller() {
        Ok(caller) => {
            let own = own_post(&state, &caller, &post_id, "edit this post").await?;
            // Its author's already: the list needs no second read of the post.
            let listed = revisions_page(&state, &post_id, &ListParams::default()).await?;
            (own.post, own.share_key, listed)
        }
        // Nobody signed in: not found where it is a draft, else asked to sign in.
        Err(signed_out) => {
            get_post_for(&state, &post_id, None).await?;
            return Err(signed_out.into());
        }
    };
    let tags = post.tags.join(", ");
    // A scheduled post's time, as the field takes it: UTC, to the minute.
    let at = post.publish_at.as_deref().map(|at| at.get(..16).unwrap_or(at).replace('T', " "));
    let at = at.unwrap_or_default();
    let draft = Draft {
        values: vec![
            ("title", &post.title),
            ("content", &post.content),
            ("tags", &tags),
            ("publishAt", &at),
        ],
        refusal: None,
        key: None,
    };
    let form =
        PostFormPage { editing: Some(&post_id), draft, added: None, status: Some(post.status) };
    let preview = (!post.status.is_published()).then(|| preview_part(&post_id, preview.as_deref()));
    let after = html! {
        @if let Some(preview) = preview { (preview) }
        (super::revisions::revisions_part(&post_id, &revisions))
    };
    Ok(form.render_with(&state, &viewer, StatusCode::OK, Some(after)).await)
}

/// `POST /posts/{postId}/edit`: C2 edit, then the post; with a picture, as [`submit_new_post`].
pub(crate) async fn submit_post_edit(
    State(state): State<AppState>,
    _: SameOrigin,
    viewer: Viewer,
    PageId(post_id): PageId,
    FormWithPicture(mut typed, key, picture): FormWithPicture<PostForm>,
) -> PageResult {
    let editing = Some(post_id.as_str());
    if let Some(form_again) =
        picture_first(&state, &viewer, editing, key.as_ref(), &mut typed, picture).await
    {
        return Ok(form_again);
    }
    let written = submit(
        &state,
        &viewer,
        key.as_ref(),
        async |caller| {
            edit_post(
                &state,
                caller,
                &post_id,
                typed.title.clone(),
                typed.content.clone(),
                Some(split_typed(&typed.tags)),
                typed.asked(),
            )
            .await
        },
        |post| format!("/posts/{}", url_part(&post.id)),
        POST_GONE,
        async |error| {
            let draft = post_draft(&typed, &error, key.as_ref());
            let status = status_of(&state, editing).await;
            Ok(PostFormPage { editing, draft, added: None, status }
                .render(&state, &viewer, error.status)
                .await)
        },
    )
    .await;
    wrote_to(&post_id, written)
}

/// The status of the post `editing`, which says the form's buttons: one point read, made only
/// where the form is shown again (`None`: a new post, or one that cannot be read now).
async fn status_of(state: &AppState, editing: Option<&str>) -> Option<PostStatus> {
    get_post(state, editing?).await.ok().map(|post| post.status)
}

/// The form's picture, if one was chosen, added before the post is written (to the post being
/// edited, or the one the form will publish), its Markdown at the end of the text. Answers the
/// form's page again where it is not to be written now: the picture refused (what was typed
/// kept), or added with "Add the picture to the text".
async fn picture_first(
    state: &AppState,
    viewer: &Viewer,
    editing: Option<&str>,
    key: Option<&IdempotencyKey>,
    typed: &mut PostForm,
    picture: Option<ChosenPicture>,
) -> Option<Response> {
    let target = editing.map_or(PictureTarget::NewPost, PictureTarget::Post);
    let page = match with_picture(state, viewer, key, target, typed, picture).await {
        Err(refused) => {
            let status = status_of(state, editing).await;
            let draft = refused.draft(typed, key);
            PostFormPage { editing, draft, added: None, status }.render(
                state,
                viewer,
                refused.status(),
            )
        }
        Ok(added) if typed.action == ADD_PICTURE => {
            let values = vec![
                ("title", typed.title.as_str()),
                ("content", &typed.content),
                ("tags", &typed.tags),
                ("publishAt", &typed.publish_at),
            ];
            let draft = Draft { values, refusal: None, key };
            let status = status_of(state, editing).await;
            PostFormPage { editing, draft, added, status }.render(state, viewer, StatusCode::OK)
        }
        Ok(_) => return None,
    };
    Some(page.await)
}

/// Why a form's picture was not added: the API's error, and the field it is about.
struct PictureRefused {
    error: ApiError,
    field: &'static str,
}

impl PictureRefused {
    fn status(&self) -> StatusCode {
        self.error.status
    }

    /// The form again, with what was typed (the picture must be chosen again: a browser never
    /// fills a file input), and the refusal under the picture or its description.
    fn draft<'a>(&self, typed: &'a PostForm, key: Option<&'a IdempotencyKey>) -> Draft<'a> {
        let mut refusal = Refusal::of(&self.error, &[]);
        if refusal.detail == self.error.detail {
            refusal.field = Some(self.field);
        }
        Draft {
            values: vec![
                ("title", &typed.title),
                ("content", &typed.content),
                ("tags", &typed.tags),
                ("publishAt", &typed.publish_at),
                ("alt", &typed.alt),
            ],
            refusal: Some(refusal),
            key,
        }
    }
}

/// Adds the form's picture, if one was chosen, to `target`, and its Markdown to the end of the
/// text: the picture the form's page then shows as added.
async fn with_picture(
    state: &AppState,
    viewer: &Viewer,
    key: Option<&IdempotencyKey>,
    target: PictureTarget<'_>,
    typed: &mut PostForm,
    picture: Option<ChosenPicture>,
) -> Result<Option<AddedPicture>, PictureRefused> {
    let refused = |error: ApiError, field| PictureRefused { error, field };
    let Some(picture) = picture else {
        if typed.action == ADD_PICTURE {
            return Err(refused(
                ApiError::bad_request(
                    "Choose a picture to add, then press \u{201c}Add the picture\u{201d}.",
                ),
                "picture",
            ));
        }
        return Ok(None);
    };
    if typed.alt.trim().is_empty() {
        let detail = "Say what the picture shows, for readers who cannot see it; then choose the picture again.";
        return Err(refused(ApiError::bad_request(detail), "alt"));
    }
    let caller = viewer.writer(state, key.cloned()).map_err(|error| refused(error, "picture"))?;
    let added = async {
        let destination = destination(state, &caller, target, typed.alt.trim()).await?;
        add_picture(state, &caller, destination, picture.bytes, picture.declared.as_deref()).await
    }
    .await
    .map_err(|error| refused(ApiError::from(error), "picture"))?;
    let text = typed.content.trim_end();
    typed.content = if text.is_empty() {
        added.markdown.clone()
    } else {
        format!("{text}\n\n{}", added.markdown)
    };
    typed.alt.clear();
    Ok(Some(added))
}

fn post_draft<'a>(
    typed: &'a PostForm,
    error: &ApiError,
    key: Option<&'a IdempotencyKey>,
) -> Draft<'a> {
    Draft {
        values: vec![
            ("title", &typed.title),
            ("content", &typed.content),
            ("tags", &typed.tags),
            ("publishAt", &typed.publish_at),
        ],
        refusal: Some(Refusal::of(error, &["title", "content", "tags", "publishAt"])),
        key,
    }
}

/// The new-post form (`editing` is `None`) or the edit form of the post `editing`, with the
/// picture just added, if one was.
struct PostFormPage<'a> {
    editing: Option<&'a str>,
    draft: Draft<'a>,
    added: Option<AddedPicture>,
    /// The edited post's status, which says its buttons (`None`: a new post, or not known).
    status: Option<PostStatus>,
}

/// The edit page's part that shares an unpublished post before it is published: its preview
/// link, if one is shared (`key`), and the button that shares one or stops sharing it.
fn preview_part(post_id: &str, key: Option<&str>) -> Markup {
    let id = url_part(post_id);
    html! {
        section aria-labelledby="preview" {
            h2 id="preview" { "Preview link" }
            @if let Some(key) = key {
                p {
                    "Whoever has this link reads the post as it will be published: "
                    a href={ "/preview/" (id) "/" (url_part(key)) } { "the preview" } "."
                }
                form method="post" action={ "/posts/" (id) "/preview/revoke" } {
                    (one_time_key())
                    button.secondary type="submit" { "Stop sharing" }
                }
            } @else {
                p { "Share the post before it is published: whoever has the link can read it, until you stop sharing it." }
                form method="post" action={ "/posts/" (id) "/preview" } {
                    (one_time_key())
                    button.secondary type="submit" { "Share a preview link" }
                }
            }
        }
    }
}

/// `POST /posts/{postId}/preview`: shares a preview link of the writer's unpublished post (a
/// new one revokes the one before), then back to its edit page, which shows it.
pub(crate) async fn submit_share_preview(
    State(state): State<AppState>,
    _: SameOrigin,
    viewer: Viewer,
    PageId(post_id): PageId,
    Form(ButtonForm {}, key): Form<ButtonForm>,
) -> PageResult {
    preview_button(&state, &viewer, key, &post_id, true).await
}

/// `POST /posts/{postId}/preview/revoke`: the preview link stops working.
pub(crate) async fn submit_revoke_preview(
    State(state): State<AppState>,
    _: SameOrigin,
    viewer: Viewer,
    PageId(post_id): PageId,
    Form(ButtonForm {}, key): Form<ButtonForm>,
) -> PageResult {
    preview_button(&state, &viewer, key, &post_id, false).await
}

async fn preview_button(
    state: &AppState,
    viewer: &Viewer,
    key: Option<IdempotencyKey>,
    post_id: &str,
    share: bool,
) -> PageResult {
    submit(
        state,
        viewer,
        key.as_ref(),
        async |caller| set_preview_key(state, caller, post_id, share).await,
        |_| format!("/posts/{}/edit#preview", url_part(post_id)),
        &[],
        // Refused (published meanwhile, signed out): the error page says why.
        async |error| Err(error.into()),
    )
    .await
}

impl PostFormPage<'_> {
    async fn render(self, state: &AppState, viewer: &Viewer, status: StatusCode) -> Response {
        self.render_with(state, viewer, status, None).await
    }

    /// The form's page, with `after` below the form (the preview link's part).
    async fn render_with(
        self,
        state: &AppState,
        viewer: &Viewer,
        status: StatusCode,
        after: Option<Markup>,
    ) -> Response {
        let (heading, action) = match self.editing {
            None => ("Write a post".to_owned(), "/write".to_owned()),
            Some(id) => ("Edit your post".to_owned(), format!("/posts/{}/edit", url_part(id))),
        };
        // Enter presses the first: what the writer does most with the post as it is.
        let buttons = match (self.editing, self.status) {
            (None, _) => Submit {
                label: "Publish",
                also: &[("Save as draft", SAVE_DRAFT), ("Schedule", SCHEDULE)],
            },
            (Some(_), Some(PostStatus::Draft)) => Submit {
                label: "Save the draft",
                also: &[("Publish", PUBLISH), ("Schedule", SCHEDULE)],
            },
            (Some(_), Some(PostStatus::Scheduled)) => Submit {
                label: "Save",
                also: &[
                    ("Publish now", PUBLISH),
                    ("Schedule", SCHEDULE),
                    ("Back to draft", SAVE_DRAFT),
                ],
            },
            (Some(_), _) => Submit { label: "Save", also: &[("Back to draft", SAVE_DRAFT)] },
        };
        let submit = buttons.label;
        // What the writer keeps, said on the form (nothing when the blog keeps no pictures).
        let usage = match viewer.id() {
            Some(writer) if state.pictures.is_some() => pictures::usage(state, writer).await.ok(),
            _ => None,
        };
        let picture_part = usage.map(|(usage, quota)| picture_fieldset(&self.draft, usage, quota));
        let main = html! {
            h1 { (heading) }
            // Signed out with nothing typed: where to sign in. Signed out with a refused draft (the
            // sign-in ended while they wrote): the form, with what they typed and why.
            @if viewer.id().is_none() && self.draft.refusal.is_none() {
                p { a href={ "/signin?return=" (url_part(&action)) } { "Sign in" } " to write." }
            } @else {
                @if let Some(added) = &self.added {
                    p class="notice" role="status" {
                        "The picture is added at the end of the text. Move its line to where it belongs, then "
                        (submit.to_lowercase()) "."
                    }
                    p { img src=(added.address.url()) alt=(added.alt) width=(added.address.name.size().0.min(320)) height=(scaled_height(&added.address, 320)); }
                }
                (form_with(&action, "post", &POST_FIELDS, &self.draft, buttons, picture_part))
                // Leaving the edit changes nothing: back to the post as it is.
                @if let Some(id) = self.editing {
                    p { a href={ "/posts/" (url_part(id)) } { "Cancel" } }
                }
                @if let Some(after) = after {
                    (after)
                }
            }
        };
        Page { status, html: layout(&heading, viewer, main), private: true }.into_response()
    }
}

/// The part of the post's form that adds a picture: the file, what it shows, the button, and
/// how many more the writer may keep.
fn picture_fieldset(draft: &Draft, usage: Usage, quota: Quota) -> maud::Markup {
    let error = |field: &str| {
        draft
            .refusal
            .as_ref()
            .filter(|refusal| refusal.field == Some(field))
            .map(|refusal| refusal.detail.clone())
    };
    let (picture_error, alt_error) = (error("picture"), error("alt"));
    let alt = draft.values.iter().find(|(name, _)| *name == "alt").map_or("", |(_, value)| value);
    let described = |error: &Option<String>, field: &str| {
        let hint = format!("post-{field}-hint");
        match error {
            Some(_) => format!("post-{field}-error {hint}"),
            None => hint,
        }
    };
    html! {
        fieldset class="picture" {
            legend { "Add a picture" }
            p class="field" {
                label for="post-picture" { "Picture" }
                span class="hint" id="post-picture-hint" {
                    "JPEG, PNG, WebP or GIF, up to 10 MB; its location and camera details are removed. You keep "
                    (usage.pictures) " of " (quota.pictures) " pictures (" (megabytes(usage.bytes)) " of " (megabytes(quota.bytes)) ")."
                }
                @if let Some(error) = &picture_error {
                    span class="error" role="alert" id="post-picture-error" { (esc(error)) }
                }
                input id="post-picture" name=(PICTURE_FIELD) type="file" accept="image/jpeg,image/png,image/webp,image/gif"
                    aria-invalid=[picture_error.as_ref().map(|_| "true")] aria-describedby=(described(&picture_error, "picture"));
            }
            p class="field" {
                label for="post-alt" { "What it shows" }
                span class="hint" id="post-alt-hint" { "For readers who cannot see it: read out by screen readers. Up to 300 characters." }
                @if let Some(error) = &alt_error {
                    span class="error" role="alert" id="post-alt-error" { (esc(error)) }
                }
                input id="post-alt" name="alt" type="text" value=(esc(alt)) maxlength="300"
                    aria-invalid=[alt_error.as_ref().map(|_| "true")] aria-describedby=(described(&alt_error, "alt"));
            }
            p { button.secondary type="submit" name="action" value=(ADD_PICTURE) formnovalidate { "Add the picture to the text" } }
        }
    }
}

/// `bytes` as the form says them: `48 KB`, `2.1 MB`, `500 MB`.
fn megabytes(bytes: u64) -> String {
    const MB: u64 = 1024 * 1024;
    match bytes {
        0 => "0 MB".to_owned(),
        bytes if bytes < MB => format!("{} KB", bytes.div_ceil(1024)),
        bytes if bytes % MB == 0 => format!("{} MB", bytes / MB),
        bytes => format!("{:.1} MB", bytes as f64 / MB as f64),
    }
}

/// The height of a picture shown `width` pixels wide at most, in proportion.
fn scaled_height(address: &crate::model::picture::PictureAddress, width: u32) -> u32 {
    let (w, h) = address.name.size();
    if w <= width { h } else { ((u64::from(h) * u64::from(width)) / u64::from(w)).max(1) as u32 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_said_as_a_person_reads_them() {
        let said: Vec<String> = [0, 1, 49_254, 1024 * 1024, 2_202_010, 500 * 1024 * 1024]
            .into_iter()
            .map(megabytes)
            .collect();
        assert_eq!(said, ["0 MB", "1 KB", "49 KB", "1 MB", "2.1 MB", "500 MB"]);
    }
}
