//! Every Cosmos DB call the application makes, through the official SDK (`azure_data_cosmos`).
//!
//! Handlers and scripts speak in items, partition keys and pages; this module turns that into
//! SDK calls. It records each call's cost on the request's [`Meter`] and bounds it in time. It
//! maps the SDK's errors to the few outcomes the application acts on ([`StoreError`]).
//!
//! - [`schema`]: the containers, their partition keys and indexing.
//! - [`store`]: [`Store`], every item operation; [`change_feed`]: a container read whole.
//! - [`items`]: what callers hand the store and get back; [`error`]: what a call comes to;
//!   [`open_error`]: why opening the store or the blog was refused.
//! - [`sdk`]: the SDK at our boundary (clients, time bounds, metering); [`meter`]: the cost.
//! - [`checkpoint`]: the local change-feed processors' positions, which the embedded store checks.
//! - `embedded`: the embedded store (the SDK's emulator made durable by SQLite), reached
//!   through [`Store::embedded`]; `changes`: its change index. Builds with the `embedded`
//!   feature only.

pub(crate) mod change_feed;
#[cfg(feature = "embedded")]
mod changes;
pub(crate) mod checkpoint;
/// The embedded store, SQLite and all, is compiled only with the `embedded` feature. A build
/// without it (the deployed build) compiles `embedded/absent.rs` in its place, where the
/// store's `Durability` is a type with no values. `Store` holds an `Option` of it that is
/// always `None` there. So the store's reads and writes are one code for both builds (only
/// [`Store::connect`] says which backends a build has). Every path to the embedded store is
/// dead by its type and compiled out. Why so, rather than `cfg` through the store: see there.
#[cfg(feature = "embedded")]
pub(crate) mod embedded;
#[cfg(not(feature = "embedded"))]
#[path = "embedded/absent.rs"]
pub(crate) mod embedded;
pub(crate) mod error;
pub(crate) mod items;
pub(crate) mod meter;
pub(crate) mod open_error;
pub mod queries;
pub(crate) mod schema;
mod sdk;
pub(crate) mod store;

pub(crate) use change_feed::ChangeFeed;
pub(crate) use change_feed::RangePosition;
pub(crate) use checkpoint::CheckpointError;
#[cfg(feature = "embedded")]
pub(crate) use embedded::database::Incomplete;
#[cfg(feature = "embedded")]
pub(crate) use embedded::repair::ItemToRemove;
#[cfg(feature = "embedded")]
pub(crate) use embedded::repair::{RepairRowsError, RowsRepaired, repair_rows};
#[cfg(feature = "embedded")]
pub(crate) use embedded::spawn_expiry_sweep;
pub(crate) use error::StoreError;
pub(crate) use items::Versioned;
pub(crate) use items::{Changed, Page, retry_pause};
pub(crate) use items::{PageRequest, QuerySpec, WriteOp};
pub(crate) use meter::Meter;
pub(crate) use meter::Scope;
pub(crate) use open_error::OpenError;
pub(crate) use schema::Container;
pub(crate) use sdk::entra_credential;
pub(crate) use store::Store;

/// The furthest a write number, and so a change-feed processor's position, may go. It is one
/// definition for the store, which numbers writes, and the processors, whose checkpoints hold
/// positions. SQLite's integers are signed 64-bit, and numbering must have room to go on after
/// any position. A position near `u64::MAX` wrapped around, and the processors chased it for
/// ever. 2^62 − 1 writes are more than any data directory will see.
pub(crate) const MAX_POSITION: u64 = (i64::MAX / 2) as u64;
#[cfg(test)]
pub(crate) use store::resuming_error;

#[cfg(test)]
pub(crate) mod tests;
