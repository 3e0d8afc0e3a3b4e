//! Search (Q8) against the number of posts: what a search of 1, 2 and 5 words costs the store,
//! what keeping the index costs the change feed, how large the index is, and how hostile
//! queries are answered. Not a test: it asserts nothing about time (BENCHMARKS.md, "Search").
//!
//!     cargo bench --bench search                                  # 1,000 and 10,000 posts
//!     cargo bench --bench search -- --posts 1000,10000,100000     # the sizes to load
//!     cargo bench --bench search -- --runs 100                    # searches of each query a size
//!     cargo bench --bench search -- --posts 10000 --queries 1,4,6 --runs 1 --warm-up 0
//!                                           # only some queries (by number in QUERIES), once each
//!     cargo bench --bench search -- --handler OTHER_BUILD         # another build, to compare
//!     cargo bench --bench search -- --posts 100000 --load import  # loaded by `handler import`
//!     cargo test --bench search -- --smoke --handler target/debug/handler   # every part once
//!
//! For each size the `handler` executable runs as a child process on an empty data directory
//! (embedded store, local change-feed processors, `BLOG_AUTH=development`), and the bench:
//!
//! 1. writes the posts through the API (C1, C2; `--in-flight` at once), or with `--load import`
//!    as an export file loaded by `handler import` before the handler starts (the index then
//!    made by the import's rebuild of the copies), seeded text in the
//!    four languages of the article's editions: a Zipf vocabulary of made-up words per language
//!    (Latin syllables for English, Spanish and German, Cyrillic for Russian), the language's
//!    own stop words between them, and marker words of known frequency ([`Marker`]);
//! 2. waits until the index has every post: the buckets' statistics in `words` (`§docs-00` to
//!    `§docs-ff`) count them and no record is pending (read from the store's SQLite file, read-only);
//! 3. measures what `PostsChangeFeed` spends on a new post, an edit of 1 and of 10 words and a
//!    comment: the RU and operations of its `delivered` log lines (the same figures
//!    `Deliveries` keeps in-process), and the items of `words` written (their `seq` moved);
//! 4. stops the handler, measures `words` in the SQLite file (items and bytes, by kind), starts
//!    it again on the same data and takes its resident memory;
//! 5. runs each query of [`QUERIES`] `--runs` times, in turn, one at a time: the handler's
//!    `x-ms-request-charge`, `x-cosmos-operations` and `x-cosmos-partitions`, the latency seen by
//!    the client, and whether the answer was `complete`;
//! 6. at the largest size, sends hostile queries and notes their status and time.
//!
//! RU on the embedded store are the SDK emulator's synthetic charges (BENCHMARKS.md, "Reading");
//! the operations are what Cosmos DB would be asked, and BENCHMARKS.md prices them.
//!
//! `--smoke` (40 posts, 2 runs, every measurement once) shows that the bench runs, not what it
//! measures (`benches/smoke.sh`, in CI).

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

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

use client::{Client, Sample, Stats, ms};
use data::Rng;

/// The command line: `cargo bench --bench search -- [--smoke] [--posts N,N] …`.
struct Args {
    posts: Vec<usize>,
    runs: usize,
    /// Rounds of every query before those measured.
    warm_up: usize,
    /// The queries of [`QUERIES`] to run, by number from 1 (all unless `--queries`).
    queries: Vec<usize>,
    /// New posts, edits and comments whose indexing is measured, each.
    changes: usize,
    in_flight: usize,
    /// Words of a post's body: at least, at most.
    body_words: (usize, usize),
    seed: u64,
    handler: Option<PathBuf>,
    /// How the posts get into the blog: through the API (C2, indexed by the change feed), or
    /// by `handler import` of a file of them (indexed by its rebuild of the copies).
    load: Load,
}

#[derive(Clone, Copy, PartialEq)]
enum Load {
    Api,
    Import,
}

impl Args {
    fn parse() -> Args {
        let mut args = Args {
            posts: vec![1_000, 10_000],
            runs: 50,
            warm_up: 1,
            queries: (1..=QUERIES.len()).collect(),
            changes: 10,
            in_flight: 8,
            body_words: (80, 240),
            seed: 42,
            handler: None,
            load: Load::Api,
        };
        let mut given = std::env::args().skip(1);
        while let Some(flag) = given.next() {
            let mut value = |name: &str| -> String {
                given.next().unwrap_or_else(|| panic!("{name} needs a value"))
            };
            let number = |name: &str, text: String| -> usize {
                text.replace('_', "")
                    .parse()
                    .unwrap_or_else(|_| panic!("{name} needs a whole number, not {text:?}"))
            };
            match flag.as_str() {
                "--bench" => {} // cargo bench passes it to every bench
                "--smoke" => {
                    args.posts = vec![40];
                    args.runs = 2;
                    args.changes = 1;
                    args.in_flight = 2;
                    args.body_words = (20, 40);
                }
                "--posts" => {
                    args.posts = value("--posts")
                        .split(',')
                        .map(|size| number("--posts", size.to_owned()))
                        .collect()
                }
                "--runs" => args.runs = number("--runs", value("--runs")).max(1),
                "--warm-up" => args.warm_up = number("--warm-up", value("--warm-up")),
                "--queries" => {
                    args.queries = value("--queries")
                        .split(',')
                        .map(|at| number("--queries", at.to_owned()).clamp(1, QUERIES.len()))
                        .collect()
                }
                "--changes" => args.changes = number("--changes", value("--changes")).max(1),
                "--in-flight" => {
                    args.in_flight = number("--in-flight", value("--in-flight")).max(1)
                }
                "--seed" => args.seed = number("--seed", value("--seed")) as u64,
                "--handler" => args.handler = Some(PathBuf::from(value("--handler"))),
                "--load" => {
                    args.load = match value("--load").as_str() {
                        "api" => Load::Api,
                        "import" => Load::Import,
                        other => panic!("--load is api or import, not {other:?}"),
                    }
                }
                "--help" | "-h" => {
                    println!(
                        "cargo bench --bench search -- [--smoke] [--posts N,N,…=1000,10000] [--runs N=50] \
                         [--warm-up N=1] [--queries 1,4,…] [--changes N=10] [--in-flight N=8] [--seed S=42] [--handler PATH] [--load api|import]"
                    );
                    std::process::exit(0);
                }
                other => panic!("unknown argument {other:?}; try --help"),
            }
        }
        args
    }
}

// ---------------------------------------------------------------------------------------------
// The text.

/// The languages of the article's editions: their share of the posts, their stop words (a few
/// of Snowball's lists, which are never indexed), and the syllables their made-up words are of.
struct Tongue {
    share: f64,
    stop: &'static [&'static str],
    syllables: &'static [&'static str],
}

