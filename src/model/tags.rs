//! A post's tags: how many and how long, what a tag may hold, and when two tags are the same.
//!
//! A tag is shown as its writer typed it and compared in its normal form, the same form usernames
//! are compared in ([`normalize_username`]): "Rust", "RUST" and "ｒｕｓｔ" are one tag. The normal
//! form is what the copies in `tags` are partitioned by and what a tag's page is found by, so a
//! reader following "Rust" finds the posts tagged "rust" too.

use serde::{Deserialize, Serialize};

use super::usernames::{is_default_ignorable, normalize_username};
use super::{Post, SourceVersion};

/// The most tags a post may carry. Each tag is one more copy of the post that `PostsChangeFeed`
/// writes on every change of it (an edit, and every comment or like, which move its counters),
/// so the bound is what a post's changes may cost: 5 tags make a change of a tagged post write 7
/// copies instead of 2. Five is also what Stack Overflow allows, enough to say what a post is
/// about and too few to stuff it with keywords.
pub(crate) const MAX_TAGS: usize = 5;

/// The longest tag accepted, in characters. A tag is a word or two ("rust", "machine learning",
/// "Cosmos DB"), shown in a row of links under a post's title and in its excerpt; 32 characters
/// keep that row short on a phone, and keep the tag's page address and its partition key (at
/// most 4 bytes a character: 128 bytes, far below Cosmos DB's 2 KiB key) small.
pub(crate) const MAX_TAG_CHARS: usize = 32;

/// The characters a tag may not hold, beyond control characters: `,` separates tags in the
/// write page's one field, and `/` would split the tag's page address (`/tags/{tag}`) in two.
const SEPARATORS: [char; 2] = [',', '/'];

/// Why a post's tags are refused; each names the tag (as typed) it is about.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TagError {
    #[error("a post may carry at most {MAX_TAGS} tags; it has {0}.")]
    TooMany(usize),
    #[error("the tag {tag:?} is {chars} characters long; a tag may have at most {MAX_TAG_CHARS}.")]
    TooLong { tag: String, chars: usize },
    #[error("the tag {0:?} shows nothing: a tag must contain a visible character.")]
    Invisible(String),
    #[error("the tag {tag:?} contains the control character {bad:?}.")]
    Control { tag: String, bad: char },
    #[error("the tag {tag:?} contains the bidirectional control {bad:?}: it would reorder the text around the tag.")]
    Bidirectional { tag: String, bad: char },
    #[error("the tag {tag:?} contains {bad:?}, which separates tags; give it as two tags, or without it.")]
    Separator { tag: String, bad: char },
    #[error(
        "the tags {first:?} and {second:?} are the same tag (tags are compared ignoring case and Unicode form); give it once."
    )]
    Repeated { first: String, second: String },
}

/// The normal form of a tag: two tags are the same when theirs are equal. It is the partition
/// key of the tag's copies and the last segment of its page's canonical address.
pub(crate) fn normalize_tag(tag: &str) -> String {
    normalize_username(tag)
}

/// Checks a post's tags as given: at most [`MAX_TAGS`], each visible, single-line, at most
/// [`MAX_TAG_CHARS`] characters, without bidirectional controls or separators, and no two the
/// same. The tags are kept as typed, but for the spaces at either end, which show nothing (a
/// form's "rust, go" gives " go").
pub(crate) fn valid_tags(tags: Vec<String>) -> Result<Vec<String>, TagError> {
    if tags.len() > MAX_TAGS {
        return Err(TagError::TooMany(tags.len()));
    }
    let mut seen: Vec<(String, &str)> = Vec::with_capacity(tags.len());
    let tags: Vec<String> = tags.into_iter().map(|tag| tag.trim().to_owned()).collect();
    for tag in &tags {
        check_tag(tag)?;
        let normal = normalize_tag(tag);
        if let Some((_, first)) = seen.iter().find(|(other, _)| *other == normal) {
            return Err(TagError::Repeated { first: (*first).to_owned(), second: tag.clone() });
        }
        seen.push((normal, tag));
    }
    Ok(tags)
}

