//! Tags: a post's tags (C2 and its edit), the copies under each tag that `PostsChangeFeed`
//! keeps in `tags`, and Q7, the newest posts with a tag.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use blog::testing::cosmos::{Container, PageRequest, QuerySpec};
use common::TestApp;
use common::host::{self, Attempt};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

fn ids(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Every document of one partition of `tags`, system properties left out.
/// The copies under `tag` as stored (the tag's mark, which Q7 passes over, left out).
async fn under_tag(app: &TestApp, tag: &str) -> Vec<Value> {
    let query = QuerySpec {
        sql: "SELECT * FROM c WHERE c.type = 'post' ORDER BY c.id".into(),
        parameters: vec![],
    };
    let page = PageRequest { size: 1000, continuation: None };
    let mut documents =
        app.state.store.query_documents(Container::Tags, tag, query, page).await.unwrap().0;
    for document in &mut documents {
        document.as_object_mut().unwrap().retain(|name, _| !name.starts_with('_'));
    }
    documents
}

/// The address of Q7 for `tag`, percent-encoded as a client sends it.
fn tag_posts(tag: &str) -> String {
    let encoded: String = tag
        .bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() {
                (byte as char).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect();
    format!("/api/tags/{encoded}/posts")
}

#[tokio::test]
async fn bad_tags_are_refused_naming_them() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let post =
        |tags: Value| json!({"userId": alice, "title": "Tagged", "content": "Some.", "tags": tags});

    let created = app.post("/api/posts", post(json!(["Rust", " Cosmos DB ", "José"]))).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(
        created.body["tags"],
        json!(["Rust", "Cosmos DB", "José"]),
        "as typed, but for the spaces at the ends"
    );
    let id = created.body["id"].as_str().unwrap().to_owned();
    assert_eq!(
        app.get(&format!("/api/posts/{id}")).await.body["tags"],
        json!(["Rust", "Cosmos DB", "José"])
    );

    let long = "x".repeat(33);
    let refusals = [
        (json!(["a", "b", "c", "d", "e", "f"]), "at most 5"),
        (json!(["ok", long]), long.as_str()),
        (json!(["ok", "\u{200B}"]), "visible"),
        (json!(["ab\u{202E}c"]), "bidirectional"),
        (json!(["Rust", "ＲＵＳＴ"]), "ＲＵＳＴ"),
        (json!(["a,b"]), "separates"),
        (json!(["a\u{7}"]), "control"),
    ];
    for (tags, named) in &refusals {
        let detail = app.post("/api/posts", post(tags.clone())).await.problem(400);
        assert!(detail.starts_with("`tags`") && detail.contains(named), "{tags}: {detail}");
        let detail = app
            .put(&format!("/api/posts/{id}"), json!({"title": "t", "content": "c", "tags": tags}))
            .await
            .problem(400);
        assert!(detail.contains(named), "an edit, {tags}: {detail}");
    }
    assert_eq!(
        app.get(&format!("/api/posts/{id}")).await.body["tags"],
        json!(["Rust", "Cosmos DB", "José"]),
        "nothing written"
    );

    // An edit without `tags` keeps them; with them, replaces them; `[]` removes them all.
    let edited =
        app.put(&format!("/api/posts/{id}"), json!({"title": "Edited", "content": "c"})).await;
    assert_eq!(edited.body["tags"], json!(["Rust", "Cosmos DB", "José"]));
    let edited = app
        .put(
            &format!("/api/posts/{id}"),
            json!({"title": "Edited", "content": "c", "tags": ["go"]}),
        )
        .await;
    assert_eq!(edited.body["tags"], json!(["go"]));
    let edited = app
        .put(&format!("/api/posts/{id}"), json!({"title": "Edited", "content": "c", "tags": []}))
        .await;
    assert_eq!(edited.status, StatusCode::OK);
    assert!(
        edited.body.get("tags").is_none(),
        "a post without tags keeps the article's shape: {}",
        edited.body
    );

    // A key names its tags too: the same key with other tags is another request.
    let keyed = |tags: Value| {
        let (base, client) = (app.base.clone(), app.client.clone());
        let body = json!({"userId": alice, "title": "Keyed", "content": "c", "tags": tags});
        let alice = alice.clone();
        async move {
            let request = client
                .post(format!("{base}/api/posts"))
                .header("x-dev-user", alice)
                .header("idempotency-key", "k1");
            common::read(request.json(&body).send().await.unwrap()).await
        }
    };
    let first = keyed(json!(["a"])).await;
    assert_eq!(first.status, StatusCode::CREATED);
    assert_eq!(keyed(json!(["a"])).await.body["id"], first.body["id"]);
    keyed(json!(["b"])).await.problem(422);
}

/// A tag that a link would read as `.` or `..` (however typed), or a word of letters from two
/// scripts ("Rսst", with an Armenian ս), is refused on the API and on the write page, naming
/// it; a Russian tag, and a tag of words in two scripts, are kept and linked.
#[tokio::test]
async fn a_dot_segment_or_a_word_of_two_scripts_is_refused() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let post =
        |tags: Value| json!({"userId": alice, "title": "Tagged", "content": "Some.", "tags": tags});
    for (tag, named) in [
        ("..", "a link to /tags/.. leads to /"),
        (".", "is \".\""),
        ("．．", "is \"..\""),
        ("Rսst", "mixes Latin and Armenian letters in one word"),
        ("Сosmos DB", "mixes Cyrillic and Latin letters"),
    ] {
        let detail = app.post("/api/posts", post(json!(["ok", tag]))).await.problem(400);
        assert!(
            detail.starts_with("`tags`") && detail.contains(tag) && detail.contains(named),
            "{tag}: {detail}"
        );
    }
    let created = app.post("/api/posts", post(json!(["модель", "Azure функции", "Rust"]))).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_owned();
    app.eventually(&tag_posts("МОДЕЛЬ"), |page| page["items"][0]["id"] == id.as_str()).await;
    app.eventually(&tag_posts("azure функции"), |page| {
        page["items"][0]["id"] == id.as_str()
    })
    .await;

    let mut browser = common::forms::Browser::new(&app);
    browser.sign_up("bob", "Bob").await;
    let refused = browser
        .submit("/write", &[("title", "Tagged"), ("content", "Text"), ("tags", "Rust, ..")])
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(
        refused.html.contains("id=\"post-tags-error\">Tags: the tag &quot;..&quot;"),
        "{}",
        refused.html
    );
    let page = browser.get(&format!("/posts/{id}")).await;
    assert!(
        page.html.contains("href=\"/tags/%D0%BC%D0%BE%D0%B4%D0%B5%D0%BB%D1%8C\""),
        "{}",
        page.html
    );
    assert!(!page.html.contains("href=\"/tags/..\""));
}

