//! Signing in and out. On Azure, App Service Authentication does both (`/.auth/login/aad`,
//! `/.auth/logout`); with `BLOG_AUTH=development`, a form picks who this browser is, kept in a
//! cookie that the pages read as the API reads `x-dev-user`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;

#[cfg(feature = "embedded")]
use super::{Draft, Field, Form, Refusal, form};
use super::{Page, PageQuery, PageResult, SameOrigin, Viewer, layout, url_part};
use crate::app::AppState;
use crate::config::AuthMode;
#[cfg(feature = "embedded")]
use crate::http::auth::DEVELOPMENT_COOKIE;
#[cfg(feature = "embedded")]
use crate::http::error::ApiError;

/// Where App Service Authentication signs a person in with Entra ID; `post_login_redirect_uri`
/// (added by [`platform_sign_in`]) is where it sends them back.
const PLATFORM_SIGN_IN: &str = "/.auth/login/aad?post_login_redirect_uri=";
/// Where App Service Authentication signs a person out.
const PLATFORM_SIGN_OUT: &str = "/.auth/logout?post_logout_redirect_uri=/";

#[cfg(feature = "embedded")]
const SIGN_IN_FIELDS: [Field; 1] = [Field {
    name: "user",
    label: "Your user id",
    hint: "Development sign-in: any id (letters, digits, - and _), e.g. alice. Nothing checks it.",
    multiline: false,
    max_chars: crate::model::MAX_ID_BYTES,
    optional: false,
}];

/// `?return=`: the page a sign-in started from (the post page's "Sign in" link sets it), and
/// where it goes back to once signed in.
#[derive(Default, Deserialize)]
pub(crate) struct SignInQuery {
    #[serde(rename = "return")]
    return_to: Option<String>,
}

impl SignInQuery {
    /// The page to go back to: a path of this site only. Anything else (another site, `//host`
    /// or `/\host`, which browsers read as another site too) is ignored, so the link cannot be
    /// made to send a person elsewhere after signing in.
    fn page(&self) -> Option<&str> {
        let path = self.return_to.as_deref()?;
        let local = path.starts_with('/')
            && !path.starts_with("//")
            && !path.starts_with("/\\")
            && path.len() <= 2048
            && path.bytes().all(|byte| byte.is_ascii_graphic());
        local.then_some(path)
    }
}

/// App Service Authentication's sign-in, back to `page` after it (the front page if none).
fn platform_sign_in(page: Option<&str>) -> Redirect {
    // A query value may hold `/` as it is; every other character is encoded as in a link.
    Redirect::to(&format!(
        "{PLATFORM_SIGN_IN}{}",
        url_part(page.unwrap_or("/")).replace("%2F", "/")
    ))
}

/// The development sign-in form's one field (the deployed build has no such form, and ignores it).
#[derive(Deserialize)]
#[cfg_attr(not(feature = "embedded"), allow(dead_code))]
#[serde(deny_unknown_fields)]
pub(crate) struct SignInForm {
    #[serde(default)]
    user: String,
}

/// `GET /signin`: on Azure, off to App Service Authentication; in development, the form.
pub(crate) async fn sign_in_page(
    State(state): State<AppState>,
    viewer: Viewer,
    PageQuery(query): PageQuery<SignInQuery>,
) -> Response {
    match state.auth {
        AuthMode::Platform => platform_sign_in(query.page()).into_response(),
        AuthMode::None => {
            let main = html! {
                h1 { "Sign in" }
                p {
                    "This blog has no sign-in configured, so it can only be read. On Azure, deploy it with "
                    code { "authClientId" } "; locally, start it with " code { "BLOG_AUTH=development" } "."
                }
            };
            Page { status: StatusCode::OK, html: layout("Sign in", &viewer, main), private: false }
                .into_response()
        }
        #[cfg(feature = "embedded")]
        AuthMode::Development => {
            development_form(&viewer, &query, Draft::default(), StatusCode::OK)
        }
    }
}

#[cfg(feature = "embedded")]
fn development_form(
    viewer: &Viewer,
    query: &SignInQuery,
    draft: Draft,
    status: StatusCode,
) -> Response {
    // The page to go back to travels in the form's address.
    let action = match query.page() {
        Some(page) => format!("/signin?return={}", url_part(page)),
        None => "/signin".to_owned(),
    };
    let main = html! {
        h1 { "Sign in" }
        (form(&action, "signin", &SIGN_IN_FIELDS, &draft, "Sign in"))
    };
    Page { status, html: layout("Sign in", viewer, main), private: true }.into_response()
}

/// `POST /signin`: development only: remembers who this browser is, then their page (which
/// offers to create their user the first time).
pub(crate) async fn submit_sign_in(
    State(state): State<AppState>,
    _: SameOrigin,
    viewer: Viewer,
    PageQuery(query): PageQuery<SignInQuery>,
    #[cfg_attr(not(feature = "embedded"), allow(unused_variables))] form_body: super::Form<
        SignInForm,
    >,
) -> PageResult {
    match state.auth {
        #[cfg(feature = "embedded")]
        AuthMode::Development => {
            let Form(typed, _) = form_body;
            let user = typed.user.trim();
            match development_id(user) {
                Ok(()) => {
                    let cookie =
                        format!("{DEVELOPMENT_COOKIE}={user}; Path=/; HttpOnly; SameSite=Lax");
                    // Back where the sign-in started; else their page, which offers to create their user.
                    let page = query
                        .page()
                        .map_or_else(|| format!("/users/{}", url_part(user)), str::to_owned);
                    let mut response = Redirect::to(&page).into_response();
                    response.headers_mut().insert(
                        axum::http::header::SET_COOKIE,
                        cookie.parse().expect("checked above"),
                    );
                    Ok(response)
                }
                Err(error) => {
                    let draft = Draft {
                        values: vec![("user", &typed.user)],
                        refusal: Some(Refusal::of(&error, &["user"])),
                        key: None,
                    };
                    Ok(development_form(&viewer, &query, draft, error.status))
                }
            }
        }
        AuthMode::Platform => Ok(platform_sign_in(query.page()).into_response()),
        AuthMode::None => Ok(sign_in_page(State(state), viewer, PageQuery(query)).await),
    }
}

/// A development id must be a user id and a cookie value.
#[cfg(feature = "embedded")]
fn development_id(user: &str) -> Result<(), ApiError> {
    // In the words of the person signing in: the reasons (a resource path, a cookie) are ours.
    if crate::model::validate_id(user).is_err() || user.contains([';', ',', '"']) {
        return Err(ApiError::bad_request(
            "`user` must be 1 to 255 letters, digits or punctuation marks, with no spaces and none of / \\ ? # % ; , \".",
        ));
    }
    Ok(())
}

/// `POST /signout`: forgets the development sign-in, or signs out of App Service Authentication.
pub(crate) async fn submit_sign_out(State(state): State<AppState>, _: SameOrigin) -> Response {
    match state.auth {
        AuthMode::Platform => Redirect::to(PLATFORM_SIGN_OUT).into_response(),
        AuthMode::None => Redirect::to("/").into_response(),
        #[cfg(feature = "embedded")]
        AuthMode::Development => {
            let mut response = Redirect::to("/").into_response();
            let expired =
                format!("{DEVELOPMENT_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0");
            response.headers_mut().insert(
                axum::http::header::SET_COOKIE,
                expired.parse().expect("a cookie is a header value"),
            );
            response
        }
    }
}
