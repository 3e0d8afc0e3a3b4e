//! A reader load replayed against the `handler` executable at a real blog's rate, and what each
//! kind of page costs the store: operations and request units per view, and per 1,000 views of
//! the whole mix. Not a test: it asserts nothing about time (BENCHMARKS.md, "A reader load, per
//! page kind").
//!
//!     cargo bench --bench readers                                   # 1,000,000 views a day for 120 s
//!     cargo bench --bench readers -- --views-per-day 100000         # a smaller blog (its caches hit less)
//!     cargo bench --bench readers -- --seconds 600                  # longer: steadier figures, more writes
//!     cargo bench --bench readers -- --json readers.json            # the figures as JSON too
//!     cargo bench --bench readers -- --handler OTHER_BUILD          # another build, to compare
//!     cargo test --bench readers -- --smoke --handler target/debug/handler  # every part once, seconds
//!
//! The handler runs as a child process on an empty data directory (embedded store, local
//! change-feed processors, `BLOG_AUTH=development`: each write is signed in as its user with
//! `x-dev-user`). The bench writes a blog through the API (20 users, 500 posts, 0–6 comments
//! and 0–8 likes on each), waits until the change feed has copied every post into `feed` and the
//! users' lists, and then replays the load:
//!
//! - Views arrive at random (a Poisson process) at `--views-per-day`, because the caches the
//!   figures depend on are kept for a time (the feed's and each post's, a second per instance):
//!   the same views sent as fast as possible would hit them far more often than readers do.
//! - Each view is a page kind drawn from a mix ([`DEFAULT_MIX`], or `--mix`); a post or a user
//!   is drawn by popularity, Zipf with s = 1 over a seeded ranking, as real blogs are read (the
//!   most read of 500 posts takes 15% of the post views, the ten most read 43%).
//! - After every 100th view, a write: a comment or a like on a post drawn the same way (45% each),
//!   or a new post (10%), which enters the ranking among the ten most read, as a new post does.
//!   Writes go to the API, without an `Idempotency-Key`.
//! - Every answer's `x-ms-request-charge` and `x-cosmos-operations` are summed per kind on the
//!   client. They count what the request itself asked of the store; what the change feed then
//!   writes (the copies) runs outside any request and is not in them.
//!
//! Everything drawn comes from one seed (`--seed`), so the same arguments send the same requests
//! in the same order at the same moments; what each costs still depends on which cache entries
//! are alive when it arrives, to the millisecond.
//!
//! RU on the embedded store are the SDK emulator's synthetic charges (BENCHMARKS.md, "Reading"):
//! a query costs 1 RU there, 6–17 RU on Cosmos DB. So each kind's operations are also priced at
//! the article's RU for the reads that kind makes when its cache is cold ([`Kind::article`]), the
//! prices `handler cost` uses, and both figures are printed.
//!
//! `--smoke` (3 users, 12 posts, 4 s, every kind of view in turn, and after every fifth view a
//! write, each kind in turn) shows that the bench runs, not what it measures (`benches/smoke.sh`, in CI).

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

#[path = "blog/client.rs"]
#[allow(dead_code)]
mod client;
#[path = "blog/data.rs"]
#[allow(dead_code)]
mod data;
#[path = "blog/process.rs"]
#[allow(dead_code)]
mod process;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use client::{Client, Sample};
use data::Rng;

/// `handler cost`'s arithmetic and the article's RU (its V3 table), from the binary's own file: the
/// prices this bench puts on what it measures, and the figure it measures against.
#[path = "../src/bin/handler/cost.rs"]
#[allow(dead_code, unused_imports)]
mod cost;

use cost::article::{C2, C3, C4, Q1, Q2, Q3, Q4, Q5, Q6};

/// A point read, at the article's RU (its Q1 and Q2).
const POINT_READ_RU: f64 = Q1;
use cost::{FEED_MARK_RU, USER_POSTS_MARK_RU};

/// A tag's page of posts (Q7, not in the article): the same query as Q3, short copies in one
/// partition (of `tags`), so priced as Q3; its mark a point read, as a user's posts mark.
const Q7: f64 = Q3;
const TAG_MARK_RU: f64 = USER_POSTS_MARK_RU;

/// How many tags the blog's posts carry, one each (`topic-0` to `topic-11`, post by post in
/// turn): a tag's page lists about a twelfth of the posts.
const TAGS: usize = 12;

/// What `handler cost` computes a page view costs at 1,000,000 views a day, per 1,000 views
/// (every post view three reads, the front page read at most once a second).
fn computed_ru_per_1000_views() -> f64 {
    let traffic = cost::Traffic::of(1_000_000.0);
    cost::estimate(&traffic, &cost::Prices::LISTED, &[]).view_ru_per_day / traffic.views_per_day
        * 1000.0
}

/// What a request is: a page kind a reader views, or a write.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    FrontPage,
    PostPage,
    UserPage,
    TagPage,
    AtomFeed,
    UserAtomFeed,
    ApiFeed,
    ApiPost,
    ApiComments,
    ApiUserPosts,
    Comment,
    Like,
    NewPost,
}

