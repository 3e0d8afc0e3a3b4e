//! The sitemap over HTTP: `/sitemap.xml` and each month's file are valid against sitemaps.org's
//! schemas (in `tests/sitemaps/`, checked with `xmllint --schema`), list every published post
//! once the change feed has delivered it and none other, and are named in `robots.txt` at the
//! configured address. And a post's page describes it to search engines as schema.org's
//! `BlogPosting`, in JSON-LD.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use blog::testing::cosmos::{Container, PageRequest, QuerySpec, WriteOp};
use common::TestApp;
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const NS: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";

struct Got {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Got {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|value| value.to_str().ok()).unwrap_or("")
    }
}

async fn get(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> Got {
    let mut request = app.client.get(format!("{}{path}", app.base));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    Got { status, headers, body: response.text().await.unwrap() }
}

/// Each `<loc>` and `<lastmod>` of a sitemap file or index, in order.
fn listed(xml: &str) -> Vec<(String, String)> {
    let document = roxmltree::Document::parse(xml).expect("well-formed XML");
    let root = document.root_element();
    assert_eq!(root.tag_name().namespace(), Some(NS), "{xml}");
    root.children()
        .filter(|node| node.is_element())
        .map(|item| {
            let text = |name: &str| {
                let found = item.children().find(|child| child.has_tag_name((NS, name)));
                found.and_then(|node| node.text()).unwrap_or_default().to_owned()
            };
            (text("loc"), text("lastmod"))
        })
        .collect()
}

/// The sitemap at `path` once `check` holds of what it lists (the change feed delivers a
/// moment after the write; bounded to 10 s). A 404 lists nothing.
async fn sitemap_when(
    app: &TestApp,
    path: &str,
    check: impl Fn(&[(String, String)]) -> bool,
) -> Vec<(String, String)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = get(app, path, &[]).await;
        let items = match got.status {
            StatusCode::OK => listed(&got.body),
            StatusCode::NOT_FOUND => Vec::new(),
            other => panic!("{path}: {other} {}", got.body),
        };
        if check(&items) {
            return items;
        }
        assert!(Instant::now() < deadline, "{path} never became as expected: {items:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A post's document as `posts` holds it.
async fn stored(app: &TestApp, id: &str) -> Value {
    app.state.store.read::<Value>(Container::Posts, id, id).await.unwrap().unwrap()
}

/// The month file's name of a `creationDate`.
fn file_of(creation_date: &str) -> String {
    format!("{}.xml", &creation_date[..7])
}

/// Runs `xmllint --schema` on `xml` with one of the vendored schemas: `Err` holds what it said.
fn validate(xml: &str, schema: &str) -> Result<(), String> {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), xml).unwrap();
    let schema = format!("{}/tests/sitemaps/{schema}", env!("CARGO_MANIFEST_DIR"));
    let output = std::process::Command::new("xmllint")
        .args(["--noout", "--nonet", "--schema", &schema])
        .arg(file.path())
        .output()
        .expect("xmllint runs");
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// Whether xmllint is installed; when it is not, says so loudly, and fails under CI (`CI` set),
/// where `.ci/run` installs it: a local `cargo test` stays runnable without it.
fn xmllint_installed() -> bool {
    if std::process::Command::new("xmllint")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
    {
        return true;
    }
    let message = "xmllint is not installed, so the sitemaps were NOT validated against the sitemaps protocol's schemas: \
                   install it with `apt-get install libxml2-utils` (Debian's package; .ci/run installs it)";
    assert!(std::env::var_os("CI").is_none(), "{message}");
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "\n!!!!!!!! {message} !!!!!!!!\n");
    false
}

/// Every document of the sitemap's partitions of `feed` (the index and `months`), without what
/// the store adds.
async fn sitemap_items(app: &TestApp, months: &[&str]) -> Vec<Value> {
    let mut items = Vec::new();
    let partitions =
        std::iter::once("sitemaps".to_owned()).chain(months.iter().map(|m| format!("sitemap-{m}")));
    for partition in partitions {
        let query = QuerySpec { sql: "SELECT * FROM c ORDER BY c.id".into(), parameters: vec![] };
        let page = PageRequest { size: 1000, continuation: None };
        let (documents, _) = app
            .state
            .store
            .query_documents(Container::Feed, &partition, query, page)
            .await
            .unwrap();
        for mut document in documents {
            document.as_object_mut().unwrap().retain(|name, _| !name.starts_with('_'));
            items.push(document);
        }
    }
    items
}

