//! The fuzz targets' entry points: each takes the bytes a fuzzer made, does with them what the
//! blog does with bytes from outside, and panics where an invariant that must hold for any
//! input does not. The same functions run under cargo-fuzz (fuzz/fuzz_targets, nightly, with
//! memory limits) and in `cargo test` on stable, on every seed and every case a fuzzer found
//! (tests/fuzz_regressions.rs), so a case once found stays fixed on every toolchain.
//!
//! Not part of the blog's interface: public only so that the fuzz crate and the tests can call
//! it, and hidden from the docs. A return means the input was handled as the blog would
//! (taken, or refused with an error); a panic, an abort or a memory limit met is a finding.

use crate::model::markdown;
use crate::model::picture::PictureAddress;
use crate::pictures::{self, Limits};

/// A picture upload, as the API and the post forms take one (`app::pictures`): its plan read
/// from its header ([`pictures::plan`], with the default limits), refused where it needs more
/// than the pictures' default memory, then prepared within it ([`pictures::prepare_planned`]).
/// Refusing is always allowed; what it takes must be a picture of the plan's size (upright), of
/// the kind and name it says, within the limits, and itself taken again at the same size.
pub fn picture(data: &[u8]) {
    let limits = Limits::default();
    let Ok(prepared) = upload(data, &limits) else { return };
    let picture = &prepared.picture;
    check_picture(picture, &limits);
    assert_eq!(
        picture.name.phone().is_some(),
        prepared.phone.is_some(),
        "a phones' variant where, and only where, the name says"
    );
    if let Some(phone) = &prepared.phone {
        check_picture(phone, &limits);
        assert_eq!(
            Some(&phone.name),
            picture.name.phone().as_ref(),
            "the phones' variant is named from the picture's name"
        );
    }
    assert_eq!(
        prepared.screen.as_ref().map(|screen| &screen.name),
        picture.name.screen().as_ref(),
        "a screens' copy where, and only where, the name says, named from it"
    );
    if let Some(screen) = &prepared.screen {
        check_picture(screen, &limits);
    }
    let small: Vec<_> = prepared.small.iter().map(|small| small.name.clone()).collect();
    let named: Vec<_> = crate::model::picture::SMALL_SIZES
        .iter()
        .filter_map(|size| picture.name.small(*size))
        .collect();
    assert_eq!(small, named, "small copies where, and only where, the name says, named from it");
    for small in &prepared.small {
        check_picture(small, &limits);
    }
    // What is stored is served and may be uploaded again (a reader saves it and adds it to a
    // post of their own): the blog must take its own output, at the same size.
    let again = upload(&picture.bytes, &limits).unwrap_or_else(|error| {
        panic!("the blog refuses the {:?} it wrote itself: {error}", picture.kind)
    });
    assert_eq!(
        (again.picture.width, again.picture.height),
        (picture.width, picture.height),
        "prepared again, another size"
    );
    if picture.kind == crate::model::picture::Kind::Jpeg {
        cut_short_is_refused(&picture.bytes, &again.picture.bytes, &limits);
    }
}

/// The blog's own JPEG `jpeg` (one scan), its scan's coded data cut to half and its end marker
/// put back. It is refused as cut off. Or, where what was cut held nothing the decoder needed
/// (the 1-bits that pad the last byte), it is taken as the same picture (`whole`, what `jpeg`
/// is taken as). It is never a picture whose missing part the decoder made up.
fn cut_short_is_refused(jpeg: &[u8], whole: &[u8], limits: &Limits) {
    let Some(scan) = jpeg.windows(2).position(|marker| marker == [0xFF, 0xDA]) else {
        panic!("the blog's JPEG has no scan");
    };
    let header = usize::from(u16::from_be_bytes([jpeg[scan + 2], jpeg[scan + 3]]));
    let data = scan + 2 + header;
    let end = jpeg.len() - 2;
    let mut cut = jpeg[..data + (end - data) / 2].to_vec();
    cut.extend([0xFF, 0xD9]);
    match upload(&cut, limits) {
        Err(_) => {}
        Ok(taken) => assert!(
            taken.picture.bytes == whole,
            "a JPEG cut short ({} of {} bytes) was taken",
            cut.len(),
            jpeg.len()
        ),
    }
}

