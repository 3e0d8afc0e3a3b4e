use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::sdk::bounded;
use super::*;
use crate::test_support::{FaultyDisk, embedded_config};

/// Cosmos DB removes an item `ttl` seconds after its last write, in a container with time to
/// live on. The embedded store's sweep must too, by a deletion committed to the database. A
/// restart must neither forget nor reset an expiry.
#[tokio::test]
async fn items_expire_ttl_seconds_after_their_last_write_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let config = embedded_config(dir.path());
    let now = embedded::unix_now();
    {
        let store = Store::connect(&config).await.unwrap();
        store
            .create(Container::Posts, "p", &json!({"id": "gone", "postId": "p", "ttl": 100}))
            .await
            .unwrap();
        store
            .create(Container::Posts, "p", &json!({"id": "kept", "postId": "p", "ttl": 100}))
            .await
            .unwrap();
        // Written again without a ttl: it no longer expires.
        store
            .replace(Container::Posts, "p", "kept", &json!({"id": "kept", "postId": "p"}), None)
            .await
            .unwrap();
        store
            .create(Container::Posts, "p", &json!({"id": "forever", "postId": "p", "ttl": -1}))
            .await
            .unwrap();
        // No time to live in `feed`: Cosmos DB ignores the item's ttl there.
        store
            .create(Container::Feed, "note", &json!({"id": "u", "type": "note", "ttl": 1}))
            .await
            .unwrap();
        assert_eq!(store.embedded().unwrap().remove_expired(&store, now + 50).await.unwrap(), 0);
    }
    let store = Store::connect(&config).await.unwrap();
    assert_eq!(
        store.embedded().unwrap().remove_expired(&store, now + 98).await.unwrap(),
        0,
        "a restart does not reset the expiry, nor bring it forward"
    );
    assert_eq!(store.embedded().unwrap().remove_expired(&store, now + 200).await.unwrap(), 1);
    assert!(store.read::<Value>(Container::Posts, "p", "gone").await.unwrap().is_none());
    for (container, partition_key, id) in [
        (Container::Posts, "p", "kept"),
        (Container::Posts, "p", "forever"),
        (Container::Feed, "note", "u"),
    ] {
        assert!(store.read::<Value>(container, partition_key, id).await.unwrap().is_some(), "{id}");
    }
    drop(store);
    let store = Store::connect(&config).await.unwrap();
    assert!(
        store.read::<Value>(Container::Posts, "p", "gone").await.unwrap().is_none(),
        "the removal was committed"
    );
}

/// A request dropped while its write is being applied (the client went away): the write may
/// be in the emulator already, so it is committed as it is there, listed for the change-feed
/// processors, and still there after a restart.
#[tokio::test]
async fn a_write_whose_request_is_dropped_midway_is_committed_as_applied() {
    let dir = tempfile::tempdir().unwrap();
    let config = embedded_config(dir.path());
    let store = Store::connect(&config).await.unwrap();
    let document = json!({"id": "u1", "userId": "u1", "username": "kept"});
    let applied_then_stalled = async {
        bounded(store.users.upsert_item("u1".to_owned(), "u1", &document, None)).await?;
        std::future::pending::<Result<(), StoreError>>().await
    };
    let write = store.durably(
        Container::Users,
        "u1",
        vec![("u1".into(), Some(document.clone()))],
        applied_then_stalled,
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(200), write).await.is_err(),
        "dropped midway"
    );

    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while store.embedded().unwrap().changed_after(Container::Users, 0, 10).items.is_empty() {
        assert!(std::time::Instant::now() < deadline, "never committed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(store);
    // (The committing task may hold the data directory a moment longer.)
    let store = loop {
        match Store::connect(&config).await {
            Ok(store) => break store,
            Err(error)
                if error.to_string().contains("in use") && std::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(10)).await
            }
            Err(error) => panic!("{error}"),
        }
    };
    assert_eq!(
        store.read::<Value>(Container::Users, "u1", "u1").await.unwrap().unwrap()["username"],
        "kept"
    );
}

