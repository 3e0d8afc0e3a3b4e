//! Configuration, from the environment (the Functions host passes app settings as environment
//! variables; locally, `cargo run` needs none of them).

use std::net::SocketAddr;
use std::path::PathBuf;

mod error;

pub use error::ConfigError;

/// The app setting that names the Cosmos DB account. The change-feed triggers' `connection`
/// property names the same setting, so the handler and the triggers always use one account:
/// `CosmosDB` holds a connection string (the emulator, with its key), or
/// `CosmosDB__accountEndpoint` an account endpoint reached with Entra ID (Azure).
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
}

/// The app setting that names the pictures' Blob Storage, as `CosmosDB` names the account:
/// `BLOG_PICTURES` holds a connection string (Azurite's `UseDevelopmentStorage=true`, or one
/// with an account key), or `BLOG_PICTURES__blobServiceUri` an account's blob endpoint reached
/// with Entra ID (Azure: the function app's managed identity; `__clientId` selects a
/// user-assigned one).
pub const PICTURES_SETTING: &str = "BLOG_PICTURES";

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

/// [`Config::request_timeout`] unless `BLOG_REQUEST_TIMEOUT` says otherwise: above one Cosmos DB
/// call's own bound (30 s, so that a slow call is answered as such first), far below the 230 s
/// after which Azure's front end gives up on an HTTP function and the client gets no answer of
/// ours.
pub const DEFAULT_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

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

/// A source of settings: the environment, or a test's map. Unset and blank are the same.
type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

impl Config {
    /// The settings from the process's environment (`local.settings.json`'s `Values` under the host); an error says which setting is wrong and why.
    pub fn from_env() -> Result<Config, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok().filter(|value| !value.trim().is_empty()))
    }

    /// The configuration described by `lookup` (an environment), for tests.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        // Each area's settings are read by one reader below, so a new setting touches one of
        // them and this list of fields only.
        let lookup: Lookup<'_> = &lookup;
        let backend = backend(lookup)?;
        let StoreSettings { database, create_containers, change_feed, scripts } = store(lookup, &backend)?;
        let Serving { listen, max_in_flight, header_timeout, request_timeout } = serving(lookup)?;
        let PictureSettings { pictures, pictures_per_writer, picture_mb_per_writer, picture_memory_mb, upload_buffer_mb } =
            picture_settings(lookup, &backend)?;
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
            auth: auth(lookup)?,
            token_key: token_key(lookup)?,
            write_limit: write_limit(lookup)?,
            pictures,
            pictures_per_writer,
            picture_mb_per_writer,
            picture_memory_mb,
            upload_buffer_mb,
        })
    }
}

/// Where the data lives: `CosmosDB` (a connection string) or `CosmosDB__accountEndpoint`
/// (Entra ID), else the embedded store.
fn backend(lookup: Lookup<'_>) -> Result<Backend, ConfigError> {
    match (lookup(CONNECTION_SETTING), lookup(ACCOUNT_ENDPOINT_SETTING)) {
        (Some(_), Some(_)) => Err(ConfigError::Conflict { first: CONNECTION_SETTING, second: ACCOUNT_ENDPOINT_SETTING }),
        (Some(connection_string), None) => Ok(Backend::ConnectionString(connection_string)),
        (None, Some(endpoint)) => Ok(Backend::Endpoint { endpoint, client_id: lookup(ACCOUNT_CLIENT_ID_SETTING) }),
        (None, None) => embedded_backend(lookup),
    }
}

/// The store's settings beside the backend itself.
struct StoreSettings {
    database: String,
    create_containers: bool,
    change_feed: ChangeFeedMode,
    scripts: ScriptsMode,
}

/// `COSMOS_DATABASE`, `BLOG_CREATE_CONTAINERS`, `BLOG_CHANGE_FEED` and `BLOG_SCRIPTS`, whose
/// defaults follow the backend.
fn store(lookup: Lookup<'_>, backend: &Backend) -> Result<StoreSettings, ConfigError> {
    let embedded = matches!(backend, Backend::Embedded { .. });
    let entra = matches!(backend, Backend::Endpoint { .. });
    let create_containers = choice(lookup, "BLOG_CREATE_CONTAINERS", &[("true", true), ("false", false)])?.unwrap_or(!entra);
    let change_feed = choice(lookup, "BLOG_CHANGE_FEED", &[("local", ChangeFeedMode::Local), ("host", ChangeFeedMode::Host)])?
        .unwrap_or(if embedded { ChangeFeedMode::Local } else { ChangeFeedMode::Host });
    let scripts =
        match choice(lookup, "BLOG_SCRIPTS", &[("server", ScriptsMode::Server), ("in-process", ScriptsMode::InProcess)])? {
            Some(ScriptsMode::Server) if embedded => return Err(ConfigError::ServerScriptsWithoutAccount),
            Some(scripts) => scripts,
            None if entra => ScriptsMode::Server,
            None => ScriptsMode::InProcess,
        };
    let database = lookup("COSMOS_DATABASE").unwrap_or_else(|| "blog".to_owned());
    Ok(StoreSettings { database, create_containers, change_feed, scripts })
}