/// The views' mix unless `--mix` says otherwise: the pages most of it, the Atom feeds what feed
/// readers poll, and a tenth API reads (an app or a script). Shares of all views; they add to 1.
/// Tag pages are not in it, so that its figures compare with the runs before they were
/// (`--mix` adds them; `--smoke` has every kind).
const DEFAULT_MIX: [(Kind, f64); 9] = [
    (Kind::FrontPage, 0.30),
    (Kind::PostPage, 0.42),
    (Kind::UserPage, 0.08),
    (Kind::AtomFeed, 0.05),
    (Kind::UserAtomFeed, 0.02),
    (Kind::ApiFeed, 0.04),
    (Kind::ApiPost, 0.05),
    (Kind::ApiComments, 0.02),
    (Kind::ApiUserPosts, 0.02),
];

/// The writes' mix, after every 100th view (`handler cost` counts a tenth of writes as new posts).
const WRITES: [(Kind, f64); 3] = [(Kind::Comment, 0.45), (Kind::Like, 0.45), (Kind::NewPost, 0.10)];

impl Kind {
    /// The name in the table, and the JSON's key.
    fn names(self) -> (&'static str, &'static str) {
        match self {
            Kind::FrontPage => ("front page", "front_page"),
            Kind::PostPage => ("post page", "post_page"),
            Kind::UserPage => ("user page", "user_page"),
            Kind::TagPage => ("a tag's page", "tag_page"),
            Kind::AtomFeed => ("Atom feed", "atom_feed"),
            Kind::UserAtomFeed => ("a user's Atom feed", "user_atom_feed"),
            Kind::ApiFeed => ("API: feed", "api_feed"),
            Kind::ApiPost => ("API: post", "api_post"),
            Kind::ApiComments => ("API: comments", "api_comments"),
            Kind::ApiUserPosts => ("API: a user's posts", "api_user_posts"),
            Kind::Comment => ("comment", "comment"),
            Kind::Like => ("like", "like"),
            Kind::NewPost => ("new post", "new_post"),
        }
    }

    /// The route, as the table shows it.
    fn route(self) -> &'static str {
        match self {
            Kind::FrontPage => "GET /",
            Kind::PostPage => "GET /posts/{id}",
            Kind::UserPage => "GET /users/{id}",
            Kind::TagPage => "GET /tags/{tag}",
            Kind::AtomFeed => "GET /feed.atom",
            Kind::UserAtomFeed => "GET /users/{id}/feed.atom",
            Kind::ApiFeed => "GET /api/feed",
            Kind::ApiPost => "GET /api/posts/{id}",
            Kind::ApiComments => "GET /api/posts/{id}/comments",
            Kind::ApiUserPosts => "GET /api/users/{id}/posts",
            Kind::Comment => "POST /api/posts/{id}/comments",
            Kind::Like => "POST /api/posts/{id}/likes",
            Kind::NewPost => "POST /api/posts",
        }
    }

    /// What the kind asks of the store when nothing is cached, as the article names it, and the
    /// article's RU of each of its operations, in the order a request makes them: a request of n
    /// operations is priced at the first n (a list API reads its owner only when the first page is
    /// empty, to tell an empty list from a missing owner; a writer's request is priced as one).
    /// The first `cold` prices are what a cold view always reads.
    fn article(self) -> Article {
        let (reads, cold, prices): (_, _, &'static [f64]) = match self {
            Kind::FrontPage | Kind::AtomFeed | Kind::ApiFeed => {
                ("the feed's mark + Q6", 2, &[FEED_MARK_RU, Q6])
            }
            Kind::PostPage => ("Q2 + Q4 + Q5", 3, &[Q2, Q4, Q5]),
            Kind::UserPage => ("Q1 + the user's posts mark + Q3", 3, &[Q1, USER_POSTS_MARK_RU, Q3]),
            Kind::TagPage => ("the tag's mark + Q7", 2, &[TAG_MARK_RU, Q7]),
            Kind::UserAtomFeed | Kind::ApiUserPosts => {
                ("the user's posts mark + Q3 (+ Q1 when empty)", 2, &[USER_POSTS_MARK_RU, Q3, Q1])
            }
            Kind::ApiPost => ("Q2", 1, &[Q2]),
            Kind::ApiComments => ("Q4 (+ Q2 when empty)", 1, &[Q4, Q2]),
            Kind::Comment => ("C3", 1, &[C3]),
            Kind::Like => ("C4", 1, &[C4]),
            Kind::NewPost => ("C2", 1, &[C2]),
        };
        Article { reads, cold: prices[..cold].iter().sum(), prices }
    }

    /// The article's RU of one query the kind makes: a post page's are Q4 and Q5, always
    /// together; `None` for a kind that makes none.
    fn query_price(self) -> Option<f64> {
        match self {
            Kind::FrontPage | Kind::AtomFeed | Kind::ApiFeed => Some(Q6),
            Kind::PostPage => Some((Q4 + Q5) / 2.0),
            Kind::UserPage | Kind::UserAtomFeed | Kind::ApiUserPosts => Some(Q3),
            Kind::TagPage => Some(Q7),
            Kind::ApiComments => Some(Q4),
            Kind::ApiPost | Kind::Comment | Kind::Like | Kind::NewPost => None,
        }
    }

    /// What a request of `operations`, `queries` of them queries, is priced at: a write as the one
    /// request the article measured; a read's point reads at 1 RU each (the article's Q1 and Q2,
    /// and so a mark or the change log, small items too) and its queries at the kind's
    /// ([`Kind::query_price`]). A build that does not say its queries (`queries` is `None`) is
    /// priced by [`Kind::article`]'s operations in order.
    fn article_price(self, operations: u64, queries: Option<u64>) -> f64 {
        let prices = self.article().prices;
        if self.is_write() {
            return prices[0];
        }
        if let Some(queries) = queries {
            let queries = queries.min(operations);
            return (operations - queries) as f64 * POINT_READ_RU
                + queries as f64 * self.query_price().unwrap_or(POINT_READ_RU);
        }
        let known = (operations as usize).min(prices.len());
        let beyond = operations as usize - known;
        prices[..known].iter().sum::<f64>() + beyond as f64 * prices[prices.len() - 1]
    }

    /// The views a `--mix` may name, by the names it takes.
    const VIEWS: [(&'static str, Kind); 10] = [
        ("front", Kind::FrontPage),
        ("post", Kind::PostPage),
        ("user", Kind::UserPage),
        ("tag", Kind::TagPage),
        ("atom", Kind::AtomFeed),
        ("user-atom", Kind::UserAtomFeed),
        ("api-feed", Kind::ApiFeed),
        ("api-post", Kind::ApiPost),
        ("api-comments", Kind::ApiComments),
        ("api-user-posts", Kind::ApiUserPosts),
    ];

    fn is_write(self) -> bool {
        matches!(self, Kind::Comment | Kind::Like | Kind::NewPost)
    }
}

