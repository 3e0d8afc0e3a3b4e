//! The settings read from a map, as the environment would hold them.

use super::read::{MAX_IN_FLIGHT_LIMIT, MAX_PICTURE_MB_PER_WRITER, MAX_TIMEOUT_SECS};
use super::*;
use std::collections::HashMap;

fn config(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let env: HashMap<String, String> =
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Config::from_lookup(|name| env.get(name).cloned())
}

#[test]
fn the_write_limit_is_configurable() {
    assert_eq!(config(&[]).unwrap().write_limit, Some(WriteLimitSetting::DEFAULT));
    let set = config(&[("BLOG_WRITES_PER_MINUTE", "30"), ("BLOG_WRITE_BURST", "5")]).unwrap();
    assert_eq!(set.write_limit, Some(WriteLimitSetting { per_minute: 30, burst: 5 }));
    assert_eq!(config(&[("BLOG_WRITES_PER_MINUTE", "off")]).unwrap().write_limit, None);
    let writes = u64::from(u32::MAX);
    assert_eq!(
        config(&[("BLOG_WRITES_PER_MINUTE", "0")]).unwrap_err(),
        ConfigError::OutOfRange {
            name: "BLOG_WRITES_PER_MINUTE",
            value: "0".into(),
            what: "a number of writes a minute (or off)",
            min: 1,
            max: writes
        }
    );
    assert!(matches!(
        config(&[("BLOG_WRITE_BURST", "many")]).unwrap_err(),
        ConfigError::OutOfRange { name: "BLOG_WRITE_BURST", value, .. } if value == "many"
    ));
    assert_eq!(
        config(&[("BLOG_WRITES_PER_MINUTE", "off"), ("BLOG_WRITE_BURST", "5")]).unwrap_err(),
        ConfigError::BurstWithoutLimit
    );
}