fn check_tag(tag: &str) -> Result<(), TagError> {
    let owned = || tag.to_owned();
    if let Some(bad) = tag.chars().find(|c| matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')) {
        return Err(TagError::Bidirectional { tag: owned(), bad });
    }
    if let Some(bad) = tag.chars().find(|c| c.is_control()) {
        return Err(TagError::Control { tag: owned(), bad });
    }
    if tag.chars().all(|c| c.is_whitespace() || is_default_ignorable(c)) {
        return Err(TagError::Invisible(owned()));
    }
    let chars = tag.chars().count();
    if chars > MAX_TAG_CHARS {
        return Err(TagError::TooLong { tag: owned(), chars });
    }
    if let Some(bad) = tag.chars().find(|c| SEPARATORS.contains(c)) {
        return Err(TagError::Separator { tag: owned(), bad });
    }
    Ok(())
}

/// The normal forms of `tags`, each once, in order.
pub(crate) fn normalized(tags: &[String]) -> Vec<String> {
    let mut normal: Vec<String> = Vec::with_capacity(tags.len());
    for tag in tags {
        let tag = normalize_tag(tag);
        if !normal.contains(&tag) {
            normal.push(tag);
        }
    }
    normal
}

/// A tag given in an address (`/tags/{tag}`, `/api/tags/{tag}/posts`), in normal form: any form
/// of a tag finds its posts. A tag nobody could write finds nothing; only what could never be a
/// partition key is refused.
pub(crate) fn tag_in_address(tag: &str) -> Result<String, TagError> {
    check_tag(tag.trim())?;
    Ok(normalize_tag(tag))
}

/// The write page's one field of tags, split at its commas; empty pieces (",," or a comma at
/// the end) are no tags.
pub(crate) fn split_typed(field: &str) -> Vec<String> {
    field.split(',').map(str::trim).filter(|piece| !piece.is_empty()).map(str::to_owned).collect()
}

/// A post's short copy under one of its tags, in `tags` (partition `/tag`): the copy its
/// author's partition of `users` holds, with the tag it is filed under. Q7 reads it as a
/// [`Post`], which leaves `tag` and the version out of the answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct TagCopy {
    #[serde(flatten)]
    pub post: Post,
    #[serde(flatten)]
    pub source: SourceVersion,
    /// The tag's normal form: the partition key.
    pub tag: String,
}