/// What the blog does with an upload's bytes, up to what it stores; an error says why not.
fn upload(data: &[u8], limits: &Limits) -> Result<pictures::Prepared, UploadRefused> {
    let plan = pictures::plan(data, limits)?;
    let budget = crate::app::pictures::PictureMemory::DEFAULT.bytes;
    if plan.memory > budget {
        return Err(UploadRefused::OverBudget { needs: plan.memory, budget });
    }
    let prepared = pictures::prepare_planned(data, &plan, limits)?;
    let size = (prepared.picture.width, prepared.picture.height);
    assert!(
        size == (plan.width, plan.height) || size == (plan.height, plan.width),
        "a picture of {size:?} from a plan of {}×{}",
        plan.width,
        plan.height
    );
    Ok(prepared)
}

/// Why [`upload`] refused: what the blog would answer the uploader.
#[derive(Debug, thiserror::Error)]
enum UploadRefused {
    /// Not taken as a picture.
    #[error(transparent)]
    Picture(#[from] pictures::PictureError),
    /// Its plan needs more memory than the pictures have in all.
    #[error("it needs {needs} bytes to prepare, more than the {budget} there are")]
    OverBudget {
        /// The bytes its plan needs.
        needs: u64,
        /// The bytes there are.
        budget: u64,
    },
}

fn check_picture(picture: &pictures::Picture, limits: &Limits) {
    assert_eq!(
        pictures::recognise(&picture.bytes),
        Ok(picture.kind),
        "the bytes written are of the kind named"
    );
    assert_eq!(
        picture.name.size(),
        (picture.width, picture.height),
        "the name says the picture's size"
    );
    assert_eq!(picture.name.kind(), picture.kind, "the name says the picture's kind");
    assert_eq!(
        pictures::PictureName::parse(picture.name.as_str()).as_ref(),
        Some(&picture.name),
        "the name reads back"
    );
    let (width, height) = (picture.width, picture.height);
    assert!(width >= 1 && height >= 1, "a picture of {width}×{height}");
    assert!(
        width.max(height) <= limits.max_side
            && u64::from(width) * u64::from(height) <= limits.max_pixels,
        "a picture of {width}×{height} is past the limits"
    );
}

/// A form with a picture as the post pages read it: the input is the request's `Content-Type`
/// value, a line break, then the body. Every part must lie within the body, in order, and
/// hold no delimiter; a refusal must say what is wrong.
pub fn multipart(data: &[u8]) {
    use crate::http::pages::multipart;
    let Some(at) = data.iter().position(|&byte| byte == b'\n') else { return };
    // A header value reaches the extractor only as text (`HeaderValue::to_str`).
    let Ok(content_type) = std::str::from_utf8(&data[..at]) else { return };
    let Some(boundary) = multipart::boundary(content_type) else { return };
    assert!(!boundary.is_empty() && boundary.len() <= 70, "a boundary of {} bytes", boundary.len());
    let body = bytes::Bytes::copy_from_slice(&data[at + 1..]);
    let parts = match multipart::parts(&body, &boundary) {
        Ok(parts) => parts,
        Err(why) => return assert!(!why.to_string().is_empty(), "a refusal that says nothing"),
    };
    let delimiter = format!("--{boundary}");
    let start = body.as_ptr() as usize;
    let mut after_last = 0;
    for part in &parts {
        let from = (part.body.as_ptr() as usize).wrapping_sub(start);
        let to = from.wrapping_add(part.body.len());
        assert!(
            from <= to && to <= body.len(),
            "a part's body ({from}..{to}) is not within the body ({} bytes)",
            body.len()
        );
        assert!(from >= after_last, "parts overlap or are out of order");
        after_last = to;
        assert!(
            memchr::memmem::find(&part.body, delimiter.as_bytes()).is_none(),
            "a part's body holds the delimiter: the part should have ended there"
        );
    }
}

/// The writer and post whose pictures a post's text may show, in [`markdown`].
const OWNER: &str = "u1";
const POST: &str = "p1";

/// Whose text is rendered: the post's (its pictures may show) or a comment's (none may). The
/// renderer is called through [`render`] alone, so a change to its signature is made once here.
#[derive(Clone, Copy, Debug)]
enum Whose {
    Post,
    Comment,
}

fn pictures(whose: Whose) -> markdown::Pictures<'static> {
    match whose {
        Whose::Post => markdown::Pictures::Of { owner: OWNER, post: POST },
        Whose::Comment => markdown::Pictures::None,
    }
}

