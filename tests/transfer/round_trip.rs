//! A blog exported and imported moves whole: the same on stdout, an export or import killed
//! or sent again, and the changes the processors have yet to deliver.

use super::*;

/// Exported to stdout, the blog is the same text as in the file.
fn an_export_to_stdout_is_the_file(exported: &Exported) {
    let to_stdout = exported.handler(&["export"], &[]);
    assert_eq!(String::from_utf8_lossy(&to_stdout.stdout), exported.text);
}

/// An export killed after a few items leaves the file that was there, and a temporary file
/// that the next export removes.
fn a_killed_export_leaves_the_previous_file_and_a_leftover_the_next_removes(exported: &Exported) {
    let path = exported.file.to_str().unwrap();
    let killed = exported.handler(&["export", "--output", path], &[("BLOG_TEST_KILL_AFTER", "5")]);
    assert!(!killed.status.success(), "killed: {}", stderr(&killed));
    assert_eq!(
        std::fs::read_to_string(&exported.file).unwrap(),
        exported.text,
        "the previous file, whole"
    );
    let other = exported.files.path().join("other.jsonl");
    let killed = exported
        .handler(&["export", "-o", other.to_str().unwrap()], &[("BLOG_TEST_KILL_AFTER", "5")]);
    assert!(!killed.status.success());
    let left = exported.names();
    assert!(!other.exists(), "no file cut short: {left:?}");
    assert_eq!(
        left.iter().filter(|name| name.starts_with(".other.jsonl.partial-")).count(),
        1,
        "{left:?}"
    );
    let again = exported.handler(&["export", "-o", other.to_str().unwrap()], &[]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(&other).unwrap(), exported.text);
    let names = exported.names();
    assert!(
        !names.iter().any(|name| name.starts_with(".other.jsonl.partial-")),
        "the leftover is removed: {names:?}"
    );
}

/// Imported into an empty store (its pictures kept as `to` says), twice; in a second store
/// killed after five items and pictures, then run again: each shows what the blog showed, and
/// exported again is the file.
async fn imported_killed_or_sent_again_arrives_whole(
    exported: &Exported,
    to: &impl Fn(&str) -> Vec<(String, String)>,
) {
    let path = exported.file.to_str().unwrap();
    for run in 1..=2 {
        let to_settings = to(&format!("to-{run}"));
        let to_settings = borrowed(&to_settings);
        let to_settings = to_settings.as_slice();
        let to = tempfile::tempdir().unwrap();
        // Run 2: killed after five items and pictures written, then run again.
        if run == 2 {
            let killed = handler_with(
                to.path(),
                &["import", path],
                &[to_settings, &[("BLOG_TEST_KILL_AFTER", "5")]].concat(),
            );
            assert!(!killed.status.success(), "killed: {}", stderr(&killed));
            assert!(!stderr(&killed).contains("copies made"), "{}", stderr(&killed));
        }
        for again in 1..=2 {
            let imported = handler_with(to.path(), &["import", path], to_settings);
            assert!(imported.status.success(), "run {run}.{again}: {}", stderr(&imported));
            assert!(
                stderr(&imported).contains(&format!("import: {EXPORTED} written, copies made")),
                "{}",
                stderr(&imported)
            );
            shows_the_same(to.path(), to_settings, &exported.blog, &format!("run {run}.{again}"))
                .await;
        }
        // The store exported again is the file.
        let exported_again = handler_with(to.path(), &["export"], to_settings);
        assert_eq!(String::from_utf8_lossy(&exported_again.stdout), exported.text, "run {run}");
    }
}

/// A file cut short, one put after another, one changed, and one of version 1 are refused,
/// and nothing is imported.
fn a_file_cut_short_doubled_changed_or_of_version_1_imports_nothing(
    exported: &Exported,
    to: &impl Fn(&str) -> Vec<(String, String)>,
) {
    let to_settings = to("to-bad");
    let to_settings = borrowed(&to_settings);
    let to_settings = to_settings.as_slice();
    let to = tempfile::tempdir().unwrap();
    let text = &exported.text;
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines[..5].iter().map(|line| format!("{line}\n")).collect::<String>();
    let changed = text.replacen("was here", "was there", 1);
    let version_1 = text.replacen("\"version\":2", "\"version\":1", 1);
    let last = lines.len();
    let cases = [
        (cut, "the file ends at line 5 without its last line, which says what an export holds: it is cut short".to_owned()),
        (format!("{text}{text}"), format!("line {}: more after the file's last line (line {last})", last + 1)),
        (changed, format!("line {last}: the file's SHA-256 is")),
        (version_1, "line 1: a version 1 export".to_owned()),
    ];
    let bad = exported.files.path().join("bad.jsonl");
    for (text, said) in cases {
        std::fs::write(&bad, &text).unwrap();
        let imported = handler_with(to.path(), &["import", bad.to_str().unwrap()], to_settings);
        assert_eq!(imported.status.code(), Some(1), "{}", stderr(&imported));
        assert!(
            stderr(&imported).contains(&said) && stderr(&imported).contains("nothing was imported"),
            "{said}: {}",
            stderr(&imported)
        );
    }
    let exported = handler_with(to.path(), &["export"], to_settings);
    assert_eq!(
        String::from_utf8_lossy(&exported.stdout).lines().count(),
        2,
        "only the header and the last line: nothing was imported"
    );
}

