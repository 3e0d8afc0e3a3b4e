//! The pages' forms as a browser sends them, without the browser (tests/browser drives a real
//! one): no redirect followed, so that a test sees where a form sends it; the sign-in cookie kept
//! and sent back; a form sent urlencoded, or as `multipart/form-data` when it carries a picture,
//! from the blog's own pages (`Sec-Fetch-Site`) unless a test says otherwise; a form's one-time
//! key read off the page. And the same forms on Azure, where the Functions host forwards them
//! signed in by App Service Authentication's headers.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, LOCATION};

use super::{Answer, TestApp};

/// The development scheme's sign-in cookie, as `/signin` sets it (`DEVELOPMENT_COOKIE` in
/// src/http/auth.rs).
const DEVELOPMENT_COOKIE: &str = "blog_dev_user";

/// What a browser gets back: the status, the headers, and the page.
pub(crate) struct Got {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub html: String,
}

impl Got {
    /// Where the answer sends the browser; a test that expects a redirect fails here, with the
    /// page, when there is none.
    pub(crate) fn location(&self) -> &str {
        self.redirect().unwrap_or_else(|| panic!("no Location: {}", self.html))
    }

    /// Where the answer sends the browser, if anywhere.
    pub(crate) fn redirect(&self) -> Option<&str> {
        self.headers.get(LOCATION).and_then(|value| value.to_str().ok())
    }

    /// The header `name`, `""` when absent.
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|value| value.to_str().ok()).unwrap_or("")
    }

    /// The database operations the answer took (`x-cosmos-operations`).
    pub(crate) fn operations(&self) -> u64 {
        self.header("x-cosmos-operations").parse().unwrap()
    }

    /// The cookie the answer sets, as a browser sends it back (`name=value`).
    pub(crate) fn cookie(&self) -> String {
        self.header("set-cookie").split(';').next().unwrap().to_owned()
    }
}

/// A browser on one blog: it follows no redirect and sends its cookie, if it has one, with every
/// request.
pub(crate) struct Browser {
    base: String,
    /// For requests a test builds itself (another method, other headers); send them with
    /// [`Browser::send`] to carry the cookie.
    pub client: reqwest::Client,
    /// The sign-in cookie (`name=value`); `None` is signed out, as after a session ran out.
    pub cookie: Option<String>,
}

impl Browser {
    /// A browser on `app`, signed out.
    pub(crate) fn new(app: &TestApp) -> Browser {
        Self::at(&app.base)
    }

    /// A browser on the blog served at `base` (its site, without `/api`), signed out.
    pub(crate) fn at(base: &str) -> Browser {
        let client =
            reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        Browser { base: base.to_owned(), client, cookie: None }
    }

    /// This browser with the development scheme's cookie for `user`, as the sign-in form would
    /// set it, without sending the form (for tests whose user is made through the API).
    pub(crate) fn signed_in_as(mut self, user: &str) -> Browser {
        self.cookie = Some(format!("{DEVELOPMENT_COOKIE}={user}"));
        self
    }

    /// The address of `path` on the blog.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends `request` with the cookie; the answer, read whole.
    pub(crate) async fn send(&self, request: reqwest::RequestBuilder) -> Got {
        let request = match &self.cookie {
            Some(cookie) => request.header("cookie", cookie),
            None => request,
        };
        let response = request.send().await.unwrap();
        let (status, headers) = (response.status(), response.headers().clone());
        Got { status, headers, html: response.text().await.unwrap() }
    }

    pub(crate) async fn get(&self, path: &str) -> Got {
        self.get_with(path, &[]).await
    }

    /// `GET path` with `headers` besides the cookie.
    pub(crate) async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Got {
        let mut request = self.client.get(self.url(path));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.send(request).await
    }

