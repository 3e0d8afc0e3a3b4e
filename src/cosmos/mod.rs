//! Every Cosmos DB call the application makes, through the official SDK (`azure_data_cosmos`).
//!
//! Handlers and scripts speak in items, partition keys and pages; this module turns that into
//! SDK calls, records each call's cost on the request's [`Meter`], bounds it in time, and maps
//! the SDK's errors to the few outcomes the application acts on ([`StoreError`]).

mod changes;
#[cfg(feature = "embedded")]
mod embedded;
mod gates;
// Only the embedded store journals; the deployed build compiles the code but never opens one.
#[cfg_attr(not(feature = "embedded"), allow(dead_code))]
mod journal;
mod meter;
pub mod queries;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use azure_core::credentials::TokenCredential;
use azure_core::http::Etag;
use azure_data_cosmos::feed::{ChangeFeedPageIterator, ContinuationToken};
use azure_data_cosmos::models::{
    ChangeFeedItem, CompositeIndex, CompositeIndexOrder, CompositeIndexProperty, ContainerProperties, IndexingMode,
    IndexingPolicy, TimeToLive,
};
use azure_data_cosmos::options::{
    BatchDeleteOptions, BatchReplaceOptions, BatchUpsertOptions, ChangeFeedStartFrom, ConnectionPoolOptions, ItemWriteOptions,
    MaxItemCountHint, Precondition, QueryOptions, Region, ServerCertificateValidation,
};
use azure_data_cosmos::{
    AccountReference, ContainerClient, CosmosClient, CosmosError, CosmosRuntimeBuilder, FeedScope, Query, RoutingStrategy,
    TransactionalBatch,
};
use futures::TryStreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::config::{Backend, Config};
use changes::ChangeIndex;
pub use changes::Changed;
pub use journal::Record as JournalRecord;
#[cfg(test)]
pub(crate) use journal::tests::{FaultyDisk, ReleaseOnDrop};
pub use meter::{Meter, Partitions, Scope};

/// How long any one Cosmos call may take before the request gives up on it.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The containers of the article's V3 model, plus the change feed's lease container.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Container {
    Users,
    Posts,
    Feed,
    Leases,
}

impl Container {
    pub const ALL: [Container; 4] = [Container::Users, Container::Posts, Container::Feed, Container::Leases];

    pub fn name(self) -> &'static str {
        match self {
            Container::Users => "users",
            Container::Posts => "posts",
            Container::Feed => "feed",
            Container::Leases => "leases",
        }
    }

    /// The partition key path: each container is partitioned so that every request reads one
    /// logical partition.
    pub fn partition_key_path(self) -> &'static str {
        match self {
            Container::Users => "/userId",
            Container::Posts => "/postId",
            Container::Feed => "/type",
            Container::Leases => "/id",
        }
    }

    /// Lists sort by `creationDate`, then `id` so that equal dates keep one order. Cosmos DB
    /// needs a composite index for an ORDER BY on two properties; one ascending index also serves
    /// the same ORDER BY fully descending.
    fn indexing_policy(self) -> IndexingPolicy {
        let mut policy = IndexingPolicy::default().with_indexing_mode(IndexingMode::Consistent).with_included_path("/*");
        if self != Container::Leases {
            policy = policy.with_composite_index(
                CompositeIndex::default()
                    .with_property(CompositeIndexProperty::new("/creationDate", CompositeIndexOrder::Ascending))
                    .with_property(CompositeIndexProperty::new("/id", CompositeIndexOrder::Ascending)),
            );
        }
        policy.automatic = true;
        policy
    }

    /// Whether the container has time to live on with no default (`defaultTtl: -1`), so that an
    /// item carrying a `ttl` is removed that many seconds after its last write: `posts`, for the
    /// tombstones of deleted posts (C7). Cosmos DB ignores an item's `ttl` elsewhere.
    pub fn expires_items(self) -> bool {
        self == Container::Posts
    }

    /// What the container is created with: its partition key, indexing policy and time to live.
    fn properties(self) -> ContainerProperties {
        let properties =
            ContainerProperties::new(self.name(), self.partition_key_path().into()).with_indexing_policy(self.indexing_policy());
        if self.expires_items() { properties.with_default_ttl(TimeToLive::NoDefault) } else { properties }
    }
}