/// How the server takes requests.
struct Serving {
    listen: SocketAddr,
    max_in_flight: usize,
    header_timeout: std::time::Duration,
    request_timeout: std::time::Duration,
}

/// The address (`FUNCTIONS_CUSTOMHANDLER_PORT` under the host, else `BLOG_LISTEN`), how many
/// requests at once (`BLOG_MAX_IN_FLIGHT`) and how long each may take.
fn serving(lookup: Lookup<'_>) -> Result<Serving, ConfigError> {
    let listen = match lookup("FUNCTIONS_CUSTOMHANDLER_PORT") {
        // Under the Functions host: it calls the handler on loopback at the port it chose.
        Some(port) => match port.parse::<u16>() {
            Ok(port) => SocketAddr::from(([127, 0, 0, 1], port)),
            Err(_) => return Err(ConfigError::Invalid { name: "FUNCTIONS_CUSTOMHANDLER_PORT", value: port, expected: "a port" }),
        },
        None => {
            let address = lookup("BLOG_LISTEN").unwrap_or_else(|| LOCAL_ADDRESS.to_owned());
            match address.parse() {
                Ok(address) => address,
                // The example is LOCAL_ADDRESS, written out because the variant holds static text.
                Err(_) => {
                    return Err(ConfigError::Invalid {
                        name: "BLOG_LISTEN",
                        value: address,
                        expected: "an address like 127.0.0.1:7071",
                    });
                }
            }
        }
    };
    let seconds = |name| in_range(lookup, name, "a number of seconds", 1..=MAX_TIMEOUT_SECS);
    Ok(Serving {
        listen,
        max_in_flight: in_range(lookup, "BLOG_MAX_IN_FLIGHT", "a number", 1..=MAX_IN_FLIGHT_LIMIT)?
            .unwrap_or(DEFAULT_MAX_IN_FLIGHT),
        header_timeout: seconds("BLOG_HEADER_TIMEOUT")?.map_or(DEFAULT_HEADER_TIMEOUT, std::time::Duration::from_secs),
        request_timeout: seconds("BLOG_REQUEST_TIMEOUT")?.map_or(DEFAULT_REQUEST_TIMEOUT, std::time::Duration::from_secs),
    })
}

/// The words `BLOG_AUTH` takes, and what each means; `development` only where the embedded
/// store is built in.
const AUTH_MODES: &[(&str, AuthMode)] = &[
    ("platform", AuthMode::Platform),
    ("none", AuthMode::None),
    #[cfg(feature = "embedded")]
    ("development", AuthMode::Development),
];

/// `BLOG_AUTH`, checked against `WEBSITE_AUTH_ENABLED`.
fn auth(lookup: Lookup<'_>) -> Result<AuthMode, ConfigError> {
    // The platform sets WEBSITE_AUTH_ENABLED when App Service Authentication is on; trusting its
    // headers without it would let any client pick its identity.
    let platform_auth = lookup("WEBSITE_AUTH_ENABLED").is_some_and(|value| platform_flag(&value));
    match choice(lookup, "BLOG_AUTH", AUTH_MODES)? {
        None if platform_auth => Ok(AuthMode::Platform),
        None => Ok(AuthMode::None),
        Some(AuthMode::Platform) if !platform_auth => Err(ConfigError::PlatformAuthOff),
        #[cfg(feature = "embedded")]
        Some(AuthMode::Development) if platform_auth => Err(ConfigError::DevelopmentAuthOnPlatform),
        Some(mode) => Ok(mode),
    }
}

/// The fewest characters `BLOG_TOKEN_KEY` may hold.
const MIN_TOKEN_KEY_CHARS: usize = 16;

