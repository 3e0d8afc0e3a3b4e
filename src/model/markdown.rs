//! Posts and comments are Markdown (CommonMark, with GitHub's strikethrough and tables): what
//! the pages and the Atom feed show, rendered here; the API stores and returns the text as
//! written.
//!
//! **Why no sanitizer (such as ammonia).** Raw HTML in the text is not cleaned but never taken
//! as HTML at all. Every raw HTML event the parser reports is turned into text, which the
//! renderer escapes. So `<b>` or `<script>` shows as typed (as it did before Markdown, and as
//! the API returns it). Thus every tag in the output is one this module or pulldown-cmark's
//! renderer writes, from a short list, and every attribute value is escaped. There is nothing
//! left for a sanitizer to remove, and no HTML parser (ammonia brings html5ever and some 20
//! crates) to build and trust. Links are the one way out of the page. Only `http`, `https`,
//! `mailto` and addresses without a scheme are written as links ([`is_allowed_url`]; a
//! `javascript:` or `data:` link shows as its text). Each has `rel="nofollow ugc"`: links in
//! user content, which search engines should not count as the blog's (Google's "Qualify your
//! outbound links"). None has a `target`, so nothing needs `noopener`.
//!
//! **Only the post's own pictures are loaded**: images whose address is a picture of the blog
//! ([`PictureAddress::url`]) under the post's writer and the post itself (`Pictures::Of`). Such
//! an image, of a size an upload can have (`PictureName::within_limits`), is an `<img>` with
//! that size and its phones' variant, both read from its address. A comment shows no picture
//! (`Pictures::None`). Any other image becomes a link to it, labelled with its alt text (or its
//! address when it has none). That includes a `/pictures/…` address of another writer or post,
//! or of a size no upload has. The page believes the size its address says without asking the
//! store (no read per picture). So whoever typed an address could otherwise lay out a frame of
//! any size (`height="4294967295"`). They could also show, in a post or under it, a picture its
//! writer never put there. A name made up under the post's own address is the post's writer's
//! own doing, and shows as a missing picture of a size the blog takes. Loading an image from
//! another site would tell that site the IP address and visit time of every reader of the page.
//! And the pages' Content-Security-Policy allows images from the blog alone (`img-src 'self'`),
//! so a browser would refuse it anyway and log an error.
//!
//! **Bare URLs become links** (`https://…` in running text, as GitHub's "autolink literals").
//! Since pulldown-cmark links only `<https://…>`, text outside links and code goes through
//! linkify. Linkify knows where a URL in prose ends (a trailing `.` or `)` is not part of it).
//! Only `http` and `https` addresses are made links, and `www.example.com` without a scheme is
//! not: a scheme-less rule would also link names such as `README.md`.
//!
//! A line break typed in the text is a line break on the page (CommonMark's soft breaks are
//! rendered as `<br>`, as GitHub does for comments). The blog showed the text with its line
//! breaks before it read Markdown, and a post written then keeps its look.

use super::picture::PictureAddress;
use linkify::{LinkFinder, LinkKind};
use pulldown_cmark::{
    Alignment, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd, TextMergeStream,
};

/// What the parser reads beyond CommonMark. Not footnotes, heading ids or attributes: their
/// `id`s would collide between the post and the comments of one page.
fn options() -> Options {
    Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES
}

/// Whose text is rendered, so which of the blog's pictures it may show as images.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pictures<'a> {
    /// A post's text: the pictures its writer (`owner`, their user id) added to it (`post`, its
    /// id), which are deleted with it.
    Of {
        /// The post's writer's user id.
        owner: &'a str,
        /// The post's id.
        post: &'a str,
    },
    /// A comment's text: no pictures at all. A commenter cannot add one, and a post's picture
    /// quoted under another post would show what its writer put elsewhere.
    None,
}

impl Pictures<'_> {
    /// Whether `address` is shown as an `<img>`: one of these pictures, of a size the blog takes.
    fn shows(self, address: &PictureAddress) -> bool {
        match self {
            Pictures::Of { owner, post } => {
                address.owner == owner && address.post == post && address.name.within_limits()
            }
            Pictures::None => false,
        }
    }
}

