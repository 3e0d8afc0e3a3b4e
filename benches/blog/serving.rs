//! Serving figures on the in-process handler: throughput under concurrent load, change-feed
//! propagation under a steady write load, and what the change feed itself costs per write.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use blog::Blog;
use blog::Config;
use blog::testing::app::FeedCache;
use blog::testing::cosmos::{Container, Meter};
use serde_json::{Value, json};

use crate::client::{Client, Sample, Stats, ms, percentile};
use crate::data::{self, Rng};
use crate::load::Loaded;

/// One closed-loop load run: `concurrency` tasks, each sending its next request as soon as the
/// previous one is answered, for `duration`.
pub(crate) struct Throughput {
    pub request: &'static str,
    pub path: String,
    pub concurrency: usize,
    pub duration: Duration,
    pub stats: Stats,
    pub per_second: f64,
    /// Cosmos DB operations per second, summed from `x-cosmos-operations`.
    pub operations_per_second: f64,
}

/// How a throughput run loads the handler.
pub(crate) struct LoadShape {
    pub feed_limit: u32,
    pub concurrency: usize,
    pub duration: Duration,
    pub seed: u64,
}

/// `request` is "Q2" (a random post each time), "Q6" (the feed, as served: from the feed
/// cache), "Q6 uncached" (the cache dropped before each request), "front page" (`GET /`),
/// "tag page" (`GET /tags/bench`, the tag every post the tagged C2 row wrote carries),
/// "post page" (one post's page every time: a popular post) or "post page, random" (a random
/// post's page each time).
pub(crate) async fn throughput(
    client: &Client,
    loaded: &Loaded,
    feed_cache: &Arc<FeedCache>,
    request: &'static str,
    shape: &LoadShape,
) -> Throughput {
    let &LoadShape { feed_limit, concurrency, duration, seed } = shape;
    let deadline = Instant::now() + duration;
    let started = Instant::now();
    let tasks: Vec<_> = (0..concurrency)
        .map(|task| {
            let client = client.clone();
            let posts: Vec<String> = loaded.posts.iter().map(|(id, _)| id.clone()).collect();
            let mut rng = Rng::new(seed ^ task as u64);
            let feed_cache = feed_cache.clone();
            tokio::spawn(async move {
                let mut samples = Vec::new();
                while Instant::now() < deadline {
                    let path = match request {
                        "Q2" => format!("/api/posts/{}", posts[rng.index(posts.len())]),
                        "front page" => "/".to_owned(),
                        "tag page" => "/tags/bench".to_owned(),
                        "post page" => format!("/posts/{}", posts[0]),
                        "post page, random" => format!("/posts/{}", posts[rng.index(posts.len())]),
                        "Q6 uncached" => {
                            feed_cache.invalidate();
                            format!("/api/feed?limit={feed_limit}")
                        }
                        _ => format!("/api/feed?limit={feed_limit}"),
                    };
                    samples.push(client.get(&path).await.sample);
                }
                samples
            })
        })
        .collect();
    let mut samples: Vec<Sample> = Vec::new();
    for task in tasks {
        samples.extend(task.await.expect("a load task"));
    }
    let elapsed = started.elapsed();
    let path = match request {
        "Q2" => "GET /api/posts/{random id}".to_owned(),
        "front page" => "GET /".to_owned(),
        "tag page" => "GET /tags/bench".to_owned(),
        "post page" => "GET /posts/{one id}".to_owned(),
        "post page, random" => "GET /posts/{random id}".to_owned(),
        _ => format!("GET /api/feed?limit={feed_limit}"),
    };
    let operations: u64 = samples.iter().map(|sample| sample.operations).sum();
    Throughput {
        request,
        path,
        concurrency,
        duration: elapsed,
        per_second: samples.len() as f64 / elapsed.as_secs_f64(),
        operations_per_second: operations as f64 / elapsed.as_secs_f64(),
        stats: Stats::of(&samples),
    }
}

/// Time from a C2's answer to the post's first appearance in Q6, while other clients write.
pub(crate) struct Propagation {
    pub samples: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// The background writes (C3 comments) per second that ran meanwhile.
    pub background_writes_per_second: f64,
    /// Q6 polls per sample: the observer's own load.
    pub mean_polls: f64,
}

