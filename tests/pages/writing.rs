//! Writing through the pages: posts, comments, likes, edits, renames and tags, and who is
//! offered which form.

use super::*;

#[tokio::test]
async fn a_post_written_in_the_form_opens_on_its_own_page_in_three_reads() {
    let app = TestApp::start().await;
    let (alice, post) = alice_with_a_post(&app).await;
    assert!(post.starts_with("/posts/"), "the redirect goes to the post's own page: {post}");
    let page = alice.get(&post).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.header("content-type"), "text/html; charset=utf-8");
    assert!(
        page.html.contains("<h1 dir=\"auto\">Hello, pages</h1>")
            && page.html.contains("Edit this post"),
        "{}",
        page.html
    );
    assert_eq!(page.operations(), 3, "Q2 + Q4 + Q5, nothing more");
}

#[tokio::test]
async fn a_written_post_reaches_the_front_page_under_its_authors_name() {
    let app = TestApp::start().await;
    let (alice, _) = alice_with_a_post(&app).await;
    let front = alice.eventually("/", |html| html.contains("Hello, pages")).await;
    assert!(
        front.html.contains("by <a href=\"/users/alice\"><bdi>Alice</bdi></a>"),
        "{}",
        front.html
    );
}

#[tokio::test]
async fn what_is_sent_from_the_post_page_shows_on_it() {
    let app = TestApp::start().await;
    let (alice, post) = alice_with_a_post(&app).await;
    let commented = alice.submit(&format!("{post}/comments"), &[("content", "First!")]).await;
    assert_eq!(commented.status, StatusCode::SEE_OTHER);
    assert!(commented.location().starts_with(&format!("{post}#comment-")));
    let liked = alice.submit(&format!("{post}/likes"), &[]).await;
    assert_eq!(liked.location(), format!("{post}#actions"));
    let page = alice.get(&post).await;
    assert!(
        page.html.contains("First!") && page.html.contains("1 comment · 1 like"),
        "{}",
        page.html
    );
    assert!(page.html.contains("You like this post."));
}

#[tokio::test]
async fn a_second_like_is_refused_on_the_page() {
    let app = TestApp::start().await;
    let (alice, post) = alice_with_a_post(&app).await;
    assert_eq!(alice.submit(&format!("{post}/likes"), &[]).await.status, StatusCode::SEE_OTHER);
    let again = alice.submit(&format!("{post}/likes"), &[]).await;
    assert_eq!(again.status, StatusCode::CONFLICT, "a second like is refused on the page");
    assert!(again.html.contains("already likes post"), "{}", again.html);
}

/// The edit page offers a way back to the post that changes nothing; an edited post says so.
#[tokio::test]
async fn an_edited_post_says_so() {
    let app = TestApp::start().await;
    let (alice, post) = alice_with_a_post(&app).await;
    assert!(!alice.get(&post).await.html.contains(" · edited "), "not edited yet");
    let edit_page = alice.get(&format!("{post}/edit")).await;
    assert!(
        edit_page.html.contains(&format!("<a href=\"{post}\">Cancel</a>")),
        "{}",
        edit_page.html
    );
    let edited = alice
        .submit(&format!("{post}/edit"), &[("title", "Hello, edited"), ("content", "Now edited.")])
        .await;
    assert_eq!(edited.location(), post);
    let after_edit = alice.get(&post).await.html;
    assert!(after_edit.contains("<h1 dir=\"auto\">Hello, edited</h1>"));
    assert!(after_edit.contains(" · edited <time"), "an edited post says so: {after_edit}");
}

#[tokio::test]
async fn a_rename_reaches_the_authors_posts() {
    let app = TestApp::start().await;
    let (alice, post) = alice_with_a_post(&app).await;
    let renamed = alice.submit("/users/alice", &[("username", "Alice Liddell")]).await;
    assert_eq!(renamed.location(), "/users/alice");
    alice.eventually(&post, |html| html.contains("><bdi>Alice Liddell</bdi></a>")).await;
}

