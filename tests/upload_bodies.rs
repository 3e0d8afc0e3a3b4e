//! A picture's body on the real `handler` binary: read only once its sender may add it, within
//! the upload buffers held across connections, at a minimum rate rather than within a fixed
//! time (src/http/body.rs).

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::binary::Handler;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// An upload's head, declaring `length` bytes of body, sent as `writer` (or nobody).
async fn upload_head(
    handler: &Handler,
    post: &str,
    writer: Option<&str>,
    length: usize,
) -> TcpStream {
    upload_head_with(handler, post, writer, length, "").await
}

/// [`upload_head`] with `extra` header lines (each ending in CRLF).
async fn upload_head_with(
    handler: &Handler,
    post: &str,
    writer: Option<&str>,
    length: usize,
    extra: &str,
) -> TcpStream {
    let mut stream = TcpStream::connect(handler.address()).await.unwrap();
    let signed_in = writer.map(|writer| format!("x-dev-user: {writer}\r\n")).unwrap_or_default();
    let head = format!(
        "POST /api/posts/{post}/pictures HTTP/1.1\r\nHost: x\r\n{signed_in}{extra}Content-Type: image/png\r\nContent-Length: {length}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream
}

/// The status line and the rest of the answer, read until the server closes or `patience` ends.
async fn answer(stream: &mut TcpStream, patience: Duration) -> String {
    let mut answer = Vec::new();
    let mut buffer = [0; 4096];
    let until = tokio::time::Instant::now() + patience;
    while let Ok(Ok(read)) = tokio::time::timeout_at(until, stream.read(&mut buffer)).await {
        if read == 0 {
            break;
        }
        answer.extend_from_slice(&buffer[..read]);
        if answer.windows(4).any(|window| window == b"\r\n\r\n") && answer.ends_with(b"}") {
            break;
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

/// Nobody signed in, another writer, a post that does not exist: each is answered from the
/// upload's head alone, before a byte of its 10 MB body is sent.
#[tokio::test]
async fn a_refused_sender_is_answered_before_the_body_is_read() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let post = handler.writers_post("owner").await;
    let ten_megabytes = 10 * 1024 * 1024;
    for (writer, post, status) in [
        (None, post.as_str(), "401"),
        (Some("someone-else"), post.as_str(), "403"),
        (Some("owner"), "no-such-post", "404"),
    ] {
        let mut stream = upload_head(&handler, post, writer, ten_megabytes).await;
        let answer = answer(&mut stream, Duration::from_secs(5)).await;
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}")),
            "{writer:?} to {post}: {answer}"
        );
    }
}

/// With buffers for one upload, a second upload while the first is being received is told to
/// come back (503, `Retry-After`) at once, without its body being read; once the first is in,
/// the buffers are free again.
#[tokio::test]
async fn past_the_upload_buffers_an_upload_is_told_to_come_back() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[("BLOG_UPLOAD_BUFFER_MB", "11")]);
    let post = handler.writers_post("busy").await;
    let length = 10 * 1024 * 1024;
    let mut first =
        upload_head_with(&handler, &post, Some("busy"), length, "Expect: 100-continue\r\n").await;
    first.write_all(&[0; 1024]).await.unwrap();
    // Its body is being read: its buffers are held.
    common::wire::body_being_read(&mut first).await;
    let mut second = upload_head(&handler, &post, Some("busy"), length).await;
    let refused = answer(&mut second, Duration::from_secs(5)).await;
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.to_ascii_lowercase().contains("retry-after:"), "{refused}");
    assert!(refused.contains("as many pictures as it holds at once"), "{refused}");
    // The first goes on: its body is read whole (and refused as not a picture: zeros).
    first.write_all(&vec![0; length - 1024]).await.unwrap();
    let taken = answer(&mut first, Duration::from_secs(30)).await;
    assert!(taken.starts_with("HTTP/1.1 415"), "{taken}");
    let mut third = upload_head(&handler, &post, Some("busy"), 4).await;
    third.write_all(b"junk").await.unwrap();
    let after = answer(&mut third, Duration::from_secs(5)).await;
    assert!(after.starts_with("HTTP/1.1 415"), "the buffers were given back: {after}");
}

