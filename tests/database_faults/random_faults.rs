//! Thirty percent of operations failing, of every kind: every acknowledged write is there
//! once, and the counters match the lists.

use super::*;

/// About 30 % of all operations fail, of every kind the SDK injects (503, 429, 449,
/// 408, 410/1002, 500, a connection failure, a response timeout, and the lost answer of an applied
/// write), under the SDK's own retries, while three writers create their users and posts,
/// comment, like, unlike, rename, and write, edit and delete a second post, all with keys, and
/// read every list. Every answer is one docs/api.md lists (never a 500); at the end, with the
/// faults off, every comment answered 201 is there once, nothing deleted is, each post's
/// counters equal what is listed, both change-feed functions have caught up with nothing set
/// aside, and all of it is so again after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_thirty_percent_of_operations_failing_every_acknowledged_write_is_there_once() {
    let rules = every_kind_of_fault_at_thirty_percent();
    let dir = tempfile::tempdir().unwrap();
    let (api, stop, state) =
        serve_with_state(dir.path(), SdkFaults { rules: rules.clone(), ..SdkFaults::default() })
            .await;
    let writers = ["ana", "ben", "cy"].map(|user| Writer::new(&api, user));
    let turns = take_turns(rules.clone());

    // The users and their posts are written under the faults too (C1, C2).
    let mut posts = Vec::new();
    for writer in &writers {
        let user = json!({"username": writer.user});
        assert_eq!(
            until_done(writer, Method::POST, "/users", Some(user), &format!("{}-c1", writer.user))
                .await
                .0,
            201
        );
        let body = json!({"userId": writer.user, "title": "t", "content": "c"});
        let (_, post) =
            until_done(writer, Method::POST, "/posts", Some(body), &format!("{}-c2", writer.user))
                .await;
        posts.push(post["id"].as_str().unwrap().to_owned());
    }
    let acknowledged = Acknowledged::default();
    let work = writers
        .iter()
        .enumerate()
        .map(|(n, writer)| rounds_under_faults(writer, n, &posts, &acknowledged));
    futures::future::join_all(work).await;
    turns.abort();
    let _ = turns.await;
    rules.iter().for_each(|rule| rule.disable());
    let failed: Vec<(String, u32)> =
        rules.iter().map(|rule| (rule.id().to_owned(), rule.hit_count())).collect();
    assert!(
        failed.iter().all(|(_, hits)| *hits > 0),
        "every kind of fault was injected: {failed:?}"
    );
    eprintln!("faults injected: {failed:?}");

    let reader = &writers[0];
    let (comments, deleted_posts) = (
        acknowledged.comments.into_inner().unwrap(),
        acknowledged.deleted_posts.into_inner().unwrap(),
    );
    for post in &deleted_posts {
        assert_eq!(
            reader
                .client
                .get(format!("{}/posts/{post}", reader.api))
                .send()
                .await
                .unwrap()
                .status(),
            404,
            "{post}"
        );
    }
    for post in &posts {
        counters_match_lists_and_each_acknowledged_comment_is_there_once(reader, post, &comments)
            .await;
    }
    // Both change-feed functions caught up through the faults, setting nothing aside.
    until_copies_caught_up(reader, &writers, &posts).await;
    let letters = blog::testing::changefeed::dead_letters::list(&state.store).await.unwrap();
    assert!(
        letters.is_empty(),
        "the database's faults are passing, never dead letters: {letters:?}"
    );

    // And so it is after a restart: what was acknowledged is on disk, once.
    let mut before = Vec::new();
    for post in &posts {
        before
            .push(reader.get(&format!("/posts/{post}/comments?limit=100")).await["items"].clone());
    }
    drop(state);
    stop.now().await;
    let (api, _stop) = serve(dir.path(), SdkFaults::default()).await;
    let reader = Writer::new(&api, "ana");
    for (post, before) in posts.iter().zip(before) {
        assert_eq!(
            reader.get(&format!("/posts/{post}/comments?limit=100")).await["items"],
            before,
            "{post} after a restart"
        );
        let read = reader.get(&format!("/posts/{post}")).await;
        assert_eq!(
            read["commentCount"].as_u64(),
            Some(before.as_array().unwrap().len() as u64),
            "{post} after a restart"
        );
    }
}

