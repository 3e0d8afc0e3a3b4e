//! The blogging platform of Microsoft's article "Model and partition data on Azure Cosmos DB
//! using a real-world example", on the article's final (V3) model, as an Azure Functions custom
//! handler.
//!
//! Its modules are private; the items below the list are what the `handler` binary, the
//! benchmarks and the tests use, handed on by name at the crate root ([`Blog`], [`Config`],
//! [`connect`], the maintenance commands' steps). Inside, from the top down:
//!
//! - `http`: the HTTP functions (the JSON API, the pages, the change-feed functions' routes
//!   under the host), thin adapters over `app`.
//! - `changefeed`: the change-feed functions that keep the denormalized copies true, as the
//!   host invokes them or as the local processors deliver them; [`dead_letters`] and [`lag`].
//! - `transfer`: `handler export` and `handler import`, the blog's data as JSON lines
//!   ([`export`], [`import`]); `repair`: `handler repair` and `remove` (embedded builds).
//! - `app`: the use cases (the article's commands and queries, unique usernames, the feed
//!   cache), below both.
//! - `scripts`: the article's stored procedures and trigger, run in Cosmos DB or in-process.
//! - `cosmos`: every Cosmos DB call, through the official SDK; the embedded store.
//! - `pictures`: pictures in posts, recognised, decoded within limits, stored.
//! - `model`: the items and the denormalization rules, pure functions.
//! - `config`, `logging`: the settings from the environment; where log lines go.
//! - `test_support` (feature `test-support`, tests only): a disk that fails on demand, and the
//!   places where a test stops C1 as a crash would.
//! - `testing` (hidden): the internals the tests and the benchmarks reach for.
//! - `fuzzing` (hidden): the fuzz targets' entry points, which the fuzz crate (fuzz/) and
//!   tests/fuzz_regressions.rs call.
//!
//! The commands that are `handler`'s alone (`smoke`, `cost`, the progress line) are in the
//! binary, src/bin/handler/.

// The modules are private: what the binary, the benchmarks and the tests name is handed on
// below, by name, so that everything else is `pub(crate)` at most and the compiler's
// dead-code and `unreachable_pub` checks see it (mini-redis's layout). Where a test must reach
// an internal, `testing` hands it on, hidden from the docs.
mod app;
mod changefeed;
mod config;
mod cosmos;
#[doc(hidden)]
pub mod fuzzing;
mod http;
mod logging;
mod model;
mod pictures;
#[cfg(feature = "embedded")]
mod repair;
mod scripts;
mod striped;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
mod transfer;

pub use app::AppState;
pub use changefeed::processor::{Deliveries, rebuild_copies_reporting, replay_users_reporting};
pub use changefeed::{FeedError, dead_letters, lag};
pub use config::{
    AuthMode, Backend, CONNECTION_SETTING, ChangeFeedMode, Config, DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_REQUEST_TIMEOUT, PICTURES_SETTING, PictureStorage, ScriptsMode, WriteLimitSetting,
};
#[cfg(feature = "embedded")]
pub use cosmos::ItemToRemove;
pub use cosmos::{Container, Store, StoreError};
pub use logging::{LineFormat, batched, with_causes};
#[cfg(feature = "embedded")]
pub use repair::{RepairError, repair};
pub use transfer::{ImportProgress, PartialFile, Spooled, TransferError, export, import};

