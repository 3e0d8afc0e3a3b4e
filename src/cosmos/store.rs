//! The store: one SDK client's containers, and every item operation on them, each bounded,
//! metered and, on the embedded store, visible only once durable.

use std::num::NonZeroU32;
use std::sync::Arc;

use azure_core::credentials::TokenCredential;
use azure_core::http::Etag;
use azure_data_cosmos::feed::ContinuationToken;
use azure_data_cosmos::options::{
    BatchDeleteOptions, BatchReplaceOptions, BatchUpsertOptions, ItemWriteOptions, MaxItemCountHint, Precondition, QueryOptions,
};
use azure_data_cosmos::{ContainerClient, CosmosClient, CosmosError, FeedScope, Query, TransactionalBatch};
use futures::TryStreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::config::{Backend, Config};

use super::embedded::{self, Durability};
use super::error::StoreError;
use super::items::{Page, PageRequest, QuerySpec, Versioned, WriteOp};
use super::schema::Container;
use super::sdk::{
    bounded, create_containers, document_id, entra_client, entra_credential, key_client, metered, response_charge, to_document,
};
use super::{Meter, Scope};

/// The database, reached through one SDK client.
pub struct Store {
    pub(super) users: ContainerClient,
    pub(super) posts: ContainerClient,
    pub(super) feed: ContainerClient,
    pub(super) tags: ContainerClient,
    pub(super) leases: ContainerClient,
    pub(super) database: String,
    /// Present on the embedded store: every acknowledged write is also committed to its
    /// database, and visible only once it is.
    pub(super) durability: Option<Arc<Durability>>,
    /// The Entra ID credential the client signs in with, shared with the server-side script
    /// executor so both use one token cache.
    pub(super) credential: Option<Arc<dyn TokenCredential>>,
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
    /// The write's request records, which the emulator never holds: committed with the rest,
    /// if the emulator applied it.
    on_disk: &'a [(String, Option<Value>)],
    guard: Option<embedded::locks::PartitionGuard>,
}

impl Drop for DroppedMidway<'_> {
    fn drop(&mut self) {
        let Some(guard) = self.guard.take() else { return };
        let (durability, container, partition_key) = (self.durability.clone(), self.container, self.partition_key.to_owned());
        let ids = self.records.iter().map(|(id, _)| id.clone()).collect();
        let on_disk = self.on_disk.to_vec();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(durability.commit_as_is(container, partition_key, ids, on_disk, guard));
        }
    }
}

impl Store {
    /// Connects to the backend `config` names, creating the database and containers first when
    /// `config.create_containers` is set (always, on the embedded store).
    pub async fn connect(config: &Config) -> Result<Store, StoreError> {
        let other = |error: CosmosError| StoreError::sdk("cannot start the embedded store's emulator", error);
        let mut credential_for_scripts = None;
        let client = match &config.backend {
            #[cfg(feature = "embedded")]
            Backend::Embedded { data_dir } => {
                return Self::connect_embedded(
                    config,
                    data_dir,
                    embedded::database::Opening::Serve,
                    Arc::new(embedded::database::NoFaults),
                    Default::default(),
                )
                .await;
            }
            #[cfg(not(feature = "embedded"))]
            Backend::Embedded { .. } => return Err(StoreError::NoEmbeddedStore),
            Backend::ConnectionString(text) => key_client(text).await.map_err(other)?,
            Backend::Endpoint { endpoint, client_id } => {
                let credential = entra_credential(client_id.as_deref())?;
                credential_for_scripts = Some(credential.clone());
                entra_client(endpoint, credential).await?
            }
        };
        if config.create_containers {
            create_containers(&client, &config.database).await?;
        }
        Self::on(&client, config, credential_for_scripts).await
    }

    /// [`Store::connect`] on the embedded store, with faults injected into its commits (`disk`)
    /// and between the SDK and its emulator (`sdk`).
    #[cfg(feature = "test-support")]
    pub(crate) async fn connect_with(
        config: &Config,
        disk: Arc<dyn embedded::database::Faults>,
        sdk: embedded::emulator::SdkFaults,
    ) -> Result<Store, StoreError> {
        match &config.backend {
            Backend::Embedded { data_dir } => {
                Self::connect_embedded(config, data_dir, embedded::database::Opening::Serve, disk, sdk).await
            }
            _ => Err(StoreError::NotEmbedded { what: "injecting faults" }),
        }
    }