#[tokio::test]
async fn a_tag_lists_its_posts_newest_first_in_any_form_one_partition_paged() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let mut posts = Vec::new();
    for n in 0..3 {
        let tags = if n == 1 { json!(["RUST", "go"]) } else { json!(["Rust"]) };
        let body = json!({"userId": alice, "title": format!("post {n}"), "content": "Some.", "tags": tags});
        posts.push(app.post("/api/posts", body).await.body["id"].as_str().unwrap().to_owned());
    }
    app.post_by(&alice, "untagged").await;
    let newest_first: Vec<String> = posts.iter().rev().cloned().collect();
    let listed = app.eventually(&tag_posts("rust"), |list| ids(list) == newest_first).await;
    assert_eq!(listed.partitions(), "tags=1", "one partition");
    assert_eq!(listed.operations(), 2, "the tag's mark and one query, both in the tag's partition");
    assert_eq!(listed.body["items"][1]["tags"], json!(["RUST", "go"]), "shown as typed");
    assert!(
        listed.body["items"][0].get("tag").is_none()
            && listed.body["items"][0].get("sourceTs").is_none()
    );
    // Any form of the tag is the same tag.
    assert_eq!(ids(&app.get(&tag_posts("ＲＵＳＴ")).await.body), newest_first);
    assert_eq!(ids(&app.get(&tag_posts("go")).await.body), vec![posts[1].clone()]);

    // Paged with the lists' signed tokens, which work only on the tag that issued them.
    let first = app.get(&format!("{}?limit=2", tag_posts("Rust"))).await;
    assert_eq!(ids(&first.body), newest_first[..2]);
    let token = first.body["continuationToken"].as_str().unwrap().to_owned();
    let second = app.get(&format!("{}?limit=2&continuationToken={token}", tag_posts("rust"))).await;
    assert_eq!(ids(&second.body), newest_first[2..]);
    assert_eq!(second.body["continuationToken"], Value::Null);
    let detail =
        app.get(&format!("{}?continuationToken={token}", tag_posts("go"))).await.problem(400);
    assert!(detail.contains("another list"), "{detail}");

    // A tag nobody used: an empty page, not a 404.
    let nobody = app.get(&tag_posts("nobody uses this")).await;
    assert_eq!(nobody.status, StatusCode::OK);
    assert_eq!(nobody.body, json!({"items": [], "continuationToken": null}));
    // What no post could carry is refused, naming it.
    let detail = app.get(&tag_posts(&"x".repeat(40))).await.problem(400);
    assert!(detail.starts_with("`tag`") && detail.contains("32"), "{detail}");
    app.get(&format!("{}?limit=0", tag_posts("rust"))).await.problem(400);
}