/// The outcomes of a Cosmos call that the application tells apart.
#[derive(Debug)]
pub enum StoreError {
    NotFound,
    Conflict,
    PreconditionFailed,
    /// 429 after the SDK's own retries.
    Throttled,
    Timeout,
    /// A continuation token Cosmos refused.
    BadContinuation(String),
    /// A request Cosmos refused as malformed (400), e.g. a script's query that does not parse.
    BadRequest(String),
    /// A transactional batch failed; `statuses` holds each operation's status (the failing one,
    /// and 424 for the others).
    BatchFailed {
        statuses: Vec<u16>,
    },
    /// The embedded store's disk is full: the write was not journaled, and was undone.
    DiskFull,
    Other(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::NotFound => f.write_str("not found"),
            StoreError::Conflict => f.write_str("conflict: the item exists"),
            StoreError::PreconditionFailed => f.write_str("precondition failed: the item changed"),
            StoreError::Throttled => f.write_str("throttled (429)"),
            StoreError::Timeout => write!(f, "no answer within {CALL_TIMEOUT:?}"),
            StoreError::BadContinuation(why) => write!(f, "invalid continuation token: {why}"),
            StoreError::BadRequest(why) => write!(f, "bad request: {why}"),
            StoreError::BatchFailed { statuses } => write!(f, "transactional batch failed: {statuses:?}"),
            StoreError::DiskFull => f.write_str("the disk is full: the write was not journaled, and was undone"),
            StoreError::Other(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for StoreError {}

impl StoreError {
    fn from_cosmos(error: &CosmosError) -> StoreError {
        let status = error.status();
        match u16::from(status.status_code()) {
            400 => StoreError::BadRequest(error.to_string()),
            404 => StoreError::NotFound,
            409 => StoreError::Conflict,
            412 => StoreError::PreconditionFailed,
            429 => StoreError::Throttled,
            _ => StoreError::Other(error.to_string()),
        }
    }

    /// The status a batch operation's failure corresponds to, when it is the one that failed.
    pub fn batch_cause(&self) -> Option<u16> {
        match self {
            StoreError::BatchFailed { statuses } => statuses.iter().copied().find(|status| *status != 424),
            _ => None,
        }
    }
}

/// An item read together with its etag, for a later conditional write.
pub struct Versioned<T> {
    pub item: T,
    pub etag: String,
}

/// Which page of a query to read.
#[derive(Clone, Debug, Default)]
pub struct PageRequest {
    pub size: u32,
    /// The SDK's continuation token from the previous page.
    pub continuation: Option<String>,
}

/// One page of a query.
pub struct Page<T> {
    pub items: Vec<T>,
    /// The SDK's token for the next page; `None` on the last page.
    pub continuation: Option<String>,
}

/// One write of a transactional batch.
#[derive(Clone, Debug, PartialEq)]
pub enum WriteOp {
    Create { document: Value },
    Replace { id: String, document: Value, if_match: Option<String> },
    Upsert { document: Value, if_match: Option<String> },
    Delete { id: String, if_match: Option<String> },
}

/// A parameterized query. The application's queries are constants of [`queries`], and every
/// value from a request travels as a parameter, never as text; scripts bring their own SQL.
pub struct QuerySpec {
    pub sql: Cow<'static, str>,
    pub parameters: Vec<(Cow<'static, str>, Value)>,
}

/// The database, reached through one SDK client.
pub struct Store {
    users: ContainerClient,
    posts: ContainerClient,
    feed: ContainerClient,
    leases: ContainerClient,
    database: String,
    /// Present on the embedded store: every acknowledged write is also journaled to disk.
    durability: Option<Arc<Durability>>,
    /// The Entra ID credential the client signs in with, shared with the server-side script
    /// executor so both use one token cache.
    credential: Option<Arc<dyn TokenCredential>>,
}

/// An item: its container, partition key and id.
type ItemKey = (Container, String, String);

/// The embedded store's journal, and the lock that keeps its order the store's order.
struct Durability {
    journal: journal::Journal,
    order: tokio::sync::Mutex<()>,
    /// Woken after every write that reached the disk, so the local change-feed processors need
    /// not poll.
    written: Arc<tokio::sync::Notify>,
    /// Which items changed after which write, for the local change-feed processors.
    changes: std::sync::Mutex<ChangeIndex>,
    /// The items each write not yet on disk touched, by write number: what to undo when the
    /// journal refuses it.
    in_flight: std::sync::Mutex<BTreeMap<u64, Vec<ItemKey>>>,
    /// The containers, to undo refused writes in.
    containers: HashMap<Container, ContainerClient>,
    /// When the items that carry a `ttl` expire: the emulator does not remove them, so the
    /// store does ([`Store::remove_expired`]).
    expiries: std::sync::Mutex<Expiries>,
    /// A write holds its partition until it is durable; reads wait (see `gates.rs`).
    gates: Arc<gates::Gates>,
}

/// The embedded store's items that carry a `ttl`, by the time they expire (Unix seconds).
#[derive(Default)]
struct Expiries {
    by_item: HashMap<ItemKey, u64>,
    due: BTreeSet<(u64, ItemKey)>,
}

impl Expiries {
    /// Records the expiry of an item's latest write: `None` when it does not expire (or was
    /// deleted).
    fn set(&mut self, item: ItemKey, expires: Option<u64>) {
        if let Some(previous) = self.by_item.remove(&item) {
            self.due.remove(&(previous, item.clone()));
        }
        if let Some(expires) = expires {
            self.by_item.insert(item.clone(), expires);
            self.due.insert((expires, item));
        }
    }

    /// Takes the items expired at `now`.
    fn take_due(&mut self, now: u64) -> Vec<ItemKey> {
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

/// When an item written at `now` (Unix seconds) expires, as Cosmos DB reads its `ttl`: a
/// positive number of seconds after the write, in a container with time to live on; `-1`, or
/// none (the container's default, which is none here), never.
fn expiry(container: Container, document: &Value, now: u64) -> Option<u64> {
    let ttl = document.get("ttl")?.as_u64().filter(|ttl| *ttl > 0)?;
    container.expires_items().then_some(now + ttl)
}

/// The time now, in Unix seconds.
fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_secs())
}

/// Armed while a write is being applied: a request dropped then (its client went away) drops
/// the write's future, and the emulator may have applied it without the journal or the change
/// index ever hearing of it (a post readable now, never copied, and gone after a restart). On
/// drop, it has the items journaled as the emulator holds them. (It borrows the write's own
/// records: nothing is copied unless it is dropped armed.)
struct DroppedMidway<'a> {
    durability: &'a Arc<Durability>,
    container: Container,
    partition_key: &'a str,
    records: &'a [(String, Option<Value>)],
    /// The write's hold on its partition: readers wait until it is journaled, also when the
    /// request is dropped (then it goes with the journaling task).
    held: Option<gates::Held>,
    armed: bool,
}

impl Drop for DroppedMidway<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (durability, container, partition_key) = (self.durability.clone(), self.container, self.partition_key.to_owned());
        let ids = self.records.iter().map(|(id, _)| id.clone()).collect();
        let held = self.held.take();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                durability.journal_as_is(container, &partition_key, ids).await;
                drop(held);
            });
        }
    }
}

impl Durability {
    /// Queues the journal line of a write just applied, and records it in the expiries and the
    /// change index; the caller holds the order lock. Returns its number, and when it is on disk.
    fn journal_locked(
        &self,
        container: Container,
        partition_key: &str,
        records: Vec<(String, Option<Value>)>,
    ) -> (u64, impl Future<Output = std::io::Result<()>> + use<>) {
        let now = unix_now();
        let records: Vec<JournalRecord> = records
            .into_iter()
            .map(|(id, doc)| {
                let exp = doc.as_ref().and_then(|doc| expiry(container, doc, now));
                JournalRecord { c: container.name().to_owned(), pk: partition_key.to_owned(), id, doc, seq: 0, exp }
            })
            .collect();
        if container.expires_items() {
            let mut expiries = self.expiries.lock().expect("never poisoned");
            for record in &records {
                expiries.set((container, record.pk.clone(), record.id.clone()), record.exp);
            }
        }
        let written: Vec<(String, bool)> = records.iter().map(|record| (record.id.clone(), record.doc.is_some())).collect();
        let (seq, on_disk) = self.journal.append(records);
        let touched = written.iter().map(|(id, _)| (container, partition_key.to_owned(), id.clone())).collect();
        self.in_flight.lock().expect("never poisoned").insert(seq, touched);
        let mut changes = self.changes.lock().expect("the change index's lock is never poisoned");
        for (id, live) in written {
            changes.record(container, partition_key, &id, seq, live);
        }
        (seq, on_disk)
    }

