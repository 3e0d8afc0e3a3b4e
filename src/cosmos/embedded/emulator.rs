//! The embedded store's client: the SDK's in-memory emulator (feature
//! `__internal_in_memory_emulator`) behind the ordinary `CosmosClient`, so the whole SDK
//! pipeline runs and only the network is replaced. The emulator is internal to the SDK and not
//! a public contract: this file is the only one that touches it, the SDK version is pinned
//! exactly, and the deployed build (`--no-default-features`) does not contain it.

use std::sync::Arc;

use azure_core::credentials::Secret;
use azure_core::http::headers::HeaderName;
use azure_core::http::{Method, Request, Url};
use azure_data_cosmos::options::Region;
use azure_data_cosmos::{
    AccountReference, CosmosClient, CosmosClientBuilder, CosmosRuntimeBuilder, RoutingStrategy,
};
use azure_data_cosmos_driver::in_memory_emulator::{
    ConsistencyLevel, ContainerConfig, EmulatorStore, InMemoryEmulatorHttpClient,
    VirtualAccountConfig, VirtualRegion,
};
use azure_data_cosmos_driver::models::PartitionKeyDefinition;

use super::Expiries;
use super::database::{Database, Row};
use crate::cosmos::changes::ChangeIndex;
use crate::cosmos::{Container, OpenError, StoreError};

/// The emulator's made-up account; nothing is ever sent there.
const ENDPOINT: &str = "https://blog.emulator.local";

/// How many physical partitions each embedded container has (the emulator's default is 4). The
/// emulator runs a transactional batch on a copy of the batch's whole physical partition
/// (`in_memory_emulator/operations.rs`, `handle_batch`). So a batch costs time in proportion to
/// the items sharing that partition; in `posts` every comment and like is one (the stored
/// procedures commit through a batch here). More partitions make the copy smaller, but each
/// request also costs more. The emulator finds a partition by walking the list of them, and a
/// restart loads each item that way. And a query across `posts` asks every one of them.
/// Measured with `cargo bench --bench scale` at 20,000 and 100,000 items (BENCHMARKS.md), C3/s
/// as the data grows:
///
/// | `posts` partitions | 20k items | 100k items | restart at 100k |
/// | ---: | ---: | ---: | ---: |
/// | 64 | 403 | 148 | 1.14 s |
/// | 256 | 451 | 259 | 1.45 s |
/// | 512 | 402 | 272 | 1.68 s |
/// | 1024 | 312 | 220 | 1.80 s |
///
/// 512 is the fastest at 100,000 items and close to the fastest at 20,000. `words`, the search
/// index, has as many: each change of a common word is a batch, and at 10,000 posts it holds
/// about 200,000 items (BENCHMARKS.md, "Search"). The other containers run no batch of more
/// than a few items (`feed` is one logical partition of at most 100), so they keep 64. Cosmos
/// DB itself does not work this way.
fn partitions(container: Container) -> u32 {
    match container {
        Container::Posts | Container::Words => 512,
        Container::Users | Container::Feed | Container::Tags | Container::Leases => 64,
    }
}

/// The in-memory emulator under the SDK's client.
#[derive(Clone)]
pub(crate) struct Emulator(Arc<InMemoryEmulatorHttpClient>, pub(crate) Arc<BatchArrivals>);

/// The transactional batches' requests that reached the emulator, by the number in their item's
/// id. The store sends each batch's request to the emulator as a one-item batch in a container
/// of its own ([`BATCHES`]), and runs the batch itself once for each time its request arrived
/// (`batch.rs`): so the SDK's faults and its own resending meet a batch as one request, as on
/// Azure. The emulator calls this for every request it receives, before handling it
/// (`RequestObserver`, `in_memory_emulator/client.rs`, `execute_request`).
#[derive(Debug, Default)]
pub(crate) struct BatchArrivals(std::sync::Mutex<std::collections::HashMap<u64, u32>>);