    /// The embedded store in `data_dir` for a repair that has made its rows whole
    /// ([`crate::cosmos::repair_rows`]): opened as [`Store::connect`] does, but while the repair is
    /// marked unfinished, which refuses any other start.
    #[cfg(feature = "embedded")]
    pub(crate) async fn connect_for_repair(config: &Config, data_dir: &std::path::Path) -> Result<Store, StoreError> {
        let (opening, disk) = (embedded::database::Opening::Repair, Arc::new(embedded::database::NoFaults));
        Self::connect_embedded(config, data_dir, opening, disk, Default::default()).await
    }

    /// The embedded store whose data is in `data_dir`: its database opened, the emulator loaded
    /// from it (with the containers, created always), and every write committed to it from here
    /// on, through `disk`; the SDK reaches the emulator through `sdk` (the tests' faults).
    #[cfg(feature = "embedded")]
    async fn connect_embedded(
        config: &Config,
        data_dir: &std::path::Path,
        opening: embedded::database::Opening,
        disk: Arc<dyn embedded::database::Faults>,
        sdk: embedded::emulator::SdkFaults,
    ) -> Result<Store, StoreError> {
        let other = |error: CosmosError| StoreError::sdk("cannot start the embedded store's emulator", error);
        let (database, connection) = embedded::open(data_dir, opening)?;
        let (client, own, emulator) = embedded::emulator::client(sdk).await.map_err(other)?;
        embedded::emulator::create_containers(&emulator, &own, &config.database).await.map_err(other)?;
        let (changes, expiries, connection) =
            embedded::emulator::load(&emulator, &config.database, &database, connection).await?;
        // The load read every row: what it counted must be what the commits recorded.
        database.check_loaded(&connection)?;
        let store = Self::on(&client, config, None).await?;
        let own = Self::on(&own, config, None).await?;
        let containers = Container::ALL.into_iter().map(|container| (container, own.container(container).clone())).collect();
        let durability = Durability::start(database, connection, disk, changes, expiries, containers)?;
        Ok(Store { durability: Some(Arc::new(durability)), ..store })
    }

    /// The store on `client`: the containers of `config.database`, each reached.
    async fn on(
        client: &CosmosClient,
        config: &Config,
        credential: Option<Arc<dyn TokenCredential>>,
    ) -> Result<Store, StoreError> {
        let database = client.database_client(&config.database);
        let open = |container: Container| {
            let database = &database;
            async move {
                database.container_client(container.name(), None).await.map_err(|error| {
                    StoreError::sdk(format!("container {}/{} is not reachable", config.database, container.name()), error)
                })
            }
        };
        Ok(Store {
            users: open(Container::Users).await?,
            posts: open(Container::Posts).await?,
            feed: open(Container::Feed).await?,
            tags: open(Container::Tags).await?,
            leases: open(Container::Leases).await?,
            database: config.database.clone(),
            durability: None,
            credential,
        })
    }

    /// On the embedded store, waits until no write to the partition is pending and keeps new
    /// ones out until the guard drops: a read sees durable writes only.
    pub(super) async fn settled_partition(
        &self,
        container: Container,
        partition_key: &str,
    ) -> Option<embedded::locks::PartitionGuard> {
        match &self.durability {
            Some(durability) => Some(durability.locks().read(container, partition_key).await),
            None => None,
        }
    }

