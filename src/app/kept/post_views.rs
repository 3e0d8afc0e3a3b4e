//! The post page's reads, shared by its viewers: Q2 (the post), a page of Q4 (its comments) and
//! the first page of Q5 (its likes), read together and kept.
//!
//! For [`FRESH_FOR`](super::FRESH_FOR) a view is shown as it is. After that, the blog's change
//! log ([`super::change_log`], one point read a second per instance for every page) says
//! whether it changed. Every write that changes the page writes the post. An edit does. So does
//! a comment or like added or deleted: its stored procedure updates the post's counters in the
//! same transaction. So does a commenter's or liker's new name: `updateUsernames` writes it
//! with the post again, in the same transaction. The change feed (`PostsChangeFeed`) names
//! every post it delivers in that log. A view the log names, or where the log cannot say, is
//! checked by one point read of the post. Its etag changes with every one of those writes, so
//! an unchanged etag says the comments and likes kept are still the ones stored. A changed post
//! says which of its lists changed: each carries a version ([`ListVersions`]) that the same
//! transactions move. So the view reads again only the lists whose versions moved. After an
//! edit it reads the post alone (about 1 RU), after a comment the post and its comments (about
//! 9 RU), after a like the post and its likes (about 10 RU). It reads all three (about 17 RU)
//! only where a version is not known (a post stored before posts had them). A post then costs
//! nothing while nobody writes to it, where each of its views after the first second cost a
//! point read. A view is read whole again at least every
//! [`READ_WHOLE_WITHIN`](super::READ_WHOLE_WITHIN) all the same, for what reaches a post's
//! partition without its post (an operator's repair). Views are kept within
//! [`MAX_CACHED_VIEWS`] and [`MAX_CACHED_BYTES`], the least recently checked post's going
//! first.
//!
//! Every write to a post through this instance (C2 edit, C3, C4, C5, C6, C7) has its views
//! checked so on their next request, whatever their age. Another instance shows the write once
//! the change feed has delivered it, and [`FRESH_FOR`](super::FRESH_FOR) later at most. A
//! writer is sent back with [`Freshness::Read`] by the pages (a cookie scoped to the post),
//! which has a view checked at once. So whichever instance answers, they see their own write.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use super::change_log;
use super::now;
use super::pages::{KeptPage, KeptPages, LogCheckedRead};
use crate::app::comments::comments_of;
use crate::app::likes::{likes_of, viewer_likes};
use crate::app::lists::{ListPage, ListParams, OwnerKnown};
use crate::app::posts::{get_post, get_post_versioned};
use crate::app::{AppResult, AppState, post_not_found};
use crate::cosmos::Versioned;
use crate::model::first_picture::FirstPicture;
use crate::model::markdown::Pictures;
use crate::model::{self, Comment, Like, ListVersions, Post, StoredPost, markdown};

/// The most views kept at once (each post and page of its comments is a view).
const MAX_CACHED_VIEWS: usize = 4096;
/// The most bytes the kept views may hold, as [`PostView::weight`] counts them. A view of the
/// largest post with a page of 100 of the largest comments weighs about 2.6 MB. So a dozen of
/// those fit, or thousands of usual ones (a few KB each).
const MAX_CACHED_BYTES: usize = 32 * 1024 * 1024;

/// What the post page shows of a post, the same for every viewer.
pub(crate) struct PostView {
    pub post: Post,
    /// The post's etag when the view was read: the view is still true while it is the same.
    etag: String,
    /// The versions of the post's lists when the view was read: a list whose version is the
    /// same is still true.
    versions: ListVersions,
    /// When the older of the comments and likes kept was read (a check by etag keeps this).
    read_whole: Instant,
    /// What it holds, in bytes, its rendering counted ahead ([`PostView::weight`]).
    weight: usize,
    pub comments: ListPage<Comment>,
    /// The first page of likes only: the page names some likers and counts the rest.
    pub likes: ListPage<Like>,
    /// The post's and the comments' Markdown as HTML, rendered by the first viewer who needs it
    /// and kept with the view: rendering a long post on every view cost more than reading it.
    rendered: OnceLock<RenderedText>,
}

/// A view's Markdown, rendered ([`markdown::to_html`]): the post's text under its title (h1),
/// with the pictures its writer added to it, each comment's under the "Comments" heading (h2),
/// with none.
pub(crate) struct RenderedText {
    pub content: String,
    pub comments: Vec<String>,
    /// The first of the post's pictures shown (its link preview's picture).
    pub picture: Option<FirstPicture>,
}