/// Where the batches' requests go (the application's client of [`BATCHES`]), and what counts
/// their arrivals.
pub(crate) struct BatchRequests {
    pub(crate) container: azure_data_cosmos::ContainerClient,
    pub(crate) arrivals: Arc<BatchArrivals>,
}

/// What a batch's request's item id starts with, then its number; also the partition key of
/// every such request.
pub(crate) const BATCH_MARK: &str = "embedded-batch~";

/// The emulator's container the batches' requests go to: each writes an item and deletes it
/// again, in one logical partition that holds nothing between requests, so that the emulator's
/// batch copies next to nothing (it copies the request's whole physical partition,
/// `handle_batch`; a key a request would leave an empty entry behind each). Never in the
/// database, nor in Cosmos DB.
pub(crate) const BATCHES: &str = "embedded-batches";

impl BatchArrivals {
    /// How many times the batch `number`'s request arrived; forgets it.
    pub(crate) fn take(&self, number: u64) -> u32 {
        self.0.lock().expect("never poisoned").remove(&number).unwrap_or(0)
    }
}

impl azure_data_cosmos_driver::in_memory_emulator::RequestObserver for BatchArrivals {
    fn on_request(&self, request: &Request) {
        static IS_BATCH: HeaderName = HeaderName::from_static("x-ms-cosmos-is-batch-request");
        let headers = request.headers();
        if !headers.get_optional_str(&IS_BATCH).is_some_and(|is| is.eq_ignore_ascii_case("true")) {
            return;
        }
        // Its item's id, in the body: `"id":"embedded-batch~12"`.
        let azure_core::http::Body::Bytes(body) = request.body() else { return };
        let Some(at) = body.windows(BATCH_MARK.len()).position(|at| at == BATCH_MARK.as_bytes())
        else {
            return;
        };
        let digits: String = body[at + BATCH_MARK.len()..]
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .map(|&byte| char::from(byte))
            .collect();
        if let Ok(number) = digits.parse::<u64>() {
            *self.0.lock().expect("never poisoned").entry(number).or_default() += 1;
        }
    }
}

/// How many items start-up reads from the database at once, and how many such pages load into
/// the emulator at the same time.
const LOAD_PAGE: usize = 2048;
const PAGES_LOADING: usize = 4;

/// Faults the SDK injects between its client and the emulator, below its own retries (its
/// `fault_injection` feature): the tests' way to make the database throttle, time out or lose an
/// answer. None outside the tests.
#[cfg(feature = "test-support")]
#[derive(Default)]
pub struct SdkFaults {
    /// The rules, evaluated in order on every request the SDK sends.
    pub rules: Vec<Arc<azure_data_cosmos::fault_injection::FaultInjectionRule>>,
    /// How many times the SDK retries a 429 by itself (`None`: its default for item operations,
    /// 18, within 270 s, `azure_data_cosmos_driver` `ThrottlingRetryOptions`):
    /// 0 shows at once what the handler does once the SDK's retries are spent.
    pub throttle_retries: Option<u32>,
}
/// Faults the SDK injects: none outside the tests (feature `test-support`). A unit struct
/// rather than `()`, so that passing "no faults" reads as such (clippy's `unit_arg`).
#[cfg(not(feature = "test-support"))]
#[derive(Default)]
pub(crate) struct SdkFaults;

