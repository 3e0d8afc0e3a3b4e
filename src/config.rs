//! Configuration, from the environment (the Functions host passes app settings as environment
//! variables; locally, `cargo run` needs none of them).

use std::net::SocketAddr;
use std::path::PathBuf;

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

impl Config {
    /// The settings from the process's environment (`local.settings.json`'s `Values` under the host); an error says which setting is wrong and why.
    pub fn from_env() -> Result<Config, String> {
        Self::from_lookup(|name| std::env::var(name).ok().filter(|value| !value.trim().is_empty()))
    }

    /// The configuration described by `lookup` (an environment), for tests.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, String> {
        let listen = match lookup("FUNCTIONS_CUSTOMHANDLER_PORT") {
            // Under the Functions host: it calls the handler on loopback at the port it chose.
            Some(port) => {
                let port: u16 = port.parse().map_err(|_| format!("FUNCTIONS_CUSTOMHANDLER_PORT is not a port: {port:?}"))?;
                SocketAddr::from(([127, 0, 0, 1], port))
            }
            None => {
                let address = lookup("BLOG_LISTEN").unwrap_or_else(|| LOCAL_ADDRESS.to_owned());
                address.parse().map_err(|_| format!("BLOG_LISTEN is not an address like {LOCAL_ADDRESS}: {address:?}"))?
            }
        };
        let endpoint_setting = format!("{CONNECTION_SETTING}__accountEndpoint");
        let backend = match (lookup(CONNECTION_SETTING), lookup(&endpoint_setting)) {
            (Some(_), Some(_)) => return Err(format!("set either {CONNECTION_SETTING} or {endpoint_setting}, not both")),
            (Some(connection_string), None) => Backend::ConnectionString(connection_string),
            (None, Some(endpoint)) => {
                Backend::Endpoint { endpoint, client_id: lookup(&format!("{CONNECTION_SETTING}__clientId")) }
            }
            (None, None) => embedded_backend(&lookup)?,
        };
        let create_default = !matches!(backend, Backend::Endpoint { .. });
        let create_containers = match lookup("BLOG_CREATE_CONTAINERS").as_deref() {
            None => create_default,
            Some("true") => true,
            Some("false") => false,
            Some(other) => return Err(format!("BLOG_CREATE_CONTAINERS must be true or false, not {other:?}")),
        };
        let database = lookup("COSMOS_DATABASE").unwrap_or_else(|| "blog".to_owned());
        let embedded = matches!(backend, Backend::Embedded { .. });
        let change_feed = match lookup("BLOG_CHANGE_FEED").as_deref() {
            None if embedded => ChangeFeedMode::Local,
            None | Some("host") => ChangeFeedMode::Host,
            Some("local") => ChangeFeedMode::Local,
            Some(other) => return Err(format!("BLOG_CHANGE_FEED must be local or host, not {other:?}")),
        };
        let scripts = match lookup("BLOG_SCRIPTS").as_deref() {
            None if matches!(backend, Backend::Endpoint { .. }) => ScriptsMode::Server,
            None | Some("in-process") => ScriptsMode::InProcess,
            Some("server") if embedded => {
                return Err("BLOG_SCRIPTS=server needs a Cosmos DB account; the embedded store cannot run scripts".into());
            }
            Some("server") => ScriptsMode::Server,
            Some(other) => return Err(format!("BLOG_SCRIPTS must be server or in-process, not {other:?}")),
        };
        let max_in_flight = in_range(&lookup, "BLOG_MAX_IN_FLIGHT", "a number", 1..=MAX_IN_FLIGHT_LIMIT)?
            .map_or(DEFAULT_MAX_IN_FLIGHT, |n| n as usize);
        // The platform sets WEBSITE_AUTH_ENABLED when App Service Authentication is on; trusting its
        // headers without it would let any client pick its identity.
        let platform_auth = lookup("WEBSITE_AUTH_ENABLED").is_some_and(|value| platform_flag(&value));
        let auth = match lookup("BLOG_AUTH").as_deref() {
            None if platform_auth => AuthMode::Platform,
            None | Some("none") => AuthMode::None,
            Some("platform") if platform_auth => AuthMode::Platform,
            Some("platform") => {
                return Err("BLOG_AUTH=platform needs App Service Authentication on (WEBSITE_AUTH_ENABLED=true)".into());
            }
            #[cfg(feature = "embedded")]
            Some("development") if platform_auth => {
                return Err("BLOG_AUTH=development is refused where App Service Authentication is on".into());
            }
            #[cfg(feature = "embedded")]
            Some("development") => AuthMode::Development,
            Some(other) => return Err(format!("BLOG_AUTH must be platform or none{}, not {other:?}", development_hint())),
        };
        let header_timeout = in_range(&lookup, "BLOG_HEADER_TIMEOUT", "a number of seconds", 1..=MAX_TIMEOUT_SECS)?
            .map_or(DEFAULT_HEADER_TIMEOUT, std::time::Duration::from_secs);
        let request_timeout = in_range(&lookup, "BLOG_REQUEST_TIMEOUT", "a number of seconds", 1..=MAX_TIMEOUT_SECS)?
            .map_or(DEFAULT_REQUEST_TIMEOUT, std::time::Duration::from_secs);
        let token_key = lookup("BLOG_TOKEN_KEY");
        if let Some(key) = &token_key
            && key.len() < 16
        {
            return Err("BLOG_TOKEN_KEY must be at least 16 characters (a random secret, the same on every instance)".into());
        }
        let write_limit = write_limit(&lookup)?;
        let pictures = picture_storage(&lookup, &backend)?;
        let pictures_per_writer = positive(&lookup, "BLOG_PICTURES_PER_WRITER", "a positive number of pictures")?;
        let picture_mb_per_writer =
            in_range(&lookup, "BLOG_PICTURE_MB_PER_WRITER", "a number of megabytes", 1..=MAX_PICTURE_MB_PER_WRITER)?;
        let picture_memory_mb = positive(&lookup, "BLOG_PICTURE_MEMORY_MB", "a positive number of megabytes")?;
        let upload_buffer_mb = positive(&lookup, "BLOG_UPLOAD_BUFFER_MB", "a positive number of megabytes")?;
        // At least one upload of the largest size fits.
        if upload_buffer_mb.is_some_and(|megabytes| !(11..=crate::app::pictures::PictureMemory::MAX_MB).contains(&megabytes)) {
            return Err(format!(
                "BLOG_UPLOAD_BUFFER_MB must be from 11 (one upload of the largest size) to {}",
                crate::app::pictures::PictureMemory::MAX_MB
            ));
        }
        if let Some(megabytes) = picture_memory_mb
            && !(16..=crate::app::pictures::PictureMemory::MAX_MB).contains(&megabytes)
        {
            return Err(format!(
                "BLOG_PICTURE_MEMORY_MB must be from 16 to {}, not {megabytes}",
                crate::app::pictures::PictureMemory::MAX_MB
            ));
        }
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
            auth,
            token_key,
            write_limit,
            pictures,
            pictures_per_writer,
            picture_mb_per_writer,
            picture_memory_mb,
            upload_buffer_mb,
        })
    }
}

