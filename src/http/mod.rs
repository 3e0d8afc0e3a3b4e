//! The HTTP functions: one module per resource, a router, and the few extractors they share.
//! The router serves them at the paths the Functions host forwards: the JSON API under
//! `/api/...`, the pages at the root, the change-feed functions at `/{FunctionName}` under the
//! host.
//!
//! Handlers stay thin: read the request, call the use case in [`crate::app`], answer; what a
//! use case's error means in HTTP is decided once, in [`error`].

pub(crate) mod auth;
mod body;
mod caching;
mod comments;
pub(crate) mod error;
pub(crate) mod extract;
pub(crate) mod feed;
mod front_door;
mod host;
mod likes;
pub(crate) mod openapi;
pub(crate) mod pages;
mod pictures;
mod posts;
mod revisions;
mod search;
pub(crate) mod serve;
mod tags;
mod users;

use axum::Router;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter, on, post};

use crate::app::AppState;
use error::ApiError;

pub(crate) use body::UploadBuffers;
pub(crate) use extract::MAX_BODY_BYTES;
use front_door::FrontDoor;
pub(crate) use front_door::{OWN_LINES_PER_MINUTE, RequestLog};
pub(crate) use pictures::MAX_UPLOAD_BYTES;

/// The largest change-feed batch the host may deliver in one invocation.
pub(crate) const HOST_BATCH_BYTES: usize = 64 * 1024 * 1024;

/// The route of the front page. Under the Functions host an empty route is not served at the
/// root (it falls back to the function's name). So it is an optional parameter that only the
/// empty path matches (ASP.NET Core's `maxlength(0)` constraint).
pub const FRONT_PAGE_ROUTE: &str = "{home:maxlength(0)?}";

/// Declares the HTTP functions, each once: its name (the folder under `functions/`), method,
/// route (host.json's route prefix is empty: the JSON API's routes start with `api/`, the
/// pages' do not) and handler. The router is built from them, and a test checks them against
/// every `functions/*/function.json`, so the two cannot drift apart.
macro_rules! http_functions {
    ($($name:ident $method:ident $route:expr => $handler:path,)*) => {
        /// The HTTP functions the handler serves.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum HttpFunction {
            $(
                #[doc = concat!("The function `", stringify!($name), "`: ", stringify!($method), " ", stringify!($route), ".")]
                $name,
            )*
        }

        impl HttpFunction {
            /// Every HTTP function, in the order declared.
            pub const ALL: &[HttpFunction] = &[$(HttpFunction::$name,)*];

            /// The function's name: its folder under `functions/`.
            pub fn name(self) -> &'static str {
                match self {
                    $(HttpFunction::$name => stringify!($name),)*
                }
            }

            /// The HTTP method it answers.
            pub fn method(self) -> &'static str {
                match self {
                    $(HttpFunction::$name => stringify!($method),)*
                }
            }

            /// Its route, as its `function.json` declares it.
            pub fn route(self) -> &'static str {
                match self {
                    $(HttpFunction::$name => $route,)*
                }
            }

            fn handler(self) -> MethodRouter<AppState> {
                match self {
                    $(HttpFunction::$name => on(MethodFilter::$method, $handler),)*
                }
            }
        }
    };
}