fn render(text: &str, whose: Whose, top_heading: u8) -> String {
    markdown::to_html(text, pictures(whose), top_heading)
}

/// A post's or a comment's Markdown, as the pages, the Atom feed and the lists show it. The
/// first byte chooses whose text it is (its high bit: a comment) and the page's top heading
/// (1 to 6); the rest is the text (lossily as UTF-8: the API takes JSON strings).
///
/// The HTML must hold nothing but the renderer's own markup. Every `<` starts a tag from a
/// short list, with attributes from a short list, quoted, with nothing in their values that
/// could end them. There is no `<script`. Links go only to the web, mail or the blog itself,
/// never nested, each `rel="nofollow ugc"`. Headings are no higher than the page's top heading.
/// An `<img>` is only of the post's own pictures (none in a comment), with the size its name
/// says. The plain text (a list's excerpt) has only single spaces between words and none at its
/// ends. The first picture [`markdown::first_picture`] finds is the first `<img>` of the HTML.
pub fn markdown(data: &[u8]) {
    let Some((&choice, text)) = data.split_first() else { return };
    let whose = if choice & 0x80 == 0 { Whose::Post } else { Whose::Comment };
    let top_heading = 1 + (choice & 0x7f) % 6;
    let text = String::from_utf8_lossy(text);
    let html = render(&text, whose, top_heading);
    check_html(&html, whose, top_heading);
    // The first picture (a list's thumbnail, a link preview's picture) is the page's first.
    let first = markdown::first_picture(&text, pictures(whose)).map(|(address, _)| address.url());
    let first_img = html
        .split_once("<img src=\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(src, _)| src.to_owned());
    assert_eq!(first, first_img, "the first picture is not the page's first <img>");
    for cut in [false, true] {
        check_plain(&markdown::to_plain_text(&text, cut));
    }
    // A list's excerpt: the short copy (the text's first characters) as plain text, cut back.
    let short = crate::model::truncate_chars(&text, crate::model::SHORT_CONTENT_CHARS);
    let (excerpt, _) = crate::model::excerpt(short);
    assert!(
        !excerpt.starts_with(char::is_whitespace),
        "an excerpt that starts with a space: {excerpt:?}"
    );
}

fn check_plain(plain: &str) {
    assert!(
        !plain.chars().any(|c| c.is_whitespace() && c != ' '),
        "whitespace other than a space in {plain:?}"
    );
    assert!(!plain.contains("  "), "two spaces in a row in {plain:?}");
    assert!(!plain.starts_with(' ') && !plain.ends_with(' '), "a space at an end of {plain:?}");
}

/// The tags the renderer writes (pulldown-cmark's for CommonMark, tables and strikethrough,
/// and the module's own), and the attributes it gives them.
const TAGS: &[&str] = &[
    "p",
    "br",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "ul",
    "ol",
    "li",
    "blockquote",
    "pre",
    "code",
    "em",
    "strong",
    "del",
    "a",
    "img",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "hr",
];
const ATTRIBUTES: &[&str] = &[
    "dir", "href", "rel", "class", "src", "alt", "width", "height", "loading", "decoding",
    "srcset", "sizes", "start",
];

/// Reads `html` as the renderer's output, tag by tag, and panics at anything else.
fn check_html(html: &str, whose: Whose, top_heading: u8) {
    assert!(!html.to_ascii_lowercase().contains("<script"), "a script in {html:?}");
    let mut rest = html;
    let mut in_link = false;
    while let Some(at) = rest.find('<') {
        let tag_and_after = &rest[at + 1..];
        let end = tag_and_after
            .find('>')
            .unwrap_or_else(|| panic!("a `<` that starts no tag in {html:?}"));
        let tag = parse_tag(&tag_and_after[..end])
            .unwrap_or_else(|why| panic!("{why}: <{}> in {html:?}", &tag_and_after[..end]));
        match (tag.name, tag.closing) {
            ("a", false) => {
                assert!(!in_link, "a link inside a link in {html:?}");
                in_link = true;
                assert_eq!(
                    tag.attribute("rel"),
                    Some("nofollow ugc"),
                    "a link without rel=\"nofollow ugc\" in {html:?}"
                );
                let href = tag
                    .attribute("href")
                    .unwrap_or_else(|| panic!("a link without href in {html:?}"));
                assert!(is_web_mail_or_here(href), "a link to {href:?} in {html:?}");
            }
            ("a", true) => in_link = false,
            ("img", _) => check_img(&tag, whose, html),
            (heading, _) if heading.len() == 2 && heading.starts_with('h') && heading != "hr" => {
                let level = heading[1..].parse::<u8>().expect("in the list of tags");
                assert!(
                    level >= top_heading,
                    "an <{heading}> above the page's <h{top_heading}> in {html:?}"
                );
            }
            _ => {}
        }
        for (name, value) in &tag.attributes {
            if *name == "dir" {
                assert_eq!(*value, "auto", "dir={value:?} in {html:?}");
            }
        }
        rest = &tag_and_after[end + 1..];
    }
    assert!(!in_link, "a link left open in {html:?}");
}

struct ParsedTag<'a> {
    name: &'a str,
    closing: bool,
    attributes: Vec<(&'a str, &'a str)>,
}

