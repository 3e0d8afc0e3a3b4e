//! Every Cosmos DB call the application makes, through the official SDK (`azure_data_cosmos`).
//!
//! Handlers and scripts speak in items, partition keys and pages; this module turns that into
//! SDK calls, records each call's cost on the request's [`Meter`], bounds it in time, and maps
//! the SDK's errors to the few outcomes the application acts on ([`StoreError`]).

mod changes;
// The deployed build compiles the embedded store's database code but never opens one.
#[cfg_attr(not(feature = "embedded"), allow(dead_code))]
mod embedded;
mod meter;
pub mod queries;

use std::borrow::Cow;
#[cfg(feature = "embedded")]
use std::collections::HashMap;
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
pub use changes::Changed;
use embedded::Durability;
#[cfg(test)]
pub(crate) use embedded::database::tests::FaultyDisk;
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
    /// The embedded store's disk is full: the write was not committed, and was undone.
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
            StoreError::DiskFull => f.write_str("the disk is full: the write was not committed, and was undone"),
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
    /// Present on the embedded store: every acknowledged write is also committed to its
    /// database, and visible only once it is.
    durability: Option<Arc<Durability>>,
    /// The Entra ID credential the client signs in with, shared with the server-side script
    /// executor so both use one token cache.
    credential: Option<Arc<dyn TokenCredential>>,
}

/// Holds a write's partition while the emulator applies it: a request dropped then (its client
/// went away) drops the write's future, and the emulator may have applied it without the
/// database or the change index ever hearing of it (a post readable now, never copied, and
/// gone after a restart). On drop, it has the items committed as the emulator holds them, the
/// partition still held until then. (It borrows the write's own records: nothing is copied
/// unless it is dropped holding the partition.)
struct DroppedMidway<'a> {
    durability: &'a Arc<Durability>,
    container: Container,
    partition_key: &'a str,
    records: &'a [(String, Option<Value>)],
    guard: Option<embedded::locks::PartitionGuard>,
}

impl Drop for DroppedMidway<'_> {
    fn drop(&mut self) {
        let Some(guard) = self.guard.take() else { return };
        let (durability, container, partition_key) = (self.durability.clone(), self.container, self.partition_key.to_owned());
        let ids = self.records.iter().map(|(id, _)| id.clone()).collect();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(durability.commit_as_is(container, partition_key, ids, guard));
        }
    }
}

impl Store {
    /// Connects to the backend `config` names, creating the database and containers first when
    /// `config.create_containers` is set (always, on the embedded store).
    pub async fn connect(config: &Config) -> Result<Store, StoreError> {
        Self::connect_with(config, Arc::new(embedded::database::NoFaults)).await
    }