/// A kind's requests as the article would price them.
struct Article {
    /// What a cold request reads (or writes), as the article names it.
    reads: &'static str,
    /// Its RU.
    cold: f64,
    /// The RU of each operation, in the order a request makes them.
    prices: &'static [f64],
}

/// The command line: `cargo bench --bench readers -- [--smoke] [--handler PATH] …`.
struct Args {
    views_per_day: f64,
    seconds: f64,
    /// Seconds of the same load before the counted ones, not counted: the caches as a blog
    /// that has been read for a while has them (every post first read whole once).
    warm_up: f64,
    users: usize,
    posts: usize,
    /// Comments and likes per post when the blog is written: up to these many.
    comments: usize,
    likes: usize,
    /// One write after every this many views.
    views_per_write: usize,
    seed: u64,
    json: Option<PathBuf>,
    handler: Option<PathBuf>,
    /// Every kind of view and of write in turn instead of drawn (`--smoke`).
    in_turn: bool,
    /// The views' kinds and their shares (adding to 1).
    mix: Vec<(Kind, f64)>,
}

impl Args {
    fn parse() -> Args {
        let mut args = Args {
            views_per_day: 1_000_000.0,
            seconds: 120.0,
            warm_up: 0.0,
            users: 20,
            posts: 500,
            comments: 6,
            likes: 8,
            views_per_write: 100,
            seed: 44,
            json: None,
            handler: None,
            in_turn: false,
            mix: DEFAULT_MIX.to_vec(),
        };
        let mut mix_given = false;
        let mut given = std::env::args().skip(1);
        while let Some(flag) = given.next() {
            let mut value = |name: &str| -> f64 {
                given
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|v: &f64| *v > 0.0)
                    .unwrap_or_else(|| panic!("{name} needs a number above 0"))
            };
            match flag.as_str() {
                "--bench" => {} // cargo bench passes it to every bench
                "--smoke" => {
                    args.seconds = 4.0;
                    args.users = 3;
                    args.posts = 12;
                    args.comments = 2;
                    args.likes = 2;
                    args.views_per_write = 5;
                    args.in_turn = true;
                    if !mix_given {
                        args.mix = Kind::VIEWS.iter().map(|&(_, kind)| (kind, 0.1)).collect();
                    }
                }
                "--mix" => {
                    args.mix = parse_mix(&given.next().expect("--mix needs kind=share,…"));
                    mix_given = true;
                }
                "--views-per-day" => args.views_per_day = value("--views-per-day"),
                "--seconds" => args.seconds = value("--seconds"),
                "--warm-up" => args.warm_up = value("--warm-up"),
                "--users" => args.users = value("--users") as usize,
                "--posts" => args.posts = value("--posts") as usize,
                "--views-per-write" => {
                    args.views_per_write = (value("--views-per-write") as usize).max(1)
                }
                "--seed" => args.seed = value("--seed") as u64,
                "--json" => {
                    args.json = Some(given.next().map(PathBuf::from).expect("--json needs a path"))
                }
                "--handler" => {
                    args.handler =
                        Some(given.next().map(PathBuf::from).expect("--handler needs a path"))
                }
                "--help" | "-h" => {
                    println!(
                        "cargo bench --bench readers -- [--smoke] [--handler PATH] [--views-per-day N=1000000] [--seconds S=120] \
                         [--warm-up S=0] [--users N=20] [--posts N=500] [--views-per-write N=100] [--seed S=44] [--json PATH] \
                         [--mix front=30,post=42,user=8,tag=0,atom=5,user-atom=2,api-feed=4,api-post=5,api-comments=2,api-user-posts=2]"
                    );
                    std::process::exit(0);
                }
                other => panic!("unknown argument {other:?}; try --help"),
            }
        }
        assert!(
            args.users >= 2 && args.posts >= args.users,
            "at least 2 users, and a post for each"
        );
        args
    }
}

