//! The pages' forms: their fields, what they show again when a write is refused, and what
//! every form that writes does when it is sent ([`submit`]).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect};
use maud::{Markup, html};

use super::extractors::KEY_FIELD;
use super::{PageResult, Viewer, esc};
use crate::app::idempotency::{IdempotencyKey, KEY_REUSED};
use crate::app::{AppResult, AppState, Caller};
use crate::http::error::ApiError;

/// Why a write from a form was refused: the API's `detail`, and the field it is about, if it
/// names one of the form's fields (the API's details start with the field's name in backticks).
pub(crate) struct Refusal {
    /// The field the refusal is about (`None`: the form as a whole).
    pub field: Option<&'static str>,
    /// What is wrong, in the writer's words.
    pub detail: String,
    /// Refused because nobody is signed in (any more): the form offers to sign in and come back.
    pub signed_out: bool,
}

/// What a form says when it was sent by nobody signed in. Its page showed the form to someone
/// signed in, so their sign-in ended meanwhile (signed out in another tab, the cookie or the
/// platform's session expired).
pub const SIGNED_OUT: &str = "You are no longer signed in, so this was not sent. Copy what you typed, sign in, then send it again.";

/// What a form says when it was sent before with other text (the back button, the text changed,
/// sent again). The first was saved; what was typed now is shown with a new key, to send as
/// well.
pub const SENT_BEFORE: &str = "This form was sent before with other text, and that was saved. What you typed now is below: send it to save it too.";

/// What a form says when the blog was too busy to confirm the write: it may have been made, so
/// the form keeps its key, and sent again it is made once.
pub(crate) fn busy(retry_after: Option<std::time::Duration>) -> String {
    let seconds = retry_after.map_or(1, |wait| wait.as_secs_f64().ceil().max(1.0) as u64);
    format!(
        "The blog is busy right now and could not confirm that this was saved. What you typed is kept below: \
         send it again in {seconds} s, and it is saved once either way."
    )
}

/// What a form says when the person writing has no user yet: the API's "`userId` names no
/// existing user" speaks of a field the form does not have.
pub(crate) const NO_PROFILE_YET: &str = "You have no profile yet: create yours on \u{201c}Your page\u{201d} (at the top) before you write.";

impl Refusal {
    /// The refusal an API error makes on a form with `fields`: placed at the field its detail names.
    pub(crate) fn of(error: &ApiError, fields: &[&'static str]) -> Refusal {
        if error.status == StatusCode::UNPROCESSABLE_ENTITY && error.detail.starts_with("`userId`")
        {
            return Refusal { field: None, detail: NO_PROFILE_YET.to_owned(), signed_out: false };
        }
        if error.status == StatusCode::UNAUTHORIZED {
            return Refusal { field: None, detail: SIGNED_OUT.to_owned(), signed_out: true };
        }
        if error.detail.starts_with(KEY_REUSED) {
            return Refusal { field: None, detail: SENT_BEFORE.to_owned(), signed_out: false };
        }
        if error.status == StatusCode::SERVICE_UNAVAILABLE {
            return Refusal { field: None, detail: busy(error.retry_after), signed_out: false };
        }
        let field =
            fields.iter().copied().find(|field| error.detail.starts_with(&format!("`{field}`")));
        Refusal { field, detail: error.detail.clone(), signed_out: false }
    }

    /// The detail as shown under `field`: the API names its fields in backticks (`` `content` ``),
    /// the form by their labels ("Your comment").
    fn shown_under(&self, field: &Field) -> String {
        self.detail.replacen(&format!("`{}`", field.name), field.label, 1)
    }

    /// Whether the form's key was spent on another text (so the form shown again needs a new one).
    fn spent_key(refusal: Option<&Refusal>) -> bool {
        refusal.is_some_and(|refusal| refusal.detail == SENT_BEFORE)
    }

    /// The refusal when it is about no field in particular.
    fn general(refusal: Option<&Refusal>) -> Option<&Refusal> {
        refusal.filter(|refusal| refusal.field.is_none())
    }
}

/// What a form shows: the values typed (or stored), why it was refused, if it was, and the key
/// it was sent with.
#[derive(Default)]
pub(crate) struct Draft<'a> {
    /// What was typed, by field name, to show again.
    pub values: Vec<(&'static str, &'a str)>,
    /// Why the form was refused, if it was.
    pub refusal: Option<Refusal>,
    /// The one-time key the refused form was sent with, which the form shown again keeps. A
    /// write refused as busy may have been made, and sent again with its key it is made once.
    /// (Not after [`SENT_BEFORE`]: that key is spent on the first text.)
    pub key: Option<&'a IdempotencyKey>,
}

