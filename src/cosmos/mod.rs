//! Every Cosmos DB call the application makes, through the official SDK (`azure_data_cosmos`).
//!
//! Handlers and scripts speak in items, partition keys and pages; this module turns that into
//! SDK calls, records each call's cost on the request's [`Meter`], bounds it in time, and maps
//! the SDK's errors to the few outcomes the application acts on ([`StoreError`]).
//!
//! - [`schema`]: the containers, their partition keys and indexing.
//! - [`store`]: [`Store`], every item operation; [`change_feed`]: a container read whole.
//! - [`items`]: what callers hand the store and get back; [`error`]: what a call comes to.
//! - [`sdk`]: the SDK at our boundary (clients, time bounds, metering); [`meter`]: the cost.
//! - `embedded`: the embedded store (the SDK's emulator made durable by SQLite), reached
//!   through [`Store::embedded`]; [`changes`]: its change index.

mod change_feed;
mod changes;
// The deployed build compiles the embedded store's database code but never opens one.
#[cfg_attr(not(feature = "embedded"), allow(dead_code))]
mod embedded;
mod error;
mod items;
mod meter;
pub mod queries;
mod schema;
mod sdk;
mod store;

pub use change_feed::ChangeFeed;
pub use changes::Changed;
#[cfg(any(test, feature = "test-support"))]
pub use embedded::faulty_disk::{FaultyDisk, ReleaseOnDrop};
pub use embedded::{Durability as Embedded, spawn_expiry_sweep};
pub use error::StoreError;
pub use items::{Page, PageRequest, QuerySpec, Versioned, WriteOp, retry_pause};
pub use meter::{Meter, Partitions, Scope};
pub use schema::Container;
pub(crate) use sdk::bounded;
pub use sdk::entra_credential;
pub use store::Store;

#[cfg(test)]
pub(crate) mod tests;