    /// Journals `ids` as the emulator holds them now (see [`DroppedMidway`]): whether or not the
    /// dropped write was applied, reads, the journal and the change feed agree again. (Its
    /// request got no answer, so either outcome is one it may see.)
    async fn journal_as_is(self: Arc<Self>, container: Container, partition_key: &str, ids: Vec<String>) {
        let order = self.order.lock().await;
        let client = &self.containers[&container];
        let mut records = Vec::with_capacity(ids.len());
        for id in ids {
            let document = match bounded(client.read_item(partition_key.to_owned(), &id, None)).await {
                Ok(response) => match response.into_model::<Value>() {
                    Ok(mut document) => {
                        // As written, without what the store adds.
                        if let Some(fields) = document.as_object_mut() {
                            fields
                                .retain(|name, _| !matches!(name.as_str(), "_rid" | "_self" | "_etag" | "_attachments" | "_ts"));
                        }
                        Some(document)
                    }
                    Err(error) => return tracing::error!(id, %error, "a write whose request was dropped cannot be journaled"),
                },
                Err(StoreError::NotFound) => None,
                Err(error) => return tracing::error!(id, %error, "a write whose request was dropped cannot be journaled"),
            };
            records.push((id, document));
        }
        let (seq, on_disk) = self.journal_locked(container, partition_key, records);
        drop(order);
        if let Err(error) = self.settle(seq, on_disk).await {
            tracing::error!(%error, "a write whose request was dropped cannot be journaled");
        }
    }

    /// Waits until write `seq` is on disk. When the journal refuses it, it is undone, with every
    /// write applied after it (each may build on it, and the journal refuses them all), so that
    /// reads show what a restart would.
    async fn settle(&self, seq: u64, on_disk: impl Future<Output = std::io::Result<()>>) -> Result<(), StoreError> {
        match on_disk.await {
            Ok(()) => {
                self.in_flight.lock().expect("never poisoned").remove(&seq);
                self.written.notify_waiters();
                Ok(())
            }
            Err(error) => {
                self.undo_refused(seq).await;
                Err(match error.kind() {
                    std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => StoreError::DiskFull,
                    _ => StoreError::Other(format!("the write could not be journaled, so it was undone: {error}")),
                })
            }
        }
    }

    /// Puts every item a refused write touched back as the journal holds it, then lets the
    /// journal write again. The first refused write to get here does it for all of them.
    async fn undo_refused(&self, seq: u64) {
        let _order = self.order.lock().await;
        let refused = {
            let mut in_flight = self.in_flight.lock().expect("never poisoned");
            if !in_flight.contains_key(&seq) {
                return;
            }
            // Under the order lock no write is being applied, and the journal refuses every
            // line until it resumes: every write after the last one on disk is refused.
            in_flight.split_off(&(self.journal.settled() + 1))
        };
        let mut items: Vec<ItemKey> = refused.into_values().flatten().collect();
        items.sort();
        items.dedup();
        // A new number, so that the change-feed processors deliver the items again as they are
        // now (one may have gone past the item's earlier write while the refused one hid it).
        let restored = self.journal.next_seq();
        for (container, partition_key, id) in &items {
            let client = &self.containers[container];
            let durable = match self.journal.durable_item(container.name(), partition_key, id) {
                Ok(durable) => durable,
                Err(error) => {
                    tracing::error!(container = container.name(), id, %error, "cannot read a refused write's item back from the data directory; reads show the write until a restart");
                    continue;
                }
            };
            let undone = match &durable {
                Some(document) => bounded(client.upsert_item(partition_key.clone(), id, document, None)).await.map(drop),
                None => match bounded(client.delete_item(partition_key.clone(), id, None)).await {
                    Err(StoreError::NotFound) => Ok(()),
                    other => other.map(drop),
                },
            };
            if let Err(error) = undone {
                tracing::error!(container = container.name(), id, %error, "cannot undo a refused write; reads show it until a restart");
            }
            let mut changes = self.changes.lock().expect("the change index's lock is never poisoned");
            changes.record(*container, partition_key, id, restored, durable.is_some());
        }
        self.journal.settle(restored);
        self.journal.resume();
        tracing::warn!(items = items.len(), "refused writes undone");
        self.written.notify_waiters();
    }
}

impl Store {
    /// Connects to the backend `config` names, creating the database and containers first when
    /// `config.create_containers` is set (always, on the embedded store).
    pub async fn connect(config: &Config) -> Result<Store, StoreError> {
        Self::connect_with(config, Arc::new(journal::RealDisk)).await
    }

    /// [`Store::connect`], with the embedded store's journal on `disk`.
    #[cfg_attr(not(feature = "embedded"), allow(unused_variables))]
    pub(crate) async fn connect_with(config: &Config, disk: Arc<dyn journal::Disk>) -> Result<Store, StoreError> {
        let other = |error: CosmosError| StoreError::Other(error.to_string());
        let mut credential_for_scripts = None;
        let (client, durability) = match &config.backend {
            #[cfg(feature = "embedded")]
            Backend::Embedded { data_dir } => {
                let (journal, items) = journal::Journal::open_with(data_dir, disk, journal::COMPACT_AFTER).map_err(|error| {
                    StoreError::Other(format!("cannot open the data directory {}: {error}", data_dir.display()))
                })?;
                let (client, emulator) = embedded::client().await.map_err(other)?;
                embedded::create_containers(&emulator, &client, &config.database).await.map_err(other)?;
                let changes = load(&emulator, &config.database, items).await?;
                (client, Some((journal, changes)))
            }
            #[cfg(not(feature = "embedded"))]
            Backend::Embedded { .. } => return Err(StoreError::Other("this build has no embedded store".into())),
            Backend::ConnectionString(text) => (key_client(text).await.map_err(other)?, None),
            Backend::Endpoint { endpoint, client_id } => {
                let credential = entra_credential(client_id.as_deref())?;
                credential_for_scripts = Some(credential.clone());
                (entra_client(endpoint, credential).await?, None)
            }
        };
        // (The embedded store created its own above.)
        if config.create_containers && !matches!(config.backend, Backend::Embedded { .. }) {
            create_containers(&client, &config.database).await?;
        }
        let database = client.database_client(&config.database);
        let open = |container: Container| {
            let database = &database;
            async move {
                database.container_client(container.name(), None).await.map_err(|error| {
                    StoreError::Other(format!("container {}/{} is not reachable: {error}", config.database, container.name()))
                })
            }
        };
        let store = Store {
            users: open(Container::Users).await?,
            posts: open(Container::Posts).await?,
            feed: open(Container::Feed).await?,
            leases: open(Container::Leases).await?,
            database: config.database.clone(),
            durability: None,
            credential: credential_for_scripts,
        };
        let durability = durability.map(|(journal, (changes, expiries))| {
            Arc::new(Durability {
                journal,
                order: tokio::sync::Mutex::new(()),
                written: Arc::new(tokio::sync::Notify::new()),
                changes: std::sync::Mutex::new(changes),
                in_flight: Default::default(),
                containers: Container::ALL.into_iter().map(|container| (container, store.container(container).clone())).collect(),
                expiries: std::sync::Mutex::new(expiries),
                gates: Default::default(),
            })
        });
        Ok(Store { durability, ..store })
    }

