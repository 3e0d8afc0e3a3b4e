//! The writes of the article's requests, in the order a user makes them, each read back and its
//! copies awaited, then taken back: what `run` does when it has a credential.

use std::time::Instant;

use serde_json::{Value, json};

use super::answer::{checked, finds, lists};
use super::run::{Body, Run};
use super::{Failure, fail};

/// The writes, each read back, and the copies awaited; then everything written is taken back.
pub(super) async fn write_and_read(run: &mut Run<'_>) -> Result<(), Failure> {
    use reqwest::Method;
    let me = run.expect("who", Method::GET, "/api/me", None, 200).await?;
    let Some(user_id) = me.body["userId"].as_str().map(str::to_owned) else {
        return Err(fail("who", format!("GET /api/me answered no userId: {}", me.body)));
    };
    let user = ensure_user(run, &user_id).await?;
    let username = user["username"].as_str().unwrap_or_default().to_owned();

    let run_id = uuid::Uuid::new_v4().simple().to_string();
    let title = format!("Smoke test {run_id}");
    // A tag of this run's own, so that the tag's page lists this post alone.
    let tag = format!("smoke-{}", &run_id[..12]);
    let body = json!({"userId": user_id, "title": title, "content": "Written by `handler smoke`, and deleted by it.", "tags": [tag]});
    let written = Instant::now();
    let post = run.expect("C2", Method::POST, "/api/posts", Some(body), 201).await?;
    let Some(post_id) = post.body["id"].as_str().map(str::to_owned) else {
        return Err(fail("C2", format!("the created post has no id: {}", post.body)));
    };
    let picture = add_picture(run, &post_id).await?;
    let comment_text = format!("A smoke test's comment on {title}.");
    let comment_body = json!({"userId": user_id, "content": comment_text});
    let comment = run
        .expect(
            "C3",
            Method::POST,
            &format!("/api/posts/{post_id}/comments"),
            Some(comment_body),
            201,
        )
        .await?;
    let comment_id = comment.body["id"].as_str().unwrap_or_default().to_owned();
    let like = json!({"userId": user_id});
    run.expect("C4", Method::POST, &format!("/api/posts/{post_id}/likes"), Some(like), 201).await?;

    let read = run.expect("Q2", Method::GET, &format!("/api/posts/{post_id}"), None, 200).await?;
    let counts = (read.body["commentCount"].as_u64(), read.body["likeCount"].as_u64());
    if counts != (Some(1), Some(1)) || read.body["userUsername"] != username.as_str() {
        return Err(fail(
            "Q2",
            format!("expected 1 comment, 1 like, by {username:?}; the post reads {}", read.body),
        ));
    }
    let comments =
        run.expect("Q4", Method::GET, &format!("/api/posts/{post_id}/comments"), None, 200).await?;
    if !lists(&comments.body, &comment_id) {
        return Err(fail(
            "Q4",
            format!("the comment {comment_id} is not listed: {}", comments.body),
        ));
    }
    let likes =
        run.expect("Q5", Method::GET, &format!("/api/posts/{post_id}/likes"), None, 200).await?;
    if !likes.body["items"]
        .as_array()
        .is_some_and(|items| items.iter().any(|like| like["userId"] == user_id.as_str()))
    {
        return Err(fail("Q5", format!("the like by {user_id} is not listed: {}", likes.body)));
    }
    run.expect("Q1", Method::GET, &format!("/api/users/{user_id}"), None, 200).await?;
    let q3 = format!("/api/users/{user_id}/posts?limit=100");
    let in_users =
        run.until("Q3", "copied into users", &q3, written, |body| lists(body, &post_id)).await?;
    let in_feed = run
        .until("Q6", "copied into feed", "/api/feed?limit=100", written, |body| {
            lists(body, &post_id)
        })
        .await?;
    let q7 = format!("/api/tags/{tag}/posts?limit=100");
    let in_tags =
        run.until("Q7", "copied into tags", &q7, written, |body| lists(body, &post_id)).await?;
    // Q8: the run's id is a word of the title, which no other post has.
    let q8 = format!("/api/search?q={run_id}");
    let in_search =
        run.until("Q8", "indexed for search", &q8, written, |body| finds(body, &post_id)).await?;
    run.expect("page", Method::GET, &format!("/posts/{post_id}"), None, 200).await?;

    run.expect("C5", Method::DELETE, &format!("/api/posts/{post_id}/likes/{user_id}"), None, 204)
        .await?;
    run.expect(
        "C6",
        Method::DELETE,
        &format!("/api/posts/{post_id}/comments/{comment_id}"),
        None,
        204,
    )
    .await?;
    let deleted = Instant::now();
    run.expect("C7", Method::DELETE, &format!("/api/posts/{post_id}"), None, 204).await?;
    run.expect("Q2", Method::GET, &format!("/api/posts/{post_id}"), None, 404).await?;
    if let Some(picture) = &picture {
        run.until_status("pic", "gone with its post", picture, deleted, 404).await?;
    }
    let none_listed = |body: &Value| !lists(body, &post_id);
    let gone_users = run.until("Q3", "gone from users", &q3, deleted, none_listed).await?;
    let gone_feed =
        run.until("Q6", "gone from feed", "/api/feed?limit=100", deleted, none_listed).await?;
    let gone_tags = run.until("Q7", "gone from tags", &q7, deleted, none_listed).await?;
    let gone_search =
        run.until("Q8", "gone from search", &q8, deleted, |body| !finds(body, &post_id)).await?;
    let published = scheduled_post(run, &user_id, &run_id).await?;
    let _ = writeln!(
        run.out,
        "ok: a scheduled post published by the timer {published:.1} s after its time"
    );
    let _ = writeln!(
        run.out,
        "ok: copies appeared in users after {:.1} s, in feed after {:.1} s and in tags after {:.1} s; went after {:.1} s, {:.1} s and {:.1} s",
        in_users.as_secs_f64(),
        in_feed.as_secs_f64(),
        in_tags.as_secs_f64(),
        gone_users.as_secs_f64(),
        gone_feed.as_secs_f64(),
        gone_tags.as_secs_f64()
    );
    let _ = writeln!(
        run.out,
        "ok: found by search after {:.1} s; not found after {:.1} s once deleted",
        in_search.as_secs_f64(),
        gone_search.as_secs_f64()
    );
    Ok(())
}

