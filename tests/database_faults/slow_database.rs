//! A slow or busy database: no request is held past its budget, and a form keeps its text and
//! its key.

use super::*;

/// A form sent while the database cannot take the write is the form again, 503 with
/// `Retry-After`, saying the blog is busy and when to send it again, with what was typed and
/// the same one-time key (the write may have been made); sent again once the database answers,
/// it is made once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_sent_while_the_database_is_busy_keeps_what_was_typed() {
    let result = FaultInjectionResultBuilder::new()
        .with_error(FaultInjectionErrorType::ServiceUnavailable)
        .build();
    let condition = FaultInjectionConditionBuilder::new()
        .with_operation_type(FaultOperationType::BatchItem)
        .build();
    let unavailable = Arc::new(
        FaultInjectionRuleBuilder::new("503 on batches", result).with_condition(condition).build(),
    );
    unavailable.disable();
    let dir = tempfile::tempdir().unwrap();
    let (api, _stop) =
        serve(dir.path(), SdkFaults { rules: vec![unavailable.clone()], ..SdkFaults::default() })
            .await;
    let alice = Writer::new(&api, "alice");
    assert_eq!(
        alice.send(Method::POST, "/users", Some(json!({"username": "alice"})), None).await.0,
        201
    );
    let (_, post) = alice
        .send(
            Method::POST,
            "/posts",
            Some(json!({"userId": "alice", "title": "t", "content": "c"})),
            None,
        )
        .await;
    let post = post["id"].as_str().unwrap().to_owned();
    let browser = Browser::at(api.trim_end_matches("/api")).signed_in_as("alice");
    let comments = format!("/posts/{post}/comments");
    let typed = [("content", "Typed while busy."), ("idempotencyKey", "form-key-1")];

    unavailable.enable();
    let busy = browser.submit(&comments, &typed).await;
    assert_eq!(busy.status, 503);
    assert!(busy.headers.contains_key("retry-after"));
    let html = busy.html;
    assert!(html.contains("The blog is busy right now"), "{html}");
    assert!(html.contains("Typed while busy."), "what was typed is kept: {html}");
    assert!(html.contains("name=\"idempotencyKey\" value=\"form-key-1\""), "the same key: {html}");
    unavailable.disable();

    for _ in 0..2 {
        let sent = browser.submit(&comments, &typed).await;
        assert_eq!(sent.status, 303);
    }
    let read = alice.get(&format!("/posts/{post}")).await;
    assert_eq!(read["commentCount"], 1, "{read}");
}

/// A blog whose requests have 1 s each (`BLOG_REQUEST_TIMEOUT`), with alice and her post, and
/// two rules, off until enabled: one makes Cosmos DB take 5 s to answer each read of `posts`,
/// the other 2 s for each batch. The base URL, what stops the blog, alice, the post, and the
/// rules for reads and for writes.
async fn with_a_slow_database(
    dir: &std::path::Path,
) -> (String, Stop, Writer, String, Arc<FaultInjectionRule>, Arc<FaultInjectionRule>) {
    let result =
        FaultInjectionResultBuilder::new().with_delay(std::time::Duration::from_secs(5)).build();
    let condition = FaultInjectionConditionBuilder::new()
        .with_operation_type(FaultOperationType::ReadItem)
        .with_container_id("posts")
        .build();
    let slow = Arc::new(
        FaultInjectionRuleBuilder::new("slow reads of posts", result)
            .with_condition(condition)
            .build(),
    );
    slow.disable();
    let result =
        FaultInjectionResultBuilder::new().with_delay(std::time::Duration::from_secs(2)).build();
    let condition = FaultInjectionConditionBuilder::new()
        .with_operation_type(FaultOperationType::BatchItem)
        .build();
    let slow_writes = Arc::new(
        FaultInjectionRuleBuilder::new("slow batches", result).with_condition(condition).build(),
    );
    slow_writes.disable();
    let config =
        blog::Config { request_timeout: std::time::Duration::from_secs(1), ..embedded_config(dir) };
    let rules = vec![slow.clone(), slow_writes.clone()];
    let (api, stop, _) = serve_config(config, SdkFaults { rules, ..SdkFaults::default() }).await;
    let alice = Writer::new(&api, "alice");
    assert_eq!(
        alice.send(Method::POST, "/users", Some(json!({"username": "alice"})), None).await.0,
        201
    );
    let (_, post) = alice
        .send(
            Method::POST,
            "/posts",
            Some(json!({"userId": "alice", "title": "t", "content": "c"})),
            None,
        )
        .await;
    let post = post["id"].as_str().unwrap().to_owned();
    (api, stop, alice, post, slow, slow_writes)
}

/// A time budget per request. While Cosmos DB takes 5 s to answer each read of `posts`, a
/// request is answered 503 with `Retry-After` once its budget (here 1 s) has passed,
/// problem+json on the API and an HTML page for a page; once the database answers in time, the
/// same requests are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_database_never_holds_a_request_past_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let (api, _stop, alice, post, slow, _) = with_a_slow_database(dir.path()).await;
    let site = api.trim_end_matches("/api").to_owned();
    slow.enable();
    for (url, kind) in [
        (format!("{api}/posts/{post}"), "application/problem+json"),
        (format!("{site}/posts/{post}"), "text/html"),
    ] {
        // 503 saying the budget ran out: the read itself, 5 s later, would have answered 200.
        let answer = alice.client.get(&url).send().await.unwrap();
        assert_eq!(answer.status(), 503, "{url}");
        assert!(answer.headers().contains_key("retry-after"), "{url}");
        assert!(answer.headers()["content-type"].to_str().unwrap().starts_with(kind), "{url}");
        assert!(answer.text().await.unwrap().contains("did not answer within 1 s"), "{url}");
    }
    slow.disable();
    assert_eq!(alice.client.get(format!("{api}/posts/{post}")).send().await.unwrap().status(), 200);
}

/// A write past its budget is 503 too, and sent again with its key once the database answers
/// in time, it is made once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_past_its_budget_is_made_once_when_sent_again() {
    let dir = tempfile::tempdir().unwrap();
    let (_api, _stop, alice, post, _, slow_writes) = with_a_slow_database(dir.path()).await;
    slow_writes.enable();
    let comments = format!("/posts/{post}/comments");
    let comment = json!({"userId": "alice", "content": "slow"});
    let (status, problem) =
        alice.send(Method::POST, &comments, Some(comment.clone()), Some("slow-1")).await;
    assert_eq!(status, 503, "{problem}");
    assert!(problem["detail"].as_str().unwrap().contains("same Idempotency-Key"), "{problem}");
    slow_writes.disable();
    // Sent again as a client does on 503 (the write cut short may still hold its post for a
    // moment), then once more: both answered as done, one comment.
    assert_eq!(
        until_done(&alice, Method::POST, &comments, Some(comment.clone()), "slow-1").await.0,
        201
    );
    assert_eq!(alice.send(Method::POST, &comments, Some(comment), Some("slow-1")).await.0, 201);
    assert_eq!(alice.get(&format!("/posts/{post}")).await["commentCount"], 1);
}
