use std::collections::BTreeSet;

use super::query::MAX_WORDS;
use super::rank::MAX_POSTINGS_PER_POST;
use super::*;

fn keys_of(text: &str, language: Language) -> Vec<String> {
    keys(text, language).filter(|word| !word.stop).map(|word| word.key).collect()
}

fn query_keys(text: &str) -> Vec<Vec<String>> {
    parse(text).unwrap().required.into_iter().map(|term| term.keys).collect()
}

#[test]
fn forms_of_a_word_share_its_key_in_each_language() {
    assert_eq!(keys_of("Kites kite", Language::English), ["kite", "kite"]);
    assert_eq!(keys_of("Partitionen Partition", Language::German), ["partition", "partition"]);
    assert_eq!(keys_of("particiones partición", Language::Spanish), ["particion", "particion"]);
    assert_eq!(keys_of("модели модель", Language::Russian), ["модел", "модел"]);
}

#[test]
fn a_query_word_finds_the_key_of_its_post_in_any_of_the_four_languages() {
    for (post, language, query) in [
        ("kite", Language::English, "kites"),
        ("Partition", Language::German, "Partitionen"),
        ("partición", Language::Spanish, "particiones"),
        ("модель", Language::Russian, "модели"),
    ] {
        let key = keys_of(post, language).remove(0);
        assert!(query_keys(query)[0].contains(&key), "{query} does not find {post}");
    }
}

#[test]
fn a_cyrillic_word_is_russian_whatever_the_posts_language() {
    assert_eq!(keys_of("модели", Language::English), ["модел"]);
}

#[test]
fn case_accents_and_compatibility_forms_are_folded() {
    assert_eq!(keys_of("Café", Language::English), ["cafe"]);
    assert_eq!(keys_of("naïve", Language::English), keys_of("naive", Language::English));
    assert_eq!(keys_of("ﬁle", Language::English), keys_of("file", Language::English));
    assert_eq!(keys_of("２０２４", Language::English), ["2024"]);
    assert_eq!(keys_of("Straße", Language::German), keys_of("strasse", Language::German));
}

#[test]
fn russian_keeps_its_short_i() {
    assert_ne!(keys_of("мой", Language::Russian), keys_of("мои", Language::Russian));
}

#[test]
fn a_word_longer_than_a_key_has_none() {
    assert!(keys_of(&"a".repeat(MAX_KEY_BYTES + 1), Language::English).is_empty());
    assert!(keys_of(&"я".repeat(200), Language::Russian).is_empty());
}

#[test]
fn stop_words_are_flagged_not_dropped() {
    let words: Vec<_> = keys("the kite", Language::English).collect();
    assert_eq!(words.len(), 2);
    assert!(words[0].stop && !words[1].stop);
    assert_eq!((words[1].start, words[1].end), (4, 8));
}

