//! Each stored item's checksum: what keeps a changed byte from being served.
//!
//! SQLite checks its file's structure (`PRAGMA quick_check`), not what a record holds, and
//! keeps no checksum of its pages: a bit flipped by a failing disk inside an item's JSON, or an
//! edit of the file that leaves valid JSON (`"commentCount":3` made `9`), reads back as if it
//! had been written. So every row of `items` carries a CRC-32 of all it holds (its container,
//! partition key, id, document, write number and expiry), computed when the write is committed
//! and checked wherever the row is read back from the file: at start-up, when every item is
//! loaded, and when a refused write is undone to what the file holds.
//!
//! Why a per-row checksum rather than SQLite's checksum VFS (`ext/misc/cksumvfs.c`, a checksum
//! of every page in 8 reserved bytes), measured side by side in BENCHMARKS.md ("A checksum per
//! item, or per page"): both cost little, but the checksum VFS is C code outside the
//! amalgamation that `rusqlite` bundles (this crate would compile and register it), its
//! conversion rewrites the file (twice, as measured), it names no item, and it is only as good
//! as its loading: the `sqlite3` shell that the refusals point operators to does not load it, so
//! a row changed there leaves its page's checksum stale, and every read of the table fails. A
//! row's own checksum names the one item that changed, costs one CRC of the item's bytes per
//! write and per load, and needs nothing but a column.
//!
//! What neither catches: a change to the WAL (`blog.sqlite-wal`) before it is checkpointed,
//! which SQLite's own frame checksums meet by ending the log at that frame: the writes after it
//! are lost, consistently, as if they had never been committed, and a change-feed position
//! beyond them is then refused at start ([`super::check_positions`]).

use crate::cosmos::Container;

/// The checksum of a row of `items`, over every column but itself. Each field is framed (a
/// length before a string, a tag before an optional number) so that no two rows hash the same
/// bytes.
pub(crate) fn of_row(container: Container, partition_key: &str, id: &str, doc: &str, seq: u64, expires: Option<u64>) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    for text in [container.name(), partition_key, id, doc] {
        hasher.update(&(text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
    }
    hasher.update(&seq.to_le_bytes());
    match expires {
        Some(expires) => {
            hasher.update(&[1]);
            hasher.update(&expires.to_le_bytes());
        }
        None => hasher.update(&[0]),
    }
    hasher.finalize()
}

/// Why a row that does not match its checksum is refused, and what to do.
pub(crate) fn mismatch(path: &std::path::Path, container: Container, partition_key: &str, id: &str) -> String {
    let quoted = |text: &str| format!("'{}'", text.replace('\'', "''"));
    format!(
        "{path}: the item {id:?} of {container} (partition key {partition_key:?}) does not match its checksum: its bytes \
         changed on disk after it was written (a failing disk, or the file edited outside the handler), so it is not \
         served. Restore the data directory from a backup; or, to go on without that item, delete it with \
         `sqlite3 {path} \"DELETE FROM items WHERE container = {} AND pk = {} AND id = {}\"`, start again, and run \
         `handler rebuild-copies` to bring its copies in line",
        quoted(container.name()),
        quoted(partition_key),
        quoted(id),
        path = path.display(),
        container = container.name(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_is_covered_and_fields_are_framed() {
        let base = of_row(Container::Posts, "p", "c", r#"{"a":1}"#, 7, None);
        assert_ne!(base, of_row(Container::Users, "p", "c", r#"{"a":1}"#, 7, None));
        assert_ne!(base, of_row(Container::Posts, "q", "c", r#"{"a":1}"#, 7, None));
        assert_ne!(base, of_row(Container::Posts, "p", "d", r#"{"a":1}"#, 7, None));
        assert_ne!(base, of_row(Container::Posts, "p", "c", r#"{"a":9}"#, 7, None));
        assert_ne!(base, of_row(Container::Posts, "p", "c", r#"{"a":1}"#, 8, None));
        assert_ne!(base, of_row(Container::Posts, "p", "c", r#"{"a":1}"#, 7, Some(0)));
        // The same bytes split differently between two fields.
        assert_ne!(of_row(Container::Posts, "ab", "c", "{}", 1, None), of_row(Container::Posts, "a", "bc", "{}", 1, None));
    }

    #[test]
    fn the_refusal_gives_a_statement_that_deletes_exactly_that_item() {
        let why = mismatch(std::path::Path::new("data/blog.sqlite"), Container::Posts, "it's", "x");
        assert!(why.contains("container = 'posts' AND pk = 'it''s' AND id = 'x'"), "{why}");
        assert!(why.contains("data/blog.sqlite") && why.contains("backup"), "{why}");
    }
}