const TONGUES: [Tongue; 4] = [
    Tongue {
        share: 0.4,
        stop: &["the", "and", "of", "to", "in", "is", "that", "it", "with", "as", "for", "was"],
        syllables: &[
            "ing", "ter", "ble", "con", "ment", "ly", "pro", "ness", "stor", "ward", "ship", "ful",
            "thr", "ough", "wel", "cast", "bright", "hol", "dow", "mark", "son", "field", "ton",
            "ham", "ber", "ry", "light", "stone",
        ],
    },
    Tongue {
        share: 0.2,
        stop: &["el", "la", "de", "que", "y", "en", "los", "se", "del", "las", "por", "un"],
        syllables: &[
            "ción", "mien", "to", "ra", "dad", "es", "pa", "ña", "lle", "gar", "cas", "ti", "lla",
            "mos", "ble", "ro", "car", "ván", "dón", "bri", "que", "güe", "nte", "sal",
        ],
    },
    Tongue {
        share: 0.2,
        stop: &["der", "die", "und", "in", "den", "von", "zu", "das", "mit", "sich", "des", "auf"],
        syllables: &[
            "ung", "keit", "schaft", "ver", "ge", "lich", "stra", "ße", "über", "ein", "heit",
            "wäl", "der", "bau", "zeit", "sch", "tor", "berg", "feld", "rich", "hof", "mann",
        ],
    },
    Tongue {
        share: 0.2,
        stop: &["и", "в", "не", "что", "он", "на", "я", "с", "как", "а", "то", "все"],
        syllables: &[
            "ния", "ост", "про", "ста", "ров", "ать", "ель", "ски", "мо", "ле", "ка", "вер", "дол",
            "ша", "тив", "ник", "зна", "гор", "ред", "пол", "щи", "ёж",
        ],
    },
];

/// Made-up words of each language, most frequent first.
const VOCABULARY: usize = 6_000;

/// Zipf's exponent of the words' frequencies (natural text is about 1).
const ZIPF_S: f64 = 1.0;

/// The share of a body's words that are stop words.
const STOP_SHARE: f64 = 0.3;

/// Marker words, in no vocabulary, each in a known set of posts: what the queries look for.
#[derive(Clone, Copy)]
struct Marker {
    word: &'static str,
    what: &'static str,
}

/// In [`RARE_POSTS`] posts at every size (and those posts have every other marker too).
const RARE: Marker = Marker { word: "vorpalix", what: "rare: 5 posts at every size" };
/// In one post in 50, followed by [`COMMON`] (the phrase).
const MEDIUM: Marker = Marker { word: "brindlewop", what: "medium: 2% of the posts" };
/// In 80% of the posts.
const COMMON: Marker = Marker { word: "kelmarth", what: "common: 80% of the posts" };
/// In 60% of the posts.
const COMMON2: Marker = Marker { word: "tressabin", what: "common: 60% of the posts" };
const MARKERS: [Marker; 4] = [RARE, MEDIUM, COMMON, COMMON2];
const RARE_POSTS: usize = 5;

/// The queries, each searched `--runs` times at each size: (label, words, query).
/// `{top}` is replaced by the English vocabulary's three most frequent words.
const QUERIES: [(&str, usize, &str); 9] = [
    ("rare", 1, "vorpalix"),
    ("medium", 1, "brindlewop"),
    ("common", 1, "kelmarth"),
    ("rare + common", 2, "vorpalix kelmarth"),
    ("common + common", 2, "kelmarth tressabin"),
    ("rare + medium + 3 common", 5, "vorpalix brindlewop kelmarth tressabin {top1}"),
    ("medium + 4 common", 5, "brindlewop kelmarth tressabin {top1} {top2}"),
    ("5 common", 5, "kelmarth tressabin {top1} {top2} {top3}"),
    ("phrase (medium, common)", 2, "\"brindlewop kelmarth\""),
];

/// The words of each language, and the cumulative Zipf weights to draw them by.
struct Text {
    words: Vec<Vec<String>>,
    cumulative: Vec<f64>,
}

impl Text {
    fn new(seed: u64) -> Text {
        let mut rng = Rng::new(seed ^ 0x7e47);
        let words = TONGUES
            .iter()
            .map(|tongue| {
                let mut seen = std::collections::HashSet::new();
                let mut words = Vec::with_capacity(VOCABULARY);
                while words.len() < VOCABULARY {
                    let syllables = rng.range(2, 4);
                    let word: String = (0..syllables)
                        .map(|_| tongue.syllables[rng.index(tongue.syllables.len())])
                        .collect();
                    if word.chars().count() >= 4 && seen.insert(word.clone()) {
                        words.push(word);
                    }
                }
                words
            })
            .collect();
        let mut total = 0.0;
        let cumulative = (0..VOCABULARY)
            .map(|rank| {
                total += 1.0 / ((rank + 1) as f64).powf(ZIPF_S);
                total
            })
            .collect();
        Text { words, cumulative }
    }

    fn word(&self, rng: &mut Rng, tongue: usize) -> &str {
        let total = self.cumulative[VOCABULARY - 1];
        let drawn = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * total;
        let rank = self.cumulative.partition_point(|&sum| sum < drawn).min(VOCABULARY - 1);
        &self.words[tongue][rank]
    }

    /// The `rank`th most frequent English word.
    fn top(&self, rank: usize) -> &str {
        &self.words[0][rank]
    }