/// `kind=share,…` as `--mix` takes it: each kind a name of [`Kind::VIEWS`], each share a
/// number above 0 (the shares are scaled to add to 1).
fn parse_mix(given: &str) -> Vec<(Kind, f64)> {
    let mut mix = Vec::new();
    for part in given.split(',') {
        let (name, share) = part.split_once('=').unwrap_or_else(|| panic!("{part:?}: kind=share"));
        let kind = Kind::VIEWS
            .iter()
            .find(|(known, _)| *known == name.trim())
            .map(|&(_, kind)| kind)
            .unwrap_or_else(|| panic!("{name:?} is none of {:?}", Kind::VIEWS.map(|(n, _)| n)));
        let share: f64 = share.trim().parse().unwrap_or_else(|_| panic!("{share:?}: a number"));
        assert!(share >= 0.0 && share.is_finite(), "{name}: a share of 0 or more");
        if share > 0.0 && !mix.iter().any(|&(known, _)| known == kind) {
            mix.push((kind, share));
        }
    }
    let total: f64 = mix.iter().map(|&(_, share)| share).sum();
    assert!(total > 0.0, "--mix names no view with a share above 0");
    mix.into_iter().map(|(kind, share)| (kind, share / total)).collect()
}

fn main() {
    let args = Args::parse();
    let binary = args
        .handler
        .clone()
        .unwrap_or_else(|| process::handler_binary().unwrap_or_else(|error| panic!("{error}")));
    let runtime = tokio::runtime::Runtime::new().expect("a Tokio runtime");
    runtime.block_on(run(&args, &binary));
}

/// A number in `0..1`.
fn unit(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Draws ranks `0..n` with probability proportional to `1 / (rank + 1)`: Zipf, s = 1.
struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    fn new(n: usize) -> Zipf {
        let mut total = 0.0;
        let cumulative = (1..=n)
            .map(|rank| {
                total += 1.0 / rank as f64;
                total
            })
            .collect();
        Zipf { cumulative }
    }

    fn draw(&self, rng: &mut Rng) -> usize {
        let total = self.cumulative.last().copied().unwrap_or(0.0);
        let target = unit(rng) * total;
        self.cumulative.partition_point(|&sum| sum <= target).min(self.cumulative.len() - 1)
    }
}

/// One of `choices` by its share (`u` in `0..1`).
fn by_share(choices: &[(Kind, f64)], u: f64) -> Kind {
    let mut sum = 0.0;
    for &(kind, share) in choices {
        sum += share;
        if u < sum {
            return kind;
        }
    }
    choices[choices.len() - 1].0
}

/// A request of the load, as drawn before it starts.
struct Event {
    /// When it is sent, from the load's start.
    at: Duration,
    kind: Kind,
    /// The post it is about, by popularity rank (0 the most read), when it is about one.
    rank: usize,
    /// The user it is about (a user's page), or who writes.
    user: usize,
}

/// The whole load, drawn from the seed before it starts.
fn schedule(args: &Args) -> Vec<Event> {
    let mut rng = Rng::new(args.seed);
    let rate = args.views_per_day / 86_400.0;
    let posts = Zipf::new(args.posts);
    let users = Zipf::new(args.users);
    let mut events = Vec::new();
    let mut at = 0.0;
    let mut views = 0;
    let mut writes = 0;
    loop {
        // Exponential gaps: arrivals at random at `rate` a second.
        at += -(1.0 - unit(&mut rng)).ln() / rate;
        if at >= args.warm_up + args.seconds {
            return events;
        }
        let kind = if args.in_turn {
            args.mix[views % args.mix.len()].0
        } else {
            by_share(&args.mix, unit(&mut rng))
        };
        let (rank, user) = (posts.draw(&mut rng), users.draw(&mut rng));
        events.push(Event { at: Duration::from_secs_f64(at), kind, rank, user });
        views += 1;
        if views % args.views_per_write == 0 {
            let kind = if args.in_turn {
                WRITES[writes % WRITES.len()].0
            } else {
                by_share(&WRITES, unit(&mut rng))
            };
            // A new post's rank: among the ten most read.
            let rank = if kind == Kind::NewPost {
                rng.index(10.min(args.posts))
            } else {
                posts.draw(&mut rng)
            };
            events.push(Event {
                at: Duration::from_secs_f64(at),
                kind,
                rank,
                user: rng.index(args.users),
            });
            writes += 1;
        }
    }
}

