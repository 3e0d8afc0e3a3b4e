//! A post's tags: how many and how long, what a tag may hold, and when two tags are the same.
//!
//! A tag is shown as its writer typed it and compared in its normal form, the same form usernames
//! are compared in ([`normalize_username`]): "Rust", "RUST" and "ｒｕｓｔ" are one tag. The normal
//! form is what the copies in `tags` are partitioned by and what a tag's page is found by, so a
//! reader following "Rust" finds the posts tagged "rust" too.
//!
//! Letters that only look alike are not made one tag. Unicode's confusable skeletons (UTS #39)
//! fold "rn" into "m" and Cyrillic "сор" into Latin "cop". As a partition key, that would put
//! "burn" and "bum", or a Russian word and an English one, under one page. A tag is instead
//! refused where one of its words mixes scripts, which is how a look-alike is made ("Rսst",
//! Armenian ս among Latin letters, or "Сosmos" with a Cyrillic С). The test is
//! [`mixed_scripts`]: UTS #39's resolved script set, the test behind its "single script"
//! restriction level. A word wholly in one script ("модель", "Straße", "año") and a tag of
//! words in two ("Azure функции") are kept. What this leaves: a word written wholly in another
//! script that happens to look like one in Latin ("сор"), which is a word of that language, not
//! a disguise of a Latin one.

use icu_properties::props::Script;
use icu_properties::script::ScriptWithExtensions;
use serde::{Deserialize, Serialize};

use super::usernames::{is_default_ignorable, normalize_username};
use super::{Post, SourceVersion};

/// The most tags a post may carry. Each tag is one more copy of the post that `PostsChangeFeed`
/// writes on every change of it (an edit, and every comment or like, which move its counters).
/// So the bound is what a post's changes may cost: 5 tags make a change of a tagged post write
/// 7 copies instead of 2. Five is also what Stack Overflow allows, enough to say what a post is
/// about and too few to stuff it with keywords.
pub(crate) const MAX_TAGS: usize = 5;

/// The longest tag accepted, in characters. A tag is a word or two ("rust", "machine learning",
/// "Cosmos DB"), shown in a row of links under a post's title and in its excerpt. A limit of 32
/// characters keeps that row short on a phone. It also keeps the tag's page address and its
/// partition key small (at most 4 bytes a character: 128 bytes, far below Cosmos DB's 2 KiB
/// key).
pub(crate) const MAX_TAG_CHARS: usize = 32;

/// The characters a tag may not hold, beyond control characters: `,` separates tags in the
/// write page's one field, and `/` would split the tag's page address (`/tags/{tag}`) in two.
const SEPARATORS: [char; 2] = [',', '/'];

/// Why a post's tags are refused; each names the tag (as typed) it is about.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TagError {
    #[error("a post may carry at most {MAX_TAGS} tags; it has {0}.")]
    TooMany(usize),
    #[error("the tag {tag:?} is {chars} characters long; a tag may have at most {MAX_TAG_CHARS}.")]
    TooLong { tag: String, chars: usize },
    #[error("the tag {0:?} shows nothing: a tag must contain a visible character.")]
    Invisible(String),
    #[error("the tag {tag:?} contains the control character {bad:?}.")]
    Control { tag: String, bad: char },
    #[error(
        "the tag {tag:?} contains the bidirectional control {bad:?}: it would reorder the text around the tag."
    )]
    Bidirectional { tag: String, bad: char },
    #[error(
        "the tag {tag:?} contains {bad:?}, which separates tags; give it as two tags, or without it."
    )]
    Separator { tag: String, bad: char },
    #[error(
        "the tags {first:?} and {second:?} are the same tag (tags are compared ignoring case and Unicode form); give it once."
    )]
    Repeated { first: String, second: String },
    #[error(
        "the tag {tag:?} is {normal:?} in normal form, which a link reads as a step in the address (a link to \
         /tags/{normal} leads to {}); give it with other characters.",
        if *.normal == ".." { "/" } else { "/tags/" }
    )]
    DotSegment { tag: String, normal: &'static str },
    #[error(
        "the tag {tag:?} mixes {} and {} letters in one word ({:?}), as a tag made to look like another does; write \
         each word in one script.",
        .first, .second, .word
    )]
    MixedScripts { tag: String, word: String, first: String, second: String },
}