/// A write is seen by no reader (point read, query, change-feed listing) before its commit
/// is on disk: a crash would take it back.
#[tokio::test]
async fn no_reader_is_offered_a_write_before_it_is_on_disk() {
    use futures::FutureExt;
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(FaultyDisk::default());
    let store = Arc::new(
        Store::connect_with(&embedded_config(dir.path()), disk.clone(), Default::default())
            .await
            .unwrap(),
    );
    store.create(Container::Users, "u1", &json!({"id": "u1", "userId": "u1"})).await.unwrap();
    let before = store.embedded().unwrap().changed_after(Container::Users, 0, 100);
    assert_eq!(before.items.len(), 1);

    // A slow fsync: the next write is applied, and waits for the disk.
    let _release = crate::test_support::ReleaseOnDrop(disk.clone());
    disk.hold_syncs();
    let writing = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .replace(
                    Container::Users,
                    "u1",
                    "u1",
                    &json!({"id": "u1", "userId": "u1", "v": 2}),
                    None,
                )
                .await
        }
    });
    while !disk.holding() {
        tokio::task::yield_now().await;
    }
    let during = store.embedded().unwrap().changed_after(Container::Users, before.through, 100);
    assert_eq!(
        during,
        Changed { items: vec![], through: before.through },
        "a crash now would lose the write"
    );
    let mut read = Box::pin(store.read::<Value>(Container::Users, "u1", "u1"));
    assert!((&mut read).now_or_never().is_none(), "a point read waits for the commit");
    let query = QuerySpec { sql: "SELECT * FROM c".into(), parameters: vec![] };
    let mut listed = Box::pin(store.query_documents(
        Container::Users,
        "u1",
        query,
        PageRequest { size: 10, continuation: None },
    ));
    assert!((&mut listed).now_or_never().is_none(), "so does a query of its partition");
    let other = store.read::<Value>(Container::Users, "u2", "u2").await.unwrap();
    assert!(other.is_none(), "another partition is read meanwhile");

    disk.release_syncs();
    writing.await.unwrap().unwrap();
    assert_eq!(read.await.unwrap().unwrap()["v"], 2, "the read sees the write once it is durable");
    assert_eq!(listed.await.unwrap().0.len(), 1);
    let after = store.embedded().unwrap().changed_after(Container::Users, before.through, 100);
    assert_eq!(after.items, vec![("u1".to_owned(), "u1".to_owned())]);
    assert!(store.embedded().unwrap().is_settled(Container::Users, "u1", "u1"));
}

/// A refused commit (a full disk) is undone before its partition is let go: a reader
/// waiting meanwhile sees the item as it was, and so does a restart.
#[tokio::test]
async fn a_reader_waiting_on_a_refused_write_sees_the_item_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let config = embedded_config(dir.path());
    let disk = Arc::new(FaultyDisk::default());
    let store =
        Arc::new(Store::connect_with(&config, disk.clone(), Default::default()).await.unwrap());
    store.create(Container::Posts, "p", &json!({"id": "p", "postId": "p", "n": 1})).await.unwrap();
    let _release = crate::test_support::ReleaseOnDrop(disk.clone());
    disk.hold_syncs();
    disk.fail_next_commits(1);
    let writing = tokio::spawn({
        let store = store.clone();
        async move {
            store.upsert(Container::Posts, "p", &json!({"id": "p", "postId": "p", "n": 2})).await
        }
    });
    while !disk.holding() {
        tokio::task::yield_now().await;
    }
    let reading = tokio::spawn({
        let store = store.clone();
        async move { store.read::<Value>(Container::Posts, "p", "p").await }
    });
    disk.release_syncs();
    assert!(matches!(writing.await.unwrap(), Err(StoreError::DiskFull)));
    assert_eq!(reading.await.unwrap().unwrap().unwrap()["n"], 1);
    store.upsert(Container::Posts, "p", &json!({"id": "p", "postId": "p", "n": 3})).await.unwrap();
    drop(store);
    let store = Store::connect(&config).await.unwrap();
    assert_eq!(store.read::<Value>(Container::Posts, "p", "p").await.unwrap().unwrap()["n"], 3);
}

