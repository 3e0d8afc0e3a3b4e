//! A result's snippet: the words of its text around the first match, the matches marked.

use std::collections::BTreeSet;

use super::{Language, keys};

/// A piece of a snippet: text as it is, or a word that matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub text: String,
    pub marked: bool,
}

/// How many words before the first match the snippet starts, so the match has its context.
const WORDS_BEFORE: usize = 6;

/// The snippet of `text` (plain text, in `language`) for words of `marked` keys: at most about
/// `max_bytes` of it, from a few words before the first match, white space made single spaces,
/// "…" where it is cut. The text's start when nothing matches.
pub(crate) fn snippet(
    text: &str,
    language: Language,
    marked: &BTreeSet<&str>,
    max_bytes: usize,
) -> Vec<Segment> {
    let words: Vec<_> = keys(text, language).collect();
    let first = words.iter().position(|word| marked.contains(word.key.as_str())).unwrap_or(0);
    let from = first.saturating_sub(WORDS_BEFORE);
    let start = if from == 0 { 0 } else { words[from].start };
    let mut segments = Vec::new();
    if start > 0 {
        segments.push(Segment { text: "…".into(), marked: false });
    }
    let mut at = start;
    let mut end = start;
    let mut cut = false;
    for word in &words[from..] {
        if word.end - start > max_bytes {
            cut = true;
            break;
        }
        if marked.contains(word.key.as_str()) {
            push_plain(&mut segments, &text[at..word.start]);
            segments.push(Segment { text: text[word.start..word.end].into(), marked: true });
            at = word.end;
        }
        end = word.end;
    }
    // Every word fits: the snippet runs to the text's end, its last punctuation too.
    if !cut {
        end = text.trim_end().len();
    }
    // Nothing fits (a first word longer than the snippet): the snippet is empty but for "…".
    push_plain(&mut segments, &text[at..end.max(at)]);
    if cut {
        segments.push(Segment { text: "…".into(), marked: false });
    }
    segments
}

/// Adds plain text, its white space made single spaces, to the last plain segment.
fn push_plain(segments: &mut Vec<Segment>, text: &str) {
    if text.is_empty() {
        return;
    }
    let mut spaced = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space && !(spaced.is_empty() && segments.is_empty()) {
            spaced.push(' ');
        }
        space = false;
        spaced.push(c);
    }
    if space {
        spaced.push(' ');
    }
    match segments.last_mut() {
        Some(last) if !last.marked => last.text.push_str(&spaced),
        _ if spaced.is_empty() => {}
        _ => segments.push(Segment { text: spaced, marked: false }),
    }
}
