//! The change-feed functions without the Functions host: a processor per monitored container
//! reads the SDK's change feed and delivers batches to the same functions the host invokes.
//!
//! Used by `cargo run` on the embedded store, whose journal gives every write a number: a
//! processor keeps, in a file beside the data, the number up to which every write has been
//! delivered. A restart reloads the store (and with it a fresh change feed), delivers the items
//! whose last write came after that number, then follows the feed from there on: nothing is
//! lost, and only what was not yet processed is delivered again.
//!
//! [`rebuild_copies`] reads the whole `posts` feed from its beginning, on any backend: the
//! article's way to build the copies for an existing data set.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{BatchReport, FeedError, posts_changed, users_changed};
use crate::cosmos::{ChangeFeed, Container, StoreError};
use crate::http::AppState;

/// The most items delivered in one batch (the host's `maxItemsPerInvocation` plays this role).
const BATCH_SIZE: usize = 100;
/// How long a processor waits for a write notification before polling anyway.
const IDLE_POLL: Duration = Duration::from_secs(1);
/// The longest pause between two deliveries of a batch that failed.
const MAX_RETRY_PAUSE: Duration = Duration::from_secs(5);

/// The two change-feed functions and what they watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    PostsChangeFeed,
    UsersChangeFeed,
}

impl Function {
    pub const ALL: [Function; 2] = [Function::PostsChangeFeed, Function::UsersChangeFeed];

    /// The function's name: its folder under `functions/`, and its path on the handler.
    pub fn name(self) -> &'static str {
        match self {
            Function::PostsChangeFeed => "PostsChangeFeed",
            Function::UsersChangeFeed => "UsersChangeFeed",
        }
    }

    /// The container whose change feed triggers it.
    pub fn container(self) -> Container {
        match self {
            Function::PostsChangeFeed => Container::Posts,
            Function::UsersChangeFeed => Container::Users,
        }
    }

    pub async fn deliver(self, state: &AppState, documents: Vec<Value>) -> Result<BatchReport, FeedError> {
        match self {
            Function::PostsChangeFeed => posts_changed(state, documents).await,
            Function::UsersChangeFeed => users_changed(state, documents).await,
        }
    }
}

/// The running local processors; [`LocalProcessors::stop`] ends them.
pub struct LocalProcessors {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl LocalProcessors {
    /// Starts one processor per function on the embedded store whose data is in `data_dir`.
    pub fn start(state: &AppState, data_dir: &Path) -> LocalProcessors {
        let (stop, stopped) = watch::channel(false);
        let tasks = Function::ALL
            .into_iter()
            .map(|function| {
                let checkpoint = data_dir.join(format!("changefeed-{}.json", function.name()));
                tokio::spawn(run(state.clone(), function, checkpoint, stopped.clone()))
            })
            .collect();
        LocalProcessors { stop, tasks }
    }