/// [`PictureStorage`] from `BLOG_PICTURES`, `BLOG_PICTURES__blobServiceUri` and
/// `BLOG_PICTURES_CONTAINER`; with none of them, the data directory on the embedded store and
/// nothing elsewhere (an instance's own disk is not shared by the others).
fn picture_storage(lookup: &impl Fn(&str) -> Option<String>, backend: &Backend) -> Result<PictureStorage, String> {
    let endpoint_setting = format!("{PICTURES_SETTING}__blobServiceUri");
    let container = lookup("BLOG_PICTURES_CONTAINER").unwrap_or_else(|| "pictures".to_owned());
    let valid_container = (3..=63).contains(&container.len())
        && container.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
        && !container.starts_with('-')
        && !container.ends_with('-')
        && !container.contains("--");
    if !valid_container {
        return Err(format!(
            "BLOG_PICTURES_CONTAINER must be a Blob Storage container name (3 to 63 lowercase letters, digits and single hyphens), not {container:?}"
        ));
    }
    match (lookup(PICTURES_SETTING), lookup(&endpoint_setting)) {
        (Some(_), Some(_)) => Err(format!("set either {PICTURES_SETTING} or {endpoint_setting}, not both")),
        (Some(off), None) if off == "off" => Ok(PictureStorage::Off),
        (Some(connection_string), None) => Ok(PictureStorage::ConnectionString { connection_string, container }),
        (None, Some(service_uri)) => {
            let client_id = lookup(&format!("{PICTURES_SETTING}__clientId"));
            Ok(PictureStorage::Endpoint { service_uri, client_id, container })
        }
        (None, None) => Ok(match backend {
            Backend::Embedded { data_dir } => PictureStorage::DataDirectory(data_dir.clone()),
            _ => PictureStorage::Off,
        }),
    }
}