/// The SDK's clients on a new in-memory emulator, and the emulator itself. One client is the
/// one the application's requests go through (through `faults`, in a test that injects them).
/// The other is the store's own, which never meets an injected fault. With it the store settles
/// its file to what the emulator holds (`Durability::commit_as_is`, `undo`) and applies a batch
/// whose request arrived (`batch.rs`). A fault there would leave the file behind the emulator,
/// or a batch half applied, which no fault on Azure can do.
pub(crate) async fn client(
    faults: SdkFaults,
) -> azure_data_cosmos::Result<(CosmosClient, CosmosClient, Emulator)> {
    let url = Url::parse(ENDPOINT).expect("a valid URL");
    // Strong, because that is what one in-memory replica is: every read sees every acknowledged
    // write. Under the emulator's default, Session, the SDK sends every request a token of
    // every partition it has written (`SessionContainer::build_composite_token` in the driver).
    // The emulator parses it: 8 % of the handler's CPU at 512 partitions, growing with them.
    let account = VirtualAccountConfig::new(vec![VirtualRegion::new("East US", url)])?
        .with_consistency(ConsistencyLevel::Strong);
    let arrivals = Arc::new(BatchArrivals::default());
    let emulator =
        Arc::new(InMemoryEmulatorHttpClient::new(account).with_request_observer(arrivals.clone()));
    // The emulator checks that requests are signed, not with which key.
    let account =
        AccountReference::with_authentication_key(ENDPOINT.parse()?, Secret::new("ZW1iZWRkZWQ="));
    let build = async |runtime: CosmosRuntimeBuilder| {
        let runtime = runtime.build().await?;
        CosmosClientBuilder::new()
            .with_runtime(runtime)
            .build(account.clone(), RoutingStrategy::ProximityTo(Region::EAST_US))
            .await
    };
    #[cfg(feature = "test-support")]
    let faulty = !faults.rules.is_empty();
    #[cfg(feature = "test-support")]
    let runtime = {
        use azure_data_cosmos::options::{OperationOptionsBuilder, ThrottlingRetryOptionsBuilder};
        let transport = if faults.rules.is_empty() {
            emulator.runtime_builder()
        } else {
            emulator.runtime_builder_with_fault_rules(faults.rules)
        };
        let mut runtime = CosmosRuntimeBuilder::from(transport);
        if let Some(retries) = faults.throttle_retries {
            let throttling =
                ThrottlingRetryOptionsBuilder::new().with_max_retry_count(retries).build();
            let options =
                OperationOptionsBuilder::new().with_throttling_retry_options(throttling).build();
            runtime = runtime.with_default_operation_options(options);
        }
        runtime
    };
    #[cfg(not(feature = "test-support"))]
    let (runtime, faulty) = {
        let SdkFaults = faults;
        (CosmosRuntimeBuilder::from(emulator.runtime_builder()), false)
    };
    let client = build(runtime).await?;
    let own = if faulty {
        build(CosmosRuntimeBuilder::from(emulator.runtime_builder())).await?
    } else {
        client.clone()
    };
    Ok((client, own, Emulator(emulator, arrivals)))
}

/// Creates the database and the containers with their [`partitions`] (only
/// the emulator's own interface can ask for that), then gives them their indexing policies
/// through the SDK. It replaces `create_containers` on the embedded store.
pub(crate) async fn create_containers(
    emulator: &Emulator,
    client: &CosmosClient,
    database: &str,
) -> azure_data_cosmos::Result<()> {
    let emulator: Arc<EmulatorStore> = emulator.0.store();
    emulator.create_database(database);
    let batches = PartitionKeyDefinition::new(vec!["/key".into()]);
    let config = ContainerConfig::new().with_partition_count(1).build()?;
    emulator.create_container_with_config(database, BATCHES, batches, config);
    for container in Container::ALL {
        let partition_key =
            PartitionKeyDefinition::new(vec![container.partition_key_path().into()]);
        let config = ContainerConfig::new().with_partition_count(partitions(container)).build()?;
        emulator.create_container_with_config(database, container.name(), partition_key, config);
        let created =
            client.database_client(database).container_client(container.name(), None).await?;
        created.replace(container.properties(), None).await?;
    }
    Ok(())
}

