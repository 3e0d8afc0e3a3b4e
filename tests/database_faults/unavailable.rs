//! A database that answers 503 or 429, or is unreachable: a page is 503 with `Retry-After`,
//! a throttled read says when to come back, and the change feed functions wait it out.

use super::*;

/// A rule that answers every query of `posts` with `error`, off until enabled.
fn failing_queries_of_posts(error: FaultInjectionErrorType) -> Arc<FaultInjectionRule> {
    let result = FaultInjectionResultBuilder::new().with_error(error).build();
    let condition = FaultInjectionConditionBuilder::new()
        .with_operation_type(FaultOperationType::QueryItem)
        .with_container_id("posts")
        .build();
    let rule = Arc::new(
        FaultInjectionRuleBuilder::new(format!("{error:?} on posts queries"), result)
            .with_condition(condition)
            .build(),
    );
    rule.disable();
    rule
}

/// A list paged with a continuation token while the database fails is a
/// passing failure (503 with `Retry-After`, in our words), never "your token is bad" and never
/// the SDK's text; the same token works once the database answers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_asked_for_while_the_database_fails_is_503_with_retry_after() {
    let unavailable = failing_queries_of_posts(FaultInjectionErrorType::ServiceUnavailable);
    let timing_out = failing_queries_of_posts(FaultInjectionErrorType::Timeout);
    let dir = tempfile::tempdir().unwrap();
    let faults =
        SdkFaults { rules: vec![unavailable.clone(), timing_out.clone()], ..SdkFaults::default() };
    let (api, _stop) = serve(dir.path(), faults).await;
    let client = reqwest::Client::new();
    let write = |path: String, body: Value| {
        client.post(format!("{api}{path}")).header("x-dev-user", "alice").json(&body).send()
    };
    assert_eq!(write("/users".into(), json!({"username": "alice"})).await.unwrap().status(), 201);
    let post: Value =
        write("/posts".into(), json!({"userId": "alice", "title": "t", "content": "c"}))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    let post = post["id"].as_str().unwrap().to_owned();
    for n in 0..3 {
        let comment = json!({"userId": "alice", "content": format!("comment {n}")});
        assert_eq!(write(format!("/posts/{post}/comments"), comment).await.unwrap().status(), 201);
    }
    let comments = format!("{api}/posts/{post}/comments");
    let first: Value =
        client.get(with(&comments, &[("limit", "1")])).send().await.unwrap().json().await.unwrap();
    let token = first["continuationToken"].as_str().expect("a second page").to_owned();

    for rule in [&unavailable, &timing_out] {
        rule.enable();
        for query in
            [vec![("limit", "1"), ("continuationToken", token.as_str())], vec![("limit", "1")]]
        {
            // Signed in, so the read goes to the database, not to the page this instance keeps
            // for readers who are not.
            let answer = client
                .get(with(&comments, &query))
                .header("x-dev-user", "alice")
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status(), 503, "{} with {query:?}", rule.id());
            assert_eq!(answer.headers()["content-type"], "application/problem+json");
            assert!(answer.headers().contains_key("retry-after"), "says when to come back");
            let problem: Value = answer.json().await.unwrap();
            let detail = problem["detail"].as_str().unwrap();
            for internal in [
                "continuation",
                "token",
                "Cosmos",
                "SDK",
                "x-ms",
                "ServiceUnavailable",
                "status",
                "Timeout",
            ] {
                assert!(!detail.contains(internal), "{} says {internal:?}: {detail}", rule.id());
            }
        }
        rule.disable();
    }
    let second: Value = client
        .get(with(&comments, &[("limit", "1"), ("continuationToken", token.as_str())]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        second["items"][0]["content"], "comment 1",
        "the token works once the database answers: {second}"
    );
}