/// `BLOG_WRITES_PER_MINUTE` (a number, or `off`) and `BLOG_WRITE_BURST` (a number).
fn write_limit(lookup: &impl Fn(&str) -> Option<String>) -> Result<Option<WriteLimitSetting>, String> {
    let burst = positive(lookup, "BLOG_WRITE_BURST", "a positive number of writes")?;
    let per_minute = match lookup("BLOG_WRITES_PER_MINUTE").as_deref() {
        Some("off") if burst.is_some() => return Err("BLOG_WRITE_BURST is set, but BLOG_WRITES_PER_MINUTE is off".into()),
        Some("off") => return Ok(None),
        _ => positive(lookup, "BLOG_WRITES_PER_MINUTE", "a positive number of writes, or off")?,
    };
    let as_u32 = |value: u64, name: &str| u32::try_from(value).map_err(|_| format!("{name} is too large: {value}"));
    Ok(Some(WriteLimitSetting {
        per_minute: per_minute.map_or(Ok(WriteLimitSetting::DEFAULT.per_minute), |n| as_u32(n, "BLOG_WRITES_PER_MINUTE"))?,
        burst: burst.map_or(Ok(WriteLimitSetting::DEFAULT.burst), |n| as_u32(n, "BLOG_WRITE_BURST"))?,
    }))
}

/// A setting that holds a whole number above 0 (`None` when it is not set); `what` says what it
/// must be when it is not one.
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

/// A whole number setting within `range`, if set; refused, naming the range, if not.
fn in_range(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &str,
    what: &str,
    range: std::ops::RangeInclusive<u64>,
) -> Result<Option<u64>, String> {
    match lookup(name) {
        None => Ok(None),
        Some(text) => text
            .parse()
            .ok()
            .filter(|n| range.contains(n))
            .map(Some)
            .ok_or_else(|| format!("{name} must be {what} from {} to {}, not {text:?}", range.start(), range.end())),
    }
}

fn positive(lookup: &impl Fn(&str) -> Option<String>, name: &str, what: &str) -> Result<Option<u64>, String> {
    match lookup(name) {
        None => Ok(None),
        Some(text) => {
            text.parse().ok().filter(|n| *n > 0).map(Some).ok_or_else(|| format!("{name} must be {what}, not {text:?}"))
        }
    }
}

fn development_hint() -> &'static str {
    if cfg!(feature = "embedded") { " (or development, locally)" } else { "" }
}

#[cfg(feature = "embedded")]
fn embedded_backend(lookup: &impl Fn(&str) -> Option<String>) -> Result<Backend, String> {
    let data_dir = lookup("BLOG_DATA_DIR").map_or_else(|| PathBuf::from("data"), PathBuf::from);
    Ok(Backend::Embedded { data_dir })
}