    /// [`Store::connect`], with faults injected into the embedded store's commits.
    #[cfg_attr(not(feature = "embedded"), allow(unused_variables))]
    pub(crate) async fn connect_with(config: &Config, faults: Arc<dyn embedded::database::Faults>) -> Result<Store, StoreError> {
        let other = |error: CosmosError| StoreError::Other(error.to_string());
        let mut credential_for_scripts = None;
        let (client, durability) = match &config.backend {
            #[cfg(feature = "embedded")]
            Backend::Embedded { data_dir } => {
                let (database, connection) = embedded::open(data_dir)?;
                let (client, emulator) = embedded::emulator::client().await.map_err(other)?;
                embedded::emulator::create_containers(&emulator, &client, &config.database).await.map_err(other)?;
                let (changes, expiries) = embedded::emulator::load(&emulator, &config.database, &database, &connection).await?;
                (client, Some((database, connection, changes, expiries)))
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
        #[cfg(feature = "embedded")]
        if let Some((database, connection, changes, expiries)) = durability {
            let containers: HashMap<Container, ContainerClient> =
                Container::ALL.into_iter().map(|container| (container, store.container(container).clone())).collect();
            let durability = Durability::start(database, connection, faults, changes, expiries, containers)?;
            return Ok(Store { durability: Some(Arc::new(durability)), ..store });
        }
        #[cfg(not(feature = "embedded"))]
        let _: Option<()> = durability;
        Ok(store)
    }

    /// On the embedded store, waits until no write to the partition is pending and keeps new
    /// ones out until the guard drops: a read sees durable writes only.
    async fn settled_partition(&self, container: Container, partition_key: &str) -> Option<embedded::locks::PartitionGuard> {
        match &self.durability {
            Some(durability) => Some(durability.locks.read(container, partition_key).await),
            None => None,
        }
    }

    /// [`Store::settled_partition`] for a whole container.
    async fn settled_container(&self, container: Container) -> Option<embedded::locks::ContainerGuard> {
        match &self.durability {
            Some(durability) => Some(durability.locks.whole(container).await),
            None => None,
        }
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
        let client = self.container(container);
        let _settled = self.settled_partition(container, partition_key).await;
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
        let scope = FeedScope::partition(partition_key.to_owned());
        let _settled = self.settled_partition(container, partition_key).await;
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

    /// Runs a write; on the embedded store, also commits what it left (`records`: id and
    /// document, `None` for a deletion) to the database before acknowledging it, holding the
    /// partition from before the write until then, so no one sees it before it is durable.
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
        let guard = durability.locks.write(container, partition_key).await;
        let mut dropped_midway = DroppedMidway { durability, container, partition_key, records: &records, guard: Some(guard) };
        let written = write.await;
        // Done, one way or the other: committed below, or refused (a failed write applies nothing).
        let guard = dropped_midway.guard.take().expect("taken only here");
        drop(dropped_midway);
        written?;
        durability.commit(container, partition_key, records, guard).await
    }

    /// Removes the embedded store's items whose `ttl` ran out by `now` (Unix seconds), as Cosmos
    /// DB does by itself: each removal is a deletion like any other, committed, so it survives a
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
                if rewritten || embedded::expiry(*container, &found.item, 0).is_none() {
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

    /// The embedded store's position in its write numbering: every write numbered up to it is
    /// committed (or was refused and undone). `None` on other backends.
    pub fn journal_position(&self) -> Option<u64> {
        self.durability.as_ref().map(|durability| durability.database.settled())
    }

    /// Kept for the processors' start-up: every position they hold was checked against the
    /// database's numbering when it opened (a position beyond its last write is refused there),
    /// and the numbering is kept in the database with the writes, so it never goes back below
    /// a position a processor saved. Nothing is left to do.
    pub fn continue_numbering_after(&self, position: u64) {
        if let Some(durability) = &self.durability {
            debug_assert!(position <= durability.database.last_seq(), "checked when the database opened");
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
    /// position `after`, oldest change first (`None` on other backends).
    pub fn changed_after(&self, container: Container, after: u64, limit: usize) -> Option<Changed> {
        let durability = self.durability.as_ref()?;
        let settled = durability.database.settled();
        let changes = durability.changes.lock().expect("the change index's lock is never poisoned");
        Some(changes.changed_after(container, after, settled, limit))
    }

    /// Whether the item's last write on the embedded store is on disk (always, on other
    /// backends). A version not on disk must not reach a copy, which a crash would leave showing
    /// a write that never happened. Reads wait for a partition's pending writes, so a version
    /// read is durable; the change index lists committed writes only, so this holds for any
    /// item the index knows. (Kept for the processors, which check it after each read.)
    pub fn is_settled(&self, container: Container, partition_key: &str, id: &str) -> bool {
        let Some(durability) = &self.durability else { return true };
        let settled = durability.database.settled();
        let changes = durability.changes.lock().expect("the change index's lock is never poisoned");
        changes.last_write(container, partition_key, id).is_none_or(|seq| seq <= settled)
    }

    /// Every result of a query across all partitions of `container`, page after page. Only
    /// the change-feed functions use one (to find the posts a renamed user wrote in).
    pub async fn query_all_partitions(&self, container: Container, query: QuerySpec) -> Result<Vec<Value>, StoreError> {
        let _settled = self.settled_container(container).await;
        let mut sdk_query = Query::from(query.sql.into_owned());
        for (name, value) in query.parameters {
            sdk_query =
                sdk_query.with_parameter(name.into_owned(), value).map_err(|error| StoreError::Other(error.to_string()))?;
        }
        let options = QueryOptions::default().with_feed_options(whole_container());
        let mut pages =
            bounded(self.container(container).query_items::<Value>(sdk_query, FeedScope::full_container(), Some(options)))
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
    pub async fn change_feed_from(&self, container: Container, position: Option<&str>) -> Result<ChangeFeed, StoreError> {
        let client = self.container(container);
        let ranges = bounded(client.read_feed_ranges(None)).await?.len().max(1);
        let mut options = azure_data_cosmos::options::ChangeFeedOptions::default().with_feed_options(whole_container());
        if let Some(token) = position {
            options = options.with_continuation_token(ContinuationToken::from_string(token.to_owned()));
        }
        let options = Some(options);
        let start = ChangeFeedStartFrom::Beginning;
        let pages = bounded(client.query_change_feed::<Value>(FeedScope::full_container(), start, options)).await?;
        let locks = self.durability.as_ref().map(|durability| durability.locks.clone());
        Ok(ChangeFeed { container, pages, ranges, locks })
    }
}

/// Options for the calls that must reach every physical partition of a container by design
/// (the rename's query, the change feed from its beginning). The SDK refuses a fan-out past 100
/// partitions unless told otherwise (`DEFAULT_MAX_FAN_OUT`, `azure_data_cosmos_driver`
/// `options/plan_options.rs`), a guard against queries that reach every partition by accident;
/// the embedded `posts` has more than 100, and a large account may too.
fn whole_container() -> azure_data_cosmos::options::FeedOptions {
    azure_data_cosmos::options::FeedOptions::default().with_max_fan_out(u32::MAX)
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
            if let Err(error) = store.remove_expired(embedded::unix_now()).await {
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
    /// The embedded store's locks: each poll waits for the container's pending writes.
    locks: Option<Arc<embedded::locks::Locks>>,
}

impl ChangeFeed {
    /// One page: the documents changed in one feed range since its last poll (often none).
    async fn poll(&mut self) -> Result<Vec<Value>, StoreError> {
        let _settled = match &self.locks {
            Some(locks) => Some(locks.whole(self.container).await),
            None => None,
        };
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
        let now = embedded::unix_now();
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
        assert!(store.read::<Value>(Container::Posts, "p", "gone").await.unwrap().is_none(), "the removal was committed");
    }

    /// A request dropped while its write is being applied (the client went away): the write may
    /// be in the emulator already, so it is committed as it is there, listed for the change-feed
    /// processors, and still there after a restart.
    #[tokio::test]
    async fn a_write_whose_request_is_dropped_midway_is_committed_as_applied() {
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
            assert!(std::time::Instant::now() < deadline, "never committed");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        drop(store);
        // (The committing task may hold the data directory a moment longer.)
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

    /// A write is seen by no reader (point read, query, change-feed listing) before its commit
    /// is on disk: a crash would take it back.
    #[tokio::test]
    async fn no_reader_is_offered_a_write_before_it_is_on_disk() {
        use futures::FutureExt;
        let dir = tempfile::tempdir().unwrap();
        let disk = Arc::new(FaultyDisk::default());
        let store = Arc::new(Store::connect_with(&embedded_config(dir.path()), disk.clone()).await.unwrap());
        store.create(Container::Users, "u1", &json!({"id": "u1", "userId": "u1"})).await.unwrap();
        let before = store.changed_after(Container::Users, 0, 100).unwrap();
        assert_eq!(before.items.len(), 1);

        // A slow fsync: the next write is applied, and waits for the disk.
        let _release = embedded::database::tests::ReleaseOnDrop(disk.clone());
        disk.hold_syncs();
        let writing = tokio::spawn({
            let store = store.clone();
            async move { store.replace(Container::Users, "u1", "u1", &json!({"id": "u1", "userId": "u1", "v": 2}), None).await }
        });
        while !disk.holding() {
            tokio::task::yield_now().await;
        }
        let during = store.changed_after(Container::Users, before.through, 100).unwrap();
        assert_eq!(during, Changed { items: vec![], through: before.through }, "a crash now would lose the write");
        let mut read = Box::pin(store.read::<Value>(Container::Users, "u1", "u1"));
        assert!((&mut read).now_or_never().is_none(), "a point read waits for the commit");
        let query = QuerySpec { sql: "SELECT * FROM c".into(), parameters: vec![] };
        let mut listed =
            Box::pin(store.query_documents(Container::Users, "u1", query, PageRequest { size: 10, continuation: None }));
        assert!((&mut listed).now_or_never().is_none(), "so does a query of its partition");
        let other = store.read::<Value>(Container::Users, "u2", "u2").await.unwrap();
        assert!(other.is_none(), "another partition is read meanwhile");

        disk.release_syncs();
        writing.await.unwrap().unwrap();
        assert_eq!(read.await.unwrap().unwrap()["v"], 2, "the read sees the write once it is durable");
        assert_eq!(listed.await.unwrap().0.len(), 1);
        let after = store.changed_after(Container::Users, before.through, 100).unwrap();
        assert_eq!(after.items, vec![("u1".to_owned(), "u1".to_owned())]);
        assert!(store.is_settled(Container::Users, "u1", "u1"));
    }

    /// A refused commit (a full disk) is undone before its partition is let go: a reader
    /// waiting meanwhile sees the item as it was, and so does a restart.
    #[tokio::test]
    async fn a_reader_waiting_on_a_refused_write_sees_the_item_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let config = embedded_config(dir.path());
        let disk = Arc::new(FaultyDisk::default());
        let store = Arc::new(Store::connect_with(&config, disk.clone()).await.unwrap());
        store.create(Container::Posts, "p", &json!({"id": "p", "postId": "p", "n": 1})).await.unwrap();
        let _release = embedded::database::tests::ReleaseOnDrop(disk.clone());
        disk.hold_syncs();
        disk.fail_next_commits(1);
        let writing = tokio::spawn({
            let store = store.clone();
            async move { store.upsert(Container::Posts, "p", &json!({"id": "p", "postId": "p", "n": 2})).await }
        });
        while !disk.holding() {
            tokio::task::yield_now().await;
        }
        let reading = tokio::spawn({
            let store = store.clone();
            async move { store.read::<Value>(Container::Posts, "p", "p").await }
        });
        disk.release_syncs();
        assert!(matches!(writing.await.unwrap(), Err(StoreError::DiskFull)));
        assert_eq!(reading.await.unwrap().unwrap().unwrap()["n"], 1);
        store.upsert(Container::Posts, "p", &json!({"id": "p", "postId": "p", "n": 3})).await.unwrap();
        drop(store);
        let store = Store::connect(&config).await.unwrap();
        assert_eq!(store.read::<Value>(Container::Posts, "p", "p").await.unwrap().unwrap()["n"], 3);
    }

    /// Writes to different partitions commit together: many concurrent writes, far fewer
    /// commits than writes would be one fsync each; all of them durable.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_writes_to_different_partitions_share_commits_and_all_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let config = embedded_config(dir.path());
        let disk = Arc::new(FaultyDisk::default());
        let store = Arc::new(Store::connect_with(&config, disk.clone()).await.unwrap());
        // Held, so that every write queues up behind the first commit.
        let _release = embedded::database::tests::ReleaseOnDrop(disk.clone());
        disk.hold_syncs();
        let writes: Vec<_> = (0..64)
            .map(|n| {
                let store = store.clone();
                tokio::spawn(async move {
                    let id = format!("p{n}");
                    store.create(Container::Posts, &id, &json!({"id": id, "postId": id})).await
                })
            })
            .collect();
        while !disk.holding() {
            tokio::task::yield_now().await;
        }
        // Every other write gets applied and queued while the first commit is held: none waits
        // for another's partition.
        while store.durability.as_ref().unwrap().database.last_seq() < 64 {
            tokio::task::yield_now().await;
        }
        disk.release_syncs();
        for write in writes {
            write.await.unwrap().unwrap();
        }
        assert!(disk.commits() <= 2, "{} commits for 64 writes", disk.commits());
        drop(store);
        let store = Store::connect(&config).await.unwrap();
        for n in 0..64 {
            let id = format!("p{n}");
            assert!(store.read::<Value>(Container::Posts, &id, &id).await.unwrap().is_some(), "{id}");
        }
    }
}
