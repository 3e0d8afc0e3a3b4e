//! The data set: the article's shape (users with 5–50 posts, each post 0–25 comments and 0–100
//! likes by distinct users), realistic text sizes, and deterministic from a seed.
//!
//! Only the plan is deterministic: ids and `creationDate` are set by the server when the plan is
//! loaded through the API.

/// A small, seeded pseudo-random generator (SplitMix64): no dependency, same stream everywhere.
#[derive(Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `low..=high`.
    pub(crate) fn range(&mut self, low: usize, high: usize) -> usize {
        low + (self.next_u64() % (high - low + 1) as u64) as usize
    }

    /// An index into a collection of `len` items.
    pub(crate) fn index(&mut self, len: usize) -> usize {
        self.range(0, len - 1)
    }

    /// `count` distinct numbers from `0..len` (a partial Fisher–Yates shuffle).
    pub(crate) fn distinct(&mut self, count: usize, len: usize) -> Vec<usize> {
        let mut pool: Vec<usize> = (0..len).collect();
        for i in 0..count.min(len) {
            let j = self.range(i, len - 1);
            pool.swap(i, j);
        }
        pool.truncate(count.min(len));
        pool
    }
}

/// The article's bounds.
pub(crate) const POSTS_PER_USER: (usize, usize) = (5, 50);
pub(crate) const MAX_COMMENTS_PER_POST: usize = 25;
pub(crate) const MAX_LIKES_PER_POST: usize = 100;
/// Text sizes, in characters: titles around 50, post contents 1–5 KB, comments 100–300.
const TITLE_CHARS: (usize, usize) = (35, 65);
const CONTENT_CHARS: (usize, usize) = (1_000, 5_000);
const COMMENT_CHARS: (usize, usize) = (100, 300);

pub(crate) struct DataSet {
    pub users: Vec<UserPlan>,
}

pub(crate) struct UserPlan {
    pub username: String,
    pub posts: Vec<PostPlan>,
}

pub(crate) struct PostPlan {
    pub title: String,
    pub content: String,
    pub comments: Vec<CommentPlan>,
    /// Indexes into `DataSet::users`, all different: a user likes a post at most once.
    pub likers: Vec<usize>,
}

pub(crate) struct CommentPlan {
    pub author: usize,
    pub content: String,
}

impl DataSet {
    /// The plan for `users` users. Likes come from distinct users, so with fewer than 100 users
    /// a post has at most `users` likes (the draw is 0..=min(100, users)).
    pub(crate) fn generate(seed: u64, users: usize) -> DataSet {
        let mut rng = Rng::new(seed);
        let max_likes = MAX_LIKES_PER_POST.min(users);
        let users = (0..users)
            .map(|index| {
                let username = format!("{}-{index}", word(&mut rng));
                let posts = (0..rng.range(POSTS_PER_USER.0, POSTS_PER_USER.1))
                    .map(|_| PostPlan {
                        title: text(&mut rng, TITLE_CHARS),
                        content: text(&mut rng, CONTENT_CHARS),
                        comments: (0..rng.range(0, MAX_COMMENTS_PER_POST))
                            .map(|_| CommentPlan {
                                author: rng.index(users),
                                content: text(&mut rng, COMMENT_CHARS),
                            })
                            .collect(),
                        likers: {
                            let count = rng.range(0, max_likes);
                            rng.distinct(count, users)
                        },
                    })
                    .collect();
                UserPlan { username, posts }
            })
            .collect();
        DataSet { users }
    }

    /// Keeps at most `posts` posts per user and `comments` comments per post: the least data
    /// that still reaches every part of the bench (`--smoke`).
    pub(crate) fn trim(&mut self, posts: usize, comments: usize) {
        for user in &mut self.users {
            user.posts.truncate(posts);
            for post in &mut user.posts {
                post.comments.truncate(comments);
            }
        }
    }

    pub(crate) fn post_count(&self) -> usize {
        self.users.iter().map(|user| user.posts.len()).sum()
    }

    pub(crate) fn comment_count(&self) -> usize {
        self.posts().map(|post| post.comments.len()).sum()
    }

    pub(crate) fn like_count(&self) -> usize {
        self.posts().map(|post| post.likers.len()).sum()
    }

    fn posts(&self) -> impl Iterator<Item = &PostPlan> {
        self.users.iter().flat_map(|user| user.posts.iter())
    }
}

#[rustfmt::skip]
const WORDS: [&str; 48] = [
    "cosmos", "partition", "request", "unit", "latency", "blog", "post", "comment", "like", "feed", "model", "query",
    "index", "container", "change", "copy", "user", "title", "river", "mountain", "coffee", "morning", "travel",
    "garden", "recipe", "music", "review", "weekend", "city", "light", "winter", "summer", "story", "idea", "notes",
    "design", "simple", "quick", "honest", "little", "bright", "quiet", "about", "with", "from", "today", "again",
    "every",
];

fn word(rng: &mut Rng) -> &'static str {
    WORDS[rng.index(WORDS.len())]
}

/// Words and sentences of a length drawn from `chars`: plain ASCII, so characters are bytes and
/// the sizes are the stored sizes.
pub(crate) fn text(rng: &mut Rng, chars: (usize, usize)) -> String {
    let target = rng.range(chars.0, chars.1);
    let mut out = String::with_capacity(target + 16);
    let mut words_in_sentence = 0;
    while out.len() < target {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word(rng));
        words_in_sentence += 1;
        if words_in_sentence >= rng.range(6, 14) {
            out.push('.');
            words_in_sentence = 0;
        }
    }
    out.truncate(target);
    out
}