impl Draft<'_> {
    fn value(&self, field: &str) -> &str {
        self.values.iter().find(|(name, _)| *name == field).map_or("", |(_, value)| value)
    }
}

/// The hidden field that makes a form's write once: a new key each time the form is shown. So
/// the form sent twice (a double click, the back button, sent again after an error page) writes
/// once and shows the result of the first (`app::idempotency`). A form shown again after a
/// refusal has a new key.
pub(crate) fn one_time_key() -> Markup {
    html! { input type="hidden" name=(KEY_FIELD) value=(IdempotencyKey::new_random().as_str()); }
}

/// One labelled field of a form, with its error under the label when the write was refused
/// because of it.
pub(crate) struct Field {
    /// The form field's name.
    pub name: &'static str,
    /// Its label.
    pub label: &'static str,
    /// The hint under it.
    pub hint: &'static str,
    /// A text area rather than a line.
    pub multiline: bool,
    /// The API's limit, as the field's `maxlength`, so that the browser stops the typing there.
    /// (A browser counts UTF-16 code units, the API characters: a text of emoji is stopped
    /// early, never let through too long.)
    pub max_chars: usize,
    /// May be left empty (a post's tags): the browser does not ask for it.
    pub optional: bool,
}

/// Renders a form: a general error first, then each field, then the submit button.
pub(crate) fn form(
    action: &str,
    id: &str,
    fields: &[Field],
    draft: &Draft,
    submit: &str,
) -> Markup {
    form_with(action, id, fields, draft, Submit { label: submit, also: &[] }, None)
}

/// A form's buttons: the one Enter presses, and others beside it that send the form with
/// `action` set to their value (`also`: each one's label and value).
#[derive(Clone, Copy)]
pub(crate) struct Submit<'a> {
    pub label: &'a str,
    pub also: &'a [(&'a str, &'a str)],
}

/// [`form`], with `extra` between the fields and the submit button: a part of its own that
/// sends a file (the post's picture), which makes the form `multipart/form-data`.
pub(crate) fn form_with(
    action: &str,
    id: &str,
    fields: &[Field],
    draft: &Draft,
    submit: Submit,
    extra: Option<Markup>,
) -> Markup {
    let enctype = extra.as_ref().map(|_| "multipart/form-data");
    html! {
        form class="write" method="post" action=(esc(action)) id=(id) enctype=[enctype] {
            @if let Some(refusal) = Refusal::general(draft.refusal.as_ref()) {
                p class="error" role="alert" id={ (id) "-error" } {
                    (esc(&refusal.detail))
                    // Back to this form's address after signing in: each one that writes from a
                    // page also answers GET with that page.
                    @if refusal.signed_out {
                        " " a href={ "/signin?return=" (super::url_part(action)) } { "Sign in" }
                    }
                }
            }
            @match draft.key.filter(|_| !Refusal::spent_key(draft.refusal.as_ref())) {
                Some(key) => input type="hidden" name=(KEY_FIELD) value=(key.as_str());,
                None => (one_time_key()),
            }
            @for field in fields {
                (form_field(id, field, draft))
            }
            @if let Some(extra) = extra {
                (extra)
            }
            p {
                button type="submit" { (submit.label) }
                @for (label, value) in submit.also {
                    " " button.secondary type="submit" name="action" value=(value) { (label) }
                }
            }
        }
    }
}

