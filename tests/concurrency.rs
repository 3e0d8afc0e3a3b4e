//! C3 and C4 are atomic also under concurrency: the counter and the items always agree. C1
//! gives a username to one user only, whoever races for it.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use common::TestApp;
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_comments_are_all_counted() {
    let app = Arc::new(TestApp::start().await);
    let author = app.user("alice").await;
    let post = app.post_by(&author, "Popular").await;

    let mut tasks = Vec::new();
    for n in 0..50 {
        let (app, post, author) = (app.clone(), post.clone(), author.clone());
        tasks.push(tokio::spawn(async move {
            app.post(
                &format!("/api/posts/{post}/comments"),
                json!({"userId": author, "content": format!("comment {n}")}),
            )
            .await
            .status
        }));
    }
    for task in tasks {
        assert_eq!(task.await.unwrap(), StatusCode::CREATED);
    }

    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body["commentCount"], 50);
    let listed = app.get(&format!("/api/posts/{post}/comments?limit=100")).await;
    assert_eq!(listed.body["items"].as_array().unwrap().len(), 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_likes_count_each_user_once() {
    let app = Arc::new(TestApp::start().await);
    let author = app.user("alice").await;
    let post = app.post_by(&author, "Popular").await;
    let mut fans = Vec::new();
    for n in 0..10 {
        fans.push(app.user(&format!("fan{n}")).await);
    }

    // Every fan likes twice at once: one of each pair wins, the other is 409.
    let mut tasks = Vec::new();
    for fan in fans.iter().chain(fans.iter()) {
        let (app, post, fan) = (app.clone(), post.clone(), fan.clone());
        tasks.push(tokio::spawn(async move {
            app.post(&format!("/api/posts/{post}/likes"), json!({"userId": fan})).await.status
        }));
    }
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.unwrap());
    }
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::CREATED).count(), 10);
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::CONFLICT).count(), 10);
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body["likeCount"], 10);
    assert_eq!(
        app.get(&format!("/api/posts/{post}/likes?limit=100")).await.body["items"]
            .as_array()
            .unwrap()
            .len(),
        10
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_edit_racing_comments_keeps_every_count() {
    let app = Arc::new(TestApp::start().await);
    let author = app.user("alice").await;
    let post = app.post_by(&author, "Popular").await;

    let mut tasks = Vec::new();
    for n in 0..20 {
        let (app, post, author) = (app.clone(), post.clone(), author.clone());
        tasks.push(tokio::spawn(async move {
            if n % 4 == 0 {
                app.put(
                    &format!("/api/posts/{post}"),
                    json!({"title": format!("title {n}"), "content": "edited"}),
                )
                .await
                .status
            } else {
                app.post(
                    &format!("/api/posts/{post}/comments"),
                    json!({"userId": author, "content": "hi"}),
                )
                .await
                .status
            }
        }));
    }
    for task in tasks {
        let status = task.await.unwrap();
        assert!(status.is_success(), "{status}");
    }
    let post = app.get(&format!("/api/posts/{post}")).await.body;
    assert_eq!(post["commentCount"], 15, "no edit wrote back a stale count");
    assert_eq!(post["content"], "edited");
}

/// C4 and C5 racing: 50 users each like and unlike one post several times, all at once. Each
/// user's own requests are in order, so each must succeed, and in the end `likeCount` is the
/// number of likes listed, and the number of users whose last request was a like.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_users_toggling_likes_leave_the_count_equal_to_the_likes() {
    let app = Arc::new(TestApp::start().await);
    let author = app.user("alice").await;
    let post = app.post_by(&author, "Popular").await;
    let mut fans = Vec::new();
    for n in 0..50 {
        fans.push(app.user(&format!("fan{n}")).await);
    }

    let mut tasks = Vec::new();
    for (n, fan) in fans.into_iter().enumerate() {
        let (app, post) = (app.clone(), post.clone());
        // 1 to 4 toggles: odd counts end liked.
        let toggles = 1 + n % 4;
        tasks.push(tokio::spawn(async move {
            for toggle in 0..toggles {
                let answer = if toggle % 2 == 0 {
                    app.post(&format!("/api/posts/{post}/likes"), json!({"userId": fan})).await
                } else {
                    app.send(
                        reqwest::Method::DELETE,
                        &format!("/api/posts/{post}/likes/{fan}"),
                        None,
                    )
                    .await
                };
                assert!(
                    answer.status.is_success(),
                    "{fan}, toggle {toggle}: {} {}",
                    answer.status,
                    answer.body
                );
            }
            toggles % 2 == 1
        }));
    }
    let mut liking = 0;
    for task in tasks {
        liking += usize::from(task.await.unwrap());
    }
    assert_eq!(liking, 25);
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body["likeCount"], liking);
    let listed = app.get(&format!("/api/posts/{post}/likes?limit=100")).await;
    assert_eq!(listed.body["items"].as_array().unwrap().len(), liking);
}