#[test]
fn a_query_asks_for_its_words_phrases_and_exclusions() {
    let query = parse(r#"kites -storm "partition key" -"hot partition""#).unwrap();
    let required: Vec<&str> = query.required.iter().map(|term| term.surface.as_str()).collect();
    assert_eq!(required, ["kites", "partition", "key"]);
    assert_eq!(query.excluded.len(), 1);
    assert_eq!(query.excluded[0].surface, "storm");
    assert_eq!(query.phrases.len(), 1);
    assert_eq!(query.excluded_phrases.len(), 1);
    assert_eq!(query.excluded_phrases[0][0].surface, "hot");
}

#[test]
fn an_unclosed_quote_runs_to_the_end() {
    let query = parse(r#"kite "partition key"#).unwrap();
    assert_eq!(query.phrases.len(), 1);
    assert_eq!(query.required.len(), 3);
}

#[test]
fn stop_words_are_not_required_beside_other_words() {
    let query = parse("the kite").unwrap();
    assert_eq!(query.required.len(), 1);
    assert_eq!(query.required[0].surface, "kite");
}

#[test]
fn a_word_another_language_lists_as_a_stop_word_is_not_required() {
    // "die" is German's article, English's verb: beside another word it is not required.
    assert_eq!(parse("die kite").unwrap().required.len(), 1);
    // Alone, it is searched for in English, the language that does not list it.
    assert_eq!(query_keys("die"), [vec!["die".to_owned()]]);
}

#[test]
fn words_no_language_searches_for_are_refused() {
    assert_eq!(parse("и в"), Err(QueryError::OnlyStopWords));
    // German's articles alone are searched for in English and Spanish, which do not list them.
    assert_eq!(query_keys("und der"), [vec!["und".to_owned()], vec!["der".to_owned()]]);
}

#[test]
fn query_syntax_of_the_store_is_only_words() {
    let query = parse("SELECT * FROM c WHERE c.id = '1' OR 1=1").unwrap();
    assert!(query.required.iter().all(|term| {
        term.keys.iter().all(|key| key.chars().all(char::is_alphanumeric) || key.contains('.'))
    }));
    assert_eq!(parse("*** ??? ::"), Err(QueryError::NoWords));
}

#[test]
fn bad_queries_are_refused_saying_why() {
    assert_eq!(parse("   "), Err(QueryError::Empty));
    let long = "kite ".repeat(60);
    assert_eq!(parse(&long), Err(QueryError::TooLong { bytes: long.len() }));
    assert_eq!(parse("kite\u{0}"), Err(QueryError::ControlCharacter { code: 0 }));
    let many = "a1 ".repeat(MAX_WORDS + 1);
    assert!(matches!(parse(&many), Err(QueryError::TooManyWords { .. })));
    assert!(matches!(
        parse("one two three four five six seven eight nine"),
        Err(QueryError::TooManyTerms { terms: 9 })
    ));
    let mixed = parse("Сosmos").unwrap_err();
    assert!(mixed.to_string().contains("Сosmos"), "{mixed}");
}

#[test]
fn the_same_word_twice_is_searched_once() {
    assert_eq!(parse("kite kites KITE").unwrap().required.len(), 1);
}

#[test]
fn a_title_match_outranks_a_tag_match_which_outranks_any_body_match() {
    let impact = |title: &str, tags: &[&str], body: &str| {
        let tags: Vec<String> = tags.iter().map(|tag| (*tag).to_owned()).collect();
        let (postings, _) = postings(title, &tags, body, Language::English, 100.0);
        postings.into_iter().find(|posting| posting.key == "kite").unwrap()
    };
    let title = impact("Kites", &[], "nothing");
    let tag = impact("Nothing", &["kites"], "nothing");
    let body = impact("Nothing", &[], &"kite ".repeat(50));
    assert!(title.impact > tag.impact && tag.impact > body.impact, "{title:?} {tag:?} {body:?}");
    assert_eq!((title.fields, tag.fields, body.fields), (1, 2, 4));
    let all = impact("Kites", &["kite"], "a kite");
    assert!(all.impact > title.impact);
    assert_eq!(all.fields, 7);
}

#[test]
fn a_long_body_is_indexed_under_its_title_tags_and_most_frequent_words() {
    let body: String = (0..1000).map(|n| format!("word{n} ")).collect::<String>() + "often often";
    let (postings, lengths) = postings("Kites", &[], &body, Language::English, 100.0);
    assert_eq!(postings.len(), MAX_POSTINGS_PER_POST);
    assert_eq!(lengths.body, 1002);
    assert!(postings.iter().any(|posting| posting.key == "kite"));
    assert!(postings.iter().any(|posting| posting.key == "often"));
}

#[test]
fn idf_is_higher_for_rarer_words_and_never_zero() {
    assert!(idf(1000, 1) > idf(1000, 100));
    assert!(idf(1000, 1000) > 0.0);
    assert!(idf(0, 5) > 0.0);
}

#[test]
fn a_snippet_marks_the_matches_around_the_first() {
    let text = "One two three four five six seven eight nine ten kites fly high\nover the hill.";
    let marked = BTreeSet::from(["kite"]);
    let segments = snippet(text, Language::English, &marked, 60);
    let joined: String = segments.iter().map(|segment| segment.text.as_str()).collect();
    assert_eq!(joined, "…five six seven eight nine ten kites fly high over the hill.");
    assert_eq!(segments.iter().filter(|segment| segment.marked).count(), 1);
    let marked_text = segments.iter().find(|segment| segment.marked).unwrap();
    assert_eq!(marked_text.text, "kites");
}

#[test]
fn a_snippet_without_a_match_is_the_texts_start() {
    let segments = snippet("A kite.\nAnother.", Language::English, &BTreeSet::new(), 8);
    let joined: String = segments.iter().map(|segment| segment.text.as_str()).collect();
    assert_eq!(joined, "A kite…");
}
