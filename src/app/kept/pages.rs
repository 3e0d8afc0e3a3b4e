//! An instance's kept pages of one kind ([`KeptPages`]). They follow the rule of the module
//! above, applied to pages by key, within a count and a byte budget. One read is shared by
//! every request that finds a page to read or check.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::OnceCell;

use super::change_log::{LogForChecks, LogPlace, StoredLog};
use super::{FRESH_FOR, READ_WHOLE_WITHIN, age, now};
use crate::app::AppResult;

/// What a kept page must say about itself for [`KeptPages`] to keep it: when it was read
/// whole, and what it holds in bytes.
pub(crate) trait KeptPage {
    /// When the page was read whole (a check by its mark keeps this).
    fn read_whole(&self) -> Instant;
    /// The bytes it holds, for [`KeptPages`]' budget.
    fn weight(&self) -> usize;
}

/// A read kept as it was read, checked by the change log alone. Where the log cannot say, it is
/// read again. That costs about what a mark's check would (a point read), or is rare enough (a
/// page of comments after the log dropped changes) to need no mark of its own.
pub(crate) struct LogCheckedRead<T> {
    pub(crate) value: T,
    read_whole: Instant,
    weight: usize,
}

impl<T> LogCheckedRead<T> {
    /// `value`, read just now, holding `weight` bytes.
    pub(crate) fn new(value: T, weight: usize) -> Arc<LogCheckedRead<T>> {
        Arc::new(LogCheckedRead { value, read_whole: now(), weight })
    }
}

impl<T> KeptPage for LogCheckedRead<T> {
    fn read_whole(&self) -> Instant {
        self.read_whole
    }

    fn weight(&self) -> usize {
        self.weight
    }
}

type Cell<V> = Arc<OnceCell<Arc<V>>>;

/// What a page about to be filled had before it.
pub(crate) enum PageBefore<V> {
    /// Nothing to go on: the page is read whole.
    Nothing,
    /// A page to check by its mark: the log cannot say, or it names the page. A list's mark read
    /// where the list moved is a read for nothing; a post's view reads its post all the same, and
    /// the post's list versions say which lists to read again.
    Check(Arc<V>),
    /// A page the log says changed only under its name (`feed/<postId>`), with those names,
    /// oldest first: the page mends itself.
    Mend(Arc<V>, Vec<String>),
}

impl<V> PageBefore<V> {
    /// The page to check by its mark, if that is what there is.
    fn into_check(self) -> Option<Arc<V>> {
        match self {
            PageBefore::Check(page) => Some(page),
            PageBefore::Nothing | PageBefore::Mend(..) => None,
        }
    }
}

/// A kept page: when it was last read or checked, and where the change log was then.
struct Entry<V> {
    born: Instant,
    place: LogPlace,
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
    /// The most bytes the pages may hold, as [`KeptPage::weight`] counts them.
    max_bytes: usize,
}

impl<K: Hash + Eq + Clone, V: KeptPage> KeptPages<K, V> {
    /// At most `max_pages` pages, and `max_bytes` as [`KeptPage::weight`] counts them.
    pub(crate) fn within(max_pages: usize, max_bytes: usize) -> Self {
        KeptPages { pages: Mutex::default(), max_pages, max_bytes }
    }

    /// The page under `key`, which the change log calls `name`. It is the one kept while it is
    /// fresh, or while the log says it did not change. Otherwise it is the one `fill` answers,
    /// given the page kept (still within [`READ_WHOLE_WITHIN`]) to be checked by its mark.
    /// `read_now` has a page kept checked so, whatever its age and the log say. The log is read
    /// (`log.recent`) only to check a page kept. A page read anew is kept with the log as this
    /// instance last read it, which is older than the page. So a change the log names makes the
    /// page read again, and it is never shown too long.
    pub(crate) async fn page_with<R, F, Fut>(
        &self,
        key: K,
        name: &str,
        read_now: bool,
        log: LogForChecks<R>,
        fill: F,
    ) -> AppResult<Arc<V>>
    where
        R: Future<Output = AppResult<Arc<StoredLog>>>,
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
        log: LogForChecks<R>,
        mendable: bool,
        fill: F,
    ) -> AppResult<Arc<V>>
    where
        R: Future<Output = AppResult<Arc<StoredLog>>>,
        F: FnOnce(PageBefore<V>) -> Fut,
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

    /// The cell for `key`: the fresh one, or the kept one made fresh again when `recent` (the
    /// log read in the last lifetime) says it is unchanged. Otherwise a new empty one that the
    /// caller fills, and keeps with `last` (the log as last read). The page it replaces goes
    /// with it, to be checked by its mark, or mended. `None` when a page is kept and no
    /// `recent` is given to check it with.
    fn cell(
        &self,
        key: &K,
        name: &str,
        read_now: bool,
        mendable: bool,
        recent: Option<&StoredLog>,
        last: Option<&StoredLog>,
    ) -> Option<(Cell<V>, PageBefore<V>)> {
        let mut pages = self.pages.lock().expect("never poisoned");
        let mut prior = PageBefore::Nothing;
        if let Some(entry) = pages.get_mut(key) {
            let check_now = read_now || entry.written_here;
            if !check_now && age(entry.born) < FRESH_FOR {
                return Some((entry.cell.clone(), PageBefore::Nothing));
            }
            if let Some(page) =
                entry.cell.get().filter(|page| age(page.read_whole()) < READ_WHOLE_WITHIN)
            {
                if check_now {
                    prior = PageBefore::Check(page.clone());
                } else {
                    let recent = recent?;
                    match recent.changes_since(&entry.place, name) {
                        Some(changes) if changes.is_empty() => {
                            entry.born = now();
                            entry.place = recent.place();
                            return Some((entry.cell.clone(), PageBefore::Nothing));
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
                                Some(subs) => PageBefore::Mend(page.clone(), subs),
                                None => PageBefore::Check(page.clone()),
                            };
                        }
                        None => prior = PageBefore::Check(page.clone()),
                    }
                }
            }
        }
        pages.remove(key);
        self.make_room(&mut pages);
        let cell = Cell::default();
        let place = last.map_or_else(LogPlace::unknown, StoredLog::place);
        pages.insert(
            key.clone(),
            Entry { born: now(), place, cell: cell.clone(), written_here: false },
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
            age(entry.born) < FRESH_FOR
                || entry.cell.get().is_some_and(|page| age(page.read_whole()) < READ_WHOLE_WITHIN)
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

#[cfg(test)]
mod tests {
    use super::super::marked::{
        MAX_LIST_BYTES, MAX_RENDERINGS, MarkedPage, MarkedPages, PageBytes,
    };
    use super::*;
    use crate::app::lists::ListPage;
    use crate::model::Post;

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
            let page = MarkedPage::new(
                ListPage { items: page.items.clone(), continuation_token: None },
                None,
                now(),
            );
            let kept = pages
                .page_with(key, "p/page", false, LogForChecks::none(), |_| async {
                    Ok(Arc::new(page))
                })
                .await;
            assert!(kept.is_ok());
            assert!(pages.len() <= 4, "{} pages of {weight} bytes within {budget}", pages.len());
        }
        let held: Vec<u32> = pages.pages.lock().expect("never poisoned").keys().copied().collect();
        assert!(held.contains(&9) && !held.contains(&0), "{held:?}");
    }
}
