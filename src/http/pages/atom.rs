//! The Atom feeds ([RFC 4287](https://www.rfc-editor.org/rfc/rfc4287)). The newest posts are at
//! `/feed.atom`, from the front page's own cached feed page (Q6, [`crate::app::feed`]). A
//! user's newest posts are at `/users/{userId}/feed.atom` (Q3: one query on the user's
//! partition). A tag's newest posts are at `/tags/{tag}/feed.atom` (Q7: one query on the tag's
//! partition). Each answers with an ETag, and a matching `If-None-Match` is a 304.
//!
//! **Addresses.** A feed's links must be absolute (RFC 4287 §4.2.7: `href` is an IRI reference,
//! and a reader fetched the feed from elsewhere than the pages). They are at the blog's public
//! address, from configuration ([`crate::config::PublicUrl`]), never from the request. So a
//! feed is the same bytes whatever its request's headers say. An entry's id does not depend on
//! the address either. It is `urn:uuid:{postId}` (RFC 4287 §4.2.6 and its example; every post
//! C2 creates has a UUID for id), the same if the blog moves to another address. A post with
//! another kind of id has its absolute address for id.
//!
//! **Content.** The feed pages hold short copies (their content cut to `SHORT_CONTENT_CHARS`),
//! as the front page shows them. A post whose copy is whole is its `content`, rendered from
//! Markdown as on its page (`type="html"`, escaped). A longer one is its excerpt as `summary`
//! (plain text, ended with "…") beside the link to the whole post. Reading each whole post
//! would cost one more read per entry per feed view.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use super::short_posts::tag_address;
use super::tags::{PageTag, shown_tag};
use super::{PageId, PageResult, SITE_DESCRIPTION, SITE_NAME, url_part};
use crate::app::AppState;
use crate::app::feed::feed_page;
use crate::app::lists::{ListParams, OwnerKnown};
use crate::app::tags::posts_with_tag;
use crate::app::users::{get_user, posts_of};
use crate::http::caching;
use crate::http::error::ApiError;
use crate::model::markdown::Pictures;
use crate::model::{Post, excerpt, markdown};

/// The feed's media type (RFC 4287 §7).
const ATOM: &str = "application/atom+xml; charset=utf-8";

/// `GET /feed.atom`: the newest posts, the front page's first page from the same cache.
pub(crate) async fn blog_feed(State(state): State<AppState>, headers: HeaderMap) -> PageResult {
    let origin = public_origin()?;
    let page = feed_page(&state, &ListParams::default()).await?;
    let about = About {
        title: SITE_NAME.to_owned(),
        subtitle: SITE_DESCRIPTION,
        page: format!("{origin}/"),
        feed: format!("{origin}/feed.atom"),
    };
    Ok(answer(&headers, feed(origin.as_str(), &about, &page.list.items)))
}

/// `GET /users/{userId}/feed.atom`: the user's newest posts (Q3, one query; and one point read
/// for their name when they have none yet, which also tells a user that does not exist: 404).
pub(crate) async fn user_feed(
    State(state): State<AppState>,
    PageId(user_id): PageId,
    headers: HeaderMap,
) -> PageResult {
    let origin = public_origin()?;
    let posts = posts_of(&state, &user_id, &ListParams::default(), OwnerKnown::Yes).await?;
    let username = match posts.items.first() {
        Some(newest) => newest.user_username.clone(),
        None => get_user(&state, &user_id).await?.username,
    };
    let page = format!("{origin}/users/{}", url_part(&user_id));
    let about = About {
        title: format!("{username} · {SITE_NAME}"),
        subtitle: "Their newest posts.",
        feed: format!("{page}/feed.atom"),
        page,
    };
    Ok(answer(&headers, feed(origin.as_str(), &about, &posts.items)))
}

/// `GET /tags/{tag}/feed.atom`: the newest posts with the tag (Q7, one query on the tag's
/// partition). A tag nobody used is an empty feed, as its page is an empty list.
pub(crate) async fn tag_feed(
    State(state): State<AppState>,
    PageTag(given): PageTag,
    headers: HeaderMap,
) -> PageResult {
    let origin = public_origin()?;
    let posts = posts_with_tag(&state, &given, &ListParams::default()).await?;
    let tag = shown_tag(&posts.items, &given);
    let page = format!("{origin}{}", tag_address(&given));
    let about = About {
        title: format!("{tag} · {SITE_NAME}"),
        subtitle: "The newest posts with this tag.",
        feed: format!("{page}/feed.atom"),
        page,
    };
    Ok(answer(&headers, feed(origin.as_str(), &about, &posts.items)))
}

/// The feed's answer, or 304 when the reader has it already.
fn answer(headers: &HeaderMap, xml: String) -> Response {
    caching::revalidated(headers, ATOM, xml)
}

/// The blog's public address, which the page request being answered carries.
fn public_origin() -> Result<crate::config::PublicUrl, ApiError> {
    super::page_origin()
        .ok_or_else(|| ApiError::internal("a feed was rendered outside a page request"))
}

/// What a feed says of itself.
struct About {
    title: String,
    subtitle: &'static str,
    /// The page the feed follows (`rel="alternate"`).
    page: String,
    /// The feed's own address (`rel="self"`), also its id.
    feed: String,
}

/// The time of a feed with no entries: RFC 4287 §4.2.15 requires one, and the time of the
/// request would change the feed, and its ETag, at every request.
const NEVER_UPDATED: &str = "1970-01-01T00:00:00Z";