#[tokio::test]
async fn the_sitemap_lists_the_published_posts_as_the_change_feed_delivers_them() {
    let validating = xmllint_installed();
    if validating {
        // The validators are the real thing: they refuse an empty index and a file without
        // its addresses' `loc`.
        let empty = format!("<sitemapindex xmlns=\"{NS}\"/>");
        assert!(validate(&empty, "siteindex.xsd").is_err(), "xmllint accepted an empty index");
        let no_loc =
            format!("<urlset xmlns=\"{NS}\"><url><lastmod>2026-01-01</lastmod></url></urlset>");
        assert!(validate(&no_loc, "sitemap.xsd").is_err(), "xmllint accepted a url without loc");
    }
    let app = TestApp::start().await;
    // Nothing published: no file to list, and the protocol's index needs one.
    let none = get(&app, "/sitemap.xml", &[]).await;
    assert_eq!(none.status, StatusCode::NOT_FOUND, "{}", none.body);

    let alice = app.user("Alice").await;
    let first = app.post_by(&alice, "First & <best>").await;
    let second = app.post_by(&alice, "Second").await;
    let draft =
        json!({"userId": alice, "title": "Draft", "content": "Not yet.", "status": "draft"});
    let draft = app.post("/api/posts", draft).await;
    assert_eq!(draft.status, StatusCode::CREATED, "{}", draft.body);
    let draft = draft.body["id"].as_str().unwrap().to_owned();
    let created = stored(&app, &first).await["creationDate"].as_str().unwrap().to_owned();
    let file = file_of(&created);
    let path = format!("/sitemaps/{file}");

    let items = sitemap_when(&app, &path, |items| items.len() == 2).await;
    let address = |id: &str| format!("{}/posts/{id}", app.public);
    assert_eq!(
        items,
        [
            (address(&first), created.clone()),
            (
                address(&second),
                stored(&app, &second).await["creationDate"].as_str().unwrap().to_owned()
            )
        ],
        "oldest first, each with its creation as its last change"
    );
    let got = get(&app, &path, &[]).await;
    assert_eq!(got.header("content-type"), "application/xml; charset=utf-8");
    assert_eq!(got.header("cache-control"), "public, max-age=3600");
    let etag = got.header("etag").to_owned();
    let again = get(&app, &path, &[("if-none-match", &etag)]).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    let index = get(&app, "/sitemap.xml", &[]).await;
    assert_eq!(index.status, StatusCode::OK, "{}", index.body);
    assert_eq!(index.header("content-type"), "application/xml; charset=utf-8");
    assert_eq!(index.header("cache-control"), "public, max-age=3600");
    assert_eq!(index.header("x-cosmos-operations"), "1", "one query");
    assert_eq!(index.header("x-cosmos-partitions"), "feed=1", "on one partition");
    let month = listed(&index.body);
    assert_eq!(month.len(), 1, "{}", index.body);
    assert_eq!(month[0].0, format!("{}{path}", app.public));
    assert!(got.header("x-cosmos-operations").parse::<u64>().unwrap() <= 1);
    assert_eq!(got.header("x-cosmos-partitions"), "feed=1");
    assert!(!got.body.contains(&draft), "a draft is never listed");
    if validating {
        validate(&got.body, "sitemap.xsd").unwrap_or_else(|why| panic!("{why}\n{}", got.body));
        validate(&index.body, "siteindex.xsd")
            .unwrap_or_else(|why| panic!("{why}\n{}", index.body));
    }

    // An edit is the entry's new lastmod, and the month's.
    let edited = app
        .put(&format!("/api/posts/{first}"), json!({"title": "First, edited", "content": "Again."}))
        .await;
    assert_eq!(edited.status, StatusCode::OK, "{}", edited.body);
    let edited_at = edited.body["editedAt"].as_str().unwrap().to_owned();
    sitemap_when(&app, &path, |items| {
        items.iter().any(|(loc, at)| *loc == address(&first) && *at == edited_at)
    })
    .await;
    sitemap_when(&app, "/sitemap.xml", |months| months.iter().any(|(_, at)| *at >= edited_at))
        .await;

    // Another month: the post moved there (as a post dated anew moves) leaves this one.
    let mut older = stored(&app, &second).await;
    older["creationDate"] = json!("2020-02-03T04:05:06.789Z");
    older.as_object_mut().unwrap().retain(|name, _| !name.starts_with('_'));
    let replace = WriteOp::Replace { id: second.clone(), document: older, if_match: None };
    app.state.store.execute_write(Container::Posts, &second, replace).await.unwrap();
    sitemap_when(&app, "/sitemaps/2020-02.xml", |items| items.len() == 1).await;
    sitemap_when(&app, &path, |items| items.len() == 1).await;
    let months = sitemap_when(&app, "/sitemap.xml", |months| months.len() == 2).await;
    assert_eq!(months[0].0, format!("{}/sitemaps/2020-02.xml", app.public), "oldest month first");
    if validating {
        let index = get(&app, "/sitemap.xml", &[]).await;
        validate(&index.body, "siteindex.xsd")
            .unwrap_or_else(|why| panic!("{why}\n{}", index.body));
    }

    // Sent back to draft: out; deleted: out. The emptied month leaves the index.
    let back = app
        .put(
            &format!("/api/posts/{second}"),
            json!({"title": "Second", "content": "Back.", "status": "draft"}),
        )
        .await;
    assert_eq!(back.status, StatusCode::OK, "{}", back.body);
    let deleted =
        app.send_as(Some(&alice), Method::DELETE, &format!("/api/posts/{first}"), None).await;
    assert!(deleted.status.is_success(), "{}", deleted.body);
    sitemap_when(&app, &path, |items| items.is_empty()).await;
    sitemap_when(&app, "/sitemaps/2020-02.xml", |items| items.is_empty()).await;
    sitemap_when(&app, "/sitemap.xml", |months| months.is_empty()).await;

    // A file no month has, and names that are no file's.
    let unknown = get(&app, "/sitemaps/1999-01.xml", &[]).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert!(unknown.header("content-type").starts_with("text/html"), "the pages' error page");
    for name in
        ["notes.xml", "2026-13.xml", "2026-12-1.xml", "2026-12.XML", "%FF.xml", "2026-12-02.xml"]
    {
        let refused = get(&app, &format!("/sitemaps/{name}"), &[]).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{name}");
        assert!(refused.body.contains("is not a sitemap&#39;s name"), "{name}: {}", refused.body);
    }
}