    /// For the tests: a probe that counts who holds or waits for a partition of the embedded
    /// store (`None` on other backends), which outlives the store's move into the blog's state.
    #[cfg(any(test, feature = "test-support"))]
    pub fn partition_probe(&self) -> Option<impl Fn(Container, &str) -> usize + Send + Sync + 'static + use<>> {
        let locks = self.durability.as_ref()?.locks().clone();
        Some(move |container, partition_key: &str| locks.holders_and_waiters(container, partition_key))
    }

    /// [`Store::settled_partition`] for a whole container.
    pub(super) async fn settled_container(&self, container: Container) -> Option<embedded::locks::ContainerGuard> {
        match &self.durability {
            Some(durability) => Some(durability.locks().whole(container).await),
            None => None,
        }
    }

    pub(super) fn container(&self, container: Container) -> &ContainerClient {
        match container {
            Container::Users => &self.users,
            Container::Posts => &self.posts,
            Container::Feed => &self.feed,
            Container::Tags => &self.tags,
            Container::Leases => &self.leases,
        }
    }

    /// The container's links as a server-side script sees them: its self link, by resource ids
    /// (`dbs/<rid>/colls/<rid>/`, from the container's `_self`), and its name-based link
    /// (`dbs/<database>/colls/<name>`).
    pub(crate) async fn script_links(&self, container: Container) -> Result<(String, String), StoreError> {
        let properties = bounded(self.container(container).read(None))
            .await?
            .into_model()
            .map_err(|error| StoreError::sdk("unreadable container properties", error))?;
        let self_link = properties.system_properties.self_link.ok_or(StoreError::NoSelfLink { container })?;
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
        if let Some(durability) = &self.durability
            && embedded::on_disk_only(id)
        {
            // A request record, read from the database (see `embedded`): as a point read would
            // answer, its write number for an etag.
            Meter::record(Scope::partition(container, partition_key), 1.0);
            let Some(row) = durability.request_record(container, partition_key, id).await? else {
                return Ok(None);
            };
            let item =
                serde_json::from_str(&row.doc).map_err(|error| StoreError::json(format!("unreadable item {id:?}"), error))?;
            return Ok(Some(Versioned { item, etag: format!("\"{}\"", row.seq) }));
        }
        let response =
            match metered(Scope::partition(container, partition_key), client.read_item(partition_key.to_owned(), id, None)).await
            {
                Ok(response) => response,
                Err(StoreError::NotFound) => return Ok(None),
                Err(other) => return Err(other),
            };
        let etag = response.headers().etag().map(ToString::to_string).unwrap_or_default();
        let item = response.into_model::<T>().map_err(|error| StoreError::sdk(format!("unreadable item {id:?}"), error))?;
        Ok(Some(Versioned { item, etag }))
    }

    /// Creates an item; [`StoreError::Conflict`] when its id exists in the partition.
    pub async fn create<T: Serialize>(&self, container: Container, partition_key: &str, item: &T) -> Result<(), StoreError> {
        let document = to_document(item)?;
        let id = document_id(&document)?;
        if self.durability.is_some() && embedded::on_disk_only(&id) {
            let create = vec![WriteOp::Create { document }];
            return self.execute_batch(container, partition_key, create).await.map_err(StoreError::of_failed_operation);
        }
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
    pub(crate) async fn query_page<T: DeserializeOwned + Send + 'static>(
        &self,
        container: Container,
        partition_key: &str,
        query: QuerySpec,
        page: PageRequest,
    ) -> Result<Page<T>, StoreError> {
        let (documents, continuation) = self.query_documents(container, partition_key, query, page).await?;
        let items =
            documents.into_iter().map(serde_json::from_value).collect::<Result<Vec<T>, _>>().map_err(|error| {
                StoreError::json(format!("a {} item does not have the expected shape", container.name()), error)
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
            sdk_query = sdk_query
                .with_parameter(name.into_owned(), value)
                .map_err(|error| StoreError::sdk("a query parameter", error))?;
        }
        let size = NonZeroU32::new(page.size.max(1)).expect("at least one");
        let mut options = QueryOptions::default().with_max_item_count(MaxItemCountHint::Limit(size));
        let resuming = page.continuation.is_some();
        if let Some(token) = page.continuation {
            options = options.with_continuation_token(ContinuationToken::from_string(token));
        }
        let continuation_error = |error: StoreError| if resuming { resuming_error(error) } else { error };
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
            Some(_) => Some(
                pages
                    .to_continuation_token()
                    .map_err(|error| StoreError::sdk("the next page's token", error))?
                    .as_str()
                    .to_owned(),
            ),
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
            other => self.execute_batch(container, partition_key, vec![other]).await.map_err(StoreError::of_failed_operation),
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
        if let Some(durability) = &self.durability
            && operations.iter().any(|operation| operation_id(operation).is_some_and(embedded::on_disk_only))
        {
            return self.batch_with_records(durability, container, partition_key, operations).await;
        }
        let (records, batch) = sdk_batch(partition_key, operations)?;
        self.durably(container, partition_key, records, self.run_batch(container, partition_key, batch)).await
    }

    /// Runs a transactional batch in the SDK's client (the account, or the emulator).
    async fn run_batch(&self, container: Container, partition_key: &str, batch: TransactionalBatch) -> Result<(), StoreError> {
        let response = metered(
            Scope::partition(container, partition_key),
            self.container(container).execute_transactional_batch(batch, None),
        )
        .await?;
        let results = response.into_model().map_err(|error| StoreError::sdk("a transactional batch's answer", error))?;
        // A failed batch is an `Ok` response (207) whose operations say what failed.
        if results.results().iter().all(|result| result.is_success()) {
            Ok(())
        } else {
            let statuses = results.results().iter().map(|result| result.status_code()).collect();
            Err(StoreError::BatchFailed { statuses })
        }
    }

    /// [`Store::execute_batch`] on the embedded store, for a batch that creates request records,
    /// which the database alone keeps (see `embedded`): under the partition's lock, a record
    /// that is there already fails the batch as Cosmos DB would (409 for it, 424 for the rest,
    /// as the SDK's emulator answers a failed batch: `azure_data_cosmos_driver` 1.0.0,
    /// `in_memory_emulator/operations.rs`, `failed_batch_results`), before anything is applied;
    /// else the other operations go to the emulator, and the records are committed with them,
    /// in one transaction.
    async fn batch_with_records(
        &self,
        durability: &Arc<Durability>,
        container: Container,
        partition_key: &str,
        operations: Vec<WriteOp>,
    ) -> Result<(), StoreError> {
        let total = operations.len();
        let (mut on_disk, mut positions, mut rest) = (Vec::new(), Vec::new(), Vec::new());
        for (index, operation) in operations.into_iter().enumerate() {
            let record = operation_id(&operation).filter(|id| embedded::on_disk_only(id)).map(str::to_owned);
            match (record, operation) {
                (Some(id), WriteOp::Create { document }) => on_disk.push((index, id, Some(document))),
                (Some(id), _) => {
                    return Err(StoreError::RecordNotCreated { id });
                }
                (None, other) => {
                    positions.push(index);
                    rest.push(other);
                }
            }
        }
        let guard = durability.locks().write(container, partition_key).await;
        for (index, id, _) in &on_disk {
            if durability.request_record(container, partition_key, id).await?.is_some() {
                let statuses = (0..total).map(|at| if at == *index { 409 } else { 424 }).collect();
                return Err(StoreError::BatchFailed { statuses });
            }
        }
        let on_disk: Vec<_> = on_disk.into_iter().map(|(_, id, document)| (id, document)).collect();
        if rest.is_empty() {
            return durability.commit(container, partition_key, on_disk, guard).await;
        }
        let (records, batch) = sdk_batch(partition_key, rest)?;
        let write = self.run_batch(container, partition_key, batch);
        match self.durably_holding(durability, guard, container, partition_key, records, on_disk, write).await {
            // The statuses of the operations the emulator ran, at their places in the batch.
            Err(StoreError::BatchFailed { statuses: ran }) => {
                let mut statuses = vec![424; total];
                for (index, status) in positions.into_iter().zip(ran) {
                    statuses[index] = status;
                }
                Err(StoreError::BatchFailed { statuses })
            }
            other => other,
        }
    }

    /// Runs a write; on the embedded store, also commits what it left (`records`: id and
    /// document, `None` for a deletion) to the database before acknowledging it, holding the
    /// partition from before the write until then, so no one sees it before it is durable.
    pub(super) async fn durably<R>(
        &self,
        container: Container,
        partition_key: &str,
        records: Vec<(String, Option<Value>)>,
        write: impl Future<Output = Result<R, StoreError>>,
    ) -> Result<(), StoreError> {
        let Some(durability) = &self.durability else {
            return write.await.map(drop);
        };
        let guard = durability.locks().write(container, partition_key).await;
        self.durably_holding(durability, guard, container, partition_key, records, Vec::new(), write).await
    }

    /// [`Store::durably`] on the embedded store, its partition's `guard` taken; `on_disk`, the
    /// write's request records, committed with its `records` (see `embedded`).
    #[allow(clippy::too_many_arguments)]
    async fn durably_holding<R>(
        &self,
        durability: &Arc<Durability>,
        guard: embedded::locks::PartitionGuard,
        container: Container,
        partition_key: &str,
        mut records: Vec<(String, Option<Value>)>,
        on_disk: Vec<(String, Option<Value>)>,
        write: impl Future<Output = Result<R, StoreError>>,
    ) -> Result<(), StoreError> {
        let mut dropped_midway =
            DroppedMidway { durability, container, partition_key, records: &records, on_disk: &on_disk, guard: Some(guard) };
        let written = write.await;
        let guard = dropped_midway.guard.take().expect("taken only here");
        drop(dropped_midway);
        if let Err(error) = written {
            // Refused, which nearly always applied nothing; but a write whose answer was lost
            // and that the SDK sent again is refused as a duplicate of itself, applied.
            let ids = records.into_iter().map(|(id, _)| id).collect();
            durability.clone().commit_as_is(container, partition_key.to_owned(), ids, on_disk, guard).await;
            return Err(error);
        }
        records.extend(on_disk);
        durability.commit(container, partition_key, records, guard).await
    }

    /// The Entra ID credential, when the account is reached with one.
    pub fn credential(&self) -> Option<Arc<dyn TokenCredential>> {
        self.credential.clone()
    }

    /// The embedded store's own parts (its database, change index, expiries), when this is the
    /// embedded store.
    pub fn embedded(&self) -> Option<&Arc<Durability>> {
        self.durability.as_ref()
    }
}