/// The feed document, newest post first.
fn feed(origin: &str, about: &About, posts: &[Post]) -> String {
    let mut xml = Xml(String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"));
    // The posts' HTML refers to the blog's own pictures by path (`/pictures/...`): relative
    // references resolve against `xml:base` (RFC 4287 §2), said here rather than left to the
    // feed's own address, which some readers do not apply.
    let base = format!("{origin}/");
    xml.open("feed", &[("xmlns", "http://www.w3.org/2005/Atom"), ("xml:base", &base)]);
    xml.leaf("id", &[], &about.feed);
    xml.leaf("title", &[("type", "text")], &about.title);
    xml.leaf("subtitle", &[("type", "text")], about.subtitle);
    // Dates are RFC 3339 in one format, so the greatest text is the latest time (§3.3).
    let latest = posts.iter().map(updated).max().unwrap_or(NEVER_UPDATED);
    xml.leaf("updated", &[], latest);
    xml.empty("link", &[("rel", "self"), ("type", "application/atom+xml"), ("href", &about.feed)]);
    xml.empty("link", &[("rel", "alternate"), ("type", "text/html"), ("href", &about.page)]);
    for post in posts {
        let address = format!("{origin}/posts/{}", url_part(&post.id));
        xml.open("entry", &[]);
        let id = match uuid::Uuid::parse_str(&post.id) {
            Ok(uuid) => format!("urn:uuid:{}", uuid.hyphenated()),
            Err(_) => address.clone(),
        };
        xml.leaf("id", &[], &id);
        xml.leaf("title", &[("type", "text")], &post.title);
        xml.empty("link", &[("rel", "alternate"), ("type", "text/html"), ("href", &address)]);
        xml.leaf("published", &[], &post.creation_date);
        xml.leaf("updated", &[], updated(post));
        xml.open("author", &[]);
        xml.leaf("name", &[], &post.user_username);
        xml.leaf("uri", &[], &format!("{origin}/users/{}", url_part(&post.user_id)));
        xml.close("author");
        // Its tags (§4.2.2): the normal form as the term, which every form of the tag shares,
        // and the tag as its writer typed it as the label.
        for tag in &post.tags {
            xml.empty(
                "category",
                &[("term", &crate::model::tags::normalize_tag(tag)), ("label", tag)],
            );
        }
        // The post's text shows the pictures its writer added to it, as its page does.
        let pictures = Pictures::Of { owner: &post.user_id, post: &post.id };
        match excerpt(&post.content) {
            (summary, true) => xml.leaf("summary", &[("type", "text")], &summary),
            // §3.1.1.2: the HTML as text, escaped once more by the writer.
            (_, false) => xml.leaf(
                "content",
                &[("type", "html")],
                &markdown::to_html(&post.content, pictures, 2),
            ),
        }
        xml.close("entry");
    }
    xml.close("feed");
    xml.0
}

/// When a post last changed as readers see it (§4.2.15): its edit, or its creation.
fn updated(post: &Post) -> &str {
    post.edited_at.as_deref().unwrap_or(&post.creation_date)
}

/// A small XML writer: names and attribute names are the code's own; every value, text or
/// attribute, goes through [`escape`].
pub(super) struct Xml(pub(super) String);

impl Xml {
    pub(super) fn start(&mut self, name: &str, attributes: &[(&str, &str)]) {
        self.0.push('<');
        self.0.push_str(name);
        for (attribute, value) in attributes {
            self.0.push_str(&format!(" {attribute}=\""));
            escape(value, true, &mut self.0);
            self.0.push('"');
        }
    }

    pub(super) fn open(&mut self, name: &str, attributes: &[(&str, &str)]) {
        self.start(name, attributes);
        self.0.push_str(">\n");
    }

    pub(super) fn close(&mut self, name: &str) {
        self.0.push_str(&format!("</{name}>\n"));
    }

    pub(super) fn empty(&mut self, name: &str, attributes: &[(&str, &str)]) {
        self.start(name, attributes);
        self.0.push_str("/>\n");
    }

    pub(super) fn leaf(&mut self, name: &str, attributes: &[(&str, &str)], text: &str) {
        self.start(name, attributes);
        self.0.push('>');
        escape(text, false, &mut self.0);
        self.0.push_str(&format!("</{name}>\n"));
    }
}

/// `text` as XML character data, fit for text and double- or single-quoted attributes. The five
/// characters XML gives meaning (`& < > " '`) become references. The characters XML 1.0 does
/// not allow in a document at all become U+FFFD: no reference can carry them either. They are
/// the C0 controls but tab, line feed and carriage return, and U+FFFE and U+FFFF (§2.2 `Char`).
/// A carriage return is a reference, or a parser would read it as a line feed (§2.11); in an
/// `attribute`, so are line feeds and tabs, or it would read them as spaces (§3.3.3).
pub(super) fn escape(text: &str, attribute: bool, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#13;"),
            '\t' if attribute => out.push_str("&#9;"),
            '\n' if attribute => out.push_str("&#10;"),
            '\t' | '\n' => out.push(c),
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(text: &str, attribute: bool) -> String {
        let mut out = String::new();
        escape(text, attribute, &mut out);
        out
    }

    #[test]
    fn text_is_made_safe_for_xml() {
        assert_eq!(escaped("<script>&\"'", false), "&lt;script&gt;&amp;&quot;&apos;");
        assert_eq!(escaped("a\tb\nc\rd", false), "a\tb\nc&#13;d");
        assert_eq!(escaped("a\tb\nc\rd", true), "a&#9;b&#10;c&#13;d");
        assert_eq!(escaped("bell\u{7} \u{fffe} é", false), "bell\u{fffd} \u{fffd} é");
    }
}
