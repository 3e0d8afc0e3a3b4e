//! The pages' forms: their fields, and what they show again when a write is refused.

use std::fmt::Write as _;

use super::esc;
use crate::http::error::ApiError;

/// Why a write from a form was refused: the API's `detail`, and the field it is about, if it
/// names one of the form's fields (the API's details start with the field's name in backticks).
pub struct Refusal {
    pub field: Option<&'static str>,
    pub detail: String,
}

impl Refusal {
    pub fn of(error: &ApiError, fields: &[&'static str]) -> Refusal {
        let field = fields.iter().copied().find(|field| error.detail.starts_with(&format!("`{field}`")));
        Refusal { field, detail: error.detail.clone() }
    }

    /// The refusal's detail when it is about no field in particular.
    fn general(refusal: Option<&Refusal>) -> Option<&str> {
        refusal.filter(|refusal| refusal.field.is_none()).map(|refusal| refusal.detail.as_str())
    }
}

/// What a form shows: the values typed (or stored), and why it was refused, if it was.
#[derive(Default)]
pub struct Draft<'a> {
    pub values: Vec<(&'static str, &'a str)>,
    pub refusal: Option<Refusal>,
}

impl Draft<'_> {
    fn value(&self, field: &str) -> &str {
        self.values.iter().find(|(name, _)| *name == field).map_or("", |(_, value)| value)
    }
}

/// One labelled field of a form, with its error under the label when the write was refused
/// because of it.
pub struct Field {
    pub name: &'static str,
    pub label: &'static str,
    pub hint: &'static str,
    pub multiline: bool,
    /// The API's limit, as the field's `maxlength`, so that the browser stops the typing there.
    /// (A browser counts UTF-16 code units, the API characters: a text of emoji is stopped
    /// early, never let through too long.)
    pub max_chars: usize,
}

/// Renders a form: a general error first, then each field, then the submit button.
pub fn form(out: &mut String, action: &str, id: &str, fields: &[Field], draft: &Draft, submit: &str) {
    let _ = write!(out, "<form class=\"write\" method=\"post\" action=\"{}\" id=\"{id}\">", esc(action));
    if let Some(detail) = Refusal::general(draft.refusal.as_ref()) {
        let _ = write!(out, "<p class=\"error\" role=\"alert\" id=\"{id}-error\">{}</p>", esc(detail));
    }
    for field in fields {
        let input_id = format!("{id}-{}", field.name);
        let error = draft.refusal.as_ref().filter(|refusal| refusal.field == Some(field.name));
        let _ = write!(out, "<p class=\"field\"><label for=\"{input_id}\">{}</label>", field.label);
        if !field.hint.is_empty() {
            let _ = write!(out, "<span class=\"hint\" id=\"{input_id}-hint\">{}</span>", field.hint);
        }
        let mut described = if field.hint.is_empty() { String::new() } else { format!("{input_id}-hint") };
        if let Some(error) = error {
            let _ = write!(out, "<span class=\"error\" role=\"alert\" id=\"{input_id}-error\">{}</span>", esc(&error.detail));
            described = format!("{input_id}-error {described}");
        }
        let invalid = if error.is_some() { " aria-invalid=\"true\"" } else { "" };
        let described = if described.is_empty() { String::new() } else { format!(" aria-describedby=\"{}\"", described.trim()) };
        let value = esc(draft.value(field.name));
        if field.multiline {
            let _ = write!(
                out,
                "<textarea id=\"{input_id}\" name=\"{}\" rows=\"8\" maxlength=\"{}\" required{invalid}{described}>{value}</textarea></p>",
                field.name, field.max_chars
            );
        } else {
            let _ = write!(
                out,
                "<input id=\"{input_id}\" name=\"{}\" type=\"text\" value=\"{value}\" maxlength=\"{}\" required{invalid}{described}></p>",
                field.name, field.max_chars
            );
        }
    }
    let _ = write!(out, "<p><button type=\"submit\">{submit}</button></p></form>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_finds_the_field_its_detail_names() {
        let refusal = Refusal::of(&ApiError::bad_request("`title` must not be empty."), &["title", "content"]);
        assert_eq!(refusal.field, Some("title"));
        let refusal = Refusal::of(&ApiError::unprocessable("`userId` names no user"), &["title", "content"]);
        assert_eq!(refusal.field, None);
    }
}
