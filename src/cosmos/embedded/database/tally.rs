//! The tallies: how many rows each partition and container holds, and a digest of them, kept
//! by the same commit that writes the rows and rebuilt whole after an upgrade, an import or a
//! repair. They are what lets the start see a row deleted, or put in, outside the handler, which
//! no per-row checksum can.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};

use super::super::checksum;
use super::Row;
use super::format::{PARTITIONS, container_named, damaged, digest_key, items_key, meta};
use crate::cosmos::{Container, StoreError};

/// What a partition, or a container, holds by the tallies: how many rows, and the wrapping sum
/// of their [`checksum::contribution`]s. Kept in the commit that writes the rows (`partitions`
/// and the `meta` keys [`items_key`], [`digest_key`]), so a crash never leaves them apart.
/// Compared with the rows at every start: a row deleted, or one put in, outside the handler is
/// what a per-row checksum cannot see. A sum rather than a hash of the sorted rows so that a
/// commit adjusts it by the rows it touched, never reading the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub items: i64,
    pub digest: u64,
}

impl Tally {
    pub(super) fn add(&mut self, contribution: u64) {
        self.items += 1;
        self.digest = self.digest.wrapping_add(contribution);
    }

    pub(super) fn remove(&mut self, contribution: u64) {
        self.items -= 1;
        self.digest = self.digest.wrapping_sub(contribution);
    }

    pub(super) fn plus(self, other: Tally) -> Tally {
        Tally { items: self.items + other.items, digest: self.digest.wrapping_add(other.digest) }
    }
}

/// Every partition's [`Tally`] of the rows `connection` holds now, by container and partition
/// key: one pass over the keys and checksums, not the documents.
fn tally_rows(
    path: &Path,
    connection: &Connection,
) -> Result<BTreeMap<(Container, String), Tally>, StoreError> {
    let failed = |error| damaged(path, error);
    let mut select =
        connection.prepare("SELECT container, pk, id, sum FROM items").map_err(failed)?;
    let mut rows = select.query([]).map_err(failed)?;
    let mut tallies: BTreeMap<(Container, String), Tally> = BTreeMap::new();
    while let Some(row) = rows.next().map_err(failed)? {
        let name: String = row.get(0).map_err(failed)?;
        let container = container_named(path, &name)?;
        let (partition_key, id, sum): (String, String, u32) =
            (row.get(1).map_err(failed)?, row.get(2).map_err(failed)?, row.get(3).map_err(failed)?);
        let contribution = checksum::contribution(container, &partition_key, &id, sum);
        tallies.entry((container, partition_key)).or_default().add(contribution);
    }
    Ok(tallies)
}

/// Records the tallies of the rows there now, in `transaction`: what an upgrade, an import and
/// a repair leave, each in the transaction that made the rows. Returns how many rows there are.
pub(crate) fn retally(path: &Path, transaction: &rusqlite::Transaction) -> Result<i64, StoreError> {
    let failed = |error| damaged(path, error);
    let tallies = tally_rows(path, transaction)?;
    // Made again if it was dropped: a repair puts back what the start refused for its absence.
    transaction.execute_batch(PARTITIONS).map_err(failed)?;
    transaction.execute("DELETE FROM partitions", []).map_err(failed)?;
    let mut totals: BTreeMap<Container, Tally> =
        Container::ALL.into_iter().map(|container| (container, Tally::default())).collect();
    {
        let mut insert = transaction
            .prepare(
                "INSERT INTO partitions (container, pk, items, digest) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(failed)?;
        for ((container, partition_key), tally) in &tallies {
            insert
                .execute(params![container.name(), partition_key, tally.items, tally.digest as i64])
                .map_err(failed)?;
            let total = totals.get_mut(container).expect("every container");
            *total = total.plus(*tally);
        }
    }
    for (container, total) in &totals {
        set_container_tally(transaction, *container, *total).map_err(failed)?;
    }
    Ok(totals.values().map(|total| total.items).sum())
}

pub(super) fn set_container_tally(
    connection: &Connection,
    container: Container,
    tally: Tally,
) -> rusqlite::Result<()> {
    let mut set = connection
        .prepare_cached("INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value")?;
    set.execute(params![items_key(container), tally.items])?;
    set.execute(params![digest_key(container), tally.digest as i64])?;
    Ok(())
}

/// The tallies of the rows as the start reads them ([`super::Database::page`]), in key order:
/// one partition's rows come together, so a partition costs one key, not one per row. Counting
/// them on the read the start does anyway, rather than in a pass of its own, is what keeps the
/// check cheap. A pass over the keys and checksums took 0.37 s at 124,000 rows in a release
/// build, two thirds of the read itself; a CRC of each key on the rows read, 20 ms.
#[derive(Default)]
pub(super) struct Found {
    pub(super) tallies: BTreeMap<(Container, String), Tally>,
    current: Option<((Container, String), Tally)>,
}

impl Found {
    pub(super) fn add(&mut self, row: &Row, sum: u32) {
        let contribution = checksum::contribution(row.container, &row.partition_key, &row.id, sum);
        match &mut self.current {
            Some(((container, partition_key), tally))
                if *container == row.container && *partition_key == row.partition_key =>
            {
                tally.add(contribution)
            }
            _ => {
                self.flush();
                let mut tally = Tally::default();
                tally.add(contribution);
                self.current = Some(((row.container, row.partition_key.clone()), tally));
            }
        }
    }

    pub(super) fn flush(&mut self) {
        if let Some((key, tally)) = self.current.take() {
            let total = self.tallies.entry(key).or_default();
            *total = total.plus(tally);
        }
    }
}

/// Adds what a group `moved` to the tallies of its partitions and their containers. A partition
/// left with no item loses its row, so the table holds one row per partition in use.
pub(super) fn move_tallies(
    connection: &Connection,
    moved: &HashMap<(Container, &str), Tally>,
) -> rusqlite::Result<()> {
    let mut read = connection
        .prepare_cached("SELECT items, digest FROM partitions WHERE container = ?1 AND pk = ?2")?;
    let mut write = connection.prepare_cached(
        "INSERT INTO partitions (container, pk, items, digest) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (container, pk) DO UPDATE SET items = excluded.items, digest = excluded.digest",
    )?;
    let mut clear =
        connection.prepare_cached("DELETE FROM partitions WHERE container = ?1 AND pk = ?2")?;
    let mut containers: HashMap<Container, Tally> = HashMap::new();
    for ((container, partition_key), change) in moved {
        if *change == Tally::default() {
            continue;
        }
        let was = read
            .query_row(params![container.name(), partition_key], |row| {
                Ok(Tally { items: row.get(0)?, digest: row.get::<_, i64>(1)? as u64 })
            })
            .optional()?
            .unwrap_or_default();
        let now = was.plus(*change);
        if now == Tally::default() {
            clear.execute(params![container.name(), partition_key])?;
        } else {
            write.execute(params![
                container.name(),
                partition_key,
                now.items,
                now.digest as i64
            ])?;
        }
        let total = containers.entry(*container).or_default();
        *total = total.plus(*change);
    }
    for (container, change) in containers {
        let items = meta(connection, &items_key(container))?.unwrap_or(0);
        let digest = meta(connection, &digest_key(container))?.unwrap_or(0);
        set_container_tally(
            connection,
            container,
            Tally { items, digest: digest as u64 }.plus(change),
        )?;
    }
    Ok(())
}