/// A post scheduled three seconds ahead, read by its author until the timer has published it
/// (a minute's run, `functions/PublishScheduled`), then deleted: answers how long after its
/// time it was published, as this client's clock tells.
async fn scheduled_post(run: &mut Run<'_>, user_id: &str, run_id: &str) -> Result<f64, Failure> {
    use reqwest::Method;
    let at = time::OffsetDateTime::now_utc() + time::Duration::seconds(3);
    let publish_at = at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default();
    let body = json!({"userId": user_id, "title": format!("Smoke test {run_id}, scheduled"),
        "content": "Published by the timer, then deleted by `handler smoke`.",
        "status": "scheduled", "publishAt": publish_at});
    let created = run.expect("sch", Method::POST, "/api/posts", Some(body), 201).await?;
    let Some(post_id) = created.body["id"].as_str().map(str::to_owned) else {
        return Err(fail("sch", format!("the scheduled post has no id: {}", created.body)));
    };
    let q2 = format!("/api/posts/{post_id}");
    let since = Instant::now() + std::time::Duration::from_secs(3);
    let waited = run
        .until_timer("sch", "published by the timer", &q2, since, |post| {
            post.get("status").is_none()
        })
        .await?;
    run.expect("C7", Method::DELETE, &q2, None, 204).await?;
    Ok(waited.as_secs_f64())
}

/// Adds a small picture to the post and reads it back as a reader's browser would: stored
/// (Blob Storage on Azure, with the app's identity) and served without the database. Answers
/// its address; `None` where the blog keeps no pictures (501), which is said and not a failure.
async fn add_picture(run: &mut Run<'_>, post_id: &str) -> Result<Option<String>, Failure> {
    use reqwest::Method;
    let path = format!("/api/posts/{post_id}/pictures?alt=A%20smoke%20test");
    let added =
        run.send_body("pic", Method::POST, &path, Some(Body::Picture(smoke_picture()))).await?;
    if added.status == 501 {
        let _ = writeln!(
            run.out,
            "pic  this blog keeps no pictures (BLOG_PICTURES is not set): not checked"
        );
        return Ok(None);
    }
    let added = checked("pic", &Method::POST, &path, added, 201)?;
    let Some(url) = added.body["url"].as_str().map(str::to_owned) else {
        return Err(fail("pic", format!("the added picture has no url: {}", added.body)));
    };
    let shown = run.expect("pic", Method::GET, &url, None, 200).await?;
    if shown.operations != "0" {
        return Err(fail(
            "pic",
            format!(
                "GET {url} read the database ({} operations): a picture reads none",
                shown.operations
            ),
        ));
    }
    Ok(Some(url))
}

/// A 64×64 PNG, made here: two colours, so that it is a picture and not a blank.
fn smoke_picture() -> Vec<u8> {
    let pixels = image::RgbImage::from_fn(64, 64, |x, y| {
        if (x / 8 + y / 8) % 2 == 0 {
            image::Rgb([0, 120, 212])
        } else {
            image::Rgb([255, 255, 255])
        }
    });
    let mut png = std::io::Cursor::new(Vec::new());
    pixels.write_to(&mut png, image::ImageFormat::Png).expect("a PNG is written to memory");
    png.into_inner()
}

/// The caller's user: read (Q1), or created (C1) with a name of its own the first time. A user is
/// never deleted (the API has no such request), so it stays for the next run.
async fn ensure_user(run: &mut Run<'_>, user_id: &str) -> Result<Value, Failure> {
    use reqwest::Method;
    if let Some(user) = own_user(run, user_id).await? {
        return Ok(user);
    }
    // A name is taken by someone else now and then: another is drawn.
    for _ in 0..3 {
        let name = format!("smoke-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
        let created =
            run.send("C1", Method::POST, "/api/users", Some(json!({"username": name}))).await?;
        match created.status {
            201 => return Ok(created.body),
            409 if created.why().contains("is taken") => continue,
            other => {
                return Err(fail(
                    "C1",
                    format!("POST /api/users answered {other}: {}", created.why()),
                ));
            }
        }
    }
    Err(fail("C1", "three usernames in a row were taken"))
}

/// Q1 of the caller's own user: `None` when they have none yet.
async fn own_user(run: &mut Run<'_>, user_id: &str) -> Result<Option<Value>, Failure> {
    let read = run.send("Q1", reqwest::Method::GET, &format!("/api/users/{user_id}"), None).await?;
    match read.status {
        200 => Ok(Some(read.body)),
        404 => Ok(None),
        other => {
            Err(fail("Q1", format!("GET /api/users/{user_id} answered {other}: {}", read.why())))
        }
    }
}
