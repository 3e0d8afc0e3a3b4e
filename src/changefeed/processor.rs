//! The change-feed functions without the Functions host: a processor per monitored container
//! follows the container's changes and delivers batches to the same functions the host invokes.
//!
//! Used by `cargo run` on the embedded store, whose database gives every write a number. A
//! processor asks the store which items changed after its position (their current version,
//! each once: the change feed's "latest version" mode), delivers them, and keeps the new
//! position in a file beside the data. A restart goes on from that position: nothing is lost,
//! and only what was not yet processed is delivered again. It does not read the SDK's change
//! feed because the in-memory emulator answers every poll by copying all the data of a feed
//! range (see `cosmos/changes.rs`); following the numbering costs only what changed.
//!
//! [`rebuild_copies`] reads the whole `posts` feed from its beginning, on any backend: the
//! article's way to build the copies for an existing data set; [`replay_users`] does the same
//! with `users` (every user's name carried onto their items, and reserved).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::posts::copy_changed_posts;
use super::{FeedError, Function, users_changed};
use crate::app::AppState;
use crate::app::copies::PostVersion;
use crate::cosmos::{Container, Meter, StoreError, checkpoint};

/// The most items delivered in one batch (the host's `maxItemsPerInvocation` plays this role).
pub(super) const BATCH_SIZE: usize = 100;
/// How many changed items are read at once.
const CONCURRENT_ITEMS: usize = 16;
/// How long a processor waits for a write notification before polling anyway.
pub(super) const IDLE_POLL: Duration = Duration::from_secs(1);
/// The longest pause between two deliveries of a batch that failed.
const MAX_RETRY_PAUSE: Duration = Duration::from_secs(5);

/// The running local processors; [`LocalProcessors::stop`] ends them.
pub(crate) struct LocalProcessors {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    deliveries: Deliveries,
}

/// What each processor delivered so far; a handle that stays readable while they run.
#[derive(Clone, Default)]
pub struct Deliveries(Arc<Vec<(Function, Arc<Mutex<Delivered>>)>>);

impl Deliveries {
    pub(super) fn new(tallies: Vec<(Function, Arc<Mutex<Delivered>>)>) -> Deliveries {
        Deliveries(Arc::new(tallies))
    }

    /// What `function`'s processor delivered so far.
    pub fn of(&self, function: Function) -> Delivered {
        self.0
            .iter()
            .find(|(candidate, _)| *candidate == function)
            .map(|(_, tally)| *tally.lock().expect("never poisoned"))
            .unwrap_or_default()
    }
}

/// What a processor delivered since it started, and what that cost in Cosmos DB: reading the
/// changed items and everything the function did with them. This work happens after the
/// write, outside any request, so no response header shows it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Delivered {
    /// Batches delivered.
    pub batches: u64,
    /// Items delivered.
    pub items: u64,
    /// Request units the deliveries cost.
    pub charge: f64,
    /// Cosmos DB operations the deliveries made.
    pub operations: u64,
}

impl Delivered {
    pub(super) fn add(&mut self, items: usize, meter: &Meter) {
        let (charge, operations) = meter.totals();
        self.batches += 1;
        self.items += items as u64;
        self.charge += charge;
        self.operations += operations;
    }
}

impl LocalProcessors {
    /// Starts one processor per function on the embedded store whose data is in `data_dir`.
    pub(crate) fn start(state: &AppState, data_dir: &Path) -> LocalProcessors {
        let (stop, stopped) = watch::channel(false);
        let mut tasks = Vec::new();
        let mut delivered = Vec::new();
        for function in Function::ALL {
            let checkpoint = checkpoint_path(data_dir, function);
            let tally = Arc::new(Mutex::new(Delivered::default()));
            tasks.push(tokio::spawn(run(
                state.clone(),
                function,
                checkpoint,
                tally.clone(),
                stopped.clone(),
            )));
            delivered.push((function, tally));
        }
        LocalProcessors { stop, tasks, deliveries: Deliveries(Arc::new(delivered)) }
    }

    pub(crate) fn deliveries(&self) -> Deliveries {
        self.deliveries.clone()
    }

