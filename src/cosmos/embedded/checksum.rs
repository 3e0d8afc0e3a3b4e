//! Each stored item's checksum: what keeps a changed byte from being served.
//!
//! SQLite checks its file's structure (`PRAGMA quick_check`), not what a record holds, and
//! keeps no checksum of its pages. So some changes read back as if they had been written: a bit
//! flipped by a failing disk inside an item's JSON, or an edit of the file that leaves valid
//! JSON (`"commentCount":3` made `9`). So every row of `items` carries a CRC-32 of all it holds
//! (its container, partition key, id, document, write number and expiry). It is computed when
//! the write is committed and checked wherever the row is read back from the file: at start-up,
//! when every item is loaded, and when a refused write is undone to what the file holds.
//!
//! Why a per-row checksum rather than SQLite's checksum VFS (`ext/misc/cksumvfs.c`, a checksum
//! of every page in 8 reserved bytes)? They are measured side by side in BENCHMARKS.md ("A
//! checksum per item, or per page"), and both cost little. But the checksum VFS is C code
//! outside the amalgamation that `rusqlite` bundles (this crate would compile and register it).
//! Its conversion rewrites the file (twice, as measured), and it names no item. And it is only
//! as good as its loading: the `sqlite3` shell, the tool for a damaged file, does not load it.
//! So a row changed there leaves its page's checksum stale, and every read of the table fails.
//! A row's own checksum names the one item that changed, costs one CRC of the item's bytes per
//! write and per load, and needs nothing but a column.
//!
//! A row's checksum cannot see a row that is not there. A row deleted, or the table emptied, is
//! seen by the tallies each commit keeps of every partition and container
//! (`database::tally::Tally`). They are checked at start against the rows, to which each row
//! contributes a hash of its key and this checksum.
//!
//! What neither catches: a change to the WAL (`blog.sqlite-wal`) before it is checkpointed.
//! SQLite's own frame checksums meet that by ending the log at that frame. The writes after it
//! are lost, consistently, as if they had never been committed. A change-feed position beyond
//! them is then refused at start ([`super::check_positions`]).

use crate::cosmos::Container;