    /// Waits until the page at `path` satisfies `check`, and returns it: copies arrive through
    /// the change feed a moment after the write. The bound is [`TestApp::eventually`]'s, for the
    /// same reason: it only ends a wait that would never end.
    pub(crate) async fn eventually(&self, path: &str, check: impl Fn(&str) -> bool) -> Got {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let got = self.get(path).await;
            if check(&got.html) {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "{path} never showed what was expected:\n{}",
                got.html
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A form submitted from one of the blog's own pages.
    pub(crate) async fn submit(&self, path: &str, fields: &[(&str, &str)]) -> Got {
        self.submit_from(path, fields, "same-origin").await
    }

    /// A form submitted from a page whose relation to the blog is `site` (`Sec-Fetch-Site`:
    /// `same-origin`, `same-site`, `cross-site`).
    pub(crate) async fn submit_from(&self, path: &str, fields: &[(&str, &str)], site: &str) -> Got {
        let body = serde_urlencoded::to_string(fields).unwrap();
        self.post_form(path, site, "application/x-www-form-urlencoded", body.into_bytes()).await
    }

    /// A form with a file input (`enctype="multipart/form-data"`) submitted from one of the
    /// blog's own pages: `fields`, and the picture, if one is chosen (see [`multipart`]).
    pub(crate) async fn submit_multipart(
        &self,
        path: &str,
        fields: &[(&str, &str)],
        picture: Option<File<'_>>,
    ) -> Got {
        self.submit_multipart_from(path, fields, picture, "same-origin").await
    }

    /// [`Browser::submit_multipart`] from a page whose relation to the blog is `site`.
    pub(crate) async fn submit_multipart_from(
        &self,
        path: &str,
        fields: &[(&str, &str)],
        picture: Option<File<'_>>,
        site: &str,
    ) -> Got {
        let content_type = format!("multipart/form-data; boundary={BOUNDARY}");
        self.post_form(path, site, &content_type, multipart(fields, picture)).await
    }

    async fn post_form(&self, path: &str, site: &str, content_type: &str, body: Vec<u8>) -> Got {
        let request = self
            .client
            .post(self.url(path))
            .header("content-type", content_type)
            .header("sec-fetch-site", site)
            .body(body);
        self.send(request).await
    }

    /// Keeps the cookie `got` sets, as a browser does after signing in.
    pub(crate) fn keep_cookie(&mut self, got: &Got) {
        self.cookie = Some(got.cookie());
    }

    /// Signs in as `user` with the development form, and keeps its cookie: the form's answer.
    pub(crate) async fn sign_in(&mut self, user: &str) -> Got {
        let signed_in = self.submit("/signin", &[("user", user)]).await;
        self.keep_cookie(&signed_in);
        signed_in
    }

    /// Signs in as `user` with the development form and creates their user named `username`.
    pub(crate) async fn sign_up(&mut self, user: &str, username: &str) {
        let signed_in = self.sign_in(user).await;
        assert_eq!(signed_in.status, StatusCode::SEE_OTHER, "{}", signed_in.html);
        assert_eq!(signed_in.location(), format!("/users/{user}"));
        let welcome = self.get(&format!("/users/{user}")).await;
        assert!(welcome.html.contains("Create my profile"), "{}", welcome.html);
        let created = self.submit("/users", &[("username", username)]).await;
        assert_eq!(created.status, StatusCode::SEE_OTHER, "{}", created.html);
        assert_eq!(created.location(), format!("/users/{user}"));
    }

    /// Writes a post on the write page and returns its page's path.
    pub(crate) async fn write(&self, title: &str, content: &str) -> String {
        let written = self.submit("/write", &[("title", title), ("content", content)]).await;
        assert_eq!(written.status, StatusCode::SEE_OTHER, "{}", written.html);
        written.location().to_owned()
    }
}

/// The one-time key (`idempotencyKey`) of the form whose `action` is `action` on `html`.
pub(crate) fn form_key(html: &str, action: &str) -> String {
    const KEY: &str = "name=\"idempotencyKey\" value=\"";
    let form = &html[html
        .find(&format!("action=\"{action}\""))
        .unwrap_or_else(|| panic!("no form to {action}: {html}"))..];
    let start = form.find(KEY).expect("the form carries a key") + KEY.len();
    form[start..start + form[start..].find('"').unwrap()].to_owned()
}

/// A file chosen in a form's file input: its name, the type the browser declares, its bytes.
pub(crate) type File<'a> = (&'a str, &'a str, &'a [u8]);

/// The boundary [`multipart`] separates the parts with.
pub(crate) const BOUNDARY: &str = "----BlogFormBoundary7MA4YWxkTrZu0gW";

/// `fields` and the file input `picture` (the pages' only one), as a browser encodes a form with
/// a file input (the HTML standard's multipart encoding): with no file chosen, an empty part
/// named "" of type `application/octet-stream`.
pub(crate) fn multipart(fields: &[(&str, &str)], picture: Option<File<'_>>) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend(
            format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    let (file, declared, bytes) = picture.unwrap_or(("", "application/octet-stream", b""));
    body.extend(
        format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"picture\"; filename=\"{file}\"\r\nContent-Type: {declared}\r\n\r\n")
            .as_bytes(),
    );
    body.extend(bytes);
    body.extend(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// App Service Authentication's headers for `principal` signed in and, with `origin`, those of a
/// form sent from `origin` (a browser's `Origin`, with no fetch metadata).
pub(crate) fn as_principal(principal: &str, origin: Option<&str>) -> Vec<(&'static str, String)> {
    let mut headers = super::host::signed_in(principal);
    if let Some(origin) = origin {
        headers.extend([
            ("Content-Type", "application/x-www-form-urlencoded".to_owned()),
            ("Origin", origin.to_owned()),
        ]);
    }
    headers
}

/// `GET path` forwarded by the Functions host, `principal` signed in.
pub(crate) async fn page_on_azure(app: &TestApp, principal: &str, path: &str) -> Answer {
    forward(app, "GET", path, &as_principal(principal, None), None).await
}

/// `POST path` forwarded by the Functions host: a form of `principal`'s sent from `origin`, with
/// `body` (none for an empty form, which the host forwards without one).
pub(crate) async fn form_on_azure(
    app: &TestApp,
    principal: &str,
    path: &str,
    origin: &str,
    body: Option<&[u8]>,
) -> Answer {
    forward(app, "POST", path, &as_principal(principal, Some(origin)), body).await
}

async fn forward(
    app: &TestApp,
    method: &str,
    path: &str,
    headers: &[(&'static str, String)],
    body: Option<&[u8]>,
) -> Answer {
    let headers: Vec<(&str, &str)> =
        headers.iter().map(|(name, value)| (*name, value.as_str())).collect();
    super::host::forward(app, method, path, &headers, body).await
}
