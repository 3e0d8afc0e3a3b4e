//! The store: one SDK client's containers, and every item operation on them, each bounded,
//! metered and, on the embedded store, visible only once durable. The reads and queries are
//! here, with the containers' list (`Store::on`, `Store::container`); connecting is in
//! `connect`, and the writes and their durability in `write`.

mod connect;
mod write;

use std::num::NonZeroU32;
use std::sync::Arc;

use azure_core::credentials::TokenCredential;
use azure_core::http::Etag;
use azure_data_cosmos::feed::ContinuationToken;
use azure_data_cosmos::options::{ItemWriteOptions, MaxItemCountHint, Precondition, QueryOptions};
use azure_data_cosmos::{ContainerClient, CosmosClient, FeedScope, Query};
use futures::TryStreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::config::Config;

use super::embedded::{self, Durability};
use super::error::StoreError;
use super::items::{Page, PageRequest, QuerySpec, Versioned, WriteOp};
use super::schema::Container;
use super::sdk::{bounded, document_id, metered, response_charge, to_document};
use super::{Meter, Scope};

/// The database, reached through one SDK client.
pub struct Store {
    pub(super) users: ContainerClient,
    pub(super) posts: ContainerClient,
    pub(super) feed: ContainerClient,
    pub(super) tags: ContainerClient,
    pub(super) words: ContainerClient,
    pub(super) leases: ContainerClient,
    pub(super) database: String,
    /// Present on the embedded store: every acknowledged write is also committed to its
    /// database, and visible only once it is.
    pub(super) durability: Option<Arc<Durability>>,
    /// The Entra ID credential the client signs in with, shared with the server-side script
    /// executor so both use one token cache.
    pub(super) credential: Option<Arc<dyn TokenCredential>>,
}

