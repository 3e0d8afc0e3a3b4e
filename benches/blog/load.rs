//! Loads the data set through the real write paths: C1, C2, then C3 and C4 (the stored
//! procedures), over HTTP, several requests in flight so that the embedded store's journal can
//! share its disk syncs between them, as concurrent clients would.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;

use crate::client::{Answer, Client};
use crate::data::DataSet;

/// What was created, with the ids the server gave.
pub(crate) struct Loaded {
    /// Per user: its id and the ids of its posts.
    pub users: Vec<LoadedUser>,
    /// Every post: (post id, author's index in `users`).
    pub posts: Vec<(String, usize)>,
    pub phases: Vec<Phase>,
}

pub(crate) struct LoadedUser {
    pub id: String,
    pub post_ids: Vec<String>,
}

/// One step of the load: how many writes, in how long, at what cost.
pub(crate) struct Phase {
    pub name: &'static str,
    pub writes: usize,
    pub elapsed: Duration,
    pub charge: f64,
    pub operations: u64,
}

impl Phase {
    fn of(name: &'static str, started: Instant, answers: &[Answer]) -> Phase {
        let failed: Vec<_> = answers.iter().filter(|a| !a.ok()).collect();
        assert!(
            failed.is_empty(),
            "{name}: {} writes failed, e.g. {} {}",
            failed.len(),
            failed[0].sample.status,
            failed[0].body
        );
        Phase {
            name,
            writes: answers.len(),
            elapsed: started.elapsed(),
            charge: answers.iter().map(|a| a.sample.charge).sum(),
            operations: answers.iter().map(|a| a.sample.operations).sum(),
        }
    }
}

/// `run` makes the user ids (which are principal ids, chosen by the caller) unique to this run,
/// so that a second run against the same account does not collide with the first.
pub(crate) async fn load(client: &Client, data: &DataSet, in_flight: usize, run: &str) -> Loaded {
    // C1: the users; each one is created by its own principal.
    let started = Instant::now();
    let answers: Vec<Answer> = futures::stream::iter(data.users.iter().enumerate())
        .map(|(u, user)| async move {
            client
                .post(&format!("{run}-u{u}"), "/api/users", &json!({ "username": user.username }))
                .await
        })
        .buffered(in_flight)
        .collect()
        .await;
    let mut phases = vec![Phase::of("C1 users", started, &answers)];
    let user_ids: Vec<String> = answers.iter().map(Answer::id).collect();

    // C2: the posts, in plan order per user, users interleaved.
    let started = Instant::now();
    let plans: Vec<(usize, usize)> = data
        .users
        .iter()
        .enumerate()
        .flat_map(|(u, user)| (0..user.posts.len()).map(move |p| (u, p)))
        .collect();
    let answers: Vec<Answer> = futures::stream::iter(&plans)
        .map(|&(u, p)| {
            let post = &data.users[u].posts[p];
            let body =
                json!({ "userId": user_ids[u], "title": post.title, "content": post.content });
            let author = &user_ids[u];
            async move { client.post(author, "/api/posts", &body).await }
        })
        .buffered(in_flight)
        .collect()
        .await;
    phases.push(Phase::of("C2 posts", started, &answers));
    let mut users: Vec<LoadedUser> =
        user_ids.iter().map(|id| LoadedUser { id: id.clone(), post_ids: Vec::new() }).collect();
    let mut posts = Vec::with_capacity(plans.len());
    for (&(u, _), answer) in plans.iter().zip(&answers) {
        users[u].post_ids.push(answer.id());
        posts.push((answer.id(), u));
    }

    // C3 and C4: per post, its comments then its likes, one after another (they are serialized
    // on the post's partition anyway); posts in parallel.
    let started = Instant::now();
    let per_post: Vec<Vec<Answer>> = futures::stream::iter(plans.iter().zip(&posts))
        .map(|(&(u, p), (post_id, _))| {
            let plan = &data.users[u].posts[p];
            let user_ids = &user_ids;
            async move {
                let mut answers = Vec::with_capacity(plan.comments.len() + plan.likers.len());
                for comment in &plan.comments {
                    let body =
                        json!({ "userId": user_ids[comment.author], "content": comment.content });
                    answers.push(
                        client
                            .post(
                                &user_ids[comment.author],
                                &format!("/api/posts/{post_id}/comments"),
                                &body,
                            )
                            .await,
                    );
                }
                for &liker in &plan.likers {
                    let body = json!({ "userId": user_ids[liker] });
                    answers.push(
                        client
                            .post(&user_ids[liker], &format!("/api/posts/{post_id}/likes"), &body)
                            .await,
                    );
                }
                answers
            }
        })
        .buffer_unordered(in_flight)
        .collect()
        .await;
    phases.push(Phase::of(
        "C3+C4 comments and likes",
        started,
        &per_post.into_iter().flatten().collect::<Vec<_>>(),
    ));

    Loaded { users, posts, phases }
}
