//! How each setting is read from the environment: one reader per area (the store, serving,
//! sign-in, pictures, the write limit), each with its defaults and its bounds. So a setting
//! that is wrong stops the start with its name and why, never later with a panic or an
//! overflow. `Config::from_lookup` only puts their answers together.

use std::net::SocketAddr;
#[cfg(feature = "embedded")]
use std::path::PathBuf;

use super::{
    ACCOUNT_CLIENT_ID_SETTING, ACCOUNT_ENDPOINT_SETTING, AuthMode, Backend, CONNECTION_SETTING,
    ChangeFeedMode, ConfigError, DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_PUBLISH_EVERY, DEFAULT_REQUEST_TIMEOUT, LOCAL_ADDRESS, PICTURES_CLIENT_ID_SETTING,
    PICTURES_ENDPOINT_SETTING, PICTURES_SETTING, PictureStorage, ScriptsMode, WriteLimitSetting,
};

/// A source of settings: the environment, or a test's map. Unset and blank are the same.
pub(super) type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Where the data lives: `CosmosDB` (a connection string) or `CosmosDB__accountEndpoint`
/// (Entra ID), else the embedded store.
pub(super) fn backend(lookup: Lookup<'_>) -> Result<Backend, ConfigError> {
    match (lookup(CONNECTION_SETTING), lookup(ACCOUNT_ENDPOINT_SETTING)) {
        (Some(_), Some(_)) => Err(ConfigError::Conflict {
            first: CONNECTION_SETTING,
            second: ACCOUNT_ENDPOINT_SETTING,
        }),
        (Some(connection_string), None) => Ok(Backend::ConnectionString(connection_string)),
        (None, Some(endpoint)) => {
            Ok(Backend::Endpoint { endpoint, client_id: lookup(ACCOUNT_CLIENT_ID_SETTING) })
        }
        (None, None) => embedded_backend(lookup),
    }
}

/// The store's settings beside the backend itself.
pub(super) struct StoreSettings {
    pub(super) database: String,
    pub(super) create_containers: bool,
    pub(super) change_feed: ChangeFeedMode,
    pub(super) scripts: ScriptsMode,
}

/// `COSMOS_DATABASE`, `BLOG_CREATE_CONTAINERS`, `BLOG_CHANGE_FEED` and `BLOG_SCRIPTS`, whose
/// defaults follow the backend.
pub(super) fn store(lookup: Lookup<'_>, backend: &Backend) -> Result<StoreSettings, ConfigError> {
    let embedded = matches!(backend, Backend::Embedded { .. });
    let entra = matches!(backend, Backend::Endpoint { .. });
    let create_containers =
        choice(lookup, "BLOG_CREATE_CONTAINERS", &[("true", true), ("false", false)])?
            .unwrap_or(!entra);
    let change_feed = choice(
        lookup,
        "BLOG_CHANGE_FEED",
        &[("local", ChangeFeedMode::Local), ("host", ChangeFeedMode::Host)],
    )?
    .unwrap_or(if embedded { ChangeFeedMode::Local } else { ChangeFeedMode::Host });
    let scripts = match choice(
        lookup,
        "BLOG_SCRIPTS",
        &[("server", ScriptsMode::Server), ("in-process", ScriptsMode::InProcess)],
    )? {
        Some(ScriptsMode::Server) if embedded => {
            return Err(ConfigError::ServerScriptsWithoutAccount);
        }
        Some(scripts) => scripts,
        None if entra => ScriptsMode::Server,
        None => ScriptsMode::InProcess,
    };
    let database = lookup("COSMOS_DATABASE").unwrap_or_else(|| "blog".to_owned());
    Ok(StoreSettings { database, create_containers, change_feed, scripts })
}

/// How the server takes requests.
pub(super) struct Serving {
    pub(super) listen: SocketAddr,
    pub(super) max_in_flight: usize,
    pub(super) header_timeout: std::time::Duration,
    pub(super) request_timeout: std::time::Duration,
    pub(super) publish_every: std::time::Duration,
}