/// A rate or a burst past what the limiter counts in is refused with its range, not cut
/// short.
#[test]
fn a_write_limit_past_a_u32_is_refused() {
    let past = (u64::from(u32::MAX) + 1).to_string();
    let refused = config(&[("BLOG_WRITE_BURST", past.as_str())]).unwrap_err();
    assert!(
        matches!(refused, ConfigError::OutOfRange { name: "BLOG_WRITE_BURST", min: 1, max, .. } if max == u64::from(u32::MAX)),
        "{refused:?}"
    );
    let largest = config(&[("BLOG_WRITES_PER_MINUTE", &u32::MAX.to_string())]).unwrap();
    assert_eq!(largest.write_limit.map(|limit| limit.per_minute), Some(u32::MAX));
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
fn a_connection_string_selects_key_auth() {
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
    assert_eq!(
        config(&[("BLOG_CHANGE_FEED", "sometimes")]).unwrap_err(),
        ConfigError::NotOneOf {
            name: "BLOG_CHANGE_FEED",
            value: "sometimes".into(),
            allowed: vec!["local", "host"]
        }
    );
}

/// docs/configuration.md: "a connection has 30 s to send a request's headers or its next request",
/// unless BLOG_HEADER_TIMEOUT says otherwise (tests/serving.rs holds the timeout on the binary
/// with a short one).
#[test]
fn the_header_timeout_is_30_seconds_unless_set() {
    assert_eq!(config(&[]).unwrap().request_timeout, std::time::Duration::from_secs(60));
    assert_eq!(
        config(&[("BLOG_REQUEST_TIMEOUT", "5")]).unwrap().request_timeout,
        std::time::Duration::from_secs(5)
    );
    assert!(matches!(
        config(&[("BLOG_REQUEST_TIMEOUT", "0")]).unwrap_err(),
        ConfigError::OutOfRange { name: "BLOG_REQUEST_TIMEOUT", min: 1, max: MAX_TIMEOUT_SECS, .. }
    ));
    assert_eq!(config(&[]).unwrap().header_timeout, std::time::Duration::from_secs(30));
    assert_eq!(
        config(&[("BLOG_HEADER_TIMEOUT", "2")]).unwrap().header_timeout,
        std::time::Duration::from_secs(2)
    );
}

#[test]
fn bad_settings_are_named() {
    assert_eq!(
        config(&[("FUNCTIONS_CUSTOMHANDLER_PORT", "http")]).unwrap_err(),
        ConfigError::Invalid {
            name: "FUNCTIONS_CUSTOMHANDLER_PORT",
            value: "http".into(),
            expected: "a port"
        }
    );
    let refused = config(&[("BLOG_LISTEN", "localhost")]).unwrap_err();
    assert!(
        matches!(&refused, ConfigError::Invalid { name: "BLOG_LISTEN", value, .. } if value == "localhost")
    );
    assert!(
        refused.to_string().contains(LOCAL_ADDRESS),
        "the example is the local address: {refused}"
    );
    assert_eq!(
        config(&[("CosmosDB", "x"), ("CosmosDB__accountEndpoint", "y")]).unwrap_err(),
        ConfigError::Conflict { first: "CosmosDB", second: "CosmosDB__accountEndpoint" }
    );
    assert!(matches!(
        config(&[("BLOG_CREATE_CONTAINERS", "yes")]).unwrap_err(),
        ConfigError::NotOneOf { name: "BLOG_CREATE_CONTAINERS", .. }
    ));
    assert!(matches!(
        config(&[("BLOG_MAX_IN_FLIGHT", "0")]).unwrap_err(),
        ConfigError::OutOfRange {
            name: "BLOG_MAX_IN_FLIGHT",
            min: 1,
            max: MAX_IN_FLIGHT_LIMIT,
            ..
        }
    ));
    // Past what a semaphore counts, or a deadline can be computed from: refused, not a panic.
    let huge = u64::MAX.to_string();
    for name in ["BLOG_MAX_IN_FLIGHT", "BLOG_HEADER_TIMEOUT", "BLOG_REQUEST_TIMEOUT"] {
        let refused = config(&[(name, huge.as_str())]).unwrap_err();
        assert!(
            matches!(&refused, ConfigError::OutOfRange { name: refused_name, .. } if *refused_name == name),
            "{refused:?}"
        );
        assert!(refused.to_string().contains(" from 1 to "), "{refused}");
    }
    let largest = config(&[
        ("BLOG_MAX_IN_FLIGHT", &MAX_IN_FLIGHT_LIMIT.to_string()),
        ("BLOG_REQUEST_TIMEOUT", "3600"),
    ])
    .unwrap();
    assert_eq!(
        (largest.max_in_flight as u64, largest.request_timeout.as_secs()),
        (MAX_IN_FLIGHT_LIMIT, MAX_TIMEOUT_SECS)
    );
    for seconds in ["0", "5s"] {
        assert!(matches!(
            config(&[("BLOG_HEADER_TIMEOUT", seconds)]).unwrap_err(),
            ConfigError::OutOfRange { name: "BLOG_HEADER_TIMEOUT", value, .. } if value == seconds
        ));
    }
    assert_eq!(
        config(&[("BLOG_AUTH", "platform")]).unwrap_err(),
        ConfigError::PlatformAuthOff,
        "no platform, no trust"
    );
    assert!(matches!(
        config(&[("BLOG_AUTH", "sometimes")]).unwrap_err(),
        ConfigError::NotOneOf { name: "BLOG_AUTH", .. }
    ));
    #[cfg(feature = "embedded")]
    assert_eq!(
        config(&[("BLOG_AUTH", "development"), ("WEBSITE_AUTH_ENABLED", "True")]).unwrap_err(),
        ConfigError::DevelopmentAuthOnPlatform
    );
    #[cfg(feature = "embedded")]
    assert_eq!(
        config(&[("BLOG_SCRIPTS", "server")]).unwrap_err(),
        ConfigError::ServerScriptsWithoutAccount
    );
    assert!(matches!(
        config(&[("BLOG_SCRIPTS", "yes")]).unwrap_err(),
        ConfigError::NotOneOf { name: "BLOG_SCRIPTS", .. }
    ));
}

/// A token key too short to be a secret is refused, and its value is not repeated in the
/// error (which goes to the log).
#[test]
fn a_short_token_key_is_refused_without_being_repeated() {
    let refused = config(&[("BLOG_TOKEN_KEY", "s3cr3t")]).unwrap_err();
    assert_eq!(refused, ConfigError::TooShort { name: "BLOG_TOKEN_KEY", length: 6, min: 16 });
    assert!(!refused.to_string().contains("s3cr3t"), "{refused}");
    assert!(config(&[("BLOG_TOKEN_KEY", "0123456789abcdef")]).is_ok());
}

/// Without the embedded store, no account means nothing to serve.
#[cfg(not(feature = "embedded"))]
#[test]
fn nothing_configured_is_refused_without_the_embedded_store() {
    assert_eq!(config(&[]).unwrap_err(), ConfigError::NoAccount);
}

/// A writer's quota in megabytes past what a `u64` counts in bytes is refused, naming the
/// range, instead of being cut short to some other quota.
#[test]
fn a_picture_quota_past_a_u64_of_bytes_is_refused() {
    let past = (MAX_PICTURE_MB_PER_WRITER + 1).to_string();
    assert_eq!(
        config(&[("BLOG_PICTURE_MB_PER_WRITER", &past)]).unwrap_err(),
        ConfigError::OutOfRange {
            name: "BLOG_PICTURE_MB_PER_WRITER",
            value: past.clone(),
            what: "a number of megabytes",
            min: 1,
            max: MAX_PICTURE_MB_PER_WRITER
        }
    );
    let largest =
        config(&[("BLOG_PICTURE_MB_PER_WRITER", &MAX_PICTURE_MB_PER_WRITER.to_string())]).unwrap();
    assert_eq!(largest.picture_mb_per_writer, Some(MAX_PICTURE_MB_PER_WRITER));
}

#[test]
fn writes_are_refused_unless_something_authenticates_the_caller() {
    assert_eq!(config(&[]).unwrap().auth, AuthMode::None);
    for on in ["True", "true", " TRUE ", "1", "-1"] {
        assert_eq!(
            config(&[("WEBSITE_AUTH_ENABLED", on)]).unwrap().auth,
            AuthMode::Platform,
            "{on:?}"
        );
    }
    for off in ["False", "0", "", "yes", "on"] {
        assert_eq!(
            config(&[("WEBSITE_AUTH_ENABLED", off)]).unwrap().auth,
            AuthMode::None,
            "{off:?}"
        );
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
    let account_alone =
        config(&[("CosmosDB__accountEndpoint", "https://a.documents.azure.com:443/")]).unwrap();
    assert_eq!(account_alone.pictures, PictureStorage::Off, "an instance's disk is not shared");
    assert_eq!(config(&[("BLOG_PICTURES", "off")]).unwrap().pictures, PictureStorage::Off);
    assert_eq!(
        config(&[("BLOG_PICTURES", "x"), ("BLOG_PICTURES__blobServiceUri", "y")]).unwrap_err(),
        ConfigError::Conflict { first: "BLOG_PICTURES", second: "BLOG_PICTURES__blobServiceUri" }
    );
    for container in ["Pictures", "a--b", "-ab", "ab"] {
        assert!(
            matches!(
                config(&[("BLOG_PICTURES_CONTAINER", container)]).unwrap_err(),
                ConfigError::Invalid { name: "BLOG_PICTURES_CONTAINER", value, .. } if value == container
            ),
            "{container}"
        );
    }
    assert_eq!(
        config(&[("BLOG_PICTURES_PER_WRITER", "0")]).unwrap_err(),
        ConfigError::Invalid {
            name: "BLOG_PICTURES_PER_WRITER",
            value: "0".into(),
            expected: "a positive number of pictures"
        }
    );
}

/// The pictures' memory and the upload buffer hold at least the largest picture's work,
/// and at most what the instance can count.
#[test]
fn the_pictures_memory_is_refused_below_the_largest_picture() {
    let max = crate::config::MAX_PICTURE_MEMORY_MB;
    for (name, min) in [("BLOG_PICTURE_MEMORY_MB", 16), ("BLOG_UPLOAD_BUFFER_MB", 11)] {
        for bad in [min - 1, max + 1] {
            let refused = config(&[(name, &bad.to_string())]).unwrap_err();
            assert!(
                matches!(&refused, ConfigError::OutOfRange { name: refused_name, min: m, max: x, .. }
                    if *refused_name == name && *m == min && *x == max),
                "{refused:?}"
            );
        }
        assert!(config(&[(name, &min.to_string())]).is_ok());
    }
}

#[cfg(feature = "embedded")]
#[test]
fn nothing_configured_means_the_embedded_store_on_the_local_port() {
    let config = config(&[]).unwrap();
    assert_eq!(config.listen.to_string(), LOCAL_ADDRESS);
    assert!(
        matches!(config.backend, Backend::Embedded { ref data_dir } if data_dir == &PathBuf::from("data"))
    );
    assert_eq!(config.pictures, PictureStorage::DataDirectory(PathBuf::from("data")));
    assert_eq!(config.change_feed, ChangeFeedMode::Local);
    assert_eq!(config.scripts, ScriptsMode::InProcess);
}

/// The public address: `BLOG_PUBLIC_URL` first, then the platform's host name, then nothing
/// (the listener's address, once bound); a setting that is not an address stops the start.
#[test]
fn the_public_address_is_the_setting_then_the_platforms_host_name() {
    let public =
        |pairs: &[(&str, &str)]| config(pairs).unwrap().public_url.map(|url| url.to_string());
    assert_eq!(public(&[]), None);
    assert_eq!(
        public(&[("BLOG_PUBLIC_URL", "https://blog.example/")]).as_deref(),
        Some("https://blog.example")
    );
    let azure = [("WEBSITE_HOSTNAME", "app.azurewebsites.net")];
    assert_eq!(public(&azure).as_deref(), Some("https://app.azurewebsites.net"));
    let both = [
        ("WEBSITE_HOSTNAME", "app.azurewebsites.net"),
        ("BLOG_PUBLIC_URL", "https://blog.example"),
    ];
    assert_eq!(
        public(&both).as_deref(),
        Some("https://blog.example"),
        "the setting wins over the platform's name"
    );
    let core_tools =
        [("WEBSITE_HOSTNAME", "localhost:7071"), ("FUNCTIONS_CORETOOLS_ENVIRONMENT", "true")];
    assert_eq!(public(&core_tools).as_deref(), Some("http://localhost:7071"));
    for wrong in ["blog.example", "https://blog.example/path", "https://evil.example\"><x"] {
        let refused = config(&[("BLOG_PUBLIC_URL", wrong)]).unwrap_err();
        assert!(
            matches!(&refused, ConfigError::Invalid { name: "BLOG_PUBLIC_URL", value, .. } if value == wrong),
            "{refused:?}"
        );
    }
}

/// The handler's own timer runs each minute, as the timer function's schedule, unless
/// BLOG_PUBLISH_EVERY says otherwise (tests/smoke.rs runs it each second).
#[test]
fn the_local_timer_runs_each_minute_unless_set() {
    assert_eq!(config(&[]).unwrap().publish_every, std::time::Duration::from_secs(60));
    assert_eq!(
        config(&[("BLOG_PUBLISH_EVERY", "1")]).unwrap().publish_every,
        std::time::Duration::from_secs(1)
    );
    assert!(matches!(
        config(&[("BLOG_PUBLISH_EVERY", "0")]).unwrap_err(),
        ConfigError::OutOfRange { name: "BLOG_PUBLISH_EVERY", min: 1, .. }
    ));
}
