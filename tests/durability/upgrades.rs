//! A database of an earlier handler, or from before tags, is upgraded in place.

use super::*;

/// A database written before items carried checksums is upgraded in place, in
/// one transaction, at the first start: everything is served as before, and from then on a
/// changed item is refused. A database of a newer schema is refused, saying so.
#[tokio::test]
async fn a_database_of_an_earlier_handler_is_upgraded_in_place() {
    let (post, temp) = post_with_three_comments().await;
    let path = temp.path().join("blog.sqlite");
    let database = rusqlite::Connection::open(&path).unwrap();
    // As handlers before the checksums (and the tallies) made it.
    database
        .execute_batch(
            "ALTER TABLE items DROP COLUMN sum; DROP TABLE partitions; \
             DELETE FROM meta WHERE key LIKE 'items:%' OR key LIKE 'digest:%'; PRAGMA user_version = 0;",
        )
        .unwrap();
    drop(database);
    let app = TestApp::start_in(temp.path()).await;
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body["commentCount"], 3);
    assert_eq!(
        app.get(&format!("/api/posts/{post}/comments")).await.body["items"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    app.stop().await;
    let database = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = database.query_row("PRAGMA user_version", [], |row| row.get(0)).unwrap();
    assert_eq!(version, 4);
    let unsummed: i64 = database
        .query_row("SELECT count(*) FROM items WHERE sum = 0", [], |row| row.get(0))
        .unwrap();
    assert_eq!(unsummed, 0, "every item has its checksum");
    database.execute("UPDATE items SET doc = replace(doc, 'a comment', 'x comment')", []).unwrap();
    drop(database);
    assert!(refusal(temp.path()).await.contains("does not match its checksum"));

    let database = rusqlite::Connection::open(&path).unwrap();
    database.execute_batch("PRAGMA user_version = 5").unwrap();
    drop(database);
    let error = refusal(temp.path()).await;
    assert!(
        error.contains("newer handler") && error.contains(&path.display().to_string()),
        "{error}"
    );
}

/// A database written before the container `tags` (version 2: no tallies of it, nor of
/// `words`) is given both containers, empty, and serves as before; its posts can be tagged.
#[tokio::test]
async fn a_database_from_before_tags_is_upgraded_in_place() {
    upgraded_from(2, &["tags", "words"]).await;
}

/// A database written before the search index (version 3: no container `words`) is given it,
/// empty, and serves as before; `handler rebuild-copies` indexes its posts.
#[tokio::test]
async fn a_database_from_before_the_search_index_is_upgraded_in_place() {
    upgraded_from(3, &["words"]).await;
}

/// A blog's database made as the handler of schema `version` made it, without the containers
/// `added` since; opened, upgraded, served.
async fn upgraded_from(version: i64, added: &[&str]) {
    let (post, temp) = post_with_three_comments().await;
    let path = temp.path().join("blog.sqlite");
    let database = rusqlite::Connection::open(&path).unwrap();
    for container in added {
        database
            .execute_batch(&format!(
                "DELETE FROM items WHERE container = '{container}'; \
                 DELETE FROM partitions WHERE container = '{container}'; \
                 DELETE FROM meta WHERE key IN ('items:{container}', 'digest:{container}');"
            ))
            .unwrap();
    }
    database.execute_batch(&format!("PRAGMA user_version = {version};")).unwrap();
    drop(database);
    let app = TestApp::start_in(temp.path()).await;
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body["commentCount"], 3);
    app.stop().await;
    let database = rusqlite::Connection::open(&path).unwrap();
    let now: i64 = database.query_row("PRAGMA user_version", [], |row| row.get(0)).unwrap();
    assert_eq!(now, 4);
    for container in added {
        let tallies: i64 = database
            .query_row(
                &format!(
                    "SELECT count(*) FROM meta WHERE key IN ('items:{container}', 'digest:{container}')"
                ),
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(tallies, 2, "{container}");
    }
}