#[tokio::test]
async fn the_copies_under_tags_follow_every_change() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let body =
        json!({"userId": alice, "title": "Hello", "content": "Some.", "tags": ["Rust", "Go"]});
    let post = app.post("/api/posts", body).await.body["id"].as_str().unwrap().to_owned();
    app.eventually(&tag_posts("go"), |list| ids(list) == [post.clone()]).await;
    assert_eq!(under_tag(&app, "rust").await.len(), 1);

    // A tag removed and one added, in one edit; the title follows.
    app.put(
        &format!("/api/posts/{post}"),
        json!({"title": "Hello again", "content": "c", "tags": ["rust", "Cosmos DB"]}),
    )
    .await;
    app.eventually(&tag_posts("cosmos db"), |list| list["items"][0]["title"] == "Hello again")
        .await;
    app.eventually(&tag_posts("go"), |list| ids(list).is_empty()).await;
    app.eventually(&tag_posts("rust"), |list| {
        list["items"][0]["tags"] == json!(["rust", "Cosmos DB"])
    })
    .await;

    // A comment moves the counter on every copy; a rename reaches every copy.
    app.post(&format!("/api/posts/{post}/comments"), json!({"userId": bob, "content": "hi"})).await;
    app.eventually(&tag_posts("rust"), |list| list["items"][0]["commentCount"] == 1).await;
    app.put(&format!("/api/users/{alice}"), json!({"username": "alicia"})).await;
    for tag in ["rust", "cosmos db"] {
        app.eventually(&tag_posts(tag), |list| list["items"][0]["userUsername"] == "alicia").await;
    }
    // The record of the tags removed is cleared once their copies are gone.
    let copy =
        app.state.store.read::<Value>(Container::Users, &alice, &post).await.unwrap().unwrap();
    assert!(copy.get("taggedBefore").is_none(), "{copy}");

    // Deleted: no copy under any tag, and the user's copy goes too.
    let deleted =
        app.send_as(Some(&alice), Method::DELETE, &format!("/api/posts/{post}"), None).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    for tag in ["rust", "cosmos db", "go"] {
        app.eventually(&tag_posts(tag), |list| ids(list).is_empty()).await;
        assert!(under_tag(&app, tag).await.is_empty(), "{tag}");
    }
    app.eventually(&format!("/api/users/{alice}/posts"), |list| ids(list).is_empty()).await;
}

async fn deliver(app: &TestApp, documents: &[Value]) {
    let body = host::cosmos_invocation("PostsChangeFeed", documents, Attempt::Retry(0));
    let answer = host::invoke(app, "PostsChangeFeed", &body).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
}

