//! Pages kept by an instance and checked by a mark: the rule the front page (Q6), a user's
//! posts (Q3), a tag's posts (Q7) and a post's view (`super::post_view`, whose mark is the post's
//! own etag) share.
//!
//! A page is kept with where the instance's copy of the blog's change log was when the page was
//! read ([`super::changes`]). For [`MARKED_PAGE_LIFETIME`] it is shown as it is; after that, the
//! log (one point read a second per instance, shared by every page) says whether it may be shown
//! again, or that it changed and is read again (a post's view, only the parts that changed).
//!
//! When the log cannot say (it dropped changes since, or began anew), the page's own mark does.
//! A mark is one small item that `PostsChangeFeed` writes again after every change it makes to
//! the copies a list reads (`feed`'s posts for Q6, a user's post copies for Q3, a tag's for Q7),
//! so its etag changes whenever the list's answer may have; a page is kept with the mark's etag
//! read just before it, and one point read of the mark (about 1 RU) says whether it may be shown
//! again. A page is read whole again at least every [`CHECKED_PAGE_LIFETIME`] all the same, for
//! what reaches the copies without the change feed (an operator's repair).

use std::collections::HashMap;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::json;
use tokio::sync::OnceCell;

pub(crate) use super::changes::MARKED_PAGE_LIFETIME;
use super::changes::{LogRead, Recent, Seen};
use super::lists::ListPage;
use super::{AppResult, AppState};
use crate::cosmos::{Container, WriteOp};
use crate::model::{self, Post};

/// How long a page checked by its mark alone may be shown, from when it was read whole: the
/// bound for changes the mark does not follow (an operator's repair). Once an hour per page kept
/// is one query; measured with ten minutes, those reads were half of what post views cost
/// (BENCHMARKS.md, "Post views checked by the post's etag").
pub(crate) const CHECKED_PAGE_LIFETIME: Duration = Duration::from_secs(3600);

/// Where a list's mark is: its container, partition and id.
#[derive(Clone, Copy)]
pub(crate) struct Mark<'a> {
    pub container: Container,
    pub partition_key: &'a str,
    pub id: &'a str,
}

impl Mark<'_> {
    /// The mark's etag; `None` while it was never written (the first change writes it).
    async fn read(self, state: &AppState) -> AppResult<Option<String>> {
        let found = state
            .store
            .read_versioned::<serde_json::Value>(self.container, self.partition_key, self.id)
            .await?;
        Ok(found.map(|mark| mark.etag))
    }

    /// Writes the mark again, giving it a new etag. Called after a change to what the list reads,
    /// never before (a reader that sees the new mark reads a page that has the change), and after
    /// a change that may have been made by a delivery that failed before its mark.
    pub(crate) async fn write(self, state: &AppState, kind: &str) -> AppResult<()> {
        let mut document = json!({ "id": self.id, "type": kind, "changed": model::now() });
        document[self.container.partition_key_path().trim_start_matches('/')] =
            json!(self.partition_key);
        // Unconditional: two writers at once both leave a new etag.
        let write = WriteOp::Upsert { document, if_match: None };
        Ok(state.store.execute_write(self.container, self.partition_key, write).await?)
    }
}

/// What a kept page must say about itself for [`KeptPages`] to keep it: when it was read
/// whole, and what it holds in bytes.
pub(crate) trait Kept {
    /// When the page was read whole (a check by its mark keeps this).
    fn read_whole(&self) -> Instant;
    /// The bytes it holds, for [`KeptPages`]' budget.
    fn weight(&self) -> usize;
}

/// A page of a list as read, with its mark's etag read before it, and what adapters render of
/// it once for everyone ([`Checked::rendering`]).
pub struct Checked<V> {
    /// The page.
    pub page: V,
    mark: Option<String>,
    read_whole: Instant,
    /// What it holds, its renderings counted ahead ([`Kept::weight`]): weighed once, as it is
    /// made, since the bound sums every kept page's weight under the pages' lock.
    weight: usize,
    renderings: Mutex<HashMap<String, Arc<Rendering>>>,
}

/// A representation of a kept page that is the same for everyone who asks for it (the front
/// page or a tag's page as a reader who is not signed in sees it): its bytes and their ETag.
pub(crate) struct Rendering {
    pub body: Bytes,
    pub etag: String,
}