/// The id of the item `operation` writes (`None`: a document without one, which the SDK refuses).
fn operation_id(operation: &WriteOp) -> Option<&str> {
    match operation {
        WriteOp::Create { document } | WriteOp::Upsert { document, .. } => document.get("id")?.as_str(),
        WriteOp::Replace { id, .. } | WriteOp::Delete { id, .. } => Some(id),
    }
}

/// `operations` as the SDK's transactional batch, with what each leaves (id and document,
/// `None` for a deletion), for the embedded store's commit.
#[allow(clippy::type_complexity)]
fn sdk_batch(
    partition_key: &str,
    operations: Vec<WriteOp>,
) -> Result<(Vec<(String, Option<Value>)>, TransactionalBatch), StoreError> {
    let mut records = Vec::with_capacity(operations.len());
    let mut batch = TransactionalBatch::new(partition_key.to_owned());
    let sdk_error = |error: CosmosError| StoreError::sdk("a transactional batch", error);
    let precondition = |etag: &Option<String>| etag.as_ref().map(|etag| Precondition::if_match(Etag::from(etag.clone())));
    for operation in operations {
        batch = match operation {
            WriteOp::Create { document } => {
                records.push((document_id(&document)?, Some(document.clone())));
                batch.create_item(document).map_err(sdk_error)?
            }
            WriteOp::Replace { id, document, if_match } => {
                records.push((id.clone(), Some(document.clone())));
                let options = precondition(&if_match).map(|p| BatchReplaceOptions::default().with_precondition(p));
                batch.replace_item(id, document, options).map_err(sdk_error)?
            }
            WriteOp::Upsert { document, if_match } => {
                records.push((document_id(&document)?, Some(document.clone())));
                let options = precondition(&if_match).map(|p| BatchUpsertOptions::default().with_precondition(p));
                batch.upsert_item(document, options).map_err(sdk_error)?
            }
            WriteOp::Delete { id, if_match } => {
                records.push((id.clone(), None));
                let options = precondition(&if_match).map(|p| BatchDeleteOptions::default().with_precondition(p));
                batch.delete_item(id, options)
            }
        };
    }
    Ok((records, batch))
}

/// What a failure of a query resumed from a continuation token means. Cosmos DB answers 400 to
/// a token it cannot resume from (another query's, another page size's, or altered), and that
/// is the caller's to mend: said in our words, the database's only in the log. Every other
/// failure is the database's and keeps its kind, so a throttled or timed-out page is a passing
/// failure (503) and anything else an internal one, never the caller's token.
pub(crate) fn resuming_error(error: StoreError) -> StoreError {
    match error {
        StoreError::BadRequest(cause) => {
            tracing::debug!(%cause, "Cosmos DB refused a continuation token");
            StoreError::BadContinuation(
                "the database cannot resume the list from it (it belongs to another list or page size, or was altered)".into(),
            )
        }
        other => other,
    }
}
