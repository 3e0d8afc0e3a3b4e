//! Configuration, from the environment (the Functions host passes app settings as environment
//! variables; locally, `cargo run` needs none of them).

use std::net::SocketAddr;
use std::path::PathBuf;

pub(crate) mod error;
pub(crate) mod public_url;
mod read;

pub(crate) use error::ConfigError;
pub(crate) use public_url::PublicUrl;
use read::{
    Lookup, PictureSettings, Serving, StoreSettings, auth, backend, picture_settings, serving,
    store, token_key, write_limit,
};

/// The app setting that names the Cosmos DB account. The change-feed triggers' `connection`
/// property names the same setting, so the handler and the triggers always use one account.
/// Either `CosmosDB` holds a connection string (the emulator, with its key), or
/// `CosmosDB__accountEndpoint` holds an account endpoint reached with Entra ID (Azure).
pub const CONNECTION_SETTING: &str = "CosmosDB";

/// The address `cargo run` serves on: `func start`'s port, so the same curl lines work for both.
pub(crate) const LOCAL_ADDRESS: &str = "127.0.0.1:7071";

/// Where the data lives.
#[derive(Clone, Debug)]
pub enum Backend {
    /// The SDK's in-memory emulator, made durable by a SQLite database in `data_dir`.
    Embedded {
        /// The data directory (`BLOG_DATA_DIR`, `./data` by default).
        data_dir: PathBuf,
    },
    /// An account reached with a connection string and its key (the Cosmos DB emulator).
    ConnectionString(String),
    /// An account reached with Entra ID: the managed identity on Azure (`client_id` selects a
    /// user-assigned one), developer credentials elsewhere.
    Endpoint {
        /// The account's endpoint, `https://<account>.documents.azure.com:443/`.
        endpoint: String,
        /// The user-assigned managed identity's client id (`None`: the system-assigned one, or
        /// the developer's credentials).
        client_id: Option<String>,
    },
}

/// The handler's settings, read once at start-up.
#[derive(Clone, Debug)]
pub struct Config {
    /// The address to serve on.
    pub listen: SocketAddr,
    /// Where the data lives.
    pub backend: Backend,
    /// The Cosmos DB database's name.
    pub database: String,
    /// Create the database and containers when missing. On by default where the credential can
    /// (embedded store, emulator key); against Azure, Bicep provisions them and the app's
    /// identity has data-plane rights only.
    pub create_containers: bool,
    /// Who runs the change-feed functions.
    pub change_feed: ChangeFeedMode,
    /// Who runs the stored procedures and the trigger.
    pub scripts: ScriptsMode,
    /// The most requests one instance works on at once; more are answered 503 at once rather
    /// than queued without end.
    pub max_in_flight: usize,
    /// How long a connection may take to send a request's headers, or stay idle between
    /// requests (`BLOG_HEADER_TIMEOUT`, seconds; [`DEFAULT_HEADER_TIMEOUT`] unless set).
    pub header_timeout: std::time::Duration,
    /// How long a request may take in all, its database calls included, before it is answered
    /// 503 (`BLOG_REQUEST_TIMEOUT`, seconds; [`DEFAULT_REQUEST_TIMEOUT`] unless set).
    pub request_timeout: std::time::Duration,
    /// How often a blog whose change feed runs in this process publishes the scheduled posts
    /// due (`BLOG_PUBLISH_EVERY`, seconds; [`DEFAULT_PUBLISH_EVERY`], the timer function's
    /// schedule, unless set).
    /// Under the Functions host, its timer trigger does, on `functions/PublishScheduled`'s.
    pub publish_every: std::time::Duration,
    /// Who vouches for the caller of a write.
    pub auth: AuthMode,
    /// `BLOG_TOKEN_KEY`: the key continuation tokens are signed with, the same on every instance
    /// (`None`: a random key of this process).
    pub token_key: Option<String>,
    /// How many writes one user may send ([`WriteLimitSetting::DEFAULT`] unless set; `None`:
    /// `BLOG_WRITES_PER_MINUTE=off`, no limit).
    pub write_limit: Option<WriteLimitSetting>,
    /// Where pictures are kept.
    pub pictures: PictureStorage,
    /// How many pictures one writer may keep (`BLOG_PICTURES_PER_WRITER`; `None`: the default).
    pub pictures_per_writer: Option<u64>,
    /// How many megabytes of pictures one writer may keep (`BLOG_PICTURE_MB_PER_WRITER`).
    pub picture_mb_per_writer: Option<u64>,
    /// How many megabytes the pictures being decoded may hold at once, in all
    /// (`BLOG_PICTURE_MEMORY_MB`; `None`: the default).
    pub picture_memory_mb: Option<u64>,
    /// How many megabytes the pictures' bodies being received may hold at once, in all
    /// (`BLOG_UPLOAD_BUFFER_MB`; `None`: the default).
    pub upload_buffer_mb: Option<u64>,
    /// The blog's address as readers reach it (`BLOG_PUBLIC_URL`, else the platform's
    /// `WEBSITE_HOSTNAME`); `None`: the address it listens on, once bound.
    pub public_url: Option<PublicUrl>,
}

