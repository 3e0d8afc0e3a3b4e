//! The post page's reads, shared by its viewers: Q2 (the post), a page of Q4 (its comments) and
//! the first page of Q5 (its likes), read together and kept.
//!
//! For [`POST_VIEW_LIFETIME`] a view is shown as it is. After that, it is checked before it is
//! shown again by one point read of the post: its etag changes with every write that changes
//! the page (an edit; a comment or like added or deleted, whose stored procedure updates the
//! post's counters in the same transaction; a commenter's or liker's new name, which
//! `updateUsernames` writes with the post again, in the same transaction), so an unchanged etag
//! says the comments and likes kept are still the ones stored. A post viewed often then costs
//! one point read a second per instance (about 1 RU) instead of its three reads (about 17 RU),
//! and the two queries only after it changed. A view is read whole again at least every
//! [`VALIDATED_VIEW_LIFETIME`] all the same, for what reaches a post's partition without its
//! post (an operator's repair), and views are kept within [`MAX_CACHED_VIEWS`] and
//! [`MAX_CACHED_BYTES`], the least recently checked post's going first.
//!
//! Every write to a post through this instance (C2 edit, C3, C4, C5, C6, C7) forgets its views
//! at once, so the next view reads it again; another instance shows the write at most
//! [`POST_VIEW_LIFETIME`] late. A writer is sent back with [`Freshness::Read`] by the pages
//! (a cookie scoped to the post), so whichever instance answers, they see their own write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::OnceCell;

use super::comments::comments_of;
use super::likes::likes_of;
use super::lists::{ListPage, ListParams, OwnerKnown};
use super::posts::get_post_versioned;
use super::{AppResult, AppState};
use crate::cosmos::Versioned;
use crate::model::markdown::Pictures;
use crate::model::picture::FirstPicture;
use crate::model::{Comment, Like, Post, markdown};

/// How long one instance shows a post's view before checking it again.
pub(crate) const POST_VIEW_LIFETIME: Duration = Duration::from_secs(1);
/// How long a view checked by its post's etag alone may be shown, from when it was read whole:
/// a bound for writes to a post's partition that leave the post as it was, which the blog never
/// makes but an operator's repair might. Every post viewed in an hour is read whole once an hour
/// per instance for it (its two queries, about 17 RU): measured with ten minutes, those reads were
/// half of what post views cost (BENCHMARKS.md, "Post views checked by the post's etag").
pub(crate) const VALIDATED_VIEW_LIFETIME: Duration = Duration::from_secs(3600);
/// The most views kept at once (each post and page of its comments is a view).
const MAX_CACHED_VIEWS: usize = 4096;
/// The most bytes the kept views may hold, as [`PostView::weight`] counts them: a view of the
/// largest post with a page of 100 of the largest comments weighs about 2.6 MB, so a dozen of
/// those, or thousands of usual ones (a few KB each), fit.
const MAX_CACHED_BYTES: usize = 32 * 1024 * 1024;

/// What the post page shows of a post, the same for every viewer.
pub(crate) struct PostView {
    pub post: Post,
    /// The post's etag when the view was read: the view is still true while it is the same.
    etag: String,
    /// When the comments and likes were read (a check by etag keeps this).
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
            content: markdown::to_html(&self.post.content, Pictures::Of { owner: &self.post.user_id, post: &self.post.id }, 2),
            comments: self.comments.items.iter().map(|comment| markdown::to_html(&comment.content, Pictures::None, 3)).collect(),
            picture: FirstPicture::of(&self.post),
        })
    }
}

/// Whether a view may come from the cache.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Freshness {
    /// Whatever this instance read in the last [`POST_VIEW_LIFETIME`].
    Cached,
    /// Read now (and kept for the next viewers): for whoever just wrote to the post.
    Read,
}

