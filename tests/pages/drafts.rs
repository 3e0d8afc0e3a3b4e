//! Drafts on the pages: saved from the write form, seen by their writer alone, published from
//! the edit form, all without JavaScript.

use super::*;

#[tokio::test]
async fn a_draft_saved_from_the_form_is_published_from_its_edit_page() {
    let app = TestApp::start().await;
    let mut alice = Browser::new(&app);
    alice.sign_up("alice", "Alice").await;
    let form = alice.get("/write").await.html;
    assert!(
        form.contains(r#"<button class="secondary" type="submit" name="action" value="draft">Save as draft</button>"#),
        "{form}"
    );

    let fields = [("title", "Not yet"), ("content", "Half written."), ("action", "draft")];
    let saved = alice.submit("/write", &fields).await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.html);
    let post = saved.location().to_owned();
    let own = alice.get(&post).await;
    assert!(own.html.contains("A draft: only you can see it."), "{}", own.html);
    assert!(own.header("cache-control").starts_with("private"), "never shared");
    let mut bob = Browser::new(&app);
    bob.sign_up("bob", "Bob").await;
    assert_eq!(bob.get(&post).await.status, StatusCode::NOT_FOUND);
    assert_eq!(Browser::new(&app).get(&post).await.status, StatusCode::NOT_FOUND);
    assert_eq!(bob.get(&format!("{post}/edit")).await.status, StatusCode::NOT_FOUND);

    // Her page lists it for her; the edit form offers to publish it.
    alice
        .eventually("/users/alice", |html| html.contains("Your drafts") && html.contains(&post))
        .await;
    // A preview link, shared from the edit page, read by anyone, then revoked.
    let edit = alice.get(&format!("{post}/edit")).await.html;
    assert!(edit.contains(">Share a preview link</button>"), "{edit}");
    let share = format!("{post}/preview");
    let shared = alice.submit(&share, &[("idempotencyKey", &form_key(&edit, &share))]).await;
    assert_eq!(shared.status, StatusCode::SEE_OTHER, "{}", shared.html);
    assert_eq!(shared.location(), format!("{post}/edit#preview"));
    let edit = alice.get(&format!("{post}/edit")).await.html;
    let start = edit.find("href=\"/preview/").unwrap() + 6;
    let link = edit[start..].split('"').next().unwrap().to_owned();
    let preview = Browser::new(&app).get(&link).await;
    assert_eq!(preview.status, StatusCode::OK);
    assert!(
        preview.html.contains("A preview: this post is not published yet."),
        "{}",
        preview.html
    );
    let revoke = format!("{post}/preview/revoke");
    let revoked = alice.submit(&revoke, &[("idempotencyKey", &form_key(&edit, &revoke))]).await;
    assert_eq!(revoked.status, StatusCode::SEE_OTHER, "{}", revoked.html);
    assert_eq!(Browser::new(&app).get(&link).await.status, StatusCode::NOT_FOUND);

    let edit = alice.get(&format!("{post}/edit")).await.html;
    assert!(
        edit.contains(">Save the draft</button>")
            && edit.contains(r#"value="publish">Publish</button>"#),
        "{edit}"
    );
    let fields = [("title", "Now"), ("content", "Whole."), ("action", "publish")];
    let published = alice.submit(&format!("{post}/edit"), &fields).await;
    assert_eq!(published.status, StatusCode::SEE_OTHER, "{}", published.html);
    let read = bob.get(&post).await;
    assert_eq!(read.status, StatusCode::OK);
    assert!(
        !read.html.contains("A draft") && read.html.contains(">Like</button>"),
        "{}",
        read.html
    );
    Browser::new(&app).eventually("/", |html| html.contains(&post)).await;
    let edit = alice.get(&format!("{post}/edit")).await.html;
    assert!(edit.contains(r#"value="draft">Back to draft</button>"#), "{edit}");
}

#[tokio::test]
async fn a_post_scheduled_from_the_form_states_its_time_in_utc() {
    let app = TestApp::start().await;
    let mut alice = Browser::new(&app);
    alice.sign_up("alice", "Alice").await;
    let form = alice.get("/write").await.html;
    assert!(
        form.contains("Publish at (UTC)") && form.contains(r#"value="schedule">Schedule</button>"#),
        "{form}"
    );

    // A time already past: the form again, what was typed kept, the reason at the field.
    let past = [
        ("title", "Monday"),
        ("content", "At nine."),
        ("publishAt", "2020-01-06 08:00"),
        ("action", "schedule"),
    ];
    let refused = alice.submit("/write", &past).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.html);
    assert!(
        refused.html.contains("is not in the future") && refused.html.contains("2020-01-06 08:00"),
        "{}",
        refused.html
    );

    let at = (time::OffsetDateTime::now_utc() + time::Duration::days(3))
        .format(&time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]"))
        .unwrap();
    let fields = [
        ("title", "Monday"),
        ("content", "At nine."),
        ("publishAt", at.as_str()),
        ("action", "schedule"),
    ];
    let scheduled = alice.submit("/write", &fields).await;
    assert_eq!(scheduled.status, StatusCode::SEE_OTHER, "{}", scheduled.html);
    let post = scheduled.location().to_owned();
    let page = alice.get(&post).await.html;
    assert!(page.contains("Scheduled for"), "{page}");
    assert_eq!(Browser::new(&app).get(&post).await.status, StatusCode::NOT_FOUND);
    let edit = alice.get(&format!("{post}/edit")).await.html;
    assert!(edit.contains(&format!("value=\"{at}\"")), "its time, as typed: {edit}");
    assert!(edit.contains(r#"value="publish">Publish now</button>"#), "{edit}");
}

#[tokio::test]
async fn an_earlier_version_is_restored_from_the_edit_page() {
    let app = TestApp::start().await;
    let mut alice = Browser::new(&app);
    alice.sign_up("alice", "Alice").await;
    let post = alice.write("First", "One line.").await;
    let edit = format!("{post}/edit");
    let fields = [("title", "Second"), ("content", "One line.\nAnother.")];
    assert_eq!(alice.submit(&edit, &fields).await.status, StatusCode::SEE_OTHER);

    let page = alice.get(&edit).await.html;
    assert!(
        page.contains("Earlier versions") && page.contains(&format!("href=\"{post}/revisions/0\"")),
        "{page}"
    );
    let revision = alice.get(&format!("{post}/revisions/0")).await;
    assert_eq!(revision.status, StatusCode::OK);
    assert!(
        revision.html.contains("<ins>Another.</ins>") && revision.html.contains("One line."),
        "{}",
        revision.html
    );
    assert!(revision.header("cache-control").starts_with("private"));
    let mut bob = Browser::new(&app);
    bob.sign_up("bob", "Bob").await;
    assert_eq!(bob.get(&format!("{post}/revisions/0")).await.status, StatusCode::FORBIDDEN);

    let restore = format!("{post}/revisions/0/restore");
    let key = form_key(&revision.html, &restore);
    let restored = alice.submit(&restore, &[("idempotencyKey", &key)]).await;
    assert_eq!(restored.status, StatusCode::SEE_OTHER, "{}", restored.html);
    assert!(alice.get(&post).await.html.contains(">First</h1>"));
    let page = alice.get(&edit).await.html;
    assert!(
        page.contains(&format!("href=\"{post}/revisions/1\"")),
        "the version restored over, kept: {page}"
    );
}