/// Loads every item of `database` into the emulator, and returns the change index and the
/// expiries they make. The emulator has no bulk load: each item is an upsert (see [`restore`]),
/// and pages of them load concurrently, the emulator locking only the physical partition each
/// one goes to (`in_memory_emulator/operations.rs`); the next page is read from the database
/// meanwhile.
pub(crate) async fn load(
    emulator: &Emulator,
    database_name: &str,
    database: &Database,
    // Owned, and handed back: a `&Connection` held across the awaits below would make the whole
    // start-up future not `Send` (a connection is not `Sync`), so that `tokio::spawn(Blog::open(..))`
    // would not compile.
    connection: rusqlite::Connection,
) -> Result<(ChangeIndex, Expiries, rusqlite::Connection), OpenError> {
    let mut changes = ChangeIndex::default();
    let mut expiries = Expiries::default();
    let mut loading = tokio::task::JoinSet::new();
    let mut last: Option<Row> = None;
    let (mut loaded, mut on_disk) = (0, 0);
    loop {
        let mut page = database.page(&connection, last.as_ref(), LOAD_PAGE)?;
        let Some(final_row) = page.last() else { break };
        last = Some(Row { doc: String::new(), ..final_row.clone() });
        // The request records stay in the database (see `embedded`).
        let before = page.len();
        page.retain(|row| !super::on_disk_only(&row.id));
        on_disk += before - page.len();
        loaded += page.len();
        for row in &page {
            changes.record(row.container, &row.partition_key, &row.id, row.seq, true);
            if row.expires.is_some() {
                expiries
                    .set((row.container, row.partition_key.clone(), row.id.clone()), row.expires);
            }
        }
        let (emulator, database_name, path) =
            (emulator.clone(), database_name.to_owned(), database.path().to_owned());
        loading.spawn(async move {
            for row in page {
                restore(&emulator, &database_name, row.container, &row.partition_key, &row.doc)
                    .await
                    .map_err(|refusal| OpenError::Unloadable {
                        path: path.clone(),
                        container: row.container,
                        partition_key: row.partition_key.clone(),
                        id: row.id.clone(),
                        refusal: Box::new(refusal),
                    })?;
            }
            Ok::<_, OpenError>(())
        });
        while loading.len() >= PAGES_LOADING {
            join(loading.join_next().await)?;
        }
    }
    while let Some(done) = loading.join_next().await {
        join(Some(done))?;
    }
    if loaded + on_disk > 0 {
        tracing::info!(
            items = loaded,
            request_records = on_disk,
            "embedded store loaded from its database"
        );
    }
    Ok((changes, expiries, connection))
}

fn join(
    done: Option<Result<Result<(), OpenError>, tokio::task::JoinError>>,
) -> Result<(), OpenError> {
    match done {
        None => Ok(()),
        Some(Ok(outcome)) => outcome,
        Some(Err(source)) => {
            Err(StoreError::TaskDied { work: "the load of the embedded store", source }.into())
        }
    }
}

/// Puts a stored item back at start-up: an upsert handed to the emulator as the SDK would
/// send it over the network, without the SDK's pipeline (routing, session tokens, retries,
/// diagnostics), which took half of the start-up time. The item was written through the SDK
/// before, so the pipeline has nothing left to check; the emulator still checks the item.
pub(crate) async fn restore(
    emulator: &Emulator,
    database: &str,
    container: Container,
    partition_key: &str,
    document: &str,
) -> Result<(), RestoreError> {
    let mut url = Url::parse(ENDPOINT).expect("a valid URL");
    url.path_segments_mut().expect("a base URL").extend([
        "dbs",
        database,
        "colls",
        container.name(),
        "docs",
    ]);
    let mut request = Request::new(url, Method::Post);
    request.insert_header("x-ms-documentdb-is-upsert", "true");
    request.insert_header(
        "x-ms-documentdb-partitionkey",
        serde_json::json!([partition_key]).to_string(),
    );
    // No body in the answer: nothing reads it.
    request.insert_header("prefer", "return=minimal");
    request.set_body(document.as_bytes().to_vec());
    let response = emulator.0.execute_request(&request).await.map_err(RestoreError::Request)?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let body = response.into_body().collect().await.unwrap_or_default();
    Err(RestoreError::Refused {
        status: u16::from(status),
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// Why the emulator did not take back a stored item: the cause of [`OpenError::Unloadable`].
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// It failed to take the request.
    #[error("the emulator failed to take the item")]
    Request(#[source] azure_data_cosmos::CosmosError),
    /// It answered with an error.
    #[error("the emulator answered {status}: {body}")]
    Refused {
        /// The status it answered.
        status: u16,
        /// What it said.
        body: String,
    },
}
