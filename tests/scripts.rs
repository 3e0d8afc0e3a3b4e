//! The in-process script executor on the embedded store: a script's writes commit together or
//! not at all, and a script whose view went stale is run again.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use blog::testing::cosmos::{Container, Store, WriteOp};
use blog::testing::scripts::{
    InProcessScripts, NOT_AMONG_NEWEST, PostTrigger, Script, ScriptError, ScriptExecutor,
    StoredProcedure,
};
use blog::{Backend, Config};
use serde_json::{Value, json};

async fn store() -> (Arc<Store>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        backend: Backend::Embedded { data_dir: dir.path().to_owned() },
        database: "blog".into(),
        create_containers: true,
        change_feed: blog::ChangeFeedMode::Host,
        scripts: blog::ScriptsMode::InProcess,
        max_in_flight: 16,
        header_timeout: blog::DEFAULT_HEADER_TIMEOUT,
        request_timeout: blog::DEFAULT_REQUEST_TIMEOUT,
        publish_every: blog::DEFAULT_PUBLISH_EVERY,
        write_limit: None,
        auth: blog::AuthMode::None,
        token_key: None,
        pictures: blog::PictureStorage::Off,
        pictures_per_writer: None,
        picture_mb_per_writer: None,
        picture_memory_mb: None,
        upload_buffer_mb: None,
        public_url: None,
    };
    (Arc::new(Store::connect(&config).await.unwrap()), dir)
}

const INCREMENT: Script = Script {
    name: "increment",
    source: r#"
        function increment(id) {
            var collection = getContext().getCollection();
            collection.readDocument(collection.getAltLink() + "/docs/" + id, function (err, doc) {
                if (err) throw err;
                doc.n += 1;
                collection.replaceDocument(doc._self, doc, function (err) {
                    if (err) throw err;
                    collection.createDocument(collection.getSelfLink(), { id: id + "-" + doc.n, postId: doc.postId });
                    getContext().getResponse().setBody(doc.n);
                });
            });
        }"#,
    container: Container::Posts,
};