/// What the tests and the benchmarks reach inside the library for, under the modules' own
/// names (`testing::cosmos::QuerySpec` is `cosmos::QuerySpec` inside): not the library's
/// surface, and hidden from its docs.
#[doc(hidden)]
pub mod testing {
    /// The use cases.
    pub mod app {
        pub use crate::app::Caller;
        pub use crate::app::feed::{FeedCache, feed_page};
        pub use crate::app::lists::ListParams;
        pub use crate::app::pictures::{ABANDONED_AFTER, sweep_abandoned_pictures};
        pub use crate::app::users::{create_user, rename_user};
    }
    /// The change-feed functions.
    pub mod changefeed {
        pub use crate::changefeed::{Function, ISOLATE_AFTER, dead_letters, lag, posts_changed};
        /// The account's processors.
        pub mod account {
            pub use crate::changefeed::account::{AccountProcessors, POSITION_ID_PREFIX};
        }
        /// The local processors.
        pub mod processor {
            pub use crate::changefeed::processor::{Deliveries, rebuild_copies, replay_users};
        }
    }
    /// The store.
    pub mod cosmos {
        pub use crate::cosmos::{Container, Meter, PageRequest, QuerySpec, RangePosition, Store, StoreError, WriteOp, queries};
    }
    /// The HTTP functions.
    pub mod http {
        pub use crate::http::error::{ApiError, ApiResult};
        pub use crate::http::openapi::ID_PATTERN;
        pub use crate::http::pages::{SENT_BEFORE, SIGNED_OUT, esc};
        pub use crate::http::{FRONT_PAGE_ROUTE, HttpFunction, is_api_route, router_path};
    }
    /// The items.
    pub mod model {
        pub use crate::model::{
            DELETED_POST_TTL_SECS, SHORT_CONTENT_CHARS, User, creation_date, new_user, usernames, validate_id,
        };
    }
    /// Pictures.
    pub mod pictures {
        pub use crate::pictures::{
            BlobStore, DirectoryStore, Kind, Limits, PictureAddress, PictureError, PictureName, PictureStore, PictureStoreError,
            Usage, prepare,
        };
    }
    /// The stored procedures and their engines.
    pub mod scripts {
        pub use crate::scripts::{
            FENCE_ID, InProcessScripts, KEYED_HELPERS, NOT_AMONG_NEWEST, PostTrigger, Script, ScriptCredential, ScriptError,
            ScriptExecutor, ServerSideScripts, StoredProcedure, engine,
        };
    }
}

use std::sync::Arc;

use changefeed::account::AccountProcessors;
use changefeed::processor::LocalProcessors;
use scripts::{InProcessScripts, ScriptCredential, ScriptExecutor, ServerSideScripts};

/// The embedded store's allocator. Its emulator copies a whole physical partition for every
/// transactional batch (C3, C4 and the other scripts) and frees it again, so the handler's
/// allocation rate grows with the data; glibc's malloc spent a growing share of the CPU in
/// `_int_malloc`, `malloc_consolidate` and `unlink_chunk` (11 % at 90k items). mimalloc took C3
/// at 100k items from 0.66x to 0.92x of its rate at 20k, restart at 100k from 5.7 s to 3.6 s, with
/// the same resident memory (BENCHMARKS.md, "The allocator"). The deployed build talks to an
/// account over HTTP, where nothing grows with the data: it keeps the system's allocator. Set
/// here, not in `main.rs`, so that the tests and the benchmarks run the handler's allocator too.
#[cfg(feature = "embedded")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Turns off the backtraces that library errors capture, unless `RUST_LIB_BACKTRACE` says
/// otherwise; panics keep theirs (`RUST_BACKTRACE`). The SDK builds an error, and with
/// `RUST_BACKTRACE=1` a backtrace, for every optional header a response lacks: on the embedded
/// store that was a fifth of the handler's CPU time under load.
///
/// # Safety
///
/// It writes the process's environment (`std::env::set_var`), which is sound only while no
/// other thread may read or write it: call it first thing in `main`, before the runtime or any
/// other thread starts. Nothing in the type system can hold a caller to that, so the function
/// is `unsafe` and each caller says why its call is sound.
pub unsafe fn quiet_library_backtraces() {
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        // SAFETY: the caller guarantees no other thread exists yet (see above).
        unsafe { std::env::set_var("RUST_LIB_BACKTRACE", "0") };
    }
}

/// Whose change-feed positions the blog is delivered from, and so the lag of which it logs each
/// minute ([`changefeed::lag`]): the local processors', or on an account under the Functions
/// host, the trigger's leases. `None` for the embedded store under the host, where nothing
/// delivers but a test playing the host.
pub fn followed(config: &Config) -> Option<changefeed::lag::Followed> {
    match (&config.backend, config.change_feed) {
        (Backend::Embedded { data_dir }, ChangeFeedMode::Local) => Some(changefeed::lag::Followed::Embedded(data_dir.clone())),
        (Backend::Embedded { .. }, ChangeFeedMode::Host) => None,
        (_, ChangeFeedMode::Local) => Some(changefeed::lag::Followed::Account),
        (_, ChangeFeedMode::Host) => Some(changefeed::lag::Followed::Trigger),
    }
}

