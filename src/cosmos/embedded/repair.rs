//! The repair of a stopped data directory whose rows went missing, or whose damaged item the
//! operator chose to go on without (`handler repair`, `handler remove`). It makes what the
//! blog's own writes would have left, from what is there. A raw `DELETE` would instead leave a
//! post's comments behind it or its count wrong.
//!
//! This part works on the rows, in one SQLite transaction, before anything is loaded. First the
//! item is removed (if one is named). Then it removes what no longer fits the rest: comments
//! and likes of a post that is gone, copies of a post that is gone, reservations of a user that
//! is gone. Each live post's `commentCount` and `likeCount` is set to what is listed, as a new
//! write (so the change feed carries it to the copies). Then the tallies are made anew from the
//! rows, with a mark that the repair is unfinished. The mark refuses the blog's start until
//! `handler repair` has also reserved every user's name and rebuilt the copies through the
//! store (`crate::repair`). That is the part that needs the application's own code. A crash
//! anywhere leaves either the data directory as it was, or one that the next `handler repair`
//! finishes.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use super::checksum;
use super::database::{self, Database, Opening, REPAIR_PENDING, Row, Salvaged};
use crate::cosmos::{Container, OpenError, StoreError};

/// An item named by the operator: container, partition key, id.
#[derive(Clone, Debug)]
pub struct ItemToRemove {
    /// Its container.
    pub container: Container,
    /// Its partition key.
    pub partition_key: String,
    /// Its id.
    pub id: String,
}

/// What the repair of the rows did.
#[derive(Clone, Debug, Default)]
pub struct RowsRepaired {
    /// What was copied out of a damaged file into a new one, when SQLite found it damaged.
    pub salvaged: Option<Salvaged>,
    /// The item removed, as it was (its JSON), when one was named.
    pub removed: Option<Value>,
    /// Rows that did not read as items (a column of the wrong type, an unknown container),
    /// removed: their keys, as far as they read.
    pub unreadable: Vec<String>,
    /// Comments and likes removed with their post.
    pub orphans: usize,
    /// Copies (in `users` and `feed`) removed with their post.
    pub copies: usize,
    /// Reservations removed with their user.
    pub reservations: usize,
    /// Posts whose counts were set to what they list.
    pub recounted: usize,
    /// How many items the data directory holds now.
    pub items: i64,
}

