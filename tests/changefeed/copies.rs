//! The copies the change feed processors keep: each post with its author, counts and short
//! content, a rename everywhere, the newest 100 posts, and the users' names.

use super::*;

#[tokio::test]
async fn q3_q6_show_each_post_as_its_copy_holds_it() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let long = "é".repeat(SHORT_CONTENT_CHARS + 50);
    let first = app
        .post("/api/posts", json!({"userId": alice, "title": "First", "content": long}))
        .await
        .body;
    let second = app.post_by(&alice, "Second").await;
    let first_id = first["id"].as_str().unwrap();
    for n in 0..3 {
        app.post(
            &format!("/api/posts/{first_id}/comments"),
            json!({"userId": bob, "content": format!("c{n}")}),
        )
        .await;
    }
    app.post(&format!("/api/posts/{first_id}/likes"), json!({"userId": bob})).await;
    app.post(&format!("/api/posts/{first_id}/likes"), json!({"userId": alice})).await;

    let expected_first = |item: &Value| {
        item["id"] == first["id"]
            && item["commentCount"] == 3
            && item["likeCount"] == 2
            && item["userUsername"] == "alice"
            && item["content"].as_str().unwrap().chars().count() == SHORT_CONTENT_CHARS
            && first["content"].as_str().unwrap().starts_with(item["content"].as_str().unwrap())
    };
    let feed = app
        .eventually("/api/feed", |feed| {
            feed["items"].as_array().unwrap().iter().any(expected_first)
        })
        .await;
    assert_eq!(ids(&feed.body), vec![second.clone(), first_id.to_owned()], "newest first");
    assert_eq!(
        feed.body["items"][1].as_object().unwrap().len(),
        10,
        "exactly the article's fields: {}",
        feed.body
    );
    let posts = app
        .eventually(&format!("/api/users/{alice}/posts"), |posts| {
            posts["items"].as_array().unwrap().iter().any(expected_first)
        })
        .await;
    assert_eq!(ids(&posts.body), vec![second, first_id.to_owned()]);
    assert_eq!(app.get(&format!("/api/users/{bob}/posts")).await.body["items"], json!([]));
}

#[tokio::test]
async fn a_rename_reaches_everything_the_user_wrote() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let alices_post = app.post_by(&alice, "By Alice").await;
    let bobs_post = app.post_by(&bob, "By Bob").await;
    app.post(
        &format!("/api/posts/{bobs_post}/comments"),
        json!({"userId": alice, "content": "hi"}),
    )
    .await;
    app.post(&format!("/api/posts/{bobs_post}/likes"), json!({"userId": alice})).await;
    app.post(
        &format!("/api/posts/{alices_post}/comments"),
        json!({"userId": alice, "content": "mine"}),
    )
    .await;
    app.post(
        &format!("/api/posts/{alices_post}/comments"),
        json!({"userId": bob, "content": "bob's"}),
    )
    .await;

    app.put(&format!("/api/users/{alice}"), json!({"username": "alicia"})).await;

    app.eventually(&format!("/api/posts/{alices_post}"), |post| post["userUsername"] == "alicia")
        .await;
    let comments = app
        .eventually(&format!("/api/posts/{bobs_post}/comments"), |c| {
            c["items"][0]["userUsername"] == "alicia"
        })
        .await;
    assert_eq!(comments.body["items"].as_array().unwrap().len(), 1);
    app.eventually(&format!("/api/posts/{bobs_post}/likes"), |l| {
        l["items"][0]["userUsername"] == "alicia"
    })
    .await;
    let own = app
        .eventually(&format!("/api/posts/{alices_post}/comments"), |c| {
            c["items"][0]["userUsername"] == "alicia"
        })
        .await;
    assert_eq!(own.body["items"][1]["userUsername"], "bob", "other users' items keep their names");
    app.eventually(&format!("/api/users/{alice}/posts"), |p| {
        p["items"][0]["userUsername"] == "alicia"
    })
    .await;
    let feed = app
        .eventually("/api/feed", |feed| {
            feed["items"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["id"] == alices_post.as_str() && p["userUsername"] == "alicia")
        })
        .await;
    let bobs_copy = feed.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == bobs_post.as_str())
        .unwrap()
        .clone();
    assert_eq!(bobs_copy["userUsername"], "bob");
    assert_eq!(app.get(&format!("/api/posts/{bobs_post}")).await.body["userUsername"], "bob");
}

