//! A reader's query: its words, its phrases in quotes, the words it excludes with a minus.
//!
//! Nothing of the query ever reaches a query of the store as text: its words become keys, and
//! keys are parameters. So `*`, `:`, `OR` and `c.id = 1` are words or punctuation, not syntax.
//!
//! The limits bound the work of one query before any of it is done: at most
//! [`MAX_QUERY_BYTES`] bytes, [`MAX_WORDS`] words, and [`MAX_TERMS`] distinct words searched
//! for. A query's keys are then at most 8 × 3 (a Latin word's three stems).

use std::collections::BTreeSet;

use unicode_segmentation::UnicodeSegmentation;

use super::words::{key, lowered, writing};
use super::{Language, stop, surface};
use crate::model::tags::{MixedWord, mixed_scripts};

/// The longest query, in bytes of UTF-8: a long sentence. A longer one is refused, not cut.
pub(crate) const MAX_QUERY_BYTES: usize = 256;

/// The most words a query may have, stop words and phrases' words included.
pub(crate) const MAX_WORDS: usize = 32;

/// The most distinct words a query may search for, required or excluded: each is one more
/// partition's read.
pub(crate) const MAX_TERMS: usize = 8;

/// Why a query is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error("the query is empty: type a word to search for")]
    Empty,
    #[error("the query is {bytes} bytes long; at most {MAX_QUERY_BYTES} are searched")]
    TooLong { bytes: usize },
    #[error("the query has a control character (U+{code:04X}); search for words")]
    ControlCharacter { code: u32 },
    #[error("the query has {words} words; at most {MAX_WORDS} are searched")]
    TooManyWords { words: usize },
    #[error("the query searches for {terms} different words; at most {MAX_TERMS} are searched")]
    TooManyTerms { terms: usize },
    #[error("the query has no word to search for, only punctuation or symbols")]
    NoWords,
    #[error("the query has only words too common to search for (such as \"the\" or \"und\")")]
    OnlyStopWords,
    #[error("\"{}\" mixes {} and {} letters, which no word does", .0.word, .0.first, .0.second)]
    MixedScripts(MixedWord),
}

/// A word of a query, and the keys a post may have it under (one a language it may be in).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Term {
    /// The word, lowered and folded: what a phrase compares.
    pub surface: String,
    /// The keys: its stems in English, Spanish and German for a Latin word (each once), in
    /// Russian for a Cyrillic one, itself for any other. Empty for a word that is a stop word
    /// in every language it may be in.
    pub keys: Vec<String>,
    /// Whether it is a stop word in a language it may be in: not required of a post, unless
    /// the query has nothing else.
    pub stop: bool,
}

/// A parsed query.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Query {
    /// The words a post must have, each under one of its keys.
    pub required: Vec<Term>,
    /// The words a post must not have.
    pub excluded: Vec<Term>,
    /// The phrases a post must have, word after word (their words are required too).
    pub phrases: Vec<Vec<Term>>,
    /// The phrases a post must not have.
    pub excluded_phrases: Vec<Vec<Term>>,
}

impl Query {
    /// Every key of every required word, each once: what a snippet marks.
    pub(crate) fn marked_keys(&self) -> BTreeSet<&str> {
        self.required.iter().flat_map(|term| term.keys.iter().map(String::as_str)).collect()
    }
}

/// A piece of the query: a word or a phrase, and whether a minus excludes it.
struct Piece<'a> {
    text: &'a str,
    phrase: bool,
    excluded: bool,
}