/// The change feed delivers the latest version only, late, repeated or out of order: the copies
/// under tags end true whichever versions arrive, and a version never delivered (the one that
/// added a tag another then removed) leaves no copy behind.
#[tokio::test]
async fn late_repeated_or_skipped_versions_leave_the_tag_copies_true() {
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    let version = |post: String| {
        let store = app.state.store.clone();
        async move { store.read::<Value>(Container::Posts, &post, &post).await.unwrap().unwrap() }
    };
    let body = json!({"userId": alice, "title": "v1", "content": "c", "tags": ["a"]});
    let post = app.post("/api/posts", body).await.body["id"].as_str().unwrap().to_owned();
    let v1 = version(post.clone()).await;
    deliver(&app, std::slice::from_ref(&v1)).await;
    assert_eq!(under_tag(&app, "a").await.len(), 1);

    // v2 adds b and is delivered; v3 replaces both with c, but only after a second (its `_ts`
    // differs) and v4 puts b back, is never delivered; v5 has only d.
    let path = format!("/api/posts/{post}");
    let edit = |title: &str, tags: Value| {
        app.put(&path, json!({"title": title, "content": "c", "tags": tags}))
    };
    edit("v2", json!(["a", "b"])).await;
    let v2 = version(post.clone()).await;
    deliver(&app, std::slice::from_ref(&v2)).await;
    assert_eq!((under_tag(&app, "a").await.len(), under_tag(&app, "b").await.len()), (1, 1));
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    edit("v3", json!(["c"])).await;
    let v3 = version(post.clone()).await;
    edit("v4", json!(["b", "c"])).await;
    edit("v5", json!(["d"])).await;
    let v5 = version(post.clone()).await;
    deliver(&app, std::slice::from_ref(&v3)).await;
    // Late and repeated: v1 and v2 again, after v3.
    deliver(&app, &[v1.clone(), v2.clone(), v3.clone()]).await;
    assert!(under_tag(&app, "a").await.is_empty() && under_tag(&app, "b").await.is_empty());
    // No copy is made under c: the post no longer has it (v5 is what it is now).
    assert!(under_tag(&app, "c").await.is_empty());
    deliver(&app, &[v5, v1, v3]).await;
    for tag in ["a", "b", "c"] {
        assert!(under_tag(&app, tag).await.is_empty(), "{tag}");
    }
    assert_eq!(under_tag(&app, "d").await[0]["title"], "v5");
}

