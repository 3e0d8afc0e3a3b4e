//! The search index's items, in the container `words` (partition key `/word`).
//!
//! A word's key is a partition. Its `head` says how many published posts have the word (`df`)
//! and, while at most [`INLINE_POSTINGS`] do, holds their postings itself: most words are rare,
//! and so one item. Past that the postings move into chunks, by impact tier (an impact's
//! sixteenth) and by the post id's hash within a tier ([`chunk_id`]). A search reads a common
//! word's best tiers first and stops when the rest cannot change its page.
//!
//! Each post has a record in the partition [`DOCS`]: the postings it has in the index, what its
//! text hashed to, and the version of the post they are from. It is the index's forward half: an
//! edit writes only the keys whose posting changed, and a search scores its candidates from
//! their records in one query. Beside the records, [`Stats`] counts the posts indexed and their
//! words, written in the same batch as a record, so BM25's numbers are exact.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Language, Posting};
use crate::model::SourceVersion;

/// The partition of the posts' records and the statistics. `§` starts no key: a word is
/// letters and digits (the same idea as the reservations' `§username-` in `users`).
pub(crate) const DOCS: &str = "§docs";

/// The id of a word's head item.
pub(crate) const HEAD_ID: &str = "head";
/// The id of the statistics in [`DOCS`], beside the posts' records, whose ids are the posts':
/// `§` is no id's (`model::validate_id` takes printable ASCII only), so no post can be it.
pub(crate) const STATS_ID: &str = "§stats";

/// The most postings a head holds itself. A word of more has its postings in chunks, for
/// good: its head then holds none.
pub(crate) const INLINE_POSTINGS: usize = 32;

/// How many chunks share one tier of a word, by the post id's hash: a tier of 100,000 posts
/// is 16 items of about 250 KB, within Cosmos DB's 2 MB.
pub(crate) const BUCKETS: u8 = 16;

/// The rules the index is made by: a record made by other rules is made again (as the copies'
/// `made_otherwise`), so `handler rebuild-copies` brings the index up to them.
pub(crate) const INDEX_RULES: u32 = 1;

/// A post's posting under one word: its id, its impact (1 to 1000), its fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry(pub String, pub u16, pub u8);

/// A word's first item: how many posts have it, and their postings while few do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Head {
    pub id: String,
    pub word: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub df: u64,
    #[serde(default)]
    pub spilled: bool,
    #[serde(default)]
    pub postings: Vec<Entry>,
}

impl Head {
    pub(crate) fn new(word: &str) -> Head {
        Head {
            id: HEAD_ID.into(),
            word: word.into(),
            kind: "head".into(),
            df: 0,
            spilled: false,
            postings: Vec::new(),
        }
    }
}

/// Postings of one tier of a word, for the posts whose id hashes to its bucket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Chunk {
    pub id: String,
    pub word: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub tier: u16,
    pub postings: Vec<Entry>,
}

impl Chunk {
    pub(crate) fn new(word: &str, id: String, tier: u16) -> Chunk {
        Chunk { id, word: word.into(), kind: "chunk".into(), tier, postings: Vec::new() }
    }
}

/// A post's record: its postings, and while `pending`, those it had before, whose keys an
/// interrupted change may still have to mend.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Doc {
    pub id: String,
    pub word: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub source: SourceVersion,
    pub rules: u32,
    pub hash: String,
    /// The post's `creationDate`: a search's ties go to the newer post.
    pub created: String,
    pub language: Language,
    pub body_words: u32,
    pub words: Vec<Posting>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub words_before: Vec<Posting>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pending: bool,
}

impl Doc {
    /// Whether the post counts in the statistics: it has words in the index.
    pub(crate) fn indexed(&self) -> bool {
        !self.words.is_empty()
    }
}

/// How many posts are indexed and how many words their bodies have: BM25's N and average
/// length.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Stats {
    pub id: String,
    pub word: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub posts: u64,
    pub body_words: u64,
}

impl Stats {
    pub(crate) fn new() -> Stats {
        Stats { id: STATS_ID.into(), word: DOCS.into(), kind: "stats".into(), ..Stats::default() }
    }

    /// The average body's words, 0 with no post indexed.
    pub(crate) fn average_body(&self) -> f64 {
        if self.posts == 0 { 0.0 } else { self.body_words as f64 / self.posts as f64 }
    }
}

/// An impact's tier: 0 to 62.
pub(crate) fn tier(impact: u16) -> u16 {
    impact / 16
}

/// The highest impact a tier holds.
pub(crate) fn tier_ceiling(tier: u16) -> u16 {
    (tier * 16 + 15).min(1000)
}

/// The chunk a post's posting of `impact` is in: `t<tier>-<bucket>`, the tier written with
/// two digits so that ids sort as tiers do.
pub(crate) fn chunk_id(impact: u16, post_id: &str) -> String {
    let bucket = Sha256::digest(post_id.as_bytes())[0] % BUCKETS;
    format!("t{:02}-{bucket:x}", tier(impact))
}

/// What a post's text hashes to, with the rules: a record of the same hash needs no change.
pub(crate) fn text_hash(title: &str, content: &str, tags: &[String]) -> String {
    let mut hash = Sha256::new();
    hash.update(INDEX_RULES.to_le_bytes());
    for part in [title, content].into_iter().chain(tags.iter().map(String::as_str)) {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    }
    hash.finalize().iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Removes `post_id`'s postings from `postings`; answers whether it had one.
pub(crate) fn take_out(postings: &mut Vec<Entry>, post_id: &str) -> bool {
    let before = postings.len();
    postings.retain(|entry| entry.0 != post_id);
    postings.len() != before
}