/// The reservation of `name`: who holds it, if anyone.
async fn holder(app: &TestApp, name: &str) -> Option<String> {
    use blog::testing::model::usernames::{Reservation, normalize_username, reservation_id};
    let id = reservation_id(&normalize_username(name));
    app.state
        .store
        .read::<Reservation>(blog::testing::cosmos::Container::Users, &id, &id)
        .await
        .unwrap()
        .map(|r| r.owner_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_two_users_racing_for_one_free_name_exactly_one_wins() {
    let app = Arc::new(TestApp::start().await);
    for round in 0..20 {
        let name = format!("prize{round}");
        let (first, second) =
            (app.user(&format!("first{round}")).await, app.user(&format!("second{round}")).await);
        // Two renames at once, in another case each: the same name.
        let rename = |user: String, name: String| {
            let app = app.clone();
            tokio::spawn(async move {
                app.put(&format!("/api/users/{user}"), json!({"username": name})).await
            })
        };
        let racing =
            [rename(first.clone(), name.clone()), rename(second.clone(), name.to_uppercase())];
        let mut answers = Vec::new();
        for task in racing {
            answers.push(task.await.unwrap());
        }
        let statuses: Vec<u16> = answers.iter().map(|answer| answer.status.as_u16()).collect();
        assert!(statuses == [200, 409] || statuses == [409, 200], "round {round}: {statuses:?}");
        let (winner, loser) =
            if statuses[0] == 200 { (&first, &second) } else { (&second, &first) };
        let loss = answers.iter().find(|answer| answer.status == StatusCode::CONFLICT).unwrap();
        assert!(loss.problem(409).contains("is taken"), "{}", loss.body);
        assert_eq!(holder(&app, &name).await.as_deref(), Some(winner.as_str()));
        let shown = app.get(&format!("/api/users/{loser}")).await.body["username"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            shown.starts_with("first") || shown.starts_with("second"),
            "the loser keeps their name: {shown}"
        );
        assert_eq!(holder(&app, &shown).await.as_deref(), Some(loser.as_str()));

        // Two sign-ups at once: the same.
        let name = format!("signup{round}");
        let sign_up = |name: String| {
            let app = app.clone();
            tokio::spawn(async move { app.post("/api/users", json!({"username": name})).await })
        };
        let racing = [sign_up(name.clone()), sign_up(name.clone())];
        let mut statuses = Vec::new();
        for task in racing {
            statuses.push(task.await.unwrap().status.as_u16());
        }
        statuses.sort();
        assert_eq!(statuses, [201, 409], "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_renames_of_one_user_leave_one_name_held() {
    let app = Arc::new(TestApp::start().await);
    let user = app.user("start").await;
    let names = ["one", "two", "three"];
    let mut tasks = Vec::new();
    for name in names {
        let (app, user) = (app.clone(), user.clone());
        tasks.push(tokio::spawn(async move {
            app.put(&format!("/api/users/{user}"), json!({"username": name})).await.status
        }));
    }
    for task in tasks {
        assert_eq!(task.await.unwrap(), StatusCode::OK, "renames of one user take turns");
    }
    let shown =
        app.get(&format!("/api/users/{user}")).await.body["username"].as_str().unwrap().to_owned();
    assert_eq!(holder(&app, &shown).await.as_deref(), Some(user.as_str()));
    for name in names.iter().copied().chain(["start"]).filter(|name| *name != shown) {
        assert_eq!(holder(&app, name).await, None, "{name} was released");
        app.user(name).await;
    }
}
