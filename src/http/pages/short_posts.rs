//! Posts as every list shows them, in short: the excerpts of the front page, a user's page and a
//! tag's page, and a search's results with their snippets. With them, the rows of tag links and
//! the times and counts the post page shows too.

use maud::{Markup, html};

use super::{esc, url_part};
use crate::model::first_picture::FirstPicture;
use crate::model::picture::{PictureAddress, SMALL_SIZES};
use crate::model::tags::normalize_tag;
use crate::model::{Post, PostStatus, excerpt};

/// Posts in short form: title (a link to the post) with the post's first picture small beside
/// them, author (a link to them, unless the list is theirs), time, the start of the content, and
/// the counts.
pub(crate) fn post_list(posts: &[Post], show_author: bool) -> Markup {
    list_of(posts.iter().map(|post| (post, None)), show_author)
}

/// Posts found by a search, as [`post_list`] shows posts: each with its snippet (the text
/// around what matched) in place of the start of its text.
pub(crate) fn found_list<'a>(found: impl Iterator<Item = (&'a Post, Markup)>) -> Markup {
    list_of(found.map(|(post, snippet)| (post, Some(snippet))), true)
}

/// The list of [`post_list`]; a post with a snippet shows it rather than its excerpt.
fn list_of<'a>(
    posts: impl Iterator<Item = (&'a Post, Option<Markup>)>,
    show_author: bool,
) -> Markup {
    html! {
        ol class="posts" {
            @for (post, snippet) in posts {
                li {
                    article {
                        h2 {
                            a href={ "/posts/" (url_part(&post.id)) } {
                                @if let Some(picture) = post.picture.as_ref().filter(|picture| picture.is_of(post)) {
                                    (thumbnail(picture))
                                }
                                bdi { (esc(&post.title)) }
                            }
                        }
                        p class="meta" {
                            @if show_author {
                                "by " a href={ "/users/" (url_part(&post.user_id)) } { bdi { (esc(&post.user_username)) } } " · "
                            }
                            (time(&post.creation_date))
                            // (Only its author's list of drafts holds a post not published.)
                            @match (&post.status, &post.publish_at) {
                                (PostStatus::Scheduled, Some(at)) => { " · scheduled for " (time(at)) }
                                (PostStatus::Draft, _) => { " · a draft" }
                                _ => {}
                            }
                        }
                        (tag_links(&post.tags))
                        @if let Some(snippet) = snippet {
                            p class="excerpt" dir="auto" { (snippet) }
                        } @else {
                            @let (excerpt, cut) = excerpt(&post.content);
                            p class="excerpt" dir="auto" { (esc(&excerpt)) }
                            @if cut {
                                p class="more" {
                                    a href={ "/posts/" (url_part(&post.id)) } { "Continue reading " bdi { (esc(&post.title)) } }
                                }
                            }
                        }
                        p class="counts" {
                            (count(post.comment_count, "comment", "comments")) " · " (count(post.like_count, "like", "likes"))
                        }
                    }
                }
            }
        }
    }
}

/// A post's first picture, small beside its excerpt. It is its small copy for the box, 1× and
/// 2× (`srcset`), named from the short copy's picture alone. It has the copy's size (the
/// stylesheet sets the box, so nothing moves as it loads) and loads as it comes near the
/// screen. A picture too small for a copy, or an animation, is shown as it is. It sits in the
/// title's link, which leads where a click on it is expected to. So its alt text is empty
/// (decorative, as WCAG's technique H2 for an image and text in one link). The link is then
/// read as the title alone, rather than as the picture's description and then the title. The
/// post's page shows the picture with its description.
fn thumbnail(picture: &FirstPicture) -> Markup {
    let small = PictureAddress::of_url(&picture.url).and_then(|shown| {
        let [one, two] = SMALL_SIZES.map(|size| shown.small(size));
        // The 2× is the picture itself where it is too small for a 2× copy. Each address is
        // written as `url` writes it, which escapes any comma or space that would end it in a
        // `srcset`.
        one.map(|one| (one.name.size(), one.url(), two.unwrap_or(shown).url()))
    });
    html! {
        @if let Some(((width, height), one, two)) = small {
            img class="thumb" src=(one) srcset={ (one) " 1x, " (two) " 2x" } alt="" width=(width) height=(height) loading="lazy" decoding="async";
        } @else {
            img class="thumb" src=(esc(&picture.url)) alt="" width=(picture.width) height=(picture.height) loading="lazy" decoding="async";
        }
    }
}

/// A post's tags as links to their pages, as the writer typed them (isolated from the text
/// around them, as names are); a tag stored before dot segments were refused is shown without
/// one. Nothing for a post without tags.
pub(crate) fn tag_links(tags: &[String]) -> Markup {
    html! {
        @if !tags.is_empty() {
            ul class="tags" aria-label="Tags" {
                @for tag in tags {
                    @match tag_page(tag) {
                        Some(address) => li { a rel="tag" href=(address) { bdi { (esc(tag)) } } },
                        None => li { bdi { (esc(tag)) } },
                    }
                }
            }
        }
    }
}

/// The address of a tag's page: its normal form, so that every form of a tag links to one page.
pub(crate) fn tag_address(tag: &str) -> String {
    format!("/tags/{}", url_part(&normalize_tag(tag)))
}

/// [`tag_address`] where a link can lead there: not for a dot segment (`.`, `..` in normal form),
/// which a browser resolves away (`/tags/..` is `/`, and so is `/tags/%2E%2E`); the tag is
/// normalized once.
fn tag_page(tag: &str) -> Option<String> {
    let normal = normalize_tag(tag);
    (normal != "." && normal != "..").then(|| format!("/tags/{}", url_part(&normal)))
}

/// A post's time, readable, with the exact time for machines (`2026-11-22T06:05:04.007Z` shows
/// as `22 Nov 2026, 06:05 UTC`).
pub(crate) fn time(creation_date: &str) -> Markup {
    let format = time::macros::format_description!(
        "[day padding:none] [month repr:short] [year], [hour]:[minute] UTC"
    );
    let shown =
        time::OffsetDateTime::parse(creation_date, &time::format_description::well_known::Rfc3339)
            .ok()
            .and_then(|at| at.format(&format).ok())
            .unwrap_or_else(|| creation_date.to_owned());
    html! { time datetime=(esc(creation_date)) { (esc(&shown)) } }
}

/// "1 comment", "2 comments".
pub(crate) fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::tag_page;

    /// A tag stored before dot segments were refused is shown without a link, however typed.
    #[test]
    fn a_dot_segment_tag_has_no_page_to_link_to() {
        assert_eq!(tag_page(".."), None);
        assert_eq!(tag_page("．"), None);
        assert_eq!(tag_page("..."), Some("/tags/...".to_owned()));
        assert_eq!(tag_page("Rust"), Some("/tags/rust".to_owned()));
    }
}
