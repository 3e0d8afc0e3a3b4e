//! Snowball's stop word lists, one a language (`stop/*.txt`, as the Snowball site gives them).

use std::collections::HashSet;
use std::sync::LazyLock;

use super::Language;

/// Each language's stop words, read from the files once.
static LISTS: LazyLock<[HashSet<&'static str>; 4]> = LazyLock::new(|| {
    [
        read(include_str!("stop/en.txt")),
        read(include_str!("stop/es.txt")),
        read(include_str!("stop/de.txt")),
        read(include_str!("stop/ru.txt")),
    ]
});

/// A list's words: the first word of each line, before any `|` comment.
fn read(list: &'static str) -> HashSet<&'static str> {
    list.lines().filter_map(|line| line.split('|').next()?.split_whitespace().next()).collect()
}

/// Whether `word`, in lower case, is one of `language`'s stop words. Russian's list writes ё
/// as е, as its stemmer does.
pub(super) fn is_stop(language: Language, word: &str) -> bool {
    let list = &LISTS[Language::ALL.iter().position(|each| *each == language).unwrap_or(0)];
    if language == Language::Russian && word.contains('ё') {
        return list.contains(word.replace('ё', "е").as_str());
    }
    list.contains(word)
}
