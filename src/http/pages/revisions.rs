//! A post's revisions on its author's pages: listed on the edit page, each read with what
//! changed since, and restored by a button, all without JavaScript.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use maud::{Markup, html};

use super::posts::ButtonForm;
use super::short_posts::time;
use super::{
    Form, Page, PageIds, PageResult, SameOrigin, Viewer, esc, layout, one_time_key, submit,
    url_part,
};
use crate::app::AppState;
use crate::app::lists::ListPage;
use crate::app::revisions::{RevisionRead, restore, revision};
use crate::http::error::ApiError;
use crate::model::Revision;

/// The edit page's part that lists the post's revisions, newest first, each with a link to
/// what changed since and a button that restores it.
pub(super) fn revisions_part(post_id: &str, revisions: &ListPage<Revision>) -> Markup {
    let id = url_part(post_id);
    html! {
        section aria-labelledby="revisions" {
            h2 id="revisions" { "Earlier versions" }
            @if revisions.items.is_empty() {
                p { "None yet: each edit keeps the version it replaces here." }
            } @else {
                p class="hint" { "Each edit keeps the version it replaced (the newest 20). Only you see them." }
                ol class="revisions" {
                    @for revision in &revisions.items {
                        li {
                            a href={ "/posts/" (id) "/revisions/" (revision.number) } {
                                bdi dir="auto" { (esc(&revision.title)) }
                            }
                            " · written " (time(&revision.written_at)) ", replaced " (time(&revision.replaced_at))
                        }
                    }
                }
            }
        }
    }
}

/// `GET /posts/{postId}/revisions/{number}`: one revision, what changed from it to the post as
/// it is now, line by line, and the button that restores it; its author's alone.
pub(crate) async fn revision_page(
    State(state): State<AppState>,
    viewer: Viewer,
    PageIds(post_id, number): PageIds,
) -> PageResult {
    let caller = viewer.caller()?;
    let number = parse(&number)?;
    let RevisionRead { revision, title_now, changes } =
        revision(&state, &caller, &post_id, number).await?;
    let id = url_part(&post_id);
    let heading = format!("An earlier version of “{title_now}”");
    let main = html! {
        h1 dir="auto" { (esc(&heading)) }
        p class="meta" {
            "Written " (time(&revision.written_at)) ", replaced " (time(&revision.replaced_at)) "."
        }
        p { "Its title: " bdi dir="auto" { (esc(&revision.title)) } }
        h2 { "Its text, against the post's now" }
        p class="hint" { "Lines struck through are in this version only; underlined lines are in the post only." }
        ol class="diff" {
            @for change in &changes {
                li {
                    @match change.change {
                        "removed" => del { (esc(&change.line)) },
                        "added" => ins { (esc(&change.line)) },
                        _ => (esc(&change.line)),
                    }
                }
            }
        }
        form method="post" action={ "/posts/" (id) "/revisions/" (number) "/restore" } {
            (one_time_key())
            button type="submit" { "Restore this version" }
        }
        p { a href={ "/posts/" (id) "/edit#revisions" } { "Back to the edit page" } }
    };
    Ok(Page { status: StatusCode::OK, html: layout(&heading, &viewer, main), private: true }
        .into_response())
}

/// `POST /posts/{postId}/revisions/{number}/restore`: the post back to the revision (an edit,
/// which keeps the version it replaces too), then its page.
pub(crate) async fn submit_restore(
    State(state): State<AppState>,
    _: SameOrigin,
    viewer: Viewer,
    PageIds(post_id, number): PageIds,
    Form(ButtonForm {}, key): Form<ButtonForm>,
) -> PageResult {
    let number = parse(&number)?;
    submit(
        &state,
        &viewer,
        key.as_ref(),
        async |caller| restore(&state, caller, &post_id, number).await,
        |post| format!("/posts/{}", url_part(&post.id)),
        &[],
        // Refused (gone meanwhile, signed out): the error page says why.
        async |error| Err(error.into()),
    )
    .await
}

fn parse(number: &str) -> Result<u64, ApiError> {
    number.parse().ok().filter(|_| number.bytes().all(|byte| byte.is_ascii_digit())).ok_or_else(
        || ApiError::not_found(format!("There is no revision {number:?}: revisions are numbered.")),
    )
}
