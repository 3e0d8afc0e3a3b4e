//! An import stopped by a failing store or killed anywhere: the blog waits for it, and running
//! it again finishes it.

use super::*;

/// An import stopped while it writes, other than by a kill (here the picture store cannot be
/// reached; on an account, a throttle past the SDK's retries does the same): it says where it
/// stopped and that the same import finishes it, and it does.
#[tokio::test]
async fn an_import_stopped_by_a_failing_store_is_finished_when_run_again() {
    let (to, files) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let date = "2026-01-01T00:00:00.000Z";
    let noise = common::noise_png_of(4, 4, 3);
    let hash = {
        use sha2::Digest;
        sha2::Sha256::digest(&noise).iter().map(|byte| format!("{byte:02x}")).collect::<String>()
    };
    let items = [
        json!({"id": "ada", "type": "user", "userId": "ada", "username": "ada"}),
        json!({"id": "p1", "type": "post", "postId": "p1", "userId": "ada", "userUsername": "ada", "title": "T",
            "content": "C", "commentCount": 0, "likeCount": 0, "creationDate": date}),
        json!({"type": "picture", "postId": "p1", "userId": "ada", "name": format!("{hash}-4x4.png"), "bytes": base64_of(&noise)}),
    ];
    let file = files.path().join("blog.jsonl");
    std::fs::write(&file, sealed(&items)).unwrap();
    // Blob Storage on a port where nothing listens.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (account, key) = (common::azurite::ACCOUNT, common::azurite::KEY);
    let unreachable = format!(
        "DefaultEndpointsProtocol=http;AccountName={account};AccountKey={key};BlobEndpoint=http://127.0.0.1:{port}/{account};"
    );
    let stopped = handler_with(
        to.path(),
        &["import", file.to_str().unwrap()],
        &[("BLOG_PICTURES", &unreachable)],
    );
    assert_eq!(stopped.status.code(), Some(1), "{}", stderr(&stopped));
    let said = "the import stopped at line 4, after writing 2 of the file's 3 items and pictures: run the same import again to finish it";
    assert!(stderr(&stopped).contains(said), "{}", stderr(&stopped));
    assert!(!stderr(&stopped).contains("nothing was imported"), "{}", stderr(&stopped));

    let finished = handler(to.path(), &["import", file.to_str().unwrap()]);
    assert!(finished.status.success(), "{}", stderr(&finished));
    let blog = Handler::start(to.path(), &[]);
    until_the_feed_has(&blog.base, 1).await;
    assert_eq!(
        bytes_at(&blog.base, &format!("/pictures/ada/p1/{hash}-4x4.png")).await,
        (200, noise)
    );
    blog.stop();
}

/// `handler` (serve) on the embedded store in `data`: how it ended, if it stopped by itself
/// within a minute (it is killed otherwise: a blog that serves never ends).
fn serve_once(data: &Path) -> Option<(i32, String)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_handler"))
        .env("BLOG_DATA_DIR", data)
        .env("BLOG_LISTEN", "127.0.0.1:0")
        .env("BLOG_AUTH", "development")
        .env("RUST_LOG", "warn")
        .env("NO_COLOR", "1")
        .env_remove("CosmosDB")
        .env_remove("CosmosDB__accountEndpoint")
        .env_remove("FUNCTIONS_CUSTOMHANDLER_PORT")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            return Some((status.code().unwrap_or(-1), stderr));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// That every post the blog at `base` lists says as many comments and likes as it lists.
async fn counters_are_what_is_listed(base: &str, posts: &[String]) {
    for post in posts {
        let said: Value =
            reqwest::get(format!("{base}/api/posts/{post}")).await.unwrap().json().await.unwrap();
        for (counter, list) in [("commentCount", "comments"), ("likeCount", "likes")] {
            let listed: Value = reqwest::get(format!("{base}/api/posts/{post}/{list}"))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(
                said[counter].as_u64(),
                Some(listed["items"].as_array().unwrap().len() as u64),
                "{post}: {counter}"
            );
        }
    }
}

/// An import killed at each step of its writing (after its first item, after a picture, after
/// its last item, after the names are reserved, after the copies are made): the blog refuses to
/// start on the store (as `export` does), saying to run the same import again, with the file
/// named; another file is not imported into it; after a `handler repair` (which counts what
/// the import had written so far) it is still refused; the same import run again finishes it,
/// and the blog starts and shows what the exported blog showed, each post's counters what it
/// lists.
#[tokio::test]
async fn an_import_killed_anywhere_keeps_the_blog_from_starting_until_run_again_which_finishes_it()
{
    let exported = Exported::new(&[]).await;
    let path = exported.file.to_str().unwrap();
    let canonical = exported.file.canonicalize().unwrap().display().to_string();
    let lines: Vec<&str> = exported.text.lines().collect();
    let total = lines.len() - 2;
    let a_picture = lines.iter().position(|line| line.contains("\"type\":\"picture\"")).unwrap();
    for at in [1, a_picture, total, total + 1, total + 2] {
        let run = format!("killed after {at} of {total}");
        let to = tempfile::tempdir().unwrap();
        let killed = handler_with(
            to.path(),
            &["import", path],
            &[("BLOG_TEST_KILL_AFTER", &at.to_string())],
        );
        assert!(!killed.status.success(), "{run}: {}", stderr(&killed));
        let said = "did not finish (the handler stopped during `handler import`), so the blog would show part of it: run the same import again";
        let (code, refused) =
            serve_once(to.path()).unwrap_or_else(|| panic!("{run}: the blog served"));
        assert_eq!(code, 1, "{run}: {refused}");
        assert!(
            refused.contains(said)
                && refused.contains("handler import ")
                && refused.contains(&canonical),
            "{run}: {refused}"
        );
        let export = handler(to.path(), &["export"]);
        assert!(
            !export.status.success() && stderr(&export).contains(said),
            "{run}: {}",
            stderr(&export)
        );
        if at == a_picture {
            let other = exported.files.path().join("other.jsonl");
            std::fs::write(&other, sealed(&Sample::new().whole)).unwrap();
            let refused = handler(to.path(), &["import", other.to_str().unwrap()]);
            assert!(
                stderr(&refused)
                    .contains("this store holds an import of another file that did not finish")
                    && stderr(&refused).contains(&canonical),
                "{run}: {}",
                stderr(&refused)
            );
            let repaired = handler(to.path(), &["repair"]);
            assert!(repaired.status.success(), "{run}: {}", stderr(&repaired));
            assert_eq!(
                serve_once(to.path()).map(|(code, _)| code),
                Some(1),
                "{run}: refused after a repair too"
            );
        }
        let finished = handler(to.path(), &["import", path]);
        assert!(finished.status.success(), "{run}: {}", stderr(&finished));
        assert!(
            stderr(&finished).contains(&format!("import: {EXPORTED} written, copies made")),
            "{run}: {}",
            stderr(&finished)
        );
        shows_the_same(to.path(), &[], &exported.blog, &run).await;
        let blog = Handler::start(to.path(), &[]);
        counters_are_what_is_listed(&blog.base, &exported.blog.posts).await;
        blog.stop();
    }
}
