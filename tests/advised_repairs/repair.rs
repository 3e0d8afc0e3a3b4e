//! A store damaged on purpose, the refusal it gets, the repair run as that refusal prints it,
//! and the blog then checked to be whole.

use super::*;

/// A row of `items`.
#[derive(Clone, Debug)]
pub(crate) struct Item {
    pub(crate) container: String,
    pub(crate) partition_key: String,
    pub(crate) id: String,
    pub(crate) doc: String,
}

pub(crate) fn database(dir: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(dir.join("blog.sqlite")).unwrap()
}

pub(crate) fn rows(dir: &Path) -> Vec<Item> {
    let database = database(dir);
    let mut select = database
        .prepare("SELECT container, pk, id, doc FROM items ORDER BY container, pk, id")
        .unwrap();
    select
        .query_map([], |row| {
            Ok(Item {
                container: row.get(0)?,
                partition_key: row.get(1)?,
                id: row.get(2)?,
                doc: row.get(3)?,
            })
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Runs `statement` on the stopped blog's database, as the sqlite3 shell would; answers how
/// many rows it changed.
pub(crate) fn sql(dir: &Path, statement: &str, params: &[&str]) -> usize {
    database(dir).execute(statement, rusqlite::params_from_iter(params)).unwrap()
}

/// The key of `item` as SQL parameters.
pub(crate) fn key(item: &Item) -> [&str; 3] {
    [&item.container, &item.partition_key, &item.id]
}

pub(crate) const WHERE_KEY: &str = "container = ?1 AND pk = ?2 AND id = ?3";

/// Changes one byte of `item`'s JSON in the file itself, as a failing disk would: the row's
/// bytes in the file are its columns one after the other (SQLite's record format:
/// <https://www.sqlite.org/fileformat2.html#record_format>), found by them, and a letter of its
/// JSON is changed to another, so that the JSON stays valid and only the checksum can tell. A
/// table WITHOUT ROWID is an index b-tree, whose interior pages may hold a whole row as a key:
/// each place the row's bytes are is changed alike.
pub(crate) fn change_a_byte(dir: &Path, item: &Item) {
    // Everything in the file, no log beside it.
    database(dir).query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    let path = dir.join("blog.sqlite");
    let mut bytes = std::fs::read(&path).unwrap();
    // The row's start: a row larger than a page's share (the change log's, with many names)
    // goes on in overflow pages elsewhere in the file, so only its start is found whole. The
    // letter changed is the first field name's (`{"` opens every item), which is in that start.
    let mut end = item.doc.len().min(24);
    while !item.doc.is_char_boundary(end) {
        end -= 1;
    }
    let doc_start = &item.doc[..end];
    let record = format!("{}{}{}{}", item.container, item.partition_key, item.id, doc_start);
    let found: Vec<usize> = bytes
        .windows(record.len())
        .enumerate()
        .filter(|(_, at)| *at == record.as_bytes())
        .map(|(at, _)| at)
        .collect();
    assert!(!found.is_empty(), "the row's bytes are in the file: {item:?}");
    assert!(
        item.doc.starts_with("{\"") && item.doc.as_bytes()[2].is_ascii_alphabetic(),
        "a field name to change: {item:?}"
    );
    for at in found {
        bytes[at + record.len() - doc_start.len() + 2] ^= 0x01;
    }
    std::fs::write(&path, bytes).unwrap();
}

/// What `handler` (serving) printed, refusing to start on `dir`.
fn refusal(dir: &Path) -> String {
    let output = common::binary::run_to_end(&[], dir);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!output.status.success(), "the handler started on {}: {said}", dir.display());
    said
}

/// The command `refusal` advises (the one in backquotes that starts `BLOG_DATA_DIR=`), run as
/// printed by `sh -c`, in a directory of its own, with the directory of the `handler` binary
/// first on the PATH; answers the command, after checking that it succeeded and ran nothing else.
fn run_advised(refusal: &str) -> String {
    let command = common::binary::advised_command(refusal);
    let cwd = tempfile::tempdir().unwrap();
    common::binary::run_as_printed(command, cwd.path());
    assert_eq!(
        std::fs::read_dir(cwd.path()).unwrap().count(),
        0,
        "{command} left nothing where it ran"
    );
    command.to_owned()
}

/// One case: `damage` done to a copy of the blog, refused at start with a message holding
/// `said`, whose advised command is `advised` once the data directory is taken out; that
/// command run, the blog started and checked. Answers the data directory (stopped) for more
/// checks.
pub(crate) async fn case(
    template: &Template,
    what: &str,
    damage: impl FnOnce(&Path),
    said: &str,
    advised: &str,
) -> tempfile::TempDir {
    let dir = template.copy();
    damage(dir.path());
    let refused = refusal(dir.path());
    assert!(refused.contains(said), "{what}: the refusal says {said:?}: {refused}");
    let command = run_advised(&refused);
    let quoted_dir = format!("BLOG_DATA_DIR='{}' ", dir.path().display());
    assert_eq!(command.strip_prefix(&quoted_dir), Some(advised), "{what}: {command}");
    let blog = Handler::start(dir.path(), &[]);
    consistent(&blog.base, &template.users, what).await;
    assert!(blog.stop().success(), "{what}: the blog stops cleanly");
    no_orphans(dir.path(), what);
    dir
}

pub(crate) async fn get(base: &str, path: &str) -> (StatusCode, Value) {
    let answer = reqwest::get(format!("{base}{path}")).await.unwrap();
    let status = answer.status();
    (status, answer.json().await.unwrap_or(Value::Null))
}

async fn list(base: &str, path: &str) -> Vec<Value> {
    let (status, body) = get(base, path).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    body["items"].as_array().unwrap().clone()
}

/// What the blog at `base` serves is consistent (see the module's documentation).
async fn consistent(base: &str, users: &[String], what: &str) {
    let feed = list(base, "/api/feed").await;
    let mut live = Vec::new();
    for copy in &feed {
        let id = copy["id"].as_str().unwrap();
        let (status, post) = get(base, &format!("/api/posts/{id}")).await;
        assert_eq!(status, StatusCode::OK, "{what}: the feed's copy of {id} has its post: {post}");
        let comments = list(base, &format!("/api/posts/{id}/comments")).await.len() as u64;
        let likes = list(base, &format!("/api/posts/{id}/likes")).await.len() as u64;
        assert_eq!(
            (post["commentCount"].as_u64(), post["likeCount"].as_u64()),
            (Some(comments), Some(likes)),
            "{what}: {id}"
        );
        for field in ["commentCount", "likeCount", "title", "tags"] {
            assert_eq!(
                copy[field], post[field],
                "{what}: the feed's copy of {id} follows its {field}"
            );
        }
        live.push(post);
    }
    for tag in TAGS {
        let listed = list(base, &format!("/api/tags/{tag}/posts")).await;
        let mut listed_ids: Vec<&str> =
            listed.iter().map(|copy| copy["id"].as_str().unwrap()).collect();
        let mut carrying: Vec<&str> = live
            .iter()
            .filter(|post| {
                post["tags"].as_array().is_some_and(|tags| {
                    tags.iter().any(|t| t.as_str().unwrap().to_lowercase() == tag)
                })
            })
            .map(|post| post["id"].as_str().unwrap())
            .collect();
        listed_ids.sort_unstable();
        carrying.sort_unstable();
        assert_eq!(listed_ids, carrying, "{what}: the page of {tag} lists the posts that carry it");
        for copy in &listed {
            let post = live.iter().find(|post| post["id"] == copy["id"]).unwrap();
            assert_eq!(
                (&copy["commentCount"], &copy["likeCount"]),
                (&post["commentCount"], &post["likeCount"]),
                "{what}: {tag}"
            );
        }
    }
    for user in users {
        let (status, _) = get(base, &format!("/api/users/{user}")).await;
        let mut listed: Vec<String> = list(base, &format!("/api/users/{user}/posts"))
            .await
            .iter()
            .map(|copy| copy["id"].as_str().unwrap().to_owned())
            .collect();
        let mut theirs: Vec<String> = live
            .iter()
            .filter(|post| post["userId"] == user.as_str())
            .map(|post| post["id"].as_str().unwrap().to_owned())
            .collect();
        listed.sort_unstable();
        theirs.sort_unstable();
        if status == StatusCode::OK {
            assert_eq!(listed, theirs, "{what}: {user}'s posts are listed");
        }
    }
}

/// No comment or like is left of a post that is gone, and no copy of one (in the stopped
/// blog's database). (A script fence, `scriptFence`, is the server-side scripts' own item.)
fn no_orphans(dir: &Path, what: &str) {
    let orphans: i64 = database(dir)
        .query_row(
            "SELECT count(*) FROM items AS item WHERE (
                (item.container = 'posts' AND json_extract(item.doc, '$.type') IN ('comment', 'like')
                 AND NOT EXISTS (SELECT 1 FROM items AS post WHERE post.container = 'posts' AND post.pk = item.pk AND post.id = item.pk))
                OR (item.container IN ('users', 'feed', 'tags') AND json_extract(item.doc, '$.type') = 'post'
                 AND json_extract(item.doc, '$.scriptFence') IS NULL AND NOT EXISTS (SELECT 1 FROM items AS post WHERE post.container = 'posts'
                     AND post.id = json_extract(item.doc, '$.postId') AND post.pk = post.id)))",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(orphans, 0, "{what}: nothing is left of a post that is gone");
}