#[tokio::test]
async fn a_script_that_throws_writes_nothing() {
    let (store, _dir) = store().await;
    store.create(Container::Posts, "p", &json!({"id": "p", "postId": "p", "n": 0})).await.unwrap();
    let failing = Script {
        name: "failing",
        source: r#"
            function failing() {
                var collection = getContext().getCollection();
                collection.createDocument(collection.getSelfLink(), { id: "written-first", postId: "p" }, function (err) {
                    if (err) throw err;
                    collection.upsertDocument(collection.getSelfLink(), { id: "p", postId: "p", n: 99 }, function (err) {
                        if (err) throw err;
                        throw new Error("changed my mind");
                    });
                });
            }"#,
        container: Container::Posts,
    };
    let scripts = InProcessScripts::new(store.clone());
    let error = scripts.run(failing, "p", vec![]).await.unwrap_err();
    assert!(
        matches!(&error, ScriptError::Thrown(message) if message.contains("changed my mind")),
        "{error}"
    );
    assert_eq!(store.read::<Value>(Container::Posts, "p", "written-first").await.unwrap(), None);
    assert_eq!(store.read::<Value>(Container::Posts, "p", "p").await.unwrap().unwrap()["n"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_script_whose_reads_went_stale_runs_again() {
    let (store, _dir) = store().await;
    store.create(Container::Posts, "p", &json!({"id": "p", "postId": "p", "n": 0})).await.unwrap();
    // Two executors stand for two handler instances: they share the database but not the
    // in-process partition lock, so their scripts conflict on the post's etag and must re-run.
    let executors = [
        Arc::new(InProcessScripts::new(store.clone())),
        Arc::new(InProcessScripts::new(store.clone())),
    ];
    let mut tasks = Vec::new();
    for n in 0..30 {
        let executor = executors[n % 2].clone();
        tasks.push(tokio::spawn(
            async move { executor.run(INCREMENT, "p", vec![json!("p")]).await },
        ));
    }
    let mut results = Vec::new();
    for task in tasks {
        results.push(
            task.await.unwrap().expect("every increment commits eventually").as_u64().unwrap(),
        );
    }
    results.sort_unstable();
    assert_eq!(results, (1..=30).collect::<Vec<u64>>(), "each run saw a distinct, committed state");
    assert_eq!(store.read::<Value>(Container::Posts, "p", "p").await.unwrap().unwrap()["n"], 30);
    for n in 1..=30 {
        assert!(
            store.read::<Value>(Container::Posts, "p", &format!("p-{n}")).await.unwrap().is_some(),
            "item p-{n}"
        );
    }
}

#[tokio::test]
async fn update_usernames_rewrites_only_what_is_wrong() {
    let (store, _dir) = store().await;
    // 150 items of the user in one post partition: more than one transactional batch (100).
    for n in 0..150 {
        let item = json!({"id": format!("c{n}"), "type": "comment", "postId": "p", "userId": "u", "userUsername": "old"});
        store.create(Container::Posts, "p", &item).await.unwrap();
    }
    let other = json!({"id": "other", "type": "comment", "postId": "p", "userId": "v", "userUsername": "old"});
    store.create(Container::Posts, "p", &other).await.unwrap();
    let scripts = InProcessScripts::new(store.clone());
    let update = StoredProcedure::UpdateUsernames.script();

    let first = scripts.run(update, "p", vec![json!("u"), json!("new")]).await.unwrap();
    // One transactional batch holds 100 operations: 99 rewrites and the partition's fence.
    assert_eq!(first, json!({"updated": 99, "done": false}), "stops when the batch is full");
    let second = scripts.run(update, "p", vec![json!("u"), json!("new")]).await.unwrap();
    assert_eq!(second, json!({"updated": 51, "done": true}), "the next run picks up the rest");
    let third = scripts.run(update, "p", vec![json!("u"), json!("new")]).await.unwrap();
    assert_eq!(third, json!({"updated": 0, "done": true}), "nothing is rewritten twice");
    for n in 0..150 {
        assert_eq!(
            store.read::<Value>(Container::Posts, "p", &format!("c{n}")).await.unwrap().unwrap()["userUsername"],
            "new"
        );
    }
    assert_eq!(
        store.read::<Value>(Container::Posts, "p", "other").await.unwrap().unwrap()["userUsername"],
        "old"
    );
    // A user id that would break a concatenated query is only ever a parameter.
    let hostile = scripts.run(update, "p", vec![json!("u\" OR 1=1 --"), json!("x")]).await.unwrap();
    assert_eq!(hostile, json!({"updated": 0, "done": true}));
}

/// A rename moves, on the post and in the same transaction as the names, the version of each
/// list it renames in, and no other; the post renamed with its author's items keeps the versions
/// the run moved (the query answers the post as it was before the run wrote it).
#[tokio::test]
async fn update_usernames_moves_the_versions_of_the_lists_it_renames_in() {
    let (store, _dir) = store().await;
    let post = json!({"id": "p", "type": "post", "postId": "p", "userId": "u", "userUsername": "old", "title": "t",
                      "content": "c", "commentCount": 1, "likeCount": 1, "creationDate": "2026-12-02T00:00:00.000Z",
                      "commentsVersion": "c0", "likesVersion": "l0"});
    store.create(Container::Posts, "p", &post).await.unwrap();
    let comment =
        json!({"id": "c", "type": "comment", "postId": "p", "userId": "u", "userUsername": "old"});
    store.create(Container::Posts, "p", &comment).await.unwrap();
    let like = json!({"id": "like-v", "type": "like", "postId": "p", "userId": "v", "userUsername": "fan"});
    store.create(Container::Posts, "p", &like).await.unwrap();
    let scripts = InProcessScripts::new(store.clone());
    let update = StoredProcedure::UpdateUsernames.script();
    let stored =
        || async { store.read::<Value>(Container::Posts, "p", "p").await.unwrap().unwrap() };

    let renamed = scripts.run(update, "p", vec![json!("u"), json!("new")]).await.unwrap();
    assert_eq!(renamed, json!({"updated": 2, "done": true}), "the post and the comment");
    let post = stored().await;
    assert_eq!(post["userUsername"], "new");
    assert!(
        post["commentsVersion"].is_string() && post["commentsVersion"] != "c0",
        "the comments' version moved: {post}"
    );
    assert_eq!(post["likesVersion"], "l0", "no like renamed");

    let renamed = scripts.run(update, "p", vec![json!("v"), json!("renamed-fan")]).await.unwrap();
    assert_eq!(renamed, json!({"updated": 1, "done": true}), "the like");
    let after = stored().await;
    assert!(
        after["likesVersion"].is_string() && after["likesVersion"] != "l0",
        "the likes' version moved: {after}"
    );
    assert_eq!(after["commentsVersion"], post["commentsVersion"], "no comment renamed");
}

fn feed_post(n: u32) -> Value {
    json!({"id": format!("p{n:03}"), "type": "post", "postId": format!("p{n:03}"), "userId": "u", "userUsername": "u",
           "title": "t", "content": "c", "commentCount": 0, "likeCount": 0,
           "creationDate": format!("2026-01-01T00:00:{:02}.{:03}Z", n / 1000, n % 1000)})
}

async fn feed_ids(store: &Store) -> Vec<String> {
    let query = blog::testing::cosmos::QuerySpec {
        sql: "SELECT VALUE c.id FROM c WHERE NOT IS_DEFINED(c.scriptFence) ORDER BY c.id".into(),
        parameters: vec![],
    };
    let page = blog::testing::cosmos::PageRequest { size: 1000, continuation: None };
    let (ids, _) = store.query_documents(Container::Feed, "post", query, page).await.unwrap();
    ids.into_iter().map(|id| id.as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn truncate_feed_keeps_exactly_the_newest_100() {
    let (store, _dir) = store().await;
    let scripts = InProcessScripts::new(store.clone());
    let write = |n: u32| WriteOp::Create { document: feed_post(n) };
    for n in 1..=100 {
        scripts.write_with_trigger(PostTrigger::TruncateFeed, "post", write(n)).await.unwrap();
    }
    assert_eq!(feed_ids(&store).await.len(), 100, "100 fit");

    scripts.write_with_trigger(PostTrigger::TruncateFeed, "post", write(101)).await.unwrap();
    let ids = feed_ids(&store).await;
    assert_eq!(ids.len(), 100, "the 101st pushes the oldest out");
    assert!(!ids.contains(&"p001".to_owned()) && ids.contains(&"p101".to_owned()));

    // An older post is refused, and the refusal undoes its write.
    let refused =
        scripts.write_with_trigger(PostTrigger::TruncateFeed, "post", write(0)).await.unwrap_err();
    assert!(
        matches!(&refused, ScriptError::Thrown(message) if message.starts_with(NOT_AMONG_NEWEST)),
        "{refused}"
    );
    assert_eq!(feed_ids(&store).await, ids);
    assert_eq!(store.read::<Value>(Container::Feed, "post", "p000").await.unwrap(), None);

    // Rewriting a post that is in the feed keeps it at 100.
    // Its `_etag`, as Cosmos DB answers every read with.
    let existing = store.read::<Value>(Container::Feed, "post", "p050").await.unwrap().unwrap();
    let etag = existing["_etag"].as_str().unwrap().to_owned();
    let mut edited = feed_post(50);
    edited["title"] = json!("edited");
    let replace = WriteOp::Replace { id: "p050".into(), document: edited, if_match: Some(etag) };
    scripts.write_with_trigger(PostTrigger::TruncateFeed, "post", replace).await.unwrap();
    assert_eq!(feed_ids(&store).await, ids);
    assert_eq!(
        store.read::<Value>(Container::Feed, "post", "p050").await.unwrap().unwrap()["title"],
        "edited"
    );
}

/// The scripts deployed to Cosmos DB and run in-process are the files in `src/scripts/`: each
/// must be valid JavaScript defining the function its file is named after, as the app runs it (a
/// keyed procedure with the shared helpers of `keyed_helpers.js` in it).
#[test]
fn every_script_file_is_valid_javascript_defining_its_function() {
    use blog::testing::cosmos::{PageRequest, StoreError};
    use blog::testing::scripts::engine::{self, Invocation, Limits, Partition, PartitionReader};

    struct Empty;
    impl PartitionReader for Empty {
        fn read(&self, _: &str) -> Result<Option<Value>, StoreError> {
            Ok(None)
        }
        fn query(
            &self,
            _: &str,
            _: &[(String, Value)],
            _: PageRequest,
        ) -> Result<(Vec<Value>, Option<String>), StoreError> {
            Ok((Vec::new(), None))
        }
    }

    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/scripts");
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(&folder).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("js") {
            continue;
        }
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        // The keyed procedures' shared helpers are no script of their own: run inside theirs.
        if name == "keyed_helpers" {
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                blog::testing::scripts::KEYED_HELPERS
            );
            continue;
        }
        // As the app runs it: a keyed procedure's file with the shared helpers in it.
        let source = StoredProcedure::ALL
            .into_iter()
            .map(StoredProcedure::script)
            .chain(PostTrigger::ALL.into_iter().map(PostTrigger::script))
            .find(|script| script.name == name)
            .unwrap_or_else(|| panic!("{name}.js is no script of the app"))
            .source;
        let partition = Partition {
            key: json!("k"),
            key_path: "/postId",
            self_link: "dbs/AAAA==/colls/AAAAAA==/".into(),
            alt_link: "dbs/blog/colls/posts".into(),
        };
        // Run without arguments: the script may throw (it validates its input), but it must
        // compile and define its function.
        let run = engine::run(
            source,
            &name,
            &Invocation::Procedure(vec![]),
            &partition,
            std::rc::Rc::new(Empty),
            &Limits::default(),
        );
        assert!(!matches!(&run.result, Err(ScriptError::Failed(_))), "{name}.js: {:?}", run.result);
        checked.push(name);
    }
    checked.sort();
    assert_eq!(
        checked,
        [
            "createComment",
            "createLike",
            "deleteComment",
            "deleteLike",
            "deletePost",
            "truncateFeed",
            "updateUsernames"
        ]
    );
    for procedure in StoredProcedure::ALL {
        assert!(checked.contains(&procedure.name().to_owned()));
    }
    for trigger in PostTrigger::ALL {
        assert!(checked.contains(&trigger.script().name.to_owned()));
    }
}

/// Two handler processes on one account, each with its own executor (and partition locks): with
/// the feed at 99 posts, two concurrent writes of new posts must leave exactly 100. Each trigger
/// only reads the others posts; without the fence both commit and the feed holds 101.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn truncate_feed_holds_across_processes() {
    for trial in 0..15 {
        let (store, _dir) = store().await;
        let single = InProcessScripts::new(store.clone());
        for n in 1..=99 {
            single
                .write_with_trigger(
                    PostTrigger::TruncateFeed,
                    "post",
                    WriteOp::Create { document: feed_post(n) },
                )
                .await
                .unwrap();
        }
        let processes = [
            Arc::new(InProcessScripts::new(store.clone())),
            Arc::new(InProcessScripts::new(store.clone())),
        ];
        let writes = processes.iter().zip([100, 101]).map(|(process, n)| {
            let process = process.clone();
            tokio::spawn(async move {
                process
                    .write_with_trigger(
                        PostTrigger::TruncateFeed,
                        "post",
                        WriteOp::Create { document: feed_post(n) },
                    )
                    .await
            })
        });
        for write in writes.collect::<Vec<_>>() {
            write.await.unwrap().unwrap();
        }
        let ids = feed_ids(&store).await;
        assert_eq!(ids.len(), 100, "trial {trial}: {} posts", ids.len());
        assert!(!ids.contains(&"p001".to_owned()), "trial {trial}: the oldest is gone");
    }
}

/// The fence item never shows: not in the application's feed query, nor in a post partition's
/// lists, nor in what a script's query returns.
#[tokio::test]
async fn the_fence_item_is_invisible_to_the_application() {
    let (store, _dir) = store().await;
    let scripts = InProcessScripts::new(store.clone());
    scripts
        .write_with_trigger(
            PostTrigger::TruncateFeed,
            "post",
            WriteOp::Create { document: feed_post(1) },
        )
        .await
        .unwrap();
    assert!(
        store
            .read::<Value>(Container::Feed, "post", blog::testing::scripts::FENCE_ID)
            .await
            .unwrap()
            .is_some(),
        "the trigger queried"
    );
    let page = blog::testing::cosmos::PageRequest { size: 100, continuation: None };
    let feed = store
        .query_documents(Container::Feed, "post", blog::testing::cosmos::queries::feed(), page)
        .await
        .unwrap()
        .0;
    assert_eq!(feed.iter().map(|post| post["id"].as_str().unwrap()).collect::<Vec<_>>(), ["p001"]);

    store
        .create(
            Container::Posts,
            "p",
            &json!({"id": "c1", "postId": "p", "userId": "u", "userUsername": "old"}),
        )
        .await
        .unwrap();
    let update = StoredProcedure::UpdateUsernames.script();
    scripts.run(update, "p", vec![json!("u"), json!("new")]).await.unwrap();
    assert!(
        store
            .read::<Value>(Container::Posts, "p", blog::testing::scripts::FENCE_ID)
            .await
            .unwrap()
            .is_some()
    );
    let page = blog::testing::cosmos::PageRequest { size: 100, continuation: None };
    for query in [
        blog::testing::cosmos::queries::post_comments(),
        blog::testing::cosmos::queries::post_likes(),
    ] {
        assert!(
            store
                .query_documents(Container::Posts, "p", query, page.clone())
                .await
                .unwrap()
                .0
                .is_empty()
        );
    }
}