/// A running blog: what the handlers share, and the local change-feed processors if any.
pub struct Blog {
    /// The state its handlers share.
    pub state: AppState,
    processors: Option<Processors>,
    max_in_flight: usize,
    /// What the pictures' bodies may hold at once, in bytes.
    upload_buffer_bytes: u64,
    header_timeout: std::time::Duration,
    request_timeout: std::time::Duration,
    host_change_feed: bool,
}

impl Blog {
    /// Connects to the configured backend (creating the containers where configured to) and
    /// starts the local change-feed processors where configured to.
    pub async fn open(config: &Config) -> Result<Blog, cosmos::StoreError> {
        Ok(Blog::start(config, connect(config).await?))
    }

    /// The blog on `state`, with the local change-feed processors started where `config` says
    /// (what [`Blog::open`] does once connected; tests that open the store themselves start
    /// the blog here, as `main` does).
    pub fn start(config: &Config, state: AppState) -> Blog {
        let processors = match (&config.backend, config.change_feed) {
            (Backend::Embedded { data_dir }, ChangeFeedMode::Local) => {
                Some(Processors::Embedded(LocalProcessors::start(&state, data_dir)))
            }
            (_, ChangeFeedMode::Local) => Some(Processors::Account(AccountProcessors::start(&state))),
            (_, ChangeFeedMode::Host) => None,
        };
        let host_change_feed = config.change_feed == ChangeFeedMode::Host;
        if let Some(followed) = followed(config) {
            changefeed::lag::spawn_reports(&state, followed);
        }
        app::pictures::spawn_sweep(&state);
        Blog {
            state,
            processors,
            max_in_flight: config.max_in_flight,
            upload_buffer_bytes: config
                .upload_buffer_mb
                .map_or(http::UploadBuffers::DEFAULT_BYTES, |megabytes| megabytes.saturating_mul(1024 * 1024)),
            header_timeout: config.header_timeout,
            request_timeout: config.request_timeout,
            host_change_feed,
        }
    }

    /// What the local change-feed processors delivered, and its cost; `None` where they do not
    /// run (under the Functions host, which delivers the changes itself).
    pub fn deliveries(&self) -> Option<Deliveries> {
        self.processors.as_ref().map(|processors| match processors {
            Processors::Embedded(processors) => processors.deliveries(),
            Processors::Account(processors) => processors.deliveries(),
        })
    }

    /// Serves the API on `listener` until `shutdown` resolves, then finishes the requests in
    /// flight and stops the processors. Every connection has the timeouts and the limit of
    /// [`http::serve`], the same for `main` and for every test that starts a blog.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let limits = http::serve::Limits::of_this_process(self.header_timeout);
        tracing::debug!(?limits, "connection limits");
        let uploads = http::UploadBuffers::new(self.upload_buffer_bytes, http::MAX_UPLOAD_BYTES);
        let router = http::router(self.state, self.max_in_flight, self.request_timeout, self.host_change_feed, uploads);
        let served = http::serve::serve(listener, router, limits, shutdown).await;
        match self.processors {
            Some(Processors::Embedded(processors)) => processors.stop().await,
            Some(Processors::Account(processors)) => processors.stop().await,
            None => {}
        }
        served
    }
}

/// Who follows the changes in this process (`BLOG_CHANGE_FEED=local`).
enum Processors {
    /// The embedded store's own numbering of its writes.
    Embedded(LocalProcessors),
    /// An account's change feed, through the SDK.
    Account(AccountProcessors),
}

/// Connects to the configured backend and returns what the handlers share.
pub async fn connect(config: &Config) -> Result<AppState, cosmos::StoreError> {
    state_on(config, connect_store(config).await?).await
}

