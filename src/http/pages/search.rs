//! The search page (Q8): the posts found by their words, best first, paged.
//!
//! Its form is the search box in every page's header ([`super::page_layout`]), a plain GET
//! form that needs no script. On this page the box holds the query, so the page has no form of
//! its own. A refused query is the error page, with the reason and the box still filled.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use maud::{Markup, html};
use serde::Deserialize;

use super::short_posts::{count, found_list, tag_address};
use super::{Head, Page, PageQuery, PageResult, SITE_NAME, Viewer, esc, page_layout, url_part};
use crate::app::AppState;
use crate::app::search::{SearchPage, SnippetPart, search};

/// The page's path: the header's form sends its query here.
pub(crate) const PATH: &str = "/search";

/// The box's `maxlength`: the API's limit on `q` (`SearchParams`). That limit counts bytes and
/// `maxlength` counts characters, so a longer query in letters outside ASCII is refused, saying so.
pub(crate) const MAX_QUERY_CHARS: usize = 256;

/// The search page's query string, as the API's (`GET /api/search`).
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SearchQuery {
    /// What to search for; none, or only white space, shows how to search.
    q: Option<String>,
    /// Results a page, 1 to 25 (default 10).
    limit: Option<u32>,
    /// The `continuationToken` of the previous page of the same search.
    continuation_token: Option<String>,
}

/// The `q` of a query string, as given: what the header's box shows on this page. Read apart
/// from [`SearchQuery`] so that the error page of a refused query shows it too.
pub(crate) fn query_of(query_string: &str) -> Option<String> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query_string).ok()?;
    pairs.into_iter().find(|(key, _)| key == "q").map(|(_, value)| value)
}

/// `GET /search?q=`: the posts with the query's words, best first (Q8), with the authors and
/// tags the query names above them, and "Next results" on. Without a query, how to search. A
/// query the search refuses is a 400 page that says why.
pub(crate) async fn search_page(
    State(state): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    PageQuery(params): PageQuery<SearchQuery>,
) -> PageResult {
    let private = viewer.id().is_some();
    let Some(q) = params.q.as_deref().filter(|q| !q.trim().is_empty()) else {
        let description = Some(format!(
            "Search the posts of {SITE_NAME} by their words, in English, Spanish, German and Russian."
        ));
        let html = page_layout("Search", &viewer, Head { description, ..Head::default() }, help());
        return Ok(Page { status: StatusCode::OK, html, private }.revalidated(&headers));
    };
    let page = search(&state, q, params.limit, params.continuation_token.as_deref()).await?;
    let title = format!("Search: {q}");
    let description = Some(format!("The posts of {SITE_NAME} with the words {q}."));
    let main = results(q, &params, &page);
    let html = page_layout(&title, &viewer, Head { description, ..Head::default() }, main);
    Ok(Page { status: StatusCode::OK, html, private }.revalidated(&headers))
}

/// What can be searched, for a page without a query.
fn help() -> Markup {
    html! {
        h1 { "Search" }
        p { "Type what you are looking for in the search box at the top of the page." }
        ul class="help" {
            li { "Words: " code { "kite harbour" } " finds the posts that have both, in any of their forms (kites, kiting)." }
            li { "A phrase in quotes: " code { "\"red kite\"" } " finds those words one after the other." }
            li { "A minus before a word leaves out the posts that have it: " code { "kite -harbour" } "." }
        }
        p {
            "Titles, tags and texts are searched, in English, Spanish, German and Russian. "
            "A word in a title counts most, then one in the tags, then one in the text. "
            "Words too common to search for, such as \u{201c}the\u{201d} or \u{201c}und\u{201d}, are left out. "
            "An author or a tag the query names is shown above the posts."
        }
    }
}

/// A page of results: what it shows and how many, the authors and tags named, the posts with
/// their snippets, and the link to the next page.
fn results(q: &str, params: &SearchQuery, page: &SearchPage) -> Markup {
    let first = params.continuation_token.is_none();
    html! {
        h1 { "Search: " bdi { (esc(q)) } }
        p class="hint" {
            @if page.items.is_empty() {
                @if first { "No post has these words. Try fewer words, or other ones." }
                @else { "No more results." }
            } @else {
                "This page shows " (count(page.items.len() as u64, "post", "posts")) " found, best first."
            }
            " " a href=(PATH) { "How to search" }
        }
        @if !page.complete {
            p class="note" {
                "The search stopped early: these words are seldom found together, so a post that has "
                "them all may be missing. Fewer words find more."
            }
        }
        @if !page.authors.is_empty() || !page.tags.is_empty() {
            ul class="named" aria-label="Authors and tags named" {
                @for author in &page.authors {
                    li { "Author: " a href={ "/users/" (url_part(&author.user_id)) } { bdi { (esc(&author.username)) } } }
                }
                @for tag in &page.tags {
                    li { "Tag: " a rel="tag" href=(tag_address(tag)) { bdi { (esc(tag)) } } }
                }
            }
        }
        @if !page.items.is_empty() {
            (found_list(page.items.iter().map(|found| (&found.post, snippet(&found.snippet)))))
        }
        @if let Some(token) = &page.continuation_token {
            nav class="more" aria-label="More results" {
                a rel="next" href={
                    (PATH) "?q=" (url_part(q))
                    @if let Some(limit) = params.limit { "&limit=" (limit) }
                    "&continuationToken=" (url_part(token))
                } { "Next results" }
            }
        }
    }
}

/// A snippet, its matched words in `<mark>`.
fn snippet(parts: &[SnippetPart]) -> Markup {
    html! {
        @for part in parts {
            @if part.marked { mark { (esc(&part.text)) } } @else { (esc(&part.text)) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::query_of;

    #[test]
    fn the_query_is_read_as_given() {
        assert_eq!(query_of("q=red+kite&limit=2").as_deref(), Some("red kite"));
        assert_eq!(query_of("limit=2&q=%3Cscript%3E").as_deref(), Some("<script>"));
        assert_eq!(query_of("limit=2"), None);
    }
}
