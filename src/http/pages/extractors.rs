//! What the pages take from a request, each refused with an HTML page: who is looking
//! ([`Viewer`]), the query string, the ids in the path, the origin of a form, and the form.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use serde::de::DeserializeOwned;

use super::{PageError, multipart};
use crate::app::idempotency::IdempotencyKey;
use crate::app::{AppState, Caller};
use crate::config::PublicUrl;
use crate::http::auth::{SignedIn, page_viewer};
use crate::http::error::ApiError;
use crate::http::extract::{Id, Ids, field_names, parse_query};

/// Who is looking at a page: the signed-in user, or nobody. Never refuses a request; a write
/// that needs a caller asks for one with [`Viewer::caller`].
pub(crate) struct Viewer(pub Option<SignedIn>);

impl FromRequestParts<AppState> for Viewer {
    type Rejection = std::convert::Infallible;

    /// As the front door read it for the page request (`PageRequest`), or read here where no
    /// page request is current.
    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Ok(Viewer(
            super::PageRequest::current_viewer().unwrap_or_else(|| page_viewer(parts, state.auth)),
        ))
    }
}

impl Viewer {
    /// The signed-in user's id (`None`: signed out).
    pub(crate) fn id(&self) -> Option<&str> {
        self.0.as_ref().map(|signed_in| signed_in.id.as_str())
    }

    /// The name the pages show the signed-in user as.
    pub(crate) fn name(&self) -> Option<&str> {
        self.0.as_ref().map(|signed_in| signed_in.name.as_str())
    }

    /// The caller of a write from a form; 401 when nobody is signed in.
    pub(crate) fn caller(&self) -> Result<Caller, ApiError> {
        self.id().map(Caller::new).ok_or_else(crate::http::auth::sign_in_first)
    }

    /// The caller of a write from a form, with the form's one-time key, counted against their
    /// write limit as the API counts its writes; 401 when nobody is signed in, 429 over the limit.
    pub(crate) fn writer(
        &self,
        state: &AppState,
        key: Option<IdempotencyKey>,
    ) -> Result<Caller, ApiError> {
        let caller = self.caller()?;
        caller.count_write(state)?;
        Ok(caller.with_key(key))
    }

    /// Whether the viewer is signed in as `user_id`.
    pub(crate) fn is(&self, user_id: &str) -> bool {
        self.id() == Some(user_id)
    }
}

/// A page's query string: the parameters the page knows are checked as the API checks them
/// (refused with an HTML page). The others are ignored, as every site ignores them: links are
/// shared with tracking parameters (`?utm_source=…`, `?fbclid=…`) that the reader did not add.
/// The JSON API stays strict: a typo there is a client's bug to report.
pub(crate) struct PageQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for PageQuery<T> {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, PageError> {
        let known = field_names::<T>();
        let params =
            parse_query(parts.uri.query().unwrap_or_default(), |key| known.contains(&key))?;
        Ok(PageQuery(params))
    }
}

/// The id in a page's path, checked as the API checks it, refused with an HTML page.
pub(crate) struct PageId(pub String);

impl<S: Send + Sync> FromRequestParts<S> for PageId {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, PageError> {
        let Id(id) = Id::from_request_parts(parts, state).await?;
        Ok(PageId(id))
    }
}

/// The two ids of a nested page path, checked as the API checks them.
pub(crate) struct PageIds(pub String, pub String);

impl<S: Send + Sync> FromRequestParts<S> for PageIds {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, PageError> {
        let Ids(first, second) = Ids::from_request_parts(parts, state).await?;
        Ok(PageIds(first, second))
    }
}

/// Refuses a state-changing request that another site made the browser send (cross-site request
/// forgery). It refuses one whose `Sec-Fetch-Site` says it did not come from a page of this
/// blog. From a browser that sends no fetch metadata, it refuses one whose `Origin` is neither
/// the blog's public address nor the host the request was sent to. A request with neither
/// header did not come from a browser page, which is the only thing a forger controls.
pub(crate) struct SameOrigin;

impl<S: Send + Sync> FromRequestParts<S> for SameOrigin {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, PageError> {
        let public = super::page_origin();
        check_same_origin(&parts.headers, public.as_ref().map(PublicUrl::as_str)).map(|()| SameOrigin).map_err(|why| {
            PageError(ApiError::new(
                StatusCode::FORBIDDEN,
                format!("This form was sent from another site ({why}), so it was refused: nothing was changed."),
            ))
        })
    }
}

