//! Deleting through the pages: a like taken back, comments and posts deleted, each offered
//! only to whoever may.

use super::*;

/// Alice and Bob signed up on `app`'s pages, and Alice's post "Short-lived": their browsers
/// and the post page's path.
async fn alice_bob_and_a_short_lived_post(app: &TestApp) -> (Browser, Browser, String) {
    let mut alice = Browser::new(app);
    alice.sign_up("alice", "Alice").await;
    let mut bob = Browser::new(app);
    bob.sign_up("bob", "Bob").await;
    let post = alice.write("Short-lived", "Soon gone.").await;
    (alice, bob, post)
}

/// The address of the `n`th "Delete" link on `html`. (Deleting a comment is a link marked as
/// dangerous, to a page that asks first; its form posts to the same address.)
fn delete_path(html: &str, n: usize) -> String {
    const LINK: &str = "<a class=\"danger\" href=\"";
    let at = html.match_indices(LINK).nth(n).unwrap().0 + LINK.len();
    html[at..].split('"').next().unwrap().to_owned()
}

#[tokio::test]
async fn only_its_author_is_offered_to_delete_a_post() {
    let app = TestApp::start().await;
    let (alice, bob, post) = alice_bob_and_a_short_lived_post(&app).await;
    assert!(alice.get(&post).await.html.contains("Delete this post"));
    assert!(!bob.get(&post).await.html.contains("Delete this post"));
}

/// A like taken back is gone from the page; taken back again (in another tab) it is 404, on
/// the post's page saying why.
#[tokio::test]
async fn a_like_taken_back_is_gone() {
    let app = TestApp::start().await;
    let (_alice, bob, post) = alice_bob_and_a_short_lived_post(&app).await;
    assert_eq!(bob.submit(&format!("{post}/likes"), &[]).await.status, StatusCode::SEE_OTHER);
    let page = bob.get(&post).await;
    assert!(
        page.html.contains("0 comments · 1 like") && page.html.contains("Take back your like"),
        "{}",
        page.html
    );
    let unliked = bob.submit(&format!("{post}/unlike"), &[]).await;
    assert_eq!(unliked.location(), format!("{post}#actions"));
    let page = bob.get(&post).await;
    assert!(
        page.html.contains("0 comments · 0 likes") && page.html.contains(">Like</button>"),
        "{}",
        page.html
    );
    let again = bob.submit(&format!("{post}/unlike"), &[]).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND, "taken back already, in another tab");
    assert!(
        again.html.contains("does not like") && again.html.contains("Short-lived"),
        "the post page says why: {}",
        again.html
    );
}

/// Bob deletes his own comment, after a confirmation, and no one else's; Alice, the post's
/// author, may delete any under her post.
#[tokio::test]
async fn a_comment_is_deleted_by_its_commenter_or_the_posts_author() {
    let app = TestApp::start().await;
    let (alice, bob, post) = alice_bob_and_a_short_lived_post(&app).await;
    bob.submit(&format!("{post}/comments"), &[("content", "Bob's first")]).await;
    bob.submit(&format!("{post}/comments"), &[("content", "Bob's second")]).await;
    alice.submit(&format!("{post}/comments"), &[("content", "Alice's")]).await;
    let page = bob.get(&post).await;
    assert_eq!(page.html.matches("Delete this comment").count(), 2, "only his own: {}", page.html);
    assert_eq!(alice.get(&post).await.html.matches("Delete this comment").count(), 3);
    let first = delete_path(&page.html, 0);
    let confirm = bob.get(&first).await;
    assert_eq!(confirm.status, StatusCode::OK, "{}", confirm.html);
    assert!(
        confirm.html.contains("Bob&#39;s first")
            && confirm.html.contains(&format!("action=\"{first}\"")),
        "{}",
        confirm.html
    );
    let not_his = bob.get(&delete_path(&alice.get(&post).await.html, 2)).await;
    assert_eq!(
        not_his.status,
        StatusCode::FORBIDDEN,
        "not his comment to delete: {}",
        not_his.html
    );
    let forbidden = bob.submit(&delete_path(&alice.get(&post).await.html, 2), &[]).await;
    assert_eq!(forbidden.status, StatusCode::FORBIDDEN, "not his comment: {}", forbidden.html);
    assert_eq!(bob.submit(&first, &[]).await.location(), format!("{post}#comments"));
    let page = alice.get(&post).await;
    assert!(
        !page.html.contains("Bob&#39;s first") && page.html.contains("2 comments"),
        "{}",
        page.html
    );
    assert_eq!(alice.submit(&delete_path(&page.html, 0), &[]).await.status, StatusCode::SEE_OTHER);
    assert!(!alice.get(&post).await.html.contains("Bob&#39;s second"));
}

/// The post: a confirmation first (its author's only), then gone, and gone from the lists.
#[tokio::test]
async fn a_post_is_deleted_after_a_confirmation() {
    let app = TestApp::start().await;
    let (alice, bob, post) = alice_bob_and_a_short_lived_post(&app).await;
    alice.submit(&format!("{post}/comments"), &[("content", "Alice's")]).await;
    alice.eventually("/users/alice", |html| html.contains("Short-lived")).await;
    assert_eq!(bob.get(&format!("{post}/delete")).await.status, StatusCode::FORBIDDEN);
    let confirm = alice.get(&format!("{post}/delete")).await;
    assert!(
        confirm.html.contains("Delete “<bdi>Short-lived</bdi>”?")
            && confirm.html.contains("1 comment"),
        "{}",
        confirm.html
    );
    assert!(
        confirm.html.contains("<button type=\"submit\" class=\"danger\">Delete</button>"),
        "{}",
        confirm.html
    );
    let deleted = alice.submit(&format!("{post}/delete"), &[]).await;
    assert_eq!(deleted.location(), "/users/alice");
    assert_eq!(alice.get(&post).await.status, StatusCode::NOT_FOUND);
    alice.eventually("/users/alice", |html| !html.contains("Short-lived")).await;
    alice.eventually("/", |html| !html.contains("Short-lived")).await;
}