    fn container(&self, container: Container) -> &ContainerClient {
        match container {
            Container::Users => &self.users,
            Container::Posts => &self.posts,
            Container::Feed => &self.feed,
            Container::Leases => &self.leases,
        }
    }

    /// The container's links as a server-side script sees them: its self link, by resource ids
    /// (`dbs/<rid>/colls/<rid>/`, from the container's `_self`), and its name-based link
    /// (`dbs/<database>/colls/<name>`).
    pub async fn script_links(&self, container: Container) -> Result<(String, String), StoreError> {
        let properties = bounded(self.container(container).read(None))
            .await?
            .into_model()
            .map_err(|error| StoreError::Other(format!("unreadable container properties: {error}")))?;
        let self_link = properties
            .system_properties
            .self_link
            .ok_or_else(|| StoreError::Other(format!("container {} has no _self", container.name())))?;
        Ok((self_link, format!("dbs/{}/colls/{}", self.database, container.name())))
    }

    /// Point read; `None` when there is no such item.
    pub async fn read<T: DeserializeOwned>(
        &self,
        container: Container,
        partition_key: &str,
        id: &str,
    ) -> Result<Option<T>, StoreError> {
        Ok(self.read_versioned(container, partition_key, id).await?.map(|found| found.item))
    }

    /// Point read with the item's etag.
    pub async fn read_versioned<T: DeserializeOwned>(
        &self,
        container: Container,
        partition_key: &str,
        id: &str,
    ) -> Result<Option<Versioned<T>>, StoreError> {
        let _held = self.wait_until_durable(container, Some(partition_key)).await;
        let client = self.container(container);
        let response =
            match metered(Scope::partition(container, partition_key), client.read_item(partition_key.to_owned(), id, None)).await
            {
                Ok(response) => response,
                Err(StoreError::NotFound) => return Ok(None),
                Err(other) => return Err(other),
            };
        let etag = response.headers().etag().map(ToString::to_string).unwrap_or_default();
        let item = response.into_model::<T>().map_err(|error| StoreError::Other(format!("unreadable item {id:?}: {error}")))?;
        Ok(Some(Versioned { item, etag }))
    }

    /// Creates an item; [`StoreError::Conflict`] when its id exists in the partition.
    pub async fn create<T: Serialize>(&self, container: Container, partition_key: &str, item: &T) -> Result<(), StoreError> {
        let document = to_document(item)?;
        let id = document_id(&document)?;
        self.durably(container, partition_key, vec![(id.clone(), Some(document.clone()))], async {
            metered(
                Scope::partition(container, partition_key),
                self.container(container).create_item(partition_key.to_owned(), &id, &document, None),
            )
            .await
        })
        .await
    }

    /// Replaces an item, only if its etag is still `if_match` when given.
    pub async fn replace<T: Serialize>(
        &self,
        container: Container,
        partition_key: &str,
        id: &str,
        item: &T,
        if_match: Option<&str>,
    ) -> Result<(), StoreError> {
        let document = to_document(item)?;
        let options = if_match
            .map(|etag| ItemWriteOptions::default().with_precondition(Precondition::if_match(Etag::from(etag.to_owned()))));
        self.durably(container, partition_key, vec![(id.to_owned(), Some(document.clone()))], async {
            metered(
                Scope::partition(container, partition_key),
                self.container(container).replace_item(partition_key.to_owned(), id, &document, options),
            )
            .await
        })
        .await
    }

    /// Creates or replaces an item.
    pub async fn upsert<T: Serialize>(&self, container: Container, partition_key: &str, item: &T) -> Result<(), StoreError> {
        let document = to_document(item)?;
        let id = document_id(&document)?;
        self.durably(container, partition_key, vec![(id.clone(), Some(document.clone()))], async {
            metered(
                Scope::partition(container, partition_key),
                self.container(container).upsert_item(partition_key.to_owned(), &id, &document, None),
            )
            .await
        })
        .await
    }

