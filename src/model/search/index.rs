//! The search index's items, in the container `words` (partition key `/word`).
//!
//! A word's key is a partition. Its `head` says how many published posts have the word (`df`)
//! and, while at most [`INLINE_POSTINGS`] do, holds their postings itself: most words are rare,
//! and so one item. Past that the postings move into chunks, by impact tier (an impact's
//! sixteenth), and within a tier by the post id's hash ([`Spread`]: linear hashing, so that a
//! chunk holds about [`CHUNK_POSTINGS`] whatever the number of posts). A search reads a common
//! word's best tiers first, a few chunks at a time, and stops when the rest cannot change its
//! page: what it reads does not grow with the number of posts.
//!
//! Each post has a record: the postings it has in the index, what its text hashed to, and the
//! version of the post they are from. It is the index's forward half: an edit writes only the
//! keys whose posting changed, and a search scores its candidates by point reads of their
//! records. The records are spread over [`RECORD_BUCKETS`] partitions by the post id's hash, so
//! that no partition holds them all: each write and read of a record is on a partition of a few
//! hundred posts at most, whatever the number of posts. Each bucket counts its posts and their
//! words ([`Stats`]), written in the same batch as a record, and the totals BM25 needs are
//! summed from the buckets into one item of [`SUMMARY`] after each delivery.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Language, Posting};
use crate::model::SourceVersion;

/// The partition of the totals a search reads ([`STATS_ID`]) and of what each bucket of
/// records counted ([`COUNTED_ID`]). `§` starts no key: a word is letters and digits (the same
/// idea as the reservations' `§username-` in `users`).
pub(crate) const SUMMARY: &str = "§summary";

/// The partition that held every record and the statistics before [`INDEX_RULES`] 2. Found,
/// it says the index is of that layout: `handler rebuild-copies` makes it anew.
pub(crate) const LEGACY_DOCS: &str = "§docs";

/// How many partitions the records are spread over: at 100,000 posts, about 400 records each.
pub(crate) const RECORD_BUCKETS: u32 = 256;

/// The id of a word's head item.
pub(crate) const HEAD_ID: &str = "head";
/// The id of the statistics: a bucket's, beside its records (whose ids are the posts': `§` is
/// no id's, as `model::validate_id` takes printable ASCII only), and the totals in [`SUMMARY`].
pub(crate) const STATS_ID: &str = "§stats";
/// The id of what each bucket had counted when the totals were last summed, in [`SUMMARY`].
pub(crate) const COUNTED_ID: &str = "§counted";

/// The most postings a head holds itself. A word of more has its postings in chunks, for
/// good: its head then holds none.
pub(crate) const INLINE_POSTINGS: usize = 32;

/// About how many postings a chunk holds: a tier holding more on average has a chunk split
/// ([`Spread`]). 128 postings are about 6 KB, a point read or write of a few RU.
pub(crate) const CHUNK_POSTINGS: u64 = 128;

/// The rules the index is made by: a record made by other rules is made again (as the copies'
/// `made_otherwise`), so `handler rebuild-copies` brings the index up to them.
pub(crate) const INDEX_RULES: u32 = 2;

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
    /// Once spilled: how each tier's postings are spread over its chunks, by the tier (as a
    /// string: a JSON object's keys are, and items are read through `serde_json::Value`, which
    /// reads no number from a key).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub tiers: std::collections::BTreeMap<String, Spread>,
}

/// How a tier's postings are spread over its chunks, by linear hashing (Litwin, 1980): bucket
/// `hash mod buckets`, or `hash mod 2·buckets` below `split`. Each split moves about half of
/// one chunk into a new one, in one batch, so no write ever moves a whole tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Spread {
    pub buckets: u32,
    pub split: u32,
    /// The postings in the tier.
    pub count: u64,
}

impl Default for Spread {
    fn default() -> Spread {
        Spread { buckets: 1, split: 0, count: 0 }
    }
}

impl Spread {
    /// The bucket `post_id`'s posting is in.
    pub(crate) fn bucket(&self, post_id: &str) -> u32 {
        let digest = Sha256::digest(post_id.as_bytes());
        let hash = u32::from_le_bytes([digest[0], digest[1], digest[2], digest[3]]);
        let bucket = hash % self.buckets;
        if bucket < self.split { hash % (2 * self.buckets) } else { bucket }
    }

    /// Whether the tier's chunks hold more than [`CHUNK_POSTINGS`] each on average.
    pub(crate) fn crowded(&self) -> bool {
        self.count > CHUNK_POSTINGS * u64::from(self.buckets + self.split)
    }

    /// Splits the next bucket: answers it and the bucket its moved postings go to.
    pub(crate) fn split_next(&mut self) -> (u32, u32) {
        let (from, to) = (self.split, self.split + self.buckets);
        self.split += 1;
        if self.split == self.buckets {
            self.buckets *= 2;
            self.split = 0;
        }
        (from, to)
    }
}

impl Head {
    /// How `tier` is spread (the first chunk alone, for a tier it has not used yet).
    pub(crate) fn spread(&self, tier: u16) -> Spread {
        self.tiers.get(&tier.to_string()).copied().unwrap_or_default()
    }

