//! The in-process script executor on the embedded store: a script's writes commit together or
//! not at all, and a script whose view went stale is run again.

use std::sync::Arc;

use blog::config::{Backend, Config};
use blog::cosmos::{Container, Store};
use blog::scripts::{InProcessScripts, Script, ScriptError};
use serde_json::{Value, json};

async fn store() -> (Arc<Store>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        backend: Backend::Embedded { data_dir: dir.path().to_owned() },
        database: "blog".into(),
        create_containers: true,
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
    assert!(matches!(&error, ScriptError::Failed(message) if message.contains("changed my mind")), "{error}");
    assert_eq!(store.read::<Value>(Container::Posts, "p", "written-first").await.unwrap(), None);
    assert_eq!(store.read::<Value>(Container::Posts, "p", "p").await.unwrap().unwrap()["n"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_script_whose_reads_went_stale_runs_again() {
    let (store, _dir) = store().await;
    store.create(Container::Posts, "p", &json!({"id": "p", "postId": "p", "n": 0})).await.unwrap();
    // Two executors stand for two handler instances: they share the database but not the
    // in-process partition lock, so their scripts conflict on the post's etag and must re-run.
    let executors = [Arc::new(InProcessScripts::new(store.clone())), Arc::new(InProcessScripts::new(store.clone()))];
    let mut tasks = Vec::new();
    for n in 0..30 {
        let executor = executors[n % 2].clone();
        tasks.push(tokio::spawn(async move { executor.run(INCREMENT, "p", vec![json!("p")]).await }));
    }
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.unwrap().expect("every increment commits eventually").as_u64().unwrap());
    }
    results.sort_unstable();
    assert_eq!(results, (1..=30).collect::<Vec<u64>>(), "each run saw a distinct, committed state");
    assert_eq!(store.read::<Value>(Container::Posts, "p", "p").await.unwrap().unwrap()["n"], 30);
    for n in 1..=30 {
        assert!(store.read::<Value>(Container::Posts, "p", &format!("p-{n}")).await.unwrap().is_some(), "item p-{n}");
    }
}