/// What a post's copy in `users` records when it is replaced: the tags other than the new
/// copy's own under which a copy may still be in `tags` (those the old copy recorded, and the old
/// copy's own tags), so that they are removed even when the change feed delivered neither the
/// version that added them nor the one that removed them.
pub(crate) fn tagged_before(recorded: &[String], old_tags: &[String], new_tags: &[String]) -> Vec<String> {
    let keep = normalized(new_tags);
    let mut before: Vec<String> = Vec::new();
    for tag in recorded.iter().cloned().chain(normalized(old_tags)) {
        if !keep.contains(&tag) && !before.contains(&tag) {
            before.push(tag);
        }
    }
    before
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_replaced_copy_records_every_tag_a_copy_may_still_be_under() {
        let list = |tags: &[&str]| tags.iter().map(|tag| (*tag).to_owned()).collect::<Vec<_>>();
        assert_eq!(tagged_before(&[], &list(&["Rust", "Go"]), &list(&["rust"])), list(&["go"]));
        assert_eq!(tagged_before(&list(&["c"]), &list(&["Go"]), &list(&["Go"])), list(&["c"]));
        assert_eq!(tagged_before(&list(&["c", "go"]), &list(&["GO"]), &[]), list(&["c", "go"]));
        assert!(tagged_before(&[], &[], &list(&["rust"])).is_empty());
    }

    use super::*;

    fn tags(list: &[&str]) -> Vec<String> {
        list.iter().map(|tag| (*tag).to_owned()).collect()
    }

    #[test]
    fn tags_are_kept_as_typed_and_compared_in_normal_form() {
        assert_eq!(valid_tags(tags(&["Rust", " Cosmos DB ", "José"])), Ok(tags(&["Rust", "Cosmos DB", "José"])));
        assert_eq!(normalize_tag("RUST"), normalize_tag("ｒｕｓｔ"));
        assert_eq!(normalize_tag("Jose\u{301}"), normalize_tag("José"));
        assert_eq!(normalized(&tags(&["Rust", "rust", "Go"])), tags(&["rust", "go"]));
        assert_eq!(valid_tags(Vec::new()), Ok(Vec::new()));
    }

    #[test]
    fn too_many_tags_are_refused() {
        let six = tags(&["a", "b", "c", "d", "e", "f"]);
        assert_eq!(valid_tags(six), Err(TagError::TooMany(6)));
        assert!(valid_tags(tags(&["a", "b", "c", "d", "e"])).is_ok());
    }

    #[test]
    fn an_over_long_tag_is_refused_naming_it() {
        let long = "x".repeat(MAX_TAG_CHARS + 1);
        let refused = valid_tags(vec!["ok".into(), long.clone()]).unwrap_err();
        assert_eq!(refused, TagError::TooLong { tag: long.clone(), chars: MAX_TAG_CHARS + 1 });
        assert!(refused.to_string().contains(&long), "{refused}");
        assert!(valid_tags(vec!["é".repeat(MAX_TAG_CHARS)]).is_ok(), "characters are counted, not bytes");
    }

    #[test]
    fn a_tag_with_nothing_visible_is_refused() {
        for invisible in ["", "   ", "\u{200B}", "\u{3164}\u{FE0F}"] {
            assert_eq!(valid_tags(tags(&[invisible])), Err(TagError::Invisible(invisible.trim().to_owned())), "{invisible:?}");
        }
    }

    #[test]
    fn a_tag_with_bidirectional_controls_is_refused() {
        for bad in ['\u{202E}', '\u{2066}', '\u{2069}', '\u{202A}'] {
            let tag = format!("ab{bad}c");
            assert_eq!(valid_tags(vec![tag.clone()]), Err(TagError::Bidirectional { tag, bad }));
        }
    }

    #[test]
    fn a_tag_with_a_control_character_or_a_separator_is_refused() {
        assert_eq!(valid_tags(tags(&["a\nb"])), Err(TagError::Control { tag: "a\nb".into(), bad: '\n' }));
        assert_eq!(valid_tags(tags(&["a,b"])), Err(TagError::Separator { tag: "a,b".into(), bad: ',' }));
        assert_eq!(valid_tags(tags(&["C/C++"])), Err(TagError::Separator { tag: "C/C++".into(), bad: '/' }));
    }

    #[test]
    fn the_same_tag_twice_in_two_forms_is_refused_naming_both() {
        let refused = valid_tags(tags(&["Rust", "go", "ＲＵＳＴ"])).unwrap_err();
        assert_eq!(refused, TagError::Repeated { first: "Rust".into(), second: "ＲＵＳＴ".into() });
        assert!(refused.to_string().contains("ＲＵＳＴ"), "{refused}");
        assert!(valid_tags(tags(&["Jose\u{301}", "José"])).is_err(), "composed and decomposed");
    }

    #[test]
    fn the_form_field_splits_at_commas() {
        assert_eq!(split_typed(" Rust, Cosmos DB ,, "), tags(&["Rust", "Cosmos DB"]));
        assert!(split_typed("  ").is_empty());
    }

    #[test]
    fn any_form_of_a_tag_in_an_address_finds_it() {
        assert_eq!(tag_in_address("RUST"), Ok("rust".to_owned()));
        assert!(tag_in_address("\u{200B}").is_err());
    }
}