    /// Reads one page of a single-partition query: one Cosmos operation.
    pub async fn query_page<T: DeserializeOwned + Send + 'static>(
        &self,
        container: Container,
        partition_key: &str,
        query: QuerySpec,
        page: PageRequest,
    ) -> Result<Page<T>, StoreError> {
        let (documents, continuation) = self.query_documents(container, partition_key, query, page).await?;
        let items = documents.into_iter().map(serde_json::from_value).collect::<Result<Vec<T>, _>>().map_err(|error| {
            StoreError::Other(format!("a {} item does not have the expected shape: {error}", container.name()))
        })?;
        Ok(Page { items, continuation })
    }

    /// [`Store::query_page`] on raw JSON documents, system properties included (scripts see them).
    pub async fn query_documents(
        &self,
        container: Container,
        partition_key: &str,
        query: QuerySpec,
        page: PageRequest,
    ) -> Result<(Vec<Value>, Option<String>), StoreError> {
        let mut sdk_query = Query::from(query.sql.into_owned());
        for (name, value) in query.parameters {
            sdk_query =
                sdk_query.with_parameter(name.into_owned(), value).map_err(|error| StoreError::Other(error.to_string()))?;
        }
        let size = NonZeroU32::new(page.size.max(1)).expect("at least one");
        let mut options = QueryOptions::default().with_max_item_count(MaxItemCountHint::Limit(size));
        let resuming = page.continuation.is_some();
        if let Some(token) = page.continuation {
            options = options.with_continuation_token(ContinuationToken::from_string(token));
        }
        let continuation_error = |error: StoreError| match error {
            StoreError::Other(why) if resuming => StoreError::BadContinuation(why),
            other => other,
        };
        let _held = self.wait_until_durable(container, Some(partition_key)).await;
        let scope = FeedScope::partition(partition_key.to_owned());
        let iterator = bounded(self.container(container).query_items::<Value>(sdk_query, scope, Some(options)))
            .await
            .map_err(continuation_error)?;
        let mut pages = iterator.into_pages();
        let page = match bounded(pages.try_next()).await {
            Ok(page) => page,
            Err(error) => {
                Meter::record(Scope::partition(container, partition_key), 0.0);
                return Err(continuation_error(error));
            }
        };
        let Some(page) = page else {
            return Ok((Vec::new(), None));
        };
        Meter::record(Scope::partition(container, partition_key), response_charge(page.headers()));
        // The backend sends a continuation header only when more results may follow.
        let continuation = match page.headers().continuation() {
            Some(_) => {
                Some(pages.to_continuation_token().map_err(|error| StoreError::Other(error.to_string()))?.as_str().to_owned())
            }
            None => None,
        };
        Ok((page.items().to_vec(), continuation))
    }

    /// One write, conditional as `write` says.
    pub async fn execute_write(&self, container: Container, partition_key: &str, write: WriteOp) -> Result<(), StoreError> {
        match write {
            WriteOp::Create { document } => self.create(container, partition_key, &document).await,
            WriteOp::Replace { id, document, if_match } => {
                self.replace(container, partition_key, &id, &document, if_match.as_deref()).await
            }
            other => self.execute_batch(container, partition_key, vec![other]).await.map_err(|error| match error.batch_cause() {
                Some(404) => StoreError::NotFound,
                Some(409) => StoreError::Conflict,
                Some(412) => StoreError::PreconditionFailed,
                Some(429) => StoreError::Throttled,
                _ => error,
            }),
        }
    }

    /// Commits `operations` in one partition as one transactional batch: all or nothing.
    pub async fn execute_batch(
        &self,
        container: Container,
        partition_key: &str,
        operations: Vec<WriteOp>,
    ) -> Result<(), StoreError> {
        if operations.is_empty() {
            return Ok(());
        }
        let mut journaled = Vec::with_capacity(operations.len());
        let mut batch = TransactionalBatch::new(partition_key.to_owned());
        let sdk_error = |error: CosmosError| StoreError::Other(error.to_string());
        let precondition = |etag: &Option<String>| etag.as_ref().map(|etag| Precondition::if_match(Etag::from(etag.clone())));
        for operation in operations {
            batch = match operation {
                WriteOp::Create { document } => {
                    journaled.push((document_id(&document)?, Some(document.clone())));
                    batch.create_item(document).map_err(sdk_error)?
                }
                WriteOp::Replace { id, document, if_match } => {
                    journaled.push((id.clone(), Some(document.clone())));
                    let options = precondition(&if_match).map(|p| BatchReplaceOptions::default().with_precondition(p));
                    batch.replace_item(id, document, options).map_err(sdk_error)?
                }
                WriteOp::Upsert { document, if_match } => {
                    journaled.push((document_id(&document)?, Some(document.clone())));
                    let options = precondition(&if_match).map(|p| BatchUpsertOptions::default().with_precondition(p));
                    batch.upsert_item(document, options).map_err(sdk_error)?
                }
                WriteOp::Delete { id, if_match } => {
                    journaled.push((id.clone(), None));
                    let options = precondition(&if_match).map(|p| BatchDeleteOptions::default().with_precondition(p));
                    batch.delete_item(id, options)
                }
            };
        }
        self.durably(container, partition_key, journaled, async {
            let response = metered(
                Scope::partition(container, partition_key),
                self.container(container).execute_transactional_batch(batch, None),
            )
            .await?;
            let results = response.into_model().map_err(|error| StoreError::Other(error.to_string()))?;
            // A failed batch is an `Ok` response (207) whose operations say what failed.
            if results.results().iter().all(|result| result.is_success()) {
                Ok(())
            } else {
                let statuses = results.results().iter().map(|result| result.status_code()).collect();
                Err(StoreError::BatchFailed { statuses })
            }
        })
        .await
    }

    /// Runs a write; on the embedded store, also journals what it left (`records`: id and
    /// document, `None` for a deletion) before acknowledging it.
    async fn durably<R>(
        &self,
        container: Container,
        partition_key: &str,
        records: Vec<(String, Option<Value>)>,
        write: impl Future<Output = Result<R, StoreError>>,
    ) -> Result<(), StoreError> {
        let Some(durability) = &self.durability else {
            return write.await.map(drop);
        };
        // Visible only once durable: the partition is held from before the write is applied until
        // its journal line is on disk (or it is undone). Taken before the order lock, so that a
        // write waiting for its partition holds up no other partition's.
        let held = durability.gates.write(container, partition_key).await;
        // Holding the lock from the write to the queueing of its journal line makes the journal's
        // order the order in which the store applied the writes.
        let order = durability.order.lock().await;
        let mut dropped_midway =
            DroppedMidway { durability, container, partition_key, records: &records, held: Some(held), armed: true };
        let written = write.await;
        // Done, one way or the other: journaled below, or refused (a failed write applies nothing).
        dropped_midway.armed = false;
        let held = dropped_midway.held.take();
        drop(dropped_midway);
        written?;
        let (seq, on_disk) = durability.journal_locked(container, partition_key, records);
        drop(order);
        // A task of its own, so that a refused write is undone (and the journal resumes) even
        // when the request that made it is dropped meanwhile; the partition is let go after.
        let settling = durability.clone();
        tokio::spawn(async move {
            let settled = settling.settle(seq, on_disk).await;
            drop(held);
            settled
        })
        .await
        .map_err(|error| StoreError::Other(format!("the write's journaling did not finish: {error}")))?
    }

    /// Removes the embedded store's items whose `ttl` ran out by `now` (Unix seconds), as Cosmos
    /// DB does by itself: each removal is a deletion like any other, journaled, so it survives a
    /// restart, and an expiry a restart would not reset. Returns how many it removed; does
    /// nothing on other backends.
    pub async fn remove_expired(&self, now: u64) -> Result<usize, StoreError> {
        let Some(durability) = &self.durability else { return Ok(0) };
        let due = durability.expiries.lock().expect("never poisoned").take_due(now);
        let mut removed = 0;
        for (index, (container, partition_key, id)) in due.iter().enumerate() {
            let outcome = async {
                let Some(found) = self.read_versioned::<Value>(*container, partition_key, id).await? else { return Ok(false) };
                // Written again since it was due (then it has a new expiry), or no longer expiring.
                let rewritten = durability.expiries.lock().expect("never poisoned").by_item.contains_key(&due[index]);
                if rewritten || expiry(*container, &found.item, 0).is_none() {
                    return Ok(false);
                }
                let delete = WriteOp::Delete { id: id.clone(), if_match: Some(found.etag) };
                match self.execute_write(*container, partition_key, delete).await {
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

    /// The embedded store's journal position: every write numbered up to it is on disk (or was
    /// refused and undone). `None` on other backends.
    pub fn journal_position(&self) -> Option<u64> {
        self.durability.as_ref().map(|durability| durability.journal.settled())
    }

    /// Numbers the embedded store's next write after `position`, the furthest a change-feed
    /// processor got: numbering never goes back below a position a processor holds, or it would
    /// skip the writes that reuse the numbers. Call it before the first write.
    pub fn continue_numbering_after(&self, position: u64) {
        if let Some(durability) = &self.durability {
            durability.journal.continue_after(position);
        }
    }

    /// The Entra ID credential, when the account is reached with one.
    pub fn credential(&self) -> Option<Arc<dyn TokenCredential>> {
        self.credential.clone()
    }

    /// Woken after every write to the embedded store (`None` on other backends).
    pub fn write_signal(&self) -> Option<Arc<tokio::sync::Notify>> {
        self.durability.as_ref().map(|durability| durability.written.clone())
    }

    /// At most `limit` items of `container` whose last write on the embedded store came after
    /// journal position `after`, oldest change first (`None` on other backends).
    pub fn changed_after(&self, container: Container, after: u64, limit: usize) -> Option<Changed> {
        let durability = self.durability.as_ref()?;
        let settled = durability.journal.settled();
        let changes = durability.changes.lock().expect("the change index's lock is never poisoned");
        Some(changes.changed_after(container, after, settled, limit))
    }

    /// Whether the item's last write on the embedded store is on disk (always, on other
    /// backends). A change-feed processor that read an item checks this after the read: the
    /// item may have been written again since it was listed, and a version not on disk yet must
    /// not reach a copy, which a crash would leave showing a write that never happened (and,
    /// its `_ts` being newer, never replaced). That newer write is listed again once settled.
    pub fn is_settled(&self, container: Container, partition_key: &str, id: &str) -> bool {
        let Some(durability) = &self.durability else { return true };
        let settled = durability.journal.settled();
        let changes = durability.changes.lock().expect("the change index's lock is never poisoned");
        changes.last_write(container, partition_key, id).is_none_or(|seq| seq <= settled)
    }

    /// Every result of a query across all partitions of `container`, page after page. Only
    /// the change-feed functions use one (to find the posts a renamed user wrote in).
    pub async fn query_all_partitions(&self, container: Container, query: QuerySpec) -> Result<Vec<Value>, StoreError> {
        let _held = self.wait_until_durable(container, None).await;
        let mut sdk_query = Query::from(query.sql.into_owned());
        for (name, value) in query.parameters {
            sdk_query =
                sdk_query.with_parameter(name.into_owned(), value).map_err(|error| StoreError::Other(error.to_string()))?;
        }
        let mut pages = bounded(self.container(container).query_items::<Value>(sdk_query, FeedScope::full_container(), None))
            .await?
            .into_pages();
        let mut documents = Vec::new();
        while let Some(page) = bounded(pages.try_next()).await? {
            Meter::record(Scope::AllPartitions(container), response_charge(page.headers()));
            documents.extend(page.items().iter().cloned());
        }
        Ok(documents)
    }

    /// The change feed of `container` from its beginning: the latest version of every item.
    /// `rebuild-copies` reads it; the local processors follow the journal instead (see
    /// `changes.rs`).
    pub async fn change_feed_from_beginning(&self, container: Container) -> Result<ChangeFeed, StoreError> {
        self.change_feed_from(container, None).await
    }

    /// The change feed of `container` from `position` (a [`ChangeFeed::position`] saved
    /// earlier, one token for every feed range), or from its beginning.
    /// The embedded store's hold for a read of one partition (`Some`) or of all: it waits for
    /// the writes of the partition that are not durable yet (see `gates.rs`). Nothing to wait
    /// for on other backends.
    async fn wait_until_durable(&self, container: Container, partition_key: Option<&str>) -> Option<gates::Held> {
        let durability = self.durability.as_ref()?;
        Some(match partition_key {
            Some(partition_key) => durability.gates.read(container, partition_key).await,
            None => durability.gates.read_all(container).await,
        })
    }

    pub async fn change_feed_from(&self, container: Container, position: Option<&str>) -> Result<ChangeFeed, StoreError> {
        let client = self.container(container);
        let ranges = bounded(client.read_feed_ranges(None)).await?.len().max(1);
        let options = position.map(|token| {
            azure_data_cosmos::options::ChangeFeedOptions::default()
                .with_continuation_token(ContinuationToken::from_string(token.to_owned()))
        });
        let start = ChangeFeedStartFrom::Beginning;
        let pages = bounded(client.query_change_feed::<Value>(FeedScope::full_container(), start, options)).await?;
        Ok(ChangeFeed { container, pages, ranges })
    }
}

/// How often the embedded store looks for expired items. Cosmos DB removes them in the
/// background too, with no promise of when; the application never waits for it.
const EXPIRY_SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// Removes expired items from the embedded store every [`EXPIRY_SWEEP_INTERVAL`] for as long as
/// the store is in use (the task holds it weakly). Nothing to do on other backends.
pub fn spawn_expiry_sweep(store: &Arc<Store>) {
    if store.durability.is_none() {
        return;
    }
    let store = Arc::downgrade(store);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(EXPIRY_SWEEP_INTERVAL).await;
            let Some(store) = store.upgrade() else { return };
            if let Err(error) = store.remove_expired(unix_now()).await {
                tracing::warn!(%error, "expired items could not be removed yet");
            }
        }
    });
}