http_functions! {
    CreateUser POST "api/users" => users::create,
    EditUser PUT "api/users/{userId}" => users::edit,
    GetUser GET "api/users/{userId}" => users::get,
    GetMe GET "api/me" => users::me,
    ListUserPosts GET "api/users/{userId}/posts" => users::list_posts,
    ListUserDrafts GET "api/users/{userId}/drafts" => users::list_drafts,
    CreatePost POST "api/posts" => posts::create,
    EditPost PUT "api/posts/{postId}" => posts::edit,
    GetPost GET "api/posts/{postId}" => posts::get,
    DeletePost DELETE "api/posts/{postId}" => posts::delete,
    SharePreview POST "api/posts/{postId}/preview" => posts::share_preview,
    RevokePreview DELETE "api/posts/{postId}/preview" => posts::revoke_preview,
    ListRevisions GET "api/posts/{postId}/revisions" => revisions::list,
    GetRevision GET "api/posts/{postId}/revisions/{number}" => revisions::get,
    RestoreRevision POST "api/posts/{postId}/revisions/{number}/restore" => revisions::restore_one,
    CreateComment POST "api/posts/{postId}/comments" => comments::create,
    ListComments GET "api/posts/{postId}/comments" => comments::list,
    DeleteComment DELETE "api/posts/{postId}/comments/{commentId}" => comments::delete,
    CreateLike POST "api/posts/{postId}/likes" => likes::create,
    ListLikes GET "api/posts/{postId}/likes" => likes::list,
    DeleteLike DELETE "api/posts/{postId}/likes/{userId}" => likes::delete,
    AddPicture POST "api/posts/{postId}/pictures" => pictures::upload,
    GetFeed GET "api/feed" => feed::list,
    ListTagPosts GET "api/tags/{tag}/posts" => tags::list_posts,
    SearchPosts GET "api/search" => search::search,
    GetOpenApi GET "api/openapi.json" => openapi::document,
    // The pages.
    FrontPage GET FRONT_PAGE_ROUTE => pages::feed::front_page,
    PostPage GET "posts/{postId}" => pages::posts::post_page,
    PreviewPage GET "preview/{postId}/{key}" => pages::posts::preview_page,
    NewPostPage GET "write" => pages::write::new_post_page,
    SubmitNewPost POST "write" => pages::write::submit_new_post,
    EditPostPage GET "posts/{postId}/edit" => pages::write::edit_post_page,
    SubmitPostEdit POST "posts/{postId}/edit" => pages::write::submit_post_edit,
    SubmitSharePreview POST "posts/{postId}/preview" => pages::write::submit_share_preview,
    SubmitRevokePreview POST "posts/{postId}/preview/revoke" => pages::write::submit_revoke_preview,
    RevisionPage GET "posts/{postId}/revisions/{number}" => pages::revisions::revision_page,
    SubmitRestore POST "posts/{postId}/revisions/{number}/restore" => pages::revisions::submit_restore,
    SubmitComment POST "posts/{postId}/comments" => pages::posts::submit_comment,
    PostComments GET "posts/{postId}/comments" => pages::posts::post_comments,
    SubmitLike POST "posts/{postId}/likes" => pages::posts::submit_like,
    SubmitUnlike POST "posts/{postId}/unlike" => pages::posts::submit_unlike,
    DeleteCommentPage GET "posts/{postId}/comments/{commentId}/delete" => pages::posts::delete_comment_page,
    SubmitCommentDelete POST "posts/{postId}/comments/{commentId}/delete" => pages::posts::submit_comment_delete,
    DeletePostPage GET "posts/{postId}/delete" => pages::posts::delete_post_page,
    SubmitPostDelete POST "posts/{postId}/delete" => pages::posts::submit_post_delete,
    UserPage GET "users/{userId}" => pages::users::user_page,
    SubmitNewUser POST "users" => pages::users::submit_new_user,
    SubmitRename POST "users/{userId}" => pages::users::submit_rename,
    SignInPage GET "signin" => pages::session::sign_in_page,
    SubmitSignIn POST "signin" => pages::session::submit_sign_in,
    SubmitSignOut POST "signout" => pages::session::submit_sign_out,
    Picture GET "pictures/{userId}/{postId}/{name}" => pictures::show,
    Stylesheet GET "style.css" => pages::stylesheet,
    Favicon GET "favicon.svg" => pages::favicon,
    Robots GET "robots.txt" => pages::robots,
    Sitemap GET "sitemap.xml" => pages::sitemap::sitemap_index,
    SitemapFile GET "sitemaps/{file}" => pages::sitemap::sitemap_file,
    AtomFeed GET "feed.atom" => pages::atom::blog_feed,
    UserAtomFeed GET "users/{userId}/feed.atom" => pages::atom::user_feed,
    TagPage GET "tags/{tag}" => pages::tags::tag_page,
    TagAtomFeed GET "tags/{tag}/feed.atom" => pages::atom::tag_feed,
    SearchPage GET "search" => pages::search::search_page,
}

impl HttpFunction {
    /// The functions whose requests may carry a picture: the API's upload, and the post's forms.
    pub(crate) const TAKING_PICTURES: &[HttpFunction] =
        &[HttpFunction::AddPicture, HttpFunction::SubmitNewPost, HttpFunction::SubmitPostEdit];
}

/// How the router takes requests: what the front door admits, and where the blog is.
pub(crate) struct Serving {
    /// The reads one instance works on at once, and as many writes.
    pub max_in_flight: usize,
    /// How long a request may take in all.
    pub request_timeout: std::time::Duration,
    /// Whether the Functions host delivers the change feed (its routes exist).
    pub host_change_feed: bool,
    /// The bytes the pictures' bodies may hold at once.
    pub uploads: UploadBuffers,
    /// The blog's address as readers reach it: every absolute link's.
    pub public_url: crate::config::PublicUrl,
    /// This instance's requests, counted for the log: [`serve`] writes its minutes.
    pub requests: std::sync::Arc<RequestLog>,
}

