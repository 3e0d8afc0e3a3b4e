//! The article's ten requests (V3), each run many times over HTTP, one at a time, as the
//! article measured them.

use serde_json::json;

use blog::testing::app::{FeedCache, PostLists};

use crate::client::{Answer, Client, Sample, Stats};
use crate::data::{self, Rng};
use crate::load::Loaded;

/// The article's conclusion table, V3 column: (request, latency ms, RU).
/// https://learn.microsoft.com/azure/cosmos-db/nosql/model-partition-example#conclusion
pub(crate) const ARTICLE_V3: [(&str, f64, f64); 10] = [
    ("C1", 7.0, 5.71),
    ("Q1", 2.0, 1.0),
    ("C2", 9.0, 8.76),
    ("Q2", 2.0, 1.0),
    ("Q3", 4.0, 6.46),
    ("C3", 7.0, 15.27),
    ("Q4", 4.0, 7.72),
    ("C4", 7.0, 14.67),
    ("Q5", 4.0, 8.92),
    ("Q6", 9.0, 16.97),
];

/// One row of the table: our figures beside the article's.
pub(crate) struct RequestRow {
    pub request: &'static str,
    pub route: String,
    pub stats: Stats,
    pub article_latency_ms: f64,
    pub article_charge: f64,
}

/// What the ten requests are run with.
pub(crate) struct Plan<'a> {
    pub client: &'a Client,
    pub loaded: &'a Loaded,
    pub iterations: usize,
    pub feed_limit: u32,
    pub seed: u64,
    /// The prefix of this run's principal ids.
    pub run: &'a str,
    /// The handler's feed cache: the Q6 row drops it before each request, so that it measures
    /// what Q6 costs in Cosmos DB (the cache's effect has rows of its own).
    pub feed_cache: &'a FeedCache,
    /// The handler's tags' pages: the Q7 row drops them before each request, as the Q6 row does.
    pub tag_cache: &'a PostLists,
    /// The posts C7 deletes.
    pub doomed: Doomed,
}

/// Untimed requests before each read is measured, so that connection set-up is not in p99.
const WARM_UP: usize = 10;