impl ParsedTag<'_> {
    fn attribute(&self, wanted: &str) -> Option<&str> {
        self.attributes.iter().find(|(name, _)| *name == wanted).map(|(_, value)| *value)
    }
}

/// `text` (between `<` and `>`) as a tag of the list with attributes of the list, each
/// `name="value"` with no `<`, `>` or `"` in its value; `br` and `hr` may end in ` /`.
fn parse_tag(text: &str) -> Result<ParsedTag<'_>, TagError> {
    let (closing, text) = match text.strip_prefix('/') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let text = text.strip_suffix(" /").unwrap_or(text);
    let name_end = text.find(' ').unwrap_or(text.len());
    let name = &text[..name_end];
    if !TAGS.contains(&name) {
        return Err(TagError::TagNotListed { name: name.to_owned() });
    }
    let mut attributes = Vec::new();
    let mut rest = &text[name_end..];
    while let Some(after_space) = rest.strip_prefix(' ') {
        let (attribute, after) = after_space.split_once("=\"").ok_or(TagError::UnquotedValue)?;
        if !ATTRIBUTES.contains(&attribute) {
            return Err(TagError::AttributeNotListed { attribute: attribute.to_owned() });
        }
        let (value, after) = after.split_once('"').ok_or(TagError::UnendedValue)?;
        if value.contains(['<', '>']) {
            return Err(TagError::AngleInValue { attribute: attribute.to_owned() });
        }
        attributes.push((attribute, value));
        rest = after;
    }
    if !rest.is_empty() {
        return Err(TagError::AfterAttributes { rest: rest.to_owned() });
    }
    if closing && !attributes.is_empty() {
        return Err(TagError::ClosingWithAttributes);
    }
    Ok(ParsedTag { name, closing, attributes })
}

