//! The article's V1 way of answering Q2, Q3 and Q6, on the same data, straight through the
//! library's `Store` (there is no V1 route: the handler only implements V3).
//!
//! V1 keeps no username and no counters on a post, so each answer is assembled from the post
//! (or a query for posts) plus, per post, a read of the author and two `COUNT` queries in the
//! post's partition. The SDK refuses aggregates across partitions, so the counts are per
//! partition, which is also what the article's V1 does. Every Cosmos operation is counted with
//! the library's `Meter`, the same meter that fills the handler's `x-cosmos-operations` header.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use blog::testing::cosmos::{Container, Meter, PageRequest, QuerySpec, Store, StoreError};
use serde_json::{Value, json};

use crate::client::{Sample, Stats};
use crate::data::Rng;
use crate::load::Loaded;

/// The article's V1 figures: (request, latency ms, RU).
pub(crate) const ARTICLE_V1: [(&str, f64, f64); 3] =
    [("Q2", 9.0, 19.54), ("Q3", 130.0, 619.41), ("Q6", 306.0, 2063.54)];

pub(crate) struct V1Row {
    pub request: &'static str,
    pub how: &'static str,
    pub stats: Stats,
    /// Mean number of posts the answer held (each costs a user read and two counts).
    pub mean_posts: f64,
    pub article_latency_ms: f64,
    pub article_charge: f64,
}

pub(crate) async fn measure_all(
    store: &Store,
    loaded: &Loaded,
    iterations: usize,
    feed_limit: u32,
    seed: u64,
) -> Vec<V1Row> {
    let mut rng = Rng::new(seed ^ 0x0071);
    let mut rows = Vec::new();

    let runs = (0..iterations)
        .map(|_| loaded.posts[rng.index(loaded.posts.len())].0.clone())
        .collect::<Vec<_>>();
    let (stats, mean_posts) =
        metered_runs(&runs, |post_id| async move { q2(store, &post_id).await.map(|_| 1) }).await;
    rows.push(v1_row(
        "Q2",
        "point read of the post + read of its author + COUNT comments + COUNT likes",
        stats,
        mean_posts,
    ));

    let runs = (0..iterations)
        .map(|_| loaded.users[rng.index(loaded.users.len())].id.clone())
        .collect::<Vec<_>>();
    let (stats, mean_posts) =
        metered_runs(&runs, |user_id| async move { q3(store, &user_id).await }).await;
    rows.push(v1_row(
        "Q3",
        "cross-partition query on posts by userId + author read + per post 2 COUNTs",
        stats,
        mean_posts,
    ));

    let runs = vec![(); iterations];
    let (stats, mean_posts) =
        metered_runs(&runs, |()| async move { q6(store, feed_limit).await }).await;
    rows.push(v1_row(
        "Q6",
        "cross-partition TOP n ORDER BY creationDate DESC on posts + per post author read + 2 COUNTs",
        stats,
        mean_posts,
    ));
    rows
}

fn v1_row(request: &'static str, how: &'static str, stats: Stats, mean_posts: f64) -> V1Row {
    let &(_, article_latency_ms, article_charge) =
        ARTICLE_V1.iter().find(|(name, _, _)| *name == request).unwrap();
    V1Row { request, how, stats, mean_posts, article_latency_ms, article_charge }
}

/// Runs `answer` once per input, each under a fresh `Meter`; returns the stats and the mean
/// number of posts per answer.
async fn metered_runs<I: Clone, F: Future<Output = Result<usize, StoreError>>>(
    inputs: &[I],
    answer: impl Fn(I) -> F,
) -> (Stats, f64) {
    let mut samples = Vec::with_capacity(inputs.len());
    let mut posts = 0;
    for input in inputs {
        let meter = Arc::new(Meter::default());
        let started = Instant::now();
        let found = meter
            .clone()
            .measure(answer(input.clone()))
            .await
            .unwrap_or_else(|error| panic!("V1 failed: {error}"));
        let latency = started.elapsed();
        let (charge, operations) = meter.totals();
        posts += found;
        samples.push(Sample {
            status: 200,
            latency,
            charge,
            operations,
            queries: None,
            partitions: meter.partitions().to_string(),
        });
    }
    (Stats::of(&samples), posts as f64 / inputs.len().max(1) as f64)
}