/// Q2 + Q4 + Q5 of `post_id`, concurrently, through the cache; or, for a view kept longer than
/// [`POST_VIEW_LIFETIME`], Q2 alone when the post's etag says nothing changed. `params` pages the
/// comments.
pub(crate) async fn post_view(
    state: &AppState,
    post_id: &str,
    params: &ListParams,
    freshness: Freshness,
) -> AppResult<Arc<PostView>> {
    let key =
        ViewKey { comments_limit: params.limit().map(str::to_owned), comments_from: params.continuation().map(str::to_owned) };
    let (cell, kept) = state.post_views.cell(post_id, key, freshness);
    let view = cell
        .get_or_try_init(|| async {
            let first_likes = ListParams::default();
            let Some(kept) = kept else {
                let (post, comments, likes) = tokio::join!(
                    get_post_versioned(state, post_id),
                    comments_of(state, post_id, params, OwnerKnown::Yes),
                    likes_of(state, post_id, &first_likes, OwnerKnown::Yes),
                );
                return AppResult::Ok(Arc::new(PostView::new(post?, comments?, likes?, Instant::now())));
            };
            let read_at = Instant::now();
            let post = get_post_versioned(state, post_id).await?;
            if post.etag == kept.etag {
                return Ok(kept);
            }
            let (comments, likes) = tokio::join!(
                comments_of(state, post_id, params, OwnerKnown::Yes),
                likes_of(state, post_id, &first_likes, OwnerKnown::Yes),
            );
            Ok(Arc::new(PostView::new(post, comments?, likes?, read_at)))
        })
        .await?;
    Ok(view.clone())
}

impl PostView {
    fn new(post: Versioned<Post>, comments: ListPage<Comment>, likes: ListPage<Like>, read_whole: Instant) -> PostView {
        let weight = PostView::weight(&post.item, &comments, &likes);
        PostView { post: post.item, etag: post.etag, read_whole, weight, comments, likes, rendered: OnceLock::new() }
    }

    /// The bytes a view holds: its texts three times (as read, and rendered to HTML, which
    /// escapes and wraps them: about twice their length for prose, more for markup-heavy text,
    /// the bound being the cache's total, not each view's), and a few hundred bytes an item for
    /// ids, names and dates.
    fn weight(post: &Post, comments: &ListPage<Comment>, likes: &ListPage<Like>) -> usize {
        const PER_ITEM: usize = 300;
        let texts =
            post.title.len() + post.content.len() + comments.items.iter().map(|comment| comment.content.len()).sum::<usize>();
        3 * texts + PER_ITEM * (1 + comments.items.len() + likes.items.len())
    }
}

/// Which of a post's views: the page of comments asked for, as asked (a token is checked when
/// it is read, so one that is refused is never kept).
#[derive(Clone, PartialEq, Eq, Hash)]
struct ViewKey {
    comments_limit: Option<String>,
    comments_from: Option<String>,
}

type ViewCell = Arc<OnceCell<Arc<PostView>>>;
/// A post's views, each with when it was read.
type PostViews = HashMap<ViewKey, (Instant, ViewCell)>;

/// The views one instance read or checked in the last [`VALIDATED_VIEW_LIFETIME`], by post. Concurrent views of
/// a post that is not there share one read (they wait on the same cell).
#[derive(Default)]
pub struct PostViewCache {
    posts: Mutex<HashMap<String, PostViews>>,
}

impl PostViewCache {
    /// The cell for the view: the fresh one; or a new empty one that the caller fills, with the
    /// view it replaces when that may still be true and is to be checked by etag.
    fn cell(&self, post_id: &str, key: ViewKey, freshness: Freshness) -> (ViewCell, Option<Arc<PostView>>) {
        let mut posts = self.posts.lock().expect("never poisoned");
        let mut kept = None;
        if freshness == Freshness::Cached
            && let Some((born, cell)) = posts.get(post_id).and_then(|views| views.get(&key))
        {
            if born.elapsed() < POST_VIEW_LIFETIME {
                return (cell.clone(), None);
            }
            kept = cell.get().filter(|view| view.read_whole.elapsed() < VALIDATED_VIEW_LIFETIME).cloned();
        }
        make_room(&mut posts);
        let cell = ViewCell::default();
        posts.entry(post_id.to_owned()).or_default().insert(key, (Instant::now(), cell.clone()));
        (cell, kept)
    }