/// Why the rows could not be repaired.
#[derive(Debug, thiserror::Error)]
pub enum RepairRowsError {
    /// The item to remove is not there.
    #[error("{container} holds no item {id:?} in partition {partition_key:?}: nothing was changed")]
    NoSuchItem {
        /// Its container's name.
        container: &'static str,
        /// Its partition key.
        partition_key: String,
        /// Its id.
        id: String,
    },
    /// The data directory could not be opened for the repair: the refusal says what to do.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The database could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Repairs the rows of the data directory `dir` (which no other process may hold), removing
/// `remove` first if named; see the module's documentation.
pub(crate) fn repair_rows(
    dir: &Path,
    remove: Option<&ItemToRemove>,
) -> Result<RowsRepaired, RepairRowsError> {
    let mut repaired = RowsRepaired::default();
    let (database, mut connection) = match super::open(dir, Opening::Repair) {
        // A damaged file: what can be read of it, in a new file, is what is repaired.
        Err(OpenError::Store(StoreError::Damaged { damage, .. })) if damage.is_salvageable() => {
            let lock = database::lock(dir)?;
            repaired.salvaged = Some(database::salvage(dir)?);
            drop(lock);
            super::open(dir, Opening::Repair)?
        }
        opened => opened?,
    };
    let path = database.path().to_owned();
    let failed = |error: rusqlite::Error| {
        StoreError::database(format!("cannot repair {}", path.display()), error)
    };
    let transaction = connection
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(failed)?;
    if let Some(item) = remove {
        let key = params![item.container.name(), item.partition_key, item.id];
        // Read as whatever it holds: the item may be named because it does not read as one.
        let doc: Option<rusqlite::types::Value> = transaction
            .query_row(
                "SELECT doc FROM items WHERE container = ?1 AND pk = ?2 AND id = ?3",
                key,
                |row| row.get(0),
            )
            .optional()
            .map_err(failed)?;
        let Some(doc) = doc else {
            return Err(RepairRowsError::NoSuchItem {
                container: item.container.name(),
                partition_key: item.partition_key.clone(),
                id: item.id.clone(),
            });
        };
        transaction
            .execute("DELETE FROM items WHERE container = ?1 AND pk = ?2 AND id = ?3", key)
            .map_err(failed)?;
        repaired.removed = Some(match doc {
            rusqlite::types::Value::Text(doc) => {
                serde_json::from_str(&doc).unwrap_or(Value::String(doc))
            }
            other => Value::String(format!("({})", other.data_type())),
        });
    }
    repaired.unreadable = database::remove_unreadable(&path, &transaction)?;
    let rows = read_rows(&database, &transaction)?;
    let next_seq = database.last_seq() + 1;
    let plan = Plan::of(&rows);
    {
        let mut delete = transaction
            .prepare("DELETE FROM items WHERE container = ?1 AND pk = ?2 AND id = ?3")
            .map_err(failed)?;
        let mut update = transaction
            .prepare("UPDATE items SET doc = ?4, seq = ?5, sum = ?6 WHERE container = ?1 AND pk = ?2 AND id = ?3")
            .map_err(failed)?;
        for (row, _) in &plan.removals {
            delete
                .execute(params![row.container.name(), row.partition_key, row.id])
                .map_err(failed)?;
        }
        for (row, doc) in &plan.recounts {
            let sum = checksum::of_row(
                row.container,
                &row.partition_key,
                &row.id,
                doc,
                next_seq,
                row.expires,
            );
            update
                .execute(params![
                    row.container.name(),
                    row.partition_key,
                    row.id,
                    doc,
                    next_seq,
                    sum
                ])
                .map_err(failed)?;
        }
    }
    for (_, why) in &plan.removals {
        match why {
            Removal::Orphan => repaired.orphans += 1,
            Removal::Copy => repaired.copies += 1,
            Removal::Reservation => repaired.reservations += 1,
        }
    }
    repaired.recounted = plan.recounts.len();
    if !plan.recounts.is_empty() {
        transaction
            .execute("UPDATE meta SET value = ?1 WHERE key = 'last_seq'", [next_seq as i64])
            .map_err(failed)?;
    }
    repaired.items = database::retally(&path, &transaction)?;
    transaction
        .execute("INSERT INTO meta (key, value) VALUES (?1, 1) ON CONFLICT (key) DO UPDATE SET value = 1", [REPAIR_PENDING])
        .map_err(failed)?;
    transaction.commit().map_err(failed)?;
    Ok(repaired)
}

/// Every row, checked against its checksum: the repair reads what the items say, and a changed
/// one is refused, naming the command that removes it, as at start.
fn read_rows(
    database: &Database,
    connection: &rusqlite::Connection,
) -> Result<Vec<(Row, Value)>, StoreError> {
    let mut rows = Vec::new();
    let mut after: Option<Row> = None;
    loop {
        let page = database.page(connection, after.as_ref(), 4096)?;
        let Some(last) = page.last() else { break };
        after = Some(Row { doc: String::new(), ..last.clone() });
        for row in page {
            let doc = serde_json::from_str(&row.doc).unwrap_or(Value::Null);
            rows.push((row, doc));
        }
    }
    Ok(rows)
}

/// Why a row goes.
enum Removal {
    /// A comment or like of a post that is not there.
    Orphan,
    /// A copy of a post that is not there.
    Copy,
    /// A reservation whose owner is not there.
    Reservation,
}

/// What the repair changes: rows to remove, and posts to write with their counts set (the new
/// JSON).
struct Plan<'a> {
    removals: Vec<(&'a Row, Removal)>,
    recounts: Vec<(&'a Row, String)>,
}

impl<'a> Plan<'a> {
    fn of(rows: &'a [(Row, Value)]) -> Plan<'a> {
        let is = |doc: &Value, kind: &str| doc["type"] == kind && doc.get("scriptFence").is_none();
        // Every post there, deleted (a tombstone) or not: a tombstone's copies and its comments
        // are the change feed's and `deletePost`'s to remove, as after any deletion.
        let posts: HashSet<&str> = rows
            .iter()
            .filter(|(row, doc)| {
                row.container == Container::Posts && row.id == row.partition_key && is(doc, "post")
            })
            .map(|(row, _)| row.id.as_str())
            .collect();
        let users: HashSet<&str> = rows
            .iter()
            .filter(|(row, doc)| {
                row.container == Container::Users && row.id == row.partition_key && is(doc, "user")
            })
            .map(|(row, _)| row.id.as_str())
            .collect();
        let mut listed: HashMap<&str, (u64, u64)> = HashMap::new();
        let mut removals = Vec::new();
        for (row, doc) in rows {
            match row.container {
                Container::Posts if is(doc, "comment") || is(doc, "like") => {
                    if posts.contains(row.partition_key.as_str()) {
                        let counts = listed.entry(row.partition_key.as_str()).or_default();
                        if is(doc, "comment") {
                            counts.0 += 1;
                        } else {
                            counts.1 += 1;
                        }
                    } else {
                        removals.push((row, Removal::Orphan));
                    }
                }
                Container::Users | Container::Feed | Container::Tags
                    if is(doc, "post")
                        && !doc["postId"].as_str().is_some_and(|post| posts.contains(post)) =>
                {
                    removals.push((row, Removal::Copy));
                }
                Container::Users
                    if is(doc, "username")
                        && !doc["ownerId"].as_str().is_some_and(|owner| users.contains(owner)) =>
                {
                    removals.push((row, Removal::Reservation));
                }
                _ => {}
            }
        }
        let mut recounts = Vec::new();
        for (row, doc) in rows {
            let live = row.container == Container::Posts
                && posts.contains(row.id.as_str())
                && row.id == row.partition_key
                && doc["deleted"] != true;
            if !live {
                continue;
            }
            let (comments, likes) = listed.get(row.id.as_str()).copied().unwrap_or_default();
            if doc["commentCount"].as_u64() != Some(comments)
                || doc["likeCount"].as_u64() != Some(likes)
            {
                let mut recounted = doc.clone();
                recounted["commentCount"] = comments.into();
                recounted["likeCount"] = likes.into();
                recounts.push((row, recounted.to_string()));
            }
        }
        Plan { removals, recounts }
    }
}
