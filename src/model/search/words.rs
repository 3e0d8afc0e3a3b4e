//! A text's words and their keys.

use std::borrow::Cow;

use icu_properties::CodePointMapData;
use icu_properties::props::{GeneralCategory, Script};
use icu_properties::script::ScriptWithExtensions;
use unicode_segmentation::UnicodeSegmentation;

use super::{Language, stop};

/// The longest key kept, in bytes: a longer "word" is a hash, a URL's tail or a run of one
/// letter, which nobody searches for. It also bounds a posting's size.
pub(crate) const MAX_KEY_BYTES: usize = 64;

/// The longest word looked at, in bytes, before NFKC (which may make a character of up to 18).
/// Its key would be over [`MAX_KEY_BYTES`] anyway; the bound keeps a word's work small.
const MAX_WORD_BYTES: usize = 256;

/// A word of a text: its key, where it is (byte offsets), and whether it is a stop word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Word {
    pub key: String,
    pub start: usize,
    pub end: usize,
    pub stop: bool,
}

/// The words of `text` written in `language`, in order. A word with no key (over-long, or
/// nothing left once folded) is left out.
pub(crate) fn keys(text: &str, language: Language) -> impl Iterator<Item = Word> + '_ {
    text.unicode_word_indices().filter_map(move |(start, word)| {
        let lowered = lowered(word)?;
        let language = language_of(&lowered, language);
        let stop = language.is_some_and(|language| stop::is_stop(language, &lowered));
        let key = key(&lowered, language)?;
        Some(Word { key, start, end: start + word.len(), stop })
    })
}

/// The script a word's stemmer is chosen by: Cyrillic is Russian; Latin is the text's
/// language (English in a Russian text); any other script is not stemmed.
pub(super) fn language_of(lowered: &str, language: Language) -> Option<Language> {
    match writing(lowered)? {
        Script::Cyrillic => Some(Language::Russian),
        _ if language == Language::Russian => Some(Language::English),
        _ => Some(language),
    }
}

/// Whether a lowered word's first letter is Latin or Cyrillic, the two scripts stemmed (`None`
/// for any other, and for a word of digits).
pub(super) fn writing(lowered: &str) -> Option<Script> {
    let scripts = ScriptWithExtensions::new();
    let first = lowered.chars().find(|c| c.is_alphabetic())?;
    match scripts.get_script_val(first) {
        script @ (Script::Latin | Script::Cyrillic) => Some(script),
        _ => None,
    }
}

/// A word as it is compared: NFKC, lower case, typographic apostrophes made plain; `None`
/// when it is longer than [`MAX_WORD_BYTES`].
pub(super) fn lowered(word: &str) -> Option<String> {
    if word.len() > MAX_WORD_BYTES {
        return None;
    }
    let nfkc = icu_normalizer::ComposingNormalizerBorrowed::new_nfkc();
    Some(nfkc.normalize(word).to_lowercase().replace(['\u{2019}', '\u{02BC}'], "'"))
}

/// A lowered word's key: stemmed in `language` (not at all for `None`), then folded; `None`
/// when nothing is left, or more than [`MAX_KEY_BYTES`].
pub(super) fn key(lowered: &str, language: Option<Language>) -> Option<String> {
    let stemmed = match language {
        Some(language) => language.stemmer().stem(lowered),
        None => Cow::Borrowed(lowered),
    };
    // Folded after stemming: Snowball's stemmers expect the accents their languages write
    // (English leaves "café" alone; Spanish strips its own), and Russian й must stay й.
    let key = match language {
        Some(Language::Russian) => stemmed.replace('\'', ""),
        _ => fold(&stemmed),
    };
    (!key.is_empty() && key.len() <= MAX_KEY_BYTES).then_some(key)
}

/// `text` without its accents and apostrophes: NFKD, then every nonspacing mark left out.
/// "café" is "cafe", "naïve" "naive".
pub(crate) fn fold(text: &str) -> String {
    let nfkd = icu_normalizer::DecomposingNormalizerBorrowed::new_nfkd();
    let categories = CodePointMapData::<GeneralCategory>::new();
    nfkd.normalize(text)
        .chars()
        .filter(|c| *c != '\'' && categories.get(*c) != GeneralCategory::NonspacingMark)
        .collect()
}

/// A word's surface form, as a phrase compares it: lowered and folded, not stemmed. A phrase
/// "partition key" matches "Partition Keys'" only where the words are those words.
pub(crate) fn surface(word: &str) -> Option<String> {
    let lowered = lowered(word)?;
    match writing(&lowered) {
        Some(Script::Cyrillic) => Some(lowered.replace('ё', "е")),
        _ => Some(fold(&lowered)),
    }
}