/// `kill -9` while a writer keeps changing a post's tags (the change feed copying behind): after
/// the restart the processors catch up and every copy under every tag is true: under the tags
/// the post has now, its latest version; under the others, nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_kill_9_during_tag_edits_the_tag_copies_converge() {
    use common::binary::Handler;
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let client = reqwest::Client::new();
    let base = handler.base.clone();
    let (send_client, send_base) = (client.clone(), base.clone());
    let send = move |method: Method, path: String, body: Value| {
        let (client, base) = (send_client.clone(), send_base.clone());
        async move {
            let request = client
                .request(method, format!("{base}{path}"))
                .header("x-dev-user", "writer")
                .json(&body);
            request.send().await.ok().filter(|response| response.status().is_success())
        }
    };
    send(Method::POST, "/api/users".into(), json!({"username": "writer"})).await.unwrap();
    let created = send(
        Method::POST,
        "/api/posts".into(),
        json!({"userId": "writer", "title": "t0", "content": "c", "tags": ["t0"]}),
    )
    .await
    .unwrap();
    let post = created.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned();
    // Tags rotate through t0..t5, two at a time; the edits go on until the kill ends them.
    let edits = tokio::spawn({
        let send = send.clone();
        let post = post.clone();
        async move {
            let mut acknowledged = 0;
            for n in 1.. {
                let tags = json!([format!("t{}", n % 6), format!("t{}", (n + 1) % 6)]);
                let body = json!({"title": format!("t{n}"), "content": "c", "tags": tags});
                if send(Method::PUT, format!("/api/posts/{post}"), body).await.is_none() {
                    return acknowledged;
                }
                acknowledged = n;
            }
            acknowledged
        }
    });
    let tag_list = |tag: String| format!("/api/tags/{tag}/posts");
    // Killed once the change feed has copied some of the edits, while the writer goes on. Every
    // edit has a tag other than t0, so once one is copied, some list of t1 to t5 holds the post
    // (the one tag the copies happen to be under when looked at would be a matter of timing).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    'copied: loop {
        for tag in 1..6 {
            let copied = client
                .get(format!("{base}{}", tag_list(format!("t{tag}"))))
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap();
            if copied["items"].as_array().is_some_and(|items| !items.is_empty()) {
                break 'copied;
            }
        }
        assert!(std::time::Instant::now() < deadline, "the change feed never copied an edit");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    handler.kill_9();
    let acknowledged = edits.await.unwrap();
    assert!(acknowledged >= 2, "edits were under way: {acknowledged}");

    let handler = Handler::start(data.path(), &[]);
    let current: Value = client
        .get(format!("{}/api/posts/{post}", handler.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let tags: Vec<String> = current["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tag| tag.as_str().unwrap().to_owned())
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let mut true_everywhere = true;
        for n in 0..6 {
            let tag = format!("t{n}");
            let list: Value = client
                .get(format!("{}{}", handler.base, tag_list(tag.clone())))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let items = list["items"].as_array().unwrap();
            true_everywhere &= if tags.contains(&tag) {
                items.len() == 1
                    && items[0]["title"] == current["title"]
                    && items[0]["tags"] == current["tags"]
            } else {
                items.is_empty()
            };
        }
        if true_everywhere {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the copies under tags never converged on {current}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// `handler rebuild-copies` (the whole `posts` feed delivered again) makes the copies under tags
/// again: on a store that lost them, and on one from before tags, whose posts have none.
#[tokio::test]
async fn rebuilding_the_copies_makes_the_tag_copies_again() {
    let app = TestApp::start_as_host().await;
    let alice = app.user("alice").await;
    let body =
        json!({"userId": alice, "title": "Tagged", "content": "Some.", "tags": ["Rust", "Go"]});
    let post = app.post("/api/posts", body).await.body["id"].as_str().unwrap().to_owned();
    app.post_by(&alice, "Untagged").await;
    assert_eq!(
        blog::testing::changefeed::processor::rebuild_copies(&app.state, &mut |_| {})
            .await
            .unwrap(),
        2
    );
    let built = (under_tag(&app, "rust").await, under_tag(&app, "go").await);
    assert_eq!((built.0.len(), built.1.len()), (1, 1));
    for tag in ["rust", "go"] {
        let delete = blog::testing::cosmos::WriteOp::Delete { id: post.clone(), if_match: None };
        app.state.store.execute_write(Container::Tags, tag, delete).await.unwrap();
    }
    assert!(ids(&app.get(&tag_posts("rust")).await.body).is_empty());
    assert_eq!(
        blog::testing::changefeed::processor::rebuild_copies(&app.state, &mut |_| {})
            .await
            .unwrap(),
        2
    );
    assert_eq!((under_tag(&app, "rust").await, under_tag(&app, "go").await), built);
    assert_eq!(ids(&app.get(&tag_posts("go")).await.body), vec![post]);
}

/// A tag's page for readers who are not signed in is shared between them, as the front page is
/// (a public answer, the same ETag for the same page); what differs between requests still
/// differs (the tag as typed where no post shows it, the page size asked for, and who is signed
/// in), and the host a request names does not.
#[tokio::test]
async fn the_shared_tag_page_keeps_what_differs_between_readers() {
    let app = TestApp::start().await;
    let alice = app.user("alice").await;
    for n in 0..3 {
        app.post("/api/posts", json!({"userId": alice, "title": format!("Kite {n}"), "content": "c", "tags": ["Kites"]})).await;
    }
    app.eventually(&tag_posts("kites"), |list| ids(list).len() == 3).await;
    let client = reqwest::Client::new();
    let page = |host: &'static str, path: &'static str| {
        let request = client.get(format!("{}{path}", app.base)).header("Host", host);
        async move {
            let answer = request.send().await.unwrap();
            let etag = answer.headers()["etag"].to_str().unwrap().to_owned();
            let control = answer.headers()["cache-control"].to_str().unwrap().to_owned();
            (etag, control, answer.text().await.unwrap())
        }
    };
    let (etag, control, here) = page("blog.example", "/tags/kites").await;
    assert_eq!(control, "public, max-age=0, s-maxage=5, stale-while-revalidate=30");
    assert_eq!(
        page("blog.example", "/tags/kites").await.0,
        etag,
        "the same bytes for every reader"
    );
    // The host a request names changes nothing: the canonical link is the blog's own address.
    let (_, _, there) = page("other.example", "/tags/kites").await;
    assert!(
        here.contains(&format!("<link rel=\"canonical\" href=\"{}/tags/kites\">", app.public)),
        "{here}"
    );
    assert_eq!(here, there);
    let (_, _, two) = page("blog.example", "/tags/kites?limit=2").await;
    assert!(two.contains("href=\"/tags/kites?limit=2&amp;continuationToken="), "{two}");
    assert!(!here.contains("continuationToken="), "{here}");
    let (_, _, typed) = page("blog.example", "/tags/Nobody%20Here").await;
    let (_, _, lower) = page("blog.example", "/tags/nobody%20here").await;
    assert!(
        typed.contains("<bdi>Nobody Here</bdi>") && lower.contains("<bdi>nobody here</bdi>"),
        "{typed}\n{lower}"
    );

    let mut reader = common::forms::Browser::new(&app);
    reader.sign_up("reader", "Reader").await;
    assert!(reader.get("/tags/kites").await.html.contains("Signed in as"));
    assert!(
        !page("blog.example", "/tags/kites").await.2.contains("Signed in as"),
        "a signed-in page is never shared"
    );
}