/// The normal form of a tag: two tags are the same when theirs are equal. It is the partition
/// key of the tag's copies and the last segment of its page's canonical address.
pub(crate) fn normalize_tag(tag: &str) -> String {
    normalize_username(tag)
}

/// Checks a post's tags as given: at most [`MAX_TAGS`], each visible, single-line, at most
/// [`MAX_TAG_CHARS`] characters, without bidirectional controls or separators, not `.` or `..`
/// (in normal form), each word in one script ([`mixed_scripts`]), and no two the same. The tags
/// are kept as typed, but for the spaces at either end, which show nothing (a form's "rust, go"
/// gives " go").
pub(crate) fn valid_tags(tags: Vec<String>) -> Result<Vec<String>, TagError> {
    checked_tags(tags, true)
}

/// A stored post's tags, as the change feed delivers it: [`valid_tags`] but for the rules on a
/// tag's normal form (dot segments, mixed scripts), which a post stored before them may break.
/// Such a post is still copied under its tags, and its pages show a dot-segment tag without a
/// link; an edit that keeps them is refused, naming them.
pub(crate) fn stored_tags(tags: Vec<String>) -> Result<Vec<String>, TagError> {
    checked_tags(tags, false)
}

fn checked_tags(tags: Vec<String>, new: bool) -> Result<Vec<String>, TagError> {
    if tags.len() > MAX_TAGS {
        return Err(TagError::TooMany(tags.len()));
    }
    let mut seen: Vec<(String, &str)> = Vec::with_capacity(tags.len());
    let tags: Vec<String> = tags.into_iter().map(|tag| tag.trim().to_owned()).collect();
    for tag in &tags {
        check_tag(tag)?;
        let normal = normalize_tag(tag);
        if new {
            check_normal_form(tag, &normal)?;
        }
        if let Some((_, first)) = seen.iter().find(|(other, _)| *other == normal) {
            return Err(TagError::Repeated { first: (*first).to_owned(), second: tag.clone() });
        }
        seen.push((normal, tag));
    }
    Ok(tags)
}