    /// `tier`'s spread, to change.
    pub(crate) fn spread_mut(&mut self, tier: u16) -> &mut Spread {
        self.tiers.entry(tier.to_string()).or_default()
    }

    pub(crate) fn new(word: &str) -> Head {
        Head {
            id: HEAD_ID.into(),
            word: word.into(),
            kind: "head".into(),
            df: 0,
            spilled: false,
            postings: Vec::new(),
            tiers: std::collections::BTreeMap::new(),
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
/// length. A bucket's count its records; the totals in [`SUMMARY`], all of them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Stats {
    pub id: String,
    pub word: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub posts: u64,
    pub body_words: u64,
    /// A bucket's: how many times its counts changed, so that the totals take each change once.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub version: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl Stats {
    /// No post counted, in `partition` (a bucket's, or [`SUMMARY`]).
    pub(crate) fn new(partition: &str) -> Stats {
        Stats {
            id: STATS_ID.into(),
            word: partition.into(),
            kind: "stats".into(),
            ..Stats::default()
        }
    }

    /// The average body's words, 0 with no post indexed.
    pub(crate) fn average_body(&self) -> f64 {
        if self.posts == 0 { 0.0 } else { self.body_words as f64 / self.posts as f64 }
    }
}

/// What each bucket had counted when the totals were last summed: by bucket, its `version`,
/// posts and body words. Written in one batch with the totals, so the two always agree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Counted {
    pub id: String,
    pub word: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub buckets: Vec<[u64; 3]>,
}

impl Counted {
    pub(crate) fn new() -> Counted {
        Counted {
            id: COUNTED_ID.into(),
            word: SUMMARY.into(),
            kind: "counted".into(),
            buckets: vec![[0; 3]; RECORD_BUCKETS as usize],
        }
    }

    /// Takes in `bucket`'s statistics if they are newer than what was counted: whether they were.
    pub(crate) fn take(&mut self, bucket: u32, stats: &Stats) -> bool {
        let Some(counted) = self.buckets.get_mut(bucket as usize) else { return false };
        if stats.version <= counted[0] {
            return false;
        }
        *counted = [stats.version, stats.posts, stats.body_words];
        true
    }

    /// The totals of every bucket counted.
    pub(crate) fn totals(&self) -> Stats {
        let mut totals = Stats::new(SUMMARY);
        for [_, posts, body_words] in &self.buckets {
            totals.posts += posts;
            totals.body_words += body_words;
        }
        totals
    }
}

/// The bucket of `post_id`'s record: its id's hash, modulo [`RECORD_BUCKETS`].
pub(crate) fn record_bucket(post_id: &str) -> u32 {
    let digest = Sha256::digest(post_id.as_bytes());
    u32::from_le_bytes([digest[4], digest[5], digest[6], digest[7]]) % RECORD_BUCKETS
}

/// The partition of `bucket`'s records and statistics: `§docs-00` to `§docs-ff`.
pub(crate) fn records_partition(bucket: u32) -> String {
    format!("{LEGACY_DOCS}-{bucket:02x}")
}

/// The partition of `post_id`'s record.
pub(crate) fn record_partition(post_id: &str) -> String {
    records_partition(record_bucket(post_id))
}

/// An impact's tier: 0 to 62.
pub(crate) fn tier(impact: u16) -> u16 {
    impact / 16
}

/// The highest impact a tier holds.
pub(crate) fn tier_ceiling(tier: u16) -> u16 {
    (tier * 16 + 15).min(1000)
}

/// A chunk's id: `t<tier>-<bucket>`, the tier written with two digits so that ids sort as
/// tiers do.
pub(crate) fn chunk_id(tier: u16, bucket: u32) -> String {
    format!("t{tier:02}-{bucket:x}")
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every split keeps each posting findable: a posting is in the bucket `bucket` says,
    /// before and after, and the buckets grow one at a time.
    #[test]
    fn a_spread_finds_every_posting_through_its_splits() {
        let posts: Vec<String> = (0..2000).map(|n| format!("post-{n}")).collect();
        let mut spread = Spread::default();
        let mut buckets: std::collections::BTreeMap<u32, Vec<&str>> = Default::default();
        for post in &posts {
            spread.count += 1;
            buckets.entry(spread.bucket(post)).or_default().push(post);
            while spread.crowded() {
                let (from, to) = spread.split_next();
                let moving = buckets.remove(&from).unwrap_or_default();
                for moved in moving {
                    let now = spread.bucket(moved);
                    assert!(now == from || now == to, "{moved} went to {now}");
                    buckets.entry(now).or_default().push(moved);
                }
            }
        }
        for (bucket, held) in &buckets {
            for post in held {
                assert_eq!(spread.bucket(post), *bucket);
            }
        }
        let largest = buckets.values().map(Vec::len).max().unwrap_or(0) as u64;
        assert!(largest <= 3 * CHUNK_POSTINGS, "a chunk of {largest}");
        assert_eq!(u64::from(spread.buckets + spread.split), buckets.len() as u64);
    }
}