    /// Stops the processors and waits for them; a batch being delivered is finished first.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// Runs one processor until stopped, starting over after a failure of the feed itself.
async fn run(
    state: AppState,
    function: Function,
    checkpoint: PathBuf,
    delivered: Arc<Mutex<Delivered>>,
    mut stopped: watch::Receiver<bool>,
) {
    while !*stopped.borrow() {
        match follow(&state, function, &checkpoint, &delivered, &mut stopped).await {
            Ok(()) => return,
            Err(error) if pause_after_failure(function, &error, &mut stopped).await => {}
            Err(_) => return,
        }
    }
}

/// Logs why a processor's feed failed and waits a moment before it starts over; `false` when
/// it was stopped meanwhile.
pub(super) async fn pause_after_failure(
    function: Function,
    error: &FeedError,
    stopped: &mut watch::Receiver<bool>,
) -> bool {
    // The database's passing failures (throttled, unavailable for a moment) are a warning: the
    // processor starts over, as the host would deliver again; anything else is an error.
    if error.is_passing() {
        tracing::warn!(target: "blog::changefeed", function = function.name(), error = %crate::logging::with_causes(&error), "change feed processor paused; restarting");
    } else {
        tracing::error!(target: "blog::changefeed", function = function.name(), error = %crate::logging::with_causes(&error), "change feed processor failed; restarting");
    }
    tokio::select! {
        () = tokio::time::sleep(IDLE_POLL) => true,
        _ = stopped.changed() => false,
    }
}

/// Delivers every item whose last write came after the checkpoint, a batch at a time, moving
/// the checkpoint after each; then waits for the next write. Until stopped.
async fn follow(
    state: &AppState,
    function: Function,
    checkpoint: &Path,
    delivered: &Mutex<Delivered>,
    stopped: &mut watch::Receiver<bool>,
) -> Result<(), FeedError> {
    let Some(embedded) = state.store.embedded() else {
        return Err(StoreError::NotEmbedded { what: "local change-feed processing" }.into());
    };
    let written = embedded.write_signal();
    let mut position = checkpoint::read(checkpoint).map_err(StoreError::from)?;
    loop {
        // Registered before the changes are read, so a write from here on always wakes us.
        let notified = written.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        loop {
            let changed = embedded.changed_after(function.container(), position, BATCH_SIZE);
            if changed.items.is_empty() {
                // Writes to other containers move the position too.
                if changed.through > position {
                    position = checkpoint::write_off_the_workers(checkpoint, changed.through)
                        .await
                        .map_err(StoreError::from)?;
                }
                break;
            }
            let meter = Arc::new(Meter::default());
            let documents =
                meter.clone().measure(read_current(state, function, changed.items)).await?;
            let items = documents.len();
            if !deliver_until_done(state, function, documents, &meter, stopped).await {
                return Ok(());
            }
            delivered.lock().expect("never poisoned").add(items, &meter);
            position = checkpoint::write_off_the_workers(checkpoint, changed.through)
                .await
                .map_err(StoreError::from)?;
        }
        tokio::select! {
            () = &mut notified => {}
            () = tokio::time::sleep(IDLE_POLL) => {}
            _ = stopped.changed() => return Ok(()),
        }
    }
}

/// The changed items as they are now, with their system properties, as the change feed delivers
/// them. An item deleted since is left out (the feed never shows deletions). So is one whose
/// newest write is not on disk yet (it comes again once it is). An item the store refuses to
/// read (not a passing failure: it would refuse it every time) is set aside as `unreadable`,
/// with its partition key and id, so that the rest goes on.
async fn read_current(
    state: &AppState,
    function: Function,
    items: Vec<(String, String)>,
) -> Result<Vec<Value>, FeedError> {
    let container = function.container();
    let reads: Vec<_> = futures::stream::iter(items)
        .map(|(partition_key, id)| async move {
            let read = state.store.read::<Value>(container, &partition_key, &id).await;
            (partition_key, id, read)
        })
        .buffered(CONCURRENT_ITEMS)
        .collect()
        .await;
    let mut documents = Vec::with_capacity(reads.len());
    for (partition_key, id, read) in reads {
        match read {
            // Written again since it was listed, and that write is not on disk yet: it is listed
            // again once it is, so nothing a crash could take back reaches a copy.
            Ok(Some(_))
                if state.store.embedded().is_some_and(|embedded| {
                    !embedded.is_settled(container, &partition_key, &id)
                }) => {}
            Ok(document) => documents.extend(document),
            Err(error) if error.is_passing() => return Err(error.into()),
            Err(error) => {
                let item = serde_json::json!({"partitionKey": partition_key, "id": id}).to_string();
                let reason = format!(
                    "the item cannot be read from {}: {}",
                    container.name(),
                    crate::logging::with_causes(&error)
                );
                super::dead_letters::set_aside(
                    &state.store,
                    function.name(),
                    "unreadable",
                    &reason,
                    &item,
                )
                .await?;
            }
        }
    }
    Ok(documents)
}

/// Delivers a batch until the function accepts it, as the host's retry policy would; `false`
/// when stopped first (the batch is then delivered again after the restart).
pub(super) async fn deliver_until_done(
    state: &AppState,
    function: Function,
    documents: Vec<Value>,
    meter: &Arc<Meter>,
    stopped: &mut watch::Receiver<bool>,
) -> bool {
    let mut pause = Duration::from_millis(50);
    let mut failures = 0;
    loop {
        // As under the host: after repeated failures, the change that keeps failing is set aside.
        let isolate = failures >= super::ISOLATE_AFTER;
        let delivery = async {
            if isolate {
                function.deliver_item_by_item(state, documents.clone()).await
            } else {
                function.deliver(state, documents.clone()).await
            }
        };
        match meter.clone().measure(delivery).await {
            Ok(report) => {
                let oldest_age_s = super::oldest_age_s(&documents);
                let count = documents.len();
                let delivery = super::Delivery {
                    function,
                    count,
                    report: &report,
                    cost: meter.totals(),
                    oldest_age_s,
                    invocation_id: None,
                    attempt: None,
                };
                delivery.log();
                return true;
            }
            Err(error) => {
                tracing::warn!(target: "blog::changefeed", function = function.name(), error = %crate::logging::with_causes(&error), retry_in = ?pause, "batch failed; delivering it again");
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    _ = stopped.changed() => return false,
                }
                pause = (pause * 2).min(MAX_RETRY_PAUSE);
                failures += 1;
            }
        }
    }
}