/// How many renderings one kept page keeps. The pages key them by what their request chose
/// (the address the blog was reached at, the page size as typed, the tag as typed): past this
/// many, a rendering is made for its request and not kept.
const MAX_RENDERINGS: usize = 4;

impl<V> Checked<V> {
    /// The page, and the renderings it may keep counted ahead (each about as long as the page's
    /// texts with their markup), as a post view counts its rendering.
    fn new(page: V, mark: Option<String>, read_whole: Instant) -> Self
    where
        V: Weigh,
    {
        let weight = (1 + MAX_RENDERINGS) * page.weight();
        Checked { page, mark, read_whole, weight, renderings: Mutex::default() }
    }

    /// The rendering kept under `key`, or the one `render` makes (kept while there is room).
    /// Rendering the front page on every view cost about half the handler's time per view (25k
    /// against 47k front pages a second, BENCHMARKS.md); kept with the page it renders, it lives
    /// exactly as long as the page is served.
    pub(crate) fn rendering(&self, key: &str, render: impl FnOnce() -> String) -> Arc<Rendering> {
        if let Some(kept) = self.renderings.lock().expect("never poisoned").get(key) {
            return kept.clone();
        }
        let body = render();
        let rendering =
            Arc::new(Rendering { etag: etag_of(body.as_bytes()), body: Bytes::from(body) });
        let mut renderings = self.renderings.lock().expect("never poisoned");
        if renderings.len() < MAX_RENDERINGS {
            renderings.entry(key.to_owned()).or_insert(rendering).clone()
        } else {
            rendering
        }
    }
}

/// A strong ETag for `bytes`: the same on every instance running the same build (SipHash with
/// fixed keys), so a CDN in front of several instances revalidates with any of them.
pub(crate) fn etag_of(bytes: &[u8]) -> String {
    let mut hasher = std::hash::DefaultHasher::new();
    bytes.hash(&mut hasher);
    format!("\"{:016x}\"", hasher.finish())
}

impl<V> std::ops::Deref for Checked<V> {
    type Target = V;

    fn deref(&self) -> &V {
        &self.page
    }
}

impl<V: Weigh> Kept for Checked<V> {
    fn read_whole(&self) -> Instant {
        self.read_whole
    }

    fn weight(&self) -> usize {
        self.weight
    }
}

/// A read kept as it was read, checked by the change log alone: where the log cannot say, it is
/// read again, which costs about what a mark's check would (a point read) or is rare enough (a
/// page of comments after the log dropped changes) to need no mark of its own.
pub(crate) struct KeptRead<T> {
    pub(crate) value: T,
    read_whole: Instant,
    weight: usize,
}

impl<T> KeptRead<T> {
    /// `value`, read just now, holding `weight` bytes.
    pub(crate) fn new(value: T, weight: usize) -> Arc<KeptRead<T>> {
        Arc::new(KeptRead { value, read_whole: Instant::now(), weight })
    }
}

impl<T> Kept for KeptRead<T> {
    fn read_whole(&self) -> Instant {
        self.read_whole
    }

    fn weight(&self) -> usize {
        self.weight
    }
}

/// What a page holds in bytes, near enough to bound the memory of the pages kept: the texts it
/// holds and a few hundred bytes an item for its fields and their allocations.
pub(crate) trait Weigh {
    fn weight(&self) -> usize;
}

impl Weigh for ListPage<Post> {
    fn weight(&self) -> usize {
        const PER_ITEM: usize = 300;
        let texts = |post: &Post| {
            post.title.len()
                + post.content.len()
                + post.user_username.len()
                + post.tags.iter().map(String::len).sum::<usize>()
                + post.picture.as_ref().map_or(0, |picture| picture.url.len() + picture.alt.len())
        };
        self.items.iter().map(|post| PER_ITEM + texts(post)).sum::<usize>()
            + self.continuation_token.as_ref().map_or(0, String::len)
    }
}

/// The most bytes one kind of list's kept pages may hold, [`Weigh`] counting: a page of 100
/// short posts with the longest titles weighs about 200 KB, so about 80 of those, or thousands
/// of the usual pages of 10 (a few KB each), fit; the count of pages bounds those first.
pub(crate) const MAX_LIST_BYTES: usize = 16 * 1024 * 1024;

type Cell<V> = Arc<OnceCell<Arc<V>>>;

