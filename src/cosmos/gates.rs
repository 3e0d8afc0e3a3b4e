//! Visible only once durable: the embedded store applies a write to the SDK's in-memory
//! emulator, then journals it, and readers read the emulator. Between the two, a reader could
//! see a write that a crash would still take back (a comment counted, then gone after `kill -9`,
//! its writer never answered), and a second claim of a username could be refused on a claim not
//! yet on disk.
//!
//! So a write holds its logical partition from before it is applied until its journal line is
//! on disk (or, refused by the disk, it is undone), and every read and write of that partition
//! waits for it: strict two-phase locking, one partition at a time, as a database holds a
//! transaction's locks until its commit is durable. Writes to other partitions go on, and share
//! one `fdatasync`. A read across every partition of a container waits for every such write of
//! the container. The locks are fair (first come, first served), so a steady stream of writes to
//! a partition does not starve its readers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

use super::Container;

/// A logical partition: its container and partition key.
type PartitionKey = (Container, String);

/// The locks of the partitions in use, and of each container as a whole.
#[derive(Default)]
pub(super) struct Gates {
    /// Only partitions someone holds or waits for: an entry goes when its last holder does.
    partitions: Mutex<HashMap<PartitionKey, Arc<RwLock<()>>>>,
    /// Held shared by every write of the container, exclusively by a read of every partition.
    containers: Mutex<HashMap<Container, Arc<RwLock<()>>>>,
}

/// A lock held: never read, only kept until it is dropped.
#[allow(dead_code)]
enum Guard {
    Shared(OwnedRwLockReadGuard<()>),
    Exclusive(OwnedRwLockWriteGuard<()>),
}

/// What one read or write holds until it is dropped.
pub(super) struct Held {
    gates: Arc<Gates>,
    partition: Option<(PartitionKey, Guard)>,
    /// Kept until dropped, after the partition's.
    _container: Option<Guard>,
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some((key, guard)) = self.partition.take() else { return };
        drop(guard);
        let mut partitions = self.gates.partitions.lock().expect("never poisoned");
        // Nobody else holds or waits for it: every acquirer clones the lock under this mutex.
        if partitions.get(&key).is_some_and(|lock| Arc::strong_count(lock) == 1) {
            partitions.remove(&key);
        }
    }
}

impl Gates {
    fn partition_lock(&self, container: Container, partition_key: &str) -> Arc<RwLock<()>> {
        let mut partitions = self.partitions.lock().expect("never poisoned");
        partitions.entry((container, partition_key.to_owned())).or_default().clone()
    }

    fn container_lock(&self, container: Container) -> Arc<RwLock<()>> {
        self.containers.lock().expect("never poisoned").entry(container).or_default().clone()
    }

    /// For a read of one partition: waits until no write of it is pending.
    pub(super) async fn read(self: &Arc<Self>, container: Container, partition_key: &str) -> Held {
        let guard = self.partition_lock(container, partition_key).read_owned().await;
        Held {
            gates: self.clone(),
            partition: Some(((container, partition_key.to_owned()), Guard::Shared(guard))),
            _container: None,
        }
    }

    /// For a write of one partition, held until it is durable: waits for the reads and writes
    /// of the partition before it.
    pub(super) async fn write(self: &Arc<Self>, container: Container, partition_key: &str) -> Held {
        let whole = self.container_lock(container).read_owned().await;
        let guard = self.partition_lock(container, partition_key).write_owned().await;
        Held {
            gates: self.clone(),
            partition: Some(((container, partition_key.to_owned()), Guard::Exclusive(guard))),
            _container: Some(Guard::Shared(whole)),
        }
    }

    /// For a read of every partition of `container`: waits until none of its writes is pending.
    pub(super) async fn read_all(self: &Arc<Self>, container: Container) -> Held {
        let whole = self.container_lock(container).write_owned().await;
        Held { gates: self.clone(), partition: None, _container: Some(Guard::Exclusive(whole)) }
    }
}