/// Parses `text` as a reader typed it: words; `"a phrase"` (an unclosed quote runs to the
/// end); `-word` and `-"a phrase"` excluded (a minus counts only at a piece's start). Time and
/// memory are linear in the query, which is at most [`MAX_QUERY_BYTES`] long.
pub(crate) fn parse(text: &str) -> Result<Query, QueryError> {
    if text.len() > MAX_QUERY_BYTES {
        return Err(QueryError::TooLong { bytes: text.len() });
    }
    if let Some(control) = text.chars().find(|c| c.is_control()) {
        return Err(QueryError::ControlCharacter { code: control.into() });
    }
    if text.trim().is_empty() {
        return Err(QueryError::Empty);
    }
    if let Some(mixed) = mixed_scripts(text) {
        return Err(QueryError::MixedScripts(mixed));
    }
    let mut query = Query::default();
    let (mut words, mut stop_only) = (0, Vec::new());
    for piece in pieces(text) {
        let terms: Vec<Term> = piece.text.unicode_words().filter_map(term).collect();
        words += terms.len();
        if words > MAX_WORDS {
            return Err(QueryError::TooManyWords { words });
        }
        match (piece.phrase && terms.len() > 1, piece.excluded) {
            (true, false) => {
                query.required.extend(terms.iter().filter(|term| !term.stop).cloned());
                stop_only.extend(terms.iter().filter(|term| term.stop).cloned());
                query.phrases.push(terms);
            }
            (true, true) => query.excluded_phrases.push(terms),
            (false, false) => {
                for term in terms {
                    if term.stop { stop_only.push(term) } else { query.required.push(term) }
                }
            }
            (false, true) => {
                query.excluded.extend(terms.into_iter().filter(|t| !t.keys.is_empty()))
            }
        }
    }
    if words == 0 {
        return Err(QueryError::NoWords);
    }
    // A query of stop words alone searches for them where a language does not list them.
    if query.required.is_empty() {
        query.required = stop_only.into_iter().filter(|term| !term.keys.is_empty()).collect();
    }
    dedup(&mut query.required);
    dedup(&mut query.excluded);
    if query.required.is_empty() {
        return Err(QueryError::OnlyStopWords);
    }
    let terms = query.required.len() + query.excluded.len();
    if terms > MAX_TERMS {
        return Err(QueryError::TooManyTerms { terms });
    }
    Ok(query)
}

/// The query's pieces: quoted phrases, and the words between them split at white space.
fn pieces(text: &str) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    for (index, part) in text.split('"').enumerate() {
        let phrase = index % 2 == 1;
        if phrase {
            // A minus right before the quote excludes the phrase: the last piece is that minus.
            let excluded = pieces.last().is_some_and(|last: &Piece<'_>| last.text == "-");
            if excluded {
                pieces.pop();
            }
            pieces.push(Piece { text: part, phrase, excluded });
            continue;
        }
        for chunk in part.split_whitespace() {
            match chunk.strip_prefix('-') {
                Some("") => pieces.push(Piece { text: "-", phrase: false, excluded: false }),
                Some(rest) => pieces.push(Piece { text: rest, phrase: false, excluded: true }),
                None => pieces.push(Piece { text: chunk, phrase: false, excluded: false }),
            }
        }
    }
    pieces
}

/// A query's word as a term: its keys in each language it may be in, without those where it
/// is a stop word. `None` for a word that has no key at all (too long).
fn term(word: &str) -> Option<Term> {
    let lowered = lowered(word)?;
    let languages: &[Language] = match writing(&lowered) {
        Some(icu_properties::props::Script::Cyrillic) => &[Language::Russian],
        Some(_) => &[Language::English, Language::Spanish, Language::German],
        None => &[],
    };
    let (mut keys, mut stop) = (Vec::new(), false);
    if languages.is_empty() {
        keys.extend(key(&lowered, None));
    }
    for language in languages {
        if stop::is_stop(*language, &lowered) {
            stop = true;
        } else if let Some(key) = key(&lowered, Some(*language))
            && !keys.contains(&key)
        {
            keys.push(key);
        }
    }
    if keys.is_empty() && !stop {
        return None;
    }
    Some(Term { surface: surface(word)?, keys, stop })
}

/// Leaves each word once, at its first place.
fn dedup(terms: &mut Vec<Term>) {
    let mut seen = BTreeSet::new();
    terms.retain(|term| seen.insert(term.keys.clone()));
}