impl Store {
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
                    StoreError::sdk(
                        format!(
                            "container {}/{} is not reachable",
                            config.database,
                            container.name()
                        ),
                        error,
                    )
                })
            }
        };
        Ok(Store {
            users: open(Container::Users).await?,
            posts: open(Container::Posts).await?,
            feed: open(Container::Feed).await?,
            tags: open(Container::Tags).await?,
            words: open(Container::Words).await?,
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
    pub fn partition_probe(
        &self,
    ) -> Option<impl Fn(Container, &str) -> usize + Send + Sync + 'static + use<>> {
        let locks = self.durability.as_ref()?.locks().clone();
        Some(move |container, partition_key: &str| {
            locks.holders_and_waiters(container, partition_key)
        })
    }

    /// [`Store::settled_partition`] for a whole container.
    pub(super) async fn settled_container(
        &self,
        container: Container,
    ) -> Option<embedded::locks::ContainerGuard> {
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
            Container::Words => &self.words,
            Container::Leases => &self.leases,
        }
    }

    /// The container's links as a server-side script sees them: its self link, by resource ids
    /// (`dbs/<rid>/colls/<rid>/`, from the container's `_self`), and its name-based link
    /// (`dbs/<database>/colls/<name>`).
    pub(crate) async fn script_links(
        &self,
        container: Container,
    ) -> Result<(String, String), StoreError> {
        let properties = bounded(self.container(container).read(None))
            .await?
            .into_model()
            .map_err(|error| StoreError::sdk("unreadable container properties", error))?;
        let self_link =
            properties.system_properties.self_link.ok_or(StoreError::NoSelfLink { container })?;
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
    pub(crate) async fn read_versioned<T: DeserializeOwned>(
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
            let item = serde_json::from_str(&row.doc)
                .map_err(|error| StoreError::json(format!("unreadable item {id:?}"), error))?;
            return Ok(Some(Versioned { item, etag: format!("\"{}\"", row.seq) }));
        }
        let response = match metered(
            Scope::partition(container, partition_key),
            client.read_item(partition_key.to_owned(), id, None),
        )
        .await
        {
            Ok(response) => response,
            Err(StoreError::NotFound) => return Ok(None),
            Err(other) => return Err(other),
        };
        let etag = response.headers().etag().map(ToString::to_string).unwrap_or_default();
        let item = response
            .into_model::<T>()
            .map_err(|error| StoreError::sdk(format!("unreadable item {id:?}"), error))?;
        Ok(Some(Versioned { item, etag }))
    }

    /// Creates an item; [`StoreError::Conflict`] when its id exists in the partition.
    pub async fn create<T: Serialize>(
        &self,
        container: Container,
        partition_key: &str,
        item: &T,
    ) -> Result<(), StoreError> {
        let document = to_document(item)?;
        let id = document_id(&document)?;
        if self.durability.is_some() && embedded::on_disk_only(&id) {
            let create = vec![WriteOp::Create { document }];
            return self
                .execute_batch(container, partition_key, create)
                .await
                .map_err(StoreError::of_failed_operation);
        }
        self.durably(container, partition_key, vec![(id.clone(), Some(document.clone()))], async {
            metered(
                Scope::partition(container, partition_key),
                self.container(container).create_item(
                    partition_key.to_owned(),
                    &id,
                    &document,
                    None,
                ),
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
        let options = if_match.map(|etag| {
            ItemWriteOptions::default()
                .with_precondition(Precondition::if_match(Etag::from(etag.to_owned())))
        });
        self.durably(
            container,
            partition_key,
            vec![(id.to_owned(), Some(document.clone()))],
            async {
                metered(
                    Scope::partition(container, partition_key),
                    self.container(container).replace_item(
                        partition_key.to_owned(),
                        id,
                        &document,
                        options,
                    ),
                )
                .await
            },
        )
        .await
    }

    /// Creates or replaces an item.
    pub async fn upsert<T: Serialize>(
        &self,
        container: Container,
        partition_key: &str,
        item: &T,
    ) -> Result<(), StoreError> {
        let document = to_document(item)?;
        let id = document_id(&document)?;
        self.durably(container, partition_key, vec![(id.clone(), Some(document.clone()))], async {
            metered(
                Scope::partition(container, partition_key),
                self.container(container).upsert_item(
                    partition_key.to_owned(),
                    &id,
                    &document,
                    None,
                ),
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
        let (documents, continuation) =
            self.query_documents(container, partition_key, query, page).await?;
        let items = documents
            .into_iter()
            .map(serde_json::from_value)
            .collect::<Result<Vec<T>, _>>()
            .map_err(|error| {
                StoreError::json(
                    format!("a {} item does not have the expected shape", container.name()),
                    error,
                )
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
        let mut options =
            QueryOptions::default().with_max_item_count(MaxItemCountHint::Limit(size));
        let resuming = page.continuation.is_some();
        if let Some(token) = page.continuation {
            options = options.with_continuation_token(ContinuationToken::from_string(token));
        }
        let continuation_error =
            |error: StoreError| if resuming { resuming_error(error) } else { error };
        let scope = FeedScope::partition(partition_key.to_owned());
        let _settled = self.settled_partition(container, partition_key).await;
        let iterator = bounded(self.container(container).query_items::<Value>(
            sdk_query,
            scope,
            Some(options),
        ))
        .await
        .map_err(continuation_error)?;
        let mut pages = iterator.into_pages();
        let page = match bounded(pages.try_next()).await {
            Ok(page) => page,
            Err(error) => {
                Meter::record_query(Scope::partition(container, partition_key), 0.0);
                return Err(continuation_error(error));
            }
        };
        let Some(page) = page else {
            return Ok((Vec::new(), None));
        };
        Meter::record_query(
            Scope::partition(container, partition_key),
            response_charge(page.headers()),
        );
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
    /// The Entra ID credential, when the account is reached with one.
    pub(crate) fn credential(&self) -> Option<Arc<dyn TokenCredential>> {
        self.credential.clone()
    }

    /// The embedded store's own parts (its database, change index, expiries), when this is the
    /// embedded store.
    pub fn embedded(&self) -> Option<&Arc<Durability>> {
        self.durability.as_ref()
    }
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
