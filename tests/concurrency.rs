//! C3 and C4 are atomic also under concurrency: the counter and the items always agree.

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
            app.post(&format!("/api/posts/{post}/comments"), json!({"userId": author, "content": format!("comment {n}")}))
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
        tasks.push(tokio::spawn(
            async move { app.post(&format!("/api/posts/{post}/likes"), json!({"userId": fan})).await.status },
        ));
    }
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.unwrap());
    }
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::CREATED).count(), 10);
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::CONFLICT).count(), 10);
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body["likeCount"], 10);
    assert_eq!(app.get(&format!("/api/posts/{post}/likes?limit=100")).await.body["items"].as_array().unwrap().len(), 10);
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
                app.put(&format!("/api/posts/{post}"), json!({"title": format!("title {n}"), "content": "edited"})).await.status
            } else {
                app.post(&format!("/api/posts/{post}/comments"), json!({"userId": author, "content": "hi"})).await.status
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
                    app.send(reqwest::Method::DELETE, &format!("/api/posts/{post}/likes/{fan}"), None).await
                };
                assert!(answer.status.is_success(), "{fan}, toggle {toggle}: {} {}", answer.status, answer.body);
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