/// `text` as HTML, safe to put in a page as it is. `pictures` says whose text it is, and so
/// which pictures are shown as images (see the module's documentation). Any other image is a
/// link. A heading ranks below the page's own around it. One of a higher rank than
/// `top_heading` is written as `<h{top_heading}>`, so that the page's outline stays whole and a
/// writer's `##` keeps its level. A post's title is `h1`, so in its text `#` and `##` are both
/// `h2`, and `###` stays `h3`. Every block takes its own direction (`dir="auto"`), so a
/// right-to-left paragraph reads right to left in a left-to-right post.
pub(crate) fn to_html(text: &str, pictures: Pictures<'_>, top_heading: u8) -> String {
    let mut html = String::with_capacity(text.len() + text.len() / 2);
    pulldown_cmark::html::push_html(
        &mut html,
        safe_events(text, pictures, top_heading).into_iter(),
    );
    html
}

/// `text` as plain text, as a list shows it: what a reader would read, without Markdown's marks
/// (`**`, `#`, fences). Raw HTML stays as typed, as the post's page shows it.
///
/// Inline elements (emphasis, strong, strikethrough, code, links, images) add their text and
/// nothing else: no space at their edges, so `**bold**:` reads `bold:`, as on the page. Line
/// breaks (soft and hard) and the edges of blocks (paragraphs, headings, list items, quotes,
/// code blocks, table cells, rules) are one space, and every run of whitespace is one space, with
/// none at either end. The text keeps its logical order, so right-to-left words come out as
/// typed, and their direction is the page's to show (`dir="auto"`).
///
/// A picture is left out, its alt text too: the alt text describes the picture for who cannot
/// see it, and read into the prose around it, it runs into the next sentence ("at dawn. A red
/// kite The kites came"). The space before it goes when punctuation follows it ("See ![a
/// cat](…)." reads "See.").
///
/// `cut`: `text` is the start of a longer text (a short copy), so a construct may be cut in
/// half (`**bold te`, `[link te`). The marks the parser found no partner for are left out (a
/// mark typed escaped, `\*`, stays), and the reader sees `bold te`, `link te`. A picture cut in
/// half (`![alt te`) is left out, and what follows it with it (only the cut leaves it
/// unpaired).
pub(crate) fn to_plain_text(text: &str, cut: bool) -> String {
    plain_text(text, cut).0
}

/// [`to_plain_text`] of a cut text, and whether it ends at a whole word: it does where the cut
/// fell in a picture, which is left out from its start, else its last word may be cut short.
pub(crate) fn cut_to_plain_text(text: &str) -> (String, bool) {
    plain_text(text, true)
}

/// The plain text, and whether it stopped before a picture the cut left without its end.
fn plain_text(text: &str, cut: bool) -> (String, bool) {
    let mut plain =
        PlainText { text: String::with_capacity(text.len()), space: false, after_picture: false };
    let mut in_picture = 0usize;
    for (event, at) in Parser::new_ext(text, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::Image { .. }) => in_picture += 1,
            Event::End(TagEnd::Image) => {
                in_picture = in_picture.saturating_sub(1);
                plain.after_picture = true;
            }
            _ if in_picture > 0 => {}
            // A picture the cut left without its end: the rest is its alt text and address, left
            // out as a whole picture's are (read as prose, they run into the excerpt, and the
            // lists show the picture beside it).
            Event::Text(mark)
                if cut
                    && &text[at.clone()] == mark.as_ref()
                    && text[at.start..].starts_with("![") =>
            {
                return (plain.text, true);
            }
            // An unpaired mark is a text event of its own, whose source is the mark itself.
            Event::Text(mark)
                if cut
                    && &text[at] == mark.as_ref()
                    && mark
                        .chars()
                        .all(|c| matches!(c, '*' | '_' | '~' | '`' | '[' | ']' | '!')) => {}
            Event::Text(text) | Event::Code(text) | Event::Html(text) | Event::InlineHtml(text) => {
                plain.push(&text)
            }
            Event::Start(tag) if !is_inline(tag.to_end()) => plain.space(),
            Event::End(tag) if !is_inline(tag) => plain.space(),
            Event::SoftBreak | Event::HardBreak | Event::Rule => plain.space(),
            _ => {}
        }
    }
    (plain.text, false)
}