/// A rule for every kind of fault the SDK injects, each failing 30 % of what it meets, all off.
fn every_kind_of_fault_at_thirty_percent() -> Vec<Arc<FaultInjectionRule>> {
    let kinds = [
        FaultInjectionErrorType::ServiceUnavailable,
        FaultInjectionErrorType::TooManyRequests,
        FaultInjectionErrorType::RetryWith,
        FaultInjectionErrorType::Timeout,
        FaultInjectionErrorType::PartitionIsGone,
        FaultInjectionErrorType::InternalServerError,
        FaultInjectionErrorType::ConnectionError,
        FaultInjectionErrorType::ResponseTimeout,
        FaultInjectionErrorType::ResponseTimeoutAfterService,
    ];
    kinds
        .into_iter()
        .map(|kind| {
            let result =
                FaultInjectionResultBuilder::new().with_error(kind).with_probability(0.3).build();
            let rule =
                Arc::new(FaultInjectionRuleBuilder::new(format!("{kind:?}"), result).build());
            rule.disable();
            rule
        })
        .collect()
}

/// Turns `rules` on one at a time, each for a few milliseconds, until aborted: the SDK applies
/// the first rule that matches and then draws its probability (`fault_injection/http_client.rs`,
/// "first match wins"), so two rules on at once would leave the second unused.
fn take_turns(rules: Vec<Arc<FaultInjectionRule>>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        for turn in 0.. {
            rules.iter().for_each(|rule| rule.disable());
            rules[turn % rules.len()].enable();
            // The pace of the turns, not a wait for anything.
            tokio::time::sleep(std::time::Duration::from_millis(7)).await;
        }
    })
}

/// What the writers were told is done: each comment (its post, its id, whether it was then
/// deleted), and the posts written and then deleted.
#[derive(Default)]
struct Acknowledged {
    comments: std::sync::Mutex<Vec<(String, String, bool)>>,
    deleted_posts: std::sync::Mutex<Vec<String>>,
}

/// Twelve rounds of one writer (the `n`th) under the faults: a comment on one of `posts` each
/// round (every fourth deleted again), a second post written, edited and deleted (round 8), a
/// rename (round 6), a like given (rounds 0, 6) and taken back (3, 9), and every list read.
async fn rounds_under_faults(
    writer: &Writer,
    n: usize,
    posts: &[String],
    acknowledged: &Acknowledged,
) {
    for round in 0..12 {
        let post = &posts[(n + round) % posts.len()];
        let key = format!("{}-{round}", writer.user);
        let body = json!({"userId": writer.user, "content": format!("{key} on {post}")});
        let (_, comment) =
            until_done(writer, Method::POST, &format!("/posts/{post}/comments"), Some(body), &key)
                .await;
        let id = comment["id"].as_str().unwrap().to_owned();
        let deleted = round % 4 == 3;
        if deleted {
            until_done(
                writer,
                Method::DELETE,
                &format!("/posts/{post}/comments/{id}"),
                None,
                &format!("{key}-d"),
            )
            .await;
        }
        acknowledged.comments.lock().unwrap().push((post.clone(), id, deleted));
        if round == 8 {
            let deleted = short_lived_post(writer, &key).await;
            acknowledged.deleted_posts.lock().unwrap().push(deleted);
        }
        // Renamed halfway: the name reaches every comment and copy through the change feed.
        if round == 6 {
            let renamed = json!({"username": format!("{}-renamed", writer.user)});
            let users = format!("/users/{}", writer.user);
            assert_eq!(
                until_done(writer, Method::PUT, &users, Some(renamed), &format!("{key}-r")).await.0,
                200
            );
        }
        like_or_take_back(writer, post, round, &key).await;
        every_read_answers_200_or_503(writer, post).await;
    }
}

/// A second post, written, edited and deleted (C2, C2 edit, C7), its copies read (Q3) while it
/// lives; its id.
async fn short_lived_post(writer: &Writer, key: &str) -> String {
    let body = json!({"userId": writer.user, "title": "short-lived", "content": "c"});
    let (_, post) =
        until_done(writer, Method::POST, "/posts", Some(body), &format!("{key}-p")).await;
    let post = post["id"].as_str().unwrap().to_owned();
    let edit = json!({"title": "short-lived, edited", "content": "c2"});
    assert_eq!(
        until_done(writer, Method::PUT, &format!("/posts/{post}"), Some(edit), &format!("{key}-e"))
            .await
            .0,
        200
    );
    let own = writer
        .client
        .get(format!("{}/users/{}/posts", writer.api, writer.user))
        .send()
        .await
        .unwrap();
    assert!(matches!(own.status().as_u16(), 200 | 503), "Q3 answered {}", own.status());
    assert_eq!(
        until_done(writer, Method::DELETE, &format!("/posts/{post}"), None, &format!("{key}-x"))
            .await
            .0,
        204
    );
    post
}