fn check_same_origin(headers: &HeaderMap, public: Option<&str>) -> Result<(), CrossSite> {
    let text = |name: &str| headers.get(name).map(|value| value.to_str().unwrap_or("?").to_owned());
    if let Some(site) = text("sec-fetch-site") {
        // `none`: the person typed or bookmarked the request; `same-origin`: a page of this blog.
        return if site == "same-origin" || site == "none" {
            Ok(())
        } else {
            Err(CrossSite::FetchSite { site })
        };
    }
    let Some(origin) = text("origin") else { return Ok(()) };
    // A browser's `Origin` is its own, never a page's to set, and so is the `Host` it sent.
    let authority = origin.split_once("://").map(|(_, authority)| authority);
    let own = public.is_some_and(|public| origin.eq_ignore_ascii_case(public))
        || text("host").is_some_and(|host| authority == Some(host.as_str()));
    if own { Ok(()) } else { Err(CrossSite::Origin { origin }) }
}

/// The header that shows a form came from another site, with its value; `Display` is the
/// header line, which the 403 page quotes.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum CrossSite {
    /// The browser's fetch metadata names another site.
    #[error("Sec-Fetch-Site: {site}")]
    FetchSite {
        /// `cross-site` or `same-site` (`?` where it is not text).
        site: String,
    },
    /// A browser without fetch metadata sent an `Origin` that is not this blog.
    #[error("Origin: {origin}")]
    Origin {
        /// The origin sent.
        origin: String,
    },
}

/// A form body (`application/x-www-form-urlencoded`), parsed strictly; anything else is an
/// HTML error page. Its one-time key ([`super::forms::one_time_key`]) is taken out beside it.
pub(crate) struct Form<T>(pub T, pub Option<IdempotencyKey>);

/// The hidden field of every form that writes: the key that makes it once.
pub(crate) const KEY_FIELD: &str = "idempotencyKey";

impl<T: DeserializeOwned> FromRequest<AppState> for Form<T> {
    type Rejection = PageError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, PageError> {
        let FormWithPicture(typed, key, _) = FormWithPicture::from_request(request, state).await?;
        Ok(Form(typed, key))
    }
}

/// A form that may carry a picture (the post's: `multipart/form-data`), or any other form; the
/// picture is the file of its `picture` field, if one was chosen.
pub(crate) struct FormWithPicture<T>(pub T, pub Option<IdempotencyKey>, pub Option<ChosenPicture>);

/// The field a form's picture is sent in.
pub(crate) const PICTURE_FIELD: &str = "picture";

/// A picture chosen in a form's file input.
pub(crate) struct ChosenPicture {
    /// Its bytes.
    pub bytes: axum::body::Bytes,
    /// The media type the browser declared (from the file's name).
    pub declared: Option<String>,
}

impl<T: DeserializeOwned> FromRequest<AppState> for FormWithPicture<T> {
    type Rejection = PageError;

