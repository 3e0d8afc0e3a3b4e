//! The pages on Azure: sign-in and sign-out are the platform's, and forms are taken from the
//! blog's origin only.

use super::*;

/// On Azure: the pages as the Functions host forwards them (the client's `Host`), signed in by
/// App Service Authentication's headers; sign-in and sign-out are the platform's `/.auth/`
/// endpoints, the development cookie means nothing, and a form is judged by its `Origin` when
/// the browser sends no fetch metadata. The tests below check one of these each.
pub(crate) async fn on_azure() -> TestApp {
    use blog::{AuthMode, Config};
    let dir = tempfile::tempdir().unwrap();
    let mut app = TestApp::start_configured(Config {
        auth: AuthMode::Platform,
        ..TestApp::config(dir.path())
    })
    .await;
    app.keep(dir);
    app
}

/// The Entra ID principal the platform signs in.
pub(crate) const PRINCIPAL: &str = "00000000-0000-0000-0000-0000000000aa";

/// The blog's own origin on Azure.
const AZURE_ORIGIN: &str = "https://blog.azurewebsites.net";

/// [`PRINCIPAL`]'s profile, "Entra Alice", made by the sign-up form, and the path of a post
/// written with the write form.
async fn entra_alices_post(app: &TestApp) -> String {
    let created =
        forms::form_on_azure(app, PRINCIPAL, "/users", AZURE_ORIGIN, Some(b"username=Entra+Alice"))
            .await;
    assert_eq!(
        (created.status.as_u16(), created.header("location")),
        (303, Some(&*format!("/users/{PRINCIPAL}")))
    );
    let written = forms::form_on_azure(
        app,
        PRINCIPAL,
        "/write",
        AZURE_ORIGIN,
        Some(b"title=From+Azure&content=c"),
    )
    .await;
    assert_eq!(written.status.as_u16(), 303, "{}", written.body);
    written.header("location").unwrap().to_owned()
}

/// Sign-in is the platform's, and comes back to the page it was asked from; never to another site.
#[tokio::test]
async fn on_azure_sign_in_comes_back_to_the_page_never_elsewhere() {
    let app = on_azure().await;
    let sign_in = common::host::forward(&app, "GET", "/signin", &[], None).await;
    assert_eq!(
        (sign_in.status.as_u16(), sign_in.header("location")),
        (303, Some("/.auth/login/aad?post_login_redirect_uri=/"))
    );
    let from_post = common::host::forward(&app, "GET", "/signin?return=/posts/p1", &[], None).await;
    assert_eq!(
        from_post.header("location"),
        Some("/.auth/login/aad?post_login_redirect_uri=/posts/p1")
    );
    let elsewhere =
        common::host::forward(&app, "GET", "/signin?return=//evil.example/", &[], None).await;
    assert_eq!(elsewhere.header("location"), Some("/.auth/login/aad?post_login_redirect_uri=/"));
}

#[tokio::test]
async fn on_azure_the_development_cookie_signs_nobody_in() {
    let app = on_azure().await;
    let front =
        common::host::forward(&app, "GET", "/", &[("Cookie", "blog_dev_user=alice")], None).await;
    assert!(
        front.body.as_str().unwrap().contains("href=\"/signin\""),
        "the development cookie signs nobody in"
    );
}

/// Without fetch metadata, a form is judged by its `Origin`: the blog's own is taken, another
/// site's refused.
#[tokio::test]
async fn on_azure_only_a_form_from_the_blogs_origin_is_taken() {
    let app = on_azure().await;
    entra_alices_post(&app).await;
    let forged = forms::form_on_azure(
        &app,
        PRINCIPAL,
        "/write",
        "https://evil.example",
        Some(b"title=t&content=c"),
    )
    .await;
    assert_eq!(forged.status.as_u16(), 403, "{}", forged.body);
}

/// The like button's form is empty: the host forwards it without a body or Content-Type, and
/// it is a like, shown under the principal's name.
#[tokio::test]
async fn on_azure_an_empty_like_form_forwarded_without_a_body_is_a_like() {
    let app = on_azure().await;
    let post_path = entra_alices_post(&app).await;
    let liked =
        forms::form_on_azure(&app, PRINCIPAL, &format!("{post_path}/likes"), AZURE_ORIGIN, None)
            .await;
    assert_eq!(
        (liked.status.as_u16(), liked.header("location")),
        (303, Some(&*format!("{post_path}#actions"))),
        "{}",
        liked.body
    );
    let post = forms::page_on_azure(&app, PRINCIPAL, &post_path).await;
    let html = post.body.as_str().unwrap();
    assert!(
        html.contains(
            "by <a href=\"/users/00000000-0000-0000-0000-0000000000aa\"><bdi>Entra Alice</bdi></a>"
        ),
        "{html}"
    );
    assert!(html.contains("0 comments · 1 like") && html.contains("You like this post."), "{html}");
}

#[tokio::test]
async fn on_azure_sign_out_is_the_platforms() {
    let app = on_azure().await;
    let sign_out = forms::form_on_azure(&app, PRINCIPAL, "/signout", AZURE_ORIGIN, None).await;
    assert_eq!(sign_out.header("location"), Some("/.auth/logout?post_logout_redirect_uri=/"));
}