/// The app setting that names the pictures' Blob Storage, as `CosmosDB` names the account.
/// Either `BLOG_PICTURES` holds a connection string (Azurite's `UseDevelopmentStorage=true`, or
/// one with an account key). Or `BLOG_PICTURES__blobServiceUri` holds an account's blob
/// endpoint reached with Entra ID (Azure: the function app's managed identity; `__clientId`
/// selects a user-assigned one).
pub const PICTURES_SETTING: &str = "BLOG_PICTURES";

/// The most memory for pictures a configuration may give (`BLOG_PICTURE_MEMORY_MB`, 64 GiB):
/// counted in KiB, it fits a semaphore's permits (`app::pictures::PictureMemory`).
pub(crate) const MAX_PICTURE_MEMORY_MB: u64 = 64 * 1024;

/// Where pictures are kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PictureStorage {
    /// `pictures/` in the embedded store's data directory (its default).
    DataDirectory(PathBuf),
    /// A Blob Storage container reached with a connection string: Azurite locally.
    ConnectionString {
        /// The connection string.
        connection_string: String,
        /// The container (`BLOG_PICTURES_CONTAINER`, `pictures` by default).
        container: String,
    },
    /// A Blob Storage container reached with Entra ID (Azure).
    Endpoint {
        /// `https://<account>.blob.core.windows.net`.
        service_uri: String,
        /// The user-assigned managed identity's client id (`None`: the system-assigned one, or
        /// the developer's credentials).
        client_id: Option<String>,
        /// The container.
        container: String,
    },
    /// None: an account backend without `BLOG_PICTURES`, or `BLOG_PICTURES=off`. Uploads are
    /// refused with 501, saying which setting is missing.
    Off,
}

/// How many writes one user may send (`BLOG_WRITES_PER_MINUTE`, `BLOG_WRITE_BURST`): `per_minute`
/// a minute, steadily, after a burst of `burst` at once (see `app/write_limit.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteLimitSetting {
    /// Writes a minute per user, in the long run.
    pub per_minute: u32,
    /// Writes a user may send at once before the rate applies.
    pub burst: u32,
}

impl WriteLimitSetting {
    /// 60 writes a minute per user after a burst of 20: more than a person writes, less than a
    /// script that loops.
    pub(crate) const DEFAULT: WriteLimitSetting = WriteLimitSetting { per_minute: 60, burst: 20 };
}

/// Who vouches for the caller of a write (reads are public).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMode {
    /// Nobody: every write is answered 401. The default wherever App Service Authentication is
    /// not on, so a handler never trusts a caller that nothing authenticated.
    None,
    /// App Service Authentication (Easy Auth): the platform signs the caller in and sets
    /// `X-MS-CLIENT-PRINCIPAL-ID`, which clients cannot set themselves while it is on.
    Platform,
    /// Local development only: the caller is whoever the `X-Dev-User` header names. Exists only
    /// in builds with the embedded store, and only when `BLOG_AUTH=development` says so.
    #[cfg(feature = "embedded")]
    Development,
}

