//! The blogging platform of Microsoft's article "Model and partition data on Azure Cosmos DB
//! using a real-world example", on the article's final (V3) model, as an Azure Functions custom
//! handler.
//!
//! Its modules are private; the items below are what the `handler` binary, the benchmarks and
//! the tests use, handed on by name at the crate root ([`Blog`], [`Config`], [`connect`], the
//! maintenance commands' steps). The modules inside, the layers they make, and where a request
//! goes through them: ARCHITECTURE.md, at the repository's root (the one description of the
//! layout).

// The modules are private: what the binary, the benchmarks and the tests name is handed on
// below, by name, so that everything else is `pub(crate)` at most and the compiler's
// dead-code and `unreachable_pub` checks see it (mini-redis's layout). Where a test must reach
// an internal, `testing` hands it on, hidden from the docs. Each item is handed on from the
// module that defines it, so that it is declared `pub` once: inside the crate, modules
// re-export with `pub(crate) use`. tests/public_surface.rs bounds how many `pub` items there are.
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
mod running;
mod scripts;
mod striped;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
mod transfer;

pub use app::AppState;
pub use changefeed::processor::{Deliveries, rebuild_copies, replay_users};
pub use changefeed::{FeedError, dead_letters, lag};
pub use config::error::ConfigError;
pub use config::{
    AuthMode, Backend, CONNECTION_SETTING, ChangeFeedMode, Config, DEFAULT_HEADER_TIMEOUT,
    DEFAULT_MAX_IN_FLIGHT, DEFAULT_PUBLISH_EVERY, DEFAULT_REQUEST_TIMEOUT, PICTURES_SETTING,
    PictureStorage, ScriptsMode, WriteLimitSetting, public_url::PublicUrl,
};
#[cfg(feature = "embedded")]
pub use cosmos::embedded::repair::ItemToRemove;
pub use cosmos::{error::StoreError, open_error::OpenError, schema::Container, store::Store};
pub use logging::{
    BILLED_LINES, BilledLines, line_format::LineFormat, with_causes, writer::batched,
};
#[cfg(feature = "embedded")]
pub use repair::{RepairError, repair};
pub use running::{Blog, connect, connect_for_import, followed, state_on};
pub use transfer::{
    TransferError,
    export::export,
    files::{PartialFile, Spooled},
    import::{ImportProgress, import},
};

/// What the tests and the benchmarks reach inside the library for, under the modules' own
/// names (`testing::cosmos::QuerySpec` is `cosmos::QuerySpec` inside): not the library's
/// surface, and hidden from its docs.
#[doc(hidden)]
pub mod testing {
    /// The use cases.
    pub mod app {
        pub use crate::app::Caller;
        pub use crate::app::feed::FeedCache;
        pub use crate::app::pictures::sweep_abandoned_pictures;
        pub use crate::app::post_lists::PostLists;
        pub use crate::app::users::{create_user, rename_user};
    }
    /// The change-feed functions.
    pub mod changefeed {
        pub use crate::changefeed::{
            Function, ISOLATE_AFTER, dead_letters, lag, posts::posts_changed,
        };
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
        pub use crate::cosmos::{
            change_feed::RangePosition,
            error::StoreError,
            items::{PageRequest, QuerySpec, WriteOp},
            meter::Meter,
            queries,
            schema::Container,
            store::Store,
        };
    }
    /// The HTTP functions.
    pub mod http {
        pub use crate::http::error::{ApiError, ApiResult};
        pub use crate::http::extract::ID_PATTERN;
        pub use crate::http::pages::forms::{SENT_BEFORE, SIGNED_OUT};
        pub use crate::http::{FRONT_PAGE_ROUTE, HttpFunction, is_api_route, router_path};
    }
    /// The items.
    pub mod model {
        pub use crate::model::{
            DELETED_POST_TTL_SECS, SHORT_CONTENT_CHARS, User, creation_date, ids::validate_id,
            new_user, usernames,
        };
    }
    /// Pictures.
    pub mod pictures {
        pub use crate::model::picture::{Kind, PictureAddress, PictureName};
        pub use crate::pictures::{
            blob::BlobStore,
            directory::DirectoryStore,
            error::PictureError,
            prepare::{Limits, Prepared, prepare},
            store::{PictureStore, PictureStoreError, Stored, Usage, Version},
        };
    }
    /// The stored procedures and their engines.
    pub mod scripts {
        pub use crate::scripts::{
            KEYED_HELPERS, NOT_AMONG_NEWEST, PostTrigger, Script, ScriptError, ScriptExecutor,
            StoredProcedure, engine,
            in_process::{FENCE_ID, InProcessScripts},
            server_side::{ScriptCredential, ScriptsSetupError, ServerSideScripts},
        };
    }
}