/// Export, then import into empty stores, all of the above on one exported blog: the same
/// blog, whatever stopped the import or the export on the way. `from_settings`: where the blog
/// keeps its pictures; `to`: where each store imported into keeps them (a store of its own for
/// each name given). For a picture store costly to start once a test (Azurite).
async fn moved_whole(from_settings: &[(&str, &str)], to: impl Fn(&str) -> Vec<(String, String)>) {
    let exported = Exported::new(from_settings).await;
    an_export_to_stdout_is_the_file(&exported);
    a_killed_export_leaves_the_previous_file_and_a_leftover_the_next_removes(&exported);
    imported_killed_or_sent_again_arrives_whole(&exported, &to).await;
    a_file_cut_short_doubled_changed_or_of_version_1_imports_nothing(&exported, &to);
}

/// The blog in a file: its items, not the store's own properties; the same on stdout.
#[tokio::test]
async fn an_export_holds_the_blog() {
    an_export_to_stdout_is_the_file(&Exported::new(&[]).await);
}

#[tokio::test]
async fn a_killed_export_leaves_no_file_cut_short() {
    a_killed_export_leaves_the_previous_file_and_a_leftover_the_next_removes(
        &Exported::new(&[]).await,
    );
}

#[tokio::test]
async fn a_blog_imported_killed_or_sent_again_arrives_whole() {
    imported_killed_or_sent_again_arrives_whole(&Exported::new(&[]).await, &|_: &str| Vec::new())
        .await;
}

#[tokio::test]
async fn a_file_cut_short_doubled_or_changed_imports_nothing() {
    a_file_cut_short_doubled_changed_or_of_version_1_imports_nothing(
        &Exported::new(&[]).await,
        &|_: &str| Vec::new(),
    );
}

/// The same with the pictures in Blob Storage, as Azurite serves it: each blog in a container
/// of its own.
#[tokio::test]
#[ignore = "needs Azurite: run tests/azurite/run.sh"]
async fn a_blog_with_its_pictures_in_blob_storage_moves_whole() {
    let azurite = common::azurite::Azurite::start();
    let connection = azurite.connection_string();
    let from = [("BLOG_PICTURES", connection.as_str()), ("BLOG_PICTURES_CONTAINER", "from")];
    moved_whole(&from, |container| {
        vec![
            ("BLOG_PICTURES".to_owned(), connection.clone()),
            ("BLOG_PICTURES_CONTAINER".to_owned(), container.to_owned()),
        ]
    })
    .await;
}

/// `handler lag` on the embedded store: with nothing delivering the change feed (the blog run
/// as under the Functions host, whose trigger is not there), the writes are counted as not yet
/// delivered, with the oldest one's age; once the local processors have run, nothing is.
#[tokio::test]
async fn lag_counts_the_changes_not_yet_delivered() {
    let data = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let fresh = handler(data.path(), &["lag"]);
    assert!(fresh.status.success(), "{}", stderr(&fresh));
    assert_eq!(
        String::from_utf8_lossy(&fresh.stdout),
        "PostsChangeFeed: up to date\nUsersChangeFeed: up to date\n"
    );

    let blog = Handler::start(data.path(), &[("BLOG_CHANGE_FEED", "host")]);
    send(
        &client,
        &blog.base,
        "ada",
        reqwest::Method::POST,
        "/api/users",
        json!({"username": "ada"}),
    )
    .await;
    for n in 0..3 {
        let body = json!({"userId": "ada", "title": format!("Post {n}"), "content": "x"});
        send(&client, &blog.base, "ada", reqwest::Method::POST, "/api/posts", body).await;
    }
    blog.stop();
    let behind = handler(data.path(), &["lag"]);
    assert!(behind.status.success(), "{}", stderr(&behind));
    let said = String::from_utf8_lossy(&behind.stdout).into_owned();
    assert!(
        said.starts_with("PostsChangeFeed: 3 changes not delivered yet, the oldest written "),
        "{said}"
    );
    // The user, and the name it reserved, in `users`.
    assert!(
        said.contains("\nUsersChangeFeed: ") && !said.contains("UsersChangeFeed: up to date"),
        "{said}"
    );

    let blog = Handler::start(data.path(), &[]);
    until_the_feed_has(&blog.base, 3).await;
    blog.stop();
    let caught_up = handler(data.path(), &["lag"]);
    assert_eq!(
        String::from_utf8_lossy(&caught_up.stdout),
        "PostsChangeFeed: up to date\nUsersChangeFeed: up to date\n"
    );
}