/// Writes to different partitions commit together: many concurrent writes, far fewer
/// commits than writes would be one fsync each; all of them durable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_to_different_partitions_share_commits() {
    let dir = tempfile::tempdir().unwrap();
    let config = embedded_config(dir.path());
    let disk = Arc::new(FaultyDisk::default());
    let store =
        Arc::new(Store::connect_with(&config, disk.clone(), Default::default()).await.unwrap());
    // Held, so that every write queues up behind the first commit.
    let _release = crate::test_support::ReleaseOnDrop(disk.clone());
    disk.hold_syncs();
    let writes: Vec<_> = (0..64)
        .map(|n| {
            let store = store.clone();
            tokio::spawn(async move {
                let id = format!("p{n}");
                store.create(Container::Posts, &id, &json!({"id": id, "postId": id})).await
            })
        })
        .collect();
    while !disk.holding() {
        tokio::task::yield_now().await;
    }
    // Every other write gets applied and queued while the first commit is held: none waits
    // for another's partition.
    while store.durability.as_ref().unwrap().database.last_seq() < 64 {
        tokio::task::yield_now().await;
    }
    disk.release_syncs();
    for write in writes {
        write.await.unwrap().unwrap();
    }
    assert!(disk.commits() <= 2, "{} commits for 64 writes", disk.commits());
    drop(store);
    let store = Store::connect(&config).await.unwrap();
    for n in 0..64 {
        let id = format!("p{n}");
        assert!(store.read::<Value>(Container::Posts, &id, &id).await.unwrap().is_some(), "{id}");
    }
}

/// Request records are kept in the database only: a batch creates one with its write, in one
/// commit. A second create of it fails the batch as Cosmos DB would (409 for it, 424 for the
/// rest) and applies nothing. It is read back by its id, before and after a restart, though the
/// emulator never holds it. Once expired it is no longer read, and the sweep removes it.
#[tokio::test]
async fn request_records_expire_in_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let config = embedded_config(dir.path());
    let record = |ttl: u64| json!({"id": "request-1", "type": "request", "postId": "p", "fingerprint": "f", "itemId": "c1", "ttl": ttl});
    let comment = |id: &str| WriteOp::Create {
        document: json!({"id": id, "postId": "p", "type": "comment"}),
    };
    {
        let store = Store::connect(&config).await.unwrap();
        store
            .execute_batch(
                Container::Posts,
                "p",
                vec![WriteOp::Create { document: record(100) }, comment("c1")],
            )
            .await
            .unwrap();
        let again = store
            .execute_batch(
                Container::Posts,
                "p",
                vec![WriteOp::Create { document: record(100) }, comment("c2")],
            )
            .await;
        assert!(
            matches!(again, Err(StoreError::BatchFailed { ref statuses }) if *statuses == [409, 424]),
            "{again:?}"
        );
        assert!(
            store.read::<Value>(Container::Posts, "p", "c2").await.unwrap().is_none(),
            "nothing of a failed batch"
        );
        // The emulator never saw it: its own read does not find it; the store's does.
        assert!(matches!(
            bounded(store.posts.read_item("p".to_owned(), "request-1", None)).await,
            Err(StoreError::NotFound)
        ));
        assert_eq!(
            store.read::<Value>(Container::Posts, "p", "request-1").await.unwrap().unwrap()["itemId"],
            "c1"
        );
        // The operations of a failed batch that the emulator ran keep their places.
        let taken = store
            .execute_batch(
                Container::Posts,
                "p",
                vec![
                    WriteOp::Create {
                        document: json!({"id": "request-2", "postId": "p", "type": "request"}),
                    },
                    comment("c1"),
                ],
            )
            .await;
        assert!(
            matches!(taken, Err(StoreError::BatchFailed { ref statuses }) if *statuses == [424, 409]),
            "{taken:?}"
        );
        assert!(
            store.read::<Value>(Container::Posts, "p", "request-2").await.unwrap().is_none(),
            "nor its record"
        );
    }
    let store = Store::connect(&config).await.unwrap();
    assert_eq!(
        store.read::<Value>(Container::Posts, "p", "request-1").await.unwrap().unwrap()["itemId"],
        "c1",
        "after a restart"
    );
    let durability = store.embedded().unwrap();
    let now = embedded::unix_now();
    assert_eq!(durability.remove_expired_records(now + 50, 10).await.unwrap(), 0);
    assert_eq!(durability.remove_expired_records(now + 200, 10).await.unwrap(), 1);
    assert!(
        durability.database.durable_row(Container::Posts, "p", "request-1").unwrap().is_none(),
        "removed from the database"
    );
    // Written again, with a new expiry: a new record, created again.
    store
        .execute_batch(
            Container::Posts,
            "p",
            vec![WriteOp::Create { document: record(100) }, comment("c3")],
        )
        .await
        .unwrap();
    assert!(store.read::<Value>(Container::Posts, "p", "request-1").await.unwrap().is_some());
}