fn check_tag(tag: &str) -> Result<(), TagError> {
    let owned = || tag.to_owned();
    if let Some(bad) =
        tag.chars().find(|c| matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
    {
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

/// What a tag's normal form, the last segment of its page's address, may not be. It may not be
/// a dot segment, which a browser resolves (RFC 3986, 5.2.4: `/tags/..` is `/`), however it was
/// typed ("．．", "‥" are `..` in normal form). Nor may it be a word of mixed scripts.
fn check_normal_form(tag: &str, normal: &str) -> Result<(), TagError> {
    if let Some(dots) = [".", ".."].into_iter().find(|dots| *dots == normal) {
        return Err(TagError::DotSegment { tag: tag.to_owned(), normal: dots });
    }
    if let Some(mixed) = mixed_scripts(normal) {
        let MixedWord { word, first, second } = mixed;
        return Err(TagError::MixedScripts { tag: tag.to_owned(), word, first, second });
    }
    Ok(())
}

/// A word whose letters are of two scripts, and the two.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MixedWord {
    pub word: String,
    pub first: String,
    pub second: String,
}

/// The first word of `text` whose letters cannot all be of one script, if any. The test is
/// UTS #39's resolved script set (section 5.1) of each word, the intersection of its characters'
/// `Script_Extensions`. A character of every script (Common, Inherited: digits, marks) counts
/// as any. Han goes with Hiragana and Katakana (Japanese), with Hangul (Korean) and with
/// Bopomofo, as one writing. A word is what lies between spaces, punctuation and symbols
/// (characters of the Common script that are not letters or digits). So a tag of words in two
/// scripts ("Azure функции") is not mixed, and a word whose letters are ("Rսst") is.
pub(crate) fn mixed_scripts(text: &str) -> Option<MixedWord> {
    let scripts = ScriptWithExtensions::new();
    let is_boundary = |c: char| !c.is_alphanumeric() && scripts.get_script_val(c) == Script::Common;
    for word in text.split(is_boundary).filter(|word| !word.is_empty()) {
        // The writings every character so far can be of.
        let mut possible: Option<Vec<Writing>> = None;
        for c in word.chars() {
            let of_c = writings(scripts.get_script_extensions_val(c).iter());
            if of_c.is_empty() {
                continue;
            }
            match &mut possible {
                None => possible = Some(of_c),
                Some(possible) => {
                    let both: Vec<Writing> =
                        possible.iter().copied().filter(|writing| of_c.contains(writing)).collect();
                    if both.is_empty() {
                        let (first, second) = (possible[0].name(), of_c[0].name());
                        return Some(MixedWord { word: word.to_owned(), first, second });
                    }
                    *possible = both;
                }
            }
        }
    }
    None
}

/// A writing system: one of Unicode's scripts, or one that UTS #39 augments a script set with
/// (ISO 15924's Jpan, Kore, Hanb), whose scripts are written together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Writing {
    Script(Script),
    Japanese,
    Korean,
    HanWithBopomofo,
}

impl Writing {
    fn name(self) -> String {
        match self {
            Writing::Script(script) => icu_properties::PropertyNamesLong::<Script>::new()
                .get(script)
                .unwrap_or("Unknown")
                .replace('_', " "),
            Writing::Japanese => "Japanese".into(),
            Writing::Korean => "Korean".into(),
            Writing::HanWithBopomofo => "Han with Bopomofo".into(),
        }
    }
}

/// A character's writings: its scripts, augmented as UTS #39 augments them; none for a
/// character of any script (Common, Inherited).
fn writings(scripts: impl Iterator<Item = Script>) -> Vec<Writing> {
    let mut writings = Vec::new();
    for script in scripts {
        if matches!(script, Script::Common | Script::Inherited) {
            return Vec::new();
        }
        writings.push(Writing::Script(script));
        let augmented: &[Writing] = match script {
            Script::Han => &[Writing::Japanese, Writing::Korean, Writing::HanWithBopomofo],
            Script::Hiragana | Script::Katakana => &[Writing::Japanese],
            Script::Hangul => &[Writing::Korean],
            Script::Bopomofo => &[Writing::HanWithBopomofo],
            _ => &[],
        };
        writings.extend(augmented);
    }
    writings
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

/// What a post's copy in `users` records when it is replaced. It records the tags other than
/// the new copy's own under which a copy may still be in `tags`: those the old copy recorded,
/// and the old copy's own tags. So they are removed even when the change feed delivered neither
/// the version that added them nor the one that removed them.
pub(crate) fn tagged_before(
    recorded: &[String],
    old_tags: &[String],
    new_tags: &[String],
) -> Vec<String> {
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
    fn tags_are_compared_in_normal_form() {
        assert_eq!(
            valid_tags(tags(&["Rust", " Cosmos DB ", "José"])),
            Ok(tags(&["Rust", "Cosmos DB", "José"]))
        );
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
        assert!(
            valid_tags(vec!["é".repeat(MAX_TAG_CHARS)]).is_ok(),
            "characters are counted, not bytes"
        );
    }

    #[test]
    fn a_tag_with_nothing_visible_is_refused() {
        for invisible in ["", "   ", "\u{200B}", "\u{3164}\u{FE0F}"] {
            assert_eq!(
                valid_tags(tags(&[invisible])),
                Err(TagError::Invisible(invisible.trim().to_owned())),
                "{invisible:?}"
            );
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
        assert_eq!(
            valid_tags(tags(&["a\nb"])),
            Err(TagError::Control { tag: "a\nb".into(), bad: '\n' })
        );
        assert_eq!(
            valid_tags(tags(&["a,b"])),
            Err(TagError::Separator { tag: "a,b".into(), bad: ',' })
        );
        assert_eq!(
            valid_tags(tags(&["C/C++"])),
            Err(TagError::Separator { tag: "C/C++".into(), bad: '/' })
        );
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
    fn a_tag_that_is_a_dot_segment_in_any_form_is_refused() {
        let cases = [
            (".", "."),
            ("..", ".."),
            (" .. ", ".."),
            ("．．", ".."),
            ("\u{2025}", ".."),
            ("\u{2024}", "."),
        ];
        for (dots, normal) in cases {
            let leads_to = if normal == ".." { "/" } else { "/tags/" };
            let refused = valid_tags(tags(&[dots])).unwrap_err();
            assert_eq!(
                refused,
                TagError::DotSegment { tag: dots.trim().to_owned(), normal },
                "{dots:?}"
            );
            assert!(
                refused.to_string().contains(&format!("/tags/{normal} leads to {leads_to})")),
                "{refused}"
            );
        }
        assert!(
            valid_tags(tags(&["...", ".NET", "Node.js", "a..b"])).is_ok(),
            "only a whole dot segment is one"
        );
    }

    /// A post stored before these rules keeps its tags through the change feed, and a dot
    /// segment among them is shown without a link; the rules the tags always had still hold.
    #[test]
    fn a_stored_posts_tags_are_held_to_the_rules_they_were_written_under() {
        assert_eq!(stored_tags(tags(&["..", "Rսst"])).unwrap(), tags(&["..", "Rսst"]));
        assert!(valid_tags(tags(&["Rսst"])).is_err() && valid_tags(tags(&[".."])).is_err());
        assert!(matches!(stored_tags(tags(&["a\u{202E}b"])), Err(TagError::Bidirectional { .. })));
        assert!(matches!(stored_tags(tags(&["Rust", "rust"])), Err(TagError::Repeated { .. })));
    }

    #[test]
    fn a_word_of_letters_from_two_scripts_is_refused_naming_them() {
        let refused = valid_tags(tags(&["go", "Rսst"])).unwrap_err();
        let mixed = TagError::MixedScripts {
            tag: "Rսst".into(),
            word: "rսst".into(),
            first: "Latin".into(),
            second: "Armenian".into(),
        };
        assert_eq!(refused, mixed);
        assert!(refused.to_string().contains("Latin and Armenian"), "{refused}");
        // A Cyrillic С for a Latin C; a Greek ο; and the mathematical letters NFKC makes Latin
        // (𝐑), which are not a way around the rule.
        for disguised in ["Сosmos DB", "Cοsmos", "𝐑սst", "Azure функцииs"] {
            assert!(
                matches!(valid_tags(tags(&[disguised])), Err(TagError::MixedScripts { .. })),
                "{disguised:?}"
            );
        }
    }

    #[test]
    fn the_articles_example_tags_are_kept() {
        let kept = [
            "модель",
            "Модель данных",
            "Straße",
            "Größe",
            "año",
            "Programación",
            "Cosmos DB",
            "C++",
            "Web3",
        ];
        assert_eq!(
            valid_tags(kept[..5].iter().map(|tag| (*tag).to_owned()).collect())
                .map(|tags| tags.len()),
            Ok(5)
        );
        assert_eq!(
            valid_tags(kept[5..].iter().map(|tag| (*tag).to_owned()).collect())
                .map(|tags| tags.len()),
            Ok(4)
        );
        for two_words in ["Azure функции", "GPT-модель", "José", "Jose\u{301}"] {
            assert!(valid_tags(tags(&[two_words])).is_ok(), "{two_words:?}");
        }
        // Scripts that are written together: Han with kana (Japanese), with Hangul (Korean).
        for together in ["日本語のタグ", "漢字ひらがなカタカナ", "한국어漢字", "ラーメン"]
        {
            assert_eq!(mixed_scripts(together), None, "{together:?}");
        }
        assert!(
            mixed_scripts("ひらがな한국어").is_some(),
            "kana and Hangul are not written together"
        );
    }

    #[test]
    fn any_form_of_a_tag_in_an_address_finds_it() {
        assert_eq!(tag_in_address("RUST"), Ok("rust".to_owned()));
        assert!(tag_in_address("\u{200B}").is_err());
    }
}
