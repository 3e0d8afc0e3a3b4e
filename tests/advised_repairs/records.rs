//! A damaged tally, meta record or page is repaired or salvaged as the refusal advises.

use super::*;

/// The store's own records damaged: a container's tally (its count, its digest, a partition's),
/// the last write's number lowered or not a number, `meta` emptied, a repair's mark: each
/// refused, with the `handler repair` that makes them anew.
#[tokio::test]
async fn a_damaged_tally_or_meta_record_is_repaired_as_the_refusal_advises() {
    let template = template().await;
    let incomplete = "does not hold what it recorded holding";
    let not_written = "holds a row or a record that is not what this store writes";
    let mut cases: Vec<(String, String, &str)> = Vec::new();
    for container in ["users", "posts", "feed", "tags", "leases"] {
        cases.push((
            format!("{container}'s count"),
            format!("UPDATE meta SET value = value + 1 WHERE key = 'items:{container}'"),
            incomplete,
        ));
        cases.push((
            format!("{container}'s digest"),
            format!("UPDATE meta SET value = value + 1 WHERE key = 'digest:{container}'"),
            incomplete,
        ));
        cases.push((
            format!("a partition's tally in {container}"),
            format!(
                "UPDATE partitions SET items = items + 1 WHERE (container, pk) = (SELECT container, pk FROM partitions WHERE container = '{container}' LIMIT 1)"
            ),
            incomplete,
        ));
    }
    cases.extend([
        (
            "a count that is text".to_owned(),
            "UPDATE meta SET value = 'many' WHERE key = 'items:tags'".to_owned(),
            not_written,
        ),
        (
            "a partition's tally that is text".to_owned(),
            "UPDATE partitions SET digest = 'x' WHERE container = 'tags'".to_owned(),
            not_written,
        ),
        (
            "the last write's number lowered below a row's".to_owned(),
            "UPDATE meta SET value = (SELECT max(seq) FROM items) - 1 WHERE key = 'last_seq'"
                .to_owned(),
            not_written,
        ),
        (
            "the last write's number negative".to_owned(),
            "UPDATE meta SET value = -1 WHERE key = 'last_seq'".to_owned(),
            not_written,
        ),
        (
            "meta emptied".to_owned(),
            "DELETE FROM meta".to_owned(),
            "lost its records of what it holds",
        ),
        ("the tallies' table emptied".to_owned(), "DELETE FROM partitions".to_owned(), incomplete),
        (
            "a repair's mark".to_owned(),
            "INSERT INTO meta (key, value) VALUES ('repair_pending', 1)".to_owned(),
            "did not finish",
        ),
    ]);
    for (what, statement, said) in cases {
        let damage = |dir: &Path| assert!(sql(dir, &statement, &[]) > 0, "{what}: {statement}");
        case(&template, &what, damage, said, "handler repair").await;
    }
}

/// A page of the file damaged (SQLite's own check fails): refused, with the `handler repair`
/// that keeps the damaged file and copies what can still be read into a new one. What was on
/// the damaged page is gone, the rest is kept, and the blog is consistent.
#[tokio::test]
async fn a_damaged_page_is_salvaged_as_the_refusal_advises() {
    let template = template().await;
    let items = rows(template.dir.path()).len();
    let damage_a_page = |dir: &Path| {
        database(dir).query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
        let path = dir.join("blog.sqlite");
        let mut bytes = std::fs::read(&path).unwrap();
        let page_size = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
        // A leaf of the items' b-tree (page type 10: a leaf of an index b-tree, which a table
        // WITHOUT ROWID is) that holds a comment: its header (type, cells) made noise.
        let page = (1..bytes.len() / page_size)
            .find(|page| {
                let bytes = &bytes[page * page_size..(page + 1) * page_size];
                bytes[0] == 10 && bytes.windows(9).any(|at| at == b"A comment")
            })
            .expect("a leaf that holds a comment");
        for byte in &mut bytes[page * page_size..page * page_size + 12] {
            *byte = 0xA5;
        }
        std::fs::write(&path, bytes).unwrap();
    };
    let dir = case(
        &template,
        "a damaged page",
        damage_a_page,
        "SQLite cannot read all of it",
        "handler repair",
    )
    .await;
    let kept: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("blog.sqlite.damaged-"))
        .collect();
    assert_eq!(kept.len(), 1, "the damaged file is kept: {kept:?}");
    let left = rows(dir.path()).len();
    assert!(
        left > 0 && left < items,
        "what could be read is kept, what was on the page is gone: {left} of {items}"
    );
}

/// The checksum the store keeps with a row (`of_row` in src/cosmos/embedded/checksum.rs),
/// forged, as someone who knows the format can: each text framed by its length, the write
/// number, and a tagged expiry.
pub(crate) fn forged_sum(
    container: &str,
    partition_key: &str,
    id: &str,
    doc: &str,
    seq: u64,
    expires: Option<u64>,
) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    for text in [container, partition_key, id, doc] {
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
