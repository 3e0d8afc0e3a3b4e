//! What the tests need of the crate that the handler never uses: a store on a disk that fails on
//! demand, and places where C1 can be stopped as a crash would stop it. Compiled only with the
//! `test-support` feature, which `cargo test` turns on (the crate is its own dev-dependency, see
//! `Cargo.toml`); `cargo build` and the deployed build have none of it.

pub mod crash;

use std::path::Path;
use std::sync::Arc;

use crate::config::{
    AuthMode, Backend, ChangeFeedMode, Config, DEFAULT_MAX_IN_FLIGHT, ScriptsMode,
};
pub use crate::cosmos::embedded::{
    emulator::SdkFaults,
    faulty_disk::{FaultyDisk, ReleaseOnDrop},
};
use crate::cosmos::{OpenError, Store};
pub use azure_data_cosmos::fault_injection::{self as sdk_faults, FaultInjectionRule};

/// The variable that stops `handler export` and `handler import` as a kill would
/// ([`kill_after`]), in a test's run of the binary.
pub(crate) const KILL_AFTER: &str = "BLOG_TEST_KILL_AFTER";

/// Ends the process at once, as `kill -9` would (no destructor runs, no buffer is flushed),
/// once `done` reaches [`KILL_AFTER`]. Both commands call it: `handler export` after each item
/// or picture it writes to its file, `handler import` after each it writes into the store. So a
/// test stops either at a known place instead of by timing.
pub(crate) fn kill_after(done: usize) {
    static AT: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    if AT
        .get_or_init(|| std::env::var(KILL_AFTER).ok().and_then(|at| at.parse().ok()))
        .is_some_and(|at| done >= at)
    {
        std::process::abort();
    }
}

/// The settings of `cargo run` with the development sign-in, on a data directory of the test's.
pub fn embedded_config(dir: &Path) -> Config {
    Config {
        listen: "127.0.0.1:0".parse().expect("an address"),
        backend: Backend::Embedded { data_dir: dir.to_owned() },
        database: "blog".into(),
        create_containers: true,
        change_feed: ChangeFeedMode::Local,
        scripts: ScriptsMode::InProcess,
        max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        header_timeout: crate::config::DEFAULT_HEADER_TIMEOUT,
        request_timeout: crate::config::DEFAULT_REQUEST_TIMEOUT,
        publish_every: crate::config::DEFAULT_PUBLISH_EVERY,
        auth: AuthMode::Development,
        token_key: None,
        write_limit: None,
        pictures: crate::config::PictureStorage::DataDirectory(dir.to_owned()),
        pictures_per_writer: None,
        picture_mb_per_writer: None,
        picture_memory_mb: None,
        upload_buffer_mb: None,
        public_url: None,
    }
}

/// The embedded store of `config`, whose database commits through `disk`: it can be full, or
/// hold commits back.
pub async fn store_on(config: &Config, disk: Arc<FaultyDisk>) -> Result<Store, OpenError> {
    Store::connect_with(config, disk, SdkFaults::default()).await
}

/// The embedded store of `config`, its SDK client reaching the emulator through `rules` (the
/// SDK's own fault injection: throttling, timeouts, lost answers, below the SDK's retries).
/// Enable and disable a rule (`FaultInjectionRule::enable`) to choose when it strikes.
pub async fn store_with_sdk_faults(config: &Config, faults: SdkFaults) -> Result<Store, OpenError> {
    Store::connect_with(config, Arc::new(FaultyDisk::default()), faults).await
}
