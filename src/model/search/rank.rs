//! How well a post matches a word: BM25F, computed when the post is indexed.
//!
//! After Robertson and Zaragoza ("The Probabilistic Relevance Framework: BM25 and Beyond",
//! 2009, section 3.6): the fields' weights apply to a word's count before it saturates, so a
//! word in the title (weight 4) outranks one in the tags (3), which outranks one in the body
//! however often the body repeats it (its share is capped at 2.5 and damped by the body's
//! length). Each posting stores the result as an impact of 1 to 1000; a search adds
//! `idf × impact` over its words. The impact uses no number a later post changes but the
//! average body length, taken in steps of a quarter power of two, so a post indexed once
//! keeps its impacts until its own text changes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Language, keys};

/// The most words a post is indexed under. Every word of its title and tags is; the rest are
/// its body's words, most frequent first, then first seen first. A post of about 1,500 words
/// is indexed whole; past that a rare body word may not find it. The bound is what one post
/// may cost to index (a posting each) and what its forward record holds.
pub(crate) const MAX_POSTINGS_PER_POST: usize = 200;

/// BM25's saturation: how quickly more of a word adds less.
const K1: f64 = 1.2;
/// BM25's length normalization, applied to the body only.
const B: f64 = 0.75;
const TITLE_WEIGHT: f64 = 4.0;
const TAGS_WEIGHT: f64 = 3.0;
/// The most a body's repetitions of a word may weigh, after `1 + ln(count)`.
const BODY_CAP: f64 = 2.5;

/// The fields a word is in, as bits of a posting's `fields`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    Title = 1,
    Tags = 2,
    Body = 4,
}

/// A post's entry under one key: how well it matches (1 to 1000) and where the word is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Posting {
    #[serde(rename = "k")]
    pub key: String,
    #[serde(rename = "i")]
    pub impact: u16,
    #[serde(rename = "f")]
    pub fields: u8,
}

/// What a post's length adds to the statistics: the number of words in its body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Lengths {
    pub body: u32,
}

/// How often a key is in each field, and where first.
#[derive(Default)]
struct Counts {
    title: u32,
    tagged: bool,
    body: u32,
    first: usize,
}

/// A post's postings, by key, and its lengths. `body` is its plain text. `average_body` is the
/// average body length of the posts indexed (0 when none is).
pub(crate) fn postings(
    title: &str,
    tags: &[String],
    body: &str,
    language: Language,
    average_body: f64,
) -> (Vec<Posting>, Lengths) {
    let mut counts: BTreeMap<String, Counts> = BTreeMap::new();
    for word in keys(title, language).filter(|word| !word.stop) {
        counts.entry(word.key).or_insert_with(|| Counts { first: 0, ..Counts::default() }).title +=
            1;
    }
    for tag in tags {
        for word in keys(tag, language).filter(|word| !word.stop) {
            counts.entry(word.key).or_default().tagged = true;
        }
    }
    let mut length = 0u32;
    for (position, word) in keys(body, language).enumerate() {
        length = length.saturating_add(1);
        if word.stop {
            continue;
        }
        let counts = counts
            .entry(word.key)
            .or_insert_with(|| Counts { first: usize::MAX, ..Counts::default() });
        counts.body += 1;
        counts.first = counts.first.min(position);
    }
    let body_norm = body_norm(length, average_body);
    let mut chosen: Vec<(String, Counts)> = counts.into_iter().collect();
    // Title and tag words first, then the body's, most frequent first.
    chosen.sort_by(|(_, a), (_, b)| {
        let heading = |c: &Counts| c.title > 0 || c.tagged;
        heading(b).cmp(&heading(a)).then(b.body.cmp(&a.body)).then(a.first.cmp(&b.first))
    });
    chosen.truncate(MAX_POSTINGS_PER_POST);
    let mut postings: Vec<Posting> = chosen
        .into_iter()
        .map(|(key, counts)| {
            let in_field = |field: Field, yes: bool| if yes { field as u8 } else { 0 };
            let fields = in_field(Field::Title, counts.title > 0)
                | in_field(Field::Tags, counts.tagged)
                | in_field(Field::Body, counts.body > 0);
            Posting { key, impact: impact(&counts, body_norm), fields }
        })
        .collect();
    postings.sort_by(|a, b| a.key.cmp(&b.key));
    (postings, Lengths { body: length })
}

/// BM25's length normalization of the body, never below 1: a short body does not make its
/// words outweigh a title's. Both lengths are taken in steps of 2^(1/4).
fn body_norm(length: u32, average: f64) -> f64 {
    if average <= 0.0 || length == 0 {
        return 1.0;
    }
    (1.0 - B + B * stepped(f64::from(length)) / stepped(average)).max(1.0)
}

/// `value` rounded to the nearest quarter power of two, as Lucene keeps lengths in a byte.
fn stepped(value: f64) -> f64 {
    (value.max(1.0).log2() * 4.0).round().exp2().powf(0.25)
}

/// The impact: BM25F's saturated, weighted count, times 1000, from 1 to 1000.
fn impact(counts: &Counts, body_norm: f64) -> u16 {
    let body = if counts.body == 0 {
        0.0
    } else {
        (1.0 + f64::from(counts.body).ln()).min(BODY_CAP) / body_norm
    };
    let weighted = TITLE_WEIGHT * f64::from(counts.title)
        + if counts.tagged { TAGS_WEIGHT } else { 0.0 }
        + body;
    let impact = (1000.0 * weighted / (K1 + weighted)).round();
    // In 1..=1000 by construction; clamped so that a float's rounding cannot leave it.
    impact.clamp(1.0, 1000.0) as u16
}

/// A word's inverse document frequency, as Lucene's BM25 computes it: always above 0.
pub(crate) fn idf(posts: u64, with_word: u64) -> f64 {
    let (n, df) = (posts as f64, with_word.min(posts) as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}
