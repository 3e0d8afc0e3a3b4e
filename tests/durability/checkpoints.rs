//! A checkpoint or write number that cannot be right (beyond the last write, corrupt, a
//! directory, negative, out of range at import) refuses to start and says what to do.

use super::*;

/// A change-feed processor's position beyond the last write the store numbered cannot have
/// been reached: the file is damaged or from another copy, and a processor would wait for
/// writes up to it forever. Refused at start, naming the file and what to do.
#[tokio::test]
async fn a_checkpoint_beyond_the_last_write_refuses_to_start() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let first = app.post_by(&alice, "first").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == first.as_str()).await;
    let temp = app.stop().await.unwrap();
    let path = temp.path().join("changefeed-PostsChangeFeed.json");
    let kept = std::fs::read(&path).unwrap();
    let saved: serde_json::Value = serde_json::from_slice(&kept).unwrap();
    for ahead in [saved["delivered_through"].as_u64().unwrap() + 20, u64::MAX] {
        std::fs::write(&path, json!({"delivered_through": ahead}).to_string()).unwrap();
        let error = refusal(temp.path()).await;
        assert!(
            error.contains(&path.display().to_string()) && error.contains("beyond the last write"),
            "{error}"
        );
        assert!(error.contains("delete it"), "says what to do: {error}");
    }
    std::fs::write(&path, kept).unwrap();
    let app = TestApp::start_in(temp.path()).await;
    let second = app.post_by(&alice, "second").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == second.as_str()).await;
    app.stop().await;
}
/// The earlier store kept numbering after a processor's position past its journal (it gave
/// numbers it never journaled), so its import does too; a position with no room left after it
/// is refused, naming the file.
#[tokio::test]
async fn an_earlier_store_s_position_out_of_range_is_refused_at_import() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let first = app.post_by(&alice, "first").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == first.as_str()).await;
    let temp = app.stop().await.unwrap();
    as_earlier_store(temp.path());
    let path = temp.path().join("changefeed-PostsChangeFeed.json");
    let kept = std::fs::read(&path).unwrap();
    std::fs::write(&path, json!({"delivered_through": u64::MAX}).to_string()).unwrap();
    let error = refusal(temp.path()).await;
    assert!(error.contains(&path.display().to_string()) && error.contains("delete it"), "{error}");
    assert!(temp.path().join("journal.jsonl").exists(), "nothing imported");

    let saved: serde_json::Value = serde_json::from_slice(&kept).unwrap();
    let ahead = saved["delivered_through"].as_u64().unwrap() + 20;
    std::fs::write(&path, json!({"delivered_through": ahead}).to_string()).unwrap();
    let app = TestApp::start_in(temp.path()).await;
    let second = app.post_by(&alice, "second").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == second.as_str()).await;
    app.stop().await;
}

#[tokio::test]
async fn a_corrupt_checkpoint_refuses_to_start() {
    let data = tempfile::tempdir().unwrap();
    let path = data.path().join("changefeed-PostsChangeFeed.json");
    std::fs::write(&path, r#"{"delivered_thr"#).unwrap();
    let error = refusal(data.path()).await;
    assert!(
        error.contains(&path.display().to_string()) && error.to_lowercase().contains("delete it"),
        "{error}"
    );
}

/// A directory where a processor's checkpoint file belongs (made by hand, or by a tool) is
/// refused at start, naming it and saying what to do, as every other refusal does.
#[tokio::test]
async fn a_checkpoint_path_that_is_a_directory_refuses_to_start() {
    let data = tempfile::tempdir().unwrap();
    let path = data.path().join("changefeed-UsersChangeFeed.json");
    std::fs::create_dir(&path).unwrap();
    let error = refusal(data.path()).await;
    assert!(
        error.contains(&path.display().to_string()) && error.contains("is a directory"),
        "{error}"
    );
    assert!(error.contains("move it out of the data directory"), "says what to do: {error}");
}

/// A negative write number in an edited database is refused at start, naming the file, instead
/// of wrapping into a number no processor could ever reach.
#[tokio::test]
async fn a_negative_write_number_in_the_database_refuses_to_start() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    app.post_by(&alice, "first").await;
    let temp = app.stop().await.unwrap();
    let path = temp.path().join("blog.sqlite");
    let database = rusqlite::Connection::open(&path).unwrap();
    database.execute("UPDATE meta SET value = -5 WHERE key = 'last_seq'", []).unwrap();
    drop(database);
    let error = refusal(temp.path()).await;
    assert!(error.contains(&path.display().to_string()), "names the file: {error}");
}