/// What the handlers share, on a store already open (what [`connect`] does once connected).
pub async fn state_on(config: &Config, store: cosmos::Store) -> Result<AppState, cosmos::StoreError> {
    if let Backend::Embedded { data_dir } = &config.backend {
        // Read before any write: also refuses to start on a checkpoint that cannot be read.
        changefeed::processor::furthest_position(data_dir)?;
    }
    let store = Arc::new(store);
    // Cosmos DB removes expired items by itself; the embedded store's emulator does not, so a
    // sweep does (only builds with the embedded store have one).
    #[cfg(feature = "embedded")]
    cosmos::spawn_expiry_sweep(&store);
    let scripts: Arc<dyn ScriptExecutor> = match (config.scripts, &config.backend) {
        (ScriptsMode::InProcess, _) | (_, Backend::Embedded { .. }) => Arc::new(InProcessScripts::new(store.clone())),
        (ScriptsMode::Server, Backend::ConnectionString(text)) => {
            let parsed: azure_data_cosmos_driver::models::ConnectionString =
                text.parse().map_err(|error| cosmos::StoreError::Unusable(format!("bad connection string: {error}")))?;
            let credential = ScriptCredential::Key(parsed.account_key().secret().to_owned());
            Arc::new(
                ServerSideScripts::new(parsed.account_endpoint(), &config.database, credential)
                    .map_err(cosmos::StoreError::Unusable)?,
            )
        }
        (ScriptsMode::Server, Backend::Endpoint { endpoint, .. }) => {
            let credential = store.credential().ok_or_else(|| cosmos::StoreError::Unusable("no Entra ID credential".into()))?;
            Arc::new(
                ServerSideScripts::new(endpoint, &config.database, ScriptCredential::Entra(credential))
                    .map_err(cosmos::StoreError::Unusable)?,
            )
        }
    };
    if config.token_key.is_none() && !matches!(config.backend, Backend::Embedded { .. }) {
        tracing::warn!(
            "BLOG_TOKEN_KEY is not set: continuation tokens are signed with a key of this process, and another instance will refuse them"
        );
    }
    let pictures = open_pictures(config)?;
    Ok(AppState::new(app::Shared {
        store,
        pictures,
        scripts,
        auth: config.auth,
        tokens: app::lists::TokenKey::new(config.token_key.as_deref()),
        feed: Default::default(),
        post_views: Default::default(),
        write_limit: config.write_limit.map(app::WriteLimit::new),
    }))
}

/// The picture store `config` names, with its limits and the writers' quota (`None`: none).
fn open_pictures(config: &Config) -> Result<Option<app::pictures::Pictures>, cosmos::StoreError> {
    let unusable = |error: pictures::PictureStoreError| cosmos::StoreError::Unusable(error.to_string());
    let store: Arc<dyn pictures::PictureStore> = match &config.pictures {
        PictureStorage::Off => return Ok(None),
        PictureStorage::DataDirectory(data_dir) => Arc::new(pictures::DirectoryStore::open(data_dir).map_err(unusable)?),
        PictureStorage::ConnectionString { connection_string, container } => {
            Arc::new(pictures::BlobStore::from_connection_string(connection_string, container).map_err(unusable)?)
        }
        PictureStorage::Endpoint { service_uri, client_id, container } => {
            let credential = cosmos::entra_credential(client_id.as_deref())?;
            Arc::new(pictures::BlobStore::on_azure(service_uri, container, credential).map_err(unusable)?)
        }
    };
    let default = app::pictures::Quota::DEFAULT;
    let quota = app::pictures::Quota {
        pictures: config.pictures_per_writer.unwrap_or(default.pictures),
        // At most config::MAX_PICTURE_MB_PER_WRITER: the product fits.
        bytes: config.picture_mb_per_writer.map_or(default.bytes, |megabytes| megabytes * 1024 * 1024),
    };
    let memory = config.picture_memory_mb.map_or(app::pictures::PictureMemory::DEFAULT, |megabytes| {
        app::pictures::PictureMemory { bytes: megabytes * 1024 * 1024 }
    });
    Ok(Some(app::pictures::Pictures::new(store, pictures::Limits::default(), quota, memory)))
}

/// The SDK contacts the account while the client is built, so a worker that starts while the
/// network or the account is not ready yet would die at once. A remote account gets a few
/// tries, within the host's 60 s start-up window; the embedded store is opened once.
async fn connect_store(config: &Config) -> Result<cosmos::Store, cosmos::StoreError> {
    let mut pause = std::time::Duration::from_secs(1);
    let mut attempt = 1;
    loop {
        match cosmos::Store::connect(config).await {
            Ok(store) => return Ok(store),
            Err(error) if attempt < 5 && !matches!(config.backend, Backend::Embedded { .. }) => {
                tracing::warn!(%error, attempt, retry_in = ?pause, "cannot reach Cosmos DB yet");
                tokio::time::sleep(pause).await;
                pause *= 2;
                attempt += 1;
            }
            Err(error) => return Err(error),
        }
    }
}