impl HttpFunction {
    /// The function a request's method and matched route (as the router declares it) name, if any.
    pub(crate) fn of(method: &axum::http::Method, matched: &str) -> Option<HttpFunction> {
        static ROUTES: std::sync::LazyLock<Vec<(HttpFunction, String)>> =
            std::sync::LazyLock::new(|| {
                HttpFunction::ALL
                    .iter()
                    .map(|&function| (function, router_path(function.route())))
                    .collect()
            });
        ROUTES
            .iter()
            .find(|(function, path)| path == matched && function.method() == method.as_str())
            .map(|(function, _)| *function)
    }
}

/// The path the handler serves a function's route at.
pub fn router_path(route: &str) -> String {
    if route == FRONT_PAGE_ROUTE { "/".to_owned() } else { format!("/{route}") }
}

/// Whether a function's route is the JSON API's (the rest are pages).
pub fn is_api_route(route: &str) -> bool {
    route.starts_with("api/")
}

/// Every route the handler serves: the HTTP functions at the paths the host forwards, and, when
/// the Functions host delivers the change feed (`host_change_feed`), the change-feed functions
/// at `/{FunctionName}`. The front page at `/` is also the host's readiness probe: it waits for
/// any answer to `GET /`.
///
/// The change-feed routes write copies from whatever batch they are given, so they exist only
/// where the host is their one caller. The host reaches them on loopback, and a client cannot:
/// no HTTP function's route can match `/{FunctionName}` (explicit routes only, no catch-all; a
/// test holds every `function.json` to that). Where the local processors deliver the changes,
/// nothing else may.
pub(crate) fn router(state: AppState, serving: Serving) -> Router {
    let host_change_feed = serving.host_change_feed;
    let mut router = Router::new();
    for &function in HttpFunction::ALL {
        // A picture's body is larger than any other request's (the front door reads it within
        // the same limit).
        let handler = if HttpFunction::TAKING_PICTURES.contains(&function) {
            function.handler().layer(axum::extract::DefaultBodyLimit::max(MAX_UPLOAD_BYTES))
        } else {
            function.handler()
        };
        router = router.route(&router_path(function.route()), handler);
    }
    if host_change_feed {
        // Invoked by the host as `POST /{FunctionName}`. A batch holds up to
        // `maxItemsPerInvocation` whole items, so its body may be far larger than an API body.
        let host_batch_limit = axum::extract::DefaultBodyLimit::max(HOST_BATCH_BYTES);
        router = router
            .route("/PostsChangeFeed", post(host::posts).layer(host_batch_limit))
            .route("/UsersChangeFeed", post(host::users).layer(host_batch_limit))
            .route(
                &format!("/{}", crate::app::scheduled::TIMER_FUNCTION),
                post(host::publish_scheduled),
            );
    }
    router
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(FrontDoor::new(serving, state.auth))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// 404: problem+json under `/api/`, an HTML page elsewhere (a person followed a bad link).
async fn not_found(uri: axum::http::Uri) -> Response {
    if uri.path().starts_with("/api/") {
        ApiError::not_found(format!(
            "There is no resource at {}; see docs/api.md for the API's routes.",
            uri.path()
        ))
        .into_response()
    } else {
        pages::not_found_page(uri.path())
    }
}

async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> Response {
    let error = ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{} does not accept {method}.", uri.path()),
    );
    if uri.path().starts_with("/api/") {
        error.into_response()
    } else {
        pages::PageError(error).into_response()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use axum::Router;
    use axum::routing::{get, post};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::sync::Notify;

    use super::{FrontDoor, serve};
    use crate::config::AuthMode;

    /// What a test holds `POST /api/hold` with. The test is told when a request is inside the
    /// handler (`notify_one` keeps the wake for a waiter yet to come). It releases the request
    /// by a permit (kept for a request yet to wait). So no sleep guesses when the request got
    /// there, and no release is lost on a request that had not got there yet.
    #[derive(Clone)]
    struct Hold {
        entered: Arc<Notify>,
        release: Arc<tokio::sync::Semaphore>,
    }

    impl Hold {
        /// Once a request is held inside the handler.
        async fn entered(&self) {
            self.entered.notified().await;
        }

        /// Lets one held request answer.
        fn release(&self) {
            self.release.add_permits(1);
        }
    }

    /// A server whose `POST /api/hold` waits until released, behind the admission layer.
    async fn held_server(max_in_flight: usize, header_timeout: Duration) -> (String, Hold) {
        held_server_with(max_in_flight, serve::Limits { header_timeout, max_connections: 1024 })
            .await
    }

    async fn held_server_with(max_in_flight: usize, limits: serve::Limits) -> (String, Hold) {
        let hold = Hold {
            entered: Arc::new(Notify::new()),
            release: Arc::new(tokio::sync::Semaphore::new(0)),
        };
        let held = hold.clone();
        let router = Router::new()
            .route(
                "/api/hold",
                post(move || async move {
                    held.entered.notify_one();
                    held.release.acquire().await.expect("never closed").forget();
                }),
            )
            .route("/api/read", get(|| async { "ok" }))
            .route("/api/trickle", get(trickle))
            .layer(FrontDoor::new(
                super::Serving {
                    max_in_flight,
                    request_timeout: crate::config::DEFAULT_REQUEST_TIMEOUT,
                    host_change_feed: false,
                    uploads: super::UploadBuffers::new(
                        super::UploadBuffers::DEFAULT_BYTES,
                        super::MAX_UPLOAD_BYTES,
                    ),
                    public_url: crate::config::PublicUrl::of_listener(
                        "127.0.0.1:7071".parse().unwrap(),
                    ),
                    requests: Default::default(),
                },
                AuthMode::None,
            ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(serve::serve(listener, router, limits, std::future::pending()));
        (base, hold)
    }

    #[tokio::test]
    async fn past_max_in_flight_a_request_is_503_at_once_but_only_for_its_kind() {
        let (base, hold) = held_server(1, crate::config::DEFAULT_HEADER_TIMEOUT).await;
        let client = reqwest::Client::new();
        let held = tokio::spawn(client.post(format!("{base}/api/hold")).send());
        hold.entered().await;
        let refused = client.post(format!("{base}/api/hold")).send().await.unwrap();
        assert_eq!(refused.status(), 503);
        assert!(refused.text().await.unwrap().contains("retry"));
        assert_eq!(
            client.get(format!("{base}/api/read")).send().await.unwrap().status(),
            200,
            "writes do not starve reads"
        );
        hold.release();
        assert_eq!(held.await.unwrap().unwrap().status(), 200);
    }

    /// An answer whose body comes in four parts, 150 ms apart.
    async fn trickle() -> axum::body::Body {
        use futures::StreamExt;
        let parts = futures::stream::iter(0..4).then(|part| async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            Ok::<_, std::io::Error>(format!("part {part}\n"))
        });
        axum::body::Body::from_stream(parts)
    }

    /// docs/configuration.md: "An answer takes as long as the client takes to read it". The header timeout
    /// is a connection's wait for a request, on the server loop `main` runs (`serve::serve`): an
    /// answer that takes longer than the timeout to send is not cut off.
    #[tokio::test]
    async fn an_answer_slower_than_the_header_timeout_is_sent_whole() {
        let (base, _hold) = held_server(1, Duration::from_millis(300)).await;
        let body = reqwest::get(format!("{base}/api/trickle")).await.unwrap().text().await.unwrap();
        assert_eq!(body, "part 0\npart 1\npart 2\npart 3\n");
    }

    #[tokio::test]
    async fn a_connection_that_does_not_finish_its_headers_is_closed() {
        let (base, _hold) = held_server(1, Duration::from_millis(300)).await;
        for request in [&b"GET /api/read HTTP/1.1\r\nHost: x\r\n"[..], b""] {
            let mut stream =
                tokio::net::TcpStream::connect(base.trim_start_matches("http://")).await.unwrap();
            stream.write_all(request).await.unwrap();
            let mut rest = Vec::new();
            let read =
                tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest)).await;
            assert!(read.is_ok(), "the server closes a slow or idle connection");
        }
    }

    /// At the connection limit, with every connection working on a request, there is nobody to
    /// close: a newcomer is answered 503 with a problem at once, and served again once there is
    /// room.
    #[tokio::test]
    async fn at_the_connection_limit_with_every_connection_busy_a_newcomer_is_503() {
        let limits = serve::Limits {
            header_timeout: crate::config::DEFAULT_HEADER_TIMEOUT,
            max_connections: 1,
        };
        let (base, hold) = held_server_with(2, limits).await;
        let held = tokio::spawn(reqwest::Client::new().post(format!("{base}/api/hold")).send());
        hold.entered().await;
        let refused = reqwest::Client::new().get(format!("{base}/api/read")).send().await.unwrap();
        assert_eq!(refused.status(), 503);
        assert_eq!(refused.headers()["content-type"], "application/problem+json");
        assert!(refused.text().await.unwrap().contains("retry in a moment"));
        hold.release();
        assert_eq!(held.await.unwrap().unwrap().status(), 200);
        let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
        assert_eq!(client.get(format!("{base}/api/read")).send().await.unwrap().status(), 200);
    }
}
