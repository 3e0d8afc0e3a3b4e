//! Q6: the newest posts, in short form, and their cache. The cache lets the front page, the
//! Atom feed and `GET /api/feed` cost nothing while nothing is posted. Pages are kept and
//! checked by the blog's change log. Where the log cannot say, they are checked by the feed's
//! change mark ([`super::kept`]), which `PostsChangeFeed` writes after each change it makes to
//! `feed`.

use std::sync::Arc;

use crate::cosmos::{Container, queries};
use crate::model::{FEED_MARK_ID, FEED_MARK_PARTITION, FEED_PARTITION, Post};

use super::kept::{MAX_LIST_BYTES, Mark, MarkedPage, MarkedPages, PageBytes, etag_of};
use super::lists::{DEFAULT_FEED_SIZE, ListPage, ListParams, wrap_token};
use super::{AppResult, AppState};

/// The most feed pages kept at once (each page size and continuation is a page).
const MAX_CACHED_PAGES: usize = 256;

/// The feed's change mark.
const FEED_MARK: Mark<'static> =
    Mark { container: Container::Feed, partition_key: FEED_MARK_PARTITION, id: FEED_MARK_ID };

/// Q6, newest first, through the cache. A read is one query on the single partition of `feed`,
/// which the change feed keeps at the newest 100 posts. For a page kept longer than a second,
/// it is one point read of the feed's change mark when the mark did not change.
///
/// A kept page that the change log says changed only in posts' copies changed in place is
/// mended instead. Those are most writes: a comment, a like, an edit, an author's new name.
/// Mending costs one point read of each such copy: about 1 RU a post where Q6 is about 17. A
/// post that entered or left the feed, or more changed posts than `MAX_MENDED`, has the page
/// read whole.
pub(crate) async fn feed_page(
    state: &AppState,
    params: &ListParams,
) -> AppResult<Arc<MarkedPage<FeedPage>>> {
    const LIST: &str = "feed";
    let page = params.page_request(&state.tokens, LIST, FEED_PARTITION, DEFAULT_FEED_SIZE)?;
    let first = page.continuation.is_none();
    let key = (page.size, page.continuation.clone());
    let read = || async {
        let found = state
            .store
            .query_page::<Post>(Container::Feed, FEED_PARTITION, queries::feed(), page)
            .await?;
        let list = ListPage {
            items: found.items,
            continuation_token: wrap_token(&state.tokens, found.continuation, LIST, FEED_PARTITION),
        };
        Ok(FeedPage::new(list))
    };
    let mend = |kept: &FeedPage, changed: Vec<String>| {
        let kept = ListPage {
            items: kept.list.items.clone(),
            continuation_token: kept.list.continuation_token.clone(),
        };
        async move {
            let changed: std::collections::BTreeSet<String> = changed.into_iter().collect();
            if changed.len() > MAX_MENDED {
                return Ok(None);
            }
            let reads = changed.into_iter().map(|post_id| async move {
                let copy = state
                    .store
                    .read::<serde_json::Value>(Container::Feed, FEED_PARTITION, &post_id)
                    .await?;
                AppResult::Ok((post_id, copy.and_then(shown_in_the_feed)))
            });
            let copies = futures::future::try_join_all(reads).await?;
            Ok(mended(kept, first, copies).map(FeedPage::new))
        }
    };
    state
        .feed
        .pages
        .page_mended(state, key, super::kept::change_log::FEED, FEED_MARK, read, mend)
        .await
}

/// The most changed posts a kept page of the feed is mended with, one point read each; past
/// this many, Q6 costs less.
const MAX_MENDED: usize = 8;

/// A copy in the feed as Q6 would answer it: a post, not a fence of the feed's trigger.
fn shown_in_the_feed(document: serde_json::Value) -> Option<Post> {
    if document.get("scriptFence").is_some() || document["type"] != "post" {
        return None;
    }
    serde_json::from_value(document).ok()
}

/// `kept` with each changed post's copy put in its place. `None` where that is not the page Q6
/// would answer: a post the page holds is gone from the feed, or an edit moved a post. It is
/// also `None` when a post the page does not hold falls within its span (it entered the feed).
/// `first`: the page is the feed's first, whose span has no upper end.
fn mended(
    mut kept: ListPage<Post>,
    first: bool,
    copies: Vec<(String, Option<Post>)>,
) -> Option<ListPage<Post>> {
    let order = |post: &Post| (post.creation_date.clone(), post.id.clone());
    let (newest, oldest) = (kept.items.first().map(order), kept.items.last().map(order));
    for (post_id, copy) in copies {
        let held = kept.items.iter().position(|post| post.id == post_id);
        match (held, copy) {
            (Some(at), Some(copy)) => kept.items[at] = copy,
            (Some(_), None) => return None,
            (None, Some(copy)) => {
                let place = order(&copy);
                // Changed in place on another page: this one is as it was.
                let on_a_page_before =
                    !first && newest.as_ref().is_some_and(|newest| place > *newest);
                let on_a_page_after = kept.continuation_token.is_some()
                    && oldest.as_ref().is_some_and(|oldest| place < *oldest);
                if !(on_a_page_before || on_a_page_after) {
                    return None;
                }
            }
            (None, None) => {}
        }
    }
    kept.items.windows(2).all(|pair| order(&pair[0]) > order(&pair[1])).then_some(kept)
}