/// What a page about to be filled had before: nothing to go on, a page to check by its mark
/// (the log cannot say, or it names the page: a mark read for nothing where it moved, as a
/// list's does, but a post's etag is read with its view all the same, and its lists' versions
/// say which to read again), or a page the log says changed only in what it names under the
/// page's name (the post ids of `feed/<postId>`), oldest first, for the page to mend.
pub(crate) enum Prior<V> {
    Nothing,
    Check(Arc<V>),
    Mend(Arc<V>, Vec<String>),
}

impl<V> Prior<V> {
    /// The page to check by its mark, if that is what there is.
    fn into_check(self) -> Option<Arc<V>> {
        match self {
            Prior::Check(page) => Some(page),
            Prior::Nothing | Prior::Mend(..) => None,
        }
    }
}

/// A kept page: when it was last read or checked, and where the change log was then.
struct Entry<V> {
    born: Instant,
    seen: Seen,
    cell: Cell<V>,
    /// This instance wrote to what the page shows since: it is checked on its next request,
    /// whatever its age and the log say ([`KeptPages::check_next`]).
    written_here: bool,
}

/// An instance's kept pages of one kind, by key, each with when it was last read or checked.
/// Concurrent requests for a page that is not fresh share one read (they wait on the same cell),
/// so a burst of views costs one check, or one read.
pub(crate) struct KeptPages<K, V> {
    pages: Mutex<HashMap<K, Entry<V>>>,
    /// The most pages kept: keys are the clients' to choose.
    max_pages: usize,
    /// The most bytes the pages may hold, as [`Kept::weight`] counts them.
    max_bytes: usize,
}

/// Pages of a list, each checked by one point read of its list's [`Mark`].
pub(crate) type MarkedPages<K, V> = KeptPages<K, Checked<V>>;

impl<K: Hash + Eq + Clone, V: Kept> KeptPages<K, V> {
    /// At most `max_pages` pages, and `max_bytes` as [`Kept::weight`] counts them.
    pub(crate) fn within(max_pages: usize, max_bytes: usize) -> Self {
        KeptPages { pages: Mutex::default(), max_pages, max_bytes }
    }

    /// The page under `key`, which the change log calls `name`: the one kept while it is fresh,
    /// or while the log says it did not change; otherwise the one `fill` answers, given the page
    /// kept (still within [`CHECKED_PAGE_LIFETIME`]) to be checked by its mark (`read_now` has a
    /// page kept checked so, whatever its age and the log say). The log is read (`log.recent`) only
    /// to check a page kept: a page read anew is kept with the log as this instance last read it,
    /// which is older than the page, so a change it names makes the page read again, never shown
    /// too long.
    pub(crate) async fn page_with<R, F, Fut>(
        &self,
        key: K,
        name: &str,
        read_now: bool,
        log: LogRead<R>,
        fill: F,
    ) -> AppResult<Arc<V>>
    where
        R: Future<Output = AppResult<Arc<Recent>>>,
        F: FnOnce(Option<Arc<V>>) -> Fut,
        Fut: Future<Output = AppResult<Arc<V>>>,
    {
        self.page_from(key, name, read_now, log, false, |prior| fill(prior.into_check())).await
    }

    /// [`Self::page_with`], where `fill` is also given the page kept when the log names only
    /// changes under `name` (`feed/<postId>` under `feed`), for it to mend (`mendable`).
    pub(crate) async fn page_from<R, F, Fut>(
        &self,
        key: K,
        name: &str,
        read_now: bool,
        log: LogRead<R>,
        mendable: bool,
        fill: F,
    ) -> AppResult<Arc<V>>
    where
        R: Future<Output = AppResult<Arc<Recent>>>,
        F: FnOnce(Prior<V>) -> Fut,
        Fut: Future<Output = AppResult<Arc<V>>>,
    {
        let (cell, prior) =
            match self.cell(&key, name, read_now, mendable, None, log.last.as_deref()) {
                Some(found) => found,
                None => {
                    let recent = log.recent.await?;
                    self.cell(&key, name, read_now, mendable, Some(&recent), Some(&recent))
                        .expect("a page is checked with the log at hand")
                }
            };
        Ok(cell.get_or_try_init(|| fill(prior)).await?.clone())
    }