#[cfg(not(feature = "embedded"))]
fn embedded_backend(_: &impl Fn(&str) -> Option<String>) -> Result<Backend, String> {
    Err(format!(
        "no Cosmos DB account configured: set {CONNECTION_SETTING} (connection string) or \
         {CONNECTION_SETTING}__accountEndpoint (Entra ID); this build has no embedded store"
    ))
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
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(pairs: &[(&str, &str)]) -> Result<Config, String> {
        let env: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(|name| env.get(name).cloned())
    }

    #[test]
    fn the_write_limit_has_a_default_can_be_set_and_turned_off() {
        assert_eq!(config(&[]).unwrap().write_limit, Some(WriteLimitSetting::DEFAULT));
        let set = config(&[("BLOG_WRITES_PER_MINUTE", "30"), ("BLOG_WRITE_BURST", "5")]).unwrap();
        assert_eq!(set.write_limit, Some(WriteLimitSetting { per_minute: 30, burst: 5 }));
        assert_eq!(config(&[("BLOG_WRITES_PER_MINUTE", "off")]).unwrap().write_limit, None);
        for bad in [
            &[("BLOG_WRITES_PER_MINUTE", "0")][..],
            &[("BLOG_WRITE_BURST", "many")],
            &[("BLOG_WRITES_PER_MINUTE", "off"), ("BLOG_WRITE_BURST", "5")],
        ] {
            let error = config(bad).unwrap_err();
            assert!(error.contains("BLOG_WRITE"), "{error}");
        }
    }

    #[test]
    fn under_the_host_the_port_comes_from_the_host() {
        let config = config(&[
            ("FUNCTIONS_CUSTOMHANDLER_PORT", "41234"),
            ("CosmosDB__accountEndpoint", "https://a.documents.azure.com:443/"),
        ])
        .unwrap();
        assert_eq!(config.listen.to_string(), "127.0.0.1:41234");
        assert!(matches!(config.backend, Backend::Endpoint { .. }));
        assert!(!config.create_containers, "an Entra identity has no control-plane rights");
        assert_eq!(config.change_feed, ChangeFeedMode::Host);
        assert_eq!(config.scripts, ScriptsMode::Server, "Azure runs the scripts itself");
    }

    #[test]
    fn a_connection_string_selects_key_auth_and_creates_containers() {
        let config = config(&[("CosmosDB", "AccountEndpoint=https://localhost:8081/;AccountKey=C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==;")]).unwrap();
        assert!(matches!(config.backend, Backend::ConnectionString(_)));
        assert!(config.create_containers);
        assert_eq!(config.database, "blog");
        assert_eq!(config.scripts, ScriptsMode::InProcess, "the Linux emulator cannot run scripts");
        assert_eq!(config.change_feed, ChangeFeedMode::Host);
    }

    /// Where the host's trigger cannot serve an account's change feed (the Linux emulator), the
    /// handler's own processors may follow it.
    #[test]
    fn an_account_may_have_its_change_feed_followed_by_the_handler() {
        let key = "AccountEndpoint=https://localhost:8081/;AccountKey=C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==;";
        let followed = config(&[("CosmosDB", key), ("BLOG_CHANGE_FEED", "local")]).unwrap();
        assert_eq!(followed.change_feed, ChangeFeedMode::Local);
        assert!(config(&[("BLOG_CHANGE_FEED", "sometimes")]).unwrap_err().contains("BLOG_CHANGE_FEED"));
    }

    /// The README: "a connection has 30 s to send a request's headers or its next request",
    /// unless BLOG_HEADER_TIMEOUT says otherwise (tests/serving.rs holds the timeout on the binary
    /// with a short one).
    #[test]
    fn the_header_timeout_is_30_seconds_unless_set() {
        assert_eq!(config(&[]).unwrap().request_timeout, std::time::Duration::from_secs(60));
        assert_eq!(config(&[("BLOG_REQUEST_TIMEOUT", "5")]).unwrap().request_timeout, std::time::Duration::from_secs(5));
        assert!(config(&[("BLOG_REQUEST_TIMEOUT", "0")]).unwrap_err().contains("BLOG_REQUEST_TIMEOUT"));
        assert_eq!(config(&[]).unwrap().header_timeout, std::time::Duration::from_secs(30));
        assert_eq!(config(&[("BLOG_HEADER_TIMEOUT", "2")]).unwrap().header_timeout, std::time::Duration::from_secs(2));
    }

    #[test]
    fn bad_settings_are_named() {
        assert!(config(&[("FUNCTIONS_CUSTOMHANDLER_PORT", "http")]).unwrap_err().contains("FUNCTIONS_CUSTOMHANDLER_PORT"));
        assert!(config(&[("CosmosDB", "x"), ("CosmosDB__accountEndpoint", "y")]).is_err());
        assert!(config(&[("BLOG_CREATE_CONTAINERS", "yes")]).unwrap_err().contains("BLOG_CREATE_CONTAINERS"));
        assert!(config(&[("BLOG_MAX_IN_FLIGHT", "0")]).unwrap_err().contains("BLOG_MAX_IN_FLIGHT"));
        // Past what a semaphore counts, or a deadline can be computed from: refused, not a panic.
        let huge = u64::MAX.to_string();
        for name in ["BLOG_MAX_IN_FLIGHT", "BLOG_HEADER_TIMEOUT", "BLOG_REQUEST_TIMEOUT"] {
            let refused = config(&[(name, huge.as_str())]).unwrap_err();
            assert!(refused.contains(name) && refused.contains(" from 1 to "), "{refused}");
        }
        let largest =
            config(&[("BLOG_MAX_IN_FLIGHT", &MAX_IN_FLIGHT_LIMIT.to_string()), ("BLOG_REQUEST_TIMEOUT", "3600")]).unwrap();
        assert_eq!((largest.max_in_flight as u64, largest.request_timeout.as_secs()), (MAX_IN_FLIGHT_LIMIT, MAX_TIMEOUT_SECS));
        assert!(config(&[("BLOG_HEADER_TIMEOUT", "0")]).unwrap_err().contains("BLOG_HEADER_TIMEOUT"));
        assert!(config(&[("BLOG_HEADER_TIMEOUT", "5s")]).unwrap_err().contains("BLOG_HEADER_TIMEOUT"));
        assert!(config(&[("BLOG_AUTH", "platform")]).unwrap_err().contains("WEBSITE_AUTH_ENABLED"), "no platform, no trust");
        assert!(config(&[("BLOG_AUTH", "development"), ("WEBSITE_AUTH_ENABLED", "True")]).is_err());
    }

    /// A writer's quota in megabytes past what a `u64` counts in bytes is refused, naming the
    /// range, instead of being cut short to some other quota.
    #[test]
    fn a_picture_quota_past_a_u64_of_bytes_is_refused() {
        let refused = config(&[("BLOG_PICTURE_MB_PER_WRITER", &(MAX_PICTURE_MB_PER_WRITER + 1).to_string())]).unwrap_err();
        assert!(refused.contains("BLOG_PICTURE_MB_PER_WRITER") && refused.contains(" from 1 to "), "{refused}");
        let largest = config(&[("BLOG_PICTURE_MB_PER_WRITER", &MAX_PICTURE_MB_PER_WRITER.to_string())]).unwrap();
        assert_eq!(largest.picture_mb_per_writer, Some(MAX_PICTURE_MB_PER_WRITER));
    }

    #[test]
    fn writes_are_refused_unless_something_authenticates_the_caller() {
        assert_eq!(config(&[]).unwrap().auth, AuthMode::None);
        for on in ["True", "true", " TRUE ", "1", "-1"] {
            assert_eq!(config(&[("WEBSITE_AUTH_ENABLED", on)]).unwrap().auth, AuthMode::Platform, "{on:?}");
        }
        for off in ["False", "0", "", "yes", "on"] {
            assert_eq!(config(&[("WEBSITE_AUTH_ENABLED", off)]).unwrap().auth, AuthMode::None, "{off:?}");
        }
        #[cfg(feature = "embedded")]
        assert_eq!(config(&[("BLOG_AUTH", "development")]).unwrap().auth, AuthMode::Development);
    }

    #[test]
    fn pictures_are_kept_where_the_settings_say() {
        let azurite = config(&[("BLOG_PICTURES", "UseDevelopmentStorage=true")]).unwrap();
        assert_eq!(
            azurite.pictures,
            PictureStorage::ConnectionString {
                connection_string: "UseDevelopmentStorage=true".into(),
                container: "pictures".into()
            }
        );
        let azure = config(&[
            ("CosmosDB__accountEndpoint", "https://a.documents.azure.com:443/"),
            ("BLOG_PICTURES__blobServiceUri", "https://a.blob.core.windows.net"),
            ("BLOG_PICTURES__clientId", "1234"),
            ("BLOG_PICTURES_CONTAINER", "blog-pictures"),
        ])
        .unwrap();
        assert_eq!(
            azure.pictures,
            PictureStorage::Endpoint {
                service_uri: "https://a.blob.core.windows.net".into(),
                client_id: Some("1234".into()),
                container: "blog-pictures".into()
            }
        );
        let account_alone = config(&[("CosmosDB__accountEndpoint", "https://a.documents.azure.com:443/")]).unwrap();
        assert_eq!(account_alone.pictures, PictureStorage::Off, "an instance's disk is not shared");
        assert_eq!(config(&[("BLOG_PICTURES", "off")]).unwrap().pictures, PictureStorage::Off);
        for bad in [
            &[("BLOG_PICTURES", "x"), ("BLOG_PICTURES__blobServiceUri", "y")][..],
            &[("BLOG_PICTURES_CONTAINER", "Pictures")],
            &[("BLOG_PICTURES_CONTAINER", "a--b")],
            &[("BLOG_PICTURES_PER_WRITER", "0")],
        ] {
            assert!(config(bad).unwrap_err().contains("BLOG_PICTURE"), "{bad:?}");
        }
    }

    #[cfg(feature = "embedded")]
    #[test]
    fn nothing_configured_means_the_embedded_store_on_the_local_port() {
        let config = config(&[]).unwrap();
        assert_eq!(config.listen.to_string(), LOCAL_ADDRESS);
        assert!(matches!(config.backend, Backend::Embedded { ref data_dir } if data_dir == &PathBuf::from("data")));
        assert_eq!(config.pictures, PictureStorage::DataDirectory(PathBuf::from("data")));
        assert_eq!(config.change_feed, ChangeFeedMode::Local);
        assert_eq!(config.scripts, ScriptsMode::InProcess);
    }
}