impl PostView {
    pub(crate) fn rendered(&self) -> &RenderedText {
        self.rendered.get_or_init(|| RenderedText {
            content: markdown::to_html(
                &self.post.content,
                Pictures::Of { owner: &self.post.user_id, post: &self.post.id },
                2,
            ),
            comments: self
                .comments
                .items
                .iter()
                .map(|comment| markdown::to_html(&comment.content, Pictures::None, 3))
                .collect(),
            picture: FirstPicture::of(&self.post),
        })
    }
}

/// Whether a view may come from the cache.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Freshness {
    /// Whatever this instance read in the last [`FRESH_FOR`](super::FRESH_FOR).
    Cached,
    /// Read now (and kept for the next viewers): for whoever just wrote to the post.
    Read,
}

/// Q2 + Q4 + Q5 of `post_id`, concurrently, through the cache. For a view kept longer than
/// [`FRESH_FOR`](super::FRESH_FOR): Q2 alone when the post's etag says nothing changed, and Q2
/// then the lists whose versions moved when it changed. The comments are paged by `params`.
async fn post_view(
    state: &AppState,
    post_id: &str,
    params: &ListParams,
    freshness: Freshness,
) -> AppResult<Arc<PostView>> {
    let key = ViewKey {
        post_id: post_id.to_owned(),
        comments_limit: params.limit().map(str::to_owned),
        comments_from: params.continuation().map(str::to_owned),
    };
    state
        .post_views
        .views
        .page_with(
            key,
            &change_log::post(post_id),
            freshness == Freshness::Read,
            state.changes.for_pages(state),
            |kept| async move {
                let first_likes = ListParams::default();
                let Some(kept) = kept else {
                    let (post, comments, likes) = tokio::join!(
                        get_post_versioned(state, post_id),
                        comments_of(state, post_id, params, OwnerKnown::Yes),
                        likes_of(state, post_id, &first_likes, OwnerKnown::Yes),
                    );
                    return AppResult::Ok(Arc::new(PostView::new(post?, comments?, likes?, now())));
                };
                let read_at = now();
                let post = get_post_versioned(state, post_id).await?;
                if post.etag == kept.etag {
                    return Ok(kept);
                }
                let (comments_moved, likes_moved) = kept.versions.moved_since(&post.item.versions);
                let (comments, likes) = tokio::join!(
                    read_if_moved(
                        comments_moved,
                        &kept.comments,
                        comments_of(state, post_id, params, OwnerKnown::Yes)
                    ),
                    read_if_moved(
                        likes_moved,
                        &kept.likes,
                        likes_of(state, post_id, &first_likes, OwnerKnown::Yes)
                    ),
                );
                let read_whole =
                    if comments_moved && likes_moved { read_at } else { kept.read_whole };
                Ok(Arc::new(PostView::new(post, comments?, likes?, read_whole)))
            },
        )
        .await
}

/// The post page's reads for one viewer: the view all viewers share ([`post_view`]), and
/// whether `viewer` (signed in) likes the post.
pub(crate) struct PostPage {
    pub view: Arc<PostView>,
    pub liked: bool,
}

/// [`post_view`], and whether `viewer` likes the post ([`viewer_likes`]: seen on the view's
/// first page of likes, or one point read past it).
pub(crate) async fn read_post_page(
    state: &AppState,
    post_id: &str,
    params: &ListParams,
    freshness: Freshness,
    viewer: Option<&str>,
) -> AppResult<PostPage> {
    let view = post_view(state, post_id, params, freshness).await?;
    // Checked on the kept view, for each viewer: a draft is kept as any post is, and its
    // author's alone to see.
    if !model::readable_by(&view.post, viewer) {
        return Err(post_not_found(post_id));
    }
    let liked = match viewer {
        Some(me) => viewer_likes(state, &view.post, &view.likes.items, me).await?,
        None => false,
    };
    Ok(PostPage { view, liked })
}

/// `read`'s page where the list's version `moved`, else the page `kept`.
async fn read_if_moved<T: Clone>(
    moved: bool,
    kept: &ListPage<T>,
    read: impl Future<Output = AppResult<ListPage<T>>>,
) -> AppResult<ListPage<T>> {
    if moved { read.await } else { Ok(kept.clone()) }
}

