//! The refusal of a database whose rows do not match their tallies: what the start compares,
//! and [`Incomplete`], which names each partition that differs, what the items left there say
//! is missing, and what to do. Apart from the tallies' keeping because it is read once, by
//! whoever must decide between a backup and a repair.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};

use super::super::checksum;
use super::format::{container_named, damaged, meta, unreadable_record};
use super::format::{digest_key, items_key};
use super::tally::Tally;
use crate::cosmos::{Container, OpenError, StoreError};

/// What the tallies recorded and what the rows hold apart, in one partition (`partition_key`
/// `None`: in partitions whose record is gone with their items, seen in the container's total).
#[derive(Debug)]
pub struct Discrepancy {
    /// The container.
    pub container: Container,
    /// The partition, `None` for partitions whose record is gone too.
    pub partition_key: Option<String>,
    /// How many items the tallies recorded.
    pub recorded: i64,
    /// How many items are there.
    pub found: i64,
    /// What the items still there say is missing (a post's counts against its comments and
    /// likes, a post or a user that is gone), where they say it.
    pub missing: Vec<String>,
}

/// Why a data directory whose rows do not match their tallies is refused, and what to do.
#[derive(Debug)]
pub struct Incomplete {
    /// The database file.
    pub path: PathBuf,
    /// The meta records that are gone (the tallies and write number themselves deleted).
    pub meta_gone: Vec<String>,
    /// The partitions whose rows differ from their tallies, the first [`DISCREPANCIES_SHOWN`].
    pub discrepancies: Vec<Discrepancy>,
    /// How many partitions differ in all.
    pub partitions: usize,
}

/// How many differing partitions a refusal names.
const DISCREPANCIES_SHOWN: usize = 10;

impl std::fmt::Display for Incomplete {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.display();
        if !self.meta_gone.is_empty() {
            write!(
                out,
                "{path} lost its records of what it holds (meta: {} gone), which every database this handler \
                 made has from its creation: the file was changed outside the handler, so what it holds cannot be \
                 trusted to be whole.",
                self.meta_gone.join(", ")
            )?;
        } else {
            write!(
                out,
                "{path} does not hold what it recorded holding: items were deleted from it (or put in) outside the \
                 handler, by the sqlite3 shell, another program, or a damaged or older copy of the file. Where:"
            )?;
            let mut places = Vec::new();
            for discrepancy in &self.discrepancies {
                let container = discrepancy.container.name();
                let place = match &discrepancy.partition_key {
                    Some(partition_key) => format!("{container}, partition {partition_key:?}"),
                    None => format!("{container}, in partitions whose record was deleted too"),
                };
                let (recorded, found) = (discrepancy.recorded, discrepancy.found);
                let said = if found < recorded {
                    format!("{} of {recorded} items missing", recorded - found)
                } else if found > recorded {
                    format!("{} items more than the {recorded} written", found - recorded)
                } else {
                    format!(
                        "{found} items, but not the ones written (an item replaced outside the handler)"
                    )
                };
                let missing = if discrepancy.missing.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", discrepancy.missing.join("; "))
                };
                places.push(format!("{place}: {said}{missing}"));
            }
            if self.partitions > self.discrepancies.len() {
                places.push(format!("and {} more", self.partitions - self.discrepancies.len()));
            }
            write!(out, " {}.", places.join("; "))?;
        }
        let dir = checksum::shell_quoted(
            &self.path.parent().unwrap_or(Path::new(".")).display().to_string(),
        );
        write!(
            out,
            " Restore the data directory from a backup; or, to go on with what is there, stop the blog and run \
             `BLOG_DATA_DIR={dir} handler repair`, which recounts each post's comments and likes, removes the \
             comments, likes and copies of posts that are gone and the reservations of users that are gone, \
             reserves every user's name again, rebuilds the copies, and then records what is there as whole"
        )
    }
}

impl std::error::Error for Incomplete {}

/// The containers' recorded [`Tally`]s, refused if `meta` lost them or the write number: the
/// database's creation records them (all zero), so a `meta` emptied is seen, before anything
/// is loaded.
pub(super) fn check_meta(
    path: &Path,
    connection: &Connection,
) -> Result<BTreeMap<Container, Tally>, OpenError> {
    let mut meta_gone = Vec::new();
    let mut totals = BTreeMap::new();
    for container in Container::ALL {
        let (items_key, digest_key) = (items_key(container), digest_key(container));
        let items = meta(connection, &items_key)
            .map_err(unreadable_record(path, &format!("meta's {items_key}")))?;
        let digest = meta(connection, &digest_key)
            .map_err(unreadable_record(path, &format!("meta's {digest_key}")))?;
        match (items, digest) {
            (Some(items), Some(digest)) => {
                totals.insert(container, Tally { items, digest: digest as u64 });
            }
            _ => meta_gone.extend([items_key, digest_key]),
        }
    }
    if meta(connection, "last_seq").map_err(unreadable_record(path, "meta's last_seq"))?.is_none() {
        meta_gone.push("last_seq".into());
    }
    if !meta_gone.is_empty() {
        return Err(OpenError::Incomplete(Box::new(Incomplete {
            path: path.to_owned(),
            meta_gone,
            discrepancies: Vec::new(),
            partitions: 0,
        })));
    }
    Ok(totals)
}

