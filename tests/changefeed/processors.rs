//! The processors as the host runs them: its invocation decoded, their work metered, and their
//! routes only for the host.

use super::*;

#[tokio::test]
async fn the_host_invocation_is_decoded_through_both_string_layers() {
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Hello").await;
    let version =
        app.state.store.read::<Value>(Container::Posts, &post, &post).await.unwrap().unwrap();
    let body = host::cosmos_invocation(
        "PostsChangeFeed",
        std::slice::from_ref(&version),
        Attempt::Retry(0),
    );
    // The shape itself: Data.documents is a string holding a string holding the array.
    let invocation: Value = serde_json::from_slice(&body).unwrap();
    let layer: String =
        serde_json::from_str(invocation["Data"]["documents"].as_str().unwrap()).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&layer).unwrap(), json!([version]));

    let answer = host::invoke(&app, "PostsChangeFeed", &body).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert!(answer.body["Logs"][0].as_str().unwrap().contains("1 applied"), "{}", answer.body);
    assert_eq!(ids(&app.get("/api/feed").await.body), vec![post]);
}

#[tokio::test]
async fn the_processors_query_only_for_renamed_users() {
    let app = TestApp::start().await;
    let deliveries = app.deliveries.clone().expect("the local processors run");
    let settled = |function: Function, items: u64| {
        let deliveries = deliveries.clone();
        async move {
            for _ in 0..250 {
                if deliveries.of(function).items >= items {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            deliveries.of(function)
        }
    };
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Hello").await;
    app.eventually("/api/feed", |feed| ids(feed) == [post.clone()]).await;

    let posts = settled(Function::PostsChangeFeed, 1).await;
    assert!(posts.items >= 1 && posts.charge > 0.0, "{posts:?}");
    assert!(
        posts.operations >= posts.items + 4,
        "each item read, then both copies read and written: {posts:?}"
    );
    // Her name's reservation, the user, then the copy of her post in her partition and her
    // posts mark: each costs the processor's read of it, and the user one read of her name's
    // reservation, and the change log's read and write that name her for the instances that
    // keep her page. A user never renamed needs no query for items under another name.
    let users = settled(Function::UsersChangeFeed, 4).await;
    assert_eq!((users.items, users.operations), (4, 7), "{users:?}");

    let renamed = app.put(&format!("/api/users/{alice}"), json!({"username": "alice2"})).await;
    assert!(renamed.body["renamedAt"].is_string(), "{}", renamed.body);
    app.eventually(&format!("/api/posts/{post}"), |found| found["userUsername"] == "alice2").await;
    // (The new name's reservation, and the user.)
    let users = settled(Function::UsersChangeFeed, 6).await;
    assert!(
        users.operations > users.items + 1,
        "a rename reads the user and queries for her items: {users:?}"
    );
}

#[tokio::test]
async fn the_change_feed_routes_exist_only_for_the_host() {
    // Locally the processors deliver the changes: nobody else may.
    let app = TestApp::start().await;
    for function in Function::ALL {
        let forged = host::cosmos_invocation(
            function.name(),
            &[json!({"id": "p", "type": "post"})],
            Attempt::Retry(0),
        );
        let answer = host::invoke(&app, function.name(), &forged).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{}: {}", function.name(), answer.body);
    }
    // Under the host, a client's request is forwarded under the `api` prefix, where no
    // change-feed function lives.
    let app = TestApp::start_as_host().await;
    for function in Function::ALL {
        for path in [format!("/api/{}", function.name()), format!("/api/../{}", function.name())] {
            let answer = host::forward(
                &app,
                "POST",
                &path,
                &[("Content-Type", "application/json")],
                Some(b"{}"),
            )
            .await;
            assert!(matches!(answer.status.as_u16(), 404 | 405), "{path}: {}", answer.status);
        }
    }
}