/// The embedded store runs a batch itself, checked and then applied an item at a time
/// (`embedded::batch`); the SDK's emulator runs it on a copy of its partition
/// (`azure_data_cosmos_driver` 1.0.0, `in_memory_emulator/operations.rs`, `handle_batch`). The
/// same batch on the same items, in two partitions: the same statuses, and the same items after.
#[tokio::test]
async fn a_batch_is_decided_as_the_emulator_decides_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::connect(&embedded_config(dir.path())).await.unwrap();
    let item = |partition: &str, id: &str, n: u32| json!({"id": id, "postId": partition, "n": n});
    fn stale() -> Option<String> {
        Some("\"stale\"".to_owned())
    }
    type Case = fn(&dyn Fn(&str, u32) -> Value, Option<String>) -> Vec<WriteOp>;
    // Each batch, given how to make an item of its partition and the etag of `a` there.
    let cases: Vec<(&str, Case)> = vec![
        ("create what is there", |item, _| vec![WriteOp::Create { document: item("a", 1) }]),
        ("a later operation fails", |item, _| {
            vec![
                WriteOp::Create { document: item("b", 1) },
                WriteOp::Create { document: item("a", 1) },
            ]
        }),
        ("replace what is not there", |item, _| {
            vec![WriteOp::Replace { id: "c".into(), document: item("c", 1), if_match: None }]
        }),
        ("replace at a stale etag", |item, _| {
            vec![WriteOp::Replace { id: "a".into(), document: item("a", 1), if_match: stale() }]
        }),
        ("replace twice at the etag read", |item, etag| {
            vec![
                WriteOp::Replace { id: "a".into(), document: item("a", 1), if_match: etag.clone() },
                WriteOp::Replace { id: "a".into(), document: item("a", 2), if_match: etag },
            ]
        }),
        ("delete what is not there", |_, _| {
            vec![WriteOp::Delete { id: "c".into(), if_match: None }]
        }),
        ("delete at a stale etag", |_, _| {
            vec![WriteOp::Delete { id: "a".into(), if_match: stale() }]
        }),
        ("upsert at a stale etag", |item, _| {
            vec![WriteOp::Upsert { document: item("a", 1), if_match: stale() }]
        }),
        ("upsert at an etag of nothing", |item, _| {
            vec![WriteOp::Upsert { document: item("c", 1), if_match: stale() }]
        }),
        ("create, delete and create again", |item, _| {
            vec![
                WriteOp::Create { document: item("b", 1) },
                WriteOp::Delete { id: "b".into(), if_match: None },
                WriteOp::Create { document: item("b", 2) },
            ]
        }),
        ("delete then create", |item, etag| {
            vec![
                WriteOp::Delete { id: "a".into(), if_match: etag },
                WriteOp::Create { document: item("a", 3) },
            ]
        }),
        ("upsert, then replace at the etag read", |item, etag| {
            vec![
                WriteOp::Upsert { document: item("a", 1), if_match: None },
                WriteOp::Replace { id: "a".into(), document: item("a", 2), if_match: etag },
            ]
        }),
        ("all applied", |item, etag| {
            vec![
                WriteOp::Replace { id: "a".into(), document: item("a", 4), if_match: etag },
                WriteOp::Create { document: item("b", 4) },
                WriteOp::Upsert { document: item("c", 4), if_match: None },
            ]
        }),
    ];
    for (number, (case, batch)) in cases.into_iter().enumerate() {
        let mut outcomes = Vec::new();
        for side in ["embedded", "emulator"] {
            let partition = format!("{side}-{number}");
            store.create(Container::Posts, &partition, &item(&partition, "a", 0)).await.unwrap();
            let etag = store
                .read_versioned::<Value>(Container::Posts, &partition, "a")
                .await
                .unwrap()
                .map(|found| found.etag);
            let operations = batch(&|id, n| item(&partition, id, n), etag);
            let outcome = match side {
                "embedded" => store.execute_batch(Container::Posts, &partition, operations).await,
                _ => store.emulator_batch(Container::Posts, &partition, operations).await,
            };
            let status = match outcome {
                Ok(()) => vec![200],
                Err(StoreError::BatchFailed { statuses }) => statuses,
                Err(other) => panic!("{case}, {side}: {other}"),
            };
            let mut items = Vec::new();
            for id in ["a", "b", "c"] {
                let found = store.read::<Value>(Container::Posts, &partition, id).await.unwrap();
                items.push(found.map(|found| found["n"].clone()));
            }
            outcomes.push((status, items));
        }
        assert_eq!(outcomes[0], outcomes[1], "{case}: the embedded store's, then the emulator's");
    }
}