/// Whether an element is inline (it sits in a line of text, which goes on around it), rather
/// than a block. Anything else, including an element a later parser option may bring, is
/// taken as a block: a space too many is better than two words run together.
fn is_inline(tag: TagEnd) -> bool {
    matches!(
        tag,
        TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript
            | TagEnd::Link
            | TagEnd::Image
    )
}

/// Plain text being written: whitespace is held back as one pending space, written only before
/// the next character that is not whitespace, so runs collapse and neither end has any.
struct PlainText {
    text: String,
    space: bool,
    /// A picture was just left out: punctuation right after it takes no space before it.
    after_picture: bool,
}

impl PlainText {
    fn push(&mut self, text: &str) {
        for c in text.chars() {
            if std::mem::take(&mut self.after_picture) && c.is_ascii_punctuation() {
                self.space = false;
            }
            if c.is_whitespace() {
                self.space = true;
            } else {
                if std::mem::take(&mut self.space) && !self.text.is_empty() {
                    self.text.push(' ');
                }
                self.text.push(c);
            }
        }
    }

    fn space(&mut self) {
        self.space = true;
    }
}

/// The parser's events with no raw HTML left and links made safe, ready for pulldown-cmark's
/// renderer (which escapes text and attributes).
fn safe_events<'a>(text: &'a str, pictures: Pictures<'_>, top_heading: u8) -> Vec<Event<'a>> {
    let mut out = Vec::new();
    let mut anchors = Anchors::default();
    let mut in_code_block = false;
    let heading = |level: pulldown_cmark::HeadingLevel| (level as u8).max(top_heading).min(6);
    let mut events = TextMergeStream::new(raw_html_as_text(text).into_iter()).peekable();
    while let Some(event) = events.next() {
        match event {
            Event::Start(Tag::Link { link_type, dest_url, .. }) => {
                let href = if link_type == LinkType::Email {
                    format!("mailto:{dest_url}")
                } else {
                    dest_url.into_string()
                };
                if anchors.link(&href) {
                    out.push(anchor(&href, ""));
                }
            }
            Event::Start(Tag::Image { dest_url, .. }) => match anchors.image(&dest_url, pictures) {
                Image::Picture(address) => {
                    out.push(Event::Html(picture(&address, &alt_text(&mut events)).into()))
                }
                Image::Link { written } => {
                    if written {
                        out.push(anchor(&dest_url, " class=\"image\""));
                        out.push(Event::Text("Image: ".into()));
                    }
                    if matches!(events.peek(), Some(Event::End(TagEnd::Image))) {
                        out.push(Event::Text(dest_url));
                    }
                }
            },
            Event::End(TagEnd::Link | TagEnd::Image) => {
                if anchors.end() {
                    out.push(Event::Html("</a>".into()));
                }
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                in_code_block = true;
                out.push(Event::Start(Tag::CodeBlock(kind)));
            }
            Event::End(TagEnd::CodeBlock) => {
                in_code_block = false;
                out.push(Event::End(TagEnd::CodeBlock));
            }
            Event::Text(text) if !anchors.open && !in_code_block => linkify(text, &mut out),
            Event::Start(Tag::Paragraph) => out.push(Event::Html("<p dir=\"auto\">".into())),
            Event::End(TagEnd::Paragraph) => out.push(Event::Html("</p>\n".into())),
            Event::Start(Tag::Item) => out.push(Event::Html("<li dir=\"auto\">".into())),
            Event::End(TagEnd::Item) => out.push(Event::Html("</li>\n".into())),
            Event::Start(Tag::Heading { level, .. }) => {
                out.push(Event::Html(format!("<h{} dir=\"auto\">", heading(level)).into()));
            }
            Event::End(TagEnd::Heading(level)) => {
                out.push(Event::Html(format!("</h{}>\n", heading(level)).into()))
            }
            // A column's alignment is written as an inline `style`, which the pages' CSP refuses
            // (with an error in the console): the columns keep the stylesheet's alignment.
            Event::Start(Tag::Table(columns)) => {
                out.push(Event::Start(Tag::Table(vec![Alignment::None; columns.len()])))
            }
            Event::SoftBreak => out.push(Event::HardBreak),
            other => out.push(other),
        }
    }
    out
}