/// `BLOG_TOKEN_KEY`, long enough to be a key.
fn token_key(lookup: Lookup<'_>) -> Result<Option<String>, ConfigError> {
    match lookup("BLOG_TOKEN_KEY") {
        Some(key) if key.len() < MIN_TOKEN_KEY_CHARS => {
            Err(ConfigError::TooShort { name: "BLOG_TOKEN_KEY", length: key.len(), min: MIN_TOKEN_KEY_CHARS })
        }
        key => Ok(key),
    }
}

/// The pictures' settings: where they are kept, and how much each writer and the instance may
/// hold.
struct PictureSettings {
    pictures: PictureStorage,
    pictures_per_writer: Option<u64>,
    picture_mb_per_writer: Option<u64>,
    picture_memory_mb: Option<u64>,
    upload_buffer_mb: Option<u64>,
}

/// [`PictureSettings`]: [`picture_storage`], then the quotas and the memory.
fn picture_settings(lookup: Lookup<'_>, backend: &Backend) -> Result<PictureSettings, ConfigError> {
    let max_mb = crate::app::pictures::PictureMemory::MAX_MB;
    Ok(PictureSettings {
        pictures: picture_storage(lookup, backend)?,
        pictures_per_writer: positive(lookup, "BLOG_PICTURES_PER_WRITER", "a positive number of pictures")?,
        picture_mb_per_writer: in_range(
            lookup,
            "BLOG_PICTURE_MB_PER_WRITER",
            "a number of megabytes",
            1..=MAX_PICTURE_MB_PER_WRITER,
        )?,
        // Room for the largest picture's decoding.
        picture_memory_mb: in_range(lookup, "BLOG_PICTURE_MEMORY_MB", "a number of megabytes", 16..=max_mb)?,
        // At least one upload of the largest size fits.
        upload_buffer_mb: in_range(
            lookup,
            "BLOG_UPLOAD_BUFFER_MB",
            "a number of megabytes (one upload of the largest size at least)",
            11..=max_mb,
        )?,
    })
}

/// [`PictureStorage`] from `BLOG_PICTURES`, `BLOG_PICTURES__blobServiceUri` and
/// `BLOG_PICTURES_CONTAINER`; with none of them, the data directory on the embedded store and
/// nothing elsewhere (an instance's own disk is not shared by the others).
fn picture_storage(lookup: Lookup<'_>, backend: &Backend) -> Result<PictureStorage, ConfigError> {
    let container = lookup("BLOG_PICTURES_CONTAINER").unwrap_or_else(|| "pictures".to_owned());
    let valid_container = (3..=63).contains(&container.len())
        && container.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
        && !container.starts_with('-')
        && !container.ends_with('-')
        && !container.contains("--");
    if !valid_container {
        return Err(ConfigError::Invalid {
            name: "BLOG_PICTURES_CONTAINER",
            value: container,
            expected: "a Blob Storage container name (3 to 63 lowercase letters, digits and single hyphens)",
        });
    }
    match (lookup(PICTURES_SETTING), lookup(PICTURES_ENDPOINT_SETTING)) {
        (Some(_), Some(_)) => Err(ConfigError::Conflict { first: PICTURES_SETTING, second: PICTURES_ENDPOINT_SETTING }),
        (Some(off), None) if off == "off" => Ok(PictureStorage::Off),
        (Some(connection_string), None) => Ok(PictureStorage::ConnectionString { connection_string, container }),
        (None, Some(service_uri)) => {
            Ok(PictureStorage::Endpoint { service_uri, client_id: lookup(PICTURES_CLIENT_ID_SETTING), container })
        }
        (None, None) => Ok(match backend {
            Backend::Embedded { data_dir } => PictureStorage::DataDirectory(data_dir.clone()),
            _ => PictureStorage::Off,
        }),
    }
}

/// `BLOG_WRITES_PER_MINUTE` (a number, or `off`) and `BLOG_WRITE_BURST` (a number), each at
/// most what a `u32` holds.
fn write_limit(lookup: Lookup<'_>) -> Result<Option<WriteLimitSetting>, ConfigError> {
    let writes = 1..=u64::from(u32::MAX);
    let burst = in_range(lookup, "BLOG_WRITE_BURST", "a number of writes", writes.clone())?;
    let per_minute = match lookup("BLOG_WRITES_PER_MINUTE").as_deref() {
        Some("off") if burst.is_some() => return Err(ConfigError::BurstWithoutLimit),
        Some("off") => return Ok(None),
        _ => in_range(lookup, "BLOG_WRITES_PER_MINUTE", "a number of writes a minute (or off)", writes)?,
    };
    Ok(Some(WriteLimitSetting {
        per_minute: per_minute.unwrap_or(WriteLimitSetting::DEFAULT.per_minute),
        burst: burst.unwrap_or(WriteLimitSetting::DEFAULT.burst),
    }))
}

