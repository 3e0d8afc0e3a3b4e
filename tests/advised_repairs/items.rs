//! A damaged, deleted, misplaced or unloadable item is repaired as the refusal advises.

use super::*;

/// A byte changed on disk in any item of any container: refused naming the item, with the
/// `handler remove` that removes it; removed, with what depends on it.
#[tokio::test]
async fn a_changed_byte_in_any_item_is_removed_as_the_refusal_advises() {
    let template = template().await;
    for item in template.items() {
        let what = format!("a byte changed in {item:?}");
        let advised =
            format!("handler remove {} '{}' '{}'", item.container, item.partition_key, item.id);
        let dir = case(
            &template,
            &what,
            |dir| change_a_byte(dir, &item),
            "does not match its checksum",
            &advised,
        )
        .await;
        let doc: Option<String> = database(dir.path())
            .query_row(&format!("SELECT doc FROM items WHERE {WHERE_KEY}"), key(&item), |row| {
                row.get(0)
            })
            .ok();
        // What was written by someone (a user, a post, a comment, a like, a request's record,
        // a dead letter) is gone; what follows from what is left is made again (a live post's
        // copy, a live user's name reserved); the blog's own marks and logs are written again
        // as the blog goes on, or not.
        let kind: Value = serde_json::from_str(&item.doc).unwrap();
        let remade = (matches!(item.container.as_str(), "users" | "feed" | "tags")
            && kind["type"] == "post")
            || kind["type"] == "username";
        let written = item.id.starts_with("request-")
            || item.container == "posts"
            || item.container == "leases"
            || (item.container == "users" && kind["type"] == "user");
        if kind["scriptFence"] != true && (remade || written) {
            assert_eq!(doc.is_some(), remade, "{what}: {doc:?}");
        }
    }
}

/// Any item deleted from the file, in any container: refused naming where, with the `handler
/// repair` that accepts what is left as a consistent blog.
#[tokio::test]
async fn an_item_deleted_from_any_container_is_repaired_as_the_refusal_advises() {
    let template = template().await;
    for item in template.items() {
        let what = format!("{item:?} deleted");
        let delete = |dir: &Path| {
            assert_eq!(sql(dir, &format!("DELETE FROM items WHERE {WHERE_KEY}"), &key(&item)), 1)
        };
        case(&template, &what, delete, "does not hold what it recorded holding", "handler repair")
            .await;
    }
}

/// A row of any container whose columns are not what the store writes (a write number that is
/// text, a JSON that is a blob), or that names a container the store does not have: refused,
/// with the `handler repair` that removes it.
#[tokio::test]
async fn a_row_of_the_wrong_type_or_container_is_repaired_as_the_refusal_advises() {
    let template = template().await;
    let mut per_container: BTreeMap<String, Item> = BTreeMap::new();
    for item in template.items() {
        per_container.entry(item.container.clone()).or_insert(item);
    }
    let changes = [
        (
            "a write number that is text",
            "UPDATE items SET seq = 'x' WHERE container = ?1 AND pk = ?2 AND id = ?3",
        ),
        (
            "a JSON that is a blob",
            "UPDATE items SET doc = CAST(doc AS BLOB) WHERE container = ?1 AND pk = ?2 AND id = ?3",
        ),
        (
            "an unknown container",
            "UPDATE items SET container = 'drafts' WHERE container = ?1 AND pk = ?2 AND id = ?3",
        ),
    ];
    for item in per_container.values() {
        for (change, statement) in changes {
            let what = format!("{item:?}: {change}");
            let damage = |dir: &Path| assert_eq!(sql(dir, statement, &key(item)), 1);
            let dir = case(
                &template,
                &what,
                damage,
                "holds a row or a record that is not what this store writes",
                "handler repair",
            )
            .await;
            let left: i64 = database(dir.path())
                .query_row(
                    "SELECT count(*) FROM items WHERE container = 'drafts' OR typeof(seq) != 'integer' OR typeof(doc) != 'text'",
                    [],
                    |row| row.get(0),
                )
                .unwrap();
            assert_eq!(left, 0, "{what}: the row is removed");
        }
    }
}

/// An item of any container that is not JSON, its checksum forged to match: the checksum
/// passes, the emulator refuses to load it, and the refusal names the `handler remove` that
/// removes it.
#[tokio::test]
async fn an_item_that_cannot_be_loaded_is_removed_as_the_refusal_advises() {
    let template = template().await;
    let mut per_container: BTreeMap<String, Item> = BTreeMap::new();
    for item in template.items() {
        per_container.entry(item.container.clone()).or_insert(item);
    }
    for item in per_container.values() {
        let what = format!("{item:?} made not JSON");
        let forge = |dir: &Path| {
            let database = database(dir);
            let (seq, expires): (u64, Option<u64>) = database
                .query_row(
                    &format!("SELECT seq, expires FROM items WHERE {WHERE_KEY}"),
                    key(item),
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .unwrap();
            let doc = "not JSON";
            let sum = forged_sum(&item.container, &item.partition_key, &item.id, doc, seq, expires);
            let changed = database
                .execute(
                    &format!("UPDATE items SET doc = ?4, sum = ?5 WHERE {WHERE_KEY}"),
                    rusqlite::params![item.container, item.partition_key, item.id, doc, sum],
                )
                .unwrap();
            assert_eq!(changed, 1);
        };
        let advised =
            format!("handler remove {} '{}' '{}'", item.container, item.partition_key, item.id);
        case(&template, &what, forge, "cannot be loaded", &advised).await;
    }
}
