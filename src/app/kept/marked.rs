//! Pages of a list checked by a mark: the front page (Q6), a user's posts (Q3) and a tag's
//! posts (Q7). A mark is one small item that `PostsChangeFeed` writes again after every change
//! it makes to the copies a list reads. Those copies are `feed`'s posts for Q6, a user's post
//! copies for Q3, a tag's for Q7. So the mark's etag changes whenever the list's answer may
//! have. A page is kept with the mark's etag read just before it; one point read of the mark
//! (about 1 RU) then says whether it may be shown again, where the change log cannot.

use std::collections::HashMap;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use serde_json::json;

use super::now;
use super::pages::{KeptPage, KeptPages, PageBefore};
use crate::app::lists::ListPage;
use crate::app::{AppResult, AppState};
use crate::cosmos::{Container, WriteOp};
use crate::model::{self, Post};

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

    /// Writes the mark again, giving it a new etag. Called after a change to what the list
    /// reads, never before: a reader that sees the new mark reads a page that has the change.
    /// Also called after a change that may have been made by a delivery that failed before its
    /// mark.
    pub(crate) async fn write(self, state: &AppState, kind: &str) -> AppResult<()> {
        let mut document = json!({ "id": self.id, "type": kind, "changed": model::now() });
        document[self.container.partition_key_path().trim_start_matches('/')] =
            json!(self.partition_key);
        // Unconditional: two writers at once both leave a new etag.
        let write = WriteOp::Upsert { document, if_match: None };
        Ok(state.store.execute_write(self.container, self.partition_key, write).await?)
    }
}

/// A page of a list as read, with its mark's etag read before it, and what adapters render of
/// it once for everyone ([`MarkedPage::rendering`]).
pub(crate) struct MarkedPage<V> {
    /// The page.
    pub page: V,
    mark: Option<String>,
    read_whole: Instant,
    /// What it holds, its renderings counted ahead ([`KeptPage::weight`]): weighed once, as it is
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
pub(super) const MAX_RENDERINGS: usize = 4;

impl<V> MarkedPage<V> {
    /// The page, and the renderings it may keep counted ahead (each about as long as the page's
    /// texts with their markup), as a post view counts its rendering.
    pub(super) fn new(page: V, mark: Option<String>, read_whole: Instant) -> Self
    where
        V: PageBytes,
    {
        let weight = (1 + MAX_RENDERINGS) * page.weight();
        MarkedPage { page, mark, read_whole, weight, renderings: Mutex::default() }
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

impl<V> std::ops::Deref for MarkedPage<V> {
    type Target = V;

    fn deref(&self) -> &V {
        &self.page
    }
}

impl<V: PageBytes> KeptPage for MarkedPage<V> {
    fn read_whole(&self) -> Instant {
        self.read_whole
    }

    fn weight(&self) -> usize {
        self.weight
    }
}

/// What a page holds in bytes, near enough to bound the memory of the pages kept: the texts it
/// holds and a few hundred bytes an item for its fields and their allocations.
pub(crate) trait PageBytes {
    fn weight(&self) -> usize;
}

impl PageBytes for ListPage<Post> {
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

/// The most bytes one kind of list's kept pages may hold, [`PageBytes`] counting. A page of 100
/// short posts with the longest titles weighs about 200 KB. So about 80 of those fit, or
/// thousands of the usual pages of 10 (a few KB each); the count of pages bounds those first.
pub(crate) const MAX_LIST_BYTES: usize = 16 * 1024 * 1024;

/// Pages of a list, each checked by one point read of its list's [`Mark`].
pub(crate) type MarkedPages<K, V> = KeptPages<K, MarkedPage<V>>;

impl<K: Hash + Eq + Clone, V: PageBytes> MarkedPages<K, V> {
    /// The page under `key` (`name` in the change log). It is the one kept if it is fresh or
    /// the log says it is unchanged, or else checked by `mark` and kept again. It is read by
    /// `read` when there was none, or when it changed.
    pub(crate) async fn page<F, Fut>(
        &self,
        state: &AppState,
        key: K,
        name: &str,
        mark: Mark<'_>,
        read: F,
    ) -> AppResult<Arc<MarkedPage<V>>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = AppResult<V>>,
    {
        let no_mending = |_: &V, _: Vec<String>| async { Ok(None) };
        self.page_mended(state, key, name, mark, read, no_mending).await
    }

    /// [`Self::page`], where a page the log says changed only under its name is given to `mend`
    /// with what changed (oldest first). Its answer, when it has one, is kept with the log's
    /// place and the time the page was last read whole. So it is read whole again within
    /// [`READ_WHOLE_WITHIN`](super::READ_WHOLE_WITHIN) all the same. `None` has the page read
    /// whole now.
    pub(crate) async fn page_mended<F, Fut, M, MFut>(
        &self,
        state: &AppState,
        key: K,
        name: &str,
        mark: Mark<'_>,
        read: F,
        mend: M,
    ) -> AppResult<Arc<MarkedPage<V>>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = AppResult<V>>,
        M: FnOnce(&V, Vec<String>) -> MFut,
        MFut: Future<Output = AppResult<Option<V>>>,
    {
        self.page_from(key, name, false, state.changes.for_pages(state), true, |prior| async move {
            let kept = match prior {
                PageBefore::Mend(kept, changed) => {
                    if let Some(mended) = mend(&kept.page, changed).await? {
                        return Ok(Arc::new(MarkedPage::new(
                            mended,
                            kept.mark.clone(),
                            kept.read_whole,
                        )));
                    }
                    None
                }
                PageBefore::Check(kept) => Some(kept),
                PageBefore::Nothing => None,
            };
            let etag = mark.read(state).await?;
            if let Some(kept) = kept
                && kept.mark == etag
            {
                return Ok(kept);
            }
            let read_whole = now();
            Ok(Arc::new(MarkedPage::new(read().await?, etag, read_whole)))
        })
        .await
    }
}