/// `samples` posts are created one after another, each by a random user; after each C2 answers,
/// Q6 (`?limit=10`) is polled every millisecond until the post is in it. Meanwhile
/// `writers` tasks (none for the quiet figure) comment on random posts (C3, each a stored procedure and a post change
/// the change feed must copy), pausing `writer_pause` between comments.
pub(crate) async fn propagation(
    client: &Client,
    loaded: &Loaded,
    samples: usize,
    writers: usize,
    writer_pause: Duration,
    seed: u64,
) -> Propagation {
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicUsize::new(0));
    let background: Vec<_> = (0..writers)
        .map(|task| {
            let (client, stop, written) = (client.clone(), stop.clone(), written.clone());
            let posts: Vec<String> = loaded.posts.iter().map(|(id, _)| id.clone()).collect();
            let users: Vec<String> = loaded.users.iter().map(|user| user.id.clone()).collect();
            let mut rng = Rng::new(seed ^ 0xC3 ^ task as u64);
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let user = &users[rng.index(users.len())];
                    let body =
                        json!({ "userId": user, "content": data::text(&mut rng, (100, 300)) });
                    let post = &posts[rng.index(posts.len())];
                    if client.post(user, &format!("/api/posts/{post}/comments"), &body).await.ok() {
                        written.fetch_add(1, Ordering::Relaxed);
                    }
                    tokio::time::sleep(writer_pause).await;
                }
            })
        })
        .collect();

    let mut rng = Rng::new(seed ^ 0xC2);
    let started = Instant::now();
    let mut delays = Vec::with_capacity(samples);
    let mut polls = 0usize;
    for _ in 0..samples {
        let user = &loaded.users[rng.index(loaded.users.len())].id;
        let body = json!({ "userId": user, "title": data::text(&mut rng, (35, 65)), "content": data::text(&mut rng, (1_000, 5_000)) });
        let created = client.post(user, "/api/posts", &body).await;
        assert!(created.ok(), "C2 failed: {}", created.body);
        let (post_id, acknowledged) = (created.id(), Instant::now());
        loop {
            polls += 1;
            if client.get("/api/feed?limit=10").await.item_ids().contains(&post_id) {
                delays.push(ms(acknowledged.elapsed()));
                break;
            }
            assert!(
                acknowledged.elapsed() < Duration::from_secs(30),
                "post {post_id} never reached the feed"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for task in background {
        let _ = task.await;
    }
    Propagation {
        samples,
        p50_ms: percentile(&mut delays.clone(), 50.0),
        p99_ms: percentile(&mut delays.clone(), 99.0),
        max_ms: delays.iter().copied().fold(0.0, f64::max),
        background_writes_per_second: written.load(Ordering::Relaxed) as f64
            / elapsed.as_secs_f64(),
        mean_polls: polls as f64 / samples.max(1) as f64,
    }
}

/// What `PostsChangeFeed` spends to copy one changed post into `users` and `feed`: work the
/// handler does after the write, outside the request, so it is in no response's headers.
pub(crate) struct ChangeFeedCost {
    /// Copies of a new post (C2), with the feed already full: the trigger deletes the oldest.
    pub new_post: Stats,
    /// Copies refreshed after a comment or like moved a counter of a post among the newest.
    pub counter_change: Stats,
}

/// Measured on a second, empty embedded store whose change feed is delivered by the bench
/// itself (as the Functions host would, `ChangeFeedMode::Host`), so each delivery runs under its
/// own `Meter`. The feed is filled to its 100 posts first so that the trigger truncates.
pub(crate) async fn change_feed_cost(samples: usize) -> ChangeFeedCost {
    let temp = tempfile::tempdir().expect("a temporary directory");
    // From settings rather than a struct literal, so that fields added to `Config` keep their
    // defaults here.
    let data_dir = temp.path().to_string_lossy().into_owned();
    let config = Config::from_lookup(|name| match name {
        "BLOG_DATA_DIR" => Some(data_dir.clone()),
        "BLOG_LISTEN" => Some("127.0.0.1:0".to_owned()),
        "BLOG_CHANGE_FEED" => Some("host".to_owned()),
        "BLOG_AUTH" => Some("development".to_owned()),
        "BLOG_WRITES_PER_MINUTE" => Some("off".to_owned()),
        _ => None,
    })
    .expect("an embedded configuration");
    let blog = Blog::open(&config).await.expect("a second embedded store");
    let state = blog.state.clone();
    let listener = tokio::net::TcpListener::bind(config.listen).await.unwrap();
    let client = Client::new(format!("http://{}", listener.local_addr().unwrap()));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(blog.serve(listener, async move {
        let _ = stopped.await;
    }));

    let mut rng = Rng::new(7);
    let user = client.post("copies", "/api/users", &json!({ "username": "copies" })).await.id();
    let deliver = |post_id: String| {
        let state = state.clone();
        async move {
            let document: Value =
                state.store.read(Container::Posts, &post_id, &post_id).await.unwrap().unwrap();
            let meter = Arc::new(Meter::default());
            let started = Instant::now();
            meter
                .clone()
                .measure(blog::testing::changefeed::posts_changed(&state, vec![document]))
                .await
                .expect("a delivery");
            let (charge, operations) = meter.totals();
            Sample {
                status: 200,
                latency: started.elapsed(),
                charge,
                operations,
                queries: None,
                partitions: meter.partitions().to_string(),
            }
        }
    };
    let mut new_post = Vec::new();
    let mut post_ids = Vec::new();
    for i in 0..(100 + samples) {
        let body = json!({ "userId": user, "title": data::text(&mut rng, (35, 65)), "content": data::text(&mut rng, (1_000, 5_000)) });
        let post_id = client.post(&user, "/api/posts", &body).await.id();
        let sample = deliver(post_id.clone()).await;
        if i >= 100 {
            new_post.push(sample);
        }
        post_ids.push(post_id);
    }
    let mut counter_change = Vec::new();
    for post_id in post_ids.iter().rev().take(samples) {
        let body = json!({ "userId": user, "content": data::text(&mut rng, (100, 300)) });
        assert!(client.post(&user, &format!("/api/posts/{post_id}/comments"), &body).await.ok());
        counter_change.push(deliver(post_id.clone()).await);
    }
    let _ = stop.send(());
    let _ = server.await;
    ChangeFeedCost { new_post: Stats::of(&new_post), counter_change: Stats::of(&counter_change) }
}