/// Compares every partition's rows (`found`, their tallies as the start read them) with its
/// recorded [`Tally`], and each container's recorded partitions with its total: refused, naming
/// what differs, unless all agree. A table emptied whole, or the tallies deleted with it, is
/// seen too.
pub(super) fn compare_tallies(
    path: &Path,
    connection: &Connection,
    found: &BTreeMap<(Container, String), Tally>,
) -> Result<(), OpenError> {
    let failed = |error| damaged(path, error);
    let totals = check_meta(path, connection)?;
    let mut recorded: BTreeMap<(Container, String), Tally> = BTreeMap::new();
    {
        let mut select = connection
            .prepare("SELECT container, pk, items, digest FROM partitions")
            .map_err(failed)?;
        let mut rows = select.query([]).map_err(failed)?;
        let record = unreadable_record(path, "a partition's tally (the table partitions)");
        while let Some(row) = rows.next().map_err(failed)? {
            let name: String = row.get(0).map_err(&record)?;
            let digest: i64 = row.get(3).map_err(&record)?;
            let tally = Tally { items: row.get(2).map_err(&record)?, digest: digest as u64 };
            recorded.insert((container_named(path, &name)?, row.get(1).map_err(&record)?), tally);
        }
    }
    let mut differing: Vec<(Container, Option<String>, Tally, Tally)> = Vec::new();
    for key in recorded.keys().chain(found.keys()).collect::<std::collections::BTreeSet<_>>() {
        let (was, is) = (
            recorded.get(key).copied().unwrap_or_default(),
            found.get(key).copied().unwrap_or_default(),
        );
        if was != is {
            differing.push((key.0, Some(key.1.clone()), was, is));
        }
    }
    for (container, total) in &totals {
        let of_partitions = recorded
            .iter()
            .filter(|((of, _), _)| of == container)
            .fold(Tally::default(), |sum, (_, tally)| sum.plus(*tally));
        if of_partitions != *total {
            differing.push((*container, None, *total, of_partitions));
        }
    }
    if differing.is_empty() {
        return Ok(());
    }
    let partitions = differing.len();
    let discrepancies = differing
        .into_iter()
        .take(DISCREPANCIES_SHOWN)
        .map(|(container, partition_key, recorded, found)| {
            let missing = match &partition_key {
                Some(partition_key) if found.items < recorded.items => {
                    what_is_missing(path, connection, container, partition_key)?
                }
                _ => Vec::new(),
            };
            Ok(Discrepancy {
                container,
                partition_key,
                recorded: recorded.items,
                found: found.items,
                missing,
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    Err(OpenError::Incomplete(Box::new(Incomplete {
        path: path.to_owned(),
        meta_gone: Vec::new(),
        discrepancies,
        partitions,
    })))
}

/// What the items left in a partition that lost some say about those lost: in `posts`, the post
/// itself, or comments and likes its counts still count; in `users`, the user, or a username's
/// reservation (its own partition).
fn what_is_missing(
    path: &Path,
    connection: &Connection,
    container: Container,
    partition_key: &str,
) -> Result<Vec<String>, StoreError> {
    let failed = |error| damaged(path, error);
    let mut select = connection
        .prepare("SELECT id, doc FROM items WHERE container = ?1 AND pk = ?2")
        .map_err(failed)?;
    let mut rows = select.query(params![container.name(), partition_key]).map_err(failed)?;
    let mut items: Vec<(String, serde_json::Value)> = Vec::new();
    while let Some(row) = rows.next().map_err(failed)? {
        let doc: String = row.get(1).map_err(failed)?;
        items.push((row.get(0).map_err(failed)?, serde_json::from_str(&doc).unwrap_or_default()));
    }
    let of_type = |kind: &str| items.iter().filter(|(_, doc)| doc["type"] == kind).count() as u64;
    let mut missing = Vec::new();
    match container {
        Container::Posts => {
            let post = items.iter().find(|(id, doc)| id == partition_key && doc["type"] == "post");
            let (comments, likes) = (of_type("comment"), of_type("like"));
            match post {
                None => missing
                    .push(format!("the post {partition_key:?} itself, whose comments ({comments}) and likes ({likes}) are left")),
                Some((_, post)) => {
                    for (field, kind, listed) in [("commentCount", "comment", comments), ("likeCount", "like", likes)] {
                        if let Some(counted) = post[field].as_u64().filter(|counted| *counted > listed) {
                            missing.push(format!("{kind}s: its {field} is {counted}, and {listed} are listed"));
                        }
                    }
                }
            }
        }
        Container::Users
            if partition_key.starts_with(crate::model::usernames::RESERVATION_ID_PREFIX) =>
        {
            missing.push("a username's reservation, so another user could take that name".into());
        }
        Container::Users => {
            if !items.iter().any(|(id, doc)| id == partition_key && doc["type"] == "user") {
                missing.push(format!("the user {partition_key:?} itself"));
            }
        }
        Container::Feed | Container::Tags | Container::Leases | Container::Words => {}
    }
    Ok(missing)
}