/// The blog as it is being read: its users, its posts by popularity, and who liked what.
struct Blog {
    users: Vec<String>,
    /// Post ids, the most read first; a new post is inserted at its rank.
    ranked: Mutex<Vec<String>>,
    /// (post, user) for every like, so that no one likes a post twice.
    likes: Mutex<HashSet<(String, usize)>>,
}

/// What the blog was written with.
struct Written {
    comments: usize,
    likes: usize,
    took: Duration,
}

const TITLE_CHARS: (usize, usize) = (35, 65);
const CONTENT_CHARS: (usize, usize) = (1_000, 5_000);
const COMMENT_CHARS: (usize, usize) = (100, 300);
/// Writes in flight while the blog is written.
const WRITERS: usize = 8;

/// Runs `jobs` with [`WRITERS`] at a time, each job a closure's future.
async fn in_parallel<F, Fut>(count: usize, job: F)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (job, next) = (Arc::new(job), Arc::new(AtomicUsize::new(0)));
    let tasks: Vec<_> = (0..WRITERS)
        .map(|_| {
            let (job, next) = (job.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= count {
                        return;
                    }
                    job(n).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a writer");
    }
}

/// Writes the blog through the API, then waits until the change feed has copied every post into
/// `feed` and its author's list, and the caches have expired.
async fn write_blog(client: &Client, args: &Args) -> (Blog, Written) {
    let started = std::time::Instant::now();
    let mut rng = Rng::new(args.seed ^ 0x5EED);
    let users: Vec<String> = (0..args.users).map(|n| format!("reader-{n:02}")).collect();
    for user in &users {
        let answer = client.post(user, "/api/users", &json!({ "username": user })).await;
        assert!(answer.ok(), "C1 {user}: {}", answer.sample.status);
    }
    // The posts, each user's in turn; each with its text and who comments and likes it.
    struct PostPlan {
        author: usize,
        title: String,
        content: String,
        comments: Vec<(usize, String)>,
        likers: Vec<usize>,
    }
    let plans: Vec<PostPlan> = (0..args.posts)
        .map(|n| {
            let comments = rng.range(0, args.comments);
            let likes = rng.range(0, args.likes);
            PostPlan {
                author: n % args.users,
                title: data::text(&mut rng, TITLE_CHARS),
                content: data::text(&mut rng, CONTENT_CHARS),
                comments: (0..comments)
                    .map(|_| (rng.index(args.users), data::text(&mut rng, COMMENT_CHARS)))
                    .collect(),
                likers: rng.distinct(likes, args.users),
            }
        })
        .collect();
    let plans = Arc::new(plans);
    let users = Arc::new(users);
    let ids = Arc::new(Mutex::new(vec![String::new(); args.posts]));
    {
        let (client, plans, users, ids) =
            (client.clone(), plans.clone(), users.clone(), ids.clone());
        in_parallel(args.posts, move |n| {
            let (client, plans, users, ids) =
                (client.clone(), plans.clone(), users.clone(), ids.clone());
            async move {
                let plan = &plans[n];
                let author = &users[plan.author];
                let tag = format!("topic-{}", n % TAGS);
                let body = json!({
                    "userId": author, "title": plan.title, "content": plan.content, "tags": [tag]
                });
                let answer = client.post(author, "/api/posts", &body).await;
                assert!(answer.ok(), "C2: {}", answer.sample.status);
                ids.lock().unwrap()[n] = answer.id();
            }
        })
        .await;
    }
    let ids: Vec<String> = ids.lock().unwrap().clone();
    // Comments and likes, one write a job.
    let reactions: Vec<(usize, Option<usize>, usize)> = plans
        .iter()
        .enumerate()
        .flat_map(|(n, plan)| {
            let comments = (0..plan.comments.len()).map(move |c| (n, Some(c), 0));
            let likes = plan.likers.iter().map(move |&liker| (n, None, liker));
            comments.chain(likes)
        })
        .collect();
    let (comment_count, like_count) = (
        reactions.iter().filter(|r| r.1.is_some()).count(),
        reactions.iter().filter(|r| r.1.is_none()).count(),
    );
    {
        let (client, plans, users, ids, reactions) =
            (client.clone(), plans.clone(), users.clone(), ids.clone(), Arc::new(reactions));
        in_parallel(reactions.len(), move |n| {
            let (client, plans, users, ids, reactions) =
                (client.clone(), plans.clone(), users.clone(), ids.clone(), reactions.clone());
            async move {
                let (post, comment, liker) = reactions[n];
                let id = &ids[post];
                let answer = match comment {
                    Some(c) => {
                        let (author, content) = &plans[post].comments[c];
                        let body = json!({ "userId": users[*author], "content": content });
                        client
                            .post(&users[*author], &format!("/api/posts/{id}/comments"), &body)
                            .await
                    }
                    None => {
                        client
                            .post(
                                &users[liker],
                                &format!("/api/posts/{id}/likes"),
                                &json!({ "userId": users[liker] }),
                            )
                            .await
                    }
                };
                assert!(answer.ok(), "C3/C4 on {id}: {}", answer.sample.status);
            }
        })
        .await;
    }
    let likes: HashSet<(String, usize)> = plans
        .iter()
        .enumerate()
        .flat_map(|(n, plan)| plan.likers.iter().map(move |&liker| (n, liker)))
        .map(|(n, liker)| (ids[n].clone(), liker))
        .collect();
    wait_for_copies(client, &users, args.posts).await;
    // Every cache the writing filled is gone before the first view.
    tokio::time::sleep(Duration::from_millis(1_500)).await;

    // The ranking: a seeded shuffle of the posts, so that popularity is not the order of writing.
    let mut ranked = ids;
    for i in (1..ranked.len()).rev() {
        ranked.swap(i, rng.index(i + 1));
    }
    let blog = Blog { users: users.to_vec(), ranked: Mutex::new(ranked), likes: Mutex::new(likes) };
    (blog, Written { comments: comment_count, likes: like_count, took: started.elapsed() })
}

/// Polls until `feed` holds the newest 100 posts (or all) and each user's list all theirs (the
/// first 100 of them: one page).
async fn wait_for_copies(client: &Client, users: &[String], posts: usize) {
    let started = std::time::Instant::now();
    let in_feed = posts.min(100);
    // The posts are dealt to the users in turn.
    let in_lists: usize = (0..users.len())
        .map(|u| (posts / users.len() + usize::from(u < posts % users.len())).min(100))
        .sum();
    loop {
        let feed = client.get("/api/feed?limit=100").await.item_ids().len();
        let mut listed = 0;
        for user in users {
            listed +=
                client.get(&format!("/api/users/{user}/posts?limit=100")).await.item_ids().len();
        }
        if feed == in_feed && listed == in_lists {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the copies did not arrive in 300 s: feed {feed}, lists {listed}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Sends one request of the load; its kind and what it cost.
async fn send(client: &Client, blog: &Blog, event: &Event, seed: u64) -> (Kind, Sample) {
    let post = || blog.ranked.lock().unwrap()[event.rank].clone();
    let user = &blog.users[event.user];
    let answer = match event.kind {
        Kind::FrontPage => client.get("/").await,
        Kind::PostPage => client.get(&format!("/posts/{}", post())).await,
        Kind::UserPage => client.get(&format!("/users/{user}")).await,

        Kind::TagPage => client.get(&format!("/tags/topic-{}", event.rank % TAGS)).await,
        Kind::AtomFeed => client.get("/feed.atom").await,
        Kind::UserAtomFeed => client.get(&format!("/users/{user}/feed.atom")).await,
        Kind::ApiFeed => client.get("/api/feed").await,
        Kind::ApiPost => client.get(&format!("/api/posts/{}", post())).await,
        Kind::ApiComments => client.get(&format!("/api/posts/{}/comments", post())).await,
        Kind::ApiUserPosts => client.get(&format!("/api/users/{user}/posts")).await,
        Kind::Comment => comment(client, &post(), user, seed).await,
        Kind::Like => {
            let post = post();
            // The writer, or the next user who has not liked it yet; a comment when all have.
            let liker = {
                let mut likes = blog.likes.lock().unwrap();
                let liker = (0..blog.users.len())
                    .map(|n| (event.user + n) % blog.users.len())
                    .find(|&liker| !likes.contains(&(post.clone(), liker)));
                if let Some(liker) = liker {
                    likes.insert((post.clone(), liker));
                }
                liker
            };
            match liker {
                Some(liker) => {
                    let liker = &blog.users[liker];
                    client
                        .post(
                            liker,
                            &format!("/api/posts/{post}/likes"),
                            &json!({ "userId": liker }),
                        )
                        .await
                }
                None => return (Kind::Comment, comment(client, &post, user, seed).await.sample),
            }
        }
        Kind::NewPost => {
            let mut rng = Rng::new(seed);
            let body = json!({ "userId": user, "title": data::text(&mut rng, TITLE_CHARS), "content": data::text(&mut rng, CONTENT_CHARS), "tags": [format!("topic-{}", event.rank % TAGS)] });
            let answer = client.post(user, "/api/posts", &body).await;
            if answer.ok() {
                blog.ranked.lock().unwrap().insert(event.rank, answer.id());
            }
            answer
        }
    };
    (event.kind, answer.sample)
}

async fn comment(client: &Client, post: &str, user: &str, seed: u64) -> client::Answer {
    let mut rng = Rng::new(seed);
    let body = json!({ "userId": user, "content": data::text(&mut rng, COMMENT_CHARS) });
    client.post(user, &format!("/api/posts/{post}/comments"), &body).await
}

/// Replays `events` at their times, each request on its own task, so that a slow answer delays
/// none of the arrivals after it (readers do not wait for each other).
async fn replay(
    client: &Client,
    blog: Arc<Blog>,
    events: Vec<Event>,
    seed: u64,
) -> (Vec<(Kind, Sample)>, Duration) {
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(events.len());
    for (n, event) in events.into_iter().enumerate() {
        tokio::time::sleep_until(start + event.at).await;
        let (client, blog) = (client.clone(), blog.clone());
        tasks
            .push(tokio::spawn(async move { send(&client, &blog, &event, seed ^ n as u64).await }));
    }
    let mut samples = Vec::with_capacity(tasks.len());
    for task in tasks {
        samples.push(task.await.expect("a request"));
    }
    (samples, start.elapsed())
}

/// One kind's figures.
struct Row {
    kind: Kind,
    count: usize,
    errors: usize,
    operations: f64,
    charge: f64,
    /// The same requests priced at the article's RU ([`Kind::article_price`]).
    article: f64,
    /// Requests that cost nothing: served from a cache.
    free: usize,
}

impl Row {
    fn of(kind: Kind, samples: &[(Kind, Sample)]) -> Row {
        let mine: Vec<&Sample> =
            samples.iter().filter(|(k, _)| *k == kind).map(|(_, s)| s).collect();
        Row {
            kind,
            count: mine.len(),
            errors: mine.iter().filter(|s| !(200..300).contains(&s.status)).count(),
            // Folded from +0: an empty float sum is -0, printed "-0".
            operations: mine.iter().map(|s| s.operations as f64).fold(0.0, |sum, n| sum + n),
            charge: mine.iter().map(|s| s.charge).fold(0.0, |sum, n| sum + n),
            article: mine
                .iter()
                .map(|s| kind.article_price(s.operations, s.queries))
                .fold(0.0, |sum, n| sum + n),
            free: mine.iter().filter(|s| s.operations == 0 && s.charge == 0.0).count(),
        }
    }

    /// `total` per request of the kind.
    fn per(&self, total: f64) -> f64 {
        if self.count == 0 { 0.0 } else { total / self.count as f64 }
    }

    fn json(&self, per_1000_views: impl Fn(f64) -> f64, views: usize) -> Value {
        let article = self.kind.article();
        json!({
            "kind": self.kind.names().1,
            "name": self.kind.names().0,
            "route": self.kind.route(),
            "count": self.count,
            "share_of_views": self.count as f64 / views.max(1) as f64,
            "errors": self.errors,
            "operations_per_request": self.per(self.operations),
            "ru_per_request": self.per(self.charge),
            "ru_per_1000_views": per_1000_views(self.charge),
            "operations_per_1000_views": per_1000_views(self.operations),
            "zero_ru_share": self.per(self.free as f64),
            "article": {
                "cold": article.reads,
                "cold_ru": article.cold,
                "ru_per_operation": article.prices,
                "ru_per_request": self.per(self.article),
                "ru_per_1000_views": per_1000_views(self.article),
            },
        })
    }
}

async fn run(args: &Args, binary: &Path) {
    let data_dir = tempfile::tempdir().expect("a temporary directory");
    let (mut child, base) = process::spawn_on(binary, data_dir.path());
    process::first_answer(&base, std::time::Instant::now()).await;
    let client = Client::new(base);
    let (blog, written) = write_blog(&client, args).await;
    let events = schedule(args);
    // The warm-up's views and writes are made, not counted (events and samples are in order).
    let warming = events.iter().take_while(|event| event.at.as_secs_f64() < args.warm_up).count();
    let (mut samples, mut took) = replay(&client, Arc::new(blog), events, args.seed).await;
    samples.drain(..warming);
    took = took.saturating_sub(Duration::from_secs_f64(args.warm_up));
    child.kill().expect("the handler stops");
    child.wait().expect("the handler is gone");

    let views: Vec<Row> = args.mix.iter().map(|&(kind, _)| Row::of(kind, &samples)).collect();
    let writes: Vec<Row> = WRITES.iter().map(|&(kind, _)| Row::of(kind, &samples)).collect();
    let view_count: usize = views.iter().map(|row| row.count).sum();
    let write_count: usize = writes.iter().map(|row| row.count).sum();
    let thousand =
        |total: f64| if view_count == 0 { 0.0 } else { total * 1000.0 / view_count as f64 };
    let percent = |part: f64| part * 100.0 / view_count.max(1) as f64;
    let sum = |rows: &[Row], field: fn(&Row) -> f64| rows.iter().map(field).sum::<f64>();
    let (operations, charge, article) =
        (sum(&views, |r| r.operations), sum(&views, |r| r.charge), sum(&views, |r| r.article));
    let free = views.iter().map(|row| row.free).sum::<usize>();
    // Every view of this mix read the store for all it shows: what the caches save.
    let all_cold = sum(&views, |r| r.count as f64 * r.kind.article().cold);
    let (write_operations, write_charge, write_article) =
        (sum(&writes, |r| r.operations), sum(&writes, |r| r.charge), sum(&writes, |r| r.article));

    println!(
        "Blog: {} users, {} posts, {} comments, {} likes, written in {:.0} s. Load: {:.0} views a day ({:.1} a second) for {:.0} s, \
         after {:.0} s not counted, Zipf s = 1, seed {}: {view_count} views ({:.1} a second), {write_count} writes. Handler: {}.\n",
        args.users,
        args.posts,
        written.comments,
        written.likes,
        written.took.as_secs_f64(),
        args.views_per_day,
        args.views_per_day / 86_400.0,
        args.seconds,
        args.warm_up,
        args.seed,
        view_count as f64 / took.as_secs_f64(),
        binary.display(),
    );
    println!(
        "| page kind | route | views | share | store operations per view | RU per view | RU per 1,000 views of the mix | \
         views at 0 RU (cached) | a cold view at the article's RU | article RU per view | article RU per 1,000 views of the mix |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |");
    for row in &views {
        let cold = row.kind.article();
        println!(
            "| {} | `{}` | {} | {:.1}% | {:.2} | {:.2} | {:.0} | {:.0}% | {} = {:.2} | {:.2} | {:.0} |",
            row.kind.names().0,
            row.kind.route(),
            row.count,
            percent(row.count as f64),
            row.per(row.operations),
            row.per(row.charge),
            thousand(row.charge),
            row.per(row.free as f64 * 100.0),
            cold.reads,
            cold.cold,
            row.per(row.article),
            thousand(row.article),
        );
    }
    println!(
        "| **all views** | | {view_count} | 100% | {:.2} | {:.2} | **{:.0}** | {:.0}% | {:.2} on average | {:.2} | **{:.0}** |",
        operations / view_count.max(1) as f64,
        charge / view_count.max(1) as f64,
        thousand(charge),
        percent(free as f64),
        all_cold / view_count.max(1) as f64,
        article / view_count.max(1) as f64,
        thousand(article),
    );
    println!();
    println!(
        "| write | route | writes | store operations per write | RU per write | RU per 1,000 views | the article's | \
         article RU per 1,000 views |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: | --- | ---: |");
    for row in &writes {
        let article = row.kind.article();
        println!(
            "| {} | `{}` | {} | {:.2} | {:.2} | {:.0} | {} = {:.2} | {:.0} |",
            row.kind.names().0,
            row.kind.route(),
            row.count,
            row.per(row.operations),
            row.per(row.charge),
            thousand(row.charge),
            article.reads,
            article.cold,
            thousand(row.article),
        );
    }
    println!();
    println!(
        "Views: {:.0} store operations and {:.0} RU per 1,000 views on the embedded store; at the article's RU, {:.0} per 1,000 views \
         ({:.0}% of the {:.0} `handler cost` computes; {:.0} if no view were served from a cache). Writes add {:.0} operations and \
         {:.0} RU per 1,000 views ({:.0} at the article's), their change-feed copies not counted.",
        thousand(operations),
        thousand(charge),
        thousand(article),
        thousand(article) * 100.0 / computed_ru_per_1000_views(),
        computed_ru_per_1000_views(),
        thousand(all_cold),
        thousand(write_operations),
        thousand(write_charge),
        thousand(write_article),
    );

    if let Some(path) = &args.json {
        let figures = json!({
            "bench": "readers",
            "handler": binary.display().to_string(),
            "load": {
                "views_per_day": args.views_per_day,
                "seconds": args.seconds,
                "warm_up_seconds": args.warm_up,
                "seed": args.seed,
                "users": args.users,
                "posts": args.posts,
                "comments": written.comments,
                "likes": written.likes,
                "views_per_write": args.views_per_write,
                "zipf_s": 1.0,
            },
            "views": view_count,
            "writes": write_count,
            "views_per_second": view_count as f64 / took.as_secs_f64(),
            "kinds": views.iter().map(|row| row.json(thousand, view_count)).collect::<Vec<_>>(),
            "write_kinds": writes.iter().map(|row| row.json(thousand, view_count)).collect::<Vec<_>>(),
            "per_1000_views": {
                "view_operations": thousand(operations),
                "view_ru": thousand(charge),
                "view_article_ru": thousand(article),
                "view_article_ru_all_cold": thousand(all_cold),
                "view_zero_ru_share": free as f64 / view_count.max(1) as f64,
                "write_operations": thousand(write_operations),
                "write_ru": thousand(write_charge),
                "write_article_ru": thousand(write_article),
                "computed_by_handler_cost": computed_ru_per_1000_views(),
            },
        });
        let text = serde_json::to_string_pretty(&figures).expect("figures as JSON");
        std::fs::write(path, text + "\n")
            .unwrap_or_else(|error| panic!("cannot write {}: {error}", path.display()));
        eprintln!("figures written to {}", path.display());
    }

    let errors: usize = views.iter().chain(&writes).map(|row| row.errors).sum();
    assert_eq!(errors, 0, "{errors} requests were refused or failed");
    assert!(view_count > 0, "no view in {} s at {} views a day", args.seconds, args.views_per_day);
}