/// A container's change feed, read page by page. The SDK serves one feed range per page, in
/// turn; a poll of every range that finds nothing means the reader has caught up.
pub struct ChangeFeed {
    container: Container,
    pages: ChangeFeedPageIterator<ChangeFeedItem<Value>>,
    ranges: usize,
}

impl ChangeFeed {
    /// One page: the documents changed in one feed range since its last poll (often none).
    async fn poll(&mut self) -> Result<Vec<Value>, StoreError> {
        let Some(page) = bounded(self.pages.try_next()).await? else { return Ok(Vec::new()) };
        Meter::record(Scope::AllPartitions(self.container), response_charge(page.headers()));
        Ok(page.items().iter().filter_map(|item| item.current().cloned()).collect())
    }

    /// Where the reader is: every change of the pages read so far is behind it. Saved, it starts
    /// a later [`Store::change_feed_from`] there.
    pub fn position(&self) -> Result<String, StoreError> {
        self.pages
            .to_continuation_token()
            .map(|token| token.as_str().to_owned())
            .map_err(|error| StoreError::Other(format!("the change feed's position cannot be read: {error}")))
    }

    /// The next changes, or `None` once a poll of every feed range in a row found nothing (the
    /// reader has caught up).
    pub async fn next_changes(&mut self) -> Result<Option<Vec<Value>>, StoreError> {
        for _ in 0..self.ranges {
            let documents = self.poll().await?;
            if !documents.is_empty() {
                return Ok(Some(documents));
            }
        }
        Ok(None)
    }
}

/// The pause before attempt `attempt + 1` of an optimistic write that lost a race (412/409):
/// up to 1 ms, doubling per attempt up to 64 ms, scaled by a random factor so that the
/// contenders spread out instead of colliding again.
pub fn retry_pause(attempt: usize) -> Duration {
    let ceiling_micros = 1_000u64 << attempt.min(6);
    let jitter = (uuid::Uuid::new_v4().as_u128() % 1_000) as u64;
    Duration::from_micros(ceiling_micros * (jitter + 1) / 1_000)
}

fn to_document<T: Serialize>(item: &T) -> Result<Value, StoreError> {
    serde_json::to_value(item).map_err(|error| StoreError::Other(format!("an item does not serialize: {error}")))
}

fn document_id(document: &Value) -> Result<String, StoreError> {
    document
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| StoreError::Other("an item to write has no string id".into()))
}