/// A delivery repeated (here, every post's, as `handler rebuild-copies` delivers them) changes
/// nothing; and the sitemap, removed, is made again by a rebuild.
#[tokio::test]
async fn a_rebuild_changes_nothing_but_a_missing_sitemap() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let first = app.post_by(&alice, "One").await;
    app.post_by(&alice, "Two").await;
    let created = stored(&app, &first).await["creationDate"].as_str().unwrap().to_owned();
    let month = &created[..7];
    let path = format!("/sitemaps/{}", file_of(&created));
    sitemap_when(&app, &path, |items| items.len() == 2).await;
    let before = sitemap_items(&app, &[month]).await;
    assert_eq!(before.len(), 4, "the index's month, the month's summary, two entries: {before:?}");

    let delivered = blog::testing::changefeed::processor::rebuild_copies(&app.state, &mut |_| {})
        .await
        .unwrap();
    assert_eq!(delivered, 2);
    assert_eq!(sitemap_items(&app, &[month]).await, before, "a repeated delivery changes nothing");

    for document in &before {
        let (id, partition) =
            (document["id"].as_str().unwrap(), document["type"].as_str().unwrap());
        let delete = WriteOp::Delete { id: id.to_owned(), if_match: None };
        app.state.store.execute_write(Container::Feed, partition, delete).await.unwrap();
    }
    assert_eq!(get(&app, "/sitemap.xml", &[]).await.status, StatusCode::NOT_FOUND);
    blog::testing::changefeed::processor::rebuild_copies(&app.state, &mut |_| {}).await.unwrap();
    let strip = |items: Vec<Value>| -> BTreeSet<String> {
        items
            .into_iter()
            .map(|mut item| {
                item.as_object_mut().unwrap().remove("revision");
                item.to_string()
            })
            .collect()
    };
    assert_eq!(strip(sitemap_items(&app, &[month]).await), strip(before));
    assert_eq!(sitemap_when(&app, &path, |items| items.len() == 2).await.len(), 2);
}

/// `robots.txt` names the sitemap at the configured address, whatever the request's headers say.
#[tokio::test]
async fn robots_txt_names_the_sitemap_at_the_configured_address() {
    let dir = tempfile::tempdir().unwrap();
    let public_url = Some("https://blog.example".parse().unwrap());
    let app =
        TestApp::start_configured(blog::Config { public_url, ..TestApp::config(dir.path()) }).await;
    for headers in [
        &[][..],
        &[("x-forwarded-host", "evil.example"), ("x-forwarded-proto", "http")][..],
        &[("host", "evil.example")][..],
    ] {
        let robots = get(&app, "/robots.txt", headers).await;
        assert_eq!(robots.status, StatusCode::OK);
        assert!(
            robots.body.ends_with("\nSitemap: https://blog.example/sitemap.xml\n"),
            "{headers:?}: {}",
            robots.body
        );
        assert!(!robots.body.contains("evil"), "{}", robots.body);
    }
}

