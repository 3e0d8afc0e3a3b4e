//! The sitemap ([sitemaps.org](https://www.sitemaps.org/protocol.html)): `/sitemap.xml`, an
//! index of one file per month of posts, and each month's file at `/sitemaps/{YYYY-MM}.xml`
//! (then `{YYYY-MM}-2.xml`, ... past 50,000 posts), listing every published post of the month.
//!
//! Both are kept by the change feed ([`crate::app::sitemap`]): the index is one query on one
//! partition of `feed`, and a file one query on its month's. Addresses are at the blog's public
//! address, from configuration, never from the request, as the Atom feeds' are.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Uri, header};
use axum::response::Response;

use super::atom::Xml;
use super::{PageResult, url_part};
use crate::app::AppState;
use crate::app::sitemap::{URLS_PER_FILE, month_file, months};
use crate::http::caching;
use crate::http::error::ApiError;

/// The protocol's media type, as search engines fetch it.
const XML: &str = "application/xml; charset=utf-8";

/// The protocol's namespace, on both kinds of file.
const NAMESPACE: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";

/// How long a reader (a crawler, a CDN) may keep a sitemap. Crawlers read one every few hours
/// at most, and a new post waits no longer than this to be listed to them.
const CACHE_CONTROL: &str = "public, max-age=3600";

/// `GET /sitemap.xml`: each month's file, with the latest change of its list. A blog with no
/// published post is 404: the protocol's index lists one file at least.
pub(crate) async fn sitemap_index(State(state): State<AppState>, headers: HeaderMap) -> PageResult {
    let origin = public_origin()?;
    let months = months(&state).await?;
    if months.is_empty() {
        return Err(
            ApiError::not_found("The sitemap lists no file yet: no post is published.").into()
        );
    }
    let mut xml = Xml(String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"));
    xml.open("sitemapindex", &[("xmlns", NAMESPACE)]);
    for month in months {
        for part in 1..=month.posts.div_ceil(URLS_PER_FILE) {
            xml.open("sitemap", &[]);
            xml.leaf("loc", &[], &format!("{origin}/sitemaps/{}", file_name(&month.month, part)));
            xml.leaf("lastmod", &[], &month.lastmod);
            xml.close("sitemap");
        }
    }
    xml.close("sitemapindex");
    Ok(answer(&headers, xml.0))
}

/// `GET /sitemaps/{file}`: a month's published posts, oldest first. A name not of the form is
/// 400; a month, or a part of it, with no post is 404.
pub(crate) async fn sitemap_file(
    State(state): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
) -> PageResult {
    let origin = public_origin()?;
    // The name as sent: every sitemap's name is plain ASCII, so one with an escape is none.
    let file = uri.path().rsplit('/').next().unwrap_or_default();
    let (month, part) = parse_file_name(file).ok_or_else(|| {
        let shown = crate::model::truncate_chars(file, 100);
        ApiError::bad_request(format!(
            "{shown:?} is not a sitemap's name: it is a month and .xml (2026-12.xml), \
             or a month's later part (2026-12-2.xml)."
        ))
    })?;
    let listed = month_file(&state, month, part).await?;
    if listed.is_empty() {
        return Err(ApiError::not_found(format!(
            "There is no sitemap {file}: no post of that month is listed there."
        ))
        .into());
    }
    let mut xml = Xml(String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"));
    xml.open("urlset", &[("xmlns", NAMESPACE)]);
    for post in listed {
        xml.open("url", &[]);
        xml.leaf("loc", &[], &format!("{origin}/posts/{}", url_part(&post.id)));
        xml.leaf("lastmod", &[], &post.lastmod);
        xml.close("url");
    }
    xml.close("urlset");
    Ok(answer(&headers, xml.0))
}

/// A month's `part`th file's name: `2026-12.xml`, then `2026-12-2.xml`.
fn file_name(month: &str, part: u64) -> String {
    if part == 1 { format!("{month}.xml") } else { format!("{month}-{part}.xml") }
}

/// The month (`YYYY-MM`, month 01 to 12) and part (from 1) a file's name says; `None` for any
/// other name, a part written `-1` or with a leading zero included: one name per file.
fn parse_file_name(name: &str) -> Option<(&str, u64)> {
    let stem = name.strip_suffix(".xml")?;
    let month = stem.get(..7)?;
    let bytes = month.as_bytes();
    let digits = |range: std::ops::Range<usize>| bytes[range].iter().all(u8::is_ascii_digit);
    if !(digits(0..4)
        && bytes[4] == b'-'
        && digits(5..7)
        && (1..=12).contains(&month[5..].parse::<u8>().unwrap_or(0)))
    {
        return None;
    }
    let part = match &stem[7..] {
        "" => 1,
        rest => {
            let number = rest.strip_prefix('-')?;
            if number.starts_with('0')
                || number.len() > 9
                || !number.bytes().all(|b| b.is_ascii_digit())
            {
                return None;
            }
            number.parse::<u64>().ok().filter(|part| *part >= 2)?
        }
    };
    Some((month, part))
}

/// The file's answer with its ETag, or 304 when the reader has it already.
fn answer(headers: &HeaderMap, xml: String) -> Response {
    let mut response = caching::revalidated(headers, XML, xml);
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL));
    response
}

/// The blog's public address, which the page request being answered carries.
fn public_origin() -> Result<crate::config::PublicUrl, ApiError> {
    super::page_origin()
        .ok_or_else(|| ApiError::internal("a sitemap was rendered outside a page request"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_name_says_one_month_and_part() {
        assert_eq!(parse_file_name("2026-12.xml"), Some(("2026-12", 1)));
        assert_eq!(parse_file_name("2026-12-2.xml"), Some(("2026-12", 2)));
        assert_eq!(parse_file_name("2026-01-15.xml"), Some(("2026-01", 15)));
        for refused in [
            "2026-12",
            "2026-13.xml",
            "2026-00.xml",
            "2026-12-1.xml",
            "2026-12-02.xml",
            "2026-12-.xml",
            "2026-1.xml",
            "x026-12.xml",
            "2026-12.xml.gz",
            "2026-12-9999999999.xml",
            "é026-12.xml",
            "",
        ] {
            assert_eq!(parse_file_name(refused), None, "{refused}");
        }
        assert_eq!(file_name("2026-12", 1), "2026-12.xml");
        assert_eq!(file_name("2026-12", 3), "2026-12-3.xml");
    }
}