/// The address (`FUNCTIONS_CUSTOMHANDLER_PORT` under the host, else `BLOG_LISTEN`), how many
/// requests at once (`BLOG_MAX_IN_FLIGHT`) and how long each may take.
pub(super) fn serving(lookup: Lookup<'_>) -> Result<Serving, ConfigError> {
    let listen = match lookup("FUNCTIONS_CUSTOMHANDLER_PORT") {
        // Under the Functions host: it calls the handler on loopback at the port it chose.
        Some(port) => match port.parse::<u16>() {
            Ok(port) => SocketAddr::from(([127, 0, 0, 1], port)),
            Err(_) => {
                return Err(ConfigError::Invalid {
                    name: "FUNCTIONS_CUSTOMHANDLER_PORT",
                    value: port,
                    expected: "a port",
                });
            }
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
        header_timeout: seconds("BLOG_HEADER_TIMEOUT")?
            .map_or(DEFAULT_HEADER_TIMEOUT, std::time::Duration::from_secs),
        request_timeout: seconds("BLOG_REQUEST_TIMEOUT")?
            .map_or(DEFAULT_REQUEST_TIMEOUT, std::time::Duration::from_secs),
        publish_every: seconds("BLOG_PUBLISH_EVERY")?
            .map_or(DEFAULT_PUBLISH_EVERY, std::time::Duration::from_secs),
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
pub(super) fn auth(lookup: Lookup<'_>) -> Result<AuthMode, ConfigError> {
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
pub(super) fn token_key(lookup: Lookup<'_>) -> Result<Option<String>, ConfigError> {
    match lookup("BLOG_TOKEN_KEY") {
        Some(key) if key.len() < MIN_TOKEN_KEY_CHARS => Err(ConfigError::TooShort {
            name: "BLOG_TOKEN_KEY",
            length: key.len(),
            min: MIN_TOKEN_KEY_CHARS,
        }),
        key => Ok(key),
    }
}

/// The pictures' settings: where they are kept, and how much each writer and the instance may
/// hold.
pub(super) struct PictureSettings {
    pub(super) pictures: PictureStorage,
    pub(super) pictures_per_writer: Option<u64>,
    pub(super) picture_mb_per_writer: Option<u64>,
    pub(super) picture_memory_mb: Option<u64>,
    pub(super) upload_buffer_mb: Option<u64>,
}

/// [`PictureSettings`]: [`picture_storage`], then the quotas and the memory.
pub(super) fn picture_settings(
    lookup: Lookup<'_>,
    backend: &Backend,
) -> Result<PictureSettings, ConfigError> {
    let max_mb = crate::config::MAX_PICTURE_MEMORY_MB;
    Ok(PictureSettings {
        pictures: picture_storage(lookup, backend)?,
        pictures_per_writer: positive(
            lookup,
            "BLOG_PICTURES_PER_WRITER",
            "a positive number of pictures",
        )?,
        picture_mb_per_writer: in_range(
            lookup,
            "BLOG_PICTURE_MB_PER_WRITER",
            "a number of megabytes",
            1..=MAX_PICTURE_MB_PER_WRITER,
        )?,
        // Room for the largest picture's decoding.
        picture_memory_mb: in_range(
            lookup,
            "BLOG_PICTURE_MEMORY_MB",
            "a number of megabytes",
            16..=max_mb,
        )?,
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
        && container
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
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
        (Some(_), Some(_)) => Err(ConfigError::Conflict {
            first: PICTURES_SETTING,
            second: PICTURES_ENDPOINT_SETTING,
        }),
        (Some(off), None) if off == "off" => Ok(PictureStorage::Off),
        (Some(connection_string), None) => {
            Ok(PictureStorage::ConnectionString { connection_string, container })
        }
        (None, Some(service_uri)) => Ok(PictureStorage::Endpoint {
            service_uri,
            client_id: lookup(PICTURES_CLIENT_ID_SETTING),
            container,
        }),
        (None, None) => Ok(match backend {
            Backend::Embedded { data_dir } => PictureStorage::DataDirectory(data_dir.clone()),
            _ => PictureStorage::Off,
        }),
    }
}

/// `BLOG_WRITES_PER_MINUTE` (a number, or `off`) and `BLOG_WRITE_BURST` (a number), each at
/// most what a `u32` holds.
pub(super) fn write_limit(lookup: Lookup<'_>) -> Result<Option<WriteLimitSetting>, ConfigError> {
    let writes = 1..=u64::from(u32::MAX);
    let burst = in_range(lookup, "BLOG_WRITE_BURST", "a number of writes", writes.clone())?;
    let per_minute = match lookup("BLOG_WRITES_PER_MINUTE").as_deref() {
        Some("off") if burst.is_some() => return Err(ConfigError::BurstWithoutLimit),
        Some("off") => return Ok(None),
        _ => in_range(
            lookup,
            "BLOG_WRITES_PER_MINUTE",
            "a number of writes a minute (or off)",
            writes,
        )?,
    };
    Ok(Some(WriteLimitSetting {
        per_minute: per_minute.unwrap_or(WriteLimitSetting::DEFAULT.per_minute),
        burst: burst.unwrap_or(WriteLimitSetting::DEFAULT.burst),
    }))
}

/// The most `BLOG_MAX_IN_FLIGHT` may be: as many as the connections the server can hold at most
/// (`http::serve`: one a file descriptor, of at most 2^20). That is far below what a semaphore
/// can count (`Semaphore::MAX_PERMITS`, which a larger setting made the start panic on).
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
        _ => Err(ConfigError::OutOfRange {
            name,
            value,
            what,
            min: *range.start(),
            max: *range.end(),
        }),
    }
}

/// A setting that holds a whole number above 0 (`None` when it is not set); `expected` says
/// what it must be when it is not one.
fn positive(
    lookup: Lookup<'_>,
    name: &'static str,
    expected: &'static str,
) -> Result<Option<u64>, ConfigError> {
    let Some(value) = lookup(name) else { return Ok(None) };
    match value.parse::<u64>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(ConfigError::Invalid { name, value, expected }),
    }
}

/// A setting that holds one of the words of `options`, as the value the word stands for.
fn choice<T: Copy>(
    lookup: Lookup<'_>,
    name: &'static str,
    options: &[(&'static str, T)],
) -> Result<Option<T>, ConfigError> {
    let Some(value) = lookup(name) else { return Ok(None) };
    match options.iter().find(|(word, _)| *word == value) {
        Some((_, meaning)) => Ok(Some(*meaning)),
        None => Err(ConfigError::NotOneOf {
            name,
            value,
            allowed: options.iter().map(|(word, _)| *word).collect(),
        }),
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
