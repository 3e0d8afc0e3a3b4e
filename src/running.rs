//! A running blog: the store connected to as the configuration says, what the handlers share
//! ([`AppState`]), the local change-feed processors, and the server loop ([`Blog::serve`]). The
//! `main` function, the tests and the benchmarks start a blog here, the same way; the crate
//! root only hands it on.

use std::sync::Arc;

use crate::app::{self, AppState};
use crate::changefeed::account::AccountProcessors;
use crate::changefeed::processor::{Deliveries, LocalProcessors};
use crate::config::{Backend, ChangeFeedMode, Config, PictureStorage, ScriptsMode};
use crate::scripts::{InProcessScripts, ScriptCredential, ScriptExecutor, ServerSideScripts};
use crate::{changefeed, cosmos, http, pictures};

/// Whose change-feed positions the blog is delivered from, and so the lag of which it logs each
/// minute ([`changefeed::lag`]): the local processors', or on an account under the Functions
/// host, the trigger's leases. It is `None` for the embedded store under the host, where
/// nothing delivers but a test playing the host.
pub fn followed(config: &Config) -> Option<changefeed::lag::Followed> {
    match (&config.backend, config.change_feed) {
        (Backend::Embedded { data_dir }, ChangeFeedMode::Local) => {
            Some(changefeed::lag::Followed::Embedded(data_dir.clone()))
        }
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
    /// The configured public address (`None`: the listener's, once bound).
    public_url: Option<crate::config::PublicUrl>,
}

impl Blog {
    /// Connects to the configured backend (creating the containers where configured to) and
    /// starts the local change-feed processors where configured to.
    pub async fn open(config: &Config) -> Result<Blog, cosmos::OpenError> {
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
            (_, ChangeFeedMode::Local) => {
                Some(Processors::Account(AccountProcessors::start(&state)))
            }
            (_, ChangeFeedMode::Host) => None,
        };
        let host_change_feed = config.change_feed == ChangeFeedMode::Host;
        if let Some(followed) = followed(config) {
            changefeed::lag::spawn_reports(&state, followed);
        }
        app::pictures::spawn_sweep(&state);
        // Where this process follows the change feed, it is the timer too; under the host, the
        // host's timer trigger is (`POST /PublishScheduled`).
        if config.change_feed == ChangeFeedMode::Local {
            app::scheduled::spawn_local_timer(&state, config.publish_every);
        }
        Blog {
            state,
            processors,
            max_in_flight: config.max_in_flight,
            upload_buffer_bytes: config
                .upload_buffer_mb
                .map_or(http::UploadBuffers::DEFAULT_BYTES, |megabytes| {
                    megabytes.saturating_mul(1024 * 1024)
                }),
            header_timeout: config.header_timeout,
            request_timeout: config.request_timeout,
            host_change_feed,
            public_url: config.public_url.clone(),
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
        let requests = std::sync::Arc::new(http::RequestLog::default());
        let public_url = match self.public_url {
            Some(configured) => configured,
            None => crate::config::PublicUrl::of_listener(listener.local_addr()?),
        };
        tracing::info!(%public_url, "the blog's public address");
        let serving = http::Serving {
            max_in_flight: self.max_in_flight,
            request_timeout: self.request_timeout,
            host_change_feed: self.host_change_feed,
            uploads,
            public_url,
            requests: requests.clone(),
        };
        let router = http::router(self.state, serving);
        let minutes = tokio::spawn(requests.clone().write_each_minute());
        let served = http::serve::serve(listener, router, limits, shutdown).await;
        minutes.abort();
        // The minute under way, for a stop in order (the host's kill loses it: see `RequestLog`).
        requests.write_minute();
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
pub async fn connect(config: &Config) -> Result<AppState, cosmos::OpenError> {
    state_on(config, connect_store(config).await?).await
}

/// [`connect`] for `handler import`, which alone opens an embedded store where an import has not
/// finished (it finishes it).
pub async fn connect_for_import(config: &Config) -> Result<AppState, cosmos::OpenError> {
    state_on(config, cosmos::Store::connect_for_import(config).await?).await
}

/// What the handlers share, on a store already open (what [`connect`] does once connected).
pub async fn state_on(
    config: &Config,
    store: cosmos::Store,
) -> Result<AppState, cosmos::OpenError> {
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
        (ScriptsMode::InProcess, _) | (_, Backend::Embedded { .. }) => {
            Arc::new(InProcessScripts::new(store.clone()))
        }
        (ScriptsMode::Server, Backend::ConnectionString(text)) => {
            let parsed: azure_data_cosmos_driver::models::ConnectionString =
                text.parse().map_err(|error| {
                    cosmos::StoreError::sdk("the Cosmos DB connection string cannot be used", error)
                })?;
            let credential = ScriptCredential::Key(parsed.account_key().secret().to_owned());
            Arc::new(
                ServerSideScripts::new(parsed.account_endpoint(), &config.database, credential)
                    .map_err(|error| cosmos::OpenError::Scripts(error.into()))?,
            )
        }
        (ScriptsMode::Server, Backend::Endpoint { endpoint, .. }) => {
            let credential = store.credential().ok_or(cosmos::OpenError::NoCredential)?;
            Arc::new(
                ServerSideScripts::new(
                    endpoint,
                    &config.database,
                    ScriptCredential::Entra(credential),
                )
                .map_err(|error| cosmos::OpenError::Scripts(error.into()))?,
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
        changes: Default::default(),
        users: Default::default(),
        user_posts: Arc::new(app::post_lists::PostLists::user_posts()),
        tag_posts: Arc::new(app::post_lists::PostLists::tag_posts()),
        write_limit: config.write_limit.map(app::WriteLimit::new),
    }))
}

/// The picture store `config` names, with its limits and the writers' quota (`None`: none).
fn open_pictures(config: &Config) -> Result<Option<app::pictures::Pictures>, cosmos::OpenError> {
    let unusable = cosmos::OpenError::Pictures;
    let store: Arc<dyn pictures::PictureStore> = match &config.pictures {
        PictureStorage::Off => return Ok(None),
        PictureStorage::DataDirectory(data_dir) => {
            Arc::new(pictures::DirectoryStore::open(data_dir).map_err(unusable)?)
        }
        PictureStorage::ConnectionString { connection_string, container } => Arc::new(
            pictures::BlobStore::from_connection_string(connection_string, container)
                .map_err(unusable)?,
        ),
        PictureStorage::Endpoint { service_uri, client_id, container } => {
            let credential = cosmos::entra_credential(client_id.as_deref())?;
            Arc::new(
                pictures::BlobStore::on_azure(service_uri, container, credential)
                    .map_err(unusable)?,
            )
        }
    };
    let default = app::pictures::Quota::DEFAULT;
    let quota = app::pictures::Quota {
        pictures: config.pictures_per_writer.unwrap_or(default.pictures),
        // At most config::MAX_PICTURE_MB_PER_WRITER: the product fits.
        bytes: config
            .picture_mb_per_writer
            .map_or(default.bytes, |megabytes| megabytes * 1024 * 1024),
    };
    let memory =
        config.picture_memory_mb.map_or(app::pictures::PictureMemory::DEFAULT, |megabytes| {
            app::pictures::PictureMemory { bytes: megabytes * 1024 * 1024 }
        });
    Ok(Some(app::pictures::Pictures::new(store, pictures::Limits::default(), quota, memory)))
}

/// The SDK contacts the account while the client is built, so a worker that starts while the
/// network or the account is not ready yet would die at once. A remote account gets a few
/// tries, within the host's 60 s start-up window; the embedded store is opened once.
async fn connect_store(config: &Config) -> Result<cosmos::Store, cosmos::OpenError> {
    let mut pause = std::time::Duration::from_secs(1);
    let mut attempt = 1;
    loop {
        match cosmos::Store::connect(config).await {
            Ok(store) => return Ok(store),
            Err(error) if attempt < 5 && !matches!(config.backend, Backend::Embedded { .. }) => {
                tracing::warn!(error = %crate::logging::with_causes(&error), attempt, retry_in = ?pause, "cannot reach Cosmos DB yet");
                tokio::time::sleep(pause).await;
                pause *= 2;
                attempt += 1;
            }
            Err(error) => return Err(error),
        }
    }
}
