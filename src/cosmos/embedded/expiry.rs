//! Time to live on the embedded store: Cosmos DB removes an item `ttl` seconds after its last
//! write by itself, the SDK's emulator does not, so the store records each expiry with its write
//! and a sweep deletes what is due.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::{Durability, ItemKey};
use crate::cosmos::{Container, Store, StoreError, WriteOp};

/// The embedded store's items that carry a `ttl`, by the time they expire (Unix seconds).
#[derive(Default)]
pub(crate) struct Expiries {
    pub(crate) by_item: HashMap<ItemKey, u64>,
    due: BTreeSet<(u64, ItemKey)>,
}

impl Expiries {
    /// Records the expiry of an item's latest write: `None` when it does not expire (or was
    /// deleted).
    pub(crate) fn set(&mut self, item: ItemKey, expires: Option<u64>) {
        if let Some(previous) = self.by_item.remove(&item) {
            self.due.remove(&(previous, item.clone()));
        }
        if let Some(expires) = expires {
            self.by_item.insert(item.clone(), expires);
            self.due.insert((expires, item));
        }
    }

    /// Takes the items expired at `now`.
    pub(crate) fn take_due(&mut self, now: u64) -> Vec<ItemKey> {
        let mut taken = Vec::new();
        while let Some((expires, _)) = self.due.first()
            && *expires <= now
        {
            let (_, item) = self.due.pop_first().expect("just seen");
            self.by_item.remove(&item);
            taken.push(item);
        }
        taken
    }
}

/// When an item written at `now` (Unix seconds) expires, as Cosmos DB reads its `ttl`. A
/// positive number means that many seconds after the write, in a container with time to live
/// on. `-1`, or none (the container's default, which is none here), means never.
pub(crate) fn expiry(container: Container, document: &Value, now: u64) -> Option<u64> {
    let ttl = document.get("ttl")?.as_u64().filter(|ttl| *ttl > 0)?;
    container.expires_items().then_some(now + ttl)
}

/// The time now, in Unix seconds.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// How often the embedded store looks for expired items. Cosmos DB removes them in the
/// background too, with no promise of when; the application never waits for it.
const EXPIRY_SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// The most expired request records one sweep removes (one write per partition, all
/// group-committed). At one sweep a second this keeps up with far more keyed writes than the
/// store takes. A record not yet removed is not read as there anyway.
const RECORDS_PER_SWEEP: usize = 256;

/// Removes expired items from the embedded store every [`EXPIRY_SWEEP_INTERVAL`] for as long as
/// the store is in use (the task holds it weakly). Nothing to do on other backends.
pub(crate) fn spawn_expiry_sweep(store: &Arc<Store>) {
    if store.embedded().is_none() {
        return;
    }
    let store = Arc::downgrade(store);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(EXPIRY_SWEEP_INTERVAL).await;
            let Some(store) = store.upgrade() else { return };
            let Some(embedded) = store.embedded() else { return };
            if let Err(error) = embedded.remove_expired(&store, unix_now()).await {
                tracing::warn!(%error, "expired items could not be removed yet");
            }
            if let Err(error) = embedded.remove_expired_records(unix_now(), RECORDS_PER_SWEEP).await
            {
                tracing::warn!(%error, "expired request records could not be removed yet");
            }
        }
    });
}

impl Durability {
    /// Removes the items of `store` whose `ttl` ran out by `now` (Unix seconds), as Cosmos DB
    /// does by itself. Each removal is a deletion like any other, through `store`, committed.
    /// So it survives a restart, and an expiry a restart would not reset. Returns how many it
    /// removed.
    pub async fn remove_expired(&self, store: &Store, now: u64) -> Result<usize, StoreError> {
        let durability = self;
        let due = durability.expiries.lock().expect("never poisoned").take_due(now);
        let mut removed = 0;
        for (index, (container, partition_key, id)) in due.iter().enumerate() {
            let outcome = async {
                let Some(found) =
                    store.read_versioned::<Value>(*container, partition_key, id).await?
                else {
                    return Ok(false);
                };
                // Written again since it was due (then it has a new expiry), or no longer expiring.
                let rewritten = durability
                    .expiries
                    .lock()
                    .expect("never poisoned")
                    .by_item
                    .contains_key(&due[index]);
                if rewritten || expiry(*container, &found.item, 0).is_none() {
                    return Ok(false);
                }
                let delete = WriteOp::Delete { id: id.clone(), if_match: Some(found.etag) };
                match store.execute_write(*container, partition_key, delete).await {
                    Ok(()) => Ok(true),
                    Err(StoreError::NotFound | StoreError::PreconditionFailed) => Ok(false),
                    Err(error) => Err(error),
                }
            }
            .await;
            match outcome {
                Ok(was_removed) => removed += usize::from(was_removed),
                Err(error) => {
                    // Due still: the next sweep tries again (a full disk refuses deletions too).
                    let mut expiries = durability.expiries.lock().expect("never poisoned");
                    for item in &due[index..] {
                        if !expiries.by_item.contains_key(item) {
                            expiries.set(item.clone(), Some(now));
                        }
                    }
                    return Err(error);
                }
            }
        }
        Ok(removed)
    }
}