/// V1 Q2: the post, then its author's username and both counts (4 operations).
async fn q2(store: &Store, post_id: &str) -> Result<Value, StoreError> {
    let post: Value =
        store.read(Container::Posts, post_id, post_id).await?.ok_or(StoreError::NotFound)?;
    aggregate(store, post).await
}

/// V1 Q3: a fan-out query for the user's posts, then per post the two counts (and the author,
/// read once: every post has the same one).
async fn q3(store: &Store, user_id: &str) -> Result<usize, StoreError> {
    let query = spec(
        "SELECT * FROM c WHERE c.type = 'post' AND c.userId = @userId ORDER BY c.creationDate DESC",
        vec![("@userId", json!(user_id))],
    );
    let posts = store.query_all_partitions(Container::Posts, query).await?;
    let username = username(store, user_id).await?;
    for post in &posts {
        counts(store, post_id(post)).await?;
    }
    let _ = username;
    Ok(posts.len())
}

/// V1 Q6: a fan-out query for the newest `n` posts, then per post its author and two counts.
async fn q6(store: &Store, n: u32) -> Result<usize, StoreError> {
    // `n` is the bench's own integer, never client input: it may sit in the text.
    let query = spec(
        &format!("SELECT TOP {n} * FROM c WHERE c.type = 'post' ORDER BY c.creationDate DESC"),
        vec![],
    );
    let posts = store.query_all_partitions(Container::Posts, query).await?;
    for post in posts.iter().take(n as usize) {
        aggregate(store, post.clone()).await?;
    }
    Ok(posts.len().min(n as usize))
}

/// What V1 adds to a post to answer like V3: the author's username and the two counters.
async fn aggregate(store: &Store, mut post: Value) -> Result<Value, StoreError> {
    let user_id = post["userId"].as_str().unwrap_or_default().to_owned();
    let username = username(store, &user_id).await?;
    let (comments, likes) = counts(store, post_id(&post)).await?;
    post["userUsername"] = json!(username);
    post["commentCount"] = json!(comments);
    post["likeCount"] = json!(likes);
    Ok(post)
}

async fn username(store: &Store, user_id: &str) -> Result<String, StoreError> {
    let user: Value =
        store.read(Container::Users, user_id, user_id).await?.ok_or(StoreError::NotFound)?;
    Ok(user["username"].as_str().unwrap_or_default().to_owned())
}

/// `SELECT VALUE COUNT(1)` of the post's comments and of its likes, in the post's partition.
async fn counts(store: &Store, post_id: &str) -> Result<(u64, u64), StoreError> {
    Ok((count(store, post_id, "comment").await?, count(store, post_id, "like").await?))
}

async fn count(store: &Store, post_id: &str, item_type: &str) -> Result<u64, StoreError> {
    let query = spec(
        "SELECT VALUE COUNT(1) FROM c WHERE c.type = @type",
        vec![("@type", json!(item_type))],
    );
    let (values, _) = store
        .query_documents(
            Container::Posts,
            post_id,
            query,
            PageRequest { size: 1, continuation: None },
        )
        .await?;
    Ok(values.first().and_then(Value::as_u64).unwrap_or(0))
}

fn post_id(post: &Value) -> &str {
    post["postId"].as_str().unwrap_or_default()
}

fn spec(sql: &str, parameters: Vec<(&'static str, Value)>) -> QuerySpec {
    QuerySpec {
        sql: Cow::Owned(sql.to_owned()),
        parameters: parameters
            .into_iter()
            .map(|(name, value)| (Cow::Borrowed(name), value))
            .collect(),
    }
}