#[tokio::test]
async fn the_feed_keeps_exactly_the_newest_100_posts() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let mut posts = Vec::new();
    for n in 0..105 {
        posts.push(app.post_by(&alice, &format!("post {n}")).await);
    }
    let newest: Vec<String> = posts.iter().rev().take(100).cloned().collect();
    let feed = app.eventually("/api/feed?limit=100", |feed| ids(feed) == newest).await;
    assert_eq!(feed.body["items"].as_array().unwrap().len(), 100);
    assert_eq!(
        partition(&app, Container::Feed, "post").await.len(),
        100,
        "the container itself holds 100"
    );

    // Changing an old post (a comment moves its counter) must not bring it back into the feed.
    let oldest = &posts[0];
    app.post(&format!("/api/posts/{oldest}/comments"), json!({"userId": alice, "content": "late"}))
        .await;
    app.put(&format!("/api/posts/{oldest}"), json!({"title": "edited", "content": "edited"})).await;
    app.eventually(&format!("/api/users/{alice}/posts?limit=100"), |list| {
        list["items"].as_array().unwrap().iter().all(|p| p["id"] != oldest.as_str())
    })
    .await;
    // As long as `eventually` waits: the delivery also indexes the 105 posts for search.
    let mut copies_of_oldest = Vec::new();
    for _ in 0..1500 {
        copies_of_oldest = partition(&app, Container::Users, &alice)
            .await
            .into_iter()
            .filter(|d| d["id"] == oldest.as_str())
            .collect();
        if copies_of_oldest.first().is_some_and(|copy| copy["title"] == "edited") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(copies_of_oldest[0]["title"], "edited", "the user's copy follows the edit");
    assert_eq!(ids(&app.get("/api/feed?limit=100").await.body), newest, "the feed does not");
    assert_eq!(partition(&app, Container::Feed, "post").await.len(), 100);
}

#[tokio::test]
async fn users_change_feed_applies_the_current_name_whatever_the_batch_says() {
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "Hello").await;
    app.post(&format!("/api/posts/{post}/comments"), json!({"userId": alice, "content": "c"}))
        .await;
    let old =
        app.state.store.read::<Value>(Container::Users, &alice, &alice).await.unwrap().unwrap();
    app.put(&format!("/api/users/{alice}"), json!({"username": "alicia"})).await;
    let new =
        app.state.store.read::<Value>(Container::Users, &alice, &alice).await.unwrap().unwrap();

    for batch in [vec![new.clone()], vec![new.clone()], vec![old.clone()], vec![new, old]] {
        let answer = deliver(&app, "UsersChangeFeed", &batch).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        for item in contents(&app, Container::Posts, &post).await {
            assert_eq!(item["userUsername"], "alicia", "{item}");
        }
    }
}

/// Users written before usernames were unique have no reservations: `rebuild-copies` replays
/// the users' change feed, which reserves each user's current name.
#[tokio::test]
async fn replaying_the_users_reserves_the_names_of_users_from_before_reservations() {
    use blog::testing::model::usernames::{Reservation, normalize_username, reservation_id};
    let app = TestApp::start_as_host().await;
    for (id, name) in [("old-1", "Ada"), ("old-2", "Grace")] {
        let user = blog::testing::model::new_user(id.into(), name.into());
        app.state.store.create(Container::Users, id, &user).await.unwrap();
    }
    // Nothing holds Ada's name yet, so a new user may take it: then it is theirs.
    let newcomer = app.user("ada").await;
    let replayed =
        blog::testing::changefeed::processor::replay_users(&app.state, &mut |_| {}).await.unwrap();
    assert_eq!(replayed, 3);
    for (name, holder) in [("Ada", newcomer.as_str()), ("Grace", "old-2")] {
        let reservation = reservation_id(&normalize_username(name));
        let found = app
            .state
            .store
            .read::<Reservation>(Container::Users, &reservation, &reservation)
            .await
            .unwrap();
        assert_eq!(found.map(|r| r.owner_id).as_deref(), Some(holder), "{name}");
    }
    app.post("/api/users", json!({"username": "GRACE"})).await.problem(409);
    // Again: nothing changes.
    assert_eq!(
        blog::testing::changefeed::processor::replay_users(&app.state, &mut |_| {}).await.unwrap(),
        3
    );
}
