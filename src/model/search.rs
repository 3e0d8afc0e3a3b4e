//! Search's words: how a post's text and a reader's query become the keys of the index.
//!
//! A key is a word as people type it, folded so that forms of one word meet. The text is cut
//! into words at Unicode's word boundaries (UAX #29). Each word is put in NFKC and lower case,
//! then stemmed by Snowball's stemmer for its language, then stripped of accents. So "Kites"
//! and "kite" are `kite`, "Partitionen" is `partition`, "particiones" and "partición" are
//! `particion`, and "модели" is `модел`.
//!
//! A post's words are stemmed in the post's language; a Cyrillic word is always Russian. A
//! query is too short to tell its language, so each of its Latin words is stemmed in English,
//! Spanish and German, and a post matches on any of the three keys ([`Term::keys`]).
//!
//! Stop words ("the", "und", "и") are never indexed and never required of a post. The lists
//! are Snowball's own (`search/stop/`, with their licence).
//!
//! Nothing here reads the store: these are the pure steps of indexing and of answering a
//! query, fuzzed as they are ([`crate::fuzzing::search`]).

mod query;
mod rank;
mod snippet;
mod stop;
#[cfg(test)]
mod tests;
mod words;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub(crate) use query::{MAX_QUERY_BYTES, MAX_TERMS, MAX_WORDS, Query, QueryError, Term, parse};
pub(crate) use rank::{Field, Lengths, MAX_POSTINGS_PER_POST, Posting, idf, postings};
pub(crate) use snippet::{Segment, snippet};
pub(crate) use words::{MAX_KEY_BYTES, Word, fold, keys, surface};

/// The language a post is written in: the article's editions' four. It chooses the stemmer of
/// the post's Latin words; its Cyrillic words are always Russian.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
pub(crate) enum Language {
    /// The default of a post whose language was not chosen.
    #[default]
    #[serde(rename = "en")]
    English,
    #[serde(rename = "es")]
    Spanish,
    #[serde(rename = "de")]
    German,
    #[serde(rename = "ru")]
    Russian,
}

impl Language {
    /// Every language, in the order a query's alternatives are made.
    pub(crate) const ALL: [Language; 4] =
        [Language::English, Language::Spanish, Language::German, Language::Russian];

    /// Its code, as in a post's `language` and a page's `lang`.
    pub(crate) fn code(self) -> &'static str {
        match self {
            Language::English => "en",
            Language::Spanish => "es",
            Language::German => "de",
            Language::Russian => "ru",
        }
    }

    /// The language of `code`, if it is one of the four.
    pub(crate) fn from_code(code: &str) -> Option<Language> {
        Language::ALL.into_iter().find(|language| language.code() == code)
    }

    fn stemmer(self) -> frostem::Stemmer {
        frostem::Stemmer::new(match self {
            Language::English => frostem::Algorithm::English,
            Language::Spanish => frostem::Algorithm::Spanish,
            Language::German => frostem::Algorithm::German,
            Language::Russian => frostem::Algorithm::Russian,
        })
    }
}