/// [`Config::header_timeout`] unless `BLOG_HEADER_TIMEOUT` says otherwise. Longer than the idle
/// time after which .NET's HTTP client (the Functions host's) stops reusing a pooled connection
/// would be safest; 30 s is hyper's own default for this timeout.
pub const DEFAULT_HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// [`Config::request_timeout`] unless `BLOG_REQUEST_TIMEOUT` says otherwise. It is above one
/// Cosmos DB call's own bound (30 s), so that a slow call is answered as such first. It is far
/// below the 230 s after which Azure's front end gives up on an HTTP function and the client
/// gets no answer of ours.
pub const DEFAULT_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// [`Config::publish_every`]: once a minute, as `functions/PublishScheduled`'s NCRONTAB
/// schedule (`0 * * * * *`).
pub const DEFAULT_PUBLISH_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// [`Config::max_in_flight`] unless `BLOG_MAX_IN_FLIGHT` says otherwise.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 128;

/// Where the stored procedures and the trigger run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScriptsMode {
    /// In Cosmos DB, by signed REST calls (Azure, and the Windows emulator).
    Server,
    /// In this process, in an embedded JavaScript engine, committed as transactional batches
    /// (the embedded store and the Linux emulator, which cannot run scripts).
    InProcess,
}

/// Who runs the change-feed functions `PostsChangeFeed` and `UsersChangeFeed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeFeedMode {
    /// Processors in this process follow the changes: the embedded store's writes (its
    /// default), or an account's change feed through the SDK (where the host's trigger cannot
    /// serve it: the Linux emulator).
    Local,
    /// The Functions host's Cosmos DB triggers invoke them (every other backend's default).
    Host,
}

/// The setting that names the account's endpoint when it is reached with Entra ID.
const ACCOUNT_ENDPOINT_SETTING: &str = "CosmosDB__accountEndpoint";
/// The user-assigned identity the account is reached with, if any.
const ACCOUNT_CLIENT_ID_SETTING: &str = "CosmosDB__clientId";
/// The setting that names the pictures' blob endpoint when it is reached with Entra ID.
const PICTURES_ENDPOINT_SETTING: &str = "BLOG_PICTURES__blobServiceUri";
/// The user-assigned identity the pictures' storage is reached with, if any.
const PICTURES_CLIENT_ID_SETTING: &str = "BLOG_PICTURES__clientId";

impl Config {
    /// The settings from the process's environment (`local.settings.json`'s `Values` under the host); an error says which setting is wrong and why.
    pub fn from_env() -> Result<Config, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok().filter(|value| !value.trim().is_empty()))
    }

    /// The configuration described by `lookup` (an environment), for tests.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        // Each area's settings are read by one reader in `read`, so a new setting touches one of
        // them and this list of fields only.
        let lookup: Lookup<'_> = &lookup;
        let backend = backend(lookup)?;
        let StoreSettings { database, create_containers, change_feed, scripts } =
            store(lookup, &backend)?;
        let Serving { listen, max_in_flight, header_timeout, request_timeout, publish_every } =
            serving(lookup)?;
        let PictureSettings {
            pictures,
            pictures_per_writer,
            picture_mb_per_writer,
            picture_memory_mb,
            upload_buffer_mb,
        } = picture_settings(lookup, &backend)?;
        Ok(Config {
            listen,
            backend,
            database,
            create_containers,
            change_feed,
            scripts,
            max_in_flight,
            header_timeout,
            request_timeout,
            publish_every,
            auth: auth(lookup)?,
            token_key: token_key(lookup)?,
            write_limit: write_limit(lookup)?,
            pictures,
            pictures_per_writer,
            picture_mb_per_writer,
            picture_memory_mb,
            upload_buffer_mb,
            public_url: public_url::public_url(lookup)?,
        })
    }
}

#[cfg(test)]
mod tests;