    /// The post numbered `index` of a blog of `total`: always the same for the same seed.
    fn post(
        &self,
        seed: u64,
        index: usize,
        total: usize,
        body_words: (usize, usize),
    ) -> PlannedPost {
        let mut rng = Rng::new(seed.wrapping_mul(0x9E37_79B9).wrapping_add(index as u64));
        let draw = |rng: &mut Rng| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let share = draw(&mut rng);
        let mut tongue = TONGUES.len() - 1;
        let mut sum = 0.0;
        for (at, candidate) in TONGUES.iter().enumerate() {
            sum += candidate.share;
            if share < sum {
                tongue = at;
                break;
            }
        }
        let title_words = rng.range(4, 8);
        let mut title: Vec<String> =
            (0..title_words).map(|_| self.word(&mut rng, tongue).to_owned()).collect();
        if let Some(first) = title.first_mut() {
            let mut chars = first.chars();
            *first =
                chars.next().map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect());
        }
        let length = rng.range(body_words.0, body_words.1);
        let stop = TONGUES[tongue].stop;
        let mut body: Vec<String> = (0..length)
            .map(|_| {
                if draw(&mut rng) < STOP_SHARE {
                    stop[rng.index(stop.len())].to_owned()
                } else {
                    self.word(&mut rng, tongue).to_owned()
                }
            })
            .collect();
        let rare = is_rare(index, total);
        let mut markers = Vec::new();
        if rare || index % 50 == 7 {
            markers.push(format!("{} {}", MEDIUM.word, COMMON.word));
        } else if draw(&mut rng) < 0.8 {
            markers.push(COMMON.word.to_owned());
        }
        if rare {
            markers.push(RARE.word.to_owned());
        }
        if rare || draw(&mut rng) < 0.6 {
            markers.push(COMMON2.word.to_owned());
        }
        for marker in markers {
            let at = rng.index(body.len() + 1);
            body.insert(at, marker);
        }
        // Sentences of 8 to 16 words, in paragraphs of four.
        let mut content = String::new();
        let mut sentence = 0;
        let mut at = 0;
        while at < body.len() {
            let end = (at + rng.range(8, 16)).min(body.len());
            let mut words = body[at..end].join(" ");
            if let Some(first) = words.get(..1).filter(|c| c.is_ascii()) {
                words.replace_range(..1, &first.to_uppercase());
            }
            content.push_str(&words);
            content.push('.');
            sentence += 1;
            content.push_str(if sentence % 4 == 0 { "\n\n" } else { " " });
            at = end;
        }
        PlannedPost {
            title: title.join(" "),
            content: content.trim_end().to_owned(),
            tag: format!("topic-{}", index % 12),
            body,
        }
    }
}

/// Whether the post numbered `index` of `total` is one of the [`RARE_POSTS`] with [`RARE`].
fn is_rare(index: usize, total: usize) -> bool {
    let step = (total / RARE_POSTS).max(1);
    index % step == 3 % step && index / step < RARE_POSTS
}

struct PlannedPost {
    title: String,
    content: String,
    tag: String,
    /// The body's words, markers included, before they were made sentences.
    body: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// The handler, and what its change feed reports.

/// What `PostsChangeFeed`'s `delivered` lines said so far.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    lines: u64,
    items: u64,
    ru: f64,
    operations: u64,
}

impl std::ops::Sub for Tally {
    type Output = Tally;
    fn sub(self, before: Tally) -> Tally {
        Tally {
            lines: self.lines - before.lines,
            items: self.items - before.items,
            ru: self.ru - before.ru,
            operations: self.operations - before.operations,
        }
    }
}

/// A `handler` child on `data`, its log (stdout) read for `PostsChangeFeed`'s `delivered` lines.
struct Handler {
    child: Child,
    base: String,
    tally: Arc<Mutex<Tally>>,
    started: Instant,
}