pub(crate) async fn measure_all(plan: &Plan<'_>) -> Vec<RequestRow> {
    let mut rng = Rng::new(plan.seed ^ 0xBE7C);
    let (client, loaded, n) = (plan.client, plan.loaded, plan.iterations);
    let random_user = |rng: &mut Rng| loaded.users[rng.index(loaded.users.len())].id.clone();
    let random_post = |rng: &mut Rng| loaded.posts[rng.index(loaded.posts.len())].0.clone();
    let mut rows = Vec::new();

    // C1: new users, who like posts in C4 below (a user likes a post at most once).
    let mut new_users = Vec::new();
    let samples = writes(
        n,
        |i| {
            // (Names are unique: the run's prefix keeps them free on a persistent account.)
            let caller = format!("{}-bench{i}", plan.run);
            let body = json!({ "username": caller });
            async move { client.post(&caller, "/api/users", &body).await }
        },
        |answer| new_users.push(answer.id()),
    )
    .await;
    rows.push(row("C1", "POST /api/users", samples));

    let samples = reads(n, || format!("/api/users/{}", random_user(&mut rng)), client).await;
    rows.push(row("Q1", "GET /api/users/{id}", samples));

    let posts: Vec<(String, String, String)> = (0..n)
        .map(|_| {
            (
                random_user(&mut rng),
                data::text(&mut rng, (35, 65)),
                data::text(&mut rng, (1_000, 5_000)),
            )
        })
        .collect();
    let samples = writes(
        n,
        |i| {
            let (user, title, content) = &posts[i];
            let body = json!({ "userId": user, "title": title, "content": content });
            async move { client.post(user, "/api/posts", &body).await }
        },
        |_| {},
    )
    .await;
    rows.push(row("C2", "POST /api/posts", samples));

    let samples = reads(n, || format!("/api/posts/{}", random_post(&mut rng)), client).await;
    rows.push(row("Q2", "GET /api/posts/{id}", samples));

    // Every post of a user fits one page (at most 50 posts): the whole list, as V1 returns it.
    let samples =
        reads(n, || format!("/api/users/{}/posts?limit=100", random_user(&mut rng)), client).await;
    rows.push(row("Q3", "GET /api/users/{id}/posts?limit=100", samples));

    let comments: Vec<(String, String, String)> = (0..n)
        .map(|_| (random_post(&mut rng), random_user(&mut rng), data::text(&mut rng, (100, 300))))
        .collect();
    let samples = writes(
        n,
        |i| {
            let (post, user, content) = &comments[i];
            let body = json!({ "userId": user, "content": content });
            let path = format!("/api/posts/{post}/comments");
            async move { client.post(user, &path, &body).await }
        },
        |_| {},
    )
    .await;
    rows.push(row("C3", "POST /api/posts/{id}/comments", samples));

    let samples =
        reads(n, || format!("/api/posts/{}/comments?limit=100", random_post(&mut rng)), client)
            .await;
    rows.push(row("Q4", "GET /api/posts/{id}/comments?limit=100", samples));

    let likes: Vec<(String, String)> =
        new_users.iter().map(|user| (random_post(&mut rng), user.clone())).collect();
    let samples = writes(
        likes.len(),
        |i| {
            let (post, user) = &likes[i];
            let body = json!({ "userId": user });
            let path = format!("/api/posts/{post}/likes");
            async move { client.post(user, &path, &body).await }
        },
        |_| {},
    )
    .await;
    rows.push(row("C4", "POST /api/posts/{id}/likes", samples));

    let samples =
        reads(n, || format!("/api/posts/{}/likes?limit=100", random_post(&mut rng)), client).await;
    rows.push(row("Q5", "GET /api/posts/{id}/likes?limit=100", samples));

    let limit = plan.feed_limit;
    let samples = reads(
        n,
        || {
            plan.feed_cache.invalidate();
            format!("/api/feed?limit={limit}")
        },
        client,
    )
    .await;
    rows.push(row("Q6", &format!("GET /api/feed?limit={limit}, uncached"), samples));
    rows
}

/// One request beyond the article's ten, with how many times it ran.
pub(crate) struct ExtraRow {
    pub request: &'static str,
    pub route: &'static str,
    pub what: String,
    pub stats: Stats,
}

/// The posts C7 deletes, each set up with `comments` comments and `likes` likes.
#[derive(Clone, Copy)]
pub(crate) struct Doomed {
    /// At least this many posts, and a tenth of the iterations if more.
    pub posts: usize,
    pub comments: usize,
    pub likes: usize,
}

impl Doomed {
    /// 25 comments and 100 likes on each: the case.
    pub(crate) const ARTICLE: Doomed = Doomed { posts: 3, comments: 25, likes: 100 };
}