/// Puts the journaled items back into the embedded store at start-up, in the order of their
/// last write, and returns the change index they make. One at a time: the emulator applies one
/// write at a time anyway.
#[cfg(feature = "embedded")]
async fn load(
    emulator: &embedded::Emulator,
    database: &str,
    lines: Vec<Box<str>>,
) -> Result<(ChangeIndex, Expiries), StoreError> {
    let unloadable = |why: String| StoreError::Other(format!("a journaled item cannot be loaded: {why}"));
    let loaded = lines.len();
    let mut changes = ChangeIndex::default();
    let mut expiries = Expiries::default();
    for line in lines {
        let item = journal::LiveItem::parse(&line).map_err(unloadable)?;
        let container = Container::ALL
            .into_iter()
            .find(|container| container.name() == item.c)
            .ok_or_else(|| StoreError::Other(format!("the journal names an unknown container {:?}", item.c)))?;
        embedded::restore(emulator, database, container, &item.pk, item.doc.get()).await.map_err(unloadable)?;
        changes.record(container, &item.pk, &item.id, item.seq, true);
        if item.exp.is_some() {
            expiries.set((container, item.pk.into_owned(), item.id.into_owned()), item.exp);
        }
    }
    if loaded > 0 {
        tracing::info!(items = loaded, "embedded store loaded from its data directory");
    }
    Ok((changes, expiries))
}

/// Runs one Cosmos call within [`CALL_TIMEOUT`], mapping its error.
async fn bounded<T>(call: impl Future<Output = azure_data_cosmos::Result<T>>) -> Result<T, StoreError> {
    // Boxed: an SDK call's future is tens of kilobytes, and kept inline it is copied into every
    // future that awaits it, up to the change-feed processors' concurrent copies, whose stack
    // then overflowed a 2 MiB thread in debug builds.
    match tokio::time::timeout(CALL_TIMEOUT, Box::pin(call)).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(StoreError::from_cosmos(&error)),
        Err(_) => Err(StoreError::Timeout),
    }
}

/// A point operation or batch: bounded, and counted with its charge (failed ones too: Cosmos
/// bills them).
async fn metered<R: HasCharge>(scope: Scope, call: impl Future<Output = azure_data_cosmos::Result<R>>) -> Result<R, StoreError> {
    // Boxed, as in `bounded`.
    match tokio::time::timeout(CALL_TIMEOUT, Box::pin(call)).await {
        Ok(Ok(response)) => {
            Meter::record(scope, response.charge());
            Ok(response)
        }
        Ok(Err(error)) => {
            Meter::record(scope, error.diagnostics().map_or(0.0, |diagnostics| f64::from(diagnostics.total_request_charge())));
            Err(StoreError::from_cosmos(&error))
        }
        Err(_) => {
            Meter::record(scope, 0.0);
            Err(StoreError::Timeout)
        }
    }
}

trait HasCharge {
    fn charge(&self) -> f64;
}

impl HasCharge for azure_data_cosmos::models::ItemResponse {
    fn charge(&self) -> f64 {
        response_charge(self.headers())
    }
}

impl HasCharge for azure_data_cosmos::models::BatchResponse {
    fn charge(&self) -> f64 {
        response_charge(self.headers())
    }
}

/// The request charge a response reports (0 when it reports none).
fn response_charge(headers: &azure_data_cosmos::models::ResponseHeaders) -> f64 {
    headers.request_charge().map_or(0.0, |charge| f64::from(*charge))
}

/// The region the SDK routes from: the Functions host names its own in `REGION_NAME`.
fn home_region() -> Region {
    Region::new(std::env::var("REGION_NAME").unwrap_or_else(|_| "East US".to_owned()))
}

/// A client for an account reached with a connection string and key (the Cosmos DB emulator).
async fn key_client(connection_string: &str) -> azure_data_cosmos::Result<CosmosClient> {
    let parsed: azure_data_cosmos_driver::models::ConnectionString = connection_string.parse()?;
    let endpoint = parsed.account_endpoint().parse()?;
    let account = AccountReference::with_authentication_key(endpoint, parsed.account_key().clone());
    // The emulator serves a self-signed certificate; the driver relaxes the check for a local
    // emulator endpoint only, never for a remote account.
    let pool = ConnectionPoolOptions::builder()
        .with_server_certificate_validation(ServerCertificateValidation::RequiredUnlessEmulator)
        .build()?;
    let runtime = CosmosRuntimeBuilder::new().with_connection_pool(pool).build().await?;
    CosmosClient::builder().with_runtime(runtime).build(account, RoutingStrategy::ProximityTo(home_region())).await
}

/// The Entra ID credential: the function app's managed identity on Azure (the platform sets
/// `IDENTITY_ENDPOINT`; `client_id` picks a user-assigned identity), the developer's `az login`
/// elsewhere.
pub fn entra_credential(client_id: Option<&str>) -> Result<Arc<dyn TokenCredential>, StoreError> {
    let credential: Arc<dyn TokenCredential> = if std::env::var_os("IDENTITY_ENDPOINT").is_some() {
        let options = azure_identity::ManagedIdentityCredentialOptions {
            user_assigned_id: client_id.map(|id| azure_identity::UserAssignedId::ClientId(id.to_owned())),
            ..Default::default()
        };
        azure_identity::ManagedIdentityCredential::new(Some(options)).map_err(|error| StoreError::Other(error.to_string()))?
    } else {
        azure_identity::DeveloperToolsCredential::new(None).map_err(|error| StoreError::Other(error.to_string()))?
    };
    Ok(credential)
}

/// A client for an account reached with Entra ID.
async fn entra_client(endpoint: &str, credential: Arc<dyn TokenCredential>) -> Result<CosmosClient, StoreError> {
    let endpoint = endpoint.parse().map_err(|error: CosmosError| StoreError::Other(format!("bad account endpoint: {error}")))?;
    let account = AccountReference::with_credential(endpoint, credential);
    CosmosClient::builder()
        .build(account, RoutingStrategy::ProximityTo(home_region()))
        .await
        .map_err(|error| StoreError::Other(error.to_string()))
}