    /// Forgets the post's views: it was written through this instance. A read already under way
    /// still answers its own waiters; the next view reads again.
    pub fn invalidate(&self, post_id: &str) {
        self.posts.lock().expect("never poisoned").remove(post_id);
    }
}

/// Keeps the views within [`MAX_CACHED_VIEWS`] and [`MAX_CACHED_BYTES`] before one more is
/// added: what can no longer be shown goes first, then the views of the post checked least
/// recently, post by post. A view still being read weighs nothing yet; it is counted by the next
/// call, so the cache holds at most its budget and the views being read.
fn make_room(posts: &mut HashMap<String, PostViews>) {
    let weight = |views: &PostViews| -> usize { views.values().map(|(_, cell)| cell.get().map_or(0, |view| view.weight)).sum() };
    let size = |posts: &HashMap<String, PostViews>| {
        (posts.values().map(HashMap::len).sum::<usize>(), posts.values().map(weight).sum::<usize>())
    };
    let over = |(count, bytes): (usize, usize)| count >= MAX_CACHED_VIEWS || bytes >= MAX_CACHED_BYTES;
    if !over(size(posts)) {
        return;
    }
    posts.retain(|_, views| {
        views.retain(|_, (born, cell)| {
            born.elapsed() < POST_VIEW_LIFETIME
                || cell.get().is_some_and(|view| view.read_whole.elapsed() < VALIDATED_VIEW_LIFETIME)
        });
        !views.is_empty()
    });
    let (mut count, mut bytes) = size(posts);
    let mut by_recency: Vec<(Option<Instant>, String)> =
        posts.iter().map(|(post_id, views)| (views.values().map(|(born, _)| *born).max(), post_id.clone())).collect();
    by_recency.sort();
    for (_, post_id) in by_recency {
        if !over((count, bytes)) {
            break;
        }
        if let Some(views) = posts.remove(&post_id) {
            count -= views.len();
            bytes -= weight(&views);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view_of(post_id: &str, content_bytes: usize) -> Arc<PostView> {
        let post: Post = serde_json::from_value(serde_json::json!({
            "id": post_id, "type": "post", "postId": post_id, "userId": "u", "userUsername": "u", "title": "t",
            "content": "x".repeat(content_bytes), "commentCount": 0, "likeCount": 0, "creationDate": "2026-11-27T00:00:00.000Z"
        }))
        .expect("a post");
        fn empty<T>() -> ListPage<T> {
            ListPage { items: Vec::new(), continuation_token: None }
        }
        let versioned = Versioned { item: post, etag: "\"1\"".into() };
        Arc::new(PostView::new(versioned, empty(), empty(), Instant::now()))
    }

    fn keep(cache: &PostViewCache, post_id: &str, content_bytes: usize) {
        let (cell, _) = cache.cell(post_id, ViewKey { comments_limit: None, comments_from: None }, Freshness::Cached);
        cell.set(view_of(post_id, content_bytes)).ok().expect("a new cell");
    }

    /// Views of large posts are kept within the bytes' budget: the least recently checked
    /// post's view goes first, and what was kept last stays.
    #[test]
    fn kept_views_stay_within_their_bytes_and_the_least_recent_goes_first() {
        let cache = PostViewCache::default();
        let large = MAX_CACHED_BYTES / 8; // each weighs 3/8 of the budget
        for post in ["a", "b", "c", "d"] {
            keep(&cache, post, large);
        }
        let posts = cache.posts.lock().expect("never poisoned");
        let bytes: usize =
            posts.values().flat_map(HashMap::values).filter_map(|(_, cell)| cell.get()).map(|view| view.weight).sum();
        assert!(bytes < MAX_CACHED_BYTES + view_of("e", large).weight, "{bytes}");
        assert!(posts.contains_key("d") && !posts.contains_key("a"), "{:?}", posts.keys().collect::<Vec<_>>());
    }
}