impl Handler {
    fn spawn(binary: &Path, data: &Path) -> Handler {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let started = Instant::now();
        let mut child = Command::new(binary)
            .env("BLOG_DATA_DIR", data)
            .env("BLOG_LISTEN", format!("127.0.0.1:{port}"))
            // The change feed's `delivered` lines are info: only they, and warnings.
            .env("RUST_LOG", "warn,blog::changefeed=info")
            .env("BLOG_AUTH", "development")
            // The bench's users write far faster than people: no per-user limit.
            .env("BLOG_WRITES_PER_MINUTE", "off")
            .env_remove("CosmosDB")
            .env_remove("CosmosDB__accountEndpoint")
            .env_remove("FUNCTIONS_CUSTOMHANDLER_PORT")
            .env_remove("BLOG_CHANGE_FEED")
            .env_remove("BLOG_SCRIPTS")
            // The handler's log lines go to stdout (as the Functions host reads them).
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the handler starts");
        let tally = Arc::new(Mutex::new(Tally::default()));
        let stdout = child.stdout.take().expect("the handler's stdout");
        let kept = tally.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                match delivered(&line) {
                    Some(Some(delivery)) => {
                        let mut tally = kept.lock().unwrap();
                        tally.lines += 1;
                        tally.items += delivery.items;
                        tally.ru += delivery.ru;
                        tally.operations += delivery.operations;
                    }
                    // Another function's delivery, or the minute's lag line.
                    Some(None) => {}
                    None if line.contains("blog::changefeed") && line.contains(" INFO ") => {}
                    None => eprintln!("handler: {line}"),
                }
            }
        });
        Handler { child, base: format!("http://127.0.0.1:{port}"), tally, started }
    }

    fn tally(&self) -> Tally {
        *self.tally.lock().unwrap()
    }

    fn rss_kib(&self) -> Option<u64> {
        process::status_field(self.child.id(), "VmRSS:")
    }

    fn peak_rss_kib(&self) -> Option<u64> {
        process::status_field(self.child.id(), "VmHWM:")
    }

    /// Stops it as the host would (SIGTERM: requests and deliveries under way are finished),
    /// and waits for it.
    fn stop(mut self) {
        // Our own child, by its pid.
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Handler {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

struct Delivery {
    items: u64,
    ru: f64,
    operations: u64,
}

/// A `delivered` line's figures: `Some(Some(_))` for `PostsChangeFeed`'s, `Some(None)` for
/// another function's, `None` for any other line.
fn delivered(line: &str) -> Option<Option<Delivery>> {
    if !line.contains(" delivered ") && !line.ends_with(" delivered") {
        return None;
    }
    let field = |name: &str| {
        line.split_whitespace()
            .find_map(|part| part.strip_prefix(name)?.strip_prefix('='))
            .map(|value| value.trim_matches('"').to_owned())
    };
    let function = field("function")?;
    if function != "PostsChangeFeed" {
        return Some(None);
    }
    Some(Some(Delivery {
        items: field("count")?.parse().ok()?,
        ru: field("ru")?.parse().ok()?,
        operations: field("operations")?.parse().ok()?,
    }))
}

// ---------------------------------------------------------------------------------------------
// The store's file, read-only.

/// A key of `words`: its name, df, whether its postings are in chunks, its items and bytes.
type KeyFigures = (String, u64, bool, u64, u64);

/// The embedded store's SQLite file: what the index holds, read beside the handler.
struct Database(rusqlite::Connection);

impl Database {
    fn open(data: &Path) -> Database {
        let flags =
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = rusqlite::Connection::open_with_flags(data.join("blog.sqlite"), flags)
            .expect("the store's SQLite file opens read-only");
        connection.busy_timeout(Duration::from_secs(10)).unwrap();
        Database(connection)
    }

    /// The posts the index's buckets count, and the records still pending.
    fn indexed(&self) -> (u64, u64) {
        let posts = self
            .0
            .query_row(
                "SELECT sum(json_extract(doc, '$.posts')) FROM items \
                 WHERE container = 'words' AND pk LIKE '§docs-%' AND id = '§stats'",
                [],
                |row| row.get::<_, Option<i64>>(0),
            )
            .unwrap_or(None)
            .unwrap_or(0);
        let pending: i64 = self
            .0
            .query_row(
                "SELECT count(*) FROM items WHERE container = 'words' AND pk LIKE '§docs-%' \
                 AND json_extract(doc, '$.pending') = 1",
                [],
                |row| row.get(0),
            )
            .unwrap();
        (posts as u64, pending as u64)
    }

    /// The highest write number in the store.
    fn last_seq(&self) -> i64 {
        self.0.query_row("SELECT coalesce(max(seq), 0) FROM items", [], |row| row.get(0)).unwrap()
    }

    /// Items of `words` written (created or replaced) after `seq`, and their bytes.
    fn words_written_after(&self, seq: i64) -> (u64, u64) {
        self.0
            .query_row(
                "SELECT count(*), coalesce(sum(length(CAST(doc AS BLOB))), 0) FROM items \
                 WHERE container = 'words' AND seq > ?1",
                [seq],
                |row| Ok((row.get::<_, i64>(0)? as u64, row.get::<_, i64>(1)? as u64)),
            )
            .unwrap()
    }

    /// `words` by kind of item: (kind, items, bytes of their JSON).
    fn words_by_kind(&self) -> Vec<(String, u64, u64)> {
        let mut statement = self
            .0
            .prepare(
                "SELECT coalesce(json_extract(doc, '$.type'), '?'), count(*), \
                 sum(length(CAST(doc AS BLOB))) FROM items WHERE container = 'words' \
                 GROUP BY 1 ORDER BY 3 DESC",
            )
            .unwrap();
        statement
            .query_map([], |row| {
                Ok((row.get(0)?, row.get::<_, i64>(1)? as u64, row.get::<_, i64>(2)? as u64))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    /// Items and bytes of every container, for the share `words` has.
    fn all_items(&self) -> (u64, u64) {
        self.0
            .query_row(
                "SELECT count(*), coalesce(sum(length(CAST(doc AS BLOB))), 0) FROM items",
                [],
                |row| Ok((row.get::<_, i64>(0)? as u64, row.get::<_, i64>(1)? as u64)),
            )
            .unwrap()
    }

    /// The keys of `word` in the index (its stems), each with its df, whether its postings are
    /// in chunks, and its items and bytes.
    fn word(&self, word: &str) -> Vec<KeyFigures> {
        let prefix: String = word.chars().take(6).collect();
        let mut statement = self
            .0
            .prepare(
                "SELECT pk, max(json_extract(doc, '$.df')), max(json_extract(doc, '$.spilled')), \
                 count(*), sum(length(CAST(doc AS BLOB))) FROM items \
                 WHERE container = 'words' AND substr(pk, 1, length(?1)) = ?1 GROUP BY pk",
            )
            .unwrap();
        statement
            .query_map([prefix], |row| {
                Ok((
                    row.get(0)?,
                    row.get::<_, Option<i64>>(1)?.unwrap_or(0) as u64,
                    row.get::<_, Option<i64>>(2)?.unwrap_or(0) == 1,
                    row.get::<_, i64>(3)? as u64,
                    row.get::<_, i64>(4)? as u64,
                ))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// The run.

// The setting made before any thread starts is an `unsafe` call (see it).
#[allow(unsafe_code)]
fn main() {
    // SAFETY: the first statement of `main`: no runtime and no other thread exist yet.
    unsafe { blog::quiet_library_backtraces() };
    tokio::runtime::Runtime::new().expect("a Tokio runtime").block_on(run());
}

async fn run() {
    let args = Args::parse();
    let binary = match &args.handler {
        Some(path) => path.clone(),
        None => process::handler_binary().unwrap_or_else(|error| panic!("{error}")),
    };
    let text = Text::new(args.seed);
    println!("# Search (`cargo bench --bench search`)\n");
    println!("{}", process::machine(&binary));
    println!(
        "posts: {} (seed {}), bodies of {}–{} words ({:.0}% stop words) in en/es/de/ru \
         {:.0}/{:.0}/{:.0}/{:.0}%, a Zipf vocabulary (s = {ZIPF_S}) of {VOCABULARY} made-up \
         words per language, one tag of 12; searches: {} runs of each query\n",
        args.posts.iter().map(|n| grouped(*n as f64)).collect::<Vec<_>>().join(", "),
        args.seed,
        args.body_words.0,
        args.body_words.1,
        STOP_SHARE * 100.0,
        TONGUES[0].share * 100.0,
        TONGUES[1].share * 100.0,
        TONGUES[2].share * 100.0,
        TONGUES[3].share * 100.0,
        args.runs,
    );
    for marker in MARKERS {
        println!("- marker `{}`: {}", marker.word, marker.what);
    }
    println!(
        "- `{{top1}}`, `{{top2}}`, `{{top3}}`: the English vocabulary's most frequent words, \
         `{}`, `{}`, `{}`\n",
        text.top(0),
        text.top(1),
        text.top(2)
    );
    let mut sizes = Vec::new();
    let largest = args.posts.iter().copied().max().unwrap_or(0);
    for &posts in &args.posts {
        sizes.push(measure_size(&args, &binary, &text, posts, posts == largest).await);
    }
    print_searches(&sizes);
    print_indexing(&sizes);
    print_index_size(&sizes);
    for size in &sizes {
        if !size.hostile.is_empty() {
            print_hostile(size);
        }
    }
}

/// What one size measured.
struct Size {
    posts: usize,
    /// What `handler import` took, when the posts came that way (`--load import`).
    imported: Option<Imported>,
    load_s: f64,
    index_wait_s: f64,
    load_tally: Tally,
    changes: Vec<(&'static str, Change)>,
    words_by_kind: Vec<(String, u64, u64)>,
    all_items: (u64, u64),
    file_bytes: u64,
    markers: Vec<(&'static str, Vec<KeyFigures>)>,
    restart_ms: f64,
    rss_restart_kib: Option<u64>,
    rss_after_kib: Option<u64>,
    peak_rss_kib: Option<u64>,
    searches: Vec<Searched>,
    hostile: Vec<Hostile>,
}

/// A kind of change, measured `--changes` times: what `PostsChangeFeed` spent on each, and what
/// it wrote in `words`.
#[derive(Default)]
struct Change {
    count: u64,
    tally: Tally,
    words_items: u64,
    words_bytes: u64,
    /// The fewest and most operations one took.
    operations: (u64, u64),
    /// The fewest and most items of `words` one wrote.
    items: (u64, u64),
}

struct Searched {
    label: &'static str,
    words: usize,
    query: String,
    stats: Stats,
    /// `x-cosmos-queries`: how many of the operations were queries (the rest point reads).
    queries: (u64, u64),
    ru: (f64, f64),
    complete: usize,
    found: usize,
    more: bool,
}

struct Hostile {
    what: &'static str,
    bytes: usize,
    status: String,
    ms: f64,
    said: String,
}

async fn measure_size(
    args: &Args,
    binary: &Path,
    text: &Text,
    posts: usize,
    hostile: bool,
) -> Size {
    let data = tempfile::tempdir().expect("a temporary directory");
    let imported =
        (args.load == Load::Import).then(|| import_posts(args, binary, text, posts, data.path()));
    let handler = Handler::spawn(binary, data.path());
    process::first_answer(&handler.base, handler.started).await;
    // A search whose candidates' query is slow on the embedded store may take minutes.
    let client = Client::with_timeout(handler.base.clone(), Duration::from_secs(900));
    let db = Database::open(data.path());

    let (users, ids, load_s) = match &imported {
        Some(imported) => (imported.users.clone(), imported.ids.clone(), imported.seconds),
        None => load_through_api(args, &client, text, posts).await,
    };
    let written = Instant::now();
    loop {
        let (indexed, pending) = db.indexed();
        if indexed as usize >= posts && pending == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let index_wait_s = written.elapsed().as_secs_f64();
    settle(&handler).await;
    let load_tally = handler.tally();
    eprintln!(
        "search bench: {posts} posts written in {load_s:.0} s, indexed {index_wait_s:.0} s later"
    );

    // What the change feed spends on each kind of change.
    let mut changes = Vec::new();
    let mut rng = Rng::new(args.seed ^ posts as u64);
    let mut new_post = Change::default();
    for n in 0..args.changes {
        let planned = text.post(args.seed ^ 0xfeed, n, posts, args.body_words);
        let user = &users[n % users.len()];
        let body = json!({
            "userId": user, "title": planned.title, "content": planned.content, "tags": [planned.tag],
        });
        measure_change(&handler, &db, &mut new_post, || async {
            let answer = client.post(user, "/api/posts", &body).await;
            assert!(answer.ok(), "C2: {} {}", answer.sample.status, answer.body);
        })
        .await;
    }
    changes.push(("a new post (C2)", new_post));
    for (label, edited) in [("an edit of 1 word", 1), ("an edit of 10 words", 10)] {
        let mut change = Change::default();
        for n in 0..args.changes {
            let index = rng.index(posts);
            let mut planned = text.post(args.seed, index, posts, args.body_words);
            // Words of the body replaced by new ones, one place each (stop words and markers
            // left as they are, so that the queries find the same posts).
            let places: Vec<usize> = (0..planned.body.len())
                .filter(|&at| {
                    let word = &planned.body[at];
                    !TONGUES.iter().any(|tongue| tongue.stop.contains(&word.as_str()))
                        && !MARKERS.iter().any(|marker| word.contains(marker.word))
                })
                .collect();
            let mut content = planned.content.clone();
            for k in 0..edited.min(places.len()) {
                let old = planned.body[places[k * places.len() / edited]].clone();
                let new = format!("edit{n}w{k}x{}", posts);
                content = replace_word(&content, &old, &new);
                planned.body[places[k * places.len() / edited]] = new;
            }
            let user = &users[index % users.len()];
            let body = json!({ "title": planned.title, "content": content });
            let path = format!("/api/posts/{}", ids[index]);
            measure_change(&handler, &db, &mut change, || async {
                let answer = client.put(user, &path, &body).await;
                assert!(answer.ok(), "C2 edit: {} {}", answer.sample.status, answer.body);
            })
            .await;
        }
        changes.push((label, change));
    }
    let mut comment = Change::default();
    for n in 0..args.changes {
        let index = rng.index(posts);
        let user = &users[n % users.len()];
        let path = format!("/api/posts/{}/comments", ids[index]);
        let body = json!({ "userId": user, "content": format!("A comment, number {n}.") });
        measure_change(&handler, &db, &mut comment, || async {
            let answer = client.post(user, &path, &body).await;
            assert!(answer.ok(), "C3: {} {}", answer.sample.status, answer.body);
        })
        .await;
    }
    changes.push(("a comment (C3)", comment));

    // The index's size, the handler stopped; then its memory started again on the same data.
    handler.stop();
    let words_by_kind = db.words_by_kind();
    let all_items = db.all_items();
    let markers = MARKERS.iter().map(|marker| (marker.word, db.word(marker.word))).collect();
    drop(db);
    let file_bytes = ["blog.sqlite", "blog.sqlite-wal"]
        .iter()
        .filter_map(|name| std::fs::metadata(data.path().join(name)).ok())
        .map(|meta| meta.len())
        .sum();
    let handler = Handler::spawn(binary, data.path());
    let restart_ms = ms(process::first_answer(&handler.base, handler.started).await);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_restart_kib = handler.rss_kib();
    // A search whose candidates' query is slow on the embedded store may take minutes.
    let client = Client::with_timeout(handler.base.clone(), Duration::from_secs(900));

    // The searches: every query in turn, `runs` rounds, after `warm_up` rounds unmeasured.
    let queries: Vec<(&'static str, usize, String)> = args
        .queries
        .iter()
        .map(|at| QUERIES[at - 1])
        .map(|(label, words, query)| {
            let query = query
                .replace("{top1}", text.top(0))
                .replace("{top2}", text.top(1))
                .replace("{top3}", text.top(2));
            (label, words, query)
        })
        .collect();
    let mut samples: Vec<Vec<(Sample, Value)>> = vec![Vec::new(); queries.len()];
    for round in 0..args.runs + args.warm_up {
        for (at, (_, _, query)) in queries.iter().enumerate() {
            let answer = client.get(&search_path(query)).await;
            assert!(answer.ok(), "Q8 {query:?}: {} {}", answer.sample.status, answer.body);
            if round >= args.warm_up {
                samples[at].push((answer.sample, answer.body));
            }
        }
    }
    let searches = queries
        .into_iter()
        .zip(samples)
        .map(|((label, words, query), samples)| {
            let plain: Vec<Sample> = samples.iter().map(|(sample, _)| sample.clone()).collect();
            let charges = plain.iter().map(|sample| sample.charge);
            let last = &samples.last().unwrap().1;
            Searched {
                label,
                words,
                query,
                stats: Stats::of(&plain),
                queries: plain
                    .iter()
                    .map(|sample| sample.queries.unwrap_or(0))
                    .fold((u64::MAX, 0), |(low, high), queries| {
                        (low.min(queries), high.max(queries))
                    }),
                ru: charges.fold((f64::MAX, 0.0f64), |(low, high), ru| (low.min(ru), high.max(ru))),
                complete: samples.iter().filter(|(_, body)| body["complete"] == true).count(),
                found: last["items"].as_array().map_or(0, Vec::len),
                more: !last["continuationToken"].is_null(),
            }
        })
        .collect();
    let hostile = if hostile { hostile_queries(&handler.base).await } else { Vec::new() };
    let rss_after_kib = handler.rss_kib();
    let peak_rss_kib = handler.peak_rss_kib();
    handler.stop();
    Size {
        posts,
        imported,
        load_s,
        index_wait_s,
        load_tally,
        changes,
        words_by_kind,
        all_items,
        file_bytes,
        markers,
        restart_ms,
        rss_restart_kib,
        rss_after_kib,
        peak_rss_kib,
        searches,
        hostile,
    }
}

/// What `handler import` of the posts took (`--load import`).
struct Imported {
    users: Vec<String>,
    ids: Vec<String>,
    /// The file's bytes.
    file_bytes: u64,
    /// The whole import: checked, written, the copies and the index made.
    seconds: f64,
    /// Of it, the copies and the index (from its first progress line saying so: to 10 s).
    copies_s: Option<f64>,
    peak_rss_kib: Option<u64>,
}

/// Writes the users and the posts as an export file (the format `src/transfer/mod.rs` says,
/// as `transfer::export` writes it: a header, a user a line, a post a line, the last line with
/// the counts and the SHA-256 of every byte before it), then runs `handler import` of it on
/// `data`. The posts are the same as the API would have been given, with made ids and dates.
fn import_posts(args: &Args, binary: &Path, text: &Text, posts: usize, data: &Path) -> Imported {
    use sha2::{Digest, Sha256};
    use std::io::Write;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("posts.jsonl");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut digest = Sha256::new();
    let mut line = |value: &Value, file: &mut std::io::BufWriter<std::fs::File>| {
        let raw = format!("{value}\n");
        digest.update(raw.as_bytes());
        file.write_all(raw.as_bytes()).unwrap();
    };
    line(&json!({ "format": "cosmos-blog", "version": 2 }), &mut file);
    let users: Vec<String> =
        (0..(posts / 100).clamp(2, 100)).map(|u| format!("writer{u}")).collect();
    for user in &users {
        line(&json!({ "id": user, "type": "user", "userId": user, "username": user }), &mut file);
    }
    let mut ids = Vec::with_capacity(posts);
    for index in 0..posts {
        let planned = text.post(args.seed, index, posts, args.body_words);
        let user = &users[index % users.len()];
        let id = format!("bench-post-{index:07}");
        // An hour apart from the first of January, 2010, the newest last (as written): a
        // blog's years, some 700 posts a month (the sitemap keeps a partition a month, and a
        // month of tens of thousands would make the emulator copy it for every entry).
        let hours = index as u64;
        let month = hours / (28 * 24);
        let date = format!(
            "{}-{:02}-{:02}T{:02}:00:00.000Z",
            2010 + month / 12,
            1 + month % 12,
            1 + hours / 24 % 28,
            hours % 24
        );
        let post = json!({
            "id": id, "type": "post", "postId": id, "userId": user, "userUsername": user,
            "title": planned.title, "content": planned.content, "tags": [planned.tag],
            "commentCount": 0, "likeCount": 0, "creationDate": date,
        });
        line(&post, &mut file);
        ids.push(id);
    }
    let sha256: String = digest.finalize().iter().map(|byte| format!("{byte:02x}")).collect();
    let end = json!({ "format": "cosmos-blog", "end": {
        "users": users.len(), "posts": posts, "comments": 0, "likes": 0, "pictures": 0, "sha256": sha256,
    }});
    writeln!(file, "{end}").unwrap();
    file.into_inner().unwrap().sync_all().unwrap();
    let file_bytes = std::fs::metadata(&path).unwrap().len();
    eprintln!("search bench: {posts} posts: {file_bytes} bytes to import");

    let started = Instant::now();
    let mut child = Command::new(binary)
        .arg("import")
        .arg(&path)
        .env("BLOG_DATA_DIR", data)
        .env("RUST_LOG", "warn")
        .env_remove("CosmosDB")
        .env_remove("CosmosDB__accountEndpoint")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("handler import starts");
    let pid = child.id();
    let copies_from = Arc::new(Mutex::new(None::<f64>));
    let stderr = child.stderr.take().unwrap();
    let seen = copies_from.clone();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if line.contains("making the copies") {
                seen.lock().unwrap().get_or_insert(started.elapsed().as_secs_f64());
            }
            eprintln!("handler: {line}");
        }
    });
    let mut peak_rss_kib = None;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        peak_rss_kib = process::status_field(pid, "VmHWM:").or(peak_rss_kib);
        std::thread::sleep(Duration::from_millis(500));
    };
    reader.join().unwrap();
    assert!(status.success(), "handler import failed: {status}");
    let seconds = started.elapsed().as_secs_f64();
    let copies_s = copies_from.lock().unwrap().map(|from| seconds - from);
    Imported { users, ids, file_bytes, seconds, copies_s, peak_rss_kib }
}

/// Users (C1), then the posts (C2), `--in-flight` at once: the users' ids, the posts' ids,
/// and the seconds the posts took.
async fn load_through_api(
    args: &Args,
    client: &Client,
    text: &Text,
    posts: usize,
) -> (Vec<String>, Vec<String>, f64) {
    let users: Vec<String> = {
        let mut ids = Vec::new();
        for u in 0..(posts / 100).clamp(2, 100) {
            let name = format!("writer{u}");
            let answer = client.post(&name, "/api/users", &json!({ "username": name })).await;
            assert!(answer.ok(), "C1: {} {}", answer.sample.status, answer.body);
            ids.push(answer.id());
        }
        ids
    };
    let started = Instant::now();
    let progress_every = (posts / 10).max(1);
    let ids: Vec<String> = futures::stream::iter(0..posts)
        .map(|index| {
            let (client, users) = (client.clone(), &users);
            async move {
                let planned = text.post(args.seed, index, posts, args.body_words);
                let user = &users[index % users.len()];
                let body = json!({
                    "userId": user,
                    "title": planned.title,
                    "content": planned.content,
                    "tags": [planned.tag],
                });
                let answer = client.post(user, "/api/posts", &body).await;
                assert!(answer.ok(), "C2: {} {}", answer.sample.status, answer.body);
                if (index + 1) % progress_every == 0 {
                    eprintln!("search bench: {posts} posts: {} written", index + 1);
                }
                answer.id()
            }
        })
        .buffered(args.in_flight)
        .collect()
        .await;
    (users, ids, started.elapsed().as_secs_f64())
}

/// `old` replaced by `new` where it is a whole word, once.
fn replace_word(text: &str, old: &str, new: &str) -> String {
    let mut from = 0;
    while let Some(found) = text[from..].find(old) {
        let start = from + found;
        let end = start + old.len();
        let before = text[..start].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        let after = text[end..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        if before && after {
            return format!("{}{new}{}", &text[..start], &text[end..]);
        }
        from = end;
    }
    // Capitalised at a sentence's start.
    let mut upper = old.chars();
    let capital: String =
        upper.next().map_or_else(String::new, |c| c.to_uppercase().chain(upper).collect());
    if capital != old && text.contains(&capital) {
        return replace_word(text, &capital, new);
    }
    panic!("{old:?} is not a word of the post")
}

/// Makes one change and waits until `PostsChangeFeed` has delivered it and gone quiet: what it
/// spent, and what it wrote in `words`, added to `change`.
async fn measure_change<F, Fut>(handler: &Handler, db: &Database, change: &mut Change, make: F)
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    settle(handler).await;
    let (before, seq) = (handler.tally(), db.last_seq());
    make().await;
    let deadline = Instant::now() + Duration::from_secs(120);
    while handler.tally().items == before.items {
        assert!(Instant::now() < deadline, "PostsChangeFeed delivered nothing in 120 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    settle(handler).await;
    let spent = handler.tally() - before;
    let (items, bytes) = db.words_written_after(seq);
    let first = change.count == 0;
    change.count += 1;
    change.tally.lines += spent.lines;
    change.tally.items += spent.items;
    change.tally.ru += spent.ru;
    change.tally.operations += spent.operations;
    change.words_items += items;
    change.words_bytes += bytes;
    change.operations = if first {
        (spent.operations, spent.operations)
    } else {
        (change.operations.0.min(spent.operations), change.operations.1.max(spent.operations))
    };
    change.items =
        if first { (items, items) } else { (change.items.0.min(items), change.items.1.max(items)) };
}

/// Waits until no `delivered` line has come for 1.5 s (the local processors poll each second
/// when no write wakes them).
async fn settle(handler: &Handler) {
    let mut last = handler.tally().lines;
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < Duration::from_millis(1_500) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = handler.tally().lines;
        if now != last {
            last = now;
            quiet_since = Instant::now();
        }
    }
}

fn search_path(query: &str) -> String {
    format!("/api/search?q={}", encode(query))
}

/// Percent-encodes everything but ASCII letters and digits.
fn encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// Queries no reader should send: each once, its status, time and what it said.
async fn hostile_queries(base: &str) -> Vec<Hostile> {
    let thousand: Vec<String> = (0..1_000).map(|n| format!("w{n}")).collect();
    let megabyte = "a".repeat(1 << 20);
    let cases: Vec<(&'static str, String)> = vec![
        ("1,000 words", encode(&thousand.join(" "))),
        ("1 MB of one letter", megabyte),
        ("only stop words", encode("the and of der und y")),
        ("only punctuation", encode("!!! ??? ... ;;; ---")),
        ("Cosmos DB SQL", encode("SELECT * FROM c WHERE 1=1")),
        ("a wildcard", encode("kel*")),
        ("a control character", encode("kel\u{1}marth")),
        ("look-alike letters (Cyrillic е)", encode("k\u{435}lmarth")),
        ("9 different words", encode("aa bb cc dd ee ff gg hh ii")),
    ];
    let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let mut out = Vec::new();
    for (what, encoded) in cases {
        let url = format!("{base}/api/search?q={encoded}");
        let started = Instant::now();
        if url.len() > 60_000 {
            // Longer than any client library sends (reqwest refuses it): written by hand.
            let (status, said) = raw_get(base, &url[base.len()..]).await;
            out.push(Hostile {
                what,
                bytes: url.len() - base.len(),
                status,
                ms: ms(started.elapsed()),
                said,
            });
            continue;
        }
        let (status, said) = match http.get(&url).send().await {
            Ok(response) => {
                let status = response.status().as_u16().to_string();
                let body: Value = response.json().await.unwrap_or(Value::Null);
                let said = body["detail"]
                    .as_str()
                    .or(body["title"].as_str())
                    .map(str::to_owned)
                    .or_else(|| {
                        body["items"].as_array().map(|items| format!("{} results", items.len()))
                    })
                    .unwrap_or_default();
                (status, said)
            }
            Err(error) => ("no answer".to_owned(), error.to_string()),
        };
        out.push(Hostile {
            what,
            bytes: url.len() - base.len(),
            status,
            ms: ms(started.elapsed()),
            said,
        });
    }
    out
}

/// `GET path` on a connection of its own: the status line's code and reason, or what became
/// of the connection.
async fn raw_get(base: &str, path: &str) -> (String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    // The server may answer and close before it has read the whole request.
    let written = stream.write_all(request.as_bytes()).await;
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut answer)).await;
    let head = String::from_utf8_lossy(&answer);
    match head.lines().next().and_then(|line| line.split_once(' ')) {
        Some((_, status)) => {
            let (code, reason) = status.split_once(' ').unwrap_or((status, ""));
            let sent = if written.is_ok() { "sent whole" } else { "cut off by the server" };
            (code.to_owned(), format!("{reason} (the request {sent})"))
        }
        None => ("no answer".to_owned(), format!("{written:?} {read:?}")),
    }
}

// ---------------------------------------------------------------------------------------------
// The figures.

fn print_searches(sizes: &[Size]) {
    println!("## Q8 per query and number of posts\n");
    println!(
        "Each query {} times in turn, one at a time, on the handler started again on the loaded data. \
         RU: `x-ms-request-charge` (the emulator's synthetic charges); operations: `x-cosmos-operations`; \
         found: results on the first page (10 at most) and whether a next page was offered.\n",
        sizes.first().map_or(0, |size| size.searches.first().map_or(0, |s| s.stats.count))
    );
    println!(
        "| query | words | posts | RU | operations | of them queries | partitions | p50 ms | p99 ms | complete | found |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |");
    let queries = sizes.first().map_or(0, |size| size.searches.len());
    for at in 0..queries {
        for size in sizes {
            let searched = &size.searches[at];
            let ru = if (searched.ru.1 - searched.ru.0).abs() < 0.005 {
                format!("{:.2}", searched.ru.0)
            } else {
                format!("{:.2}–{:.2}", searched.ru.0, searched.ru.1)
            };
            println!(
                "| {} `{}` | {} | {} | {ru} | {} | {} | {} | {:.1} | {:.1} | {}/{} | {}{} |",
                searched.label,
                searched.query,
                searched.words,
                grouped(size.posts as f64),
                searched.stats.operations_text(),
                if searched.queries.0 == searched.queries.1 {
                    searched.queries.0.to_string()
                } else {
                    format!("{}–{}", searched.queries.0, searched.queries.1)
                },
                searched.stats.partitions_text(),
                searched.stats.p50_ms,
                searched.stats.p99_ms,
                searched.complete,
                searched.stats.count,
                searched.found,
                if searched.more { " +" } else { "" },
            );
        }
    }
    println!();
}

fn print_indexing(sizes: &[Size]) {
    println!("## What `PostsChangeFeed` spends per change\n");
    println!(
        "Its `delivered` lines' RU and operations (the copies in `users`, `feed`, `tags`, the sitemap, \
         the change log and the index together), and the items of `words` the change wrote (created or \
         replaced: a delete is not counted). Per change, the mean of each kind's runs (min–max).\n"
    );
    println!(
        "| posts | change | runs | RU | operations | items of `words` written | their bytes |"
    );
    println!("| ---: | --- | ---: | ---: | ---: | ---: | ---: |");
    for size in sizes {
        let n = size.posts.max(1) as f64;
        println!(
            "| {} | loading (mean per post, in batches) | {} | {:.1} | {:.1} | | |",
            grouped(size.posts as f64),
            size.posts,
            size.load_tally.ru / n,
            size.load_tally.operations as f64 / n,
        );
        for (label, change) in &size.changes {
            let count = change.count.max(1) as f64;
            println!(
                "| {} | {label} | {} | {:.1} | {:.1} ({}–{}) | {:.1} ({}–{}) | {} |",
                grouped(size.posts as f64),
                change.count,
                change.tally.ru / count,
                change.tally.operations as f64 / count,
                change.operations.0,
                change.operations.1,
                change.words_items as f64 / count,
                change.items.0,
                change.items.1,
                grouped(change.words_bytes as f64 / count),
            );
        }
    }
    println!();
    for size in sizes {
        match &size.imported {
            None => println!(
                "- {} posts: written through the API in {:.0} s ({:.0} posts/s, --in-flight at once), indexed {:.0} s after the last write; \
                 restart to the first answer {:.0} ms",
                grouped(size.posts as f64),
                size.load_s,
                size.posts as f64 / size.load_s,
                size.index_wait_s,
                size.restart_ms,
            ),
            Some(imported) => println!(
                "- {} posts: `handler import` of a {:.1} MB file in {:.0} s ({:.0} posts/s), of which the copies and \
                 the index {}; its peak RSS {}; indexed {:.0} s after it; restart to the first answer {:.0} ms",
                grouped(size.posts as f64),
                imported.file_bytes as f64 / 1e6,
                imported.seconds,
                size.posts as f64 / imported.seconds,
                imported
                    .copies_s
                    .map_or_else(|| "(not seen)".to_owned(), |s| format!("{s:.0} s (± 10 s)")),
                imported.peak_rss_kib.map_or_else(
                    || "?".to_owned(),
                    |kib| format!("{:.0} MiB", kib as f64 / 1024.0)
                ),
                size.index_wait_s,
                size.restart_ms,
            ),
        }
    }
    println!();
}

fn print_index_size(sizes: &[Size]) {
    println!("## The index's size\n");
    println!(
        "Items of `words` in the store's SQLite file, their JSON's bytes, by kind; per post indexed. \
         `blog.sqlite` holds every container (with its B-tree's own overhead); RSS is the handler's \
         `VmRSS` 2 s after it was started again on the data (the embedded store holds every item in memory), \
         after the searches, and its peak.\n"
    );
    println!(
        "| posts | kind | items | bytes | items per post | bytes per post |\n| ---: | --- | ---: | ---: | ---: | ---: |"
    );
    for size in sizes {
        let n = (size.posts + size.changes.first().map_or(0, |c| c.1.count as usize)) as f64;
        let mut total = (0, 0);
        for (kind, items, bytes) in &size.words_by_kind {
            total = (total.0 + items, total.1 + bytes);
            println!(
                "| {} | {kind} | {} | {} | {:.2} | {} |",
                grouped(size.posts as f64),
                grouped(*items as f64),
                grouped(*bytes as f64),
                *items as f64 / n,
                grouped(*bytes as f64 / n),
            );
        }
        println!(
            "| {} | **all of `words`** | {} | {} | {:.2} | {} |",
            grouped(size.posts as f64),
            grouped(total.0 as f64),
            grouped(total.1 as f64),
            total.0 as f64 / n,
            grouped(total.1 as f64 / n),
        );
        println!(
            "| {} | every container | {} | {} | | |",
            grouped(size.posts as f64),
            grouped(size.all_items.0 as f64),
            grouped(size.all_items.1 as f64),
        );
    }
    println!();
    println!(
        "| posts | blog.sqlite (+ WAL) | RSS after restart | RSS after the searches | peak RSS |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: |");
    let mib = |kib: Option<u64>| {
        kib.map_or("–".to_owned(), |kib| format!("{:.0} MiB", kib as f64 / 1024.0))
    };
    for size in sizes {
        println!(
            "| {} | {:.1} MB | {} | {} | {} |",
            grouped(size.posts as f64),
            size.file_bytes as f64 / 1e6,
            mib(size.rss_restart_kib),
            mib(size.rss_after_kib),
            mib(size.peak_rss_kib),
        );
    }
    println!();
    println!(
        "The markers' keys in `words` (a Latin query word is searched under its English, Spanish and German stems):\n"
    );
    println!(
        "| posts | marker | key | df | in chunks | items | bytes |\n| ---: | --- | --- | ---: | --- | ---: | ---: |"
    );
    for size in sizes {
        for (word, keys) in &size.markers {
            for (key, df, spilled, items, bytes) in keys {
                println!(
                    "| {} | `{word}` | `{key}` | {} | {} | {} | {} |",
                    grouped(size.posts as f64),
                    grouped(*df as f64),
                    if *spilled { "yes" } else { "no" },
                    items,
                    grouped(*bytes as f64),
                );
            }
        }
    }
    println!();
}

fn print_hostile(size: &Size) {
    println!("## Hostile queries ({} posts)\n", grouped(size.posts as f64));
    println!(
        "| query | bytes of the path | status | ms | what it said |\n| --- | ---: | --- | ---: | --- |"
    );
    for hostile in &size.hostile {
        let said: String = hostile.said.chars().take(120).collect();
        println!(
            "| {} | {} | {} | {:.1} | {} |",
            hostile.what,
            grouped(hostile.bytes as f64),
            hostile.status,
            hostile.ms,
            said.replace('|', "\\|"),
        );
    }
    println!();
}

/// `12345.6` as `12,346`.
fn grouped(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}