/// The requests the article leaves out (C5 unlike, C6 delete a comment, C7 delete a post, and
/// C1's rename, which claims the new name's reservation and releases the old one), each timed
/// one at a time on items set up, untimed, just before.
pub(crate) async fn measure_beyond_article(plan: &Plan<'_>) -> Vec<ExtraRow> {
    let mut rng = Rng::new(plan.seed ^ 0xDE1E);
    let (client, loaded, n) = (plan.client, plan.loaded, plan.iterations);
    let random_post = |rng: &mut Rng| loaded.posts[rng.index(loaded.posts.len())].0.clone();
    let mut rows = Vec::new();

    // Users of their own, each liking and commenting on one random post.
    let mut fans = Vec::new();
    let Doomed { posts: least_deletions, comments: c7_comments, likes: c7_likes } = plan.doomed;
    for i in 0..n.max(c7_likes) {
        let caller = format!("{}-fan{i}", plan.run);
        let created = client
            .post(&caller, "/api/users", &json!({ "username": format!("{caller}-name") }))
            .await;
        assert!(created.ok(), "{}", created.body);
        fans.push(created.id());
    }
    let mut liked = Vec::new();
    let mut commented = Vec::new();
    for fan in fans.iter().take(n) {
        let post = random_post(&mut rng);
        assert!(
            client
                .post(fan, &format!("/api/posts/{post}/likes"), &json!({ "userId": fan }))
                .await
                .ok()
        );
        let body = json!({ "userId": fan, "content": data::text(&mut rng, (100, 300)) });
        let comment = client.post(fan, &format!("/api/posts/{post}/comments"), &body).await;
        commented.push((post.clone(), comment.id(), fan.clone()));
        liked.push((post, fan.clone()));
    }

    let samples = writes(
        n,
        |i| {
            let (post, fan) = &liked[i];
            let path = format!("/api/posts/{post}/likes/{fan}");
            async move { client.delete(fan, &path).await }
        },
        |_| {},
    )
    .await;
    rows.push(ExtraRow {
        request: "C5",
        route: "DELETE /api/posts/{id}/likes/{userId}",
        what: String::new(),
        stats: Stats::of(&samples),
    });

    let samples = writes(
        n,
        |i| {
            let (post, comment, fan) = &commented[i];
            let path = format!("/api/posts/{post}/comments/{comment}");
            async move { client.delete(fan, &path).await }
        },
        |_| {},
    )
    .await;
    rows.push(ExtraRow {
        request: "C6",
        route: "DELETE /api/posts/{id}/comments/{commentId}",
        what: String::new(),
        stats: Stats::of(&samples),
    });

    // C7 on posts with 25 comments and 100 likes; fewer runs, as each needs 126 writes first.
    let deletions = (n / 10).max(least_deletions);
    let mut doomed = Vec::new();
    for i in 0..deletions {
        let author = &fans[i];
        let body = json!({ "userId": author, "title": format!("doomed {i}"), "content": data::text(&mut rng, (1_000, 5_000)) });
        let post = client.post(author, "/api/posts", &body).await.id();
        for fan in &fans[..c7_likes] {
            assert!(
                client
                    .post(fan, &format!("/api/posts/{post}/likes"), &json!({ "userId": fan }))
                    .await
                    .ok()
            );
        }
        for _ in 0..c7_comments {
            let body = json!({ "userId": author, "content": data::text(&mut rng, (100, 300)) });
            assert!(client.post(author, &format!("/api/posts/{post}/comments"), &body).await.ok());
        }
        doomed.push((post, author.clone()));
    }
    let samples = writes(
        deletions,
        |i| {
            let (post, author) = &doomed[i];
            let path = format!("/api/posts/{post}");
            async move { client.delete(author, &path).await }
        },
        |_| {},
    )
    .await;
    rows.push(ExtraRow {
        request: "C7",
        route: "DELETE /api/posts/{id}",
        what: format!("{deletions} posts of {c7_comments} comments and {c7_likes} likes"),
        stats: Stats::of(&samples),
    });

    // C2 with the most tags a post may carry (its request writes what an untagged C2 writes; the
    // copies under its tags come after, through the change feed), then Q7 on a tag every one of
    // them carries, once its copies are there: a whole page of 100 where there are as many.
    let samples = writes(
        n,
        |i| {
            let author = &fans[i];
            let tags = json!(["bench", format!("bench-{}", i % 10), "Cosmos DB", "rust", "modelling"]);
            let body = json!({ "userId": author, "title": format!("tagged {i}"), "content": data::text(&mut Rng::new(i as u64), (1_000, 5_000)), "tags": tags });
            async move { client.post(author, "/api/posts", &body).await }
        },
        |_| {},
    )
    .await;
    rows.push(ExtraRow {
        request: "C2 tagged",
        route: "POST /api/posts",
        what: "with 5 tags".into(),
        stats: Stats::of(&samples),
    });
    let page = n.min(100);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while client.get("/api/tags/bench/posts?limit=100").await.body["items"]
        .as_array()
        .map_or(0, Vec::len)
        < page
    {
        assert!(std::time::Instant::now() < deadline, "the copies under the tag never arrived");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let samples = reads(
        n,
        || {
            plan.tag_cache.invalidate();
            "/api/tags/bench/posts?limit=100".to_owned()
        },
        client,
    )
    .await;
    rows.push(ExtraRow {
        request: "Q7",
        route: "GET /api/tags/{tag}/posts?limit=100",
        what: format!("{page} posts with the tag"),
        stats: Stats::of(&samples),
    });

    let samples = writes(
        n,
        |i| {
            let fan = &fans[i];
            let body = json!({ "username": format!("{fan}-renamed") });
            let path = format!("/api/users/{fan}");
            async move { client.put(fan, &path, &body).await }
        },
        |_| {},
    )
    .await;
    rows.push(ExtraRow {
        request: "C1 rename",
        route: "PUT /api/users/{id}",
        what: "a name no one holds".into(),
        stats: Stats::of(&samples),
    });
    rows
}

/// One page, read one at a time.
pub(crate) struct PageRow {
    pub page: &'static str,
    pub path: &'static str,
    pub stats: Stats,
}

/// The pages one at a time: the front page as served (from the feed cache) and read through
/// (the cache dropped before each request), and a random post's page (Q2 + Q4 + Q5).
pub(crate) async fn measure_pages(plan: &Plan<'_>) -> Vec<PageRow> {
    let mut rng = Rng::new(plan.seed ^ 0x9A6E);
    let (client, loaded, n) = (plan.client, plan.loaded, plan.iterations);
    let mut rows = Vec::new();
    let samples = reads(n, || "/".to_owned(), client).await;
    rows.push(PageRow { page: "front page", path: "GET /", stats: Stats::of(&samples) });
    let samples = reads(
        n,
        || {
            plan.feed_cache.invalidate();
            "/".to_owned()
        },
        client,
    )
    .await;
    rows.push(PageRow {
        page: "front page, uncached",
        path: "GET / (feed cache dropped before each)",
        stats: Stats::of(&samples),
    });
    let samples =
        reads(n, || format!("/posts/{}", loaded.posts[rng.index(loaded.posts.len())].0), client)
            .await;
    rows.push(PageRow {
        page: "a post",
        path: "GET /posts/{random id}",
        stats: Stats::of(&samples),
    });
    rows
}

fn row(request: &'static str, route: &str, samples: Vec<Sample>) -> RequestRow {
    let &(_, article_latency_ms, article_charge) = ARTICLE_V3
        .iter()
        .find(|(name, _, _)| *name == request)
        .expect("every request is in the article's table");
    RequestRow {
        request,
        route: route.to_owned(),
        stats: Stats::of(&samples),
        article_latency_ms,
        article_charge,
    }
}

/// `n` GETs of the paths `next_path` gives, one at a time, after a short warm-up.
async fn reads(n: usize, mut next_path: impl FnMut() -> String, client: &Client) -> Vec<Sample> {
    for _ in 0..WARM_UP {
        client.get(&next_path()).await;
    }
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        samples.push(client.get(&next_path()).await.sample);
    }
    samples
}

/// `n` writes, one at a time; `created` sees each answer (to collect new ids).
async fn writes<F: Future<Output = Answer>>(
    n: usize,
    mut write: impl FnMut(usize) -> F,
    mut created: impl FnMut(&Answer),
) -> Vec<Sample> {
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let answer = write(i).await;
        assert!(answer.ok(), "a write failed: {} {}", answer.sample.status, answer.body);
        created(&answer);
        samples.push(answer.sample);
    }
    samples
}
