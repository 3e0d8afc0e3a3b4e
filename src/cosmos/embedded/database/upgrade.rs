//! Bringing a database written by an earlier handler to this one's schema, in place: each
//! version's step, and the tallies it makes where an older file kept none.

use std::path::Path;

use rusqlite::{Connection, params};

use super::format::{PARTITIONS, Row, SCHEMA_VERSION, damaged};
use super::tally::{Tally, retally, set_container_tally};
use crate::cosmos::{Container, OpenError, StoreError};

/// Brings a database written by an earlier handler to [`SCHEMA_VERSION`], in place, in one
/// transaction: a crash leaves it as it was, and the next start upgrades it again. Before
/// version 1 items carried no checksum: each is given the checksum of what it holds now (the
/// file passed `quick_check` just before; what a row held before this start cannot be known).
/// Before version 2 nothing recorded how many items there were: the tallies are made from the
/// rows there now, for the same reason.
pub(super) fn upgrade(path: &Path, connection: &mut Connection) -> Result<(), OpenError> {
    let failed = |error| damaged(path, error);
    let version: i64 =
        connection.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(failed)?;
    match version {
        SCHEMA_VERSION => return Ok(()),
        2 => return Ok(add_containers(path, connection, 2, &[Container::Tags, Container::Words])?),
        3 => return Ok(add_containers(path, connection, 3, &[Container::Words])?),
        0 | 1 => {}
        newer => {
            return Err(OpenError::NewerSchema {
                path: path.to_owned(),
                version: newer,
                known: SCHEMA_VERSION,
            });
        }
    }
    let started = std::time::Instant::now();
    let transaction = connection
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(failed)?;
    if version == 0 {
        add_checksums(path, &transaction)?;
    }
    transaction.execute_batch(PARTITIONS).map_err(failed)?;
    transaction
        .execute(
            "INSERT INTO meta (key, value) VALUES ('last_seq', 0) ON CONFLICT (key) DO NOTHING",
            [],
        )
        .map_err(failed)?;
    let items = retally(path, &transaction)?;
    transaction
        .execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
        .map_err(failed)?;
    transaction.commit().map_err(failed)?;
    tracing::info!(
        path = %path.display(),
        from = version,
        items,
        seconds = started.elapsed().as_secs_f64(),
        "the database was upgraded: each item carries a checksum, and each partition a count and digest of its items"
    );
    Ok(())
}

/// Version 2 or 3 to 4: the containers added since (`tags` at 3, `words` at 4), empty, given
/// their tallies (zero), in one transaction. The other containers' tallies stay as their commits
/// recorded them: made again from the rows, they would take in whatever was changed outside the
/// handler before this start.
fn add_containers(
    path: &Path,
    connection: &mut Connection,
    from: i64,
    added: &[Container],
) -> Result<(), StoreError> {
    let failed = |error| damaged(path, error);
    let transaction = connection
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(failed)?;
    for container in added {
        set_container_tally(&transaction, *container, Tally::default()).map_err(failed)?;
    }
    transaction
        .execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
        .map_err(failed)?;
    transaction.commit().map_err(failed)?;
    let added: Vec<&str> = added.iter().map(|container| container.name()).collect();
    tracing::info!(path = %path.display(), from, added = ?added, "the database was upgraded: it has new containers, empty");
    Ok(())
}

/// Version 0 to 1: each item given the checksum of what it holds.
fn add_checksums(path: &Path, transaction: &rusqlite::Transaction) -> Result<(), StoreError> {
    let failed = |error| damaged(path, error);
    transaction
        .execute_batch("ALTER TABLE items ADD COLUMN sum INTEGER NOT NULL DEFAULT 0")
        .map_err(failed)?;
    // The keys and checksums first, then the updates: a table is not changed under a cursor
    // that walks it.
    let sums = {
        let mut select = transaction
            .prepare("SELECT container, pk, id, doc, seq, expires FROM items")
            .map_err(failed)?;
        let mut rows = select.query([]).map_err(failed)?;
        let mut sums = Vec::new();
        while let Some(row) = rows.next().map_err(failed)? {
            let row = Row::read(path, row)?;
            let sum = row.checksum();
            sums.push((row.container, row.partition_key, row.id, sum));
        }
        sums
    };
    let mut update = transaction
        .prepare("UPDATE items SET sum = ?4 WHERE container = ?1 AND pk = ?2 AND id = ?3")
        .map_err(failed)?;
    for (container, partition_key, id, sum) in &sums {
        update.execute(params![container.name(), partition_key, id, sum]).map_err(failed)?;
    }
    Ok(())
}