/// Someone else sees no edit link, and may not edit.
#[tokio::test]
async fn someone_else_may_not_edit() {
    let app = TestApp::start().await;
    let (alice, post) = alice_with_a_post(&app).await;
    let mut bob = Browser::new(&app);
    bob.sign_up("bob", "Bob").await;
    let seen = bob.get(&post).await;
    assert!(!seen.html.contains("Edit this post") && seen.html.contains(">Like</button>"));
    assert_eq!(bob.get(&format!("{post}/edit")).await.status, StatusCode::FORBIDDEN);
    let refused =
        bob.submit(&format!("{post}/edit"), &[("title", "Mine now"), ("content", "x")]).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(alice.get(&post).await.html.contains("Hello, pages"), "a refused edit changes nothing");
}

#[tokio::test]
async fn signed_out_the_forms_are_gone() {
    let app = TestApp::start().await;
    let (alice, post) = alice_with_a_post(&app).await;
    let signed_out = alice.submit("/signout", &[]).await;
    assert!(signed_out.header("set-cookie").contains("Max-Age=0"));
    let anonymous = Browser::new(&app).get(&post).await;
    assert!(
        !anonymous.html.contains("<form method=\"post\" action=\"/posts/")
            && anonymous.html.contains("Sign in</a> to like")
    );
}

/// Tags typed on the write page (separated by commas) show under the post's title and in its
/// excerpts as links to the tag's page, which lists the posts with the tag in any form; a refused
/// tag shows next to its field with what was typed; the edit form carries the tags and removes
/// them when emptied.
#[tokio::test]
async fn tags_written_on_the_form_link_to_their_page() {
    let app = TestApp::start().await;
    let mut alice = Browser::new(&app);
    alice.sign_up("alice", "Alice").await;

    let form = alice.get("/write").await;
    assert!(
        form.html.contains("name=\"tags\" type=\"text\" value=\"\" maxlength=\"170\" aria-describedby=\"post-tags-hint\""),
        "{}",
        form.html
    );
    let refused = alice
        .submit("/write", &[("title", "Tagged"), ("content", "Text"), ("tags", "Rust, RUST")])
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(refused.html.contains("id=\"post-tags-error\">Tags: the tags"), "{}", refused.html);
    assert!(
        refused.html.contains("value=\"Rust, RUST\""),
        "what was typed is kept: {}",
        refused.html
    );

    let written = alice
        .submit(
            "/write",
            &[("title", "Tagged"), ("content", "Text"), ("tags", " Rust, Cosmos DB ,")],
        )
        .await;
    assert_eq!(written.status, StatusCode::SEE_OTHER, "{}", written.html);
    let post = written.location().to_owned();
    let links = "<ul class=\"tags\" aria-label=\"Tags\"><li><a rel=\"tag\" href=\"/tags/rust\"><bdi>Rust</bdi></a></li>\
                 <li><a rel=\"tag\" href=\"/tags/cosmos%20db\"><bdi>Cosmos DB</bdi></a></li></ul>";
    let page = alice.get(&post).await;
    assert!(page.html.contains(links), "{}", page.html);
    alice.eventually("/", |html| html.contains(links)).await;
    let tag_page = alice.eventually("/tags/RUST", |html| html.contains("Tagged")).await;
    assert_eq!(tag_page.status, StatusCode::OK);
    assert!(tag_page.html.contains("<h1>Posts tagged <bdi>Rust</bdi></h1>"), "{}", tag_page.html);
    assert!(tag_page.html.contains(links), "{}", tag_page.html);
    let unused = alice.get("/tags/nobody").await;
    assert_eq!(unused.status, StatusCode::OK);
    assert!(unused.html.contains("No posts with this tag yet."), "{}", unused.html);

    let edit = alice.get(&format!("{post}/edit")).await;
    assert!(edit.html.contains("value=\"Rust, Cosmos DB\""), "{}", edit.html);
    let saved = alice
        .submit(&format!("{post}/edit"), &[("title", "Tagged"), ("content", "Text"), ("tags", "")])
        .await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.html);
    assert!(!alice.get(&post).await.html.contains("class=\"tags\""));
    alice.eventually("/tags/rust", |html| html.contains("No posts with this tag yet.")).await;
}