/// The JSON-LD block of a page, parsed; `None` when it has none.
fn json_ld(html: &str) -> Option<Value> {
    let start = "<script type=\"application/ld+json\">";
    let at = html.find(start)? + start.len();
    let end = html[at..].find("</script>").unwrap();
    assert_eq!(html.matches(start).count(), 1, "one block");
    Some(serde_json::from_str(&html[at..at + end]).expect("the block is JSON"))
}

/// Every property name a JSON-LD value uses (not its `@` keywords).
fn properties(value: &Value, names: &mut BTreeSet<String>) {
    match value {
        Value::Object(object) => {
            for (name, inner) in object {
                if !name.starts_with('@') {
                    names.insert(name.clone());
                }
                properties(inner, names);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| properties(item, names)),
        _ => {}
    }
}

#[tokio::test]
async fn a_published_posts_page_describes_it_as_a_blog_posting_in_json_ld() {
    let app = TestApp::start().await;
    let alice = app.user("Alice </script>").await;
    let title = "</script><script>alert(1)</script> & more";
    let post = app.post_by(&alice, title).await;
    let picture = format!("/pictures/{alice}/{post}/{}-1600x900.png", "ab".repeat(32));
    let edited = app
        .put(
            &format!("/api/posts/{post}"),
            json!({"title": title, "content": format!("![A kite]({picture})")}),
        )
        .await;
    assert_eq!(edited.status, StatusCode::OK, "{}", edited.body);
    let page = get(&app, &format!("/posts/{post}"), &[]).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(!page.body.contains("<script>alert"), "the title stays inside the block");
    // The policy refuses every script that runs; a data block is not run, and the page needs no
    // directive for it.
    assert!(page.header("content-security-policy").starts_with("default-src 'none';"));
    assert!(!page.header("content-security-policy").contains("script-src"));
    let data = json_ld(&page.body).expect("a published post has its JSON-LD");
    let stored = stored(&app, &post).await;
    let phone_picture = data["image"][0].as_str().unwrap();
    assert!(
        phone_picture.starts_with(&format!("{}/pictures/{alice}/{post}/", app.public)),
        "{data}"
    );
    assert_eq!(
        data,
        json!({
            "@context": "https://schema.org",
            "@type": "BlogPosting",
            "headline": title,
            "author": {"@type": "Person", "name": "Alice </script>", "url": format!("{}/users/{alice}", app.public)},
            "datePublished": stored["creationDate"],
            "dateModified": stored["editedAt"],
            "image": [phone_picture],
            "mainEntityOfPage": format!("{}/posts/{post}", app.public),
        })
    );
    let known: BTreeSet<String> = include_str!("schemaorg/blogposting.txt")
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect();
    let mut used = BTreeSet::new();
    properties(&data, &mut used);
    let unknown: Vec<&String> = used.difference(&known).collect();
    assert!(unknown.is_empty(), "not properties of BlogPosting: {unknown:?}");

    // A post never edited, with no picture: its dates alike, and no image.
    let plain = app.post_by(&alice, "Plain").await;
    let page = get(&app, &format!("/posts/{plain}"), &[]).await;
    let data = json_ld(&page.body).unwrap();
    assert_eq!(data["datePublished"], data["dateModified"]);
    assert!(data.get("image").is_none() && data.get("inLanguage").is_none(), "{data}");

    // A draft's page (to its author) and its preview have none.
    let draft = json!({"userId": alice, "title": "Draft", "content": "Soon.", "status": "draft"});
    let draft = app.post("/api/posts", draft).await.body["id"].as_str().unwrap().to_owned();
    let cookie = format!("blog_dev_user={alice}");
    let own = get(&app, &format!("/posts/{draft}"), &[("cookie", &cookie)]).await;
    assert_eq!(own.status, StatusCode::OK, "its author reads it");
    assert!(json_ld(&own.body).is_none(), "{}", own.body);
    let shared =
        app.send_as(Some(&alice), Method::POST, &format!("/api/posts/{draft}/preview"), None).await;
    assert_eq!(shared.status, StatusCode::CREATED, "{}", shared.body);
    let preview = get(&app, shared.body["path"].as_str().unwrap(), &[]).await;
    assert_eq!(preview.status, StatusCode::OK);
    assert!(json_ld(&preview.body).is_none(), "{}", preview.body);
}
