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

pub(crate) mod index;
mod query;
mod rank;
mod snippet;
mod stop;
#[cfg(test)]
mod tests;
mod words;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub(crate) use query::{MAX_TERMS, Query, QueryError, Term, parse};
pub(crate) use rank::{Posting, idf, postings};
pub(crate) use snippet::{Segment, snippet};
pub(crate) use words::{MAX_KEY_BYTES, fold, keys, surface};

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

    /// The language `text` is most likely in, of the four; English when that is not clear
    /// (a short text). Cyrillic text is Russian whatever this says: the script decides.
    pub(crate) fn detect(text: &str) -> Language {
        use whatlang::Lang;
        let detector =
            whatlang::Detector::with_allowlist(vec![Lang::Eng, Lang::Spa, Lang::Deu, Lang::Rus]);
        match detector.detect(text).filter(whatlang::Info::is_reliable).map(|info| info.lang()) {
            Some(Lang::Spa) => Language::Spanish,
            Some(Lang::Deu) => Language::German,
            Some(Lang::Rus) => Language::Russian,
            _ => Language::English,
        }
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