impl PostView {
    fn new(
        post: Versioned<StoredPost>,
        comments: ListPage<Comment>,
        likes: ListPage<Like>,
        read_whole: Instant,
    ) -> PostView {
        let StoredPost { post: item, versions, .. } = post.item;
        let weight = PostView::weight(&item, &comments, &likes);
        PostView {
            post: item,
            etag: post.etag,
            versions,
            read_whole,
            weight,
            comments,
            likes,
            rendered: OnceLock::new(),
        }
    }

    /// The bytes a view holds: its texts three times, and a few hundred bytes an item for ids,
    /// names and dates. Three times, because a text is held as read and rendered to HTML, which
    /// escapes and wraps it: about twice its length for prose, more for markup-heavy text. The
    /// bound is the cache's total, not each view's.
    fn weight(post: &Post, comments: &ListPage<Comment>, likes: &ListPage<Like>) -> usize {
        const PER_ITEM: usize = 300;
        let texts = post.title.len()
            + post.content.len()
            + comments.items.iter().map(|comment| comment.content.len()).sum::<usize>();
        3 * texts + PER_ITEM * (1 + comments.items.len() + likes.items.len())
    }
}

impl KeptPage for PostView {
    fn read_whole(&self) -> Instant {
        self.read_whole
    }

    fn weight(&self) -> usize {
        self.weight
    }
}

/// Which view: the post, and the page of its comments asked for, as asked (a token is checked
/// when it is read, so one that is refused is never kept).
#[derive(Clone, PartialEq, Eq, Hash)]
struct ViewKey {
    post_id: String,
    comments_limit: Option<String>,
    comments_from: Option<String>,
}

/// The views one instance read or checked in the last [`READ_WHOLE_WITHIN`](super::READ_WHOLE_WITHIN), within
/// [`MAX_CACHED_VIEWS`] and [`MAX_CACHED_BYTES`], the least recently checked going first; and
/// the API's reads of posts and their comments, kept the same way.
pub(crate) struct PostViewCache {
    views: KeptPages<ViewKey, PostView>,
    posts: KeptPages<String, LogCheckedRead<Post>>,
    comments: KeptPages<ViewKey, LogCheckedRead<ListPage<Comment>>>,
}

/// The most API reads of posts, and of pages of comments, one instance keeps, and the bytes
/// each kind may hold. A post is a few KB (its content at most 100,000 characters); a page of
/// comments is a few to a few hundred.
const MAX_API_READS: usize = 2048;
const MAX_API_READ_BYTES: usize = 8 * 1024 * 1024;

impl Default for PostViewCache {
    fn default() -> Self {
        PostViewCache {
            views: KeptPages::within(MAX_CACHED_VIEWS, MAX_CACHED_BYTES),
            posts: KeptPages::within(MAX_API_READS, MAX_API_READ_BYTES),
            comments: KeptPages::within(MAX_API_READS, MAX_API_READ_BYTES),
        }
    }
}

impl PostViewCache {
    /// Has the post's views checked on their next request, and forgets the API's reads of it: it
    /// was written through this instance. A read already under way still answers its own
    /// waiters; the next view reads what the write changed.
    pub(crate) fn invalidate(&self, post_id: &str) {
        self.views.check_next(|key| key.post_id == post_id);
        self.posts.forget(|kept| kept == post_id);
        self.comments.forget(|key| key.post_id == post_id);
    }
}

/// Q2 for the API (`GET /api/posts/{postId}`): kept and checked by the change log as the post's
/// page is, and read again where the log cannot say (one point read, what a check would cost).
/// The `freshness` argument is [`Freshness::Read`] for a caller who may have just written
/// (signed in), so a writer reads their write whichever instance answers.
pub(crate) async fn api_post(
    state: &AppState,
    post_id: &str,
    freshness: Freshness,
    reader: Option<&str>,
) -> AppResult<Arc<LogCheckedRead<Post>>> {
    const PER_POST: usize = 300;
    let name = change_log::post(post_id);
    let read = state
        .post_views
        .posts
        .page_with(
            post_id.to_owned(),
            &name,
            freshness == Freshness::Read,
            state.changes.for_pages(state),
            |_| async {
                let post = get_post(state, post_id).await?;
                let weight = PER_POST
                    + post.title.len()
                    + post.content.len()
                    + post.tags.iter().map(String::len).sum::<usize>();
                Ok(LogCheckedRead::new(post, weight))
            },
        )
        .await?;
    // As the post page's view: kept for everyone, a draft shown to its author alone.
    if model::readable_by(&read.value, reader) { Ok(read) } else { Err(post_not_found(post_id)) }
}