    /// The cell for `key`: the fresh one, or the kept one made fresh again when `recent` (the log
    /// read in the last lifetime) says it is unchanged; or a new empty one that the caller fills,
    /// with the page it replaces to be checked by its mark, or mended, and kept with `last` (the
    /// log as last read). `None` when a page is kept and no `recent` is given to check it with.
    fn cell(
        &self,
        key: &K,
        name: &str,
        read_now: bool,
        mendable: bool,
        recent: Option<&Recent>,
        last: Option<&Recent>,
    ) -> Option<(Cell<V>, Prior<V>)> {
        let mut pages = self.pages.lock().expect("never poisoned");
        let mut prior = Prior::Nothing;
        if let Some(entry) = pages.get_mut(key) {
            let check_now = read_now || entry.written_here;
            if !check_now && entry.born.elapsed() < MARKED_PAGE_LIFETIME {
                return Some((entry.cell.clone(), Prior::Nothing));
            }
            if let Some(page) =
                entry.cell.get().filter(|page| page.read_whole().elapsed() < CHECKED_PAGE_LIFETIME)
            {
                if check_now {
                    prior = Prior::Check(page.clone());
                } else {
                    let recent = recent?;
                    match recent.changes_since(&entry.seen, name) {
                        Some(changes) if changes.is_empty() => {
                            entry.born = Instant::now();
                            entry.seen = recent.seen();
                            return Some((entry.cell.clone(), Prior::Nothing));
                        }
                        // Named: checked by its mark all the same, which a page whose mark
                        // says what changed (a post's view) reads alone.
                        Some(changes) => {
                            let under = |change: &str| {
                                change
                                    .get(name.len() + 1..)
                                    .filter(|sub| !sub.is_empty())
                                    .map(str::to_owned)
                            };
                            let subs: Option<Vec<String>> =
                                changes.into_iter().map(under).collect();
                            prior = match subs.filter(|_| mendable) {
                                Some(subs) => Prior::Mend(page.clone(), subs),
                                None => Prior::Check(page.clone()),
                            };
                        }
                        None => prior = Prior::Check(page.clone()),
                    }
                }
            }
        }
        pages.remove(key);
        self.make_room(&mut pages);
        let cell = Cell::default();
        let seen = last.map_or_else(Seen::unknown, Recent::seen);
        pages.insert(
            key.clone(),
            Entry { born: Instant::now(), seen, cell: cell.clone(), written_here: false },
        );
        Some((cell, prior))
    }

    /// Keeps the pages within their bounds before one more is added: what can no longer be
    /// shown goes first, then the pages checked least recently. A page still being read weighs
    /// nothing yet; it is counted by the next call, so the pages hold at most their budget and
    /// those being read.
    fn make_room(&self, pages: &mut HashMap<K, Entry<V>>) {
        let weight = |entry: &Entry<V>| entry.cell.get().map_or(0, |page| page.weight());
        let mut bytes: usize = pages.values().map(weight).sum();
        let over = |count: usize, bytes: usize| count >= self.max_pages || bytes >= self.max_bytes;
        if !over(pages.len(), bytes) {
            return;
        }
        pages.retain(|_, entry| {
            entry.born.elapsed() < MARKED_PAGE_LIFETIME
                || entry
                    .cell
                    .get()
                    .is_some_and(|page| page.read_whole().elapsed() < CHECKED_PAGE_LIFETIME)
        });
        bytes = pages.values().map(weight).sum();
        let mut by_recency: Vec<(Instant, K)> =
            pages.iter().map(|(key, entry)| (entry.born, key.clone())).collect();
        by_recency.sort_by_key(|(born, _)| *born);
        for (_, key) in by_recency {
            if !over(pages.len(), bytes) {
                break;
            }
            if let Some(entry) = pages.remove(&key) {
                bytes -= weight(&entry);
            }
        }
    }

    /// How many pages are held.
    pub(crate) fn len(&self) -> usize {
        self.pages.lock().expect("never poisoned").len()
    }

    /// Forgets the pages `which` names: this instance changed them. A read already under way
    /// still answers its own waiters; the next request reads again.
    pub(crate) fn forget(&self, which: impl Fn(&K) -> bool) {
        self.pages.lock().expect("never poisoned").retain(|key, _| !which(key));
    }

    /// Has the pages `which` names checked on their next request, whatever their age and the log
    /// say: this instance changed what they show, and their check reads what changed. A read
    /// already under way still answers its own waiters; the next request checks what it kept.
    pub(crate) fn check_next(&self, which: impl Fn(&K) -> bool) {
        for (_, entry) in
            self.pages.lock().expect("never poisoned").iter_mut().filter(|(key, _)| which(key))
        {
            entry.written_here = true;
        }
    }
}