/// What in a rendered tag is not what the renderer may write.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum TagError {
    #[error("a tag not in the list ({name:?})")]
    TagNotListed { name: String },
    #[error("an attribute without a quoted value")]
    UnquotedValue,
    #[error("an attribute not in the list ({attribute:?})")]
    AttributeNotListed { attribute: String },
    #[error("an attribute value that does not end")]
    UnendedValue,
    #[error("a `<` or `>` in the value of {attribute}")]
    AngleInValue { attribute: String },
    #[error("{rest:?} after the attributes")]
    AfterAttributes { rest: String },
    #[error("a closing tag with attributes")]
    ClosingWithAttributes,
}

/// Whether a link's (escaped) address is `http`, `https`, `mailto`, or has no scheme. The
/// scheme is what comes before the first `:` unless a `/`, `?` or `#` comes first, as a browser
/// reads it. Here `&` counts too, which starts an escape here, and `%`, which a scheme never
/// holds.
fn is_web_mail_or_here(href: &str) -> bool {
    match href.find([':', '/', '?', '#']) {
        Some(at) if href.as_bytes()[at] == b':' => {
            let scheme = &href[..at];
            ["http", "https", "mailto"].iter().any(|allowed| scheme.eq_ignore_ascii_case(allowed))
        }
        _ => true,
    }
}

/// An `<img>`: one of the post's own pictures (never in a comment), within the blog's
/// limits, with the width and height its name says.
fn check_img(tag: &ParsedTag<'_>, whose: Whose, html: &str) {
    assert!(!tag.closing, "an </img> in {html:?}");
    assert!(matches!(whose, Whose::Post), "a picture in a comment: {html:?}");
    let src = tag.attribute("src").unwrap_or_else(|| panic!("an <img> without src in {html:?}"));
    let address = PictureAddress::of_url(src)
        .unwrap_or_else(|| panic!("an <img> of {src:?}, not a picture of the blog"));
    assert_eq!(
        (address.owner.as_str(), address.post.as_str()),
        (OWNER, POST),
        "another writer's or post's picture in {html:?}"
    );
    let (width, height) = address.name.size();
    let limits = Limits::default();
    assert!(
        width.max(height) <= limits.max_side
            && u64::from(width) * u64::from(height) <= limits.max_pixels,
        "an <img> of {width}×{height}, which no upload is, in {html:?}"
    );
    assert_eq!(tag.attribute("width"), Some(width.to_string().as_str()), "{html:?}");
    assert_eq!(tag.attribute("height"), Some(height.to_string().as_str()), "{html:?}");
}

/// An import file (`handler import`): the input is the whole file, its header line first. Its
/// lines are checked as the import checks them before it writes anything. The exceptions are
/// what needs the store, and the last line, whose digest a fuzzer cannot make. A file taken has
/// one item a line (blank lines aside). A file refused is refused naming one of its lines, and
/// never with a panic.
pub fn import_line(data: &[u8]) {
    use crate::transfer::TransferError;
    let lines = lines_of(data);
    match crate::transfer::check_unsealed(data) {
        Ok(items) => {
            let text = std::str::from_utf8(data).expect("a file taken is text");
            let blank = |line: &&str| line.trim().is_empty();
            let expected = text.lines().skip(1).filter(|line| !blank(line)).count();
            // (The last line, where there is one, is no item.)
            assert!(
                items == expected || items + 1 == expected,
                "one item a line after the header: {items} of {expected}"
            );
        }
        Err(
            TransferError::Malformed { line, .. }
            | TransferError::Field { line, .. }
            | TransferError::Count { line, .. }
            | TransferError::NameTwice { line, .. },
        ) => {
            assert!(
                (1..=lines.max(1)).contains(&line),
                "line {line} named, of a file of {lines} lines"
            );
        }
        Err(TransferError::NotWhole(_)) => {}
        Err(other) => panic!("refused without naming a line: {other}"),
    }
}