/// The links open at a point of the text: whether an `<a>` is open (links do not nest), and for
/// each link or image open, whether it was written as one. One walk of the rules, shared by the
/// renderer and [`first_picture`], so that the picture a list and a link preview show is the
/// first one the post's page shows.
#[derive(Default)]
struct Anchors {
    open: bool,
    written: Vec<bool>,
}

/// What an image of the text is on the page.
enum Image {
    /// One of the text's own pictures, shown as an `<img>` (its description is its alt text).
    Picture(PictureAddress),
    /// A link to it labelled with its description (`written`: an `<a>` was opened, which its
    /// end closes), or inside a link, its description alone.
    Link { written: bool },
}

impl Anchors {
    /// A link starts: whether it is written as an `<a>` to `href`.
    fn link(&mut self, href: &str) -> bool {
        let written = !self.open && is_allowed_url(href);
        self.open |= written;
        self.written.push(written);
        written
    }

    /// An image starts. Inside a link, an image is its alt text.
    fn image(&mut self, dest_url: &str, pictures: Pictures<'_>) -> Image {
        if !self.open
            && let Some(address) =
                PictureAddress::of_url(dest_url).filter(|address| pictures.shows(address))
        {
            // Its events up to its end are its description, read whole where it is shown.
            return Image::Picture(address);
        }
        Image::Link { written: self.link(dest_url) }
    }

    /// A link, or an image not shown as a picture, ends: whether an `<a>` closes.
    fn end(&mut self) -> bool {
        let closes = self.written.pop() == Some(true);
        self.open &= !closes;
        closes
    }
}

/// The first picture `text` shows as an image (as [`to_html`] renders it with `pictures`), and
/// its alt text: what a list of posts shows beside the post's excerpt and a link preview shows
/// for it. Reads no further than that picture.
pub(crate) fn first_picture(
    text: &str,
    pictures: Pictures<'_>,
) -> Option<(PictureAddress, String)> {
    let mut anchors = Anchors::default();
    // Raw HTML neither opens nor closes a link: the parser's own events say where the links and
    // images are. Inline HTML in a description is text there, as the page shows it (an HTML
    // block cannot be inside one).
    let mut events = Parser::new_ext(text, options()).map(|event| match event {
        Event::InlineHtml(html) => Event::Text(html),
        other => other,
    });
    while let Some(event) = events.next() {
        match event {
            Event::Start(Tag::Link { link_type, dest_url, .. }) => {
                let href = if link_type == LinkType::Email {
                    format!("mailto:{dest_url}")
                } else {
                    dest_url.into_string()
                };
                anchors.link(&href);
            }
            Event::Start(Tag::Image { dest_url, .. }) => {
                if let Image::Picture(address) = anchors.image(&dest_url, pictures) {
                    return Some((address, alt_text(&mut events)));
                }
            }
            Event::End(TagEnd::Link | TagEnd::Image) => {
                anchors.end();
            }
            _ => {}
        }
    }
    None
}

/// The parser's events with raw HTML as text: an HTML block becomes a paragraph of its lines.
fn raw_html_as_text(text: &str) -> Vec<Event<'_>> {
    let mut events = Vec::new();
    let mut first_line = false;
    for event in Parser::new_ext(text, options()) {
        match event {
            Event::Start(Tag::HtmlBlock) => {
                first_line = true;
                events.push(Event::Start(Tag::Paragraph));
            }
            Event::End(TagEnd::HtmlBlock) => events.push(Event::End(TagEnd::Paragraph)),
            // A block's HTML comes a line at a time, each with its line break.
            Event::Html(line) => {
                if !std::mem::take(&mut first_line) {
                    events.push(Event::SoftBreak);
                }
                let line = match line {
                    CowStr::Borrowed(line) => CowStr::Borrowed(line.trim_end_matches(['\r', '\n'])),
                    line => line.trim_end_matches(['\r', '\n']).to_owned().into(),
                };
                events.push(Event::Text(line));
            }
            Event::InlineHtml(html) => events.push(Event::Text(html)),
            other => events.push(other),
        }
    }
    events
}