/// The embedded store's allocator. Its emulator copies a whole physical partition for every
/// transactional batch (C3, C4 and the other scripts) and frees it again, so the handler's
/// allocation rate grows with the data. Under glibc's malloc, a growing share of the CPU went
/// to `_int_malloc`, `malloc_consolidate` and `unlink_chunk` (11 % at 90k items). With
/// mimalloc, C3 at 100k items went from 0.66x to 0.92x of its rate at 20k, and restart at 100k
/// from 5.7 s to 3.6 s, with the same resident memory (BENCHMARKS.md, "The allocator"). The
/// deployed build talks to an account over HTTP, where nothing grows with the data: it keeps
/// the system's allocator. Set here, not in `main.rs`, so that the tests and the benchmarks run
/// the handler's allocator too.
#[cfg(feature = "embedded")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's number for its purge delay option: `mi_option_purge_delay` in `mi_option_e`
/// (`include/mimalloc.h` of the v3 source that libmimalloc-sys 0.1.49 compiles; that crate's own
/// constants follow v2's numbering, where 15 is another option).
#[cfg(feature = "embedded")]
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

// mimalloc's option setter: libmimalloc-sys exposes none that names the purge delay right.
#[cfg(feature = "embedded")]
#[allow(unsafe_code)]
unsafe extern "C" {
    #[cfg(test)]
    fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// Makes mimalloc give the memory of an emptied page back to the system at once rather than a
/// second later (its `purge_delay`, 1,000 ms by default). A value set in `MIMALLOC_PURGE_DELAY`
/// (or its old name `MIMALLOC_RESET_DELAY`) is left as it is. The handler's live heap is a few
/// MiB. Its resident memory above that is pages mimalloc keeps for each thread, emptied and
/// taken again faster than a second under load. With the delay, a keyed soak held 14–30 MiB
/// more, at the same rate (BENCHMARKS.md, "A keyed soak").
///
/// # Safety
///
/// mimalloc stores the option without synchronisation (`mi_option_set`, `src/options.c`) and
/// reads it whenever it purges: call it first thing in `main`, before any other thread starts.
#[cfg(feature = "embedded")]
#[allow(unsafe_code)]
pub unsafe fn purge_freed_memory_at_once() {
    if ["MIMALLOC_PURGE_DELAY", "MIMALLOC_RESET_DELAY"]
        .iter()
        .all(|name| std::env::var_os(name).is_none())
    {
        // SAFETY: the caller guarantees no other thread exists yet (see above).
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    }
}

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
#[allow(unsafe_code)]
pub unsafe fn quiet_library_backtraces() {
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        // SAFETY: the caller guarantees no other thread exists yet (see above).
        unsafe { std::env::set_var("RUST_LIB_BACKTRACE", "0") };
    }
}

// Reads and sets the option through mimalloc's own calls, which are unsafe.
#[cfg(all(test, feature = "embedded"))]
#[allow(unsafe_code)]
mod allocator_tests {
    /// The option's number is mimalloc's purge delay (its default, 1,000 ms, is no other
    /// option's), and the call sets it to 0: a wrong number or a call that does nothing fails.
    #[test]
    fn the_purge_delay_is_set_to_zero() {
        assert!(
            ["MIMALLOC_PURGE_DELAY", "MIMALLOC_RESET_DELAY"]
                .iter()
                .all(|name| std::env::var_os(name).is_none()),
            "run without MIMALLOC_PURGE_DELAY or MIMALLOC_RESET_DELAY set"
        );
        // SAFETY: reads one option's value.
        let delay = || unsafe { super::mi_option_get(super::MI_OPTION_PURGE_DELAY) };
        assert_eq!(
            delay(),
            1_000,
            "mimalloc's default purge delay, read through the option's number"
        );
        // SAFETY: the other tests' threads may be allocating and read the option meanwhile: an
        // aligned word, stored whole on the targets this runs on; their purges come sooner.
        unsafe { super::purge_freed_memory_at_once() };
        assert_eq!(delay(), 0);
    }
}