/// Writes the feed's change mark again, so that no instance keeps showing a page the change
/// made old. It is written after every change made to the feed's posts. It is also written
/// after a change that may have been made before a failure (a delivery repeated).
pub(crate) async fn mark_feed_changed(state: &AppState) -> AppResult<()> {
    FEED_MARK.write(state, FEED_MARK_PARTITION).await
}

/// A feed page as read, with its JSON answer and that answer's ETag (what adapters render of it
/// once for everyone is kept beside it: [`MarkedPage::rendering`]).
pub(crate) struct FeedPage {
    /// The page's posts, newest first, and the token of the next page.
    pub list: ListPage<Post>,
    /// The page as the API answers it, serialized once for every reader of the cached page.
    pub json: String,
    /// The page's entity tag, for `If-None-Match`.
    pub etag: String,
}

impl PageBytes for FeedPage {
    /// Its posts and their JSON.
    fn weight(&self) -> usize {
        self.list.weight() + self.json.len()
    }
}

impl FeedPage {
    fn new(list: ListPage<Post>) -> FeedPage {
        let json = serde_json::to_string(&list).expect("a page serializes");
        let etag = etag_of(json.as_bytes());
        FeedPage { list, json, etag }
    }
}

type PageKey = (u32, Option<String>);

/// The feed pages one instance keeps.
pub struct FeedCache {
    pages: MarkedPages<PageKey, FeedPage>,
}

impl Default for FeedCache {
    fn default() -> Self {
        FeedCache { pages: MarkedPages::within(MAX_CACHED_PAGES, MAX_LIST_BYTES) }
    }
}

impl FeedCache {
    /// How many pages are held, fresh or not yet swept.
    pub fn cached_pages(&self) -> usize {
        self.pages.len()
    }

    /// Forgets every page: the feed changed (called by `PostsChangeFeed` after it wrote copies).
    /// A read already under way still answers its own waiters; the next request reads again.
    pub fn invalidate(&self) {
        self.pages.forget(|_| true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(id: &str, day: u32, likes: u64) -> Post {
        serde_json::from_value(serde_json::json!({
            "id": id, "type": "post", "postId": id, "userId": "u", "userUsername": "u", "title": "t", "content": "c",
            "commentCount": 0, "likeCount": likes, "creationDate": format!("2026-11-{day:02}T00:00:00.000Z")
        }))
        .expect("a post")
    }

    fn page(days: &[(&str, u32)], more: bool) -> ListPage<Post> {
        let items = days.iter().map(|(id, day)| post(id, *day, 0)).collect();
        ListPage { items, continuation_token: more.then(|| "next".to_owned()) }
    }

    /// A like on a post the page holds puts its new copy in its place.
    #[test]
    fn a_post_changed_in_place_is_put_in_its_place() {
        let kept = page(&[("c", 3), ("b", 2)], true);
        let mended = mended(kept, true, vec![("b".into(), Some(post("b", 2, 1)))]).expect("mended");
        assert_eq!(mended.items[1].like_count, 1);
        assert_eq!(mended.continuation_token.as_deref(), Some("next"));
    }

    /// A post changed on another page leaves this one as it was. The page is read whole for a
    /// post that falls within its span without being on it (it entered the feed). It is also
    /// read whole for a post it holds that is gone from the feed.
    #[test]
    fn only_what_the_page_holds_or_spans_decides() {
        let second = || page(&[("c", 13), ("b", 12)], true);
        assert!(
            mended(second(), false, vec![("z".into(), Some(post("z", 20, 1)))]).is_some(),
            "on the page before"
        );
        assert!(
            mended(second(), false, vec![("a".into(), Some(post("a", 1, 1)))]).is_some(),
            "on the page after"
        );
        assert!(
            mended(second(), true, vec![("z".into(), Some(post("z", 20, 1)))]).is_none(),
            "above the first page"
        );
        let last = page(&[("c", 13), ("b", 12)], false);
        assert!(
            mended(last, false, vec![("a".into(), Some(post("a", 1, 1)))]).is_none(),
            "below the last page"
        );
        assert!(
            mended(second(), false, vec![("a".into(), Some(post("a", 12, 1)))]).is_some(),
            "same day, id below b"
        );
        assert!(
            mended(second(), false, vec![("bb".into(), Some(post("bb", 12, 1)))]).is_none(),
            "same day, id above b: within"
        );
        assert!(mended(second(), false, vec![("b".into(), None)]).is_none(), "gone from the feed");
        assert!(
            mended(second(), false, vec![("gone".into(), None)]).is_some(),
            "gone, and not held"
        );
        assert!(
            mended(second(), false, vec![("b".into(), Some(post("b", 14, 1)))]).is_none(),
            "moved"
        );
    }
}