/// Creates the database and the four containers when missing (needs control-plane rights: the
/// embedded store and the emulator's key have them; on Azure, Bicep does this instead).
async fn create_containers(client: &CosmosClient, database: &str) -> Result<(), StoreError> {
    let tolerate_existing = |result: azure_data_cosmos::Result<_>| match result {
        Ok(_) => Ok(()),
        Err(error) if error.status().is_conflict() => Ok(()),
        Err(error) => Err(StoreError::Other(format!("cannot create the database or a container: {error}"))),
    };
    tolerate_existing(client.create_database(database, None).await.map(drop))?;
    for container in Container::ALL {
        tolerate_existing(client.database_client(database).create_container(container.properties(), None).await.map(drop))?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn embedded_config(dir: &std::path::Path) -> Config {
        Config {
            listen: "127.0.0.1:0".parse().unwrap(),
            backend: Backend::Embedded { data_dir: dir.to_owned() },
            database: "blog".into(),
            create_containers: true,
            change_feed: crate::config::ChangeFeedMode::Local,
            scripts: crate::config::ScriptsMode::InProcess,
            max_in_flight: crate::config::DEFAULT_MAX_IN_FLIGHT,
            auth: crate::config::AuthMode::Development,
            token_key: None,
        }
    }

    /// Cosmos DB removes an item `ttl` seconds after its last write, in a container with time to
    /// live on; the embedded store's sweep must too, by a journaled deletion, and a restart must
    /// neither forget nor reset an expiry.
    #[tokio::test]
    async fn items_expire_ttl_seconds_after_their_last_write_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let config = embedded_config(dir.path());
        let now = unix_now();
        {
            let store = Store::connect(&config).await.unwrap();
            store.create(Container::Posts, "p", &json!({"id": "gone", "postId": "p", "ttl": 100})).await.unwrap();
            store.create(Container::Posts, "p", &json!({"id": "kept", "postId": "p", "ttl": 100})).await.unwrap();
            // Written again without a ttl: it no longer expires.
            store.replace(Container::Posts, "p", "kept", &json!({"id": "kept", "postId": "p"}), None).await.unwrap();
            store.create(Container::Posts, "p", &json!({"id": "forever", "postId": "p", "ttl": -1})).await.unwrap();
            // No time to live in `users`: Cosmos DB ignores the item's ttl there.
            store.create(Container::Users, "u", &json!({"id": "u", "userId": "u", "ttl": 1})).await.unwrap();
            assert_eq!(store.remove_expired(now + 50).await.unwrap(), 0);
        }
        let store = Store::connect(&config).await.unwrap();
        assert_eq!(store.remove_expired(now + 98).await.unwrap(), 0, "a restart does not reset the expiry, nor bring it forward");
        assert_eq!(store.remove_expired(now + 200).await.unwrap(), 1);
        assert!(store.read::<Value>(Container::Posts, "p", "gone").await.unwrap().is_none());
        for (container, partition_key, id) in
            [(Container::Posts, "p", "kept"), (Container::Posts, "p", "forever"), (Container::Users, "u", "u")]
        {
            assert!(store.read::<Value>(container, partition_key, id).await.unwrap().is_some(), "{id}");
        }
        drop(store);
        let store = Store::connect(&config).await.unwrap();
        assert!(store.read::<Value>(Container::Posts, "p", "gone").await.unwrap().is_none(), "the removal was journaled");
    }

    /// A request dropped while its write is being applied (the client went away): the write may
    /// be in the emulator already, so it is journaled as it is there, listed for the change-feed
    /// processors, and still there after a restart.
    #[tokio::test]
    async fn a_write_whose_request_is_dropped_midway_is_journaled_as_applied() {
        let dir = tempfile::tempdir().unwrap();
        let config = embedded_config(dir.path());
        let store = Store::connect(&config).await.unwrap();
        let document = json!({"id": "u1", "userId": "u1", "username": "kept"});
        let applied_then_stalled = async {
            bounded(store.users.upsert_item("u1".to_owned(), "u1", &document, None)).await?;
            std::future::pending::<Result<(), StoreError>>().await
        };
        let write = store.durably(Container::Users, "u1", vec![("u1".into(), Some(document.clone()))], applied_then_stalled);
        assert!(tokio::time::timeout(Duration::from_millis(200), write).await.is_err(), "dropped midway");

        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while store.changed_after(Container::Users, 0, 10).unwrap().items.is_empty() {
            assert!(std::time::Instant::now() < deadline, "never journaled");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        drop(store);
        // (The journaling task may hold the data directory a moment longer.)
        let store = loop {
            match Store::connect(&config).await {
                Ok(store) => break store,
                Err(error) if error.to_string().contains("in use") && std::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(10)).await
                }
                Err(error) => panic!("{error}"),
            }
        };
        assert_eq!(store.read::<Value>(Container::Users, "u1", "u1").await.unwrap().unwrap()["username"], "kept");
    }

    impl Store {
        /// What the emulator holds now, on disk or not: past the gates every reader waits at,
        /// which only a test may look behind.
        async fn read_applied(&self, container: Container, partition_key: &str, id: &str) -> Option<Value> {
            match bounded(self.container(container).read_item(partition_key.to_owned(), id, None)).await {
                Ok(response) => Some(response.into_model::<Value>().unwrap()),
                Err(StoreError::NotFound) => None,
                Err(error) => panic!("{error}"),
            }
        }
    }

    #[tokio::test]
    async fn a_change_feed_reader_is_never_offered_a_write_before_it_is_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let disk = Arc::new(FaultyDisk::default());
        let store = Arc::new(Store::connect_with(&embedded_config(dir.path()), disk.clone()).await.unwrap());
        store.create(Container::Users, "u1", &json!({"id": "u1", "userId": "u1"})).await.unwrap();
        let before = store.changed_after(Container::Users, 0, 100).unwrap();
        assert_eq!(before.items.len(), 1);

        // A slow fdatasync: the next write is applied, and waits for the disk.
        let _release = journal::tests::ReleaseOnDrop(disk.clone());
        disk.hold_syncs();
        let writing = tokio::spawn({
            let store = store.clone();
            async move { store.create(Container::Users, "u2", &json!({"id": "u2", "userId": "u2"})).await }
        });
        while store.read_applied(Container::Users, "u2", "u2").await.is_none() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let during = store.changed_after(Container::Users, before.through, 100).unwrap();
        assert_eq!(during, Changed { items: vec![], through: before.through }, "a crash now would lose the write");

        disk.release_syncs();
        writing.await.unwrap().unwrap();
        let after = store.changed_after(Container::Users, before.through, 100).unwrap();
        assert_eq!(after.items, vec![("u2".to_owned(), "u2".to_owned())]);

        // Listed while settled, then written again before it is read: the version read is not
        // on disk, and the reader can tell.
        let listed = store.changed_after(Container::Users, 0, 100).unwrap();
        assert!(listed.items.contains(&("u1".to_owned(), "u1".to_owned())));
        disk.hold_syncs();
        let rewriting = tokio::spawn({
            let store = store.clone();
            async move { store.replace(Container::Users, "u1", "u1", &json!({"id": "u1", "userId": "u1", "v": 2}), None).await }
        });
        while store.read_applied(Container::Users, "u1", "u1").await.unwrap().get("v").is_none() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(!store.is_settled(Container::Users, "u1", "u1"), "read before its write is on disk");
        disk.release_syncs();
        rewriting.await.unwrap().unwrap();
        assert!(store.is_settled(Container::Users, "u1", "u1"));
    }
}