    /// On a route that takes a picture (the front door left its body unread), a form is read
    /// only from a signed-in writer, and, where it edits a post, only once the post is theirs.
    /// So 401, 403 and 404 come before its body, whatever its `Content-Type` says it holds.
    async fn from_request(request: Request, state: &AppState) -> Result<Self, PageError> {
        let content_type = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let (mut parts, body) = request.into_parts();
        let takes_picture = parts.extensions.get::<crate::http::body::PictureBody>().is_some();
        let Ok(Viewer(viewer)) = Viewer::from_request_parts(&mut parts, state).await;
        let caller = Viewer(viewer).caller();
        if let (true, Ok(caller)) = (takes_picture, &caller)
            && let Ok(PageId(post_id)) = PageId::from_request_parts(&mut parts, state).await
        {
            crate::app::pictures::may_add_to(state, caller, &post_id)
                .await
                .map_err(|error| PageError(error.into()))?;
        }
        let unread =
            crate::http::body::UnreadBody::from_request(Request::from_parts(parts, body), state)
                .await
                .unwrap_or_else(|never| match never {});
        let signed_out = takes_picture && caller.is_err();
        let bytes = if signed_out {
            // Read as any form is, so that the page that asks them to sign in again gives back
            // what they typed; a form larger than that (a picture in it) is 401 unread.
            unread
                .read_outside_buffers(crate::http::MAX_BODY_BYTES, crate::http::auth::sign_in_first)
                .await
                .map_err(PageError)?
        } else {
            unread
                .read(|| crate::http::front_door::too_large_error(crate::http::MAX_UPLOAD_BYTES))
                .await
                .map_err(PageError)?
        };
        let unreadable = |error: &dyn std::fmt::Display| {
            PageError(ApiError::bad_request(format!("The form could not be read: {error}.")))
        };
        let urlencoded = content_type
            .trim_start()
            .to_ascii_lowercase()
            .starts_with("application/x-www-form-urlencoded");
        let (fields, picture): (Vec<(String, String)>, Option<ChosenPicture>) = if let Some(
            boundary,
        ) =
            multipart::boundary(&content_type)
        {
            let mut fields = Vec::new();
            let mut picture = None;
            for part in multipart::parts(&bytes, &boundary).map_err(|error| unreadable(&error))? {
                match part.filename {
                    // A file input left empty sends a part with an empty name and body.
                    // A signed-out sender's picture is never decoded: the route answers 401.
                    Some(name)
                        if part.name == PICTURE_FIELD
                            && !(name.is_empty() && part.body.is_empty())
                            && !signed_out =>
                    {
                        if picture.is_some() {
                            return Err(unreadable(&"it has more than one picture"));
                        }
                        picture =
                            Some(ChosenPicture { bytes: part.body, declared: part.content_type });
                    }
                    Some(_) => {}
                    None => {
                        let value = String::from_utf8(part.body.to_vec()).map_err(|_| {
                            unreadable(&format!("its field {} is not text", part.name))
                        })?;
                        fields.push((part.name, value));
                    }
                }
            }
            (fields, picture)
        } else if bytes.is_empty() || urlencoded {
            // A form with no fields (the like button, sign out) has an empty body, which the
            // Functions host forwards without its Content-Type: there is nothing to misread.
            (serde_urlencoded::from_bytes(&bytes).map_err(|error| unreadable(&error))?, None)
        } else {
            return Err(PageError(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "This address takes a form sent from the blog's pages (application/x-www-form-urlencoded, or multipart/form-data with a picture).",
            )));
        };
        let (keys, fields): (Vec<_>, Vec<_>) =
            fields.into_iter().partition(|(name, _)| name == KEY_FIELD);
        let key = match keys.as_slice() {
            [] => None,
            [(_, key)] => {
                Some(IdempotencyKey::parse(key).map_err(|error| PageError(error.into()))?)
            }
            _ => return Err(unreadable(&format!("it has {} fields {KEY_FIELD}", keys.len()))),
        };
        let fields: Vec<(String, String)> =
            fields.into_iter().map(|(name, value)| (name, normalize_line_breaks(value))).collect();
        let fields = serde_urlencoded::to_string(&fields).map_err(|error| unreadable(&error))?;
        let typed = serde_urlencoded::from_str(&fields).map_err(|error| unreadable(&error))?;
        Ok(FormWithPicture(typed, key, picture))
    }
}

/// A browser sends every line break of a form's text as CR LF (the HTML standard's form data
/// set encoding: "newline normalization"). So a comment of 1,000 short lines would count twice
/// against its limit and be stored in another form than the API's. Each CR LF, and any lone CR,
/// becomes LF, as a `textarea`'s value and its `maxlength` count them.
fn normalize_line_breaks(value: String) -> String {
    if !value.contains('\r') {
        return value;
    }
    value.replace("\r\n", "\n").replace('\r', "\n")
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn only_the_blog_itself_may_send_a_form() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut map = HeaderMap::new();
            for (name, value) in pairs {
                map.insert(*name, HeaderValue::from_static(value));
            }
            map
        };
        assert!(check_same_origin(&headers(&[("sec-fetch-site", "same-origin")]), None).is_ok());
        assert!(check_same_origin(&headers(&[("sec-fetch-site", "none")]), None).is_ok());
        assert_eq!(
            check_same_origin(&headers(&[("sec-fetch-site", "cross-site")]), None),
            Err(CrossSite::FetchSite { site: "cross-site".into() })
        );
        assert!(
            check_same_origin(&headers(&[("sec-fetch-site", "same-site")]), None).is_err(),
            "a sibling subdomain is not the blog"
        );
        assert!(
            check_same_origin(
                &headers(&[("origin", "https://blog.example"), ("host", "blog.example")]),
                None
            )
            .is_ok()
        );
        let forged = check_same_origin(
            &headers(&[("origin", "https://evil.example"), ("host", "blog.example")]),
            None,
        );
        assert_eq!(forged, Err(CrossSite::Origin { origin: "https://evil.example".into() }));
        assert_eq!(forged.unwrap_err().to_string(), "Origin: https://evil.example");
        assert!(
            check_same_origin(&headers(&[("origin", "null"), ("host", "blog.example")]), None)
                .is_err()
        );
        assert!(
            check_same_origin(&headers(&[("host", "blog.example")]), None).is_ok(),
            "no browser page sent it"
        );
        let public = Some("https://blog.example");
        let through_a_proxy =
            headers(&[("origin", "https://blog.example"), ("host", "app.azurewebsites.net")]);
        assert!(
            check_same_origin(&through_a_proxy, public).is_ok(),
            "the public address is the blog's"
        );
        let forwarded = headers(&[
            ("origin", "https://evil.example"),
            ("host", "app.example"),
            ("x-forwarded-host", "evil.example"),
        ]);
        assert!(check_same_origin(&forwarded, public).is_err(), "a forwarded host is not believed");
    }
}