/// Q4 for the API (`GET /api/posts/{postId}/comments`), each page as asked: kept as [`api_post`]
/// is, and read again where the change log cannot say.
pub(crate) async fn api_comments(
    state: &AppState,
    post_id: &str,
    params: &ListParams,
    freshness: Freshness,
) -> AppResult<Arc<LogCheckedRead<ListPage<Comment>>>> {
    const PER_COMMENT: usize = 300;
    let key = ViewKey {
        post_id: post_id.to_owned(),
        comments_limit: params.limit().map(str::to_owned),
        comments_from: params.continuation().map(str::to_owned),
    };
    let name = change_log::post(post_id);
    state
        .post_views
        .comments
        .page_with(
            key,
            &name,
            freshness == Freshness::Read,
            state.changes.for_pages(state),
            |_| async {
                let comments = comments_of(state, post_id, params, OwnerKnown::No).await?;
                let weight = comments
                    .items
                    .iter()
                    .map(|comment| PER_COMMENT + comment.content.len())
                    .sum::<usize>();
                Ok(LogCheckedRead::new(comments, weight))
            },
        )
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::kept::change_log::LogForChecks;

    fn view_of(post_id: &str, content_bytes: usize) -> Arc<PostView> {
        let post: Post = serde_json::from_value(serde_json::json!({
            "id": post_id, "type": "post", "postId": post_id, "userId": "u", "userUsername": "u", "title": "t",
            "content": "x".repeat(content_bytes), "commentCount": 0, "likeCount": 0, "creationDate": "2026-11-27T00:00:00.000Z"
        }))
        .expect("a post");
        fn empty<T>() -> ListPage<T> {
            ListPage { items: Vec::new(), continuation_token: None }
        }
        let versioned = Versioned {
            item: StoredPost {
                post,
                versions: ListVersions::new(),
                share_key: None,
                revision_count: 0,
            },
            etag: "\"1\"".into(),
        };
        Arc::new(PostView::new(versioned, empty(), empty(), now()))
    }

    fn key(post_id: &str) -> ViewKey {
        ViewKey { post_id: post_id.to_owned(), comments_limit: None, comments_from: None }
    }

    async fn keep(cache: &PostViewCache, post_id: &str, content_bytes: usize) {
        let view = cache
            .views
            .page_with(key(post_id), "p/post", false, LogForChecks::none(), |_| async {
                Ok(view_of(post_id, content_bytes))
            })
            .await;
        assert!(view.is_ok());
    }

    /// Views of large posts are kept within the bytes' budget: the least recently checked
    /// post's view goes first, and what was kept last stays.
    #[tokio::test]
    async fn kept_views_stay_within_their_bytes_dropping_the_least_recent() {
        let cache = PostViewCache::default();
        let large = MAX_CACHED_BYTES / 8; // each weighs 3/8 of the budget
        for post in ["a", "b", "c", "d"] {
            keep(&cache, post, large).await;
        }
        assert!(cache.views.len() <= 3, "{}", cache.views.len());
        let answered_kept = |post: &str| {
            let kept = cache.views.page_with(
                key(post),
                "p/post",
                false,
                LogForChecks::none(),
                |_| async {
                    Err(crate::app::AppError::NotFound(crate::app::Missing::Post("a".into())))
                },
            );
            async move { kept.await.is_ok() }
        };
        assert!(answered_kept("d").await, "what was kept last stays");
        assert!(!answered_kept("a").await, "the least recently checked went first");
    }

    /// A post written through this instance has its views checked on their next request,
    /// fresh as they are, with the view kept to check; the other posts' views are shown as kept.
    #[tokio::test]
    async fn a_write_has_the_posts_views_alone_checked_at_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let cache = PostViewCache::default();
        keep(&cache, "a", 10).await;
        keep(&cache, "b", 10).await;
        cache.invalidate("a");
        let checks = AtomicUsize::new(0);
        let (checks, cache) = (&checks, &cache);
        let view = |post: &'static str| {
            cache.views.page_with(key(post), "p/post", false, LogForChecks::none(), move |kept| {
                assert!(kept.is_some(), "the view kept is given to check");
                checks.fetch_add(1, Ordering::Relaxed);
                async move { Ok(view_of(post, 10)) }
            })
        };
        assert!(
            view("a").await.is_ok() && checks.load(Ordering::Relaxed) == 1,
            "the written post's view checked"
        );
        assert!(
            view("b").await.is_ok() && checks.load(Ordering::Relaxed) == 1,
            "the other's shown as kept"
        );
        assert_eq!(cache.views.len(), 2, "neither is forgotten");
    }
}