    /// Stops the processors and waits for them; a batch being delivered is finished first.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// Runs one processor until stopped, starting over after a failure of the feed itself.
async fn run(state: AppState, function: Function, checkpoint: PathBuf, mut stopped: watch::Receiver<bool>) {
    while !*stopped.borrow() {
        match follow(&state, function, &checkpoint, &mut stopped).await {
            Ok(()) => return,
            Err(error) => {
                tracing::error!(target: "blog::changefeed", function = function.name(), %error, "change feed processor failed; restarting");
                tokio::select! {
                    () = tokio::time::sleep(IDLE_POLL) => {}
                    _ = stopped.changed() => return,
                }
            }
        }
    }
}

/// Delivers what was not processed before, then follows the change feed until stopped.
async fn follow(
    state: &AppState,
    function: Function,
    checkpoint: &Path,
    stopped: &mut watch::Receiver<bool>,
) -> Result<(), FeedError> {
    let (Some(written), Some(start)) = (state.store.write_signal(), state.store.journal_position()) else {
        return Err(StoreError::Other("local change-feed processing needs the embedded store".into()).into());
    };
    let mut feed = state.store.change_feed(function.container(), false).await?;
    let mut position = Checkpoint::load(checkpoint)?;
    let missed = state.store.loaded_since(function.container(), position).await?;
    if !missed.is_empty() {
        tracing::info!(target: "blog::changefeed", function = function.name(), items = missed.len(), "delivering what changed before the restart");
    }
    for batch in missed.chunks(BATCH_SIZE) {
        if !deliver_until_done(state, function, batch.to_vec(), stopped).await {
            return Ok(());
        }
    }
    position = Checkpoint::save(checkpoint, start.max(position))?;

    loop {
        // Registered before the position is read, so a write from here on always wakes us.
        let notified = written.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let reached = state.store.journal_position().unwrap_or(position);
        if !drain(state, function, &mut feed, stopped).await? {
            return Ok(());
        }
        // Every write numbered up to `reached` was in the store before the drain began, and the
        // drain read every feed range after that: all of them have been delivered.
        if reached > position {
            position = Checkpoint::save(checkpoint, reached)?;
        }
        tokio::select! {
            () = &mut notified => {}
            () = tokio::time::sleep(IDLE_POLL) => {}
            _ = stopped.changed() => return Ok(()),
        }
    }
}

/// Delivers every page of `feed` until a poll of every feed range finds nothing new; `false`
/// when stopped first.
async fn drain(
    state: &AppState,
    function: Function,
    feed: &mut ChangeFeed,
    stopped: &mut watch::Receiver<bool>,
) -> Result<bool, FeedError> {
    while let Some(documents) = feed.next_changes().await? {
        for batch in documents.chunks(BATCH_SIZE) {
            if !deliver_until_done(state, function, batch.to_vec(), stopped).await {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Delivers a batch until the function accepts it, as the host's retry policy would; `false`
/// when stopped first (the batch is then delivered again after the restart).
async fn deliver_until_done(
    state: &AppState,
    function: Function,
    documents: Vec<Value>,
    stopped: &mut watch::Receiver<bool>,
) -> bool {
    let mut pause = Duration::from_millis(50);
    loop {
        match function.deliver(state, documents.clone()).await {
            Ok(report) => {
                tracing::debug!(target: "blog::changefeed", function = function.name(), ?report, "batch");
                return true;
            }
            Err(error) => {
                tracing::warn!(target: "blog::changefeed", function = function.name(), %error, retry_in = ?pause, "batch failed; delivering it again");
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    _ = stopped.changed() => return false,
                }
                pause = (pause * 2).min(MAX_RETRY_PAUSE);
            }
        }
    }
}

/// Rebuilds every short copy in `users` and `feed` from `posts`, by delivering the whole
/// `posts` change feed from its beginning to `PostsChangeFeed`. Copies already up to date are
/// left alone, so running it on a live system is safe. Returns how many posts it delivered.
pub async fn rebuild_copies(state: &AppState) -> Result<usize, FeedError> {
    let mut feed = state.store.change_feed(Container::Posts, true).await?;
    let mut posts = 0;
    while let Some(documents) = feed.next_changes().await? {
        for batch in documents.chunks(BATCH_SIZE) {
            posts += posts_changed(state, batch.to_vec()).await?.applied;
        }
    }
    Ok(posts)
}

/// A processor's position, in a small file: every write numbered up to it has been delivered.
#[derive(Serialize, Deserialize)]
struct Checkpoint {
    delivered_through: u64,
}

impl Checkpoint {
    fn load(path: &Path) -> Result<u64, StoreError> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice::<Checkpoint>(&bytes)
                .map(|checkpoint| checkpoint.delivered_through)
                .map_err(|error| StoreError::Other(format!("{} is corrupt: {error}", path.display()))),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(error) => Err(StoreError::Other(format!("cannot read {}: {error}", path.display()))),
        }
    }

    /// Writes the position atomically (a crash leaves the old one, which only means a few
    /// batches are delivered again) and returns it.
    fn save(path: &Path, delivered_through: u64) -> Result<u64, StoreError> {
        let temporary = path.with_extension("json.tmp");
        let bytes = serde_json::to_vec(&Checkpoint { delivered_through }).expect("a checkpoint serializes");
        std::fs::write(&temporary, bytes)
            .and_then(|()| std::fs::rename(&temporary, path))
            .map_err(|error| StoreError::Other(format!("cannot write {}: {error}", path.display())))?;
        Ok(delivered_through)
    }
}