/// Rebuilds every short copy in `users` and `feed` from `posts`, by delivering the whole
/// `posts` change feed from its beginning to `PostsChangeFeed`. Copies already up to date are
/// left alone, so running it on a live system is safe. Returns how many posts it delivered,
/// and tells `delivered` the count so far after each batch (`handler rebuild-copies` shows it).
pub async fn rebuild_copies(
    state: &AppState,
    delivered: &mut dyn FnMut(usize),
) -> Result<usize, FeedError> {
    // An index of an earlier layout is emptied first: the replay makes it anew.
    let cleared = crate::app::search::clear_legacy_index(state).await?;
    if cleared > 0 {
        tracing::info!(
            items = cleared,
            "the search index was of an earlier layout: emptied, to be made anew"
        );
    }
    let mut feed = state.store.change_feed_from_beginning(Container::Posts).await?;
    let mut posts = 0;
    let mut to_index = IndexGroup::default();
    while let Some(documents) = feed.next_changes().await? {
        for batch in documents.chunks(BATCH_SIZE) {
            let (report, changed) = copy_changed_posts(state, batch.to_vec()).await?;
            to_index.add(changed);
            if to_index.full() {
                to_index.index(state).await?;
            }
            posts += report.applied;
            delivered(posts);
        }
    }
    to_index.index(state).await?;
    Ok(posts)
}

/// The posts a rebuild has copied and not yet indexed. The index is brought up to many
/// batches' posts at once: each word's items are then written once for all of them, where a
/// batch at a time writes a common word's again for each (an import of 100,000 posts: a
/// thousand times). Bounded by [`INDEX_GROUP_POSTS`] and [`INDEX_GROUP_BYTES`] of text, and
/// by what indexing a post holds ([`crate::app::search`]: at most 200 postings).
#[derive(Default)]
struct IndexGroup {
    posts: Vec<PostVersion>,
    bytes: usize,
}