impl<K: Hash + Eq + Clone, V: Weigh> MarkedPages<K, V> {
    /// The page under `key` (`name` in the change log): the one kept if it is fresh or the log
    /// says it is unchanged, or checked by `mark` and kept again, or read by `read` when there was
    /// none, or it changed.
    pub(crate) async fn page<F, Fut>(
        &self,
        state: &AppState,
        key: K,
        name: &str,
        mark: Mark<'_>,
        read: F,
    ) -> AppResult<Arc<Checked<V>>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = AppResult<V>>,
    {
        let no_mending = |_: &V, _: Vec<String>| async { Ok(None) };
        self.page_mended(state, key, name, mark, read, no_mending).await
    }

    /// [`Self::page`], where a page the log says changed only under its name is given to `mend`
    /// with what changed (oldest first): its answer, when it has one, is kept with the log's place
    /// and the time the page was last read whole, so it is read whole again within
    /// [`CHECKED_PAGE_LIFETIME`] all the same; `None` has the page read whole now.
    pub(crate) async fn page_mended<F, Fut, M, MFut>(
        &self,
        state: &AppState,
        key: K,
        name: &str,
        mark: Mark<'_>,
        read: F,
        mend: M,
    ) -> AppResult<Arc<Checked<V>>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = AppResult<V>>,
        M: FnOnce(&V, Vec<String>) -> MFut,
        MFut: Future<Output = AppResult<Option<V>>>,
    {
        self.page_from(key, name, false, state.changes.for_pages(state), true, |prior| async move {
            let kept = match prior {
                Prior::Mend(kept, changed) => {
                    if let Some(mended) = mend(&kept.page, changed).await? {
                        return Ok(Arc::new(Checked::new(
                            mended,
                            kept.mark.clone(),
                            kept.read_whole,
                        )));
                    }
                    None
                }
                Prior::Check(kept) => Some(kept),
                Prior::Nothing => None,
            };
            let etag = mark.read(state).await?;
            if let Some(kept) = kept
                && kept.mark == etag
            {
                return Ok(kept);
            }
            let read_whole = Instant::now();
            Ok(Arc::new(Checked::new(read().await?, etag, read_whole)))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past its bound, the cache drops what it can no longer show, then the least recently
    /// checked: it never holds more pages than its bound and the one being added.
    #[test]
    fn kept_pages_stay_within_their_bound() {
        let pages: MarkedPages<u32, ListPage<Post>> = MarkedPages::within(4, MAX_LIST_BYTES);
        for key in 0..10 {
            let _ = pages.cell(&key, "p/page", false, false, None, None);
            assert!(pages.len() <= 4, "{}", pages.len());
        }
        let before = pages.len();
        pages.forget(|key| *key == 9);
        assert_eq!(pages.len(), before - 1, "the last key is forgotten, and only it");
    }

    /// Pages of long posts are kept within the bytes' budget, whatever the count allows: the
    /// least recently checked goes first, and the one kept last stays.
    #[tokio::test]
    async fn kept_pages_stay_within_their_bytes() {
        let post: Post = serde_json::from_value(serde_json::json!({
            "id": "p", "type": "post", "postId": "p", "userId": "u", "userUsername": "u", "title": "t".repeat(1000),
            "content": "c", "commentCount": 0, "likeCount": 0, "creationDate": "2026-11-28T00:00:00.000Z"
        }))
        .expect("a post");
        let page = ListPage { items: vec![post; 100], continuation_token: None };
        let weight = page.weight();
        // Each page counted with the renderings it may keep.
        let weight = (1 + MAX_RENDERINGS) * weight;
        let budget = 3 * weight + weight / 2;
        let pages: MarkedPages<u32, ListPage<Post>> = MarkedPages::within(1000, budget);
        for key in 0..10 {
            let page = Checked::new(
                ListPage { items: page.items.clone(), continuation_token: None },
                None,
                Instant::now(),
            );
            let kept = pages
                .page_with(key, "p/page", false, LogRead::none(), |_| async { Ok(Arc::new(page)) })
                .await;
            assert!(kept.is_ok());
            assert!(pages.len() <= 4, "{} pages of {weight} bytes within {budget}", pages.len());
        }
        let held: Vec<u32> = pages.pages.lock().expect("never poisoned").keys().copied().collect();
        assert!(held.contains(&9) && !held.contains(&0), "{held:?}");
    }
}