/// The checksum of a row of `items`, over every column but itself. Each field is framed (a
/// length before a string, a tag before an optional number) so that no two rows hash the same
/// bytes.
pub(crate) fn of_row(
    container: Container,
    partition_key: &str,
    id: &str,
    doc: &str,
    seq: u64,
    expires: Option<u64>,
) -> u32 {
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

/// What one row adds to its partition's digest: the CRC-32 of its key and its checksum, as one
/// 64-bit number mixed by SplitMix64's finalizer (a bijection, so two rows add the same only
/// when both CRCs agree). Digests are sums of these (wrapping), so a row removed is a
/// subtraction and the order rows are met in does not matter. The checksum stands for the row's
/// contents. So a row changed with its checksum made anew, or put back from an older copy of
/// the file, changes the digest too. CRC-32 rather than SHA-256: the start computes one per
/// row, and SHA-256 took 17 µs a row in the debug build `cargo run` makes (0.9 s at 50,000
/// rows). What the digest is for is noticing rows gone, not resisting someone who forges it.
pub(crate) fn contribution(container: Container, partition_key: &str, id: &str, sum: u32) -> u64 {
    let mut hasher = crc32fast::Hasher::new();
    for text in [container.name(), partition_key, id] {
        hasher.update(&(text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
    }
    let mut mixed = (u64::from(hasher.finalize()) << 32) | u64::from(sum);
    mixed = mixed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    mixed ^ (mixed >> 31)
}

/// `text` as one POSIX shell word that the shell takes literally: in single quotes, each `'`
/// written `'\''`. Ids and partition keys may hold `$(`, backticks, braces and quotes, and a
/// refusal's command is meant to be pasted into a shell as it is.
pub(crate) fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The command that removes the item, with what depends on it, from the data directory of
/// `path` (the database file): `BLOG_DATA_DIR=… handler remove <container> <partition key> <id>`,
/// every word quoted ([`shell_quoted`]).
pub(crate) fn remove_command(
    path: &std::path::Path,
    container: Container,
    partition_key: &str,
    id: &str,
) -> String {
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    format!(
        "BLOG_DATA_DIR={} handler remove {} {} {}",
        shell_quoted(&dir.display().to_string()),
        container.name(),
        shell_quoted(partition_key),
        shell_quoted(id)
    )
}

/// What to do about a database file that is damaged or not this store's; what is wrong with it
/// is the error's cause, `damage`. Each command it names is one that puts that damage right.
pub(crate) fn damaged(path: &std::path::Path, damage: &super::database::Damage) -> String {
    let dir =
        shell_quoted(&path.parent().unwrap_or(std::path::Path::new(".")).display().to_string());
    let path = path.display();
    if damage.is_in_the_rows() {
        format!(
            "{path} holds a row or a record that is not what this store writes: it was changed outside the handler. \
             Restore the data directory from a backup; or, to go on with what is there, stop the blog and run \
             `BLOG_DATA_DIR={dir} handler repair`, which removes the rows it cannot read, numbers the writes after \
             the last one a row holds, and makes the rest a consistent blog (counts, names, copies)"
        )
    } else if damage.is_salvageable() {
        format!(
            "{path} is damaged: SQLite cannot read all of it. Restore the data directory from a backup; or, to go on \
             with what can be read, stop the blog and run `BLOG_DATA_DIR={dir} handler repair`, which keeps the \
             damaged file beside it (as {}.damaged-<time>), copies every item that can still be read and matches \
             its checksum into a new file, and makes that a consistent blog (counts, names, copies); or move the \
             data directory away to start empty",
            super::database::FILE
        )
    } else {
        format!(
            "{path} is damaged or is not this store's database, and nothing in it can be read as this store's: \
             restore the data directory from a backup, or move the data directory away to start empty"
        )
    }
}

/// Why a row that does not match its checksum is refused, and what to do.
pub(crate) fn mismatch(
    path: &std::path::Path,
    container: Container,
    partition_key: &str,
    id: &str,
) -> String {
    format!(
        "{path}: the item {id:?} of {container} (partition key {partition_key:?}) does not match its checksum: its bytes \
         changed on disk after it was written (a failing disk, or the file edited outside the handler), so it is not \
         served. Restore the data directory from a backup; or, to go on without that item, stop the blog and run \
         `{command}`, which removes it with what depends on it (a post's comments, likes and copies; a comment's or a \
         like's count on its post; a user's username reservation) and leaves the rest consistent",
        command = remove_command(path, container, partition_key, id),
        path = path.display(),
        container = container.name(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_is_covered_in_framed_fields() {
        let base = of_row(Container::Posts, "p", "c", r#"{"a":1}"#, 7, None);
        assert_ne!(base, of_row(Container::Users, "p", "c", r#"{"a":1}"#, 7, None));
        assert_ne!(base, of_row(Container::Posts, "q", "c", r#"{"a":1}"#, 7, None));
        assert_ne!(base, of_row(Container::Posts, "p", "d", r#"{"a":1}"#, 7, None));
        assert_ne!(base, of_row(Container::Posts, "p", "c", r#"{"a":9}"#, 7, None));
        assert_ne!(base, of_row(Container::Posts, "p", "c", r#"{"a":1}"#, 8, None));
        assert_ne!(base, of_row(Container::Posts, "p", "c", r#"{"a":1}"#, 7, Some(0)));
        // The same bytes split differently between two fields.
        assert_ne!(
            of_row(Container::Posts, "ab", "c", "{}", 1, None),
            of_row(Container::Posts, "a", "bc", "{}", 1, None)
        );
    }

    #[test]
    fn the_refusal_gives_a_command_that_removes_exactly_that_item() {
        let why = mismatch(std::path::Path::new("data/blog.sqlite"), Container::Posts, "it's", "x");
        assert!(why.contains("BLOG_DATA_DIR='data' handler remove posts 'it'\\''s' 'x'"), "{why}");
        assert!(why.contains("data/blog.sqlite") && why.contains("backup"), "{why}");
    }

    /// Each hostile id, quoted and given to a real shell, comes back as the one word it is, and
    /// nothing in it runs.
    #[test]
    fn a_quoted_word_is_inert_in_a_shell() {
        let hostile = [
            "$(touch pwned)",
            "`touch pwned`",
            "${HOME}",
            "{a,b}",
            "it's",
            "'",
            "''",
            "\"double\" \\ back",
            "a b\tc\nd",
            "*",
            "~",
            "-n",
            "",
            "$'\\x41'",
            "!!",
        ];
        let dir = tempfile::tempdir().unwrap();
        for text in hostile {
            let script = format!("printf '%s' {}", shell_quoted(text));
            let output = std::process::Command::new("sh")
                .arg("-c")
                .arg(&script)
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert!(output.status.success(), "{script}");
            assert_eq!(String::from_utf8(output.stdout).unwrap(), text, "{script}");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing ran");
    }

    #[test]
    fn a_contribution_covers_the_key_and_the_checksum() {
        let base = contribution(Container::Posts, "p", "c", 7);
        assert_ne!(base, contribution(Container::Users, "p", "c", 7));
        assert_ne!(base, contribution(Container::Posts, "q", "c", 7));
        assert_ne!(base, contribution(Container::Posts, "p", "d", 7));
        assert_ne!(base, contribution(Container::Posts, "p", "c", 8));
        assert_ne!(
            contribution(Container::Posts, "ab", "c", 1),
            contribution(Container::Posts, "a", "bc", 1)
        );
    }
}