/// The change log as an instance reads it from the database, then appended to: the input is the
/// stored item (JSON), a line break, then the names appended, one a line. Whatever is stored, what
/// an append writes stays within the log's bounds, and a page seen before the append is never
/// told that a name appended is unchanged (it is told it changed, or that the log cannot say).
pub fn change_log(data: &[u8]) {
    let (stored, appended) = match data.iter().position(|&byte| byte == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let Ok(document) = serde_json::from_slice::<serde_json::Value>(stored) else { return };
    let names: std::collections::BTreeSet<String> = String::from_utf8_lossy(appended)
        .split('\n')
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .collect();
    crate::app::kept::change_log::check_an_append(document, &names);
}

/// How many lines `BufRead::lines` reads in `data`.
fn lines_of(data: &[u8]) -> usize {
    let breaks = data.iter().filter(|&&byte| byte == b'\n').count();
    breaks + usize::from(!data.is_empty() && !data.ends_with(b"\n"))
}

/// A reader's query and a post's text, split at the first newline: the query is parsed as a
/// search is (an error is a refusal, and fine), the text cut into words and keys in each
/// language, and a snippet made of it for the query's words.
///
/// Holds for any input: a parsed query searches for 1 to 8 words, each key 1 to 64 bytes and
/// folded already (folding it again changes nothing); a text's words lie on its character
/// boundaries, in order; a snippet's marked segments are words of the text.
pub fn search(data: &[u8]) {
    use crate::model::search::{Language, fold, keys, parse, postings, snippet};
    use crate::model::search::{MAX_KEY_BYTES, MAX_TERMS};
    let data = String::from_utf8_lossy(data);
    let (query, text) = data.split_once('\n').unwrap_or((&data, ""));
    let parsed = parse(query);
    if let Ok(parsed) = &parsed {
        let terms = parsed.required.len() + parsed.excluded.len();
        assert!((1..=MAX_TERMS).contains(&terms), "{terms} terms searched");
        for term in parsed.required.iter().chain(&parsed.excluded) {
            for key in &term.keys {
                assert!((1..=MAX_KEY_BYTES).contains(&key.len()), "key {key:?}");
                if !matches!(key.chars().find(|c| c.is_alphabetic()), Some('\u{400}'..='\u{52F}')) {
                    assert_eq!(&fold(key), key, "a key not folded");
                }
            }
        }
    }
    let marked = parsed.as_ref().map(|query| query.marked_keys()).unwrap_or_default();
    for language in Language::ALL {
        let mut last_end = 0;
        for word in keys(text, language) {
            assert!(word.start >= last_end && word.start < word.end, "words out of order");
            assert!(text.is_char_boundary(word.start) && text.is_char_boundary(word.end));
            assert!((1..=MAX_KEY_BYTES).contains(&word.key.len()));
            last_end = word.end;
        }
        for segment in snippet(text, language, &marked, 200).iter().filter(|s| s.marked) {
            assert!(text.contains(&segment.text), "a marked segment not in the text");
        }
    }
    let (found, _) = postings(query, &[], text, Language::English, 50.0);
    assert!(found.iter().all(|posting| (1..=1000).contains(&posting.impact)));
}

#[cfg(test)]
mod tests {
    use super::{TagError, UploadRefused, parse_tag, upload};
    use crate::pictures::Limits;

    #[test]
    fn a_tag_the_renderer_may_not_write_is_named() {
        assert!(parse_tag(r#"a href="https://example.com/""#).is_ok());
        assert_eq!(
            parse_tag("script").err(),
            Some(TagError::TagNotListed { name: "script".into() })
        );
        assert_eq!(
            parse_tag(r#"a onclick="x""#).err(),
            Some(TagError::AttributeNotListed { attribute: "onclick".into() })
        );
        assert_eq!(
            parse_tag(r#"a href="<x>""#).err(),
            Some(TagError::AngleInValue { attribute: "href".into() })
        );
        assert_eq!(parse_tag(r#"a href="x"#).err(), Some(TagError::UnendedValue));
        assert_eq!(parse_tag(r#"/a href="x""#).err(), Some(TagError::ClosingWithAttributes));
    }

    #[test]
    fn an_upload_that_is_no_picture_is_refused_as_the_blog_refuses_it() {
        assert!(matches!(
            upload(b"not a picture", &Limits::default()),
            Err(UploadRefused::Picture(_))
        ));
    }
}