/// A body that keeps coming at more than the minimum rate is read however long it takes (here
/// 3 MiB in about 15 s, past the fixed 10 s bodies once had); one that trickles is cut, 408,
/// once it falls behind.
#[tokio::test]
async fn only_a_trickle_is_cut() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let post = handler.writers_post("phone").await;
    let length = 3 * 1024 * 1024;
    let slow_link = async {
        let mut stream = upload_head(&handler, &post, Some("phone"), length).await;
        let started = Instant::now();
        // 200 KiB/s: 20 KiB every 100 ms.
        for _ in 0..length / (20 * 1024) {
            stream.write_all(&[0; 20 * 1024]).await.unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        stream.write_all(&vec![0; length % (20 * 1024)]).await.unwrap();
        let answer = answer(&mut stream, Duration::from_secs(10)).await;
        (started.elapsed(), answer)
    };
    let trickle = async {
        let mut stream = upload_head(&handler, &post, Some("phone"), length).await;
        let started = Instant::now();
        // A byte every 50 ms, until the server stops reading.
        while stream.write_all(&[0]).await.is_ok() && started.elapsed() < Duration::from_secs(40) {
            tokio::time::sleep(Duration::from_millis(50)).await;
            if let Ok(Ok(read)) =
                tokio::time::timeout(Duration::from_millis(1), stream.peek(&mut [0; 1])).await
                && read > 0
            {
                break;
            }
        }
        answer(&mut stream, Duration::from_secs(5)).await
    };
    let ((took, slow), trickled) = tokio::join!(slow_link, trickle);
    assert!(took > Duration::from_secs(10), "the slow link took {took:?}");
    assert!(
        slow.starts_with("HTTP/1.1 415"),
        "read whole (and refused as not a picture: zeros): {slow}"
    );
    assert!(trickled.starts_with("HTTP/1.1 408"), "{trickled}");
    assert!(trickled.contains("came slower than"), "{trickled}");
}

/// The routes that take a picture, and every `Content-Type` a body can claim (a form, a broken
/// multipart, an image, nothing): what a client that is not signed in may send them.
const PICTURE_ROUTES: [&str; 3] = ["/write", "/posts/{post}/edit", "/api/posts/{post}/pictures"];
const CLAIMED_TYPES: [Option<&str>; 7] = [
    Some("application/x-www-form-urlencoded"),
    Some("multipart/form-data; boundary="),
    Some("multipart/form-data; boundary=x"),
    Some("text/plain"),
    Some("image/png"),
    Some("application/octet-stream"),
    None,
];

/// With buffers for one upload, connections from nobody signed in, to every route that takes a
/// picture with every `Content-Type`, each declaring 10 MiB and sending 1 KiB of it, hold none
/// of those buffers: a signed-in writer's picture sent meanwhile is stored, and each of them is
/// answered 401 from its head.
#[tokio::test]
async fn anonymous_connections_of_every_content_type_leave_the_upload_buffers_to_the_writers() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[("BLOG_UPLOAD_BUFFER_MB", "11")]);
    let post = handler.writers_post("writer").await;
    let mut anonymous = Vec::new();
    for route in PICTURE_ROUTES {
        let path = route.replace("{post}", &post);
        for claimed in CLAIMED_TYPES {
            let mut stream = TcpStream::connect(handler.address()).await.unwrap();
            let content_type =
                claimed.map(|claimed| format!("Content-Type: {claimed}\r\n")).unwrap_or_default();
            let head = format!(
                "POST {path} HTTP/1.1\r\nHost: x\r\n{content_type}Content-Length: {}\r\n\r\n",
                10 * 1024 * 1024
            );
            stream.write_all(head.as_bytes()).await.unwrap();
            // Some of it may be refused unread: the server then closes, which is what it should do.
            let _ = stream.write_all(&[b'a'; 1024]).await;
            anonymous.push((path.clone(), claimed, stream));
        }
    }
    // Larger than what one anonymous 10 MiB claim would leave of the 11 MiB.
    let picture = common::hostile::photo_jpeg(3200, 2400, 7);
    assert!(picture.len() > 1024 * 1024, "{} bytes", picture.len());
    let stored = reqwest::Client::new()
        .post(format!("{}/api/posts/{post}/pictures", handler.base))
        .header("x-dev-user", "writer")
        .header("content-type", "image/jpeg")
        .body(picture)
        .send()
        .await
        .unwrap();
    assert_eq!(stored.status(), reqwest::StatusCode::CREATED, "{}", stored.text().await.unwrap());
    for (path, claimed, mut stream) in anonymous {
        let answer = answer(&mut stream, Duration::from_secs(5)).await;
        assert!(answer.starts_with("HTTP/1.1 401"), "{path} as {claimed:?}: {answer}");
    }
}