/// A point write of a batch that fails once others were applied (here, an item of another
/// partition, which the emulator refuses whole with 400): the ones applied are put back, in the
/// emulator and so after a restart, and the batch fails as the emulator's would.
#[tokio::test]
async fn a_batch_that_fails_midway_is_put_back() {
    let dir = tempfile::tempdir().unwrap();
    let config = embedded_config(dir.path());
    let batch = |partition: &str| {
        vec![
            WriteOp::Upsert {
                document: json!({"id": "a", "postId": partition, "n": 1}),
                if_match: None,
            },
            WriteOp::Create { document: json!({"id": "b", "postId": partition, "n": 1}) },
            WriteOp::Create { document: json!({"id": "c", "postId": "elsewhere"}) },
        ]
    };
    {
        let store = Store::connect(&config).await.unwrap();
        for partition in ["embedded", "emulator"] {
            let a = json!({"id": "a", "postId": partition, "n": 0});
            store.create(Container::Posts, partition, &a).await.unwrap();
        }
        let theirs = store.emulator_batch(Container::Posts, "emulator", batch("emulator")).await;
        assert!(matches!(theirs, Err(StoreError::BadRequest(_))), "{theirs:?}");
        let ours = store.execute_batch(Container::Posts, "embedded", batch("embedded")).await;
        assert!(matches!(ours, Err(StoreError::BadRequest(_))), "{ours:?}");
        for partition in ["embedded", "emulator"] {
            let a = store.read::<Value>(Container::Posts, partition, "a").await.unwrap().unwrap();
            assert_eq!(a["n"], 0, "{partition}");
            assert!(store.read::<Value>(Container::Posts, partition, "b").await.unwrap().is_none());
        }
    }
    let store = Store::connect(&config).await.unwrap();
    let a = store.read::<Value>(Container::Posts, "embedded", "a").await.unwrap().unwrap();
    assert_eq!(a["n"], 0, "after a restart");
    assert!(store.read::<Value>(Container::Posts, "embedded", "b").await.unwrap().is_none());
}

/// A batch whose request is dropped once it started (the client went away) is applied whole,
/// and committed: its own task holds the partition until then, so no half of it is ever seen.
#[tokio::test]
async fn a_batch_whose_request_is_dropped_is_applied_whole() {
    use futures::FutureExt;
    let dir = tempfile::tempdir().unwrap();
    let config = embedded_config(dir.path());
    let store = Store::connect(&config).await.unwrap();
    let operations: Vec<WriteOp> = (0..50)
        .map(|n| WriteOp::Create { document: json!({"id": format!("i{n}"), "postId": "p"}) })
        .collect();
    let batch = store.execute_batch(Container::Posts, "p", operations);
    assert!(batch.now_or_never().is_none(), "started, then dropped");
    // A read waits for the partition, which the batch's task holds until its commit.
    assert!(store.read::<Value>(Container::Posts, "p", "i49").await.unwrap().is_some());
    assert!(store.read::<Value>(Container::Posts, "p", "i0").await.unwrap().is_some());
    drop(store);
    let store = Store::connect(&config).await.unwrap();
    assert!(store.read::<Value>(Container::Posts, "p", "i0").await.unwrap().is_some());
    assert!(store.read::<Value>(Container::Posts, "p", "i49").await.unwrap().is_some());
}