/// The most `BLOG_MAX_IN_FLIGHT` may be: as many as the connections the server can hold at most
/// (`http::serve`: one a file descriptor, of at most 2^20), far below what a semaphore can count (`Semaphore::MAX_PERMITS`, which a
/// larger setting made the start panic on).
pub(crate) const MAX_IN_FLIGHT_LIMIT: u64 = 1 << 20;

/// The longest `BLOG_HEADER_TIMEOUT` and `BLOG_REQUEST_TIMEOUT`: an hour, far past the 230 s after
/// which Azure's front end gives up on an HTTP function, and far from the deadline arithmetic's
/// overflow (a timeout of `u64::MAX` seconds made every request panic).
pub(crate) const MAX_TIMEOUT_SECS: u64 = 60 * 60;

/// The most `BLOG_PICTURE_MB_PER_WRITER` may be: as many megabytes as a `u64` counts in bytes,
/// so that the quota in bytes is the setting, never a product cut short.
pub(crate) const MAX_PICTURE_MB_PER_WRITER: u64 = u64::MAX >> 20;

/// A whole number setting within `range`, if set, as the type it is used as; refused, naming
/// the range, if not. The range lies within `T`, so the conversion never fails for a number
/// the range accepts.
fn in_range<T: TryFrom<u64>>(
    lookup: Lookup<'_>,
    name: &'static str,
    what: &'static str,
    range: std::ops::RangeInclusive<u64>,
) -> Result<Option<T>, ConfigError> {
    let Some(value) = lookup(name) else { return Ok(None) };
    match value.parse::<u64>().ok().filter(|n| range.contains(n)).map(T::try_from) {
        Some(Ok(n)) => Ok(Some(n)),
        _ => Err(ConfigError::OutOfRange { name, value, what, min: *range.start(), max: *range.end() }),
    }
}

/// A setting that holds a whole number above 0 (`None` when it is not set); `expected` says
/// what it must be when it is not one.
fn positive(lookup: Lookup<'_>, name: &'static str, expected: &'static str) -> Result<Option<u64>, ConfigError> {
    let Some(value) = lookup(name) else { return Ok(None) };
    match value.parse::<u64>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(ConfigError::Invalid { name, value, expected }),
    }
}

/// A setting that holds one of the words of `options`, as the value the word stands for.
fn choice<T: Copy>(lookup: Lookup<'_>, name: &'static str, options: &[(&'static str, T)]) -> Result<Option<T>, ConfigError> {
    let Some(value) = lookup(name) else { return Ok(None) };
    match options.iter().find(|(word, _)| *word == value) {
        Some((_, meaning)) => Ok(Some(*meaning)),
        None => Err(ConfigError::NotOneOf { name, value, allowed: options.iter().map(|(word, _)| *word).collect() }),
    }
}

#[cfg(feature = "embedded")]
fn embedded_backend(lookup: Lookup<'_>) -> Result<Backend, ConfigError> {
    let data_dir = lookup("BLOG_DATA_DIR").map_or_else(|| PathBuf::from("data"), PathBuf::from);
    Ok(Backend::Embedded { data_dir })
}

#[cfg(not(feature = "embedded"))]
fn embedded_backend(_: Lookup<'_>) -> Result<Backend, ConfigError> {
    Err(ConfigError::NoAccount)
}

/// Whether a platform setting such as `WEBSITE_AUTH_ENABLED` says "on", read as the Functions
/// host reads it: .NET's `bool.TryParse` (`true` in any case, surrounding whitespace allowed;
/// azure-functions-host `EnvironmentExtensions.IsEasyAuthEnabled`), or else a whole number that is
/// not 0 (`HostEasyAuthOptionsSetup.IsSiteAuthEnabled`: `int.TryParse`, `Convert.ToBoolean`).
fn platform_flag(value: &str) -> bool {
    let value = value.trim();
    value.eq_ignore_ascii_case("true") || value.parse::<i32>().is_ok_and(|number| number != 0)
}

#[cfg(test)]
mod tests;