/// One field of the form `form_id`: its label, hint and error, and its input.
fn form_field(form_id: &str, field: &Field, draft: &Draft) -> Markup {
    let input_id = format!("{form_id}-{}", field.name);
    let error = draft.refusal.as_ref().filter(|refusal| refusal.field == Some(field.name));
    let hint_id = (!field.hint.is_empty()).then(|| format!("{input_id}-hint"));
    let error_id = error.map(|_| format!("{input_id}-error"));
    let described = [error_id.as_deref(), hint_id.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    let described = (!described.is_empty()).then_some(described);
    let invalid = error.map(|_| "true");
    let value = esc(draft.value(field.name));
    html! {
        p class="field" {
            label for=(input_id) { (field.label) }
            @if let Some(hint_id) = &hint_id {
                span class="hint" id=(hint_id) { (field.hint) }
            }
            @if let (Some(error), Some(error_id)) = (error, &error_id) {
                span class="error" role="alert" id=(error_id) { (esc(&error.shown_under(field))) }
            }
            @if field.multiline {
                textarea id=(input_id) name=(field.name) rows="8" maxlength=(field.max_chars) required
                    aria-invalid=[invalid] aria-describedby=[&described] { (value) }
            } @else {
                input id=(input_id) name=(field.name) type="text" value=(value) maxlength=(field.max_chars) required[!field.optional]
                    aria-invalid=[invalid] aria-describedby=[&described];
            }
        }
    }
}

/// A form that writes, sent: the write, as the signed-in caller; done, a redirect to
/// `redirect_to(written)` (post/redirect/get); refused, `refused(error)`, the form's page again
/// with the refusal next to its field and what was typed kept. A server failure is the error
/// page instead, and so is a refusal with one of the `error_pages` statuses, which the form's
/// page is not the place to show. Nobody signed in is a refusal like any other (401), whose form
/// keeps what was typed and links to the sign-in that returns to it ([`SIGNED_OUT`]).
pub(crate) async fn submit<T>(
    state: &AppState,
    viewer: &Viewer,
    key: Option<&IdempotencyKey>,
    write: impl AsyncFnOnce(&Caller) -> AppResult<T>,
    redirect_to: impl FnOnce(T) -> String,
    error_pages: &[StatusCode],
    refused: impl AsyncFnOnce(ApiError) -> PageResult,
) -> PageResult {
    let written = match viewer.writer(state, key.cloned()) {
        Ok(caller) => write(&caller).await.map_err(ApiError::from),
        Err(error) => Err(error),
    };
    match written {
        Ok(written) => Ok(Redirect::to(&redirect_to(written)).into_response()),
        // Busy (503): the form again, with what was typed and its key, and when to send it.
        Err(error)
            if error.status != StatusCode::SERVICE_UNAVAILABLE
                && error.status.is_server_error() =>
        {
            Err(error.into())
        }
        Err(error) if error_pages.contains(&error.status) => Err(error.into()),
        Err(error) => {
            // Over the limit, or busy: the form again, with what was typed, and when to send it.
            let retry_after = error.retry_after_header();
            let mut page = refused(error).await?;
            if let Some(retry_after) = retry_after {
                page.headers_mut().insert(axum::http::header::RETRY_AFTER, retry_after);
            }
            Ok(page)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_finds_the_field_its_detail_names() {
        let refusal = Refusal::of(
            &ApiError::bad_request("`title` must not be empty."),
            &["title", "content"],
        );
        assert_eq!(refusal.field, Some("title"));
        let refusal =
            Refusal::of(&ApiError::unprocessable("`userId` names no user"), &["title", "content"]);
        assert_eq!(refusal.field, None);
        assert_eq!(refusal.detail, NO_PROFILE_YET);
    }
}
