//! The embedded store in a build without it (no `embedded` feature: the deployed build, which
//! reaches an account and has no SQLite in it). Compiled in `mod.rs`'s place (`cosmos/mod.rs`).
//!
//! The store's code is the same in every build. A [`Store`](crate::cosmos::Store) holds an
//! `Option<Arc<Durability>>`, and what it does on the embedded store (take the locks, commit
//! each write) it does when that is `Some`; the local change-feed processors likewise. Here
//! [`Durability`] is a type with no values, so that option is always `None`. The methods that
//! code calls exist with the embedded build's signatures, but none can ever be called. Each
//! body says so (`match *self {}`, which the compiler accepts only because no value exists).
//! They stand for nothing: every path that would reach one is dead, the optimizer drops it, and
//! nothing of the database, the emulator or SQLite is compiled in. The alternative, `cfg` in
//! every function that touches the embedded store, would leave the store's code reading
//! differently in each build. Here it is one code, checked by the compiler in both.
//!
//! The locks are the embedded store's own (`locks.rs`, which needs no SQLite): the store's
//! signatures name their guards, which a build without the embedded store never takes.

pub(crate) mod locks;

use std::sync::Arc;

use serde_json::Value;

use crate::cosmos::{Changed, Container, StoreError};
use locks::{Locks, PartitionGuard};

/// The embedded store's durability, which a build without the embedded store never has: no
/// value of this type exists.
pub enum Durability {}

/// A request record as the embedded store's database holds it: its document and write number.
pub(crate) struct RecordRow {
    pub doc: String,
    pub seq: u64,
}

/// No item is kept on disk only where there is no disk.
pub(crate) fn on_disk_only(_: &str) -> bool {
    false
}

/// The methods of the embedded build's `Durability` that the code compiled in every build calls
/// (the store's reads and writes, the local change-feed processors); what each does is told
/// there.
impl Durability {
    pub(crate) fn locks(&self) -> &Arc<Locks> {
        match *self {}
    }

    pub(crate) fn import_mark(
        &self,
    ) -> Result<Option<crate::cosmos::error::ImportMark>, StoreError> {
        match *self {}
    }

    pub(crate) fn mark_import(
        &self,
        _: Option<&crate::cosmos::error::ImportMark>,
    ) -> Result<(), StoreError> {
        match *self {}
    }

    pub(crate) async fn commit(
        self: &Arc<Self>,
        _: Container,
        _: &str,
        _: Vec<(String, Option<Value>)>,
        _: PartitionGuard,
    ) -> Result<(), StoreError> {
        match **self {}
    }

    pub(crate) async fn commit_as_is(
        self: Arc<Self>,
        _: Container,
        _: String,
        _: Vec<String>,
        _: PartitionGuard,
    ) {
        match *self {}
    }

    pub(crate) async fn batch(
        self: &Arc<Self>,
        _: Container,
        _: &str,
        _: Vec<crate::cosmos::WriteOp>,
        _: PartitionGuard,
    ) -> Result<(), StoreError> {
        match **self {}
    }

    pub(crate) async fn request_record(
        self: &Arc<Self>,
        _: Container,
        _: &str,
        _: &str,
    ) -> Result<Option<RecordRow>, StoreError> {
        match **self {}
    }

    pub(crate) fn write_signal(&self) -> Arc<tokio::sync::Notify> {
        match *self {}
    }

    pub(crate) fn changed_after(&self, _: Container, _: u64, _: usize) -> Changed {
        match *self {}
    }

    pub(crate) fn is_settled(&self, _: Container, _: &str, _: &str) -> bool {
        match *self {}
    }
}