/// The most posts a rebuild indexes at once. Nearly every word of a blog's vocabulary is in
/// each group of thousands, so the writes of an index made in groups go as the number of
/// groups: at 100,000 posts, 5 groups of 20,000 (the first 20,000 posts were indexed in 120 s
/// as one group, in 220 s as four of 5,000, on the embedded store). What a group holds while it is
/// indexed (at most 200 postings a post, their records and changes) is about 130 KB a post: an
/// import of 3,000 posts peaked at 831 MiB, against 453 MiB a batch at a time; 2.6 GB at most.
const INDEX_GROUP_POSTS: usize = 20_000;
/// The most text (titles and bodies) of the posts a rebuild indexes at once.
const INDEX_GROUP_BYTES: usize = 64 << 20;

impl IndexGroup {
    fn add(&mut self, posts: Vec<PostVersion>) {
        self.bytes +=
            posts.iter().map(|post| post.post.title.len() + post.post.content.len()).sum::<usize>();
        self.posts.extend(posts);
    }

    fn full(&self) -> bool {
        self.posts.len() >= INDEX_GROUP_POSTS || self.bytes >= INDEX_GROUP_BYTES
    }

    /// Indexes the posts held (none: nothing to read or write), and lets them go.
    async fn index(&mut self, state: &AppState) -> Result<(), FeedError> {
        if self.posts.is_empty() {
            return Ok(());
        }
        crate::app::search::index_posts(state, &self.posts).await?;
        *self = IndexGroup::default();
        Ok(())
    }
}

/// The changes after `function`'s saved position on the embedded store in `data_dir`, counted
/// in the store's own numbering of its writes, and the `_ts` of the oldest.
pub(super) async fn pending(
    state: &AppState,
    data_dir: &Path,
    function: Function,
) -> Result<(usize, Option<u64>), StoreError> {
    let Some(embedded) = state.store.embedded() else {
        return Err(StoreError::NotEmbedded { what: "the local processors' positions" });
    };
    let mut after = checkpoint::read(&checkpoint_path(data_dir, function))?;
    let (mut pending, mut first) = (0, None);
    loop {
        let changed = embedded.changed_after(function.container(), after, BATCH_SIZE);
        if first.is_none() {
            first = changed.items.first().cloned();
        }
        pending += changed.items.len();
        if changed.items.is_empty() || changed.through <= after {
            break;
        }
        after = changed.through;
    }
    let oldest = match first {
        Some((partition_key, id)) => {
            let item = state.store.read::<Value>(function.container(), &partition_key, &id).await?;
            item.and_then(|item| item["_ts"].as_u64())
        }
        None => None,
    };
    Ok((pending, oldest))
}

/// The furthest position any processor on `data_dir` saved (0 when none did); an error names a
/// checkpoint that cannot be read, and what to do about it.
pub(crate) fn furthest_position(data_dir: &Path) -> Result<u64, StoreError> {
    Function::ALL
        .into_iter()
        .map(|function| checkpoint::read(&checkpoint_path(data_dir, function)))
        .try_fold(0, |furthest, position| Ok(furthest.max(position?)))
}

fn checkpoint_path(data_dir: &Path, function: Function) -> PathBuf {
    checkpoint::path(data_dir, function.name())
}

/// Delivers the whole `users` change feed from its beginning to `UsersChangeFeed`. Every
/// renamed user's name is carried onto their items again, and every user's current name is
/// reserved. That is the migration of data written before usernames were unique; where two
/// users show one name, the first delivered holds it. Idempotent, like the function. Returns
/// how many users it delivered, and tells `delivered` the count so far after each batch.
pub async fn replay_users(
    state: &AppState,
    delivered: &mut dyn FnMut(usize),
) -> Result<usize, FeedError> {
    let mut feed = state.store.change_feed_from_beginning(Container::Users).await?;
    let mut users = 0;
    while let Some(documents) = feed.next_changes().await? {
        for batch in documents.chunks(BATCH_SIZE) {
            users += users_changed(state, batch.to_vec()).await?.applied;
            delivered(users);
        }
    }
    Ok(users)
}