/// Rounds 0 and 6 like `post`, 3 and 9 take the like back.
async fn like_or_take_back(writer: &Writer, post: &str, round: usize, key: &str) {
    let likes = format!("/posts/{post}/likes");
    match round % 6 {
        0 => {
            let like = Some(json!({"userId": writer.user}));
            assert_eq!(
                until_done(writer, Method::POST, &likes, like, &format!("{key}-l")).await.0,
                201
            );
        }
        3 => {
            let unlike = format!("{likes}/{}", writer.user);
            assert_eq!(
                until_done(writer, Method::DELETE, &unlike, None, &format!("{key}-u")).await.0,
                204
            );
        }
        _ => {}
    }
}

/// Every read of `post`, its lists, the feed and the writer answers 200, or 503 for a fault:
/// never another status.
async fn every_read_answers_200_or_503(writer: &Writer, post: &str) {
    for path in [
        format!("/posts/{post}"),
        format!("/posts/{post}/comments"),
        format!("/posts/{post}/likes"),
        "/feed".to_owned(),
        format!("/users/{}", writer.user),
    ] {
        let answer = writer.client.get(format!("{}{path}", writer.api)).send().await.unwrap();
        assert!(
            matches!(answer.status().as_u16(), 200 | 503),
            "GET {path} answered {}",
            answer.status()
        );
    }
}

/// `post`'s counters equal what its lists hold, and its comments are those answered 201 and not
/// deleted (of `comments`), each once.
async fn counters_match_lists_and_each_acknowledged_comment_is_there_once(
    reader: &Writer,
    post: &str,
    comments: &[(String, String, bool)],
) {
    let read = reader.get(&format!("/posts/{post}")).await;
    let listed = reader.get(&format!("/posts/{post}/comments?limit=100")).await;
    let listed: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap())
        .collect();
    let likes = reader.get(&format!("/posts/{post}/likes?limit=100")).await;
    assert_eq!(read["commentCount"].as_u64(), Some(listed.len() as u64), "{post}: {read}");
    assert_eq!(
        read["likeCount"].as_u64(),
        Some(likes["items"].as_array().unwrap().len() as u64),
        "{post}: {read}"
    );
    let kept: Vec<&str> = comments
        .iter()
        .filter(|(on, _, deleted)| on == post && !deleted)
        .map(|(_, id, _)| id.as_str())
        .collect();
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    let mut expected = kept.clone();
    expected.sort_unstable();
    assert_eq!(sorted, expected, "{post}: the comments answered 201 and not deleted, each once");
}

/// Waits until every post (the `n`th is the `n`th writer's) is copied into its author's list
/// and the feed, and every comment and copy carries its writer's new name.
async fn until_copies_caught_up(reader: &Writer, writers: &[Writer], posts: &[String]) {
    let started = std::time::Instant::now();
    let renamed = |item: &Value| {
        item["userUsername"] == format!("{}-renamed", item["userId"].as_str().unwrap())
    };
    loop {
        let feed = reader.get("/feed?limit=100").await;
        let items = feed["items"].as_array().unwrap();
        let mut caught_up = items.len() == posts.len() && items.iter().all(renamed);
        for (writer, post) in writers.iter().zip(posts) {
            let own = reader.get(&format!("/users/{}/posts", writer.user)).await;
            let own = own["items"].as_array().unwrap();
            caught_up &= own.len() == 1
                && own.iter().any(|item| item["id"] == post.as_str() && renamed(item));
            let listed = reader.get(&format!("/posts/{post}/comments?limit=100")).await;
            caught_up &= listed["items"].as_array().unwrap().iter().all(renamed);
        }
        if caught_up {
            return;
        }
        assert!(started.elapsed().as_secs() < 60, "the copies never caught up: {feed}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