/// Throttling answered, not hidden: once the SDK's own retries are spent, a read that
/// Cosmos DB throttles is 503 with `Retry-After` as long as Cosmos DB asked to wait
/// (`x-ms-retry-after-ms`, rounded up to whole seconds), and a `detail` that says so. The 429
/// is built as the service sends it: status 429 with the header (the SDK's own injected 429
/// carries none, `fault_injection/http_client.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_read_says_when_to_come_back_as_cosmos_db_asked() {
    let throttled = CustomResponseBuilder::new(azure_core::http::StatusCode::TooManyRequests)
        .with_header("x-ms-retry-after-ms", "2500")
        .build();
    let condition = FaultInjectionConditionBuilder::new()
        .with_operation_type(FaultOperationType::ReadItem)
        .with_container_id("posts")
        .build();
    let result = FaultInjectionResultBuilder::new().with_custom_response(throttled).build();
    let rule = Arc::new(
        FaultInjectionRuleBuilder::new("429 on reads of posts", result)
            .with_condition(condition)
            .build(),
    );
    rule.disable();
    let dir = tempfile::tempdir().unwrap();
    let (api, _stop) =
        serve(dir.path(), SdkFaults { rules: vec![rule.clone()], throttle_retries: Some(0) }).await;
    let client = reqwest::Client::new();
    let write = |path: &str, body: Value| {
        client.post(format!("{api}{path}")).header("x-dev-user", "alice").json(&body).send()
    };
    assert_eq!(write("/users", json!({"username": "alice"})).await.unwrap().status(), 201);
    let post: Value = write("/posts", json!({"userId": "alice", "title": "t", "content": "c"}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let post = format!("{api}/posts/{}", post["id"].as_str().unwrap());

    rule.enable();
    let answer = client.get(&post).send().await.unwrap();
    assert_eq!(answer.status(), 503);
    assert_eq!(answer.headers()["retry-after"], "3", "2,500 ms, in whole seconds");
    let problem: Value = answer.json().await.unwrap();
    assert!(
        problem["detail"].as_str().unwrap().contains("busy")
            && problem["detail"].as_str().unwrap().contains("3 s"),
        "{problem}"
    );
    rule.disable();
    assert_eq!(
        client.get(&post).send().await.unwrap().status(),
        200,
        "served again once the database is"
    );
}

/// The change-feed functions treat Cosmos DB's passing failures as passing: while
/// every call to `feed` answers 503 (after the SDK's retries), `PostsChangeFeed` cannot write the
/// post's copy there, more times than a change that fails alone is allowed before it is set
/// aside; the processors deliver it again later, nothing goes to the dead letters, and once the
/// database answers the copy is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_change_feed_functions_wait_out_an_unavailable_database() {
    let failing = |container: &str, error| {
        let condition = FaultInjectionConditionBuilder::new().with_container_id(container).build();
        let result = FaultInjectionResultBuilder::new().with_error(error).build();
        let rule = Arc::new(
            FaultInjectionRuleBuilder::new(format!("{error:?} on {container}"), result)
                .with_condition(condition)
                .build(),
        );
        rule.disable();
        rule
    };
    let feed_unavailable = failing("feed", FaultInjectionErrorType::ServiceUnavailable);
    let dir = tempfile::tempdir().unwrap();
    let faults = SdkFaults { rules: vec![feed_unavailable.clone()], throttle_retries: Some(0) };
    let (api, _stop, state) = serve_with_state(dir.path(), faults).await;
    let client = reqwest::Client::new();
    let write = |path: &str, body: Value| {
        client.post(format!("{api}{path}")).header("x-dev-user", "alice").json(&body).send()
    };
    assert_eq!(write("/users", json!({"username": "alice"})).await.unwrap().status(), 201);

    feed_unavailable.enable();
    // How many requests the SDK sends for one call that meets 503 (its own retries): one read of
    // the feed, answered 503, counts them.
    let before = feed_unavailable.hit_count();
    assert_eq!(client.get(format!("{api}/feed")).send().await.unwrap().status(), 503);
    let tries_per_call = feed_unavailable.hit_count() - before;
    assert!(tries_per_call >= 1, "the read reached the database");
    let post: Value =
        write("/posts", json!({"userId": "alice", "title": "held back", "content": "c"}))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    let post = post["id"].as_str().unwrap().to_owned();
    // The user's own list gets its copy (`users` answers); the feed's copy keeps failing, past
    // the deliveries after which a change that keeps failing alone is set aside as a dead letter.
    // Deliveries, each one call to `feed` that fails: more than a change failing alone may have
    // before it is set aside (which would end the deliveries, and this wait with them).
    let started = std::time::Instant::now();
    let past_isolation =
        before + tries_per_call * (1 + blog::testing::changefeed::ISOLATE_AFTER + 2);
    while feed_unavailable.hit_count() < past_isolation {
        assert!(
            started.elapsed().as_secs() < 60,
            "PostsChangeFeed stopped delivering the change: {} of {past_isolation} tries",
            feed_unavailable.hit_count()
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    feed_unavailable.disable();
    let started = std::time::Instant::now();
    loop {
        let feed: Value =
            client.get(format!("{api}/feed")).send().await.unwrap().json().await.unwrap();
        if feed["items"][0]["id"] == post.as_str() {
            break;
        }
        assert!(started.elapsed().as_secs() < 30, "the feed's copy never arrived: {feed}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let letters = blog::testing::changefeed::dead_letters::list(&state.store).await.unwrap();
    assert!(letters.is_empty(), "a passing failure is not a dead letter: {letters:?}");
}