/// `text` with every `http`/`https` URL in it as a link.
fn linkify<'a>(text: CowStr<'a>, out: &mut Vec<Event<'a>>) {
    let mut finder = LinkFinder::new();
    finder.kinds(&[LinkKind::Url]);
    let mut done = 0;
    for link in finder.links(&text) {
        let url = link.as_str();
        // linkify finds any `scheme://`; only the web's are links here.
        let web = url.get(..8).is_some_and(|start| start.eq_ignore_ascii_case("https://"))
            || url.get(..7).is_some_and(|start| start.eq_ignore_ascii_case("http://"));
        if !web {
            continue;
        }
        if link.start() > done {
            out.push(Event::Text(text[done..link.start()].to_owned().into()));
        }
        out.push(anchor(url, ""));
        out.push(Event::Text(url.to_owned().into()));
        out.push(Event::Html("</a>".into()));
        done = link.end();
    }
    match done {
        0 => out.push(Event::Text(text)),
        done if done < text.len() => out.push(Event::Text(text[done..].to_owned().into())),
        _ => {}
    }
}

/// The text of an image's description (its alt text), up to and with the image's end: what a
/// reader would read of it, without Markdown's marks.
fn alt_text<'a>(events: &mut impl Iterator<Item = Event<'a>>) -> String {
    let mut alt = String::new();
    let mut depth = 0;
    for event in events.by_ref() {
        match event {
            Event::End(TagEnd::Image) if depth == 0 => break,
            Event::Start(Tag::Image { .. }) => depth += 1,
            Event::End(TagEnd::Image) => depth -= 1,
            Event::Text(text) | Event::Code(text) => alt.push_str(&text),
            Event::SoftBreak | Event::HardBreak => alt.push(' '),
            _ => {}
        }
    }
    alt
}

/// One of the post's own pictures, as an `<img>`. Its size comes from its name (so nothing
/// moves as it loads), and it is loaded when it comes near the screen. Where it has a phones'
/// variant and a screens' copy, those are given for a slot they cover (`srcset`). The content
/// column is at most 44rem wide, 1,408 device pixels at two a CSS pixel.
fn picture(address: &PictureAddress, alt: &str) -> String {
    let (width, height) = address.name.size();
    let mut tag = String::from("<img src=\"");
    tag.push_str(&address.url());
    tag.push_str("\" alt=\"");
    pulldown_cmark_escape::escape_html(&mut tag, alt).expect("writing to a String cannot fail");
    tag.push_str(&format!(
        "\" width=\"{width}\" height=\"{height}\" loading=\"lazy\" decoding=\"async\""
    ));
    let copies: Vec<PictureAddress> = address.phone().into_iter().chain(address.screen()).collect();
    if !copies.is_empty() {
        tag.push_str(" srcset=\"");
        for copy in &copies {
            tag.push_str(&format!("{} {}w, ", copy.url(), copy.name.size().0));
        }
        tag.push_str(&format!(
            "{} {width}w\" sizes=\"(max-width: 44rem) 100vw, 44rem\"",
            address.url()
        ));
    }
    tag.push('>');
    tag
}

/// The opening tag of a link to `href` (allowed: [`is_allowed_url`]), with `attributes` (the
/// code's own, never the text's) after it.
fn anchor<'a>(href: &str, attributes: &str) -> Event<'a> {
    let mut tag = String::from("<a href=\"");
    // Percent-encodes what a URL may not hold, and escapes `&` and `'`: nothing can leave the
    // quoted attribute.
    pulldown_cmark_escape::escape_href(&mut tag, href).expect("writing to a String cannot fail");
    tag.push_str("\" rel=\"nofollow ugc\"");
    tag.push_str(attributes);
    tag.push('>');
    Event::Html(tag.into())
}

/// Whether a link may lead to `url`: `http`, `https`, `mailto`, or an address with no scheme
/// (on the blog itself, or `//host/...`). A URL's scheme is all before its first `:` unless a
/// `/`, `?` or `#` comes first (the WHATWG URL Standard's scheme state). Whatever a browser
/// would strip from a scheme first (spaces, tabs, line breaks, control characters) stays in it
/// here. So `java\tscript:` is an unknown scheme and refused.
fn is_allowed_url(url: &str) -> bool {
    match url.find([':', '/', '?', '#']) {
        Some(at) if url.as_bytes()[at] == b':' => {
            let scheme = &url[..at];
            ["http", "https", "mailto"].iter().any(|allowed| scheme.eq_ignore_ascii_case(allowed))
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests;
